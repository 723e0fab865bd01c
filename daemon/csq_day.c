/*
 * csq-day: what a record of the day (record.path, docs/day.md) says.
 *
 *	csq-day audit FILE...    the fairness audit (lib/audit.h)
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
#include "event_parse.h"

#define DAY_EX_FOUND 1
#define DAY_EX_IO    2
#define DAY_EX_USAGE 64

static void
day_usage(FILE *out)
{
	fprintf(out, "usage: csq-day audit FILE...\n"
	             "  audit   check a record of the day for fairness: every "
	             "user accounted\n"
	             "          for, no room with two users, no user offered "
	             "twice, nobody\n"
	             "          served out of turn without a reason "
	             "(docs/day.md)\n");
}

/* Feeds every line of one file to the audit; -1 when it cannot be read.
 * *bad counts the lines that are not events. */
static int
day_read(const char *path, struct csq_audit *a, uint64_t *bad)
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
		if (csq_audit_line(a, line, (size_t)n, err) != 0) {
			printf("%s:%zu: not an event: %s\n", path, lineno, err);
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
	const struct csq_audit_finding *f;
	uint64_t bad = 0;
	size_t n, i;
	int k, status = 0;

	for (k = 0; k < argc; k++)
		if (day_read(argv[k], a, &bad) != 0) {
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
	day_usage(stderr);
	return DAY_EX_USAGE;
}
