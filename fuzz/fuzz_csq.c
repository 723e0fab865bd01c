/*
 * The stateful target: libcsq driven through its public interface (csq.h)
 * by a sequence of operations and clock moves that the input chooses, with
 * csq_check after every step.
 *
 * Two states run side by side, under different hash seeds, and get the
 * same operations: everything they answer and emit must be the same, byte
 * for byte (csq.h: nothing depends on the seed). The second one is also,
 * whenever the input says so, replaced by its own snapshot restored into
 * a new state (lib/snapshot.h), which must then go on exactly as the
 * first. Every event happens at the time of the step, and its JSON
 * (which the two states must agree on too) names it first. And what
 * libcsq refuses for its input alone, csq_op_validate (the Redis
 * engine's checks) refuses the same way, and nothing more.
 *
 * Adding an operation is one entry in the table steps[]: a name and a
 * function that draws its arguments through the arg_*() accessors (each
 * draws once per step, so both states see the same values) and logs what
 * came back with say().
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csq.h"
#include "engine.h"
#include "fuzz.h"
#include "record.h"
#include "snapshot.h"
#include "util.h"

#define FUZZ_STATES    2
#define FUZZ_JSON_MAX  8192
#define FUZZ_CHECK_MAX 256
#define FUZZ_STEPS_MAX 2000 /* a longer input is not read further */
/* The clock starts at a time of today's order (Unix ms). */
#define FUZZ_EPOCH_MS 1700000000000ULL

/* Ids drawn from small pools, so that operations meet the same users,
 * servicers and queues; a few invalid ones test the checks. */
static const char *const users[] = {"u0", "u1", "u2", "u3",         "u4",
                                    "u5", "u6", "u7", "a.b:c@d-e_f"};
static const char *const servicers[] = {"s0", "s1", "s2", "s3"};
static const char *const queues[] = {CSQ_DEFAULT_QUEUE, "q1", "q2", "q3"};
static const char *const invalid_ids[] = {
    "", "bad id", "x/1",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
static const char *const bad_rooms[] = {
    "s0", "s0/", "/0", "s0/01", "s0/x", "s0/-1", "s0/4294967296", "s0/1/2"};

/* Skill lists (protocol.md 3c): a few that overlap, "" (none), and
 * ones refused (bad level, a name twice, an empty element, too many). */
static const char *const skill_lists[] = {"",
                                          "de",
                                          "de:5,billing:3",
                                          "billing:2",
                                          "en:4,de:2",
                                          "fr,de,en",
                                          "de:100",
                                          "de:0",
                                          "de,de",
                                          "de,,en",
                                          "a,b,c,d,e,f,g,h,i",
                                          "x:01"};

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* What one state said during the current step. */
struct text {
	char *buf;
	size_t len, cap;
};

struct state {
	struct csq *csq;
	uint64_t seed;
	struct text log;
};

/* The arguments of one step, drawn on first use. */
struct args {
	struct fuzz_in *in;
	int have_user, have_servicer, have_queue, have_room, have_hb, have_enq;
	int have_ttl, have_range, have_limits, have_policies, have_prefer;
	int have_skills;
	const char *skills;
	const char *user, *servicer, *queue;
	char room[CSQ_ROOM_MAX + 16];
	struct csq_heartbeat_args hb;
	struct csq_enqueue_args enq;
	int64_t ttl;
	uint64_t offset;
	uint32_t count;
	struct csq_limits limits;
	struct csq_policy policies[3];
	size_t npolicies;
	struct csq_prefer_args prefer;
};

struct run {
	struct state st[FUZZ_STATES];
	struct csq_limits limits;
	uint64_t now;
	struct state *emitting; /* whose events the callback logs */
};

static void say(struct state *, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
say(struct state *s, const char *fmt, ...)
{
	struct text *t = &s->log;
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			fuzz_fail("vsnprintf");
		if ((size_t)n < t->cap - t->len)
			break;
		t->cap = (t->cap + (size_t)n + 1) * 2;
		t->buf = csq_xrealloc(t->buf, t->cap);
	}
	t->len += (size_t)n;
}

static const char *
pick_id(struct fuzz_in *in, const char *const *pool, size_t n)
{
	uint8_t b = fuzz_u8(in);

	/* One draw in sixteen is an invalid id. */
	if (b >= 240)
		return invalid_ids[b % NITEMS(invalid_ids)];
	return pool[b % n];
}

static const char *
arg_user(struct args *a)
{
	if (!a->have_user++)
		a->user = pick_id(a->in, users, NITEMS(users));
	return a->user;
}

static const char *
arg_servicer(struct args *a)
{
	if (!a->have_servicer++)
		a->servicer = pick_id(a->in, servicers, NITEMS(servicers));
	return a->servicer;
}

static const char *
arg_queue(struct args *a)
{
	if (!a->have_queue++)
		a->queue = pick_id(a->in, queues, NITEMS(queues));
	return a->queue;
}

/* A room name: mostly "<servicer>/<small index>", sometimes malformed. */
static const char *
arg_room(struct args *a)
{
	uint8_t b;

	if (a->have_room++)
		return a->room;
	b = fuzz_u8(a->in);
	if (b >= 224)
		snprintf(a->room, sizeof(a->room), "%s",
		         bad_rooms[b % NITEMS(bad_rooms)]);
	else
		snprintf(a->room, sizeof(a->room), "%s/%u",
		         servicers[b % NITEMS(servicers)],
		         b < 200 ? (b >> 2) % 6 : (unsigned)CSQ_CAPACITY_MAX);
	return a->room;
}

/* A TTL in seconds: mostly short, sometimes none, the limit or over. */
static uint32_t
draw_ttl(struct fuzz_in *in)
{
	uint8_t b = fuzz_u8(in);

	switch (b >> 6) {
	case 0:
	case 1:
		return b % 30 + 1;
	case 2:
		return b % 4 == 0 ? 0 : b % 300;
	default:
		return b % 2 ? CSQ_TTL_MAX : CSQ_TTL_MAX + 1;
	}
}

/* A SKILLS or NEEDS list of the pool. */
static const char *
arg_skills(struct args *a)
{
	if (!a->have_skills++)
		a->skills = skill_lists[fuzz_u8(a->in) % NITEMS(skill_lists)];
	return a->skills;
}

static const struct csq_heartbeat_args *
arg_heartbeat(struct args *a)
{
	struct csq_heartbeat_args *h = &a->hb;
	uint8_t flags, b;
	size_t i;

	if (a->have_hb++)
		return h;
	memset(h, 0, sizeof(*h));
	h->servicer = arg_servicer(a);
	flags = fuzz_u8(a->in);
	h->has_capacity = flags & 1;
	h->has_queues = (flags >> 1) & 1;
	h->has_ttl = (flags >> 2) & 1;
	if (h->has_capacity) {
		b = fuzz_u8(a->in);
		h->capacity = b < 250 ? b % 5 + 1 : (b % 2 ? 0 : 1001);
	}
	if (h->has_queues) {
		/* None and one too many are refused before the list is
		 * read; duplicates collapse. */
		b = fuzz_u8(a->in);
		h->nqueues =
		    b < 250 ? b % 4 + 1 : (b % 2 ? 0 : CSQ_SERVICER_QUEUES + 1);
		for (i = 0; i < h->nqueues && i < CSQ_SERVICER_QUEUES; i++)
			h->queues[i] = pick_id(a->in, queues, NITEMS(queues));
	}
	if (h->has_ttl)
		h->ttl_s = draw_ttl(a->in);
	/* OFFER and WRAPUP: a few seconds, so that they run out; now and
	 * then one past the range. */
	h->has_offer = (flags >> 3) & 1;
	h->has_wrapup = (flags >> 4) & 1;
	if (h->has_offer) {
		b = fuzz_u8(a->in);
		h->offer_s = b < 250 ? b % 4 : CSQ_OFFER_MAX + b % 2;
	}
	if (h->has_wrapup) {
		b = fuzz_u8(a->in);
		h->wrapup_s = b < 250 ? b % 4 : CSQ_WRAPUP_MAX + b % 2;
	}
	h->has_skills = (flags >> 5) & 1;
	if (h->has_skills)
		h->skills = arg_skills(a);
	return h;
}

/* PREFER: a servicer and a window of a few seconds, now and then one
 * out of the range. */
static void
draw_prefer(struct args *a, struct csq_prefer_args *p)
{
	uint8_t b;

	if (!a->have_prefer++) {
		b = fuzz_u8(a->in);
		a->prefer.has_prefer = 1;
		a->prefer.servicer = arg_servicer(a);
		a->prefer.seconds =
		    b < 250 ? b % 5 + 1 : (b % 2 ? 0 : CSQ_PREFER_MAX + 1);
	}
	*p = a->prefer;
}

static const struct csq_enqueue_args *
arg_enqueue(struct args *a, const struct csq_limits *limits)
{
	struct csq_enqueue_args *e = &a->enq;
	uint8_t flags;

	if (a->have_enq++)
		return e;
	memset(e, 0, sizeof(*e));
	e->user = arg_user(a);
	flags = fuzz_u8(a->in);
	e->has_queue = flags & 1;
	e->has_tier = (flags >> 1) & 1;
	e->has_ttl = (flags >> 2) & 1;
	if (e->has_queue)
		e->queue = arg_queue(a);
	if (e->has_tier)
		e->tier = fuzz_u8(a->in) % (limits->max_tier + 2);
	if (e->has_ttl)
		e->ttl_s = draw_ttl(a->in);
	if ((flags >> 3) & 1)
		draw_prefer(a, &e->prefer);
	e->has_needs = (flags >> 4) & 1;
	if (e->has_needs)
		e->needs = arg_skills(a);
	return e;
}

/* TOUCH's TTL: -1 keeps it. */
static int64_t
arg_ttl(struct args *a)
{
	uint8_t b;

	if (a->have_ttl++)
		return a->ttl;
	b = fuzz_u8(a->in);
	a->ttl = b < 32 ? -1 : (int64_t)draw_ttl(a->in);
	return a->ttl;
}

static void
arg_range(struct args *a, uint64_t *offset, uint32_t *count)
{
	uint8_t b;

	if (!a->have_range++) {
		b = fuzz_u8(a->in);
		a->offset = b < 250 ? b % 8 : UINT64_MAX - b % 2;
		b = fuzz_u8(a->in);
		a->count = b < 250 ? b % 8 : CSQ_RANGE_COUNT_MAX + b % 2;
	}
	*offset = a->offset;
	*count = a->count;
}

/* Limits as a reload sets them: always within the configuration's
 * ranges (daemon/config.c checks them before they get here). */
static const struct csq_limits *
arg_limits(struct args *a)
{
	struct csq_limits *l = &a->limits;

	if (a->have_limits++)
		return l;
	l->servicer_ttl_s = fuzz_u8(a->in) % 60 + 1;
	l->user_ttl_s = fuzz_u8(a->in) % 121;
	l->max_tier = fuzz_u8(a->in) % (CSQ_TIER_LIMIT + 1);
	l->max_queue_length = fuzz_u8(a->in) % 8 + 1;
	l->offer_timeout_s = fuzz_u8(a->in) % 4;
	l->offer_max_missed = fuzz_u8(a->in) % 4;
	l->offer_retry_s = fuzz_u8(a->in) % 3;
	l->wrapup_s = fuzz_u8(a->in) % 3;
	l->strategy = fuzz_u8(a->in) % 2 ? CSQ_STRATEGY_LEAST_BUSY
	                                 : CSQ_STRATEGY_LONGEST_IDLE;
	return l;
}

static void
say_user(struct state *s, const struct csq_user_info *u)
{
	say(s,
	    " state=%d queue=%s pos=%" PRIu64 " tier=%u waited=%" PRIu64
	    " room=%s servicer=%s since=%" PRIu64 " expires=%" PRIu64
	    " prefer=%s prefer_ms=%" PRIu64 " eta=%" PRId64 " needs=%s",
	    (int)u->state, u->queue, u->position, u->tier, u->waited_ms,
	    u->room, u->servicer, u->since_ms, u->expires_in_ms, u->prefer,
	    u->prefer_ms, u->eta_ms, u->needs);
}

static void
say_servicer(struct state *s, const struct csq_servicer_info *v)
{
	say(s,
	    " id=%s status=%d cap=%u active=%u ttl=%u idle=%" PRIu64
	    " offer=%u wrapup=%u missed=%u skills=%s",
	    v->id, (int)v->status, v->capacity, v->active, v->ttl_s, v->idle_ms,
	    v->offer_s, v->wrapup_s, v->missed, v->skills);
}

static void
say_status(struct state *s, const char *op, enum csq_status st)
{
	say(s, "%s: %s", op, csq_status_text(st));
}

/* An error that libcsq gives for the input alone, whatever the state. */
static int
input_error(enum csq_status st)
{
	return st == CSQ_EUSER || st == CSQ_ESERVICER || st == CSQ_EQUEUE ||
	       st == CSQ_EROOM || st == CSQ_ERANGE || st == CSQ_ESKILL;
}

/*
 * The Redis engine refuses an operation with csq_op_validate before its
 * script runs (lib/validate.c): that must refuse what libcsq refuses for
 * the input, with the same error, and nothing that libcsq takes.
 */
static void
check_validate(const struct run *r, const struct csq_op *op,
               enum csq_status got)
{
	enum csq_status want = csq_op_validate(op, &r->limits);

	if (want != CSQ_OK ? got != want : input_error(got))
		fuzz_fail("operation %d: csq_op_validate says %s, libcsq %s",
		          (int)op->code, csq_status_text(want),
		          csq_status_text(got));
}

/* An operation with one id, as the engines get it. */
static void
check_validate_id(const struct run *r, enum csq_opcode code, const char *id,
                  enum csq_status got)
{
	struct csq_op op;

	memset(&op, 0, sizeof(op));
	op.code = code;
	op.id = id;
	op.ttl_s = -1;
	check_validate(r, &op, got);
}

/* The operations. Each runs once per state, with the same arguments. */

static void
step_heartbeat(struct run *r, struct state *s, struct args *a)
{
	struct csq_servicer_info out;
	struct csq_op op;
	enum csq_status st;

	memset(&out, 0, sizeof(out));
	st = csq_heartbeat(s->csq, r->now, arg_heartbeat(a), &out);
	say_status(s, "heartbeat", st);
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat = *arg_heartbeat(a);
	check_validate(r, &op, st);
	if (st == CSQ_OK)
		say_servicer(s, &out);
}

static void
step_pause(struct run *r, struct state *s, struct args *a)
{
	enum csq_status st = csq_pause(s->csq, r->now, arg_servicer(a));

	say_status(s, "pause", st);
	check_validate_id(r, CSQ_OP_PAUSE, arg_servicer(a), st);
}

static void
step_resume(struct run *r, struct state *s, struct args *a)
{
	enum csq_status st = csq_resume(s->csq, r->now, arg_servicer(a));

	say_status(s, "resume", st);
	check_validate_id(r, CSQ_OP_RESUME, arg_servicer(a), st);
}

static void
step_logout(struct run *r, struct state *s, struct args *a)
{
	uint64_t n = 0;
	enum csq_status st = csq_logout(s->csq, r->now, arg_servicer(a), &n);

	say_status(s, "logout", st);
	say(s, " requeued=%" PRIu64, n);
	check_validate_id(r, CSQ_OP_LOGOUT, arg_servicer(a), st);
}

static void
step_release(struct run *r, struct state *s, struct args *a)
{
	int ended = -1;
	enum csq_status st = csq_release(s->csq, r->now, arg_room(a), &ended);

	say_status(s, "release", st);
	say(s, " ended=%d", ended);
	check_validate_id(r, CSQ_OP_RELEASE, arg_room(a), st);
}

static void
step_enqueue(struct run *r, struct state *s, struct args *a)
{
	struct csq_user_info out;
	struct csq_op op;
	enum csq_status st;

	memset(&out, 0, sizeof(out));
	st = csq_enqueue(s->csq, r->now, arg_enqueue(a, &r->limits), &out);
	say_status(s, "enqueue", st);
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_ENQUEUE;
	op.enqueue = *arg_enqueue(a, &r->limits);
	check_validate(r, &op, st);
	if (st == CSQ_OK)
		say_user(s, &out);
}

static void
step_touch(struct run *r, struct state *s, struct args *a)
{
	int known = -1;
	enum csq_status st =
	    csq_touch(s->csq, r->now, arg_user(a), arg_ttl(a), &known);
	struct csq_op op;

	say_status(s, "touch", st);
	say(s, " known=%d", known);
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_TOUCH;
	op.id = arg_user(a);
	op.ttl_s = arg_ttl(a);
	check_validate(r, &op, st);
}

static void
step_leave(struct run *r, struct state *s, struct args *a)
{
	int known = -1;
	enum csq_status st = csq_leave(s->csq, r->now, arg_user(a), &known);

	say_status(s, "leave", st);
	say(s, " known=%d", known);
	check_validate_id(r, CSQ_OP_LEAVE, arg_user(a), st);
}

static void
step_where(struct run *r, struct state *s, struct args *a)
{
	struct csq_user_info out;
	enum csq_status st;
	uint64_t len = 0;

	memset(&out, 0, sizeof(out));
	st = csq_where(s->csq, r->now, arg_user(a), &out);
	say_status(s, "where", st);
	check_validate_id(r, CSQ_OP_WHERE, arg_user(a), st);
	if (st != CSQ_OK)
		return;
	say_user(s, &out);
	/* A waiting user's rank lies within its line. */
	if (out.state == CSQ_USER_WAITING &&
	    (csq_qlen(s->csq, out.queue, &len) != CSQ_OK || out.position < 1 ||
	     out.position > len))
		fuzz_fail("where %s: position %" PRIu64
		          " in a line of %" PRIu64,
		          arg_user(a), out.position, len);
}

static void
step_queue(struct run *r, struct state *s, struct args *a)
{
	struct csq_queue_entry *out;
	struct csq_op op;
	enum csq_status st;
	uint64_t offset;
	uint32_t count;
	size_t n = 0, i;

	arg_range(a, &offset, &count);
	out = csq_xcalloc(CSQ_RANGE_COUNT_MAX, sizeof(*out));
	st = csq_queue_range(s->csq, r->now, arg_queue(a), offset, count, out,
	                     &n);
	say_status(s, "queue", st);
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_QUEUE;
	op.id = arg_queue(a);
	op.offset = offset;
	op.count = count;
	check_validate(r, &op, st);
	if (n > count)
		fuzz_fail("queue: %zu entries for a count of %u", n, count);
	for (i = 0; i < n; i++)
		say(s, " %s/%u/%" PRIu64, out[i].user, out[i].tier,
		    out[i].waited_ms);
	free(out);
}

static void
step_qlen(struct run *r, struct state *s, struct args *a)
{
	uint64_t len = 0;
	enum csq_status st = csq_qlen(s->csq, arg_queue(a), &len);

	say_status(s, "qlen", st);
	say(s, " len=%" PRIu64, len);
	check_validate_id(r, CSQ_OP_QLEN, arg_queue(a), st);
}

static void
step_servicers(struct run *r, struct state *s, struct args *a)
{
	struct csq_servicer_info *list;
	size_t n, i;

	(void)a;
	list = csq_servicers(s->csq, r->now, &n);
	say(s, "servicers: %zu", n);
	for (i = 0; i < n; i++)
		say_servicer(s, &list[i]);
	free(list);
}

static void
step_stats(struct run *r, struct state *s, struct args *a)
{
	struct csq_stats v;

	(void)r, (void)a;
	csq_stats(s->csq, &v);
	say(s,
	    "stats: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
	    " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
	    " %" PRIu64 " %" PRIu64 " %" PRIu64,
	    v.waiting, v.servicers, v.rooms_busy, v.rooms_free,
	    v.enqueued_total, v.matched_total, v.abandoned_total,
	    v.requeued_total, v.servicers_lost_total, v.offers_total,
	    v.offers_declined_total, v.offers_missed_total,
	    v.transferred_total);
}

/* ACCEPT, DECLINE, READY: a room; done says whether it was in the state
 * the command ends. */
static void
step_room_op(struct run *r, struct state *s, struct args *a,
             enum csq_opcode code)
{
	static enum csq_status (*const ops[])(struct csq *, uint64_t,
	                                      const char *, int *) = {
	    [CSQ_OP_ACCEPT] = csq_accept,
	    [CSQ_OP_DECLINE] = csq_decline,
	    [CSQ_OP_READY] = csq_ready,
	};
	int done = -1;
	enum csq_status st = ops[code](s->csq, r->now, arg_room(a), &done);

	say_status(s,
	           code == CSQ_OP_ACCEPT    ? "accept"
	           : code == CSQ_OP_DECLINE ? "decline"
	                                    : "ready",
	           st);
	say(s, " done=%d", done);
	check_validate_id(r, code, arg_room(a), st);
}

static void
step_accept(struct run *r, struct state *s, struct args *a)
{
	step_room_op(r, s, a, CSQ_OP_ACCEPT);
}

static void
step_decline(struct run *r, struct state *s, struct args *a)
{
	step_room_op(r, s, a, CSQ_OP_DECLINE);
}

static void
step_ready(struct run *r, struct state *s, struct args *a)
{
	step_room_op(r, s, a, CSQ_OP_READY);
}

static void
step_transfer(struct run *r, struct state *s, struct args *a)
{
	struct csq_transfer_args t;
	struct csq_user_info out;
	struct csq_op op;
	enum csq_status st;

	memset(&out, 0, sizeof(out));
	memset(&t, 0, sizeof(t));
	t.room = arg_room(a);
	t.queue = arg_queue(a);
	draw_prefer(a, &t.prefer);
	if (t.prefer.seconds % 2 == 0) /* one time in two, about */
		memset(&t.prefer, 0, sizeof(t.prefer));
	t.needs = arg_skills(a);
	t.has_needs = t.needs[0] != 'd'; /* most lists, "" among them */
	st = csq_transfer(s->csq, r->now, &t, &out);
	say_status(s, "transfer", st);
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_TRANSFER;
	op.transfer = t;
	check_validate(r, &op, st);
	if (st == CSQ_OK)
		say_user(s, &out);
}

static void
step_expire(struct run *r, struct state *s, struct args *a)
{
	(void)a;
	say(s, "expire");
	csq_expire(s->csq, r->now);
}

/* Up to the next deadline and past it, as csqd's timer does. */
static void
step_expire_due(struct run *r, struct state *s, struct args *a)
{
	uint64_t at = csq_next_deadline(s->csq);

	(void)a;
	say(s, "expire_due");
	if (at != UINT64_MAX && at > r->now && s == &r->st[0])
		r->now = at;
	csq_expire(s->csq, r->now);
}

static void
step_limits(struct run *r, struct state *s, struct args *a)
{
	r->limits = *arg_limits(a);
	say(s, "limits");
	csq_set_limits(s->csq, &r->limits);
}

/*
 * Queue policies over the queues the steps use: overflow, aging, lengths
 * and strategies, now and then one that the check refuses (then neither
 * state changes). Both states draw the same, as for every argument.
 */
static const struct csq_policy *
arg_policies(struct args *a, size_t *np)
{
	struct csq_policy *v = a->policies;
	size_t n, i;
	uint8_t b;

	*np = a->npolicies;
	if (a->have_policies++)
		return v;
	n = fuzz_u8(a->in) % 4;
	for (i = 0; i < n; i++) {
		memset(&v[i], 0, sizeof(v[i]));
		snprintf(v[i].name, sizeof(v[i].name), "%s",
		         pick_id(a->in, queues, NITEMS(queues)));
		b = fuzz_u8(a->in);
		if (b & 1) {
			v[i].overflow_after_s = b % 7 + 1;
			snprintf(v[i].overflow_to, sizeof(v[i].overflow_to),
			         "%s", pick_id(a->in, queues, NITEMS(queues)));
		}
		v[i].aging_every_s = (b >> 1) & 1 ? b % 5 + 1 : 0;
		v[i].has_aging_max_tier = (b >> 2) & 1;
		v[i].aging_max_tier = b % 4;
		v[i].has_max_length = (b >> 3) & 1;
		v[i].max_length = b % 10 + 1;
		v[i].has_strategy = (b >> 4) & 1;
		v[i].strategy = (b >> 5) & 1 ? CSQ_STRATEGY_LEAST_BUSY
		                             : CSQ_STRATEGY_LONGEST_IDLE;
		v[i].service_level_s = b % 3;
		v[i].skill_order = (b >> 6) & 1; /* section 3c */
		if (b >> 7) { /* relax steps: a drop, a lowering, all */
			v[i].nrelax = 3;
			v[i].relax[0].after_s = b % 3 + 1;
			strcpy(v[i].relax[0].drop, "billing,en");
			v[i].relax[1].after_s = 4;
			v[i].relax[1].lower = b % 4 + 1;
			v[i].relax[2].after_s = 6;
			v[i].relax[2].drop_all = 1;
		}
	}
	*np = a->npolicies = n;
	return v;
}

static void
step_policies(struct run *r, struct state *s, struct args *a)
{
	const struct csq_policy *v;
	enum csq_status st;
	size_t n;

	v = arg_policies(a, &n);
	st = csq_set_policies(s->csq, r->now, v, n);
	say_status(s, "policies", st);
}

/* QSTATS, estimate included: the same in every state. */
static void
step_qstats(struct run *r, struct state *s, struct args *a)
{
	struct csq_queue_stats q;
	enum csq_status st;

	memset(&q, 0, sizeof(q));
	st = csq_queue_stats(s->csq, r->now, arg_queue(a), &q);
	say_status(s, "qstats", st);
	if (st == CSQ_OK)
		say(s,
		    " waiting=%" PRIu64 " oldest=%" PRIu64 " eta=%" PRId64
		    " servicers=%" PRIu64 " free=%" PRIu64 " matched=%" PRIu64
		    " abandoned=%" PRIu64 " overflowed=%" PRIu64
		    " level=%u pct=%d",
		    q.waiting, q.oldest_wait_ms, q.eta_ms, q.servicers,
		    q.free_rooms, q.matched_total, q.abandoned_total,
		    q.overflowed_total, q.service_level_s, q.service_level_pct);
}

static void
step_rearm(struct run *r, struct state *s, struct args *a)
{
	(void)a;
	say(s, "rearm");
	csq_rearm_deadlines(s->csq, r->now);
}

static void emit(void *arg, const struct csq_event *ev);

struct items {
	uint8_t **v;
	size_t *len;
	size_t n, cap;
};

/* Collects a snapshot's items in their journal encoding. */
static void
collect_item(void *arg, const struct csq_snap_item *it)
{
	struct items *x = arg;
	uint8_t buf[CSQ_RECORD_MAX];
	size_t len = csq_record_encode_snap(it, buf);

	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 16;
		x->v = csq_xrealloc(x->v, x->cap * sizeof(*x->v));
		x->len = csq_xrealloc(x->len, x->cap * sizeof(*x->len));
	}
	x->v[x->n] = csq_xmalloc(len);
	memcpy(x->v[x->n], buf, len);
	x->len[x->n++] = len;
}

static void
items_free(struct items *x)
{
	size_t i;

	for (i = 0; i < x->n; i++)
		free(x->v[i]);
	free(x->v);
	free(x->len);
}

/* Whether two snapshots hold the same items (the tables' order of the
 * items depends on the seed and on the order of insertion). */
static int
items_same(const struct items *a, const struct items *b)
{
	size_t i, j;
	char *used;
	int same = a->n == b->n;

	used = csq_xcalloc(b->n + 1, 1);
	for (i = 0; same && i < a->n; i++) {
		for (j = 0; j < b->n; j++)
			if (!used[j] && a->len[i] == b->len[j] &&
			    memcmp(a->v[i], b->v[j], a->len[i]) == 0)
				break;
		if (j == b->n)
			same = 0;
		else
			used[j] = 1;
	}
	free(used);
	return same;
}

static void
items_print(const char *name, const struct items *x)
{
	size_t i, j;

	fprintf(stderr, "%s:\n", name);
	for (i = 0; i < x->n; i++) {
		for (j = CSQ_RECORD_HEADER; j < x->len[i]; j++)
			fprintf(stderr, "%02x", x->v[i][j]);
		fputc('\n', stderr);
	}
}

/*
 * The state is replaced by its snapshot, written in the journal's
 * encoding, read back and restored into a new state under a new seed, as
 * a compaction and a restart do: the new state must snapshot the same.
 */
static void
step_snapshot(struct run *r, struct state *s, struct args *a)
{
	struct items before = {0}, after = {0};
	const struct csq_policy *pol;
	struct csq_snap_item it;
	struct csq *fresh;
	size_t i, npol;

	(void)a;
	say(s, "snapshot");
	if (s == &r->st[0])
		return; /* the other state goes on as it was */
	csq_snapshot(s->csq, collect_item, &before);
	s->seed = s->seed * 6364136223846793005ULL + 1442695040888963407ULL;
	fresh = csq_new(&r->limits, s->seed, emit, r);
	/* The policies first, as the journal writes them. A LIMITS that
	 * lowered max_tier under a policy's aging_max_tier makes them
	 * ones no configuration has (csqd checks both together): then
	 * the state goes on as it was. */
	pol = csq_get_policies(s->csq, &npol);
	if (csq_set_policies(fresh, r->now, pol, npol) != CSQ_OK) {
		csq_free(fresh);
		items_free(&before);
		return;
	}
	for (i = 0; i < before.n; i++) {
		if (csq_record_decode_snap(before.v[i] + CSQ_RECORD_HEADER,
		                           before.len[i] - CSQ_RECORD_HEADER,
		                           &it) != 0)
			fuzz_fail("snapshot item %zu does not decode", i);
		if (csq_restore(fresh, &it) != 0)
			fuzz_fail("snapshot item %zu is refused", i);
	}
	if (csq_restore_end(fresh) != 0)
		fuzz_fail("a restored snapshot is refused at its end");
	csq_snapshot(fresh, collect_item, &after);
	if (!items_same(&before, &after)) {
		items_print("before", &before);
		items_print("after", &after);
		fuzz_fail("a restored snapshot differs from its state");
	}
	items_free(&before);
	items_free(&after);
	csq_free(s->csq);
	s->csq = fresh;
}

struct step {
	const char *name;
	void (*run)(struct run *, struct state *, struct args *);
};

static const struct step steps[] = {
    {"heartbeat", step_heartbeat},
    {"pause", step_pause},
    {"resume", step_resume},
    {"logout", step_logout},
    {"release", step_release},
    {"enqueue", step_enqueue},
    {"touch", step_touch},
    {"leave", step_leave},
    {"where", step_where},
    {"queue", step_queue},
    {"qlen", step_qlen},
    {"servicers", step_servicers},
    {"stats", step_stats},
    {"expire", step_expire},
    {"expire_due", step_expire_due},
    {"limits", step_limits},
    {"rearm", step_rearm},
    {"snapshot", step_snapshot},
    {"accept", step_accept},
    {"decline", step_decline},
    {"ready", step_ready},
    {"transfer", step_transfer},
    {"policies", step_policies},
    {"qstats", step_qstats},
};

/* Every event, logged as JSON, which names it first and fits. */
static void
emit(void *arg, const struct csq_event *ev)
{
	struct run *r = arg;
	char json[FUZZ_JSON_MAX], head[FUZZ_CHECK_MAX];
	char ch[CSQ_EVENT_CHANNELS][CSQ_CHANNEL_MAX];
	int n, h;

	if (r->emitting == NULL)
		fuzz_fail("an event outside any operation");
	if (ev->ts_ms != r->now)
		fuzz_fail("event %s at %" PRIu64 ", now is %" PRIu64,
		          csq_event_name(ev->type), ev->ts_ms, r->now);
	n = csq_event_json(ev, json, sizeof(json));
	if (n < 0 || (size_t)n >= sizeof(json))
		fuzz_fail("event %s: JSON of %d bytes",
		          csq_event_name(ev->type), n);
	h = snprintf(head, sizeof(head), "{\"event\":\"%s\"",
	             csq_event_name(ev->type));
	if (n < h + 1 || memcmp(json, head, (size_t)h) != 0 ||
	    json[n - 1] != '}')
		fuzz_fail("event JSON %s", json);
	if (csq_event_channels(ev, ch) < 1)
		fuzz_fail("event %s goes to no channel", json);
	say(r->emitting, "\n  %s", json);
}

/*
 * Moves the clock as the input says: mostly not at all or a little,
 * sometimes by minutes or days, and sometimes back (a restart after the
 * wall clock was stepped back: csqd's clock never goes back while it
 * runs, but a journal replays at the times it recorded).
 */
static void
clock_step(struct run *r, struct fuzz_in *in)
{
	uint8_t b = fuzz_u8(in);

	switch (b & 7) {
	case 0:
	case 1:
	case 2:
		break;
	case 3:
		r->now += fuzz_u8(in);
		break;
	case 4:
		r->now += fuzz_u16(in);
		break;
	case 5:
		r->now += (uint64_t)fuzz_u16(in) * 1000;
		break;
	case 6:
		r->now += (uint64_t)fuzz_u8(in) * 3600 * 1000;
		break;
	case 7:
		r->now -= fuzz_u16(in) % (r->now - FUZZ_EPOCH_MS + 1);
		break;
	}
}

static void
check_state(const struct state *s, const char *after)
{
	char why[FUZZ_CHECK_MAX];

	if (csq_check(s->csq, why, sizeof(why)) != 0)
		fuzz_fail("after %s: %s", after, why);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in;
	struct run r;
	struct args a;
	const struct step *step;
	size_t i, n;

	fuzz_in_init(&in, data, size);
	memset(&r, 0, sizeof(r));
	for (i = 0; i < FUZZ_STATES; i++) {
		r.st[i].log.cap = FUZZ_JSON_MAX;
		r.st[i].log.buf = csq_xmalloc(r.st[i].log.cap);
	}
	csq_limits_default(&r.limits);
	r.limits.max_queue_length = fuzz_u8(&in) % 8 + 1;
	r.limits.max_tier = fuzz_u8(&in) % (CSQ_TIER_LIMIT + 1);
	r.now = FUZZ_EPOCH_MS + fuzz_u16(&in);
	for (i = 0; i < FUZZ_STATES; i++) {
		r.st[i].seed = 0x9e3779b97f4a7c15ULL * (i + 1);
		r.st[i].csq = csq_new(&r.limits, r.st[i].seed, emit, &r);
	}
	for (n = 0; n < FUZZ_STEPS_MAX && !fuzz_done(&in); n++) {
		clock_step(&r, &in);
		step = &steps[fuzz_pick(&in, NITEMS(steps))];
		memset(&a, 0, sizeof(a));
		a.in = &in;
		for (i = 0; i < FUZZ_STATES; i++) {
			r.st[i].log.len = 0;
			r.emitting = &r.st[i];
			step->run(&r, &r.st[i], &a);
			r.emitting = NULL;
			say(&r.st[i], "\n  next deadline %" PRIu64,
			    csq_next_deadline(r.st[i].csq));
			check_state(&r.st[i], step->name);
		}
		for (i = 1; i < FUZZ_STATES; i++)
			if (r.st[i].log.len != r.st[0].log.len ||
			    memcmp(r.st[i].log.buf, r.st[0].log.buf,
			           r.st[0].log.len) != 0)
				fuzz_fail("step %zu (%s): the states differ:\n"
				          "%.*s\n---\n%.*s",
				          n, step->name, (int)r.st[0].log.len,
				          r.st[0].log.buf, (int)r.st[i].log.len,
				          r.st[i].log.buf);
	}
	for (i = 0; i < FUZZ_STATES; i++) {
		csq_free(r.st[i].csq);
		free(r.st[i].log.buf);
	}
	return 0;
}
