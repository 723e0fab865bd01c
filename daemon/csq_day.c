/*
 * csq-day: what a record of the day (record.path, docs/day.md) says.
 *
 *	csq-day audit FILE...    the fairness audit (lib/audit.h)
 *	csq-day report [-i INTERVAL] [-t [QUEUE=]SECONDS]... [-f FORMAT]
 *	               [-o OUT] FILE...
 *	                         per queue and interval (lib/report.h), as a
 *	                         table, CSV or an HTML page with charts
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

#include "audit.h"
#include "day_report.h"
#include "event_parse.h"
#include "report.h"

#define DAY_EX_FOUND 1
#define DAY_EX_IO    2
#define DAY_EX_USAGE 64

#define DAY_INTERVAL_MAX_MS (7ULL * 86400000) /* a week */
#define DAY_TARGET_MAX_S    86400             /* as csqd's service_level */

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
	        "FILE: a record of the day or its rotated parts, in order; - "
	        "is standard input\n"
	        "(docs/day.md)\n");
}

/* What reads a record: the audit, or a report. */
struct day_reader {
	struct csq_audit *audit;
	struct csq_report *report;
};

/* One line to the reader; -1 with err set when it is not an event. */
static int
day_line(struct day_reader *rd, const char *line, size_t len, char *err)
{
	struct csq_event ev;
	enum csq_event_parse r;

	if (rd->audit != NULL)
		return csq_audit_line(rd->audit, line, len, err);
	r = csq_event_parse(line, len, &ev, err);
	if (r == CSQ_PARSE_OK)
		csq_report_event(rd->report, &ev);
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
		if (day_line(rd, line, (size_t)n, err) != 0) {
			fprintf(rd->audit != NULL ? stdout : stderr,
			        "%s:%zu: not an event: %s\n", path, lineno,
			        err);
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
	struct day_reader rd = {a, NULL};
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
	struct day_reader rd = {NULL, NULL};
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
	day_usage(stderr);
	return DAY_EX_USAGE;
}
