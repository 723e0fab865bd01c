/*
 * Reports over a record of the day: per queue and per interval (an hour by
 * default), what a team lead asks of a day: arrivals, conversations
 * started, abandons, the service level within the queue's target, the
 * waits (p50, p90, max), handle times, and the servicers' occupancy. Fed
 * a record's events in order (csq_event_parse), like the audit; pure: no
 * I/O (daemon/csq_day.c prints the rows as a table, CSV or HTML).
 */
#ifndef CSQ_REPORT_H
#define CSQ_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "csq.h"

#define CSQ_REPORT_TARGETS_MAX  64
#define CSQ_REPORT_DEFAULT_SL_S 20 /* protocol-v2 §4's service_level */

struct csq_report_target {
	char queue[CSQ_ID_MAX + 1];
	uint32_t seconds;
};

struct csq_report_config {
	uint64_t interval_ms;      /* > 0 */
	uint32_t default_target_s; /* the service level's, 0: 20 s */
	struct csq_report_target targets[CSQ_REPORT_TARGETS_MAX];
	int ntargets;
};

/*
 * One queue in one interval; queue "" is every queue together, the only
 * row with an occupancy. Every figure counts what happened in the
 * interval: arrivals when they arrived, matches and abandons when they
 * happened, handle times when the conversation ended.
 */
struct csq_report_row {
	char queue[CSQ_ID_MAX + 1];
	uint64_t start_ms; /* the interval's first ms */
	uint32_t target_s; /* the service level's target */
	uint64_t arrivals;
	uint64_t matched;     /* conversations started */
	uint64_t abandoned;   /* left while waiting or offered (LEAVE) */
	uint64_t expired;     /* left for their TTL */
	uint64_t within;      /* matched within the target */
	double service_level; /* within / (matched + abandoned + expired);
	                         -1 when there is none */
	uint64_t wait_p50_ms, wait_p90_ms, wait_max_ms; /* of the matched */
	uint64_t handled;       /* conversations ended (released) */
	uint64_t handle_sum_ms; /* their lengths, from match to release */
	double occupancy; /* busy room time (conversations and wrap-ups) over
	                     the rooms' logged-in time; -1: none, or a queue
	                     row */
};

struct csq_report;

struct csq_report *csq_report_new(const struct csq_report_config *);
void csq_report_free(struct csq_report *);
void csq_report_event(struct csq_report *, const struct csq_event *);
/* The end of the record: what is still open ends at its last event. */
void csq_report_end(struct csq_report *);
/* The rows, by interval, then queue ("" last in its interval). */
const struct csq_report_row *csq_report_rows(const struct csq_report *,
                                             size_t *n);
/* The target of queue q under the configuration, in seconds. */
uint32_t csq_report_target(const struct csq_report_config *, const char *q);
/* The rows' order, for qsort: by interval, each interval's queues by
 * name and its all-queues row ("") last. */
int csq_report_row_cmp(const void *a, const void *b);

#endif
