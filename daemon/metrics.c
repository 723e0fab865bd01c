/*
 * Metrics in the Prometheus text format 0.0.4. Counters and histograms are
 * plain integers updated on the hot path (no allocation, no lock: one
 * thread); rendering happens only when /metrics is scraped.
 */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "dict.h"
#include "journal.h"
#include "log.h"
#include "util.h"

#define METRICS_COMMANDS_MAX 64   /* command names; the table has ~25 */
#define METRICS_QUEUES_MAX   1000 /* queue label values kept at most */

/* Seconds, for the wait of a user until a servicer takes it. */
static const double wait_bounds[] = {1,   5,   10,  30,   60,
                                     120, 300, 600, 1800, 3600};
#define WAIT_BUCKETS (sizeof(wait_bounds) / sizeof(wait_bounds[0]))

/* Seconds, for an offer until its servicer accepts it (at most 600). */
static const double offer_bounds[] = {1, 2, 5, 10, 15, 20, 30, 60, 120, 300};
#define OFFER_BUCKETS (sizeof(offer_bounds) / sizeof(offer_bounds[0]))

/* Seconds, for a command from its dispatch to its reply. */
static const double cmd_bounds[] = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
    0.005,   0.01,     0.025,   0.05,   0.1,     0.25,   0.5,   1};
#define CMD_BUCKETS (sizeof(cmd_bounds) / sizeof(cmd_bounds[0]))

struct metrics_cmd {
	const char *name;
	uint64_t calls, errors;
	uint64_t usec_sum;
	uint64_t buckets[CMD_BUCKETS]; /* not cumulative; summed at render */
};

struct metrics_queue {
	char name[CSQ_ID_MAX + 1];
	uint32_t served; /* servicers up that named it: kept even when empty */
};

struct metrics {
	struct metrics_cmd cmds[METRICS_COMMANDS_MAX];
	size_t ncmds;
	uint64_t wait_count, wait_ms_sum;
	uint64_t wait_buckets[WAIT_BUCKETS];
	uint64_t offer_count, offer_ms_sum;
	uint64_t offer_buckets[OFFER_BUCKETS];
	struct metrics_queue *queues;
	size_t nqueues, capqueues;
	/* Servicer id -> the queues its servicer_up named ("a,b"), until its
	 * servicer_down: servicer_down does not name them. */
	struct csq_dict *servicers;
	int queues_full_logged;
};

uint64_t
metrics_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

struct metrics *
metrics_new(uint64_t seed)
{
	struct metrics *m = csq_xcalloc(1, sizeof(struct metrics));

	m->servicers = csq_dict_new(seed);
	return m;
}

static void
metrics_free_value(void *arg, const char *key, size_t len, void *val)
{
	(void)arg, (void)key, (void)len;
	free(val);
}

void
metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	csq_dict_each(m->servicers, metrics_free_value, NULL);
	csq_dict_free(m->servicers);
	free(m->queues);
	free(m);
}

/* The slot of a command name; names are static strings. */
static struct metrics_cmd *
metrics_cmd(struct metrics *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->ncmds; i++)
		if (m->cmds[i].name == name ||
		    strcmp(m->cmds[i].name, name) == 0)
			return &m->cmds[i];
	if (m->ncmds == METRICS_COMMANDS_MAX)
		return NULL;
	m->cmds[m->ncmds].name = name;
	return &m->cmds[m->ncmds++];
}

void
metrics_command(struct metrics *m, const char *name, uint64_t usec, int error)
{
	struct metrics_cmd *c;
	size_t i;

	if ((c = metrics_cmd(m, name)) == NULL)
		return;
	c->calls++;
	c->errors += error != 0;
	c->usec_sum += usec;
	for (i = 0; i < CMD_BUCKETS; i++) {
		if ((double)usec <= cmd_bounds[i] * 1e6) {
			c->buckets[i]++;
			break;
		}
	}
}

size_t
metrics_ncommands(const struct metrics *m)
{
	return m->ncmds;
}

void
metrics_command_totals(const struct metrics *m, size_t i, const char **name,
                       uint64_t *calls, uint64_t *usec, uint64_t *errors)
{
	*name = m->cmds[i].name;
	*calls = m->cmds[i].calls;
	*usec = m->cmds[i].usec_sum;
	*errors = m->cmds[i].errors;
}

/* served: +1 a servicer that names it came up, -1 it went, 0 neither. */
static void
metrics_note_queue(struct metrics *m, const char *name, size_t len, int served)
{
	struct metrics_queue *q;
	size_t i;

	if (len == 0 || len > CSQ_ID_MAX)
		return;
	for (i = 0; i < m->nqueues; i++) {
		q = &m->queues[i];
		if (strlen(q->name) == len && memcmp(q->name, name, len) == 0) {
			if (served > 0 || q->served > 0)
				q->served += (uint32_t)served;
			return;
		}
	}
	if (served < 0)
		return;
	if (m->nqueues == METRICS_QUEUES_MAX) {
		if (!m->queues_full_logged)
			log_warnx("metrics: more than %d queues; csq_waiting_"
			          "users leaves out the newer ones",
			          METRICS_QUEUES_MAX);
		m->queues_full_logged = 1;
		return;
	}
	if (m->nqueues == m->capqueues) {
		m->capqueues = m->capqueues ? m->capqueues * 2 : 16;
		m->queues =
		    csq_xrealloc(m->queues, m->capqueues * sizeof(*m->queues));
	}
	q = &m->queues[m->nqueues++];
	memcpy(q->name, name, len);
	q->name[len] = '\0';
	q->served = (uint32_t)served;
}

/* Each queue of a list "a,b,c", noted with served. */
static void
metrics_note_queues(struct metrics *m, const char *list, int served)
{
	const char *p, *comma;

	for (p = list; *p != '\0'; p = comma + 1) {
		if ((comma = strchr(p, ',')) == NULL)
			comma = p + strlen(p);
		metrics_note_queue(m, p, (size_t)(comma - p), served);
		if (*comma == '\0')
			break;
	}
}

/* Counts ms in the first bucket (bounds in seconds) it fits; none, past
 * the last: only +Inf, which is the count. */
static void
metrics_bucket(const double *bounds, uint64_t *buckets, size_t n, uint64_t ms)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((double)ms <= bounds[i] * 1000) {
			buckets[i]++;
			return;
		}
}

void
metrics_event(struct metrics *m, const struct csq_event *ev)
{
	size_t len;
	char *was;

	if (ev->type == CSQ_EV_MATCHED) {
		m->wait_count++;
		m->wait_ms_sum += ev->waited_ms;
		metrics_bucket(wait_bounds, m->wait_buckets, WAIT_BUCKETS,
		               ev->waited_ms);
	}
	/* A match after an ACCEPT: how long its servicer took. */
	if (ev->type == CSQ_EV_MATCHED && ev->has_offered_ms) {
		m->offer_count++;
		m->offer_ms_sum += ev->offered_ms;
		metrics_bucket(offer_bounds, m->offer_buckets, OFFER_BUCKETS,
		               ev->offered_ms);
	}
	metrics_note_queue(m, ev->queue, strlen(ev->queue), 0);
	if (ev->type == CSQ_EV_SERVICER_UP ||
	    ev->type == CSQ_EV_SERVICER_DOWN) {
		/* (Up twice without a down cannot happen, but then the first
		 * list stands down too.) */
		len = strlen(ev->servicer);
		if ((was = csq_dict_del(m->servicers, ev->servicer, len)) !=
		    NULL) {
			metrics_note_queues(m, was, -1);
			free(was);
		}
	}
	if (ev->type == CSQ_EV_SERVICER_UP) {
		csq_dict_put(m->servicers, ev->servicer, len,
		             csq_xstrndup(ev->queues, strlen(ev->queues)));
		metrics_note_queues(m, ev->queues, 1);
	}
}

size_t
metrics_nqueues(const struct metrics *m)
{
	return m->nqueues;
}

const char *
metrics_queue(const struct metrics *m, size_t i)
{
	return m->queues[i].name;
}

void
metrics_prune(struct metrics *m, const uint64_t *qlen, size_t n)
{
	size_t i, j = 0;

	for (i = 0; i < m->nqueues; i++) {
		if (i < n && qlen[i] == 0 && !m->queues[i].served &&
		    strcmp(m->queues[i].name, "default") != 0)
			continue;
		m->queues[j++] = m->queues[i];
	}
	m->nqueues = j;
}

/* Rendering. */

static void
metrics_head(struct evbuffer *out, const char *name, const char *type,
             const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	                    name, type);
}

static void
metrics_u64(struct evbuffer *out, const char *name, const char *type,
            const char *help, uint64_t v)
{
	metrics_head(out, name, type, help);
	evbuffer_add_printf(out, "%s %llu\n", name, (unsigned long long)v);
}

/* One histogram's series; labels is "" or `name="value",`. */
static void
metrics_histogram(struct evbuffer *out, const char *name, const char *labels,
                  const double *bounds, const uint64_t *buckets, size_t n,
                  uint64_t count, double sum)
{
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		cum += buckets[i];
		evbuffer_add_printf(out, "%s_bucket{%sle=\"%g\"} %llu\n", name,
		                    labels, bounds[i], (unsigned long long)cum);
	}
	evbuffer_add_printf(out, "%s_bucket{%sle=\"+Inf\"} %llu\n", name,
	                    labels, (unsigned long long)count);
	/* The braces go when there is no label but le. */
	if (labels[0] != '\0') {
		char l[128];
		size_t len = strlen(labels);

		snprintf(l, sizeof(l), "%.*s", (int)(len - 1), labels);
		evbuffer_add_printf(out, "%s_sum{%s} %.6f\n", name, l, sum);
		evbuffer_add_printf(out, "%s_count{%s} %llu\n", name, l,
		                    (unsigned long long)count);
	} else {
		evbuffer_add_printf(out, "%s_sum %.6f\n", name, sum);
		evbuffer_add_printf(out, "%s_count %llu\n", name,
		                    (unsigned long long)count);
	}
}

static void
metrics_render_engine(const struct metrics *m, const struct metrics_scrape *sc,
                      struct evbuffer *out)
{
	const struct csq_stats *st = &sc->stats;
	const struct {
		const char *name, *help;
		uint64_t v;
	} counters[] = {
	    {"csq_enqueued_total", "Users put in line.", st->enqueued_total},
	    {"csq_matched_total", "Users given a room.", st->matched_total},
	    {"csq_abandoned_total",
	     "Waiting users gone before a match (LEAVE or TTL).",
	     st->abandoned_total},
	    {"csq_requeued_total",
	     "Users put back in line by a servicer's logout or loss.",
	     st->requeued_total},
	    {"csq_servicers_lost_total",
	     "Servicers whose heartbeats stopped for longer than their TTL.",
	     st->servicers_lost_total},
	    {"csq_offers_total", "Users offered to a servicer.",
	     st->offers_total},
	    {"csq_offers_declined_total", "Offers a servicer declined.",
	     st->offers_declined_total},
	    {"csq_offers_missed_total", "Offers that ran out unanswered.",
	     st->offers_missed_total},
	    {"csq_transferred_total",
	     "Conversations a servicer handed on to a queue (TRANSFER).",
	     st->transferred_total},
	};
	size_t i;

	metrics_head(out, "csq_waiting_users", "gauge",
	             "Users waiting, by queue (the queues seen since the "
	             "start, but empty ones no servicer serves).");
	for (i = 0; sc->qlen != NULL && i < sc->nqueues && i < m->nqueues; i++)
		evbuffer_add_printf(
		    out, "csq_waiting_users{queue=\"%s\"} %llu\n",
		    m->queues[i].name, (unsigned long long)sc->qlen[i]);
	metrics_u64(out, "csq_waiting_users_all", "gauge",
	            "Users waiting in all queues together.", st->waiting);
	metrics_head(out, "csq_servicers", "gauge",
	             "Servicers logged in, by status.");
	evbuffer_add_printf(out, "csq_servicers{status=\"ready\"} %llu\n",
	                    (unsigned long long)sc->servicers_ready);
	evbuffer_add_printf(out, "csq_servicers{status=\"paused\"} %llu\n",
	                    (unsigned long long)sc->servicers_paused);
	metrics_head(out, "csq_rooms", "gauge",
	             "Rooms: busy (a user in it), free (of a ready servicer).");
	evbuffer_add_printf(out, "csq_rooms{state=\"busy\"} %llu\n",
	                    (unsigned long long)st->rooms_busy);
	evbuffer_add_printf(out, "csq_rooms{state=\"free\"} %llu\n",
	                    (unsigned long long)st->rooms_free);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		metrics_u64(out, counters[i].name, "counter", counters[i].help,
		            counters[i].v);
}

/* The memory engine's journal, when it has one. */
static void
metrics_render_journal(const struct journal_stats *j, struct evbuffer *out)
{
	metrics_u64(out, "csqd_journal_write_errors_total", "counter",
	            "Journal records that could not be written (the command "
	            "was answered TRYAGAIN).",
	            j->write_errors);
	metrics_u64(out, "csqd_journal_written_bytes_total", "counter",
	            "Bytes written to the journal: records and compactions.",
	            j->bytes_written);
	metrics_head(out, "csqd_journal_fsync_seconds", "histogram",
	             "Time of each fdatasync of the journal.");
	metrics_histogram(out, "csqd_journal_fsync_seconds", "",
	                  journal_fsync_bounds, j->fsync_buckets,
	                  JOURNAL_FSYNC_BUCKETS, j->fsyncs,
	                  (double)j->fsync_us_sum / 1e6);
	metrics_head(out, "csqd_journal_last_compaction_timestamp_seconds",
	             "gauge",
	             "Unix time of the journal's last compaction; 0 when none "
	             "since the start.");
	evbuffer_add_printf(out,
	                    "csqd_journal_last_compaction_timestamp_seconds "
	                    "%.3f\n",
	                    (double)j->last_compaction_ms / 1000);
}

void
metrics_render(const struct metrics *m, const struct metrics_scrape *sc,
               struct evbuffer *out)
{
	const struct metrics_cmd *c;
	char labels[128];
	size_t i;

	metrics_u64(out, "csq_engine_up", "gauge",
	            "1 when the engine answers, 0 when it does not.",
	            (uint64_t)(sc->engine_up != 0));
	if (sc->redis_rtt_us >= 0) {
		metrics_head(out, "csq_redis_rtt_seconds", "gauge",
		             "Round trip of the Redis engine's last health "
		             "check (a script call).");
		evbuffer_add_printf(out, "csq_redis_rtt_seconds %.6f\n",
		                    (double)sc->redis_rtt_us / 1e6);
	}
	/* Without the engine's answer its series are left out rather than
	 * shown as zeros that would look like a reset. */
	if (sc->have_stats)
		metrics_render_engine(m, sc, out);
	metrics_head(out, "csq_wait_seconds", "histogram",
	             "Wait of a user from its arrival in line to its room "
	             "(a requeued user counts from its first arrival).");
	metrics_histogram(out, "csq_wait_seconds", "", wait_bounds,
	                  m->wait_buckets, WAIT_BUCKETS, m->wait_count,
	                  (double)m->wait_ms_sum / 1000);
	metrics_head(out, "csq_offer_accept_seconds", "histogram",
	             "Time from an offer to its servicer's ACCEPT.");
	metrics_histogram(out, "csq_offer_accept_seconds", "", offer_bounds,
	                  m->offer_buckets, OFFER_BUCKETS, m->offer_count,
	                  (double)m->offer_ms_sum / 1000);
	metrics_u64(out, "csqd_connected_clients", "gauge",
	            "Client connections being served.", sc->connected_clients);
	metrics_u64(out, "csqd_output_limit_disconnections_total", "counter",
	            "Clients closed for output they did not read: a "
	            "subscriber's or a connection's limit, or all clients' "
	            "(max_output_memory).",
	            sc->output_closed_total);
	metrics_u64(out, "csqd_input_limit_disconnections_total", "counter",
	            "Clients closed while all clients' input was over "
	            "max_input_memory, the largest first.",
	            sc->input_closed_total);
	metrics_u64(out, "csqd_input_bytes", "gauge",
	            "Input all clients hold: read and not yet run, and the "
	            "requests being read.",
	            sc->input_bytes);
	metrics_u64(out, "csqd_http_event_streams", "gauge",
	            "The admin view's event streams open (GET /api/events).",
	            sc->event_streams);
	metrics_u64(out, "csqd_http_event_stream_bytes", "gauge",
	            "Bytes sent to the event streams that their clients have "
	            "not taken yet, all streams.",
	            sc->event_stream_bytes);
	metrics_u64(out, "csqd_http_event_stream_disconnections_total",
	            "counter",
	            "Event streams closed for bytes their clients did not "
	            "read (http.event_stream_buffer).",
	            sc->event_streams_closed);
	if (sc->journal != NULL)
		metrics_render_journal(sc->journal, out);
	metrics_head(out, "csqd_commands_total", "counter",
	             "Commands run, by name (\"unknown\": not a command).");
	for (i = 0; i < m->ncmds; i++)
		evbuffer_add_printf(
		    out, "csqd_commands_total{command=\"%s\"} %llu\n",
		    m->cmds[i].name, (unsigned long long)m->cmds[i].calls);
	metrics_head(out, "csqd_command_errors_total", "counter",
	             "Commands answered with an error reply, by name.");
	for (i = 0; i < m->ncmds; i++)
		evbuffer_add_printf(
		    out, "csqd_command_errors_total{command=\"%s\"} %llu\n",
		    m->cmds[i].name, (unsigned long long)m->cmds[i].errors);
	metrics_head(out, "csqd_command_duration_seconds", "histogram",
	             "Time from a command's dispatch to its reply, by name.");
	for (i = 0; i < m->ncmds; i++) {
		c = &m->cmds[i];
		snprintf(labels, sizeof(labels), "command=\"%s\",", c->name);
		metrics_histogram(out, "csqd_command_duration_seconds", labels,
		                  cmd_bounds, c->buckets, CMD_BUCKETS, c->calls,
		                  (double)c->usec_sum / 1e6);
	}
}
