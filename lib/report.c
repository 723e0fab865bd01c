/*
 * Reports over a record (report.h): accumulators per queue and interval,
 * and the state that the figures need between events: when each user
 * arrived, each room's conversation and busy time, each servicer's
 * logged-in time.
 */
#include "report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "util.h"

#define REPORT_SEED 0x6373712d72657074ULL /* the ids are not hostile */

struct rp_acc {
	struct csq_report_row row;
	uint64_t *waits;
	size_t nwaits, capwaits;
	uint64_t busy_ms, avail_ms; /* the "" rows' room times */
};

struct rp_room {
	char servicer[CSQ_ID_MAX + 1];
	char queue[CSQ_ID_MAX + 1]; /* of its conversation */
	uint64_t conv_since, busy_since;
	int in_conv, busy;
};

struct rp_servicer {
	uint64_t since;
	uint32_t capacity;
	int up;
};

struct csq_report {
	struct csq_report_config cfg;
	struct csq_dict *accs, *users, *rooms, *servicers;
	struct rp_acc **order; /* every acc, for the rows */
	size_t nacc, capacc;
	struct csq_report_row *rows;
	size_t nrows;
	uint64_t last_ts;
	int ended;
};

uint32_t
csq_report_target(const struct csq_report_config *cfg, const char *q)
{
	int i;

	for (i = 0; i < cfg->ntargets; i++)
		if (strcmp(cfg->targets[i].queue, q) == 0)
			return cfg->targets[i].seconds;
	return cfg->default_target_s ? cfg->default_target_s
	                             : CSQ_REPORT_DEFAULT_SL_S;
}

struct csq_report *
csq_report_new(const struct csq_report_config *cfg)
{
	struct csq_report *r = csq_xcalloc(1, sizeof(*r));

	r->cfg = *cfg;
	if (r->cfg.interval_ms == 0)
		r->cfg.interval_ms = 3600000;
	r->accs = csq_dict_new(REPORT_SEED);
	r->users = csq_dict_new(REPORT_SEED);
	r->rooms = csq_dict_new(REPORT_SEED);
	r->servicers = csq_dict_new(REPORT_SEED);
	return r;
}

static void
rp_free_val(void *arg, const char *key, size_t len, void *val)
{
	(void)arg, (void)key, (void)len;
	free(val);
}

void
csq_report_free(struct csq_report *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->nacc; i++) {
		free(r->order[i]->waits);
		free(r->order[i]);
	}
	csq_dict_each(r->rooms, rp_free_val, NULL);
	csq_dict_each(r->servicers, rp_free_val, NULL);
	csq_dict_free(r->accs);
	csq_dict_free(r->users);
	csq_dict_free(r->rooms);
	csq_dict_free(r->servicers);
	free(r->order);
	free(r->rows);
	free(r);
}

static uint64_t
rp_bucket(const struct csq_report *r, uint64_t ts)
{
	return ts - ts % r->cfg.interval_ms;
}

/* The accumulator of queue q ("" every queue) in the interval of ts. */
static struct rp_acc *
rp_acc(struct csq_report *r, const char *q, uint64_t ts)
{
	uint64_t start = rp_bucket(r, ts);
	char key[CSQ_ID_MAX + 32];
	int n = snprintf(key, sizeof(key), "%s\x1f%" PRIu64, q, start);
	struct rp_acc *a = csq_dict_get(r->accs, key, (size_t)n);

	if (a != NULL)
		return a;
	a = csq_xcalloc(1, sizeof(*a));
	snprintf(a->row.queue, sizeof(a->row.queue), "%s", q);
	a->row.start_ms = start;
	a->row.target_s = q[0] != '\0' ? csq_report_target(&r->cfg, q) : 0;
	csq_dict_put(r->accs, key, (size_t)n, a);
	if (r->nacc == r->capacc) {
		r->capacc = r->capacc ? r->capacc * 2 : 64;
		r->order =
		    csq_xrealloc(r->order, r->capacc * sizeof(*r->order));
	}
	r->order[r->nacc++] = a;
	return a;
}

static void
rp_wait(struct rp_acc *a, uint64_t ms)
{
	if (a->nwaits == a->capwaits) {
		a->capwaits = a->capwaits ? a->capwaits * 2 : 16;
		a->waits =
		    csq_xrealloc(a->waits, a->capwaits * sizeof(*a->waits));
	}
	a->waits[a->nwaits++] = ms;
}

/* weight x the span [from, to) into the "" rows, split at intervals. */
static void
rp_span(struct csq_report *r, uint64_t from, uint64_t to, uint64_t weight,
        int busy)
{
	uint64_t b, end;
	struct rp_acc *a;

	for (b = rp_bucket(r, from); b < to; b += r->cfg.interval_ms) {
		end = b + r->cfg.interval_ms < to ? b + r->cfg.interval_ms : to;
		a = rp_acc(r, "", b);
		if (busy)
			a->busy_ms += (end - (from > b ? from : b)) * weight;
		else
			a->avail_ms += (end - (from > b ? from : b)) * weight;
	}
}

static struct rp_room *
rp_room(struct csq_report *r, const char *room, const char *servicer)
{
	size_t len = strlen(room);
	struct rp_room *m = csq_dict_get(r->rooms, room, len);

	if (m == NULL) {
		m = csq_xcalloc(1, sizeof(*m));
		snprintf(m->servicer, sizeof(m->servicer), "%s", servicer);
		csq_dict_put(r->rooms, room, len, m);
	}
	return m;
}

static struct rp_servicer *
rp_servicer(struct csq_report *r, const char *id)
{
	size_t len = strlen(id);
	struct rp_servicer *s = csq_dict_get(r->servicers, id, len);

	if (s == NULL) {
		s = csq_xcalloc(1, sizeof(*s));
		csq_dict_put(r->servicers, id, len, s);
	}
	return s;
}

static void
rp_busy(struct csq_report *r, struct rp_room *m, uint64_t ts, int on)
{
	if (on && !m->busy) {
		m->busy = 1;
		m->busy_since = ts;
	} else if (!on && m->busy) {
		m->busy = 0;
		rp_span(r, m->busy_since, ts, 1, 1);
	}
}

static void
rp_logout(struct csq_report *r, struct rp_servicer *s, uint64_t ts)
{
	if (!s->up)
		return;
	s->up = 0;
	rp_span(r, s->since, ts, s->capacity, 0);
}

/* A room seen busy whose servicer the record never showed logging in
 * (the record began after it did): logged in from now, with room enough. */
static void
rp_seen(struct csq_report *r, const struct csq_event *ev)
{
	struct rp_servicer *s = rp_servicer(r, ev->servicer);
	const char *slash = strrchr(ev->room, '/');
	uint32_t index =
	    slash != NULL ? (uint32_t)strtoul(slash + 1, NULL, 10) : 0;

	if (!s->up) {
		s->up = 1;
		s->since = ev->ts_ms;
		s->capacity = 0;
	}
	if (index + 1 > s->capacity) {
		/* More rooms than known from now on. */
		rp_logout(r, s, ev->ts_ms);
		s->up = 1;
		s->since = ev->ts_ms;
		s->capacity = index + 1;
	}
}

/* A user's arrival, once per stay: in the queue it arrived in. */
static void
rp_arrive(struct csq_report *r, const struct csq_event *ev)
{
	size_t len = strlen(ev->user);

	if (csq_dict_get(r->users, ev->user, len) != NULL)
		return;
	csq_dict_put(r->users, ev->user, len, r); /* present */
	rp_acc(r,
	       ev->from_queue[0] != '\0' && ev->type != CSQ_EV_QUEUED
	           ? ev->from_queue
	           : ev->queue,
	       ev->ts_ms)
	    ->row.arrivals++;
}

static void
rp_gone(struct csq_report *r, const char *user)
{
	csq_dict_del(r->users, user, strlen(user));
}

void
csq_report_event(struct csq_report *r, const struct csq_event *ev)
{
	struct rp_servicer *s;
	struct rp_room *m;
	struct rp_acc *a;

	if (r->ended)
		return;
	if (ev->ts_ms > r->last_ts)
		r->last_ts = ev->ts_ms;
	switch (ev->type) {
	case CSQ_EV_QUEUED:
	case CSQ_EV_OFFERED:
		if (ev->user[0] != '\0' && ev->queue[0] != '\0')
			rp_arrive(r, ev);
		break;
	case CSQ_EV_MATCHED:
		if (ev->user[0] == '\0' || ev->queue[0] == '\0' ||
		    ev->room[0] == '\0')
			break;
		rp_arrive(r, ev);
		a = rp_acc(r, ev->queue, ev->ts_ms);
		a->row.matched++;
		rp_wait(a, ev->waited_ms);
		if (ev->waited_ms <= (uint64_t)a->row.target_s * 1000)
			a->row.within++;
		rp_seen(r, ev);
		m = rp_room(r, ev->room, ev->servicer);
		snprintf(m->queue, sizeof(m->queue), "%s", ev->queue);
		m->in_conv = 1;
		m->conv_since = ev->ts_ms;
		rp_busy(r, m, ev->ts_ms, 1);
		break;
	case CSQ_EV_LEFT:
		if (ev->user[0] == '\0' || ev->queue[0] == '\0')
			break;
		a = rp_acc(r, ev->queue, ev->ts_ms);
		if (ev->reason == CSQ_REASON_TIMEOUT)
			a->row.expired++;
		else
			a->row.abandoned++;
		rp_gone(r, ev->user);
		break;
	case CSQ_EV_RELEASED:
	case CSQ_EV_REQUEUED:
		if (ev->room[0] == '\0')
			break;
		m = rp_room(r, ev->room, ev->servicer);
		if (ev->type == CSQ_EV_RELEASED && m->in_conv) {
			a = rp_acc(r, m->queue, ev->ts_ms);
			a->row.handled++;
			a->row.handle_sum_ms += ev->ts_ms - m->conv_since;
		}
		m->in_conv = 0;
		rp_busy(r, m, ev->ts_ms, 0);
		if (ev->type == CSQ_EV_RELEASED &&
		    ev->reason != CSQ_REASON_BY_TRANSFER && ev->user[0] != '\0')
			rp_gone(r, ev->user);
		break;
	case CSQ_EV_WRAPUP:
		if (ev->room[0] != '\0')
			rp_busy(r, rp_room(r, ev->room, ev->servicer),
			        ev->ts_ms, 1);
		break;
	case CSQ_EV_READY:
		if (ev->room[0] != '\0')
			rp_busy(r, rp_room(r, ev->room, ev->servicer),
			        ev->ts_ms, 0);
		break;
	case CSQ_EV_SERVICER_UP:
	case CSQ_EV_SERVICER_UPDATED: /* its capacity from now on */
		if (ev->servicer[0] == '\0')
			break;
		s = rp_servicer(r, ev->servicer);
		rp_logout(r, s, ev->ts_ms);
		s->up = 1;
		s->since = ev->ts_ms;
		s->capacity = ev->capacity;
		break;
	case CSQ_EV_SERVICER_DOWN:
		if (ev->servicer[0] == '\0')
			break;
		rp_logout(r, rp_servicer(r, ev->servicer), ev->ts_ms);
		break;
	case CSQ_EV_RESCORED:
	case CSQ_EV_OVERFLOWED:
	case CSQ_EV_TRANSFERRED:
	case CSQ_EV_DECLINED:
	case CSQ_EV_PREFER_ENDED:
	case CSQ_EV_RELAXED:
	case CSQ_EV_SERVICER_PAUSED:
	case CSQ_EV_SERVICER_RESUMED:
	case CSQ_EV_OPENED:
	case CSQ_EV_CLOSED:
		break;
	}
}

/* What is still open ends at the record's last event. */
static void
rp_close_room(void *arg, const char *key, size_t len, void *val)
{
	struct csq_report *r = arg;

	(void)key, (void)len;
	rp_busy(r, val, r->last_ts, 0);
}

static void
rp_close_servicer(void *arg, const char *key, size_t len, void *val)
{
	(void)key, (void)len;
	rp_logout(arg, val, ((struct csq_report *)arg)->last_ts);
}

static int
rp_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
csq_report_row_cmp(const void *a, const void *b)
{
	const struct csq_report_row *x = a, *y = b;

	if (x->start_ms != y->start_ms)
		return x->start_ms < y->start_ms ? -1 : 1;
	if ((x->queue[0] == '\0') != (y->queue[0] == '\0'))
		return x->queue[0] == '\0' ? 1 : -1;
	return strcmp(x->queue, y->queue);
}

/* Nearest rank: the smallest value with at least p of them at or below. */
static uint64_t
rp_pct(const uint64_t *v, size_t n, unsigned p)
{
	size_t k = (n * p + 99) / 100;

	return n == 0 ? 0 : v[k > 0 ? k - 1 : 0];
}

static void
rp_finish(struct csq_report_row *row, struct rp_acc *a)
{
	uint64_t served = row->matched + row->abandoned + row->expired;

	if (a->nwaits > 1)
		qsort(a->waits, a->nwaits, sizeof(*a->waits), rp_cmp_u64);
	row->wait_p50_ms = rp_pct(a->waits, a->nwaits, 50);
	row->wait_p90_ms = rp_pct(a->waits, a->nwaits, 90);
	row->wait_max_ms = a->nwaits ? a->waits[a->nwaits - 1] : 0;
	row->service_level =
	    served > 0 ? (double)row->within / (double)served : -1;
}

void
csq_report_end(struct csq_report *r)
{
	struct rp_acc *a, *all;
	size_t i, n;

	if (r->ended)
		return;
	csq_dict_each(r->rooms, rp_close_room, r);
	csq_dict_each(r->servicers, rp_close_servicer, r);
	r->ended = 1;
	/* Every queue's row into its interval's "" row. */
	n = r->nacc;
	for (i = 0; i < n; i++) {
		a = r->order[i];
		if (a->row.queue[0] == '\0')
			continue;
		all = rp_acc(r, "", a->row.start_ms);
		all->row.arrivals += a->row.arrivals;
		all->row.matched += a->row.matched;
		all->row.abandoned += a->row.abandoned;
		all->row.expired += a->row.expired;
		all->row.within += a->row.within;
		all->row.handled += a->row.handled;
		all->row.handle_sum_ms += a->row.handle_sum_ms;
		for (size_t k = 0; k < a->nwaits; k++)
			rp_wait(all, a->waits[k]);
	}
	r->rows = csq_xcalloc(r->nacc ? r->nacc : 1, sizeof(*r->rows));
	for (i = 0; i < r->nacc; i++) {
		a = r->order[i];
		r->rows[i] = a->row;
		rp_finish(&r->rows[i], a);
		r->rows[i].occupancy =
		    a->row.queue[0] == '\0' && a->avail_ms > 0
		        ? (double)a->busy_ms / (double)a->avail_ms
		        : -1;
	}
	r->nrows = r->nacc;
	qsort(r->rows, r->nrows, sizeof(*r->rows), csq_report_row_cmp);
}

const struct csq_report_row *
csq_report_rows(const struct csq_report *r, size_t *n)
{
	*n = r->nrows;
	return r->rows;
}
