/*
 * csq-day: what a record of the day (record.path, docs/day.md) says.
 *
 *	csq-day audit FILE...    the fairness audit (lib/audit.h)
 *	csq-day report [-i INTERVAL] [-t [QUEUE=]SECONDS]... [-f FORMAT]
 *	               [-o OUT] FILE...
 *	                         per queue and interval (lib/report.h), as a
 *	                         table, CSV or an HTML page with charts
 *	csq-day replay [-c CONF] [-C CONF] [--strategy S] [--add SPEC]...
 *	               [--remove SPEC]... [--capacity [ID=]N]...
 *	               [--queues ID=Q,Q]... [--skills [ID=]LIST]...
 *	               [--offer [ID=]S]...
 *	               [--wrapup [ID=]S]... [-s SEED] [-n RUNS] [-e EVENTS]
 *	               [-b record|replay]
 *	               [-i INTERVAL] [-t ...] [-f FORMAT] [-o OUT] FILE...
 *	                         the record played again through libcsq
 *	                         under a changed configuration
 *	                         (lib/replay_day.h), the report of both
 *	                         side by side
 *
 * FILE is a record or a rotated part of one, "-" standard input; several
 * are read as one record, in the order given (rotated parts sort by name
 * in time order). Exit status: 0 the audit found nothing, 1 it found
 * something (each finding is printed with the ids of the events
 * involved), 2 a file could not be read, 64 a usage error. A line that
 * is not an event is reported with its file and line number, and is a
 * finding too: a record with such a line cannot be trusted whole.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "config.h"
#include "day_report.h"
#include "event_parse.h"
#include "replay_day.h"
#include "report.h"

#define DAY_EX_FOUND 1
#define DAY_EX_IO    2
#define DAY_EX_USAGE 64

#define DAY_INTERVAL_MAX_MS (7ULL * 86400000) /* a week */
#define DAY_TARGET_MAX_S    86400             /* as csqd's service_level */
#define DAY_RUNS_MAX_N      1000              /* replay -n */

static void
day_usage(FILE *out)
{
	fprintf(out,
	        "usage: csq-day audit FILE...\n"
	        "       csq-day report [-i INTERVAL] [-t [QUEUE=]SECONDS]... "
	        "[-f table|csv|html]\n"
	        "                      [-o OUT] FILE...\n"
	        "  audit   check a record of the day for fairness: every user "
	        "accounted\n"
	        "          for, no room with two users, no user offered twice, "
	        "nobody\n"
	        "          served out of turn without a reason\n"
	        "  report  per queue and interval: arrivals, matches, "
	        "abandons, service\n"
	        "          level, waits, handle time, occupancy\n"
	        "  -i      the interval: 1h (default), 30m, 15m, 90s or "
	        "seconds\n"
	        "  -t      the service level's target in seconds, of every "
	        "queue or of\n"
	        "          QUEUE (default 20, as csqd's service_level)\n"
	        "  -f      table (default), csv or html; -o the file to write\n"
	        "  replay  the record played again through libcsq under a "
	        "changed\n"
	        "          configuration; the report of both runs side by "
	        "side:\n"
	        "  -c CONF       the csqd.conf the record ran under (queue "
	        "policies,\n"
	        "                strategy); -C CONF the what-if's\n"
	        "  --strategy S  longest_idle or least_busy, in the what-if\n"
	        "  --add ID@HH:MM-HH:MM     a servicer logged in over that "
	        "range\n"
	        "  --remove ID[@HH:MM-HH:MM] a servicer logged out over it\n"
	        "  --capacity [ID=]N, --queues ID=Q,Q, --skills [ID=]LIST,\n"
	        "  --offer [ID=]S, --wrapup [ID=]S\n"
	        "                at every login of ID (of every servicer "
	        "without ID=)\n"
	        "  -n RUNS       the what-if RUNS times, seeds SEED, SEED+1, "
	        "...: the\n"
	        "                means of their figures\n"
	        "  -e EVENTS     the what-if's events, as a record\n"
	        "  -s SEED       of the draws (default 1); -b record "
	        "(default) or\n"
	        "                replay: the left column, what happened or the "
	        "replay\n"
	        "                under -c alone\n"
	        "FILE: a record of the day or its rotated parts, in order; - "
	        "is standard input\n"
	        "(docs/day.md)\n");
}

/*
 * A report or a replay takes the events of at most this many intervals
 * from the record's first event, before or after it. They keep figures
 * for every interval between the first event and the last (the agents'
 * occupancy): one line with a time set wrong, years away, would make a
 * report of every hour between (issue 36's review: two lines 5,600 years
 * apart took 640 MB in 10 s). At the default interval of an hour, 11
 * years; a longer period is reported with a longer interval (-i).
 */
#define DAY_MAX_INTERVALS 100000

/* What reads a record: the audit, or a report, and a replay's day. */
struct day_reader {
	struct csq_audit *audit;
	struct csq_report *report;
	struct csq_replay_day *day;
	uint64_t interval_ms; /* of the report: the span's unit */
	uint64_t first_ts;    /* of the first event read, */
	int have_first;       /* once there is one */
};

/* One line to the reader; -1 with err set when it is not an event, -2
 * when it is one too far from the first (left out). */
static int
day_line(struct day_reader *rd, const char *line, size_t len, char *err)
{
	struct csq_event ev;
	enum csq_event_parse r;
	uint64_t d;

	if (rd->audit != NULL)
		return csq_audit_line(rd->audit, line, len, err);
	r = csq_event_parse(line, len, &ev, err);
	if (r == CSQ_PARSE_OK && rd->interval_ms > 0) {
		if (!rd->have_first) {
			rd->first_ts = ev.ts_ms;
			rd->have_first = 1;
		}
		d = ev.ts_ms > rd->first_ts ? ev.ts_ms - rd->first_ts
		                            : rd->first_ts - ev.ts_ms;
		if (d / rd->interval_ms > DAY_MAX_INTERVALS) {
			snprintf(err, CSQ_PARSE_ERR_MAX,
			         "ts %" PRIu64 " is over %d intervals from "
			         "the first event's, %" PRIu64,
			         ev.ts_ms, DAY_MAX_INTERVALS, rd->first_ts);
			return -2;
		}
	}
	if (r == CSQ_PARSE_OK && rd->report != NULL)
		csq_report_event(rd->report, &ev);
	if (r == CSQ_PARSE_OK && rd->day != NULL)
		csq_replay_day_event(rd->day, &ev);
	return r == CSQ_PARSE_ERROR ? -1 : 0;
}

/* Feeds every line of one file to the reader; -1 when it cannot be read.
 * *bad counts the lines that are not events. */
static int
day_read(const char *path, struct day_reader *rd, uint64_t *bad)
{
	FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	char err[CSQ_PARSE_ERR_MAX], *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	int r;

	if (fp == NULL) {
		fprintf(stderr, "csq-day: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		if (n > 0 && line[n - 1] == '\n')
			n--;
		if (n == 0)
			continue;
		if ((r = day_line(rd, line, (size_t)n, err)) != 0) {
			fprintf(rd->audit != NULL ? stdout : stderr,
			        "%s:%zu: %s: %s\n", path, lineno,
			        r == -2 ? "left out" : "not an event", err);
			(*bad)++;
		}
	}
	if (ferror(fp)) {
		fprintf(stderr, "csq-day: %s: %s\n", path, strerror(errno));
		free(line);
		if (fp != stdin)
			fclose(fp);
		return -1;
	}
	free(line);
	if (fp != stdin)
		fclose(fp);
	return 0;
}

static void
day_print_summary(const struct csq_audit_summary *s)
{
	int e, any = 0;

	printf("events: %" PRIu64 " (ids %" PRIu64 " to %" PRIu64 "), %" PRIu64
	       " of types this csq-day does not know\n",
	       s->events, s->first_id, s->last_id, s->unknown_events);
	printf("users: %" PRIu64 " arrived, %" PRIu64
	       " were there before the record began; %" PRIu64
	       " matches, %" PRIu64 " left, %" PRIu64
	       " expired; at the end %" PRIu64 " waiting, %" PRIu64
	       " offered or in a room\n",
	       s->arrivals, s->before, s->matched, s->left, s->expired,
	       s->still_waiting, s->in_rooms);
	printf("order: %" PRIu64 " offers and matches checked; excused:",
	       s->checked);
	for (e = 0; e < CSQ_EXCUSES; e++)
		if (s->excused[e] > 0) {
			printf("%s %" PRIu64 " %s", any ? "," : "",
			       s->excused[e],
			       csq_audit_excuse_name((enum csq_audit_excuse)e));
			any = 1;
		}
	printf("%s\n", any ? "" : " none");
}

static int
day_audit(int argc, char **argv)
{
	struct csq_audit *a = csq_audit_new();
	struct day_reader rd = {a, NULL, NULL, 0, 0, 0};
	const struct csq_audit_finding *f;
	uint64_t bad = 0;
	size_t n, i;
	int k, status = 0;

	for (k = 0; k < argc; k++)
		if (day_read(argv[k], &rd, &bad) != 0) {
			csq_audit_free(a);
			return DAY_EX_IO;
		}
	csq_audit_end(a);
	day_print_summary(csq_audit_summary(a));
	f = csq_audit_findings(a, &n);
	for (i = 0; i < n; i++) {
		printf("%s: events", csq_audit_kind_name(f[i].kind));
		for (k = 0; k < f[i].nids; k++)
			printf(" %" PRIu64, f[i].ids[k]);
		printf(": %s\n", f[i].text);
	}
	if (n > 0 || bad > 0) {
		printf("audit: %zu finding%s, %" PRIu64 " line%s not events\n",
		       n, n == 1 ? "" : "s", bad, bad == 1 ? "" : "s");
		status = DAY_EX_FOUND;
	} else
		printf("audit: OK\n");
	csq_audit_free(a);
	return status;
}

/* "1h", "30m", "90s", "600": ms, or 0 when not an interval. */
static uint64_t
day_interval(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	uint64_t unit = 1000;

	if (end == s || *s == '-')
		return 0;
	if (strcmp(end, "h") == 0)
		unit = 3600000;
	else if (strcmp(end, "m") == 0)
		unit = 60000;
	else if (strcmp(end, "s") != 0 && *end != '\0')
		return 0;
	if (v == 0 || v > DAY_INTERVAL_MAX_MS / unit)
		return 0;
	return v * unit;
}

/* "20" or "sales=30" into cfg; -1 when it is neither. */
static int
day_target(struct csq_report_config *cfg, const char *s)
{
	const char *eq = strchr(s, '=');
	const char *num = eq != NULL ? eq + 1 : s;
	char *end;
	unsigned long v = strtoul(num, &end, 10);
	struct csq_report_target *t;

	if (end == num || *end != '\0' || *num == '-' || v == 0 ||
	    v > DAY_TARGET_MAX_S)
		return -1;
	if (eq == NULL) {
		cfg->default_target_s = (uint32_t)v;
		return 0;
	}
	if (cfg->ntargets == CSQ_REPORT_TARGETS_MAX ||
	    !csq_valid_id(s, (size_t)(eq - s)))
		return -1;
	t = &cfg->targets[cfg->ntargets++];
	snprintf(t->queue, sizeof(t->queue), "%.*s", (int)(eq - s), s);
	t->seconds = (uint32_t)v;
	return 0;
}

static int
day_report(int argc, char **argv)
{
	struct csq_report_config cfg = {.interval_ms = 3600000};
	const char *format = "table", *outpath = NULL;
	const struct csq_report_row *rows;
	struct day_reader rd = {NULL, NULL, NULL, 0, 0, 0};
	uint64_t bad = 0;
	FILE *out = stdout;
	size_t n;
	int k = 0, status = 0;

	for (; k < argc && argv[k][0] == '-' && argv[k][1] != '\0'; k += 2) {
		if (k + 1 >= argc)
			goto usage;
		if (strcmp(argv[k], "-i") == 0) {
			if ((cfg.interval_ms = day_interval(argv[k + 1])) == 0)
				goto usage;
		} else if (strcmp(argv[k], "-t") == 0) {
			if (day_target(&cfg, argv[k + 1]) != 0)
				goto usage;
		} else if (strcmp(argv[k], "-f") == 0) {
			format = argv[k + 1];
			if (strcmp(format, "table") != 0 &&
			    strcmp(format, "csv") != 0 &&
			    strcmp(format, "html") != 0)
				goto usage;
		} else if (strcmp(argv[k], "-o") == 0)
			outpath = argv[k + 1];
		else
			goto usage;
	}
	if (k >= argc)
		goto usage;
	rd.report = csq_report_new(&cfg);
	rd.interval_ms = cfg.interval_ms;
	for (; k < argc; k++)
		if (day_read(argv[k], &rd, &bad) != 0) {
			csq_report_free(rd.report);
			return DAY_EX_IO;
		}
	csq_report_end(rd.report);
	rows = csq_report_rows(rd.report, &n);
	if (outpath != NULL && (out = fopen(outpath, "w")) == NULL) {
		fprintf(stderr, "csq-day: %s: %s\n", outpath, strerror(errno));
		csq_report_free(rd.report);
		return DAY_EX_IO;
	}
	if (strcmp(format, "csv") == 0)
		day_report_csv(out, rows, n);
	else if (strcmp(format, "html") == 0)
		day_report_html(out, rows, n, cfg.interval_ms);
	else
		day_report_table(out, rows, n);
	if (out != stdout && fclose(out) != 0) {
		fprintf(stderr, "csq-day: %s: %s\n", outpath, strerror(errno));
		status = DAY_EX_IO;
	}
	if (bad > 0 && status == 0)
		status = DAY_EX_FOUND;
	csq_report_free(rd.report);
	return status;
usage:
	day_usage(stderr);
	return DAY_EX_USAGE;
}

/* The replay's options that need the record first (times of day). */
struct day_whatif {
	const char *base_conf, *whatif_conf, *strategy, *left, *events;
	int runs; /* -n: replays averaged */
	const char *add[CSQ_REPLAY_CHANGES_MAX],
	    *remove[CSQ_REPLAY_CHANGES_MAX];
	int nadd, nremove;
	struct csq_replay_override overrides[CSQ_REPLAY_CHANGES_MAX];
	int noverrides;
	uint64_t seed;
};

/* "[ID=]N" into an override of ID (or every servicer); which: 'c'
 * capacity, 'o' offer, 'w' wrap-up, 'q' queues (ID= required), 's'
 * skills (a SKILLS list, "" none). */
static int
day_override(struct day_whatif *w, const char *s, int which)
{
	const char *eq = strchr(s, '=');
	const char *val = eq != NULL ? eq + 1 : s;
	struct csq_replay_override *o;
	unsigned long v = 0;
	char *end;

	if (w->noverrides == CSQ_REPLAY_CHANGES_MAX)
		return -1;
	o = &w->overrides[w->noverrides];
	memset(o, 0, sizeof(*o));
	if (eq != NULL) {
		if (!csq_valid_id(s, (size_t)(eq - s)))
			return -1;
		snprintf(o->servicer, sizeof(o->servicer), "%.*s",
		         (int)(eq - s), s);
	} else if (which == 'q')
		return -1;
	if (which == 's') {
		struct csq_skill_list l;

		if (strlen(val) >= sizeof(o->skills) ||
		    csq_skills_parse(val, CSQ_SERVICER_SKILLS, &l) != CSQ_OK)
			return -1;
		snprintf(o->skills, sizeof(o->skills), "%s", val);
		o->has_skills = 1;
		w->noverrides++;
		return 0;
	}
	if (which == 'q') {
		if (*val == '\0' || strlen(val) >= sizeof(o->queues))
			return -1;
		for (const char *p = val; *p != '\0';) {
			size_t len = strcspn(p, ",");
			if (!csq_valid_id(p, len))
				return -1;
			p += len + (p[len] == ',');
		}
		snprintf(o->queues, sizeof(o->queues), "%s", val);
		o->has_queues = 1;
		w->noverrides++;
		return 0;
	}
	if (*val < '0' || *val > '9')
		return -1;
	v = strtoul(val, &end, 10);
	if (*end != '\0')
		return -1;
	if (which == 'c') {
		if (v < 1 || v > CSQ_CAPACITY_MAX)
			return -1;
		o->has_capacity = 1;
		o->capacity = (uint32_t)v;
	} else if (which == 'o') {
		if (v > CSQ_OFFER_MAX)
			return -1;
		o->has_offer = 1;
		o->offer_s = (uint32_t)v;
	} else {
		if (v > CSQ_WRAPUP_MAX)
			return -1;
		o->has_wrapup = 1;
		o->wrapup_s = (uint32_t)v;
	}
	w->noverrides++;
	return 0;
}

/* "HH:MM" or "HH:MM:SS" (hours up to 999: the days after) into ms
 * after the day's midnight; -1 when it is neither. */
static int64_t
day_clock(const char *s, size_t len)
{
	unsigned h = 0, m = 0, sec = 0;
	char buf[16], tail;
	int n;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	n = sscanf(buf, "%3u:%2u:%2u%c", &h, &m, &sec, &tail);
	if (n == 2 && strlen(buf) <= 6)
		sec = 0;
	else if (n != 3)
		return -1;
	if (m > 59 || sec > 59 || buf[0] < '0' || buf[0] > '9')
		return -1;
	return ((int64_t)h * 3600 + m * 60 + sec) * 1000;
}

/* "ID[@FROM-TO]" into a change of kind; times on the record's first
 * day (UTC); without a range: the whole record. */
static int
day_change(struct csq_replay_change *ch, const char *s,
           enum csq_replay_change_kind kind, uint64_t midnight, uint64_t first,
           uint64_t last)
{
	const char *at = strchr(s, '@'), *dash;
	size_t idlen = at != NULL ? (size_t)(at - s) : strlen(s);
	int64_t from, to;

	memset(ch, 0, sizeof(*ch));
	if (!csq_valid_id(s, idlen))
		return -1;
	snprintf(ch->servicer, sizeof(ch->servicer), "%.*s", (int)idlen, s);
	ch->kind = kind;
	ch->capacity = 1;
	if (at == NULL) {
		ch->from_ms = first;
		ch->to_ms = last + 1;
		return 0;
	}
	if ((dash = strchr(at + 1, '-')) == NULL ||
	    (from = day_clock(at + 1, (size_t)(dash - at - 1))) < 0 ||
	    (to = day_clock(dash + 1, strlen(dash + 1))) < 0 || to <= from)
		return -1;
	ch->from_ms = midnight + (uint64_t)from;
	ch->to_ms = midnight + (uint64_t)to;
	return 0;
}

/* A csqd.conf's queue policies and limits; -1 when it does not load. */
static int
day_conf(const char *path, struct config *cfg)
{
	int n = config_load(cfg, path, stderr);

	if (n != 0) {
		fprintf(stderr, "csq-day: %s: %d error%s\n", path, n,
		        n == 1 ? "" : "s");
		return -1;
	}
	return 0;
}

/* Where a replay's events go: its report, and a record of them. */
struct day_sink {
	struct csq_report *report;
	FILE *events; /* NULL: none */
};

static void
day_collect(void *arg, const struct csq_event *ev)
{
	struct day_sink *sink = arg;
	char line[8192];
	int n;

	csq_report_event(sink->report, ev);
	if (sink->events != NULL &&
	    (n = csq_event_json(ev, line, sizeof(line))) > 0 &&
	    (size_t)n < sizeof(line))
		fprintf(sink->events, "%s\n", line);
}

/* One replay into a new report; NULL when the configuration is refused. */
static struct csq_report *
day_play(const struct csq_replay_day *day, const struct csq_replay_config *rc,
         const struct csq_report_config *cfg, struct csq_replay_stats *st,
         double *cpu_s, FILE *events)
{
	struct csq_report *rep = csq_report_new(cfg);
	struct day_sink sink = {rep, events};
	clock_t t0 = clock();

	if (csq_replay_day_run(day, rc, day_collect, &sink, st) != CSQ_OK) {
		csq_report_free(rep);
		return NULL;
	}
	*cpu_s = (double)(clock() - t0) / CLOCKS_PER_SEC;
	csq_report_end(rep);
	return rep;
}

/* A row's sums over runs, for the mean. */
struct day_acc {
	struct csq_report_row row; /* key, and the counts' sums */
	double sl, occ;
	uint64_t p50, p90, max;
	int nsl, nocc, nwait;
};

static uint64_t
day_div(uint64_t sum, int n)
{
	return (sum + (uint64_t)n / 2) / (uint64_t)n;
}

/*
 * The mean of nrep reports' rows, key by key (interval, queue): counts
 * over every run (a run without the row counts zeros), rounded; rates
 * and waits over the runs that have them. The caller frees it.
 */
static struct csq_report_row *
day_mean_rows(struct csq_report *const *reps, int nrep, size_t *nout)
{
	struct day_acc *acc = NULL;
	struct csq_report_row *out;
	const struct csq_report_row *rows, *r;
	size_t n = 0, cap = 0, nr, i, j;
	int k;

	for (k = 0; k < nrep; k++) {
		rows = csq_report_rows(reps[k], &nr);
		for (i = 0; i < nr; i++) {
			struct day_acc *a;

			r = &rows[i];
			for (j = 0; j < n; j++)
				if (csq_report_row_cmp(&acc[j].row, r) == 0)
					break;
			if (j == n) {
				if (n == cap) {
					cap = cap ? cap * 2 : 64;
					acc = realloc(acc, cap * sizeof(*acc));
					if (acc == NULL)
						abort();
				}
				memset(&acc[n], 0, sizeof(acc[n]));
				memcpy(acc[n].row.queue, r->queue,
				       sizeof(r->queue));
				acc[n].row.start_ms = r->start_ms;
				acc[n].row.target_s = r->target_s;
				n++;
			}
			a = &acc[j];
			a->row.arrivals += r->arrivals;
			a->row.matched += r->matched;
			a->row.abandoned += r->abandoned;
			a->row.expired += r->expired;
			a->row.within += r->within;
			a->row.handled += r->handled;
			a->row.handle_sum_ms += r->handle_sum_ms;
			if (r->service_level >= 0) {
				a->sl += r->service_level;
				a->nsl++;
			}
			if (r->occupancy >= 0) {
				a->occ += r->occupancy;
				a->nocc++;
			}
			if (r->matched > 0) {
				a->p50 += r->wait_p50_ms;
				a->p90 += r->wait_p90_ms;
				a->max += r->wait_max_ms;
				a->nwait++;
			}
		}
	}
	out = calloc(n ? n : 1, sizeof(*out));
	if (out == NULL)
		abort();
	for (j = 0; j < n; j++) {
		struct day_acc *a = &acc[j];

		out[j] = a->row;
		out[j].arrivals = day_div(a->row.arrivals, nrep);
		out[j].matched = day_div(a->row.matched, nrep);
		out[j].abandoned = day_div(a->row.abandoned, nrep);
		out[j].expired = day_div(a->row.expired, nrep);
		out[j].within = day_div(a->row.within, nrep);
		/* the mean handle time stays the runs' pooled mean */
		out[j].service_level = a->nsl ? a->sl / a->nsl : -1;
		out[j].occupancy = a->nocc ? a->occ / a->nocc : -1;
		out[j].wait_p50_ms = a->nwait ? day_div(a->p50, a->nwait) : 0;
		out[j].wait_p90_ms = a->nwait ? day_div(a->p90, a->nwait) : 0;
		out[j].wait_max_ms = a->nwait ? day_div(a->max, a->nwait) : 0;
	}
	free(acc);
	if (n > 1)
		qsort(out, n, sizeof(*out), csq_report_row_cmp);
	*nout = n;
	return out;
}

/*
 * runs replays of day under rc, seeds rc->seed, rc->seed + 1, ...: their
 * mean rows (the caller frees them), the first run's events to events,
 * the stats of the first and the CPU of all; NULL when rc is refused.
 */
static struct csq_report_row *
day_play_runs(const struct csq_replay_day *day, struct csq_replay_config *rc,
              const struct csq_report_config *cfg, int runs,
              struct csq_replay_stats *st, double *cpu_s, FILE *events,
              size_t *n)
{
	struct csq_report **reps = calloc((size_t)runs, sizeof(*reps));
	struct csq_report_row *rows = NULL;
	struct csq_replay_stats one;
	uint64_t seed = rc->seed;
	double cpu;
	int k;

	if (reps == NULL)
		abort();
	*cpu_s = 0;
	for (k = 0; k < runs; k++) {
		rc->seed = seed + (uint64_t)k;
		reps[k] = day_play(day, rc, cfg, k ? &one : st, &cpu,
		                   k ? NULL : events);
		if (reps[k] == NULL)
			goto out;
		*cpu_s += cpu;
	}
	rows = day_mean_rows(reps, runs, n);
out:
	rc->seed = seed;
	for (k = 0; k < runs; k++)
		csq_report_free(reps[k]);
	free(reps);
	return rows;
}

static int
day_replay(int argc, char **argv)
{
	static struct config base, whatif; /* large: not on the stack */
	static struct day_whatif w;
	static struct csq_replay_change changes[CSQ_REPLAY_CHANGES_MAX];
	struct csq_report_config cfg = {.interval_ms = 3600000};
	struct csq_replay_config rb, rw;
	struct csq_replay_stats stb, stw;
	struct day_reader rd = {NULL, NULL, NULL, 0, 0, 0};
	struct csq_report_row *left = NULL, *right = NULL;
	struct day_run runs[2];
	const char *format = "table", *outpath = NULL, *opt, *val;
	uint64_t bad = 0, midnight, first, last;
	size_t nchanges = 0;
	double cpu_b = 0, cpu_w = 0;
	FILE *out = stdout, *events = NULL;
	char *end;
	int k, i, status = 0;

	memset(&w, 0, sizeof(w));
	w.seed = 1;
	w.runs = 1;
	w.left = "record";
	for (k = 0; k < argc && argv[k][0] == '-' && argv[k][1] != '\0';
	     k += 2) {
		if (k + 1 >= argc)
			goto usage;
		opt = argv[k];
		val = argv[k + 1];
		if (strcmp(opt, "-i") == 0) {
			if ((cfg.interval_ms = day_interval(val)) == 0)
				goto usage;
		} else if (strcmp(opt, "-t") == 0) {
			if (day_target(&cfg, val) != 0)
				goto usage;
		} else if (strcmp(opt, "-f") == 0) {
			format = val;
			if (strcmp(format, "table") != 0 &&
			    strcmp(format, "csv") != 0 &&
			    strcmp(format, "html") != 0)
				goto usage;
		} else if (strcmp(opt, "-o") == 0)
			outpath = val;
		else if (strcmp(opt, "-c") == 0)
			w.base_conf = val;
		else if (strcmp(opt, "-C") == 0)
			w.whatif_conf = val;
		else if (strcmp(opt, "--strategy") == 0) {
			if (strcmp(val, "longest_idle") != 0 &&
			    strcmp(val, "least_busy") != 0)
				goto usage;
			w.strategy = val;
		} else if (strcmp(opt, "--add") == 0 ||
		           strcmp(opt, "--remove") == 0) {
			if (w.nadd + w.nremove == CSQ_REPLAY_CHANGES_MAX)
				goto usage;
			if (opt[2] == 'a')
				w.add[w.nadd++] = val;
			else
				w.remove[w.nremove++] = val;
		} else if (strcmp(opt, "--capacity") == 0 ||
		           strcmp(opt, "--offer") == 0 ||
		           strcmp(opt, "--wrapup") == 0 ||
		           strcmp(opt, "--skills") == 0 ||
		           strcmp(opt, "--queues") == 0) {
			if (day_override(&w, val, opt[2]) != 0)
				goto usage;
		} else if (strcmp(opt, "-s") == 0) {
			if (*val < '0' || *val > '9')
				goto usage;
			errno = 0;
			w.seed = strtoull(val, &end, 10);
			if (*end != '\0' || errno != 0)
				goto usage;
		} else if (strcmp(opt, "-n") == 0) {
			unsigned long v = strtoul(val, &end, 10);

			if (*val < '0' || *val > '9' || *end != '\0' || v < 1 ||
			    v > DAY_RUNS_MAX_N)
				goto usage;
			w.runs = (int)v;
		} else if (strcmp(opt, "-e") == 0)
			w.events = val;
		else if (strcmp(opt, "-b") == 0) {
			if (strcmp(val, "record") != 0 &&
			    strcmp(val, "replay") != 0)
				goto usage;
			w.left = val;
		} else
			goto usage;
	}
	if (k >= argc)
		goto usage;
	config_default(&base);
	if (w.base_conf != NULL && day_conf(w.base_conf, &base) != 0)
		return DAY_EX_USAGE;
	whatif = base;
	if (w.whatif_conf != NULL && day_conf(w.whatif_conf, &whatif) != 0)
		return DAY_EX_USAGE;
	if (w.strategy != NULL)
		whatif.limits.strategy = strcmp(w.strategy, "least_busy") == 0
		                             ? CSQ_STRATEGY_LEAST_BUSY
		                             : CSQ_STRATEGY_LONGEST_IDLE;

	rd.report = csq_report_new(&cfg);
	rd.day = csq_replay_day_new();
	rd.interval_ms = cfg.interval_ms;
	for (; k < argc; k++)
		if (day_read(argv[k], &rd, &bad) != 0) {
			status = DAY_EX_IO;
			goto out;
		}
	csq_report_end(rd.report);
	csq_replay_day_end(rd.day);
	/* The changes' times are of the record's first day (UTC). */
	csq_replay_day_period(rd.day, &first, &last);
	midnight = first - first % 86400000;
	for (i = 0; i < w.nadd + w.nremove; i++) {
		int add = i < w.nadd;
		const char *spec = add ? w.add[i] : w.remove[i - w.nadd];

		if (day_change(&changes[nchanges++], spec,
		               add ? CSQ_REPLAY_ADD : CSQ_REPLAY_REMOVE,
		               midnight, first, last) != 0) {
			fprintf(stderr, "csq-day: %s %s: not ID%s\n",
			        add ? "--add" : "--remove", spec,
			        add ? "@HH:MM-HH:MM" : "[@HH:MM-HH:MM]");
			status = DAY_EX_USAGE;
			goto out;
		}
	}
	memset(&rb, 0, sizeof(rb));
	rb.limits = base.limits;
	rb.policies = base.policies;
	rb.npolicies = (size_t)base.npolicies;
	rb.seed = w.seed;
	rw = rb;
	rw.limits = whatif.limits;
	rw.policies = whatif.policies;
	rw.npolicies = (size_t)whatif.npolicies;
	rw.changes = changes;
	rw.nchanges = nchanges;
	rw.overrides = w.overrides;
	rw.noverrides = (size_t)w.noverrides;
	if (strcmp(w.left, "replay") == 0 &&
	    (left = day_play_runs(rd.day, &rb, &cfg, w.runs, &stb, &cpu_b, NULL,
	                          &runs[0].n)) == NULL) {
		fprintf(stderr, "csq-day: the configuration is refused\n");
		status = DAY_EX_USAGE;
		goto out;
	}
	if (w.events != NULL && (events = fopen(w.events, "w")) == NULL) {
		fprintf(stderr, "csq-day: %s: %s\n", w.events, strerror(errno));
		status = DAY_EX_IO;
		goto out;
	}
	right = day_play_runs(rd.day, &rw, &cfg, w.runs, &stw, &cpu_w, events,
	                      &runs[1].n);
	if (events != NULL && fclose(events) != 0) {
		fprintf(stderr, "csq-day: %s: %s\n", w.events, strerror(errno));
		status = DAY_EX_IO;
		goto out;
	}
	if (right == NULL) {
		fprintf(stderr, "csq-day: a change is out of its range\n");
		status = DAY_EX_USAGE;
		goto out;
	}
	fprintf(stderr,
	        "replay: %" PRIu64 " stays, %" PRIu64
	        " patiences drawn (censored), %" PRIu64
	        " conversations, %" PRIu64 " offer answers and %" PRIu64
	        " wrap-ups drawn, %" PRIu64 " arrivals refused, %" PRIu64
	        " re-ENQUEUEs played; %.2f recorded hours in %.3f s of CPU%s\n",
	        stw.visits, stw.drawn_patience, stw.drawn_handle,
	        stw.drawn_offers, stw.drawn_wrapups, stw.refused,
	        stw.reenqueued, (double)(stw.end_ms - stw.start_ms) / 3600000.0,
	        cpu_w / w.runs,
	        w.runs > 1 ? " (a run; the first run's draws)" : "");
	runs[0].label = left != NULL ? "replay" : "record";
	if (left != NULL)
		runs[0].rows = left;
	else
		runs[0].rows = csq_report_rows(rd.report, &runs[0].n);
	runs[1].label = "what-if";
	runs[1].rows = right;
	if (outpath != NULL && (out = fopen(outpath, "w")) == NULL) {
		fprintf(stderr, "csq-day: %s: %s\n", outpath, strerror(errno));
		status = DAY_EX_IO;
		goto out;
	}
	if (strcmp(format, "csv") == 0)
		day_report_csv_runs(out, runs, 2);
	else if (strcmp(format, "html") == 0)
		day_report_html_runs(out, runs, 2, cfg.interval_ms);
	else
		day_report_table_runs(out, runs, 2);
	if (out != stdout && fclose(out) != 0) {
		fprintf(stderr, "csq-day: %s: %s\n", outpath, strerror(errno));
		status = DAY_EX_IO;
	}
	if (bad > 0 && status == 0)
		status = DAY_EX_FOUND;
out:
	csq_report_free(rd.report);
	free(left);
	free(right);
	csq_replay_day_free(rd.day);
	return status;
usage:
	day_usage(stderr);
	return DAY_EX_USAGE;
}

int
main(int argc, char **argv)
{
	if (argc >= 2 &&
	    (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		day_usage(stdout);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "audit") == 0)
		return day_audit(argc - 2, argv + 2);
	if (argc >= 3 && strcmp(argv[1], "report") == 0)
		return day_report(argc - 2, argv + 2);
	if (argc >= 3 && strcmp(argv[1], "replay") == 0)
		return day_replay(argc - 2, argv + 2);
	day_usage(stderr);
	return DAY_EX_USAGE;
}
