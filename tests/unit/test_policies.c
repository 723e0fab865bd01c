/*
 * Queue policies, preferred servicers and queue numbers (protocol-v2
 * sections 4, 5 and 6) on libcsq with a fake clock: the checks of the
 * policies, max_length and strategy per queue, overflow (chains, a free
 * room at the target, a re-ENQUEUE naming the queue left), aging (and
 * aging that meets overflow), the clocks that restart when a user returns
 * to a line, preference windows and every way they end, TRANSFER's
 * PREFER, QSTATS's counters and service level, and the wait estimate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "fixture.h"

/* A servicer with a TTL of an hour, serving queues ("a,b"), capacity,
 * offer time (0: direct assignment). */
static void
agent(struct fixture *f, const char *sid, uint32_t capacity, const char *queues,
      uint32_t offer)
{
	struct csq_heartbeat_args a;
	static char buf[256];

	hb_args(&a, sid, capacity, queues, buf, sizeof(buf));
	a.has_capacity = 1; /* capacity 0 too */
	a.has_ttl = 1;
	a.ttl_s = 3600;
	a.has_offer = 1;
	a.offer_s = offer;
	assert_int_equal(hb_run(f, &a, NULL), CSQ_OK);
}

/* ENQUEUE with everything: queue (NULL: left out), tier (< 0: left out),
 * PREFER servicer seconds (NULL: left out). */
static enum csq_status
enq_full(struct fixture *f, const char *uid, const char *queue, int tier,
         const char *prefer, uint32_t seconds, struct csq_user_info *out)
{
	struct csq_enqueue_args a;

	enq_args(&a, uid, queue, tier);
	a.has_ttl = 1;
	a.ttl_s = 3600;
	a.prefer.has_prefer = prefer != NULL;
	a.prefer.servicer = prefer;
	a.prefer.seconds = seconds;
	return enq_run(f, &a, out);
}

static struct csq_policy
policy(const char *name)
{
	struct csq_policy p;

	memset(&p, 0, sizeof(p));
	snprintf(p.name, sizeof(p.name), "%s", name);
	return p;
}

static void
overflow(struct csq_policy *p, uint32_t after, const char *to)
{
	p->overflow_after_s = after;
	snprintf(p->overflow_to, sizeof(p->overflow_to), "%s", to);
}

static struct csq_queue_stats
qstats(struct fixture *f, const char *q)
{
	struct csq_queue_stats st;

	assert_int_equal(csq_queue_stats(f->csq, f->now, q, &st), CSQ_OK);
	return st;
}

static struct csq_user_info
where_is(struct fixture *f, const char *uid)
{
	struct csq_user_info u;

	where(f, uid, &u);
	return u;
}

static int
leave(struct fixture *f, const char *uid)
{
	int known = -1;

	assert_int_equal(csq_leave(f->csq, f->now, uid, &known), CSQ_OK);
	check(f);
	return known;
}

/* The checks of the policies, each error at its entry. */
static void
test_policy_checks(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[4];
	struct csq_limits l;
	size_t bad;

	csq_limits_default(&l);
	v[0] = policy("vip");
	v[1] = policy("general");
	assert_int_equal(csq_policies_check(v, 2, &l, &bad), CSQ_POLICY_OK);

	v[1] = policy("bad name");
	assert_int_equal(csq_policies_check(v, 2, &l, &bad), CSQ_POLICY_NAME);
	assert_int_equal(bad, 1);
	v[1] = policy("vip");
	assert_int_equal(csq_policies_check(v, 2, &l, &bad),
	                 CSQ_POLICY_DUPLICATE);
	assert_int_equal(bad, 1);

	v[1] = policy("general");
	v[0].has_max_length = 1;
	v[0].max_length = 0;
	assert_int_equal(csq_policies_check(v, 2, &l, &bad),
	                 CSQ_POLICY_MAX_LENGTH);
	assert_int_equal(bad, 0);
	v[0].max_length = CSQ_QUEUE_LENGTH_MAX + 1;
	assert_int_equal(csq_policies_check(v, 2, &l, &bad),
	                 CSQ_POLICY_MAX_LENGTH);
	v[0].max_length = 5;

	/* overflow_after without overflow_to, and the reverse. */
	v[0].overflow_after_s = 60;
	assert_int_equal(csq_policies_check(v, 2, &l, &bad),
	                 CSQ_POLICY_OVERFLOW_PAIR);
	v[0] = policy("vip");
	strcpy(v[0].overflow_to, "general");
	assert_int_equal(csq_policies_check(v, 2, &l, &bad),
	                 CSQ_POLICY_OVERFLOW_PAIR);
	overflow(&v[0], 60, "vip");
	assert_int_equal(csq_policies_check(v, 2, &l, &bad),
	                 CSQ_POLICY_OVERFLOW_TO);
	overflow(&v[0], 60, "no way");
	assert_int_equal(csq_policies_check(v, 2, &l, &bad),
	                 CSQ_POLICY_OVERFLOW_TO);
	overflow(&v[0], CSQ_POLICY_SECONDS_MAX + 1, "general");
	assert_int_equal(csq_policies_check(v, 2, &l, &bad),
	                 CSQ_POLICY_OVERFLOW_AFTER);
	/* A target without a policy of its own is fine. */
	overflow(&v[0], 60, "elsewhere");
	assert_int_equal(csq_policies_check(v, 2, &l, &bad), CSQ_POLICY_OK);

	/* Cycles, of two and of three. */
	overflow(&v[0], 60, "general");
	overflow(&v[1], 60, "vip");
	assert_int_equal(csq_policies_check(v, 2, &l, &bad), CSQ_POLICY_CYCLE);
	assert_int_equal(bad, 0);
	v[2] = policy("third");
	overflow(&v[1], 60, "third");
	overflow(&v[2], 60, "vip");
	assert_int_equal(csq_policies_check(v, 3, &l, &bad), CSQ_POLICY_CYCLE);
	overflow(&v[2], 60, "fourth");
	assert_int_equal(csq_policies_check(v, 3, &l, &bad), CSQ_POLICY_OK);
	/* A cycle further down a chain is found at its own entries. */
	v[3] = policy("fourth");
	overflow(&v[3], 5, "third");
	assert_int_equal(csq_policies_check(v, 4, &l, &bad), CSQ_POLICY_CYCLE);
	assert_int_equal(bad, 2);

	v[0] = policy("vip");
	v[0].aging_every_s = CSQ_POLICY_SECONDS_MAX + 1;
	assert_int_equal(csq_policies_check(v, 1, &l, &bad),
	                 CSQ_POLICY_AGING_EVERY);
	v[0].aging_every_s = 10;
	v[0].has_aging_max_tier = 1;
	v[0].aging_max_tier = l.max_tier + 1;
	assert_int_equal(csq_policies_check(v, 1, &l, &bad),
	                 CSQ_POLICY_AGING_MAX_TIER);
	v[0].aging_max_tier = l.max_tier;
	v[0].service_level_s = CSQ_POLICY_SECONDS_MAX + 1;
	assert_int_equal(csq_policies_check(v, 1, &l, &bad),
	                 CSQ_POLICY_SERVICE_LEVEL);
	v[0].service_level_s = 30;
	assert_int_equal(csq_policies_check(v, 1, &l, &bad), CSQ_POLICY_OK);

	/* set refuses what check refuses, and changes nothing. */
	overflow(&v[0], 60, "vip");
	assert_int_equal(csq_set_policies(f->csq, f->now, v, 1), CSQ_ERANGE);
	assert_int_equal(qstats(f, "vip").service_level_s,
	                 CSQ_DEFAULT_SERVICE_LEVEL);
	assert_string_equal(csq_policy_error_text(CSQ_POLICY_CYCLE),
	                    "overflow_to leads back to this queue (a cycle)");
}

/* max_length and strategy per queue; a policy keeps its queue. */
static void
test_max_length_and_strategy(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[1];
	struct csq_user_info u;

	v[0] = policy("small");
	v[0].has_max_length = 1;
	v[0].max_length = 2;
	v[0].has_strategy = 1;
	v[0].strategy = CSQ_STRATEGY_LEAST_BUSY;
	set_policies(f, v, 1);
	assert_int_equal(enq_full(f, "u1", "small", -1, NULL, 0, NULL), CSQ_OK);
	assert_int_equal(enq_full(f, "u2", "small", -1, NULL, 0, NULL), CSQ_OK);
	assert_int_equal(enq_full(f, "u3", "small", -1, NULL, 0, NULL),
	                 CSQ_EFULL);
	/* Another queue keeps the global length. */
	assert_int_equal(enq_full(f, "u3", "other", -1, NULL, 0, NULL), CSQ_OK);
	/* A move into it too. */
	assert_int_equal(enq_full(f, "u3", "small", -1, NULL, 0, NULL),
	                 CSQ_EFULL);
	assert_string_equal(where_is(f, "u3").queue, "other");
	leave(f, "u1");
	leave(f, "u2");
	leave(f, "u3");

	/* least_busy in "small", longest_idle elsewhere: b logged in
	 * last but is less busy. */
	agent(f, "a", 3, "small,other", 0);
	f->now += 1000;
	agent(f, "b", 3, "small,other", 0);
	enq_full(f, "x1", "other", -1, NULL, 0, &u);
	assert_string_equal(u.servicer, "a"); /* longest idle */
	enq_full(f, "x2", "small", -1, NULL, 0, &u);
	assert_string_equal(u.servicer, "b"); /* fewest busy */
	enq_full(f, "x3", "other", -1, NULL, 0, &u);
	assert_string_equal(u.servicer, "a"); /* longest idle again */
	enq_full(f, "x4", "small", -1, NULL, 0, &u);
	assert_string_equal(u.servicer, "b"); /* a 2 busy, b 1 */

	/* The policy's queue exists while the policy does. */
	assert_int_equal(qstats(f, "small").matched_total, 2);
	set_policies(f, NULL, 0);
	enq_full(f, "x5", "small", -1, NULL, 0, &u);
	assert_string_equal(u.servicer, "a"); /* longest idle now */
}

/* Overflow: at exactly overflow_after, one event, to both queues. */
static void
test_overflow(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[1];
	struct csq_user_info u;
	const struct csq_event *ev;
	char ch[CSQ_EVENT_CHANNELS][CSQ_CHANNEL_MAX];
	size_t first;

	v[0] = policy("vip");
	overflow(&v[0], 60, "general");
	v[0].has_max_length = 1;
	v[0].max_length = 10;
	set_policies(f, v, 1);
	enq_full(f, "g1", "general", -1, NULL, 0, NULL);
	f->now += 1000;
	enq_full(f, "v1", "vip", 2, NULL, 0, NULL);
	pass(f, 59999);
	assert_string_equal(where_is(f, "v1").queue, "vip");
	first = f->nevents;
	pass(f, 1);
	assert_string_equal(events_since(f, first), "overflowed");
	ev = event_at(f, first);
	assert_string_equal(ev->user, "v1");
	assert_string_equal(ev->from_queue, "vip");
	assert_string_equal(ev->queue, "general");
	assert_int_equal(ev->tier, 2);
	assert_int_equal(ev->position, 1); /* tier 2 before g1 */
	assert_int_equal(csq_event_channels(ev, ch), 4);
	assert_string_equal(ch[0], "user:v1");
	assert_string_equal(ch[1], "queue:general");
	assert_string_equal(ch[2], "queue:vip");
	assert_string_equal(ch[3], "events");
	u = where_is(f, "v1");
	assert_string_equal(u.queue, "general");
	assert_int_equal(u.position, 1);
	assert_int_equal(u.waited_ms, 60000); /* from its arrival */
	assert_string_equal(line_of(f, "general"), "v1,g1");
	assert_int_equal(qstats(f, "vip").overflowed_total, 1);
	assert_int_equal(qstats(f, "general").overflowed_total, 0);
	/* general has no overflow: it stays. */
	pass(f, 1000000);
	assert_string_equal(where_is(f, "v1").queue, "general");
}

/* The target has a free room: matched (or offered) with from_queue. */
static void
test_overflow_into_free_room(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[2];
	const struct csq_event *ev;
	size_t first;

	v[0] = policy("vip");
	overflow(&v[0], 10, "general");
	v[1] = policy("other");
	overflow(&v[1], 10, "offers");
	set_policies(f, v, 2);
	agent(f, "s", 1, "general", 0);
	agent(f, "o", 1, "offers", 30);
	enq_full(f, "v1", "vip", -1, NULL, 0, NULL);
	enq_full(f, "v2", "other", -1, NULL, 0, NULL);
	first = f->nevents;
	pass(f, 10000);
	assert_string_equal(events_since(f, first), "matched,offered");
	ev = event_at(f, first);
	assert_string_equal(ev->user, "v1");
	assert_string_equal(ev->queue, "general");
	assert_string_equal(ev->from_queue, "vip");
	assert_int_equal(ev->reason, CSQ_REASON_OVERFLOW); /* not enqueue */
	assert_int_equal(ev->waited_ms, 10000);
	ev = event_at(f, first + 1);
	assert_string_equal(ev->user, "v2");
	assert_string_equal(ev->from_queue, "other");
	assert_int_equal(ev->reason, CSQ_REASON_OVERFLOW);
	assert_int_equal(where_is(f, "v2").state, CSQ_USER_OFFERED);
	assert_int_equal(qstats(f, "general").matched_total, 1);
	assert_int_equal(qstats(f, "vip").overflowed_total, 1);
}

/* Chains: each hop waits its own queue's time, one event per hop; the
 * target's max length does not apply. */
static void
test_overflow_chain(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[3];
	const struct csq_event *ev;
	size_t first;

	v[0] = policy("a");
	overflow(&v[0], 10, "b");
	v[1] = policy("b");
	overflow(&v[1], 20, "c");
	v[1].has_max_length = 1;
	v[1].max_length = 1;
	v[2] = policy("c");
	set_policies(f, v, 3);
	enq_full(f, "b1", "b", -1, NULL, 0, NULL);
	assert_int_equal(enq_full(f, "u", "a", -1, NULL, 0, NULL), CSQ_OK);
	first = f->nevents;
	pass(f, 10000);
	assert_string_equal(events_since(f, first), "overflowed");
	assert_string_equal(event_at(f, first)->queue, "b");
	assert_int_equal(qstats(f, "b").waiting, 2); /* over its length */
	first = f->nevents;
	pass(f, 10000); /* b1 goes to c: it was in b from the start */
	assert_string_equal(events_since(f, first), "overflowed");
	assert_string_equal(event_at(f, first)->user, "b1");
	first = f->nevents;
	pass(f, 9999);
	assert_string_equal(events_since(f, first), "");
	pass(f, 1); /* 20 s after it joined b */
	assert_string_equal(events_since(f, first), "overflowed");
	ev = event_at(f, first);
	assert_string_equal(ev->user, "u");
	assert_string_equal(ev->from_queue, "b");
	assert_string_equal(ev->queue, "c");
	assert_string_equal(line_of(f, "c"), "b1,u");

	/* A pass that comes late moves a user one hop, and the next hop
	 * waits the next queue's whole time from then. */
	enq_full(f, "w", "a", -1, NULL, 0, NULL);
	first = f->nevents;
	pass(f, 100000);
	assert_string_equal(events_since(f, first), "overflowed");
	assert_string_equal(where_is(f, "w").queue, "b");
	pass(f, 19999);
	assert_string_equal(where_is(f, "w").queue, "b");
	pass(f, 1);
	assert_string_equal(where_is(f, "w").queue, "c");
}

/* A re-ENQUEUE naming a queue the user overflowed from keeps it. */
static void
test_overflow_enqueue_again(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[2];
	size_t first;

	v[0] = policy("a");
	overflow(&v[0], 10, "b");
	v[1] = policy("b");
	overflow(&v[1], 10, "c");
	set_policies(f, v, 2);
	enq_full(f, "u", "a", -1, NULL, 0, NULL);
	pass(f, 10000);
	pass(f, 10000);
	assert_string_equal(where_is(f, "u").queue, "c");
	/* The frontend repeats its ENQUEUE: u stays, no event. */
	first = f->nevents;
	enq_full(f, "u", "a", -1, NULL, 0, NULL);
	enq_full(f, "u", "b", -1, NULL, 0, NULL);
	assert_string_equal(where_is(f, "u").queue, "c");
	assert_string_equal(events_since(f, first), "");
	/* Its tier still applies (rescored, reason enqueue). */
	enq_full(f, "u", "a", 3, NULL, 0, NULL);
	assert_string_equal(events_since(f, first), "rescored");
	assert_int_equal(event_at(f, first)->reason, CSQ_REASON_ENQUEUE);
	assert_string_equal(where_is(f, "u").queue, "c");
	/* Another queue is a move, and then a move back is one too. */
	enq_full(f, "u", "d", -1, NULL, 0, NULL);
	assert_string_equal(where_is(f, "u").queue, "d");
	enq_full(f, "u", "a", -1, NULL, 0, NULL);
	assert_string_equal(where_is(f, "u").queue, "a");
}

/* Aging: a tier every aging_every, up to aging_max_tier; a higher own
 * tier is never lowered; the aged user passes those after it. */
static void
test_aging(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[1];
	const struct csq_event *ev;
	size_t first;

	v[0] = policy("q");
	v[0].aging_every_s = 10;
	v[0].has_aging_max_tier = 1;
	v[0].aging_max_tier = 2;
	set_policies(f, v, 1);
	enq_full(f, "old", "q", 0, NULL, 0, NULL);
	f->now += 5000;
	enq_full(f, "vip", "q", 1, NULL, 0, NULL);
	enq_full(f, "top", "q", 5, NULL, 0, NULL);
	assert_string_equal(line_of(f, "q"), "top,vip,old");
	first = f->nevents;
	pass(f, 5000); /* old has waited 10 s */
	assert_string_equal(events_since(f, first), "rescored");
	ev = event_at(f, first);
	assert_string_equal(ev->user, "old");
	assert_int_equal(ev->reason, CSQ_REASON_AGING);
	assert_int_equal(ev->tier, 1);
	assert_int_equal(ev->position, 2); /* before vip: it came first */
	assert_string_equal(line_of(f, "q"), "top,old,vip");
	first = f->nevents;
	pass(f, 5000); /* vip: 10 s, tier 2 */
	assert_string_equal(events_since(f, first), "rescored");
	assert_string_equal(event_at(f, first)->user, "vip");
	assert_string_equal(line_of(f, "q"), "top,vip,old");
	first = f->nevents;
	pass(f, 5000); /* old: 20 s, tier 2, its last */
	assert_string_equal(events_since(f, first), "rescored");
	assert_string_equal(line_of(f, "q"), "top,old,vip");
	first = f->nevents;
	pass(f, 60000);
	assert_string_equal(events_since(f, first), "");
	assert_int_equal(where_is(f, "top").tier, 5);
	assert_int_equal(where_is(f, "old").tier, 2);

	/* An ENQUEUE that lowers a tier: aging takes it up again. */
	first = f->nevents;
	enq_full(f, "old", "q", 0, NULL, 0, NULL);
	assert_int_equal(event_at(f, first)->reason, CSQ_REASON_ENQUEUE);
	pass(f, 10000);
	assert_int_equal(where_is(f, "old").tier, 1);
}

/* Aging and overflow in the same millisecond: the tier first, carried
 * into the next queue, whose clocks start there. */
static void
test_aging_meets_overflow(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[2];
	const struct csq_event *ev;
	size_t first;

	v[0] = policy("vip");
	v[0].aging_every_s = 30;
	overflow(&v[0], 60, "general");
	v[1] = policy("general");
	v[1].aging_every_s = 100;
	set_policies(f, v, 2);
	enq_full(f, "u", "vip", -1, NULL, 0, NULL);
	first = f->nevents;
	pass(f, 30000);
	assert_string_equal(events_since(f, first), "rescored");
	first = f->nevents;
	pass(f, 30000);
	assert_string_equal(events_since(f, first), "rescored,overflowed");
	ev = event_at(f, first);
	assert_int_equal(ev->tier, 2);
	assert_string_equal(ev->queue, "vip");
	ev = event_at(f, first + 1);
	assert_int_equal(ev->tier, 2);
	assert_string_equal(ev->queue, "general");
	/* general ages it 100 s after it joined, not after its arrival. */
	first = f->nevents;
	pass(f, 99999);
	assert_string_equal(events_since(f, first), "");
	pass(f, 1);
	assert_string_equal(events_since(f, first), "rescored");
	assert_int_equal(where_is(f, "u").tier, 3);
}

/* The clocks start again when a user returns to a line: a decline, a
 * lost servicer. */
static void
test_clocks_restart(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[1];
	int done = -1;

	v[0] = policy("vip");
	overflow(&v[0], 60, "general");
	set_policies(f, v, 1);
	enq_full(f, "u", "vip", -1, NULL, 0, NULL);
	pass(f, 50000);
	agent(f, "s", 1, "vip", 30);
	assert_int_equal(where_is(f, "u").state, CSQ_USER_OFFERED);
	pass(f, 20000); /* 70 s: offered, so no overflow */
	assert_int_equal(csq_decline(f->csq, f->now, "s/0", &done), CSQ_OK);
	check(f);
	assert_int_equal(where_is(f, "u").state, CSQ_USER_WAITING);
	assert_string_equal(where_is(f, "u").queue, "vip");
	csq_pause(f->csq, f->now, "s");
	check(f);
	pass(f, 59999);
	assert_string_equal(where_is(f, "u").queue, "vip");
	pass(f, 1);
	assert_string_equal(where_is(f, "u").queue, "general");

	/* A servicer lost: its user is requeued and waits anew. */
	enq_full(f, "w", "vip", -1, NULL, 0, NULL);
	agent(f, "t", 1, "vip", 0);
	assert_int_equal(where_is(f, "w").state, CSQ_USER_ASSIGNED);
	pass(f, 3599000);
	pass(f, 1000); /* t's TTL: lost, w requeued in vip */
	assert_int_equal(where_is(f, "w").state, CSQ_USER_WAITING);
	assert_string_equal(where_is(f, "w").queue, "vip");
	pass(f, 59999);
	assert_string_equal(where_is(f, "w").queue, "vip");
	pass(f, 1);
	assert_string_equal(where_is(f, "w").queue, "general");
}

/*
 * A reload: a queue that gets clocks starts them from the reload for
 * those already waiting; a queue whose clocks change measures them from
 * when each user joined its line.
 */
static void
test_reload(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[1];
	size_t first;

	enq_full(f, "u", "q", -1, NULL, 0, NULL);
	pass(f, 100000);
	v[0] = policy("q");
	overflow(&v[0], 60, "r");
	set_policies(f, v, 1);
	pass(f, 59999);
	assert_string_equal(where_is(f, "u").queue, "q");
	first = f->nevents;
	pass(f, 1);
	assert_string_equal(events_since(f, first), "overflowed");
	assert_string_equal(where_is(f, "u").queue, "r");
	/* Shortened, a clock already past its new end acts in the reload
	 * itself, not at whatever time the next pass comes. */
	enq_full(f, "v", "q", -1, NULL, 0, NULL);
	pass(f, 40000);
	overflow(&v[0], 30, "r");
	first = f->nevents;
	set_policies(f, v, 1);
	assert_string_equal(events_since(f, first), "overflowed");
	assert_true(csq_next_deadline(f->csq) > f->now);
	assert_string_equal(where_is(f, "v").queue, "r");
	/* Lengthened, a clock runs to its new end. */
	enq_full(f, "w", "q", -1, NULL, 0, NULL);
	pass(f, 20000);
	overflow(&v[0], 80, "r");
	set_policies(f, v, 1);
	pass(f, 59999);
	assert_string_equal(where_is(f, "w").queue, "q");
	pass(f, 1);
	assert_string_equal(where_is(f, "w").queue, "r");
	/* Gone, no clock runs. */
	enq_full(f, "x", "q", -1, NULL, 0, NULL);
	set_policies(f, NULL, 0);
	pass(f, 1000000);
	assert_string_equal(where_is(f, "x").queue, "q");
}

/* A preferring user waits for its servicer alone: others pass it over. */
static void
test_prefer(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t first;

	agent(f, "alice", 1, "q", 0);
	agent(f, "bob", 1, "q", 0);
	enq_full(f, "busy", "q", -1, NULL, 0, &u);
	assert_string_equal(u.servicer, "alice");
	f->now += 1000;
	first = f->nevents;
	enq_full(f, "u", "q", -1, "alice", 120, &u);
	assert_string_equal(events_since(f, first), "queued");
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_string_equal(u.prefer, "alice");
	assert_int_equal(u.prefer_ms, 120000);
	assert_int_equal(u.position, 1);
	/* bob is free, and u is in no one's way. */
	assert_string_equal(line_of(f, "q"), "");
	assert_int_equal(qstats(f, "q").waiting, 1);
	enq_full(f, "later", "q", -1, NULL, 0, &u);
	assert_string_equal(u.servicer, "bob");
	f->now += 5000;
	u = where_is(f, "u");
	assert_int_equal(u.prefer_ms, 115000);
	/* alice frees her room: u is hers. */
	first = f->nevents;
	assert_int_equal(release(f, "alice/0"), 1);
	assert_string_equal(events_since(f, first), "released,matched");
	ev = last_event(f);
	assert_string_equal(ev->user, "u");
	assert_string_equal(ev->servicer, "alice");
	assert_int_equal(ev->waited_ms, 5000);
	u = where_is(f, "u");
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_string_equal(u.prefer, "");
}

/* The window runs out: the user is matched at its arrival order. */
static void
test_prefer_timeout(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t first;

	agent(f, "alice", 1, "q", 0);
	enq_full(f, "a1", "q", -1, NULL, 0, NULL); /* alice busy */
	enq_full(f, "u", "q", -1, "alice", 30, NULL);
	f->now += 1000;
	enq_full(f, "w", "q", -1, NULL, 0, NULL);
	assert_string_equal(line_of(f, "q"), "w");
	first = f->nevents;
	pass(f, 29000);
	assert_string_equal(events_since(f, first), "prefer_ended");
	ev = event_at(f, first);
	assert_string_equal(ev->user, "u");
	assert_string_equal(ev->queue, "q");
	assert_string_equal(ev->servicer, "alice");
	assert_int_equal(ev->reason, CSQ_REASON_TIMEOUT);
	/* In line before w, who came after it. */
	assert_string_equal(line_of(f, "q"), "u,w");
	u = where_is(f, "u");
	assert_int_equal(u.position, 1);
	assert_string_equal(u.prefer, "");
	/* A free room now takes it. */
	agent(f, "bob", 1, "q", 0);
	assert_string_equal(where_is(f, "u").servicer, "bob");

	/* Timed out with a free room waiting: matched at once. */
	enq_full(f, "v", "q", -1, "alice", 10, NULL);
	agent(f, "carol", 1, "q", 0);
	assert_string_equal(where_is(f, "w").servicer, "carol");
	agent(f, "dave", 1, "q", 0);
	assert_string_equal(line_of(f, "q"), "");
	first = f->nevents;
	pass(f, 10000);
	assert_string_equal(events_since(f, first), "prefer_ended,matched");
	assert_string_equal(where_is(f, "v").servicer, "dave");
}

/* The servicer goes: logout, loss, the queue dropped. */
static void
test_prefer_servicer_gone(void **state)
{
	struct fixture *f = *state;
	struct csq_heartbeat_args h;
	struct csq_servicer_info si;
	uint64_t n = 0;
	size_t first;

	agent(f, "alice", 1, "q,r", 0);
	enq_full(f, "a1", "q", -1, NULL, 0, NULL);
	enq_full(f, "u1", "q", -1, "alice", 600, NULL);
	enq_full(f, "u2", "r", -1, "alice", 600, NULL);
	enq_full(f, "u3", "q", -1, "alice", 600, NULL);
	/* Dropping r ends u2's window, reason queues. */
	first = f->nevents;
	memset(&h, 0, sizeof(h));
	h.servicer = "alice";
	h.has_queues = 1;
	h.nqueues = 1;
	h.queues[0] = "q";
	assert_int_equal(csq_heartbeat(f->csq, f->now, &h, &si), CSQ_OK);
	check(f);
	/* Then the record's word of the change (servicer_updated). */
	assert_string_equal(events_since(f, first),
	                    "prefer_ended,servicer_updated");
	assert_int_equal(f->events[first].reason, CSQ_REASON_QUEUES);
	assert_string_equal(f->events[first].user, "u2");
	assert_string_equal(last_event(f)->queues, "q");
	assert_string_equal(line_of(f, "r"), "u2");
	assert_string_equal(where_is(f, "u1").prefer, "alice");
	leave(f, "u2");

	/* Logout: requeued for its room, then every window, then down. */
	first = f->nevents;
	assert_int_equal(csq_logout(f->csq, f->now, "alice", &n), CSQ_OK);
	check(f);
	assert_string_equal(events_since(f, first),
	                    "requeued,prefer_ended,prefer_ended,servicer_down");
	assert_int_equal(event_at(f, first + 1)->reason, CSQ_REASON_LOGOUT);
	assert_string_equal(event_at(f, first + 1)->user, "u1");
	assert_string_equal(event_at(f, first + 2)->user, "u3");
	assert_string_equal(line_of(f, "q"), "a1,u1,u3");

	/* Loss: the users put back are matched once the pass has
	 * settled, best first. */
	agent(f, "bob", 1, "q", 0);
	assert_string_equal(where_is(f, "a1").servicer, "bob");
	leave(f, "u1");
	leave(f, "u3");
	agent(f, "carol", 1, "q", 0);
	agent(f, "erin", 1, "q", 0);
	enq_full(f, "w", "q", -1, "erin", 600, NULL);
	assert_string_equal(where_is(f, "w").servicer, "erin");
	f->now += 1000;
	enq_full(f, "v", "q", -1, "erin", 600, NULL);
	/* carol is free, and v waits for erin. */
	assert_int_equal(where_is(f, "v").state, CSQ_USER_WAITING);
	assert_int_equal(qstats(f, "q").free_rooms, 1);
	f->now += 1000;
	agent(f, "bob", 1, "q", 0);
	agent(f, "carol", 1, "q", 0);
	first = f->nevents;
	pass(f, 3600000 - 2000); /* erin's TTL */
	assert_string_equal(events_since(f, first),
	                    "requeued,prefer_ended,servicer_down,matched");
	assert_int_equal(event_at(f, first + 1)->reason, CSQ_REASON_LOST);
	assert_string_equal(where_is(f, "w").servicer, "carol");
	assert_int_equal(where_is(f, "v").position, 1);
}

/* PREFER that cannot hold a window: no window, no event. */
static void
test_prefer_nobody(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	struct csq_stats st;
	size_t first;

	agent(f, "alice", 1, "other", 0);
	agent(f, "bob", 1, "q", 0);
	first = f->nevents;
	enq_full(f, "u", "q", -1, "ghost", 60, &u);
	assert_string_equal(u.servicer, "bob");
	enq_full(f, "v", "q", -1, "alice", 60, &u); /* not serving q */
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_string_equal(u.prefer, "");
	assert_string_equal(events_since(f, first), "matched,queued");
	assert_string_equal(line_of(f, "q"), "v");

	/* Errors: nothing changes. */
	csq_stats(f->csq, &st);
	assert_int_equal(enq_full(f, "x", "q", -1, "alice", 0, NULL),
	                 CSQ_ERANGE);
	assert_int_equal(enq_full(f, "x", "q", -1, "alice", 3601, NULL),
	                 CSQ_ERANGE);
	assert_int_equal(enq_full(f, "x", "q", -1, "bad id", 5, NULL),
	                 CSQ_ESERVICER);
	assert_int_equal(enq_full(f, "v", "q", 1, "alice", 0, NULL),
	                 CSQ_ERANGE);
	assert_int_equal(where_is(f, "x").state, CSQ_USER_NONE);
	assert_int_equal(where_is(f, "v").tier, 0);
	assert_int_equal(last_event(f)->type, CSQ_EV_QUEUED);
}

/* Re-ENQUEUE: without PREFER the window goes on, PREFER replaces it. */
static void
test_prefer_enqueue_again(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	size_t first;

	agent(f, "alice", 1, "q,r", 0);
	agent(f, "bob", 1, "q", 0);
	enq_full(f, "a1", "q", -1, NULL, 0, NULL); /* alice */
	enq_full(f, "b1", "q", -1, NULL, 0, NULL); /* bob */
	enq_full(f, "u", "q", -1, "alice", 100, NULL);
	f->now += 10000;
	first = f->nevents;
	enq_full(f, "u", "q", -1, NULL, 0, &u);
	assert_string_equal(events_since(f, first), "");
	assert_string_equal(u.prefer, "alice");
	assert_int_equal(u.prefer_ms, 90000);
	/* A new tier, same window. */
	enq_full(f, "u", "q", 2, NULL, 0, &u);
	assert_int_equal(u.prefer_ms, 90000);
	assert_int_equal(u.tier, 2);
	assert_string_equal(events_since(f, first), "rescored");
	/* Another queue alice serves: the window follows. */
	enq_full(f, "u", "r", -1, NULL, 0, &u);
	assert_string_equal(u.queue, "r");
	assert_string_equal(u.prefer, "alice");
	assert_int_equal(u.prefer_ms, 90000);
	/* PREFER again: a new window. */
	enq_full(f, "u", "r", -1, "alice", 300, &u);
	assert_int_equal(u.prefer_ms, 300000);
	/* PREFER bob, who does not serve r: the window closes, silently,
	 * and u waits in r's line: neither tier nor queue changed, so no
	 * rescored either (protocol.md section 4; it was published before
	 * issue 37). */
	first = f->nevents;
	enq_full(f, "u", "r", -1, "bob", 300, &u);
	assert_string_equal(u.prefer, "");
	assert_string_equal(line_of(f, "r"), "u");
	assert_string_equal(events_since(f, first), "");
	/* And from the line into a window, PREFER alone: nothing either. */
	enq_full(f, "u", "r", -1, "alice", 300, &u);
	assert_string_equal(u.prefer, "alice");
	assert_string_equal(events_since(f, first), "");
	/* Back to q, PREFER bob: bob's. */
	enq_full(f, "u", "q", -1, "bob", 300, &u);
	assert_string_equal(u.prefer, "bob");
	assert_string_equal(line_of(f, "r"), "");
	/* A move to a queue bob does not serve ends it too. */
	enq_full(f, "u", "r", -1, NULL, 0, &u);
	assert_string_equal(u.prefer, "");
	/* TTL still counts: it leaves as anyone. */
	enq_full(f, "u", "q", -1, "bob", 300, &u);
	assert_int_equal(leave(f, "u"), 1);
	assert_int_equal(qstats(f, "q").waiting, 0);
	assert_int_equal(last_event(f)->type, CSQ_EV_LEFT);
}

/* With offers, the window ends at the offer: a decline puts the user in
 * its queue's line. */
static void
test_prefer_offer(void **state)
{
	struct fixture *f = *state;
	int done = -1;

	agent(f, "alice", 1, "q", 30);
	enq_full(f, "u", "q", -1, "alice", 300, NULL);
	assert_int_equal(where_is(f, "u").state, CSQ_USER_OFFERED);
	assert_int_equal(where_is(f, "u").eta_ms, 0);
	assert_int_equal(csq_decline(f->csq, f->now, "alice/0", &done), CSQ_OK);
	check(f);
	assert_string_equal(line_of(f, "q"), "u");
	assert_string_equal(where_is(f, "u").prefer, "");
}

/* A paused servicer keeps its windows; RESUME takes the user. */
static void
test_prefer_pause(void **state)
{
	struct fixture *f = *state;

	agent(f, "alice", 1, "q", 0);
	assert_int_equal(csq_pause(f->csq, f->now, "alice"), CSQ_OK);
	enq_full(f, "u", "q", -1, "alice", 300, NULL);
	assert_string_equal(where_is(f, "u").prefer, "alice");
	assert_int_equal(csq_resume(f->csq, f->now, "alice"), CSQ_OK);
	check(f);
	assert_string_equal(where_is(f, "u").servicer, "alice");
}

/* TRANSFER PREFER: handed to a named colleague. */
static void
test_transfer_prefer(void **state)
{
	struct fixture *f = *state;
	struct csq_transfer_args t;
	struct csq_user_info u;
	size_t first;

	agent(f, "alice", 1, "q", 0);
	agent(f, "bob", 1, "q,billing", 0);
	agent(f, "carol", 1, "billing", 0);
	enq_full(f, "x", "q", -1, NULL, 0, NULL);        /* alice */
	enq_full(f, "b1", "q", -1, NULL, 0, NULL);       /* bob */
	enq_full(f, "c1", "billing", -1, NULL, 0, NULL); /* carol */
	memset(&t, 0, sizeof(t));
	t.room = "alice/0";
	t.queue = "billing";
	t.prefer.has_prefer = 1;
	t.prefer.servicer = "bob";
	t.prefer.seconds = 60;
	t.prefer.seconds = CSQ_PREFER_MAX + 1;
	assert_int_equal(csq_transfer(f->csq, f->now, &t, &u), CSQ_ERANGE);
	t.prefer.seconds = 60;
	first = f->nevents;
	assert_int_equal(csq_transfer(f->csq, f->now, &t, &u), CSQ_OK);
	check(f);
	assert_string_equal(events_since(f, first), "released,transferred");
	assert_string_equal(u.queue, "billing");
	assert_string_equal(u.prefer, "bob");
	assert_int_equal(u.position, 1);
	/* carol frees up: she does not take it. */
	assert_int_equal(release(f, "carol/0"), 1);
	assert_int_equal(where_is(f, "x").state, CSQ_USER_WAITING);
	first = f->nevents;
	assert_int_equal(release(f, "bob/0"), 1);
	assert_string_equal(events_since(f, first), "released,matched");
	assert_string_equal(where_is(f, "x").servicer, "bob");
}

/* Restart: windows and clocks run their whole length again. */
static void
test_rearm(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[1];

	v[0] = policy("q");
	overflow(&v[0], 60, "r");
	set_policies(f, v, 1);
	agent(f, "alice", 1, "other", 0);
	enq_full(f, "u", "q", -1, NULL, 0, NULL);
	enq_full(f, "p", "other", -1, NULL, 0, NULL); /* alice busy */
	enq_full(f, "w", "other", -1, "alice", 100, NULL);
	pass(f, 50000);
	csq_rearm_deadlines(f->csq, f->now);
	check(f);
	assert_int_equal(where_is(f, "w").prefer_ms, 100000);
	pass(f, 59999);
	assert_string_equal(where_is(f, "u").queue, "q");
	pass(f, 1);
	assert_string_equal(where_is(f, "u").queue, "r");
}

/* QSTATS: the counters, the outcome ring and its share. */
static void
test_qstats(void **state)
{
	struct fixture *f = *state;
	struct csq_queue_stats st;
	struct csq_policy v[1];
	char uid[16];
	int i;

	st = qstats(f, "q");
	assert_int_equal(st.service_level_pct, -1);
	assert_int_equal(st.eta_ms, -1);
	assert_int_equal(st.service_level_s, 20);
	v[0] = policy("q");
	v[0].service_level_s = 10;
	set_policies(f, v, 1);
	enq_full(f, "early", "q", -1, NULL, 0, NULL);
	f->now += 5000;
	enq_full(f, "u1", "q", -1, NULL, 0, NULL);
	enq_full(f, "u2", "q", -1, NULL, 0, NULL);
	enq_full(f, "u3", "q", -1, "nobody", 10, NULL);
	f->now += 3000;
	st = qstats(f, "q");
	assert_int_equal(st.waiting, 4);
	assert_int_equal(st.oldest_wait_ms, 8000);
	assert_int_equal(st.servicers, 0);
	agent(f, "s", 2, "q", 0); /* early 8 s, u1 3 s */
	st = qstats(f, "q");
	assert_int_equal(st.servicers, 1);
	assert_int_equal(st.free_rooms, 0);
	assert_int_equal(st.matched_total, 2);
	assert_int_equal(st.avg_wait_ms, 5500);
	assert_int_equal(st.oldest_wait_ms, 3000);
	f->now += 10000;
	leave(f, "u2");           /* abandoned, leave */
	pass(f, 3600000 - 13000); /* u3's TTL: abandoned, timeout */
	st = qstats(f, "q");
	assert_int_equal(st.abandoned_leave, 1);
	assert_int_equal(st.abandoned_timeout, 1);
	assert_int_equal(st.abandoned_total, 2);
	assert_int_equal(st.outcomes, 4);
	assert_int_equal(st.outcomes_within, 2);
	assert_int_equal(st.service_level_pct, 50);
	assert_int_equal(st.waiting, 0);

	/* A new target counts the ring again. */
	v[0].service_level_s = 5;
	set_policies(f, v, 1);
	assert_int_equal(qstats(f, "q").service_level_pct, 25);

	/* The ring keeps the last 1000: 1000 matched at once push the
	 * others out. */
	release(f, "s/0");
	release(f, "s/1");
	for (i = 0; i < 1000; i++) {
		snprintf(uid, sizeof(uid), "m%d", i);
		enq_full(f, uid, "q", -1, NULL, 0, NULL);
		assert_int_equal(release(f, "s/0"), 1);
	}
	st = qstats(f, "q");
	assert_int_equal(st.outcomes, 1000);
	assert_int_equal(st.service_level_pct, 100);
	assert_int_equal(st.matched_total, 1002);
	/* One more abandon: 999 of 1000. */
	agent(f, "s", 1, "other", 0);
	enq_full(f, "gone", "q", -1, NULL, 0, NULL);
	enq_full(f, "gone2", "q", -1, NULL, 0, NULL);
	leave(f, "gone2");
	assert_int_equal(qstats(f, "q").service_level_pct, 99);
}

/* The estimate: -1 without servicers or history; then position times
 * the room time over the rooms serving the queue. */
static void
test_eta(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	char uid[16];
	int i;

	enq_full(f, "u", "q", -1, NULL, 0, &u);
	assert_int_equal(u.eta_ms, -1); /* nobody serves q */
	agent(f, "a", 1, "q", 0);       /* takes u */
	agent(f, "b", 1, "q", 0);
	enq_full(f, "v", "q", -1, NULL, 0, &u); /* b */
	enq_full(f, "w", "q", -1, NULL, 0, &u);
	assert_int_equal(u.eta_ms, -1); /* no conversation ended yet */
	assert_int_equal(qstats(f, "q").eta_ms, -1);
	/* Rooms held 60 s (u), 120 s (v), 120 s (w), 120 s (n0): a mean
	 * of 60, then 90, 100 and 105 s. */
	for (i = 0; i < 4; i++) {
		f->now += 60000;
		release(f, i % 2 ? "b/0" : "a/0");
		snprintf(uid, sizeof(uid), "n%d", i);
		enq_full(f, uid, "q", -1, NULL, 0, NULL);
	}
	enq_full(f, "x", "q", -1, NULL, 0, &u);
	assert_int_equal(u.position, 2);
	assert_int_equal(u.eta_ms, 2 * 105000 / 2);
	assert_int_equal(qstats(f, "q").eta_ms, 3 * 105000 / 2);
	f->now += 7000;
	assert_int_equal(where_is(f, "x").eta_ms, 2 * 105000 / 2);
	/* Three rooms more: n3 and x go, y would be first of five. */
	agent(f, "c", 3, "q", 0);
	enq_full(f, "y", "q", -1, NULL, 0, &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_int_equal(qstats(f, "q").eta_ms, 105000 / 5);
	/* A free room: a new arrival is matched at once. (n3 held c/0
	 * for no time: the mean is 84 s now.) */
	release(f, "c/0");
	assert_int_equal(qstats(f, "q").eta_ms, 0);
	/* A paused servicer's rooms do not count. */
	assert_int_equal(csq_pause(f->csq, f->now, "c"), CSQ_OK);
	assert_int_equal(qstats(f, "q").eta_ms, 84000 / 2);
	/* A user of a higher tier is not delayed by arrivals below it,
	 * one of a lower tier is, by those above it. */
	for (i = 0; i < 3; i++) {
		f->now += 10000;
		snprintf(uid, sizeof(uid), "t%d", i);
		enq_full(f, uid, "q", 1, NULL, 0, &u);
	}
	assert_int_equal(u.position, 3);
	assert_int_equal(u.eta_ms, 3 * 84000 / 2);
	enq_full(f, "low", "q", 0, NULL, 0, &u);
	assert_int_equal(u.position, 4);
	/* tier 1 arrives every 10 s, a room frees every 42 s: they
	 * would take it all; the share is held at 0.9. */
	assert_int_equal(u.eta_ms, llround(4 * 42000 / (1 - 0.9)));
}

/* Users who give up shorten the wait of those behind them. */
static void
test_eta_abandons(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;

	agent(f, "a", 1, "q", 0);
	enq_full(f, "u0", "q", -1, NULL, 0, NULL);
	f->now += 100000;
	release(f, "a/0"); /* a room held 100 s */
	enq_full(f, "blocker", "q", -1, NULL, 0, NULL);
	enq_full(f, "w1", "q", -1, NULL, 0, NULL);
	enq_full(f, "w2", "q", -1, NULL, 0, &u);
	assert_int_equal(u.eta_ms, 2 * 100000);
	f->now += 50000;
	leave(f, "w1"); /* one gave up, after 50 s of waiting */
	enq_full(f, "x", "q", -1, NULL, 0, &u);
	assert_int_equal(u.position, 2);
	/* mu 1/100 s, theta 1/50 s: ln(1 + 2) * 50 s + 100 s */
	assert_int_equal(u.eta_ms, llround(log1p(2.0) * 50000 + 100000));
	assert_int_equal(where_is(f, "w2").eta_ms, 100000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_policy_checks, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_max_length_and_strategy, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_overflow, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_overflow_into_free_room, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_overflow_chain, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_overflow_enqueue_again, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_aging, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_aging_meets_overflow, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_clocks_restart, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_prefer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_prefer_timeout, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_prefer_servicer_gone, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_prefer_nobody, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_prefer_enqueue_again, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_prefer_offer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_prefer_pause, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_transfer_prefer, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_rearm, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_qstats, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_eta, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_eta_abandons, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
