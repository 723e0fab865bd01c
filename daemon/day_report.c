/*
 * The report's forms (day_report.h). Times are UTC; waits and handle
 * times in seconds with one decimal; rates in percent. Queue names are
 * ids ([A-Za-z0-9._:@-]), so they need no escaping in CSV or HTML.
 */
#include "day_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHART_W      720 /* the SVG's user units */
#define CHART_H      200
#define CHART_LEFT   40
#define CHART_BOTTOM 24
#define CHART_TOP    12

enum day_fmt { DAY_DATE_TIME, DAY_ISO, DAY_HM };

/* "2026-11-27 09:00", "2026-11-27T09:00:00Z" or "09:00", UTC. */
static void
day_time(char *buf, size_t len, uint64_t ms, enum day_fmt fmt)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	switch (fmt) {
	case DAY_DATE_TIME:
		strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
		break;
	case DAY_ISO:
		strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
		break;
	case DAY_HM:
		strftime(buf, len, "%H:%M", &tm);
		break;
	}
}

static const char *
day_queue(const struct csq_report_row *row)
{
	return row->queue[0] != '\0' ? row->queue : "(all)";
}

/* A rate in percent with one decimal, or "-". */
static void
day_pct(char *buf, size_t len, double v)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", v * 100);
}

static void
day_secs(char *buf, size_t len, uint64_t ms)
{
	snprintf(buf, len, "%" PRIu64 ".%" PRIu64, ms / 1000,
	         (ms % 1000) / 100);
}

/* Mean handle time in ms, or 0. */
static uint64_t
day_handle(const struct csq_report_row *row)
{
	return row->handled ? row->handle_sum_ms / row->handled : 0;
}

/* A row's figures as text: its interval's start, rates, seconds. */
struct day_cells {
	char when[32], sl[16], occ[16], p50[32], p90[32], max[32], h[32];
};

static void
day_cells(struct day_cells *c, const struct csq_report_row *r, enum day_fmt fmt)
{
	day_time(c->when, sizeof(c->when), r->start_ms, fmt);
	day_pct(c->sl, sizeof(c->sl), r->service_level);
	day_pct(c->occ, sizeof(c->occ), r->occupancy);
	day_secs(c->p50, sizeof(c->p50), r->wait_p50_ms);
	day_secs(c->p90, sizeof(c->p90), r->wait_p90_ms);
	day_secs(c->max, sizeof(c->max), r->wait_max_ms);
	day_secs(c->h, sizeof(c->h), day_handle(r));
}

static const char *const day_columns[] = {
    "interval",   "queue",   "arrivals",      "matched",       "abandoned",
    "expired",    "sl_pct",  "sl_target_s",   "wait_p50_s",    "wait_p90_s",
    "wait_max_s", "handled", "handle_mean_s", "occupancy_pct", NULL};

/* The CSV lines of one run's rows; run NULL: no run column. */
static void
day_csv_rows(FILE *out, const char *run, const struct csq_report_row *rows,
             size_t n)
{
	struct day_cells c;
	char target[16];
	size_t i;

	for (i = 0; i < n; i++) {
		const struct csq_report_row *r = &rows[i];

		day_cells(&c, r, DAY_ISO);
		/* The "all queues" row has no target of its own. */
		snprintf(target, sizeof(target), "%" PRIu32, r->target_s);
		if (run != NULL)
			fprintf(out, "%s,", run);
		fprintf(out,
		        "%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		        ",%s,%s,%s,%s,%s,%" PRIu64 ",%s,%s\n",
		        c.when, r->queue, r->arrivals, r->matched, r->abandoned,
		        r->expired, c.sl, r->queue[0] != '\0' ? target : "",
		        c.p50, c.p90, c.max, r->handled, c.h, c.occ);
	}
}

static void
day_csv_header(FILE *out, int with_run)
{
	int k;

	if (with_run)
		fprintf(out, "run,");
	for (k = 0; day_columns[k] != NULL; k++)
		fprintf(out, "%s%s", k ? "," : "", day_columns[k]);
	fputc('\n', out);
}

void
day_report_csv(FILE *out, const struct csq_report_row *rows, size_t n)
{
	day_csv_header(out, 0);
	day_csv_rows(out, NULL, rows, n);
}

void
day_report_csv_runs(FILE *out, const struct day_run *runs, int nruns)
{
	int k;

	day_csv_header(out, 1);
	for (k = 0; k < nruns; k++)
		day_csv_rows(out, runs[k].label, runs[k].rows, runs[k].n);
}

void
day_report_table(FILE *out, const struct csq_report_row *rows, size_t n)
{
	struct day_cells c;
	size_t i;

	fprintf(out, "%-16s %-12s %8s %8s %9s %7s %7s %8s %8s %8s %8s %6s\n",
	        "interval (UTC)", "queue", "arrived", "matched", "abandoned",
	        "expired", "SL %", "wait p50", "wait p90", "wait max", "handle",
	        "occ %");
	for (i = 0; i < n; i++) {
		const struct csq_report_row *r = &rows[i];

		day_cells(&c, r, DAY_DATE_TIME);
		fprintf(out,
		        "%-16s %-12s %8" PRIu64 " %8" PRIu64 " %9" PRIu64
		        " %7" PRIu64 " %7s %8s %8s %8s %8s %6s\n",
		        c.when, day_queue(r), r->arrivals, r->matched,
		        r->abandoned, r->expired, c.sl, c.p50, c.p90, c.max,
		        c.h, c.occ);
	}
	fprintf(out, "(SL %%: matched within the queue's target over matched "
	             "and abandoned and expired; waits and handle in s)\n");
}

/* The largest value a chart of these rows (one queue's) shows. */
static uint64_t
day_peak(const struct csq_report_row *const *rows, size_t n)
{
	uint64_t peak = 1;
	size_t i;

	for (i = 0; i < n; i++) {
		if (rows[i]->arrivals > peak)
			peak = rows[i]->arrivals;
		if (rows[i]->matched > peak)
			peak = rows[i]->matched;
		if (rows[i]->abandoned + rows[i]->expired > peak)
			peak = rows[i]->abandoned + rows[i]->expired;
	}
	return peak;
}

/*
 * One queue's charts: per interval three bars (arrived, matched,
 * abandoned and expired) on a scale of peak (the queue's, over every run
 * shown, so that runs side by side compare), and the service level as a
 * line on 0..100 %, the intervals in order. Every bar and point has its
 * figure as a data attribute and a <title> (its tooltip).
 */
static void
day_html_chart(FILE *out, const char *queue,
               const struct csq_report_row *const *rows, size_t n,
               uint64_t peak)
{
	static const char *const series[] = {"arrivals", "matched",
	                                     "abandoned"};
	double plot_w = CHART_W - CHART_LEFT - 8;
	double plot_h = CHART_H - CHART_BOTTOM - CHART_TOP;
	double slot = n > 0 ? plot_w / (double)n : plot_w, bar = slot / 4;
	uint64_t v;
	char when[32];
	size_t i;
	int k;

	fprintf(out,
	        "<svg class=\"chart volume\" data-queue=\"%s\" viewBox=\"0 0 "
	        "%d %d\" role=\"img\" aria-label=\"%s: arrived, matched and "
	        "abandoned per interval\">\n",
	        queue, CHART_W, CHART_H, queue);
	fprintf(out,
	        "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
	        "<text class=\"tick\" x=\"%d\" y=\"%d\">%" PRIu64 "</text>"
	        "<text class=\"tick\" x=\"%d\" y=\"%d\">0</text>\n",
	        CHART_LEFT, CHART_H - CHART_BOTTOM, CHART_W - 8,
	        CHART_H - CHART_BOTTOM, CHART_LEFT - 6, CHART_TOP + 4, peak,
	        CHART_LEFT - 6, CHART_H - CHART_BOTTOM);
	for (i = 0; i < n; i++) {
		double x0 = CHART_LEFT + slot * (double)i + bar / 2;

		day_time(when, sizeof(when), rows[i]->start_ms, DAY_HM);
		for (k = 0; k < 3; k++) {
			double h;

			v = k == 0   ? rows[i]->arrivals
			    : k == 1 ? rows[i]->matched
			             : rows[i]->abandoned + rows[i]->expired;
			h = plot_h * (double)v / (double)peak;
			fprintf(out,
			        "<rect class=\"bar %s\" data-start=\"%" PRIu64
			        "\" data-value=\"%" PRIu64 "\" x=\"%.1f\" "
			        "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
			        "<title>%s %s %" PRIu64 "</title></rect>\n",
			        series[k], rows[i]->start_ms, v,
			        x0 + bar * (double)k,
			        CHART_H - CHART_BOTTOM - h, bar, h, when,
			        series[k], v);
		}
		fprintf(out,
		        "<text class=\"tick\" x=\"%.1f\" y=\"%d\">%s</text>\n",
		        x0, CHART_H - 6, when);
	}
	fprintf(out, "</svg>\n");

	fprintf(out,
	        "<svg class=\"chart service-level\" data-queue=\"%s\" "
	        "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s: service "
	        "level per interval\">\n"
	        "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
	        "<text class=\"tick\" x=\"%d\" y=\"%d\">100 %%</text>"
	        "<text class=\"tick\" x=\"%d\" y=\"%d\">0 %%</text>\n"
	        "<polyline class=\"sl\" points=\"",
	        queue, CHART_W, CHART_H, queue, CHART_LEFT,
	        CHART_H - CHART_BOTTOM, CHART_W - 8, CHART_H - CHART_BOTTOM,
	        CHART_LEFT - 6, CHART_TOP + 4, CHART_LEFT - 6,
	        CHART_H - CHART_BOTTOM);
	for (i = 0; i < n; i++)
		if (rows[i]->service_level >= 0)
			fprintf(out, "%.1f,%.1f ",
			        CHART_LEFT + slot * ((double)i + 0.5),
			        CHART_H - CHART_BOTTOM -
			            plot_h * rows[i]->service_level);
	fprintf(out, "\"/>\n");
	for (i = 0; i < n; i++) {
		day_time(when, sizeof(when), rows[i]->start_ms, DAY_HM);
		fprintf(
		    out, "<text class=\"tick\" x=\"%.1f\" y=\"%d\">%s</text>\n",
		    CHART_LEFT + slot * ((double)i + 0.5), CHART_H - 6, when);
		if (rows[i]->service_level < 0)
			continue;
		day_time(when, sizeof(when), rows[i]->start_ms, DAY_HM);
		fprintf(
		    out,
		    "<circle class=\"point\" data-start=\"%" PRIu64
		    "\" data-value=\"%.1f\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\">"
		    "<title>%s service level %.1f %%</title></circle>\n",
		    rows[i]->start_ms, rows[i]->service_level * 100,
		    CHART_LEFT + slot * ((double)i + 0.5),
		    CHART_H - CHART_BOTTOM - plot_h * rows[i]->service_level,
		    when, rows[i]->service_level * 100);
	}
	fprintf(out, "</svg>\n");
}

static const char day_html_style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 4px}"
    ".period{color:#555;margin:0 0 12px}"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}"
    ".chart{width:480px;height:auto;border:1px solid #ddd;"
    "background:#fff}"
    ".axis{stroke:#999}.tick{font-size:11px;fill:#555;"
    "text-anchor:middle}"
    ".bar.arrivals{fill:#7aa6d8}.bar.matched{fill:#3c8a4a}"
    ".bar.abandoned{fill:#d0603a}"
    ".sl{fill:none;stroke:#6a3d9a;stroke-width:2}"
    ".point{fill:#6a3d9a}"
    ".legend span{display:inline-block;margin-right:14px}"
    ".legend i{display:inline-block;width:10px;height:10px;"
    "margin-right:4px}"
    "table{border-collapse:collapse;margin-top:16px}"
    "th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}"
    "th{background:#f4f4f4}td.q,td.t{text-align:left}"
    "tr.all td{font-weight:600;background:#fafafa}"
    ".run{display:flex;flex-direction:column;gap:8px}"
    ".run h3{font-size:15px;margin:0}";

/* The key of a row in the rows' order: by interval, then queue, "" last. */
static int
day_row_cmp(const struct csq_report_row *x, const struct csq_report_row *y)
{
	if (x->start_ms != y->start_ms)
		return x->start_ms < y->start_ms ? -1 : 1;
	if ((x->queue[0] == '\0') != (y->queue[0] == '\0'))
		return x->queue[0] == '\0' ? 1 : -1;
	return strcmp(x->queue, y->queue);
}

/*
 * The next key of the runs' rows merged (each run's rows are in order):
 * at[k] is run k's row of that key or NULL; 0 when every run is done.
 */
static int
day_merge_next(const struct day_run *runs, int nruns, size_t *pos,
               const struct csq_report_row **at)
{
	const struct csq_report_row *least = NULL;
	int k;

	for (k = 0; k < nruns; k++)
		if (pos[k] < runs[k].n &&
		    (least == NULL ||
		     day_row_cmp(&runs[k].rows[pos[k]], least) < 0))
			least = &runs[k].rows[pos[k]];
	if (least == NULL)
		return 0;
	for (k = 0; k < nruns; k++) {
		at[k] = NULL;
		if (pos[k] < runs[k].n &&
		    day_row_cmp(&runs[k].rows[pos[k]], least) == 0)
			at[k] = &runs[k].rows[pos[k]];
	}
	for (k = 0; k < nruns; k++)
		if (at[k] != NULL)
			pos[k]++;
	return 1;
}

void
day_report_table_runs(FILE *out, const struct day_run *runs, int nruns)
{
	static const char *const heads[] = {"arrived",  "matched", "abandoned",
	                                    "expired",  "SL %",    "wait p50",
	                                    "wait p90", "handle",  "occ %"};
	const struct csq_report_row *at[DAY_RUNS_MAX];
	size_t pos[DAY_RUNS_MAX] = {0};
	struct day_cells c;
	char cell[9][DAY_RUNS_MAX][32], when[32];
	const char *queue = "";
	int k, f;

	if (nruns > DAY_RUNS_MAX)
		nruns = DAY_RUNS_MAX;
	fprintf(out, "%-16s %-12s", "", "");
	for (f = 0; f < 9; f++)
		fprintf(out, " %*s", 9 * nruns - 1, heads[f]);
	fprintf(out, "\n%-16s %-12s", "interval (UTC)", "queue");
	for (f = 0; f < 9; f++)
		for (k = 0; k < nruns; k++)
			fprintf(out, " %8.8s", runs[k].label);
	fputc('\n', out);
	while (day_merge_next(runs, nruns, pos, at)) {
		for (k = 0; k < nruns; k++) {
			const struct csq_report_row *r = at[k];

			if (r == NULL) {
				for (f = 0; f < 9; f++)
					snprintf(cell[f][k], 32, "-");
				continue;
			}
			day_cells(&c, r, DAY_DATE_TIME);
			snprintf(when, sizeof(when), "%s", c.when);
			queue = day_queue(r);
			snprintf(cell[0][k], 32, "%" PRIu64, r->arrivals);
			snprintf(cell[1][k], 32, "%" PRIu64, r->matched);
			snprintf(cell[2][k], 32, "%" PRIu64, r->abandoned);
			snprintf(cell[3][k], 32, "%" PRIu64, r->expired);
			snprintf(cell[4][k], 32, "%s", c.sl);
			snprintf(cell[5][k], 32, "%s", c.p50);
			snprintf(cell[6][k], 32, "%s", c.p90);
			snprintf(cell[7][k], 32, "%s", c.h);
			snprintf(cell[8][k], 32, "%s", c.occ);
		}
		fprintf(out, "%-16s %-12s", when, queue);
		for (f = 0; f < 9; f++)
			for (k = 0; k < nruns; k++)
				fprintf(out, " %8s", cell[f][k]);
		fputc('\n', out);
	}
	fprintf(out, "(each figure:");
	for (k = 0; k < nruns; k++)
		fprintf(out, " %s", runs[k].label);
	fprintf(out, "; SL %%: matched within the queue's target over matched "
	             "and abandoned and expired; waits and handle in s)\n");
}

static void
day_html_head(FILE *out, const char *title, const char *from, const char *to,
              uint64_t interval_ms)
{
	fprintf(out,
	        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
	        "charset=\"utf-8\">\n<title>csq %s %s to %s UTC</title>\n"
	        "<style>%s</style>\n</head>\n<body>\n<h1>csq %s</h1>\n"
	        "<p class=\"period\" id=\"period\">%s to %s UTC, per %" PRIu64
	        " min</p>\n<p class=\"legend\"><span><i style=\"background:"
	        "#7aa6d8\"></i>arrived</span><span><i style=\"background:"
	        "#3c8a4a\"></i>matched</span><span><i style=\"background:"
	        "#d0603a\"></i>abandoned or expired</span><span><i "
	        "style=\"background:#6a3d9a\"></i>service level</span></p>\n",
	        title, from, to, day_html_style, title, from, to,
	        interval_ms / 60000);
}

/* The rows of run whose queue is q, in order, into mine; their count. */
static size_t
day_rows_of(const struct day_run *run, const char *q,
            const struct csq_report_row **mine)
{
	size_t j, m = 0;

	for (j = 0; j < run->n; j++)
		if (strcmp(run->rows[j].queue, q) == 0)
			mine[m++] = &run->rows[j];
	return m;
}

/* One queue's section: each run's charts side by side. */
static void
day_html_section(FILE *out, const struct day_run *runs, int nruns,
                 const char *q, uint32_t target_s,
                 const struct csq_report_row **mine)
{
	uint64_t peak = 1, v;
	size_t m;
	int k;

	if (q[0] != '\0')
		fprintf(out,
		        "<section class=\"queue\" data-queue=\"%s\">\n<h2>%s "
		        "<small>(service level target %" PRIu32
		        " s)</small></h2>\n<div class=\"charts\">\n",
		        q, q, target_s);
	else
		fprintf(out, "<section class=\"queue\" data-queue=\"\">\n<h2>"
		             "All queues</h2>\n<div class=\"charts\">\n");
	for (k = 0; k < nruns; k++) {
		m = day_rows_of(&runs[k], q, mine);
		if ((v = day_peak(mine, m)) > peak)
			peak = v;
	}
	for (k = 0; k < nruns; k++) {
		m = day_rows_of(&runs[k], q, mine);
		if (nruns > 1)
			fprintf(
			    out,
			    "<div class=\"run\" data-run=\"%s\"><h3>%s</h3>\n",
			    runs[k].label, runs[k].label);
		day_html_chart(out, q, mine, m, peak);
		if (nruns > 1)
			fprintf(out, "</div>\n");
	}
	fprintf(out, "</div>\n</section>\n");
}

void
day_report_html(FILE *out, const struct csq_report_row *rows, size_t n,
                uint64_t interval_ms)
{
	struct day_run run = {NULL, rows, n};

	day_report_html_runs(out, &run, 1, interval_ms);
}

void
day_report_html_runs(FILE *out, const struct day_run *runs, int nruns,
                     uint64_t interval_ms)
{
	const struct csq_report_row **mine = NULL;
	const struct csq_report_row *at[DAY_RUNS_MAX];
	size_t pos[DAY_RUNS_MAX] = {0}, i, j, most = 1;
	uint64_t first = UINT64_MAX, last = 0;
	struct day_cells c;
	char from[32], to[32];
	int k, kk, any_all = 0;

	if (nruns > DAY_RUNS_MAX)
		nruns = DAY_RUNS_MAX;
	for (k = 0; k < nruns; k++) {
		if (runs[k].n > most)
			most = runs[k].n;
		if (runs[k].n > 0 && runs[k].rows[0].start_ms < first)
			first = runs[k].rows[0].start_ms;
		if (runs[k].n > 0 &&
		    runs[k].rows[runs[k].n - 1].start_ms + interval_ms > last)
			last =
			    runs[k].rows[runs[k].n - 1].start_ms + interval_ms;
	}
	day_time(from, sizeof(from), first != UINT64_MAX ? first : 0,
	         DAY_DATE_TIME);
	day_time(to, sizeof(to), last, DAY_DATE_TIME);
	day_html_head(out, nruns > 1 ? "replay" : "report", from, to,
	              interval_ms);
	mine = calloc(most, sizeof(*mine));
	/* A section per queue, in the order of their first rows, "(all)"
	 * last. */
	for (k = 0; k < nruns; k++)
		for (i = 0; i < runs[k].n; i++) {
			const struct csq_report_row *r = &runs[k].rows[i];
			int seen = 0;

			if (r->queue[0] == '\0') {
				any_all = 1;
				continue;
			}
			for (kk = 0; kk <= k && !seen; kk++)
				for (j = 0; j < (kk < k ? runs[kk].n : i); j++)
					if (strcmp(runs[kk].rows[j].queue,
					           r->queue) == 0) {
						seen = 1;
						break;
					}
			if (!seen)
				day_html_section(out, runs, nruns, r->queue,
				                 r->target_s, mine);
		}
	if (any_all)
		day_html_section(out, runs, nruns, "", 0, mine);
	free(mine);
	fprintf(out,
	        "<table id=\"report\">\n<thead><tr>%s<th>interval "
	        "(UTC)</th><th>queue</th><th>arrived</th><th>matched"
	        "</th><th>abandoned</th><th>expired</th><th>service "
	        "level %%</th><th>wait p50 s</th><th>wait p90 s</th>"
	        "<th>wait max s</th><th>handle s</th><th>occupancy %%"
	        "</th></tr></thead>\n<tbody>\n",
	        nruns > 1 ? "<th>run</th>" : "");
	while (day_merge_next(runs, nruns, pos, at))
		for (k = 0; k < nruns; k++) {
			const struct csq_report_row *r = at[k];

			if (r == NULL)
				continue;
			day_cells(&c, r, DAY_DATE_TIME);
			fprintf(out,
			        "<tr%s data-queue=\"%s\" data-start=\"%" PRIu64
			        "\"",
			        r->queue[0] == '\0' ? " class=\"all\"" : "",
			        r->queue, r->start_ms);
			if (nruns > 1)
				fprintf(out,
				        " data-run=\"%s\"><td class=\"q\">%s"
				        "</td",
				        runs[k].label, runs[k].label);
			fprintf(out,
			        "><td class=\"t\">%s</td><td "
			        "class=\"q\">%s</td><td>%" PRIu64
			        "</td><td>%" PRIu64 "</td><td>%" PRIu64
			        "</td><td>%" PRIu64
			        "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</"
			        "td><td>%s"
			        "</td><td>%s</td></tr>\n",
			        c.when, day_queue(r), r->arrivals, r->matched,
			        r->abandoned, r->expired, c.sl, c.p50, c.p90,
			        c.max, c.h, c.occ);
		}
	fprintf(out,
	        "</tbody>\n</table>\n<p class=\"period\">Service level: "
	        "matched within the queue's target over matched, "
	        "abandoned and expired. Made by csq-day %s from a "
	        "record of the day (docs/day.md).</p>\n</body>\n</html>\n",
	        nruns > 1 ? "replay" : "report");
}
