/*
 * Snapshots: a state built by thousands of random operations is restored
 * into an empty one; the copy passes every invariant, snapshots the same,
 * and then behaves the same, under another hash seed: the same further
 * operations (restarts' rearms among them) give the same events, byte for
 * byte, ids included. The operations make offers, wrap-ups, retry windows
 * and transfers, so that snapshots hold them under way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "csq.h"
#include "snapshot.h"
#include "scale.h"

#define LOG_MAX    (4 * 1024 * 1024)
#define ROUNDS     20 /* scaled (scale.h), to no fewer than: */
#define ROUNDS_MIN 2  /* both strategies */

struct log {
	char *buf;
	size_t len;
};

static void
log_event(void *arg, const struct csq_event *ev)
{
	struct log *l = arg;
	int n;

	n = csq_event_json(ev, l->buf + l->len, LOG_MAX - l->len);
	assert_true(n > 0 && l->len + (size_t)n + 1 < LOG_MAX);
	l->len += (size_t)n;
	l->buf[l->len++] = '\n';
	l->buf[l->len] = '\0';
}

static uint64_t rng;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Skills' draws (protocol.md 3c) have a generator of their own, so that
 * the others' sequence is the one it was before skills. */
static uint64_t rng2 = 0x2545f4914f6cdd1dULL;

static uint32_t
rnd2(uint32_t n)
{
	rng2 ^= rng2 << 13;
	rng2 ^= rng2 >> 7;
	rng2 ^= rng2 << 17;
	return (uint32_t)(rng2 % n);
}

/* PREFER of a random servicer, one time in three. */
static void
random_prefer(struct csq_prefer_args *p)
{
	static char sid[16];

	memset(p, 0, sizeof(*p));
	if (rnd(3) != 0)
		return;
	snprintf(sid, sizeof(sid), "s%u", rnd(6));
	p->has_prefer = 1;
	p->servicer = sid;
	p->seconds = 1 + rnd(3);
}

/* Policies over the queues: overflow default -> q1 -> q2, aging. */
static void
random_policies(struct csq *c, uint64_t now)
{
	static const char *queues[] = {"default", "q1", "q2"};
	struct csq_policy v[3];
	size_t n = 0, i;

	for (i = 0; i < 3; i++) {
		if (rnd(3) == 0)
			continue;
		memset(&v[n], 0, sizeof(v[n]));
		strcpy(v[n].name, queues[i]);
		if (i < 2 && rnd(2)) {
			v[n].overflow_after_s = 1 + rnd(2);
			strcpy(v[n].overflow_to, queues[i + 1]);
		}
		v[n].aging_every_s = rnd(3);
		v[n].service_level_s = rnd(3);
		/* Relaxation (protocol.md 3c): a drop, then a lowering. */
		v[n].skill_order = rnd2(2);
		if (rnd2(2)) {
			v[n].nrelax = 2;
			v[n].relax[0].after_s = 1 + rnd2(2);
			strcpy(v[n].relax[0].drop, "billing");
			v[n].relax[1].after_s = 3;
			v[n].relax[1].lower = 1 + rnd2(2);
		}
		/* Nobody there (protocol.md 3c): a grace that moves to the
		 * next queue or releases, arrivals that wait or go on. */
		if (rnd2(2) == 0) {
			v[n].nobody.on = 1;
			v[n].nobody.counts = rnd2(2);
			v[n].nobody.at_nobody = rnd2(3);
			if (v[n].nobody.at_nobody != CSQ_NOBODY_KEEP)
				v[n].nobody.grace_s = 1 + rnd2(3);
			if (v[n].nobody.at_nobody == CSQ_NOBODY_MOVE)
				strcpy(v[n].nobody.move_to,
				       queues[(i + 1) % 3]);
			if (i < 2 && rnd2(2)) {
				v[n].nobody.when_nobody = CSQ_NOBODY_FALLBACK;
				strcpy(v[n].nobody.fallback, queues[i + 1]);
			}
		}
		n++;
	}
	assert_int_equal(csq_set_policies(c, now, v, n), CSQ_OK);
}

/* One random operation on c at *now (the same sequence given the seed). */
/* Skill lists (protocol.md 3c), "" among them. */
static const char *const skill_lists[] = {"", "de:5,billing:3", "de:2",
                                          "en:4,billing:1", "billing"};
static const char *const need_lists[] = {"", "de", "billing:2", "de:3,billing",
                                         "en"};

static void
random_op(struct csq *c, uint64_t *now)
{
	static const char *queues[] = {"default", "q1", "q2"};
	struct csq_heartbeat_args h;
	struct csq_enqueue_args a;
	struct csq_transfer_args t;
	struct csq_servicer_info si;
	struct csq_user_info u;
	char sid[16], uid[16], room[32];
	uint64_t n64;
	int known;
	uint32_t j;

	snprintf(sid, sizeof(sid), "s%u", rnd(6));
	snprintf(uid, sizeof(uid), "u%u", rnd(80));
	snprintf(room, sizeof(room), "%s/%u", sid, rnd(4));
	switch (rnd(15)) {
	case 0:
	case 1:
		memset(&h, 0, sizeof(h));
		h.servicer = sid;
		h.has_capacity = rnd(2);
		h.capacity = 1 + rnd(3);
		h.has_ttl = 1;
		h.ttl_s = 1 + rnd(5);
		if (rnd(2)) {
			h.has_queues = 1;
			h.nqueues = 1 + rnd(3);
			for (j = 0; j < h.nqueues; j++)
				h.queues[j] = queues[rnd(3)];
		}
		h.has_offer = rnd(3) == 0;
		h.offer_s = rnd(3);
		h.has_wrapup = rnd(3) == 0;
		h.wrapup_s = rnd(3);
		h.has_skills = rnd2(3) == 0;
		h.skills = skill_lists[rnd2(5)];
		csq_heartbeat(c, *now, &h, &si);
		break;
	case 2:
		if (rnd(2))
			csq_pause(c, *now, sid);
		else
			csq_resume(c, *now, sid);
		break;
	case 3:
		if (rnd(5) == 0)
			csq_logout(c, *now, sid, &n64);
		break;
	case 4:
		csq_release(c, *now, room, &known);
		break;
	case 5:
	case 6:
		memset(&a, 0, sizeof(a));
		a.user = uid;
		a.has_queue = rnd(2);
		a.queue = queues[rnd(3)];
		a.has_tier = rnd(2);
		a.tier = rnd(4);
		a.has_ttl = rnd(2);
		a.ttl_s = rnd(6);
		random_prefer(&a.prefer);
		a.has_needs = rnd2(3) == 0;
		a.needs = need_lists[rnd2(5)];
		csq_enqueue(c, *now, &a, &u);
		break;
	case 7:
		csq_touch(c, *now, uid, rnd(2) ? -1 : (int64_t)rnd(6), &known);
		break;
	case 8:
		csq_leave(c, *now, uid, &known);
		break;
	case 9:
		*now += rnd(800);
		/* As after a restart: deadlines that fall together. */
		if (rnd(8) == 0)
			csq_rearm_deadlines(c, *now);
		csq_expire(c, *now);
		break;
	case 10:
		csq_accept(c, *now, room, &known);
		break;
	case 11:
		csq_decline(c, *now, room, &known);
		break;
	case 12:
		csq_ready(c, *now, room, &known);
		break;
	case 13:
		memset(&t, 0, sizeof(t));
		t.room = room;
		t.queue = queues[rnd(3)];
		random_prefer(&t.prefer);
		t.has_needs = rnd2(3) == 0;
		t.needs = need_lists[rnd2(5)];
		csq_transfer(c, *now, &t, &u);
		break;
	case 14:
		if (rnd(10) == 0)
			random_policies(c, *now);
		break;
	}
}

static void
restore_into(void *arg, const struct csq_snap_item *it)
{
	assert_int_equal(csq_restore(arg, it), 0);
}

/* A canonical text of a snapshot: its items, sorted. */
static int
line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct dump {
	char *lines[4096];
	size_t n;
};

/* What the snapshots held, over all rounds: the run did make them. */
static unsigned seen_offered, seen_wrapup, seen_retry;
static unsigned seen_clocks, seen_preferring, seen_queues, seen_rings;
static unsigned seen_skills, seen_needs, seen_relax;
/* Queues' nobody policies, their spells, their graces. */
static unsigned seen_nobody_policy, seen_nobody, seen_graces;

static void
dump_item(void *arg, const struct csq_snap_item *it)
{
	struct dump *d = arg;
	char buf[4096];
	const struct csq_snap_user *u = &it->u.user;
	const struct csq_snap_servicer *s = &it->u.servicer;
	const struct csq_snap_room *r = &it->u.room;
	const struct csq_stats *st = &it->u.state.stats;
	size_t off;
	uint32_t i;

	switch (it->kind) {
	case CSQ_SNAP_STATE:
		snprintf(buf, sizeof(buf),
		         "state %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		         "%llu %llu",
		         (unsigned long long)it->u.state.seq,
		         (unsigned long long)it->u.state.order,
		         (unsigned long long)it->u.state.tie,
		         (unsigned long long)it->u.state.event_id,
		         (unsigned long long)st->waiting,
		         (unsigned long long)st->rooms_free,
		         (unsigned long long)st->rooms_busy,
		         (unsigned long long)st->offers_total,
		         (unsigned long long)st->offers_declined_total,
		         (unsigned long long)st->offers_missed_total,
		         (unsigned long long)st->transferred_total);
		break;
	case CSQ_SNAP_ROOM:
		seen_wrapup++;
		snprintf(buf, sizeof(buf), "room %s %u %u %llu %llu %llu",
		         r->servicer, r->index, r->length_s,
		         (unsigned long long)r->since_ms,
		         (unsigned long long)r->deadline,
		         (unsigned long long)r->deadline_tie);
		break;
	case CSQ_SNAP_SERVICER:
		off =
		    (size_t)snprintf(buf, sizeof(buf),
		                     "servicer %s %u %u %u %llu %llu %llu %llu",
		                     s->id, s->status, s->capacity, s->ttl_s,
		                     (unsigned long long)s->last_order,
		                     (unsigned long long)s->last_ms,
		                     (unsigned long long)s->deadline,
		                     (unsigned long long)s->deadline_tie);
		for (i = 0; i < s->nqueues; i++)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off,
			                        " %s", s->queues[i]);
		seen_retry += s->has_retry;
		snprintf(buf + off, sizeof(buf) - off,
		         " offer %u wrapup %u missed %u retry %u %u %llu %llu "
		         "skills %s",
		         s->offer_s, s->wrapup_s, s->missed, s->has_retry,
		         s->retry_s,
		         (unsigned long long)(s->has_retry ? s->retry : 0),
		         (unsigned long long)(s->has_retry ? s->retry_tie : 0),
		         s->skills);
		seen_skills += s->skills[0] != '\0';
		break;
	case CSQ_SNAP_USER:
		seen_offered += u->state == CSQ_USER_OFFERED;
		snprintf(
		    buf, sizeof(buf),
		    "user %s %s %llu %llu %u %u %u %llu %llu %s %u %llu %u %u "
		    "%llu %llu taken %llu",
		    u->id, u->queue, (unsigned long long)u->key,
		    (unsigned long long)u->arrival_ms, u->ttl_s, u->state,
		    u->has_deadline,
		    (unsigned long long)(u->has_deadline ? u->deadline : 0),
		    (unsigned long long)(u->has_deadline ? u->deadline_tie : 0),
		    u->servicer, u->room, (unsigned long long)u->since_ms,
		    u->flags, u->offer_s, (unsigned long long)u->offer_deadline,
		    (unsigned long long)u->offer_deadline_tie,
		    (unsigned long long)u->taken_ms);
		off = strlen(buf);
		seen_clocks += u->has_wait && u->prefer[0] == '\0';
		seen_preferring += u->has_wait && u->prefer[0] != '\0';
		snprintf(buf + off, sizeof(buf) - off,
		         " wait %u %u %llu %llu %llu %s %u needs %s %u",
		         u->has_wait, u->clock_kind,
		         (unsigned long long)u->joined_ms,
		         (unsigned long long)u->clock,
		         (unsigned long long)u->clock_tie, u->prefer,
		         u->prefer_s, u->needs, u->relax_step);
		seen_needs += u->needs[0] != '\0';
		seen_relax += u->relax_step > 0;
		break;
	case CSQ_SNAP_QUEUE:
		seen_queues++;
		off = (size_t)snprintf(
		    buf, sizeof(buf),
		    "queue %s %llu %llu %llu %llu %llu %u %llu %llu %llu %llu",
		    it->u.queue.name, (unsigned long long)it->u.queue.matched,
		    (unsigned long long)it->u.queue.abandoned_leave,
		    (unsigned long long)it->u.queue.abandoned_timeout,
		    (unsigned long long)it->u.queue.overflowed,
		    (unsigned long long)it->u.queue.wait_ms_sum,
		    it->u.queue.ring_next,
		    (unsigned long long)it->u.queue.hold_ms,
		    (unsigned long long)it->u.queue.holds,
		    (unsigned long long)it->u.queue.wait_area_ms,
		    (unsigned long long)it->u.queue.abandons);
		for (i = 0; i <= CSQ_TIER_LIMIT; i++)
			off += (size_t)snprintf(
			    buf + off, sizeof(buf) - off, " %llu/%llu/%u",
			    (unsigned long long)it->u.queue.last_arrival_ms[i],
			    (unsigned long long)it->u.queue.gap_ms[i],
			    it->u.queue.arrivals[i]);
		/* Its nobody policy's spell (protocol.md 3c). */
		seen_nobody_policy += it->u.queue.has_nobody;
		seen_nobody += it->u.queue.nobody_since != 0;
		seen_graces += it->u.queue.nobody_grace != 0;
		snprintf(buf + off, sizeof(buf) - off,
		         " nobody %u %u %llu %llu/%llu", it->u.queue.has_nobody,
		         it->u.queue.nobody_fired,
		         (unsigned long long)it->u.queue.nobody_since,
		         (unsigned long long)it->u.queue.nobody_grace,
		         (unsigned long long)it->u.queue.nobody_grace_tie);
		break;
	case CSQ_SNAP_RING:
		seen_rings++;
		off = (size_t)snprintf(buf, sizeof(buf), "ring %s %u %u",
		                       it->u.ring.queue, it->u.ring.offset,
		                       it->u.ring.n);
		for (i = 0; i < it->u.ring.n && off < sizeof(buf) - 16; i++)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off,
			                        " %u", it->u.ring.v[i]);
		break;
	}
	assert_true(d->n < 4096);
	d->lines[d->n++] = strdup(buf);
}

static void
dump_of(const struct csq *c, struct dump *d)
{
	d->n = 0;
	csq_snapshot(c, dump_item, d);
	qsort(d->lines, d->n, sizeof(d->lines[0]), line_cmp);
}

static void
dump_free(struct dump *d)
{
	while (d->n > 0)
		free(d->lines[--d->n]);
}

static void
test_restore_behaves_the_same(void **state)
{
	static struct dump da, db;
	struct csq_limits l;
	struct log la, lb;
	struct csq *a, *b;
	struct csq_queue_stats *qa, *qb;
	const struct csq_policy *pol;
	char why[256];
	uint64_t now = 5000000, now_b, seed, seed2;
	int round, i, rounds = (int)scale_steps(ROUNDS, ROUNDS_MIN);
	size_t k, npol, na, nb;

	(void)state;
	la.buf = malloc(LOG_MAX);
	lb.buf = malloc(LOG_MAX);
	csq_limits_default(&l);
	l.max_queue_length = 30;
	l.offer_max_missed = 2;
	l.offer_retry_s = 1;
	for (round = 0; round < rounds; round++) {
		rng = 0x9e3779b97f4a7c15ULL + (uint64_t)round;
		l.strategy = round % 2 ? CSQ_STRATEGY_LEAST_BUSY
		                       : CSQ_STRATEGY_LONGEST_IDLE;
		la.len = lb.len = 0;
		a = csq_new(&l, rng, log_event, &la);
		for (i = 0; i < 2000; i++) {
			random_op(a, &now);
			if (csq_check(a, why, sizeof(why)) != 0)
				fail_msg("round %d, operation %d: %s", round, i,
				         why);
		}
		/* Another hash seed, as a restart has: no answer and no
		 * event may depend on the order of the tables. The
		 * policies first, as the journal writes them. */
		b = csq_new(&l, ~rng, log_event, &lb);
		pol = csq_get_policies(a, &npol);
		assert_int_equal(csq_set_policies(b, now, pol, npol), CSQ_OK);
		csq_snapshot(a, restore_into, b);
		assert_int_equal(csq_restore_end(b), 0);
		if (csq_check(b, why, sizeof(why)) != 0)
			fail_msg("round %d: restored state: %s", round, why);
		dump_of(a, &da);
		dump_of(b, &db);
		assert_int_equal(da.n, db.n);
		for (k = 0; k < da.n; k++)
			assert_string_equal(da.lines[k], db.lines[k]);
		dump_free(&da);
		dump_free(&db);
		/* And what QSTATS says, estimates included. */
		qa = csq_queues_stats(a, now, &na);
		qb = csq_queues_stats(b, now, &nb);
		assert_int_equal(na, nb);
		assert_memory_equal(qa, qb, na * sizeof(*qa));
		free(qa);
		free(qb);

		/* The same future: the same operations, the same events. */
		la.len = lb.len = 0;
		la.buf[0] = lb.buf[0] = '\0';
		seed = rng;
		seed2 = rng2;
		now_b = now;
		for (i = 0; i < 2000; i++)
			random_op(a, &now);
		rng = seed;
		rng2 = seed2;
		for (i = 0; i < 2000; i++)
			random_op(b, &now_b);
		assert_true(la.len > 0);
		assert_string_equal(la.buf, lb.buf);
		assert_int_equal(csq_last_event_id(a), csq_last_event_id(b));
		csq_free(a);
		csq_free(b);
	}
	free(la.buf);
	free(lb.buf);
	fprintf(stderr, "offered %u, wrap-up %u, retry %u\n", seen_offered,
	        seen_wrapup, seen_retry);
	assert_true(seen_offered > 0 && seen_wrapup > 0 && seen_retry > 0);
	assert_true(seen_clocks > 0 && seen_preferring > 0 && seen_queues > 0 &&
	            seen_rings > 0);
	assert_true(seen_skills > 0 && seen_needs > 0 && seen_relax > 0);
	/* Spells and graces at a round's end: the full run has them (a
	 * scaled one, valgrind's two rounds, not always). */
	fprintf(stderr, "nobody: %u policies, %u spells, %u graces\n",
	        seen_nobody_policy, seen_nobody, seen_graces);
	assert_true(seen_nobody_policy > 0);
	assert_true(scale_divisor() > 1 ||
	            (seen_nobody > 0 && seen_graces > 0));
}

/* Items that do not fit are refused, not half applied. */
static void
test_restore_refuses(void **state)
{
	struct csq_limits l;
	struct csq_snap_item it;
	struct csq *c;

	(void)state;
	csq_limits_default(&l);
	c = csq_new(&l, 0, NULL, NULL);
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_USER;
	strcpy(it.u.user.id, "u1");
	strcpy(it.u.user.queue, "q");
	it.u.user.state = CSQ_USER_ASSIGNED;
	strcpy(it.u.user.servicer, "nobody");
	assert_int_equal(csq_restore(c, &it), -1);
	it.u.user.state = 7;
	assert_int_equal(csq_restore(c, &it), -1);
	strcpy(it.u.user.id, "bad id");
	it.u.user.state = CSQ_USER_WAITING;
	assert_int_equal(csq_restore(c, &it), -1);
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_SERVICER;
	strcpy(it.u.servicer.id, "s");
	it.u.servicer.capacity = 0;
	it.u.servicer.nqueues = 1;
	strcpy(it.u.servicer.queues[0], "q");
	assert_int_equal(csq_restore(c, &it), -1);
	assert_int_equal(csq_check(c, NULL, 0), 0);
	csq_free(c);
}

/* The first item of every snapshot: counters past what the rest holds. */
static void
restore_state(struct csq *c, uint64_t seq, uint64_t order, uint64_t tie)
{
	struct csq_snap_item it;

	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_STATE;
	it.u.state.seq = seq;
	it.u.state.order = order;
	it.u.state.tie = tie;
	assert_int_equal(csq_restore(c, &it), 0);
}

static void
servicer_item(struct csq_snap_item *it, const char *id, const char *q1,
              const char *q2)
{
	memset(it, 0, sizeof(*it));
	it->kind = CSQ_SNAP_SERVICER;
	strcpy(it->u.servicer.id, id);
	it->u.servicer.capacity = 2;
	it->u.servicer.ttl_s = 30;
	it->u.servicer.last_order = 1;
	it->u.servicer.deadline = 1000;
	it->u.servicer.deadline_tie = 1;
	strcpy(it->u.servicer.queues[0], q1);
	it->u.servicer.nqueues = 1;
	if (q2 != NULL) {
		strcpy(it->u.servicer.queues[1], q2);
		it->u.servicer.nqueues = 2;
	}
}

static void
waiting_item(struct csq_snap_item *it, const char *id, const char *queue,
             uint64_t seq, uint32_t ttl_s, int has_deadline)
{
	memset(it, 0, sizeof(*it));
	it->kind = CSQ_SNAP_USER;
	strcpy(it->u.user.id, id);
	strcpy(it->u.user.queue, queue);
	it->u.user.key = seq; /* tier 15 */
	it->u.user.state = CSQ_USER_WAITING;
	it->u.user.ttl_s = ttl_s;
	it->u.user.has_deadline = (uint32_t)has_deadline;
	it->u.user.deadline = has_deadline ? 2000 : 0;
	it->u.user.deadline_tie = has_deadline ? 2 : 0;
}

/*
 * Items that each look well formed but that csq_snapshot never writes,
 * found by fuzz/fuzz_snapshot: each one restored made a state that broke
 * csq_check (a queue served twice, a TTL without a deadline, a free room
 * beside a waiting user), or that would hand out an order key or a
 * servicer order a second time. A journal that holds one is refused.
 */
static void
test_restore_refuses_what_csq_never_writes(void **state)
{
	struct csq_limits l;
	struct csq_snap_item it;
	struct csq *c;

	(void)state;
	csq_limits_default(&l);
	c = csq_new(&l, 0, NULL, NULL);
	restore_state(c, 10, 5, 5);

	servicer_item(&it, "s1", "q", "q"); /* the same queue twice */
	assert_int_equal(csq_restore(c, &it), -1);
	servicer_item(&it, "s1", "q", NULL);
	it.u.servicer.ttl_s = 0;
	assert_int_equal(csq_restore(c, &it), -1);
	it.u.servicer.ttl_s = CSQ_TTL_MAX + 1;
	assert_int_equal(csq_restore(c, &it), -1);
	servicer_item(&it, "s1", "q", NULL);
	it.u.servicer.last_order = 6; /* past the state's order */
	assert_int_equal(csq_restore(c, &it), -1);
	servicer_item(&it, "s1", "q", NULL);
	it.u.servicer.deadline_tie = 6;
	assert_int_equal(csq_restore(c, &it), -1);

	waiting_item(&it, "u1", "w", 3, 30, 0); /* a TTL, no deadline */
	assert_int_equal(csq_restore(c, &it), -1);
	waiting_item(&it, "u1", "w", 3, 0, 1); /* a deadline, no TTL */
	assert_int_equal(csq_restore(c, &it), -1);
	waiting_item(&it, "u1", "w", 11, 0, 0); /* a key not handed out */
	assert_int_equal(csq_restore(c, &it), -1);
	waiting_item(&it, "u1", "w", 0, 0, 0);
	assert_int_equal(csq_restore(c, &it), -1);
	waiting_item(&it, "u1", "w", 3, CSQ_TTL_MAX + 1, 1);
	assert_int_equal(csq_restore(c, &it), -1);
	waiting_item(&it, "u1", "w", 3, 30, 1);
	it.u.user.deadline_tie = 6;
	assert_int_equal(csq_restore(c, &it), -1);

	/* The same items, well formed, are taken; a state item comes
	 * first, into an empty state, or not at all. */
	servicer_item(&it, "s1", "q", "r");
	assert_int_equal(csq_restore(c, &it), 0);
	waiting_item(&it, "u1", "w", 3, 30, 1);
	assert_int_equal(csq_restore(c, &it), 0);
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_STATE;
	it.u.state.seq = 100;
	assert_int_equal(csq_restore(c, &it), -1);
	assert_int_equal(csq_restore_end(c), 0);
	assert_int_equal(csq_check(c, NULL, 0), 0);

	/* The key of u1 (in w) again, in another queue: each item fits,
	 * the whole is no state (fuzz_snapshot: both users enqueued into
	 * one queue again, one of them was lost from its line). */
	waiting_item(&it, "u3", "x", 3, 0, 0);
	assert_int_equal(csq_restore(c, &it), 0);
	assert_int_equal(csq_restore_end(c), -1);
	csq_free(c);

	/* A user waits in q, which s1 serves with two free rooms. */
	c = csq_new(&l, 0, NULL, NULL);
	restore_state(c, 10, 5, 5);
	servicer_item(&it, "s1", "q", NULL);
	assert_int_equal(csq_restore(c, &it), 0);
	assert_int_equal(csq_restore_end(c), 0);
	waiting_item(&it, "u2", "q", 4, 0, 0);
	assert_int_equal(csq_restore(c, &it), 0);
	assert_int_equal(csq_restore_end(c), -1);
	csq_free(c);
}

static void
snap_user_item(void *arg, const struct csq_snap_item *it)
{
	if (it->kind == CSQ_SNAP_USER)
		*(struct csq_snap_user *)arg = it->u.user;
}

/*
 * A user whose TTL went to 0 has no deadline; the snapshot wrote the key
 * of the one it had, so that one state gave two snapshots, depending on
 * its history (found by fuzz/fuzz_csq).
 */
static void
test_snapshot_writes_no_stale_deadline(void **state)
{
	struct csq_enqueue_args a = {.user = "u1", .has_ttl = 1, .ttl_s = 60};
	struct csq_user_info info;
	struct csq_snap_user u;
	struct csq_limits l;
	struct csq *c;
	int known;

	(void)state;
	csq_limits_default(&l);
	c = csq_new(&l, 0, NULL, NULL);
	assert_int_equal(csq_enqueue(c, 1000, &a, &info), CSQ_OK);
	assert_int_equal(csq_touch(c, 2000, "u1", 0, &known), CSQ_OK);
	memset(&u, 0xff, sizeof(u));
	csq_snapshot(c, snap_user_item, &u);
	assert_string_equal(u.id, "u1");
	assert_int_equal(u.has_deadline, 0);
	assert_int_equal(u.deadline, 0);
	assert_int_equal(u.deadline_tie, 0);
	csq_free(c);
}

/*
 * An accepted offer's conversation holds its room from the offer: the
 * estimator learns hold times from it (room.c). A restore took the
 * assignment's time instead, and the restored state's estimates went
 * apart from the original's at the room's end (found by fuzz/fuzz_csq.c;
 * its input is in fuzz/corpus/csq).
 */
static void
test_restore_keeps_offer_time(void **state)
{
	struct csq_enqueue_args a;
	struct csq_heartbeat_args h;
	struct csq_servicer_info si;
	struct csq_user_info info;
	struct csq_queue_stats qa, qb;
	struct csq_limits l;
	struct csq *c, *d;
	int known;

	(void)state;
	csq_limits_default(&l);
	c = csq_new(&l, 1, NULL, NULL);
	memset(&h, 0, sizeof(h));
	h.servicer = "s";
	h.has_ttl = 1;
	h.ttl_s = 3600;
	h.has_offer = 1;
	h.offer_s = 30;
	assert_int_equal(csq_heartbeat(c, 1000, &h, &si), CSQ_OK);
	memset(&a, 0, sizeof(a));
	a.user = "u1";
	assert_int_equal(csq_enqueue(c, 1000, &a, &info), CSQ_OK);
	assert_int_equal(info.state, CSQ_USER_OFFERED);
	a.user = "u2";
	assert_int_equal(csq_enqueue(c, 1000, &a, &info), CSQ_OK);
	assert_int_equal(info.state, CSQ_USER_WAITING);
	assert_int_equal(csq_accept(c, 6000, "s/0", &known), CSQ_OK);
	d = csq_new(&l, 2, NULL, NULL);
	csq_snapshot(c, restore_into, d);
	assert_int_equal(csq_restore_end(d), 0);
	/* u1's room held 8 s from its offer (5 s of it assigned); u2 is
	 * offered the room, and a new arrival would wait one hold. */
	assert_int_equal(csq_release(c, 9000, "s/0", &known), CSQ_OK);
	assert_int_equal(csq_release(d, 9000, "s/0", &known), CSQ_OK);
	assert_int_equal(csq_queue_stats(c, 9000, "default", &qa), CSQ_OK);
	assert_int_equal(csq_queue_stats(d, 9000, "default", &qb), CSQ_OK);
	assert_int_equal(qa.eta_ms, 8000);
	assert_int_equal(qb.eta_ms, qa.eta_ms);
	csq_free(c);
	csq_free(d);
}

/* A full ring of outcomes (two RING items), and its numbers, back. */
static void
test_ring_restored(void **state)
{
	struct csq_enqueue_args a;
	struct csq_heartbeat_args h;
	struct csq_servicer_info si;
	struct csq_user_info info;
	struct csq_queue_stats qa, qb;
	struct csq_limits l;
	struct csq *c, *d;
	char uid[16];
	int i, known;

	(void)state;
	csq_limits_default(&l);
	c = csq_new(&l, 1, NULL, NULL);
	memset(&h, 0, sizeof(h));
	h.servicer = "s";
	h.has_ttl = 1;
	h.ttl_s = 3600;
	assert_int_equal(csq_heartbeat(c, 1000, &h, &si), CSQ_OK);
	for (i = 0; i < 1300; i++) {
		memset(&a, 0, sizeof(a));
		snprintf(uid, sizeof(uid), "u%d", i);
		a.user = uid;
		a.has_ttl = 1;
		a.ttl_s = 0;
		assert_int_equal(
		    csq_enqueue(c, 1000 + (uint64_t)i * 10, &a, &info), CSQ_OK);
		if (i % 3 == 0) /* one in three waits and gives up */
			assert_int_equal(
			    csq_leave(c, 1005 + (uint64_t)i * 10, uid, &known),
			    CSQ_OK);
		else if (info.state == CSQ_USER_ASSIGNED)
			assert_int_equal(csq_release(c, 1009 + (uint64_t)i * 10,
			                             "s/0", &known),
			                 CSQ_OK);
	}
	assert_int_equal(csq_queue_stats(c, 20000, "default", &qa), CSQ_OK);
	assert_int_equal(qa.outcomes, CSQ_OUTCOMES);
	d = csq_new(&l, 2, NULL, NULL);
	csq_snapshot(c, restore_into, d);
	assert_int_equal(csq_restore_end(d), 0);
	assert_int_equal(csq_check(d, NULL, 0), 0);
	assert_int_equal(csq_queue_stats(d, 20000, "default", &qb), CSQ_OK);
	assert_memory_equal(&qa, &qb, sizeof(qa));
	csq_free(c);
	csq_free(d);
}

/* Waits that csq never writes: refused. */
static void
test_restore_refuses_waits(void **state)
{
	struct csq_snap_item it;
	struct csq_policy p;
	struct csq_limits l;
	struct csq *c;

	(void)state;
	csq_limits_default(&l);
	c = csq_new(&l, 0, NULL, NULL);
	memset(&p, 0, sizeof(p));
	strcpy(p.name, "w");
	p.aging_every_s = 10;
	assert_int_equal(csq_set_policies(c, 0, &p, 1), CSQ_OK);
	restore_state(c, 10, 5, 5);
	servicer_item(&it, "s1", "q", NULL);
	it.u.servicer.status = CSQ_SERVICER_PAUSED;
	assert_int_equal(csq_restore(c, &it), 0);

	/* w has clocks: a user in it without them, or with one that is no
	 * aging point. */
	waiting_item(&it, "u1", "w", 3, 0, 0);
	assert_int_equal(csq_restore(c, &it), -1);
	it.u.user.has_wait = 1;
	it.u.user.clock_kind = 6; /* aging */
	it.u.user.joined_ms = 1000;
	it.u.user.clock = 15000;
	it.u.user.clock_tie = 1;
	assert_int_equal(csq_restore(c, &it), -1);
	it.u.user.clock_kind = 5; /* overflow: w has none */
	it.u.user.clock = 11000;
	assert_int_equal(csq_restore(c, &it), -1);
	/* q has none: a user in it with a clock. */
	waiting_item(&it, "u1", "q", 3, 0, 0);
	it.u.user.has_wait = 1;
	it.u.user.clock_kind = 6;
	it.u.user.joined_ms = 1000;
	it.u.user.clock = 11000;
	assert_int_equal(csq_restore(c, &it), -1);
	/* Preferring: a servicer that is not there, or does not serve
	 * the queue, or a window of 0 s. */
	waiting_item(&it, "u1", "q", 3, 0, 0);
	it.u.user.flags = 4;
	it.u.user.has_wait = 1;
	it.u.user.clock_kind = 7;
	it.u.user.clock = 11000;
	it.u.user.prefer_s = 10;
	strcpy(it.u.user.prefer, "nobody");
	assert_int_equal(csq_restore(c, &it), -1);
	strcpy(it.u.user.prefer, "s1");
	strcpy(it.u.user.queue, "w");
	assert_int_equal(csq_restore(c, &it), -1);
	strcpy(it.u.user.queue, "q");
	it.u.user.prefer_s = 0;
	assert_int_equal(csq_restore(c, &it), -1);
	/* The same, right: taken. */
	it.u.user.prefer_s = 10;
	assert_int_equal(csq_restore(c, &it), 0);
	waiting_item(&it, "u2", "w", 4, 0, 0);
	it.u.user.has_wait = 1;
	it.u.user.clock_kind = 6;
	it.u.user.joined_ms = 1000;
	it.u.user.clock = 11000;
	assert_int_equal(csq_restore(c, &it), 0);
	/* A ring that stops short of its next outcome. */
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_QUEUE;
	strcpy(it.u.queue.name, "q");
	it.u.queue.ring_next = 2;
	assert_int_equal(csq_restore(c, &it), 0);
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_RING;
	strcpy(it.u.ring.queue, "q");
	it.u.ring.offset = 1; /* not where it stands */
	it.u.ring.n = 1;
	assert_int_equal(csq_restore(c, &it), -1);
	it.u.ring.offset = 0;
	assert_int_equal(csq_restore(c, &it), 0);
	assert_int_equal(csq_restore_end(c), -1);
	it.u.ring.offset = 1;
	assert_int_equal(csq_restore(c, &it), 0);
	assert_int_equal(csq_restore_end(c), 0);
	assert_int_equal(csq_check(c, NULL, 0), 0);
	csq_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_restore_behaves_the_same),
	    cmocka_unit_test(test_restore_refuses),
	    cmocka_unit_test(test_restore_refuses_what_csq_never_writes),
	    cmocka_unit_test(test_snapshot_writes_no_stale_deadline),
	    cmocka_unit_test(test_ring_restored),
	    cmocka_unit_test(test_restore_keeps_offer_time),
	    cmocka_unit_test(test_restore_refuses_waits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
