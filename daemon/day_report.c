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

void
day_report_csv(FILE *out, const struct csq_report_row *rows, size_t n)
{
	struct day_cells c;
	char target[16];
	size_t i;
	int k;

	for (k = 0; day_columns[k] != NULL; k++)
		fprintf(out, "%s%s", k ? "," : "", day_columns[k]);
	fputc('\n', out);
	for (i = 0; i < n; i++) {
		const struct csq_report_row *r = &rows[i];

		day_cells(&c, r, DAY_ISO);
		/* The "all queues" row has no target of its own. */
		snprintf(target, sizeof(target), "%" PRIu32, r->target_s);
		fprintf(out,
		        "%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		        ",%s,%s,%s,%s,%s,%" PRIu64 ",%s,%s\n",
		        c.when, r->queue, r->arrivals, r->matched, r->abandoned,
		        r->expired, c.sl, r->queue[0] != '\0' ? target : "",
		        c.p50, c.p90, c.max, r->handled, c.h, c.occ);
	}
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
 * abandoned and expired) on a scale of the queue's peak, and the service
 * level as a line on 0..100 %, the intervals in order. Every bar and point
 * has its figure as a data attribute and a <title> (its tooltip).
 */
static void
day_html_chart(FILE *out, const char *queue,
               const struct csq_report_row *const *rows, size_t n)
{
	static const char *const series[] = {"arrivals", "matched",
	                                     "abandoned"};
	double plot_w = CHART_W - CHART_LEFT - 8;
	double plot_h = CHART_H - CHART_BOTTOM - CHART_TOP;
	double slot = n > 0 ? plot_w / (double)n : plot_w, bar = slot / 4;
	uint64_t peak = day_peak(rows, n), v;
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
    "tr.all td{font-weight:600;background:#fafafa}";

void
day_report_html(FILE *out, const struct csq_report_row *rows, size_t n,
                uint64_t interval_ms)
{
	const struct csq_report_row **mine = NULL;
	struct day_cells c;
	char from[32], to[32];
	size_t i, j, m;

	day_time(from, sizeof(from), n ? rows[0].start_ms : 0, DAY_DATE_TIME);
	day_time(to, sizeof(to), n ? rows[n - 1].start_ms + interval_ms : 0,
	         DAY_DATE_TIME);
	fprintf(out,
	        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
	        "charset=\"utf-8\">\n<title>csq report %s to %s UTC</title>\n"
	        "<style>%s</style>\n</head>\n<body>\n<h1>csq report</h1>\n"
	        "<p class=\"period\" id=\"period\">%s to %s UTC, per %" PRIu64
	        " min</p>\n<p class=\"legend\"><span><i style=\"background:"
	        "#7aa6d8\"></i>arrived</span><span><i style=\"background:"
	        "#3c8a4a\"></i>matched</span><span><i style=\"background:"
	        "#d0603a\"></i>abandoned or expired</span><span><i "
	        "style=\"background:#6a3d9a\"></i>service level</span></p>\n",
	        from, to, day_html_style, from, to, interval_ms / 60000);
	mine = calloc(n ? n : 1, sizeof(*mine));
	/* A section per queue, "(all)" last, in the rows' order. */
	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++)
			if (strcmp(rows[j].queue, rows[i].queue) == 0)
				break;
		if (j < i)
			continue;
		for (m = 0, j = i; j < n; j++)
			if (strcmp(rows[j].queue, rows[i].queue) == 0)
				mine[m++] = &rows[j];
		if (rows[i].queue[0] == '\0')
			continue;
		fprintf(out,
		        "<section class=\"queue\" data-queue=\"%s\">\n<h2>%s "
		        "<small>(service level target %" PRIu32
		        " s)</small></h2>\n<div class=\"charts\">\n",
		        rows[i].queue, rows[i].queue, rows[i].target_s);
		day_html_chart(out, rows[i].queue, mine, m);
		fprintf(out, "</div>\n</section>\n");
	}
	for (m = 0, j = 0; j < n; j++)
		if (rows[j].queue[0] == '\0')
			mine[m++] = &rows[j];
	if (m > 0) {
		fprintf(out, "<section class=\"queue\" data-queue=\"\">\n<h2>"
		             "All queues</h2>\n<div class=\"charts\">\n");
		day_html_chart(out, "", mine, m);
		fprintf(out, "</div>\n</section>\n");
	}
	free(mine);
	fprintf(out, "<table id=\"report\">\n<thead><tr><th>interval "
	             "(UTC)</th><th>queue</th><th>arrived</th><th>matched"
	             "</th><th>abandoned</th><th>expired</th><th>service "
	             "level %%</th><th>wait p50 s</th><th>wait p90 s</th>"
	             "<th>wait max s</th><th>handle s</th><th>occupancy %%"
	             "</th></tr></thead>\n<tbody>\n");
	for (i = 0; i < n; i++) {
		const struct csq_report_row *r = &rows[i];

		day_cells(&c, r, DAY_DATE_TIME);
		fprintf(
		    out,
		    "<tr%s data-queue=\"%s\" data-start=\"%" PRIu64
		    "\"><td class=\"t\">%s</td><td "
		    "class=\"q\">%s</td><td>%" PRIu64 "</td><td>%" PRIu64
		    "</td><td>%" PRIu64 "</td><td>%" PRIu64
		    "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s"
		    "</td><td>%s</td></tr>\n",
		    r->queue[0] == '\0' ? " class=\"all\"" : "", r->queue,
		    r->start_ms, c.when, day_queue(r), r->arrivals, r->matched,
		    r->abandoned, r->expired, c.sl, c.p50, c.p90, c.max, c.h,
		    c.occ);
	}
	fprintf(out,
	        "</tbody>\n</table>\n<p class=\"period\">Service level: "
	        "matched within the queue's target over matched, "
	        "abandoned and expired. Made by csq-day report from a "
	        "record of the day (docs/day.md).</p>\n</body>\n</html>\n");
}
