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
#include "webhook.h"

#define METRICS_COMMANDS_MAX 64       /* command names; the table has ~25 */
#define METRICS_OTHER        "_other" /* the queues past the cap */

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

/*
 * A queue's waits, in buckets fine enough that every service level a
 * configuration can set is a bound of one when it is a whole number of
 * seconds up to ten minutes, or of minutes up to an hour (and a few
 * hours beyond): so csq_queue_wait_seconds has a bucket exactly at each
 * queue's service level, whatever the configuration says, and a reload
 * that adds a level adds its bucket with the counts it always had.
 */
#define FINE_SECONDS 600 /* 1 s .. 600 s, every second */
#define FINE_MINUTES 50  /* 11 min .. 60 min, every minute */
static const uint32_t fine_tail[] = {5400,  7200,  10800, 14400,
                                     21600, 28800, 43200, 86400};
#define FINE_TAIL    (sizeof(fine_tail) / sizeof(fine_tail[0]))
#define FINE_BUCKETS (FINE_SECONDS + FINE_MINUTES + FINE_TAIL)

struct metrics_queue {
	char name[CSQ_ID_MAX + 1];
	size_t slot;     /* its index in metrics' queues */
	uint32_t served; /* servicers up that named it: kept even when empty */
	/* Its matched users' waits: buckets (not cumulative, NULL until
	 * the first), count and sum. Past the last bound: in count only. */
	uint64_t *fine;
	uint64_t count, ms_sum;
};

struct metrics {
	const struct webhooks *webhooks;
	struct metrics_cmd cmds[METRICS_COMMANDS_MAX];
	size_t ncmds;
	uint64_t wait_count, wait_ms_sum;
	uint64_t wait_buckets[WAIT_BUCKETS];
	uint64_t offer_count, offer_ms_sum;
	uint64_t offer_buckets[OFFER_BUCKETS];
	/* The queues with labels of their own, in the order first seen,
	 * found by name in byname; other: the rest, summed. */
	struct metrics_queue **queues;
	size_t nqueues, capqueues, max_queues;
	struct csq_dict *byname;
	struct metrics_queue other;
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
metrics_new(uint64_t seed, size_t max_queues)
{
	struct metrics *m = csq_xcalloc(1, sizeof(struct metrics));

	m->servicers = csq_dict_new(seed);
	m->byname = csq_dict_new(seed ^ UINT64_C(0x9e3779b97f4a7c15));
	m->max_queues = max_queues;
	memcpy(m->other.name, METRICS_OTHER, sizeof(METRICS_OTHER));
	return m;
}

/* A lower cap applies to the queues that come next; those that have
 * their labels keep them (a series does not move to _other midway). */
void
metrics_set_max_queues(struct metrics *m, size_t max_queues)
{
	m->max_queues = max_queues;
	m->queues_full_logged = 0;
}

void
metrics_set_webhooks(struct metrics *m, const struct webhooks *w)
{
	m->webhooks = w;
}

static void
metrics_queue_free(struct metrics_queue *q)
{
	free(q->fine);
	free(q);
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
	size_t i;

	csq_dict_each(m->servicers, metrics_free_value, NULL);
	csq_dict_free(m->servicers);
	for (i = 0; i < m->nqueues; i++)
		metrics_queue_free(m->queues[i]);
	free(m->queues);
	csq_dict_free(m->byname);
	free(m->other.fine);
	free(m);
}

/* The slot of a command name; names are static strings, each one's
 * pointer nearly always the same: it is looked for first, before any
 * strcmp (a strcmp of every slot before a command's was 250 instructions
 * a match). The slots' names differ, so either finds the same slot. */
static struct metrics_cmd *
metrics_cmd(struct metrics *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->ncmds; i++)
		if (m->cmds[i].name == name)
			return &m->cmds[i];
	for (i = 0; i < m->ncmds; i++)
		if (strcmp(m->cmds[i].name, name) == 0)
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

/*
 * The queue of that name: its own, or, past the cap, the sum of the
 * others (_other); NULL for no name. served: +1 a servicer that names it
 * came up, -1 it went, 0 neither.
 */
static struct metrics_queue *
metrics_note_queue(struct metrics *m, const char *name, size_t len, int served)
{
	struct metrics_queue *q;

	if (len == 0 || len > CSQ_ID_MAX)
		return NULL;
	if ((q = csq_dict_get(m->byname, name, len)) != NULL) {
		if (served > 0 || q->served > 0)
			q->served += (uint32_t)served;
		return q;
	}
	if (m->nqueues >= m->max_queues) {
		if (!m->queues_full_logged)
			log_warnx("metrics: more than %zu queues "
			          "(metrics_max_queues); the newer ones are "
			          "summed under queue=\"" METRICS_OTHER "\"",
			          m->max_queues);
		m->queues_full_logged = 1;
		return &m->other;
	}
	if (served < 0)
		return NULL;
	if (m->nqueues == m->capqueues) {
		m->capqueues = m->capqueues ? m->capqueues * 2 : 16;
		m->queues =
		    csq_xrealloc(m->queues, m->capqueues * sizeof(*m->queues));
	}
	q = csq_xcalloc(1, sizeof(*q));
	memcpy(q->name, name, len);
	q->name[len] = '\0';
	q->served = (uint32_t)served;
	q->slot = m->nqueues;
	m->queues[m->nqueues++] = q;
	csq_dict_put(m->byname, q->name, len, q);
	return q;
}

/* The bound of fine bucket i, in seconds. */
static uint32_t
fine_bound(size_t i)
{
	if (i < FINE_SECONDS)
		return (uint32_t)i + 1;
	if (i < FINE_SECONDS + FINE_MINUTES)
		return (uint32_t)(FINE_SECONDS + (i - FINE_SECONDS + 1) * 60);
	return fine_tail[i - FINE_SECONDS - FINE_MINUTES];
}

/* The bucket a wait of ms falls in: the first whose bound it is within;
 * FINE_BUCKETS past the last. O(1) but for the tail. */
static size_t
fine_index(uint64_t ms)
{
	uint64_t s = (ms + 999) / 1000; /* within s seconds */
	size_t i;

	if (s <= 1)
		return 0;
	if (s <= FINE_SECONDS)
		return (size_t)s - 1;
	if (s <= FINE_SECONDS + FINE_MINUTES * 60)
		return FINE_SECONDS + (size_t)((s - FINE_SECONDS + 59) / 60) -
		       1;
	for (i = 0; i < FINE_TAIL; i++)
		if (s <= fine_tail[i])
			return FINE_SECONDS + FINE_MINUTES + i;
	return FINE_BUCKETS;
}

/* The fine bucket whose bound is exactly seconds, or FINE_BUCKETS. */
static size_t
fine_at(uint32_t seconds)
{
	size_t i = fine_index((uint64_t)seconds * 1000);

	return i < FINE_BUCKETS && fine_bound(i) == seconds ? i : FINE_BUCKETS;
}

static void
metrics_queue_wait(struct metrics_queue *q, uint64_t ms)
{
	size_t i = fine_index(ms);

	if (q->fine == NULL)
		q->fine = csq_xcalloc(FINE_BUCKETS, sizeof(*q->fine));
	if (i < FINE_BUCKETS)
		q->fine[i]++;
	q->count++;
	q->ms_sum += ms;
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

	struct metrics_queue *q;

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
	q = metrics_note_queue(m, ev->queue, strlen(ev->queue), 0);
	if (ev->type == CSQ_EV_MATCHED && q != NULL)
		metrics_queue_wait(q, ev->waited_ms);
	/* A HEARTBEAT's new queues (servicer_updated) replace the old. */
	if (ev->type == CSQ_EV_SERVICER_UP ||
	    ev->type == CSQ_EV_SERVICER_UPDATED ||
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
	if (ev->type == CSQ_EV_SERVICER_UP ||
	    ev->type == CSQ_EV_SERVICER_UPDATED) {
		csq_dict_put(m->servicers, ev->servicer, strlen(ev->servicer),
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
	return m->queues[i]->name;
}

void
metrics_prune(struct metrics *m, const uint64_t *qlen, size_t n)
{
	struct metrics_queue *q;
	size_t i, j = 0;

	for (i = 0; i < m->nqueues; i++) {
		q = m->queues[i];
		if (i < n && qlen[i] == 0 && !q->served && q->count == 0 &&
		    strcmp(q->name, "default") != 0) {
			csq_dict_del(m->byname, q->name, strlen(q->name));
			metrics_queue_free(q);
			continue;
		}
		q->slot = j;
		m->queues[j++] = q;
	}
	m->nqueues = j;
}

/* A queue's engine numbers, summed over the queues of its label. */
struct queue_sums {
	int seen;
	uint64_t waiting, oldest_ms, matched, leave, timeout, overflowed;
	uint64_t outcomes, within;
	uint32_t level;
};

#define METRICS_LEVELS_MAX 64 /* distinct service levels with a bucket */

struct metrics_qsums {
	struct queue_sums *v; /* by slot of the queues with their own */
	size_t cap;
	struct queue_sums other;
	uint32_t levels[METRICS_LEVELS_MAX]; /* distinct, as they come */
	size_t nlevels;
};

void
metrics_fold_qstats(struct metrics *m, struct metrics_scrape *sc,
                    const struct csq_queue_stats *v, size_t n)
{
	struct metrics_qsums *f = sc->qsums;
	const struct csq_queue_stats *q;
	struct metrics_queue *mq;
	struct queue_sums *k;
	size_t i, j;

	if (f == NULL)
		f = sc->qsums = csq_xcalloc(1, sizeof(*f));
	for (i = 0; i < n; i++) {
		q = &v[i];
		mq = metrics_note_queue(m, q->queue, strlen(q->queue), 0);
		if (mq == NULL || mq == &m->other)
			k = &f->other;
		else {
			if (mq->slot >= f->cap) {
				j = f->cap;
				f->cap = mq->slot + 1 > 2 * f->cap
				             ? mq->slot + 1
				             : 2 * f->cap;
				f->v =
				    csq_xrealloc(f->v, f->cap * sizeof(*f->v));
				memset(f->v + j, 0,
				       (f->cap - j) * sizeof(*f->v));
			}
			k = &f->v[mq->slot];
		}
		k->seen = 1;
		k->waiting += q->waiting;
		if (q->oldest_wait_ms > k->oldest_ms)
			k->oldest_ms = q->oldest_wait_ms;
		k->matched += q->matched_total;
		k->leave += q->abandoned_leave;
		k->timeout += q->abandoned_timeout;
		k->overflowed += q->overflowed_total;
		k->outcomes += q->outcomes;
		k->within += q->outcomes_within;
		k->level = q->service_level_s;
		for (j = 0; j < f->nlevels && f->levels[j] != k->level; j++)
			;
		if (j == f->nlevels && j < METRICS_LEVELS_MAX)
			f->levels[f->nlevels++] = k->level;
	}
}

void
metrics_scrape_free(struct metrics_scrape *sc)
{
	if (sc->qsums != NULL)
		free(sc->qsums->v);
	free(sc->qsums);
	sc->qsums = NULL;
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
	uint64_t other;
	size_t i;
	int any;

	metrics_head(out, "csq_waiting_users", "gauge",
	             "Users waiting, by queue (the queues seen since the "
	             "start, but empty ones no servicer serves).");
	for (i = 0; sc->qlen != NULL && i < sc->nqueues && i < m->nqueues; i++)
		evbuffer_add_printf(
		    out, "csq_waiting_users{queue=\"%s\"} %llu\n",
		    m->queues[i]->name, (unsigned long long)sc->qlen[i]);
	/* The queues past the cap, when the engine tells them all. */
	other = sc->qsums != NULL ? sc->qsums->other.waiting : 0;
	any = sc->qsums != NULL && sc->qsums->other.seen;
	if (any)
		evbuffer_add_printf(out,
		                    "csq_waiting_users{queue=\"" METRICS_OTHER
		                    "\"} %llu\n",
		                    (unsigned long long)other);
	metrics_u64(out, "csq_waiting_users_all", "gauge",
	            "Users waiting in all queues together.", st->waiting);
	metrics_head(out, "csq_servicers", "gauge",
	             "Servicers logged in, by status.");
	evbuffer_add_printf(out, "csq_servicers{status=\"ready\"} %llu\n",
	                    (unsigned long long)sc->servicers_ready);
	evbuffer_add_printf(out, "csq_servicers{status=\"paused\"} %llu\n",
	                    (unsigned long long)sc->servicers_paused);
	metrics_head(out, "csq_rooms", "gauge",
	             "Rooms: busy (offered, assigned or in wrap-up), free (of "
	             "a ready servicer, one resting after a declined or "
	             "missed offer included).");
	evbuffer_add_printf(out, "csq_rooms{state=\"busy\"} %llu\n",
	                    (unsigned long long)st->rooms_busy);
	evbuffer_add_printf(out, "csq_rooms{state=\"free\"} %llu\n",
	                    (unsigned long long)st->rooms_free);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		metrics_u64(out, counters[i].name, "counter", counters[i].help,
		            counters[i].v);
}

static const char *
metrics_slot_name(const struct metrics *m, size_t i)
{
	return i < m->nqueues ? m->queues[i]->name : METRICS_OTHER;
}

/* The bounds of csq_queue_wait_seconds: the overall histogram's, and
 * every queue's service level; sorted, each once. Returns how many. */
static size_t
queue_bounds(const struct metrics_scrape *sc, uint32_t *out, size_t cap)
{
	size_t n = 0, i, j;
	uint32_t v, t;

	size_t nlevels = sc->qsums != NULL ? sc->qsums->nlevels : 0;

	for (i = 0; i < WAIT_BUCKETS + 1 + nlevels; i++) {
		if (i < WAIT_BUCKETS)
			v = (uint32_t)wait_bounds[i];
		else if (i == WAIT_BUCKETS)
			v = CSQ_DEFAULT_SERVICE_LEVEL;
		else
			v = sc->qsums->levels[i - WAIT_BUCKETS - 1];
		if (fine_at(v) == FINE_BUCKETS)
			continue; /* a level between bounds: not a bucket */
		for (j = 0; j < n && out[j] != v; j++)
			;
		if (j == n && n < cap)
			out[n++] = v;
	}
	for (i = 1; i < n; i++) /* a few dozen at most */
		for (j = i; j > 0 && out[j - 1] > out[j]; j--) {
			t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

/* One queue's histogram of waits at bounds (cumulative at each). */
static void
queue_histogram(struct evbuffer *out, const struct metrics_queue *q,
                const uint32_t *bounds, size_t nb)
{
	uint64_t cum = 0;
	size_t i, b = 0;

	for (i = 0; i < FINE_BUCKETS && b < nb; i++) {
		cum += q->fine != NULL ? q->fine[i] : 0;
		if (fine_bound(i) != bounds[b])
			continue;
		evbuffer_add_printf(
		    out,
		    "csq_queue_wait_seconds_bucket{queue=\"%s\","
		    "le=\"%u\"} %llu\n",
		    q->name, bounds[b], (unsigned long long)cum);
		b++;
	}
	evbuffer_add_printf(out,
	                    "csq_queue_wait_seconds_bucket{queue=\"%s\","
	                    "le=\"+Inf\"} %llu\n",
	                    q->name, (unsigned long long)q->count);
	evbuffer_add_printf(out,
	                    "csq_queue_wait_seconds_sum{queue=\"%s\"} %.3f\n",
	                    q->name, (double)q->ms_sum / 1000);
	evbuffer_add_printf(out,
	                    "csq_queue_wait_seconds_count{queue=\"%s\"} %llu\n",
	                    q->name, (unsigned long long)q->count);
}

/* One family of the engine's per-queue numbers: a series per label. */
static void
queue_family(struct evbuffer *out, const struct metrics *m,
             const struct queue_sums *sums, const char *name, const char *type,
             const char *help, size_t field)
{
	const struct queue_sums *k;
	size_t i;

	metrics_head(out, name, type, help);
	for (i = 0; i <= m->nqueues; i++) {
		k = &sums[i];
		if (!k->seen)
			continue;
		evbuffer_add_printf(
		    out, "%s{queue=\"%s\"} %llu\n", name,
		    metrics_slot_name(m, i),
		    (unsigned long long)*(
		        const uint64_t *)(const void *)((const char *)k +
		                                        field));
	}
}

/*
 * The series of each queue: the wait histogram the daemon counts from the
 * events (any engine), and the numbers of the engine's QSTATS (the memory
 * engine's): oldest wait, matched, abandoned by reason, overflowed, the
 * service level and its share of the last 1000 outcomes. Queues past the
 * cap (metrics_max_queues) are summed under queue="_other".
 */
static void
metrics_render_queues(const struct metrics *m, const struct metrics_scrape *sc,
                      struct evbuffer *out)
{
	uint32_t bounds[WAIT_BUCKETS + 64];
	struct queue_sums *sums;
	size_t nb, i;

	nb = queue_bounds(sc, bounds, sizeof(bounds) / sizeof(bounds[0]));
	metrics_head(out, "csq_queue_wait_seconds", "histogram",
	             "Wait of a user from its arrival to its room, by the "
	             "queue it was matched in; a bucket at each queue's "
	             "service level.");
	for (i = 0; i < m->nqueues; i++)
		queue_histogram(out, m->queues[i], bounds, nb);
	if (m->other.count > 0)
		queue_histogram(out, &m->other, bounds, nb);
	if (sc->qsums == NULL)
		return;
	/* The slots: the queues with their own series, then _other. */
	sums = csq_xcalloc(m->nqueues + 1, sizeof(*sums));
	for (i = 0; i < m->nqueues && i < sc->qsums->cap; i++)
		sums[i] = sc->qsums->v[i];
	sums[m->nqueues] = sc->qsums->other;
	metrics_head(out, "csq_queue_oldest_wait_seconds", "gauge",
	             "The longest wait in the queue's line now.");
	for (i = 0; i <= m->nqueues; i++)
		if (sums[i].seen)
			evbuffer_add_printf(out,
			                    "csq_queue_oldest_wait_seconds{"
			                    "queue=\"%s\"} %.3f\n",
			                    metrics_slot_name(m, i),
			                    (double)sums[i].oldest_ms / 1000);
	queue_family(out, m, sums, "csq_queue_matched_total", "counter",
	             "Users of the queue given a room.",
	             offsetof(struct queue_sums, matched));
	metrics_head(out, "csq_queue_abandoned_total", "counter",
	             "Users who left the queue before a match, by reason: "
	             "leave (LEAVE) or timeout (their TTL).");
	for (i = 0; i <= m->nqueues; i++) {
		if (!sums[i].seen)
			continue;
		evbuffer_add_printf(out,
		                    "csq_queue_abandoned_total{queue=\"%s\","
		                    "reason=\"leave\"} %llu\n",
		                    metrics_slot_name(m, i),
		                    (unsigned long long)sums[i].leave);
		evbuffer_add_printf(out,
		                    "csq_queue_abandoned_total{queue=\"%s\","
		                    "reason=\"timeout\"} %llu\n",
		                    metrics_slot_name(m, i),
		                    (unsigned long long)sums[i].timeout);
	}
	queue_family(out, m, sums, "csq_queue_overflowed_total", "counter",
	             "Users moved out of the queue by its overflow.",
	             offsetof(struct queue_sums, overflowed));
	metrics_head(out, "csq_queue_service_level_seconds", "gauge",
	             "The queue's service level: the wait it means to match "
	             "its users within.");
	for (i = 0; i < m->nqueues; i++)
		if (sums[i].seen)
			evbuffer_add_printf(out,
			                    "csq_queue_service_level_seconds{"
			                    "queue=\"%s\"} %u\n",
			                    metrics_slot_name(m, i),
			                    sums[i].level);
	metrics_head(out, "csq_queue_service_level_ratio", "gauge",
	             "Share of the last 1000 users matched or abandoned that "
	             "were matched within the service level (absent before "
	             "the first).");
	for (i = 0; i <= m->nqueues; i++)
		if (sums[i].seen && sums[i].outcomes > 0)
			evbuffer_add_printf(out,
			                    "csq_queue_service_level_ratio{"
			                    "queue=\"%s\"} %.4f\n",
			                    metrics_slot_name(m, i),
			                    (double)sums[i].within /
			                        (double)sums[i].outcomes);
	free(sums);
}

/* The memory engine's journal, when it has one. */
static void
metrics_render_journal(const struct journal_stats *j, struct evbuffer *out)
{
	metrics_u64(out, "csq_journal_write_errors_total", "counter",
	            "Journal records that could not be written (the command "
	            "was answered TRYAGAIN).",
	            j->write_errors);
	metrics_u64(out, "csq_journal_written_bytes_total", "counter",
	            "Bytes written to the journal: records and compactions.",
	            j->bytes_written);
	metrics_head(out, "csq_journal_fsync_seconds", "histogram",
	             "Time of each fdatasync of the journal.");
	metrics_histogram(out, "csq_journal_fsync_seconds", "",
	                  journal_fsync_bounds, j->fsync_buckets,
	                  JOURNAL_FSYNC_BUCKETS, j->fsyncs,
	                  (double)j->fsync_us_sum / 1e6);
	metrics_head(out, "csq_journal_last_compaction_timestamp_seconds",
	             "gauge",
	             "Unix time of the journal's last compaction; 0 when none "
	             "since the start.");
	evbuffer_add_printf(out,
	                    "csq_journal_last_compaction_timestamp_seconds "
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

	metrics_head(out, "csq_build_info", "gauge",
	             "csqd's version, as a label; the value is 1.");
	evbuffer_add_printf(out, "csq_build_info{version=\"%s\"} 1\n",
	                    CSQ_VERSION);
	metrics_u64(out, "csq_engine_up", "gauge",
	            "1 when the engine answers, 0 when it does not.",
	            (uint64_t)(sc->engine_up != 0));
	if (sc->redis_rtt_us >= 0) {
		metrics_head(out, "csq_redis_rtt_seconds", "gauge",
		             "Round trip of the Redis engine's last health "
		             "check (a call of csq.so).");
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
	metrics_render_queues(m, sc, out);
	metrics_u64(out, "csq_connected_clients", "gauge",
	            "Client connections being served.", sc->connected_clients);
	metrics_u64(out, "csq_output_limit_disconnections_total", "counter",
	            "Clients closed for output they did not read: a "
	            "subscriber's or a connection's limit, or all clients' "
	            "(max_output_memory).",
	            sc->output_closed_total);
	metrics_u64(out, "csq_input_limit_disconnections_total", "counter",
	            "Clients closed while all clients' input was over "
	            "max_input_memory, the largest first.",
	            sc->input_closed_total);
	metrics_u64(out, "csq_input_bytes", "gauge",
	            "Input all clients hold: read and not yet run, and the "
	            "requests being read.",
	            sc->input_bytes);
	metrics_u64(out, "csq_http_event_streams", "gauge",
	            "The admin view's event streams open (GET /api/events).",
	            sc->event_streams);
	metrics_u64(out, "csq_http_event_stream_bytes", "gauge",
	            "Bytes sent to the event streams that their clients have "
	            "not taken yet, all streams.",
	            sc->event_stream_bytes);
	metrics_u64(out, "csq_http_event_stream_disconnections_total",
	            "counter",
	            "Event streams closed for bytes their clients did not "
	            "read (http.event_stream_buffer).",
	            sc->event_streams_closed);
	if (sc->journal != NULL)
		metrics_render_journal(sc->journal, out);
	webhooks_render(m->webhooks, out);
	metrics_head(out, "csq_commands_total", "counter",
	             "Commands run, by name (\"unknown\": not a command).");
	for (i = 0; i < m->ncmds; i++)
		evbuffer_add_printf(
		    out, "csq_commands_total{command=\"%s\"} %llu\n",
		    m->cmds[i].name, (unsigned long long)m->cmds[i].calls);
	metrics_head(out, "csq_command_errors_total", "counter",
	             "Commands answered with an error reply, by name.");
	for (i = 0; i < m->ncmds; i++)
		evbuffer_add_printf(
		    out, "csq_command_errors_total{command=\"%s\"} %llu\n",
		    m->cmds[i].name, (unsigned long long)m->cmds[i].errors);
	metrics_head(out, "csq_command_duration_seconds", "histogram",
	             "Time from a command's dispatch to its reply, by name.");
	for (i = 0; i < m->ncmds; i++) {
		c = &m->cmds[i];
		snprintf(labels, sizeof(labels), "command=\"%s\",", c->name);
		metrics_histogram(out, "csq_command_duration_seconds", labels,
		                  cmd_bounds, c->buckets, CMD_BUCKETS, c->calls,
		                  (double)c->usec_sum / 1e6);
	}
}
