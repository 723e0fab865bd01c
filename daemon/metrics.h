/*
 * Metrics: what csqd counts itself (commands, their latency and errors,
 * the wait until matched, overall and per queue, the queues it has seen)
 * and the rendering of everything, with the engine's counters, in the
 * Prometheus text format 0.0.4. Every name starts with csq_.
 */
#ifndef CSQD_METRICS_H
#define CSQD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "csq.h"

struct evbuffer;
struct journal_stats;
struct metrics;

/* What a scrape asks the engine and the server for. */
struct metrics_qsums;

struct metrics_scrape {
	int engine_up;
	int64_t redis_rtt_us; /* Redis engine's last health check; -1 none */
	int have_stats;       /* 0 when the engine did not answer */
	struct csq_stats stats;
	uint64_t servicers_ready, servicers_paused;
	uint64_t connected_clients;
	uint64_t output_closed_total;
	uint64_t input_closed_total;
	uint64_t input_bytes; /* all clients' input held (max_input_memory) */
	/* The admin view's event streams (admin_events.h). */
	uint64_t event_streams, event_stream_bytes, event_streams_closed;
	const struct journal_stats *journal; /* NULL: no journal */
	const uint64_t *qlen; /* per queue of metrics_queue(), or NULL */
	size_t nqueues;
	/* QSTATS of every queue the engine has, summed by series as its
	 * slices come (metrics_fold_qstats); NULL: the engine has no
	 * per-queue numbers (the Redis engine's Lua script). */
	struct metrics_qsums *qsums;
};

/*
 * Folds a slice of QSTATS into sc (issue 37: a scrape takes every queue
 * in slices, and keeps only its series' sums, not every queue's numbers):
 * the queues get their labels (up to the cap), so that a queue with a
 * policy has its series before its first event.
 */
void metrics_fold_qstats(struct metrics *, struct metrics_scrape *,
                         const struct csq_queue_stats *, size_t n);
/* Frees what the folds kept. */
void metrics_scrape_free(struct metrics_scrape *);

/* seed: its hash tables'; max_queues: queues with series of their own,
 * the rest summed under queue="_other". */
struct metrics *metrics_new(uint64_t seed, size_t max_queues);
void metrics_set_max_queues(struct metrics *, size_t);
void metrics_free(struct metrics *);
/* The webhooks whose counters a scrape shows (NULL: none). */
struct webhooks;
void metrics_set_webhooks(struct metrics *, const struct webhooks *);

/*
 * One command ran: name is a static string (the command table's, or
 * "unknown"), usec its duration, error 1 when the reply was an error.
 */
void metrics_command(struct metrics *, const char *name, uint64_t usec,
                     int error);
/* The commands counted so far, and one's totals (INFO commandstats). */
size_t metrics_ncommands(const struct metrics *);
void metrics_command_totals(const struct metrics *, size_t i, const char **name,
                            uint64_t *calls, uint64_t *usec, uint64_t *errors);
/* An engine event: matched feeds the wait histogram; queues are noted. */
void metrics_event(struct metrics *, const struct csq_event *);

/* The queues seen so far, for a scrape to ask their lengths. */
size_t metrics_nqueues(const struct metrics *);
const char *metrics_queue(const struct metrics *, size_t i);
/*
 * After a scrape: a queue that is empty, that no servicer has served and
 * that has no wait counted is forgotten until its next event, so that ids
 * made up by clients do not accumulate as series.
 */
void metrics_prune(struct metrics *, const uint64_t *qlen, size_t n);

void metrics_render(const struct metrics *, const struct metrics_scrape *,
                    struct evbuffer *);

/* Monotonic microseconds, for durations. */
uint64_t metrics_now_us(void);

#endif
