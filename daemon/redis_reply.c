/*
 * The Redis engine's replies: a script call's reply is a header (the
 * earliest deadline, Redis's time, the last event id, the events'
 * message) and then each operation's reply, its length first
 * (batch.lua). Each becomes the struct csq_result of its call; a reply of
 * any other shape is an error of the call, never trusted.
 */
#include "redis_engine.h"

#include <stdio.h>
#include <string.h>

#include "log.h"
#include "result.h"
#include "util.h"

#define ERROR_LOG_MS 1000 /* at most one error line per second */
#define SERVICER_ROW 9    /* SERVICERS: the fields of a row (servicers.lua) */
#define QUEUE_ROW    5    /* QUEUES: the fields of a row (queues.lua) */
#define QSTATS_ROW   14   /* QSTATS: the fields of a queue (qstats.lua) */

int64_t
redis_reply_int(const redisReply *a, size_t i)
{
	if (i >= a->elements || a->element[i]->type != REDIS_REPLY_INTEGER)
		return INT64_MIN;
	return a->element[i]->integer;
}

static int
elem_str(const redisReply *a, size_t i, char *out, size_t cap)
{
	const redisReply *e;

	if (i >= a->elements ||
	    (e = a->element[i])->type != REDIS_REPLY_STRING || e->len >= cap)
		return -1;
	memcpy(out, e->str, e->len);
	out[e->len] = '\0';
	return 0;
}

static uint64_t
u64_of(int64_t v)
{
	return v < 0 ? 0 : (uint64_t)v;
}

/* ENQUEUE, WHERE and TRANSFER: state, queue, position, tier, waited,
 * servicer, room, since, expires_in, eta, prefer ('' outside a
 * preference window), prefer_ms, from index i. */
static int
parse_user(const redisReply *a, size_t i, struct csq_user_info *u)
{
	char state[16];

	if (elem_str(a, i, state, sizeof(state)) != 0 ||
	    elem_str(a, i + 1, u->queue, sizeof(u->queue)) != 0 ||
	    elem_str(a, i + 5, u->servicer, sizeof(u->servicer)) != 0 ||
	    elem_str(a, i + 6, u->room, sizeof(u->room)) != 0 ||
	    redis_reply_int(a, i + 7) == INT64_MIN ||
	    redis_reply_int(a, i + 8) == INT64_MIN ||
	    redis_reply_int(a, i + 9) == INT64_MIN ||
	    elem_str(a, i + 10, u->prefer, sizeof(u->prefer)) != 0 ||
	    redis_reply_int(a, i + 11) == INT64_MIN)
		return -1;
	if (strcmp(state, "waiting") == 0)
		u->state = CSQ_USER_WAITING;
	else if (strcmp(state, "assigned") == 0)
		u->state = CSQ_USER_ASSIGNED;
	else if (strcmp(state, "offered") == 0)
		u->state = CSQ_USER_OFFERED;
	else
		u->state = CSQ_USER_NONE;
	u->eta_ms = redis_reply_int(a, i + 9);
	u->position = u64_of(redis_reply_int(a, i + 2));
	u->tier = (uint32_t)u64_of(redis_reply_int(a, i + 3));
	u->waited_ms = u64_of(redis_reply_int(a, i + 4));
	u->since_ms = u64_of(redis_reply_int(a, i + 7));
	u->expires_in_ms = u64_of(redis_reply_int(a, i + 8));
	u->prefer_ms = u64_of(redis_reply_int(a, i + 11));
	return 0;
}

static int
parse_queue(struct redis_call *k, const redisReply *a, size_t i)
{
	size_t n = (a->elements - i) / 3, j;

	if ((a->elements - i) % 3 != 0 || n > CSQ_RANGE_COUNT_MAX)
		return -1;
	k->entries = csq_xcalloc(n + 1, sizeof(*k->entries));
	for (j = 0; j < n; j++, i += 3) {
		if (elem_str(a, i, k->entries[j].user,
		             sizeof(k->entries[j].user)) != 0 ||
		    redis_reply_int(a, i + 1) == INT64_MIN ||
		    redis_reply_int(a, i + 2) == INT64_MIN)
			return -1;
		k->entries[j].tier =
		    (uint32_t)u64_of(redis_reply_int(a, i + 1));
		k->entries[j].waited_ms = u64_of(redis_reply_int(a, i + 2));
	}
	k->res.entries = k->entries;
	k->res.nentries = n;
	return 0;
}

static int
parse_servicers(struct redis_call *k, const redisReply *a, size_t i)
{
	size_t n = (a->elements - i) / SERVICER_ROW, j;
	struct csq_servicer_info *s;
	char status[16];

	if ((a->elements - i) % SERVICER_ROW != 0)
		return -1;
	k->servicers = csq_xcalloc(n + 1, sizeof(*k->servicers));
	for (j = 0; j < n; j++, i += SERVICER_ROW) {
		s = &k->servicers[j];
		if (elem_str(a, i, s->id, sizeof(s->id)) != 0 ||
		    elem_str(a, i + 1, status, sizeof(status)) != 0 ||
		    elem_str(a, i + 5, s->queues, sizeof(s->queues)) != 0)
			return -1;
		s->status = strcmp(status, "paused") == 0 ? CSQ_SERVICER_PAUSED
		                                          : CSQ_SERVICER_READY;
		s->capacity = (uint32_t)u64_of(redis_reply_int(a, i + 2));
		s->active = (uint32_t)u64_of(redis_reply_int(a, i + 3));
		s->idle_ms = u64_of(redis_reply_int(a, i + 4));
		s->offer_s = (uint32_t)u64_of(redis_reply_int(a, i + 6));
		s->wrapup_s = (uint32_t)u64_of(redis_reply_int(a, i + 7));
		s->missed = (uint32_t)u64_of(redis_reply_int(a, i + 8));
	}
	k->res.servicers = k->servicers;
	k->res.nentries = n;
	return 0;
}

/* QUEUES: the last event id seen, then name, waiting, oldest_wait_ms,
 * oldest_user and preferring of each queue. */
static int
parse_queues(struct redis_call *k, const redisReply *a, size_t i)
{
	size_t n = (a->elements - i - 1) / QUEUE_ROW, j;
	struct csq_queue_info *q;

	if (a->elements < i + 1 || (a->elements - i - 1) % QUEUE_ROW != 0 ||
	    redis_reply_int(a, i) == INT64_MIN)
		return -1;
	k->res.event_id = u64_of(redis_reply_int(a, i++));
	k->queues = csq_xcalloc(n + 1, sizeof(*k->queues));
	for (j = 0; j < n; j++, i += QUEUE_ROW) {
		q = &k->queues[j];
		if (elem_str(a, i, q->name, sizeof(q->name)) != 0 ||
		    !csq_valid_id(q->name, strlen(q->name)) ||
		    redis_reply_int(a, i + 1) == INT64_MIN ||
		    redis_reply_int(a, i + 2) == INT64_MIN ||
		    elem_str(a, i + 3, q->oldest_user,
		             sizeof(q->oldest_user)) != 0 ||
		    redis_reply_int(a, i + 4) == INT64_MIN)
			return -1;
		q->waiting = u64_of(redis_reply_int(a, i + 1));
		q->oldest_wait_ms = u64_of(redis_reply_int(a, i + 2));
		q->preferring = u64_of(redis_reply_int(a, i + 4));
	}
	k->res.queues = k->queues;
	k->res.nentries = n;
	return 0;
}

static int
room_state_of(const char *s, enum csq_room_state *out)
{
	static const struct {
		const char *name;
		enum csq_room_state state;
	} states[] = {
	    {"free", CSQ_ROOM_FREE},
	    {"offered", CSQ_ROOM_OFFERED},
	    {"assigned", CSQ_ROOM_ASSIGNED},
	    {"wrapup", CSQ_ROOM_WRAPUP},
	};
	size_t i;

	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (strcmp(s, states[i].name) == 0) {
			*out = states[i].state;
			return 0;
		}
	return -1;
}

/* ROOMS: servicer, index, state, user, since_ms of each room. */
static int
parse_rooms(struct redis_call *k, const redisReply *a, size_t i)
{
	size_t n = (a->elements - i) / 5, j;
	struct csq_room_info *r;
	char sid[CSQ_ID_MAX + 1], state[16];
	int64_t idx;

	if ((a->elements - i) % 5 != 0)
		return -1;
	k->rooms = csq_xcalloc(n + 1, sizeof(*k->rooms));
	for (j = 0; j < n; j++, i += 5) {
		r = &k->rooms[j];
		idx = redis_reply_int(a, i + 1);
		if (elem_str(a, i, sid, sizeof(sid)) != 0 ||
		    !csq_valid_id(sid, strlen(sid)) || idx < 0 ||
		    idx >= CSQ_CAPACITY_MAX ||
		    elem_str(a, i + 2, state, sizeof(state)) != 0 ||
		    room_state_of(state, &r->state) != 0 ||
		    elem_str(a, i + 3, r->user, sizeof(r->user)) != 0 ||
		    redis_reply_int(a, i + 4) == INT64_MIN)
			return -1;
		snprintf(r->room, sizeof(r->room), "%s/%u", sid, (unsigned)idx);
		r->since_ms = u64_of(redis_reply_int(a, i + 4));
	}
	k->res.rooms = k->rooms;
	k->res.nentries = n;
	return 0;
}

/*
 * QSTATS: per queue, name, waiting, oldest_wait_ms, eta_ms, servicers,
 * free_rooms, matched, leave, timeout, overflowed, the waits' sum, the
 * service level, the outcomes in the ring and those within the level;
 * the sums and shares as lib/qstats.c's csq_qstats_fill makes them.
 */
static int
parse_qstats(struct redis_call *k, const redisReply *a, size_t i)
{
	size_t n = (a->elements - i) / QSTATS_ROW, j, f;
	struct csq_queue_stats *q;
	int64_t v[QSTATS_ROW];

	if ((a->elements - i) % QSTATS_ROW != 0)
		return -1;
	k->qstats = csq_xcalloc(n + 1, sizeof(*k->qstats));
	for (j = 0; j < n; j++, i += QSTATS_ROW) {
		q = &k->qstats[j];
		if (elem_str(a, i, q->queue, sizeof(q->queue)) != 0 ||
		    !csq_valid_id(q->queue, strlen(q->queue)))
			return -1;
		for (f = 1; f < QSTATS_ROW; f++)
			if ((v[f] = redis_reply_int(a, i + f)) == INT64_MIN)
				return -1;
		if (v[12] > CSQ_OUTCOMES || v[13] > v[12] || v[11] <= 0 ||
		    v[11] > UINT32_MAX)
			return -1;
		q->waiting = u64_of(v[1]);
		q->oldest_wait_ms = u64_of(v[2]);
		q->eta_ms = v[3] < -1 ? -1 : v[3];
		q->servicers = u64_of(v[4]);
		q->free_rooms = u64_of(v[5]);
		q->matched_total = u64_of(v[6]);
		q->abandoned_leave = u64_of(v[7]);
		q->abandoned_timeout = u64_of(v[8]);
		q->abandoned_total = q->abandoned_leave + q->abandoned_timeout;
		q->overflowed_total = u64_of(v[9]);
		q->wait_ms_sum = u64_of(v[10]);
		q->avg_wait_ms = q->matched_total > 0
		                     ? q->wait_ms_sum / q->matched_total
		                     : 0;
		q->service_level_s = (uint32_t)v[11];
		q->outcomes = (uint32_t)u64_of(v[12]);
		q->outcomes_within = (uint32_t)u64_of(v[13]);
		/* Rounded down: 100 only when every one of them was within. */
		q->service_level_pct =
		    q->outcomes > 0 ? (int32_t)((uint64_t)q->outcomes_within *
		                                100 / q->outcomes)
		                    : -1;
	}
	k->res.qstats = k->qstats;
	k->res.nentries = n;
	return 0;
}

/* STATS: the counters of struct csq_stats, then the last event id seen. */
static int
parse_stats(struct csq_result *res, const redisReply *a, size_t i)
{
	struct csq_stats *st = &res->stats;
	uint64_t *f[] = {&st->waiting,
	                 &st->servicers,
	                 &st->rooms_busy,
	                 &st->rooms_free,
	                 &st->enqueued_total,
	                 &st->matched_total,
	                 &st->abandoned_total,
	                 &st->requeued_total,
	                 &st->servicers_lost_total,
	                 &st->offers_total,
	                 &st->offers_declined_total,
	                 &st->offers_missed_total,
	                 &st->transferred_total};
	size_t j;

	for (j = 0; j < sizeof(f) / sizeof(f[0]); j++) {
		if (redis_reply_int(a, i + j) == INT64_MIN)
			return -1;
		*f[j] = u64_of(redis_reply_int(a, i + j));
	}
	if (redis_reply_int(a, i + j) == INT64_MIN)
		return -1;
	res->event_id = u64_of(redis_reply_int(a, i + j));
	return 0;
}

/* The data of an operation's reply (from element 1) by operation. */
static int
parse_data(struct redis_call *k, const redisReply *a)
{
	struct csq_result *res = &k->res;
	char status[16];

	switch (k->code) {
	case CSQ_OP_HEARTBEAT:
		memcpy(res->servicer.id, k->sid, sizeof(k->sid));
		if (elem_str(a, 1, status, sizeof(status)) != 0 ||
		    redis_reply_int(a, 4) == INT64_MIN)
			return -1;
		res->servicer.status = strcmp(status, "paused") == 0
		                           ? CSQ_SERVICER_PAUSED
		                           : CSQ_SERVICER_READY;
		res->servicer.capacity =
		    (uint32_t)u64_of(redis_reply_int(a, 2));
		res->servicer.active = (uint32_t)u64_of(redis_reply_int(a, 3));
		res->servicer.ttl_s = (uint32_t)u64_of(redis_reply_int(a, 4));
		return 0;
	case CSQ_OP_PAUSE:
	case CSQ_OP_RESUME:
	case CSQ_OP_LIMITS: /* the health check: no data */
		return 0;
	case CSQ_OP_LOGOUT:
	case CSQ_OP_RELEASE:
	case CSQ_OP_ACCEPT:
	case CSQ_OP_DECLINE:
	case CSQ_OP_READY:
	case CSQ_OP_TOUCH:
	case CSQ_OP_LEAVE:
	case CSQ_OP_QLEN:
	case CSQ_OP_EXPIRE:
	case CSQ_OP_POLICY: /* 1: it replaced another writer's set */
		if (redis_reply_int(a, 1) == INT64_MIN)
			return -1;
		res->n = redis_reply_int(a, 1);
		return 0;
	case CSQ_OP_ENQUEUE:
	case CSQ_OP_WHERE:
	case CSQ_OP_TRANSFER:
		return parse_user(a, 1, &res->user);
	case CSQ_OP_QUEUE:
		return parse_queue(k, a, 1);
	case CSQ_OP_SERVICERS:
		return parse_servicers(k, a, 1);
	case CSQ_OP_STATS:
		return parse_stats(res, a, 1);
	case CSQ_OP_QUEUES:
		return parse_queues(k, a, 1);
	case CSQ_OP_ROOMS:
		return parse_rooms(k, a, 1);
	case CSQ_OP_QSTATS:
		return parse_qstats(k, a, 1);
	case CSQ_OP_REARM:
		break;
	}
	return -1;
}

static enum csq_status
status_of(const char *s)
{
	if (strcmp(s, "OK") == 0)
		return CSQ_OK;
	if (strcmp(s, "NOTFOUND") == 0)
		return CSQ_ENOTFOUND;
	if (strcmp(s, "FULL") == 0)
		return CSQ_EFULL;
	if (strcmp(s, "EXHAUSTED") == 0)
		return CSQ_EEXHAUSTED;
	if (strcmp(s, "NOCONV") == 0)
		return CSQ_ENOCONV;
	return CSQ_ETRYAGAIN;
}

/* The header of a call's reply: a deadline, Redis time, the last event id,
 * whether the deadline is the true earliest, the events' message. Returns
 * the last event id, or -1 for a reply of another shape. */
int64_t
redis_reply_header(struct redis_engine *r, const redisReply *a)
{
	int64_t next = redis_reply_int(a, 0), now = redis_reply_int(a, 1);
	int64_t last = redis_reply_int(a, 2), exact = redis_reply_int(a, 3);

	if (a->type != REDIS_REPLY_ARRAY || next == INT64_MIN ||
	    now == INT64_MIN || last == INT64_MIN || exact == INT64_MIN ||
	    a->elements < 5 || a->element[4]->type != REDIS_REPLY_STRING)
		return -1;
	r->skew_ms = now - (int64_t)r->clock(r->clock_arg);
	/* The reaper and the health check know the earliest deadline; other
	 * operations tell the earliest they set. One that was removed leaves
	 * the timer early: the reaper then finds nothing and says what is
	 * next. */
	if (exact)
		r->next_redis = next;
	else if (next >= 0 && (r->next_redis < 0 || next < r->next_redis))
		r->next_redis = next;
	return last < 0 ? 0 : last;
}

/*
 * The next operation's reply in a call's reply, from element *i: its
 * length, then its elements (batch.lua), seen through view as an array of
 * its own. NULL when the reply is cut short; *i moves past it.
 */
const redisReply *
redis_reply_op(const redisReply *reply, size_t *i, redisReply *view)
{
	int64_t n = redis_reply_int(reply, *i);

	if (n < 1 || (uint64_t)n >= reply->elements - *i) {
		*i = reply->elements;
		return NULL;
	}
	memset(view, 0, sizeof(*view));
	view->type = REDIS_REPLY_ARRAY;
	view->elements = (size_t)n;
	view->element = reply->element + *i + 1;
	*i += 1 + (size_t)n;
	return view;
}

/*
 * An error Redis gave, for the log: one line a second at most, which says
 * how many were left out. A full Redis (OOM) refuses every write of every
 * call, and a line for each would flood the log.
 */
void
redis_reply_log_error(struct redis_engine *r, const char *what)
{
	uint64_t now = redis_mono_ms();

	if (r->error_logged_ms != 0 &&
	    now - r->error_logged_ms < ERROR_LOG_MS) {
		r->errors_unlogged++;
		snprintf(r->error_last, sizeof(r->error_last), "%s", what);
		return;
	}
	if (r->errors_unlogged > 0)
		log_warnx("engine redis: %s (and %llu more errors in the "
		          "last %llu ms)",
		          what, (unsigned long long)r->errors_unlogged,
		          (unsigned long long)(now - r->error_logged_ms));
	else
		log_warnx("engine redis: %s", what);
	r->error_logged_ms = now;
	r->errors_unlogged = 0;
}

/* The errors held back at the end of a burst, logged by the tick once
 * their second is over rather than with the next error, which may never
 * come: the last of them, and how many. */
void
redis_reply_log_flush(struct redis_engine *r)
{
	uint64_t now = redis_mono_ms();

	if (r->errors_unlogged == 0 || now - r->error_logged_ms < ERROR_LOG_MS)
		return;
	log_warnx("engine redis: %s (the last of %llu errors in the %llu ms "
	          "after the line before)",
	          r->error_last, (unsigned long long)r->errors_unlogged,
	          (unsigned long long)(now - r->error_logged_ms));
	r->error_logged_ms = now;
	r->errors_unlogged = 0;
}

/* An operation's reply a, NULL if missing: its result goes, or waits for
 * the events up to last. */
void
redis_reply_call(struct redis_call *k, const redisReply *a, uint64_t last)
{
	struct redis_engine *r = k->r;
	char status[16];

	if (a == NULL || a->type != REDIS_REPLY_ARRAY ||
	    elem_str(a, 0, status, sizeof(status)) != 0) {
		log_warnx("engine redis: a reply of %s has an unexpected shape",
		          k->name);
		redis_call_fail(k, CSQ_EUNSURE);
		return;
	}
	if (strcmp(status, "ERR") == 0) {
		const char *why =
		    a->elements > 1 && a->element[1]->type == REDIS_REPLY_STRING
		        ? a->element[1]->str
		        : "an operation failed";

		redis_reply_log_error(r, why);
		/* Redis refuses for want of memory only a call's first write
		 * (a script that has written may go on writing), so before
		 * this operation wrote anything; any other failure may have
		 * come after some of its writes. */
		redis_call_fail(k, strstr(why, "OOM ") != NULL ? CSQ_ETRYAGAIN
		                                               : CSQ_EUNSURE);
		return;
	}
	k->res.status = status_of(status);
	/* What the call saw; STATS and QUEUES know it exactly (parse_data),
	 * for a read that came before the call's last event. */
	k->res.event_id = last;
	if (k->res.status == CSQ_OK && parse_data(k, a) != 0) {
		log_warnx("engine redis: a reply of %s has an unexpected shape",
		          k->name);
		redis_call_fail(k, CSQ_EUNSURE);
		return;
	}
	redis_call_ready(k, last);
}

void
redis_reply_module(struct redis_call *k, const redisReply *reply, size_t i,
                   uint64_t last)
{
	const redisReply *a = i < reply->elements ? reply->element[i] : NULL;

	if (a == NULL || a->type != REDIS_REPLY_STRING ||
	    csq_result_decode(k->code, (const uint8_t *)a->str, a->len, &k->res,
	                      &k->owned) != 0) {
		log_warnx("engine redis: an answer of the module to %s has an "
		          "unexpected shape",
		          k->name);
		redis_call_fail(k, CSQ_EUNSURE);
		return;
	}
	redis_call_ready(k, last);
}
