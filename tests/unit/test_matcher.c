/*
 * The matcher and the operations of libcsq, driven with a fake clock: every
 * rule of the protocol that does not need a socket, and a randomized run of
 * thousands of operations that checks the invariants after each one and
 * follows every user through the events.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "scale.h"

/* FIFO is exact inside one millisecond: the clock never moves here. */
static void
test_fifo_same_millisecond(void **state)
{
	struct fixture *f = *state;
	struct csq_queue_entry e[100];
	char uid[16];
	size_t n;
	int i, page;

	for (i = 0; i < 200; i++) {
		snprintf(uid, sizeof(uid), "u%d", i);
		enq(f, uid, NULL, -1, NULL);
	}
	for (page = 0; page < 2; page++) {
		assert_int_equal(csq_queue_range(f->csq, f->now, "default",
		                                 (uint64_t)page * 100, 100, e,
		                                 &n),
		                 CSQ_OK);
		assert_int_equal(n, 100);
		for (i = 0; i < 100; i++) {
			snprintf(uid, sizeof(uid), "u%d", page * 100 + i);
			assert_string_equal(e[i].user, uid);
			assert_int_equal(e[i].tier, 0);
			assert_int_equal(e[i].waited_ms, 0);
		}
	}
	assert_int_equal(
	    csq_queue_range(f->csq, f->now, "default", 200, 100, e, &n),
	    CSQ_OK);
	assert_int_equal(n, 0);
	assert_int_equal(csq_queue_range(f->csq, f->now, "default", 0,
	                                 CSQ_RANGE_COUNT_MAX + 1, e, &n),
	                 CSQ_ERANGE);
}

static void
test_tiers_and_rescore_keep_arrival(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;

	enq(f, "a", NULL, 0, NULL);
	f->now += 5;
	enq(f, "b", NULL, 0, NULL);
	enq(f, "c", NULL, 2, &u);
	assert_int_equal(u.position, 1);
	assert_string_equal(line_of(f, "default"), "c,a,b");
	assert_int_equal(last_event(f)->type, CSQ_EV_QUEUED);

	enq(f, "b", NULL, 1, &u); /* a member now: jumps a, not c */
	assert_int_equal(u.position, 2);
	assert_int_equal(last_event(f)->type, CSQ_EV_RESCORED);
	assert_string_equal(line_of(f, "default"), "c,b,a");

	enq(f, "b", NULL, 0, NULL); /* back: its arrival after a is kept */
	assert_string_equal(line_of(f, "default"), "c,a,b");
	where(f, "b", &u);
	assert_int_equal(u.waited_ms, 0);
	where(f, "a", &u);
	assert_int_equal(u.waited_ms, 5);

	/* Enqueue again without options: nothing moves, no event. */
	size_t before = f->nevents;
	enq(f, "a", NULL, -1, &u);
	assert_int_equal(u.position, 2);
	assert_int_equal(f->nevents, before);
}

/* An enqueued user gets the ready servicer idle longest, lowest room. */
static void
test_longest_idle_servicer(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;

	hb(f, "s1", 2, NULL, NULL);
	hb(f, "s2", 2, NULL, NULL);
	enq(f, "u1", NULL, -1, &u);
	assert_string_equal(u.room, "s1/0");
	enq(f, "u2", NULL, -1, &u);
	assert_string_equal(u.room, "s2/0");
	enq(f, "u3", NULL, -1, &u);
	assert_string_equal(u.room, "s1/1");
	assert_int_equal(last_event(f)->type, CSQ_EV_MATCHED);
	assert_int_equal(release(f, "s1/0"), 1);
	enq(f, "u4", NULL, -1, &u); /* s2 assigned before s1's last */
	assert_string_equal(u.room, "s2/1");
	enq(f, "u5", NULL, -1, &u);
	assert_string_equal(u.room, "s1/0");
	enq(f, "u6", NULL, -1, &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(u.position, 1);
	assert_int_equal(release(f, "s1/0"), 1); /* u6 takes it at once */
	where(f, "u6", &u);
	assert_string_equal(u.room, "s1/0");
	assert_int_equal(release(f, "s1/0"), 1);
	assert_int_equal(release(f, "s1/0"), 0);
}

/* A freed room takes the best user across every queue it serves. */
static void
test_best_across_queues(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;

	hb(f, "s", 1, "q1,q2", NULL);
	enq(f, "x", "q1", -1, &u);
	assert_string_equal(u.room, "s/0");
	enq(f, "a", "q1", 0, NULL);
	f->now++;
	enq(f, "b", "q2", 0, NULL);
	enq(f, "c", "q2", 1, NULL);
	release(f, "s/0");
	where(f, "c", &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	release(f, "s/0");
	where(f, "a", &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	release(f, "s/0");
	where(f, "b", &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_string_equal(u.queue, "q2");
}

/* A lost servicer's users go back to their old place, TTL restarted. */
static void
test_loss_requeues_at_old_place(void **state)
{
	struct fixture *f = *state;
	struct csq_heartbeat_args a;
	struct csq_servicer_info si;
	struct csq_user_info u;
	struct csq_stats st;
	size_t first;

	memset(&a, 0, sizeof(a));
	a.servicer = "s";
	a.has_ttl = 1;
	a.ttl_s = 1;
	a.has_capacity = 1;
	a.capacity = 2;
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si), CSQ_OK);
	enq(f, "early", NULL, -1, NULL);
	enq(f, "early2", NULL, -1, NULL);
	f->now += 10;
	enq(f, "later", NULL, -1, NULL);
	enq(f, "vip", NULL, 3, NULL);
	assert_string_equal(line_of(f, "default"), "vip,later");
	assert_int_equal(csq_next_deadline(f->csq), 1700000000000ULL + 1000);

	f->now += 990; /* exactly at the deadline: lost */
	first = f->nevents;
	csq_expire(f->csq, f->now);
	check(f);
	assert_string_equal(line_of(f, "default"), "vip,early,early2,later");
	assert_int_equal(f->events[first].type, CSQ_EV_REQUEUED);
	assert_string_equal(f->events[first].user, "early");
	assert_string_equal(f->events[first].room, "s/0");
	assert_int_equal(f->events[first].reason, CSQ_REASON_LOST);
	assert_int_equal(f->events[first].position, 2);
	assert_int_equal(f->events[first + 1].type, CSQ_EV_REQUEUED);
	assert_int_equal(f->events[first + 2].type, CSQ_EV_SERVICER_DOWN);
	assert_int_equal(f->nevents, first + 3);
	where(f, "early", &u);
	assert_int_equal(u.waited_ms, 1000);
	csq_stats(f->csq, &st);
	assert_int_equal(st.servicers_lost_total, 1);
	assert_int_equal(st.requeued_total, 2);
	assert_int_equal(st.servicers, 0);

	/* Another servicer arrives: the best users first. */
	hb(f, "t", 2, NULL, NULL);
	where(f, "vip", &u);
	assert_string_equal(u.room, "t/0");
	where(f, "early", &u);
	assert_string_equal(u.room, "t/1");
}

/*
 * Deadlines that have passed together (a tie in one millisecond, or a
 * timer that fires late): users time out first, then the servicers go,
 * and only then are their users matched, so that none goes into a room of
 * a servicer that is lost in the same pass; each kind by id, as the Redis
 * engine orders them. Before, with "s1" set first, its user went into
 * "s0", which was lost the next moment: matched and requeued twice, and
 * the Redis engine (which orders by id) did otherwise.
 */
static void
test_lost_together(void **state)
{
	struct fixture *f = *state;
	struct csq_heartbeat_args a;
	struct csq_servicer_info si;
	struct csq_enqueue_args e;
	struct csq_user_info u;
	struct csq_stats st;
	size_t first;

	/* s1 holds u0, and s0, 5 ms younger, holds u2; u1, of a higher
	 * tier, waits and times out in the same millisecond as s0. */
	memset(&a, 0, sizeof(a));
	a.servicer = "s1";
	a.has_ttl = 1;
	a.ttl_s = 1;
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si), CSQ_OK);
	enq(f, "u0", NULL, -1, NULL);
	a.servicer = "s0";
	f->now += 5;
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si), CSQ_OK);
	enq(f, "u2", NULL, -1, NULL);
	memset(&e, 0, sizeof(e));
	e.user = "u1";
	e.has_tier = 1;
	e.tier = 1;
	e.has_ttl = 1;
	e.ttl_s = 1;
	assert_int_equal(csq_enqueue(f->csq, f->now, &e, &u), CSQ_OK);
	assert_int_equal(u.state, CSQ_USER_WAITING);

	f->now += 1000; /* all three have passed */
	first = f->nevents;
	csq_expire(f->csq, f->now);
	check(f);
	assert_int_equal(f->nevents, first + 5);
	assert_int_equal(f->events[first].type, CSQ_EV_LEFT);
	assert_string_equal(f->events[first].user, "u1");
	/* u1 gone first: u0 is back at position 1, not 2. */
	assert_int_equal(f->events[first + 1].type, CSQ_EV_REQUEUED);
	assert_string_equal(f->events[first + 1].user, "u0");
	assert_int_equal(f->events[first + 1].position, 1);
	assert_int_equal(f->events[first + 2].type, CSQ_EV_SERVICER_DOWN);
	assert_string_equal(f->events[first + 2].servicer, "s1");
	assert_int_equal(f->events[first + 3].type, CSQ_EV_REQUEUED);
	assert_string_equal(f->events[first + 3].user, "u2");
	assert_int_equal(f->events[first + 3].position, 2);
	assert_int_equal(f->events[first + 4].type, CSQ_EV_SERVICER_DOWN);
	assert_string_equal(f->events[first + 4].servicer, "s0");

	/* t0 holds v0 and t1, 5 ms younger, is free: both pass together,
	 * and v0 stays in line rather than going into t1's room. */
	a.servicer = "t0";
	a.has_queues = 1;
	a.nqueues = 1;
	a.queues[0] = "other";
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si), CSQ_OK);
	enq(f, "v0", "other", -1, &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	f->now += 5;
	a.servicer = "t1";
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si), CSQ_OK);
	assert_int_equal(si.active, 0);
	f->now += 2000;
	first = f->nevents;
	csq_expire(f->csq, f->now);
	check(f);
	where(f, "v0", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	csq_stats(f->csq, &st);
	assert_int_equal(st.matched_total, 3);
	assert_int_equal(st.requeued_total, 3);
	assert_int_equal(st.servicers_lost_total, 4);
	assert_int_equal(st.servicers, 0);
}

/*
 * One pass that frees rooms at six servicers and one that puts six users
 * back: more than csq_settle keeps inline (CSQ_SETTLE_IN) and more than
 * its first allocation, so the copy out of the inline arrays and the
 * growth after it both run. Broken on purpose while writing it, each
 * caught: the refills' copy out of the inline array one entry short (the
 * second servicer's id garbage: "free room of s1 beside waiting users"),
 * and the users' copy one short (UBSan: a garbage user read).
 */
static void
test_settle_many(void **state)
{
	struct fixture *f = *state;
	struct csq_heartbeat_args a;
	struct csq_user_info u;
	struct csq_stats st;
	char buf[64], id[8];
	int i;

	/* s0..s5, one room each and a wrap-up of 1 s, hold u0..u5. */
	for (i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "s%d", i);
		hb_args(&a, id, 1, NULL, buf, sizeof(buf));
		a.has_ttl = 1;
		a.ttl_s = 600;
		a.has_wrapup = 1;
		a.wrapup_s = 1;
		assert_int_equal(hb_run(f, &a, NULL), CSQ_OK);
		f->now++;
	}
	for (i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "u%d", i);
		enq(f, id, NULL, -1, &u);
		assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	}
	for (i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "w%d", i);
		enq(f, id, NULL, -1, &u);
		assert_int_equal(u.state, CSQ_USER_WAITING);
	}
	for (i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "u%d", i);
		where(f, id, &u);
		assert_int_equal(release(f, u.room), 1); /* wrap-up begins */
	}
	assert_string_equal(line_of(f, "default"), "w0,w1,w2,w3,w4,w5");
	/* The six wrap-ups end in one pass: six servicers to refill. */
	pass(f, 1000);
	assert_string_equal(line_of(f, "default"), "");
	for (i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "w%d", i);
		where(f, id, &u);
		assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	}
	csq_stats(f->csq, &st);
	assert_int_equal(st.matched_total, 12);

	/* b, six rooms, holds x0..x5 and is lost; c has three rooms free:
	 * the six put back in one pass, the three best go to c. */
	hb_args(&a, "b", 6, "other", buf, sizeof(buf));
	a.has_ttl = 1;
	a.ttl_s = 1;
	assert_int_equal(hb_run(f, &a, NULL), CSQ_OK);
	for (i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "x%d", i);
		enq(f, id, "other", -1, &u);
		assert_string_equal(u.servicer, "b");
	}
	hb_args(&a, "c", 3, "other", buf, sizeof(buf));
	a.has_ttl = 1;
	a.ttl_s = 600;
	assert_int_equal(hb_run(f, &a, NULL), CSQ_OK);
	pass(f, 1000);
	for (i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "x%d", i);
		where(f, id, &u);
		assert_int_equal(u.state, CSQ_USER_ASSIGNED);
		assert_string_equal(u.servicer, "c");
	}
	assert_string_equal(line_of(f, "other"), "x3,x4,x5");
}

/* Events of a loss come in causal order, then the new matches. */
static void
test_logout_then_matches(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	uint64_t n;
	size_t first;

	hb(f, "s", 1, NULL, NULL);
	enq(f, "a", NULL, -1, NULL);
	hb(f, "t", 1, "other", NULL);
	hb(f, "r", 1, "default", NULL);
	enq(f, "b", NULL, -1, &u);
	assert_string_equal(u.room, "r/0");
	release(f, "r/0");
	first = f->nevents;
	assert_int_equal(csq_logout(f->csq, f->now, "s", &n), CSQ_OK);
	check(f);
	assert_int_equal(n, 1);
	assert_int_equal(f->events[first].type, CSQ_EV_REQUEUED);
	assert_int_equal(f->events[first].reason, CSQ_REASON_LOGOUT);
	assert_int_equal(f->events[first + 1].type, CSQ_EV_SERVICER_DOWN);
	assert_int_equal(f->events[first + 2].type, CSQ_EV_MATCHED);
	assert_string_equal(f->events[first + 2].room, "r/0");
	assert_int_equal(csq_logout(f->csq, f->now, "s", &n), CSQ_OK);
	assert_int_equal(n, 0);
}

static void
test_user_ttl_and_touch(void **state)
{
	struct fixture *f = *state;
	struct csq_enqueue_args a;
	struct csq_user_info u;
	int known;

	memset(&a, 0, sizeof(a));
	a.user = "u";
	a.has_ttl = 1;
	a.ttl_s = 2;
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_OK);
	a.user = "forever";
	a.ttl_s = 0;
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_OK);
	f->now += 1500;
	assert_int_equal(csq_touch(f->csq, f->now, "u", -1, &known), CSQ_OK);
	assert_int_equal(known, 1);
	f->now += 1500;
	csq_expire(f->csq, f->now);
	where(f, "u", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	f->now += 500;
	csq_expire(f->csq, f->now);
	check(f);
	where(f, "u", &u);
	assert_int_equal(u.state, CSQ_USER_NONE);
	assert_int_equal(last_event(f)->type, CSQ_EV_LEFT);
	assert_int_equal(last_event(f)->reason, CSQ_REASON_TIMEOUT);
	f->now += 1000ULL * 86400 * 30;
	csq_expire(f->csq, f->now);
	where(f, "forever", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(csq_touch(f->csq, f->now, "nobody", 5, &known),
	                 CSQ_OK);
	assert_int_equal(known, 0);
	assert_int_equal(csq_next_deadline(f->csq), UINT64_MAX);
}

/* Lowering the capacity cuts no conversation and refills nothing. */
static void
test_capacity_lowered(void **state)
{
	struct fixture *f = *state;
	struct csq_servicer_info si;
	struct csq_user_info u;
	int ended;

	hb(f, "s", 3, NULL, NULL);
	enq(f, "a", NULL, -1, NULL);
	enq(f, "b", NULL, -1, NULL);
	enq(f, "c", NULL, -1, NULL);
	enq(f, "w", NULL, -1, NULL);
	hb(f, "s", 1, NULL, &si);
	assert_int_equal(si.active, 3);
	assert_int_equal(si.capacity, 1);
	assert_int_equal(release(f, "s/2"), 1);
	assert_int_equal(csq_release(f->csq, f->now, "s/2", &ended),
	                 CSQ_ENOTFOUND);
	assert_int_equal(release(f, "s/0"), 1);
	where(f, "w", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(release(f, "s/1"), 1);
	assert_int_equal(csq_release(f->csq, f->now, "s/1", &ended),
	                 CSQ_ENOTFOUND);
	where(f, "w", &u);
	assert_string_equal(u.room, "s/0");
}

static void
test_pause_resume(void **state)
{
	struct fixture *f = *state;
	struct csq_servicer_info si;
	struct csq_user_info u;
	size_t before;

	hb(f, "s", 1, NULL, NULL);
	assert_int_equal(csq_pause(f->csq, f->now, "s"), CSQ_OK);
	assert_int_equal(last_event(f)->type, CSQ_EV_SERVICER_PAUSED);
	before = f->nevents;
	assert_int_equal(csq_pause(f->csq, f->now, "s"), CSQ_OK);
	assert_int_equal(f->nevents, before); /* no change, no event */
	enq(f, "u", NULL, -1, &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	hb(f, "s", 0, NULL, &si); /* a heartbeat does not resume */
	assert_int_equal(si.status, CSQ_SERVICER_PAUSED);
	assert_int_equal(csq_resume(f->csq, f->now, "s"), CSQ_OK);
	check(f);
	where(f, "u", &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_int_equal(csq_pause(f->csq, f->now, "nobody"), CSQ_ENOTFOUND);
	assert_int_equal(csq_resume(f->csq, f->now, "bad id"), CSQ_ESERVICER);
}

static void
test_full_and_move(void **state)
{
	struct fixture *f = *state;
	struct csq_limits l = *csq_get_limits(f->csq);
	struct csq_enqueue_args a;
	struct csq_user_info u;

	l.max_queue_length = 2;
	csq_set_limits(f->csq, &l);
	enq(f, "a", "small", -1, NULL);
	enq(f, "b", "small", -1, NULL);
	memset(&a, 0, sizeof(a));
	a.user = "c";
	a.has_queue = 1;
	a.queue = "small";
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_EFULL);
	check(f);
	where(f, "c", &u);
	assert_int_equal(u.state, CSQ_USER_NONE);
	enq(f, "c", "big", -1, NULL);
	f->now += 7;
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_EFULL);
	where(f, "c", &u);
	assert_string_equal(u.queue, "big"); /* unchanged */
	enq(f, "a", "big", -1, &u);          /* moves, keeps arrival */
	assert_string_equal(u.queue, "big");
	assert_int_equal(u.position, 1);
	assert_int_equal(last_event(f)->type, CSQ_EV_RESCORED);
	assert_string_equal(last_event(f)->from_queue, "small");
	assert_string_equal(line_of(f, "small"), "b");
	/* A move to a queue with a free room is a match. */
	hb(f, "s", 1, "third", NULL);
	enq(f, "b", "third", -1, &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_int_equal(last_event(f)->type, CSQ_EV_MATCHED);
	/* ... which the queue it left is told of too. */
	assert_string_equal(last_event(f)->queue, "third");
	assert_string_equal(last_event(f)->from_queue, "small");
	/* ... and says it was a re-ENQUEUE's move, not an overflow's. */
	assert_int_equal(last_event(f)->reason, CSQ_REASON_ENQUEUE);
	assert_string_equal(line_of(f, "small"), "");
	/* An assigned user gets its assignment back; nothing changes. */
	enq(f, "b", "big", 5, &u);
	assert_string_equal(u.room, "s/0");
	assert_string_equal(u.queue, "third");
}

static void
test_bad_input_changes_nothing(void **state)
{
	struct fixture *f = *state;
	struct csq_heartbeat_args h;
	struct csq_enqueue_args a;
	struct csq_servicer_info si;
	struct csq_user_info u;
	struct csq_stats before, after;
	int known;

	hb(f, "s", 1, NULL, NULL);
	enq(f, "x", NULL, -1, NULL);
	csq_stats(f->csq, &before);
	memset(&a, 0, sizeof(a));
	a.user = "bad user";
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_EUSER);
	a.user = "";
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_EUSER);
	a.user = "ok";
	a.has_tier = 1;
	a.tier = 10;
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_ERANGE);
	a.has_tier = 0;
	a.has_ttl = 1;
	a.ttl_s = CSQ_TTL_MAX + 1;
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_ERANGE);
	a.has_ttl = 0;
	a.has_queue = 1;
	a.queue = "q/1";
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_EQUEUE);
	memset(&h, 0, sizeof(h));
	h.servicer = "s";
	h.has_capacity = 1;
	h.capacity = 0;
	assert_int_equal(csq_heartbeat(f->csq, f->now, &h, &si), CSQ_ERANGE);
	h.capacity = CSQ_CAPACITY_MAX + 1;
	assert_int_equal(csq_heartbeat(f->csq, f->now, &h, &si), CSQ_ERANGE);
	h.has_capacity = 0;
	h.has_queues = 1;
	h.nqueues = 2;
	h.queues[0] = "fine";
	h.queues[1] = "not fine";
	assert_int_equal(csq_heartbeat(f->csq, f->now, &h, &si), CSQ_EQUEUE);
	assert_int_equal(csq_release(f->csq, f->now, "s/01", &known),
	                 CSQ_EROOM);
	assert_int_equal(csq_release(f->csq, f->now, "s", &known), CSQ_EROOM);
	assert_int_equal(csq_release(f->csq, f->now, "s/1", &known),
	                 CSQ_ENOTFOUND);
	assert_int_equal(csq_release(f->csq, f->now, "nobody/0", &known),
	                 CSQ_ENOTFOUND);
	assert_int_equal(
	    csq_touch(f->csq, f->now, "x", CSQ_TTL_MAX + 1, &known),
	    CSQ_ERANGE);
	check(f);
	csq_stats(f->csq, &after);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_string_equal(line_of(f, "fine"), "");
}

/* Duplicated queue names collapse; queues go when nothing uses them. */
static void
test_queue_lifetime(void **state)
{
	struct fixture *f = *state;
	uint64_t len;

	hb(f, "s", 1, "a,b,a", NULL);
	hb(f, "s", 1, "c", NULL);
	enq(f, "u", "c", -1, NULL); /* matched at once */
	assert_int_equal(csq_qlen(f->csq, "c", &len), CSQ_OK);
	assert_int_equal(len, 0);
	assert_int_equal(csq_qlen(f->csq, "never", &len), CSQ_OK);
	assert_int_equal(len, 0);
	check(f);
}

/*
 * The randomized run: a few servicers and many users, every operation in
 * random order with random arguments (offers, wrap-ups, transfers, a
 * change of strategy, queue policies with overflow and aging, and
 * preferred servicers among them), the clock moving on so that TTLs,
 * offers, wrap-ups, retry windows, overflows, aging steps and preference
 * windows run out in the middle. After each operation
 * csq_check() must pass, and every event must be a legal move of its user
 * or room, with the next id: nobody matched twice, nobody lost without an
 * event, no room in two states.
 */
enum model_state {
	M_NONE,
	M_WAITING,
	M_ASSIGNED,
	M_OFFERED,
	M_MOVING, /* released by a transfer, its transferred to come */
};

#define RAND_USERS     60
#define RAND_SERVICERS 8
#define RAND_ROOMS     4     /* rooms a servicer may have: capacity 1..3 */
#define RAND_OPS       40000 /* scaled (scale.h), to no fewer than: */
#define RAND_OPS_MIN   4000
#define RAND_SEEN      20 /* events of each kind in RAND_OPS operations */

struct model {
	enum model_state users[RAND_USERS];
	int wrapup[RAND_SERVICERS][RAND_ROOMS]; /* room in wrap-up */
	uint64_t last_id;
	unsigned seen[CSQ_EV_TYPES]; /* events of each type */
	int errors;
	char why[256];
};

static int
user_index(const char *uid)
{
	return atoi(uid + 1);
}

/* A servicer's or a room's indexes, from "s3" or "s3/2". */
static int *
model_room(struct model *m, const struct csq_event *ev)
{
	const char *slash = strchr(ev->room, '/');

	return &m->wrapup[atoi(ev->servicer + 1)][slash ? atoi(slash + 1) : 0];
}

/* The servicer side: wrap-ups begin and end once, and go with it. */
static int
model_servicer_event(struct model *m, const struct csq_event *ev)
{
	int *w, i;

	switch (ev->type) {
	case CSQ_EV_WRAPUP:
		w = model_room(m, ev);
		if (*w)
			return 0;
		*w = 1;
		return 1;
	case CSQ_EV_READY:
		w = model_room(m, ev);
		if (!*w)
			return 0;
		*w = 0;
		return 1;
	case CSQ_EV_SERVICER_DOWN:
		for (i = 0; i < RAND_ROOMS; i++)
			m->wrapup[atoi(ev->servicer + 1)][i] = 0;
		return 1;
	case CSQ_EV_OFFERED:
	case CSQ_EV_MATCHED:
		return !*model_room(m, ev); /* never into a wrap-up */
	default:
		return 1;
	}
}

static int
model_user_event(struct model *m, const struct csq_event *ev)
{
	enum model_state *st = &m->users[user_index(ev->user)], from = *st;
	int ok = 1;

	switch (ev->type) {
	case CSQ_EV_QUEUED:
		ok = from == M_NONE;
		*st = M_WAITING;
		break;
	case CSQ_EV_RESCORED:
	case CSQ_EV_OVERFLOWED:
	case CSQ_EV_PREFER_ENDED:
		ok = from == M_WAITING;
		break;
	case CSQ_EV_OFFERED:
		ok = from == M_NONE || from == M_WAITING;
		*st = M_OFFERED;
		break;
	case CSQ_EV_MATCHED:
		/* After an offer exactly when it carries offered_ms. */
		ok = ev->has_offered_ms ? from == M_OFFERED
		                        : from == M_NONE || from == M_WAITING;
		*st = M_ASSIGNED;
		break;
	case CSQ_EV_DECLINED:
		ok = from == M_OFFERED && ev->position > 0;
		*st = M_WAITING;
		break;
	case CSQ_EV_LEFT:
		/* An offered user's left names its room. */
		ok = (from == M_WAITING && ev->servicer[0] == '\0') ||
		     (from == M_OFFERED && ev->servicer[0] != '\0');
		*st = M_NONE;
		break;
	case CSQ_EV_RELEASED:
		ok = from == M_ASSIGNED;
		*st = ev->reason == CSQ_REASON_BY_TRANSFER ? M_MOVING : M_NONE;
		break;
	case CSQ_EV_TRANSFERRED:
		ok = from == M_MOVING && ev->position > 0;
		*st = M_WAITING;
		break;
	case CSQ_EV_REQUEUED:
		ok = (from == M_ASSIGNED || from == M_OFFERED) &&
		     ev->position > 0;
		*st = M_WAITING;
		break;
	default:
		break;
	}
	if (!ok && m->errors++ == 0)
		snprintf(m->why, sizeof(m->why), "%s of %s in state %d",
		         csq_event_name(ev->type), ev->user, (int)from);
	return ok;
}

static void
model_event(void *arg, const struct csq_event *ev)
{
	struct model *m = arg;

	if (ev->id != m->last_id + 1 && m->errors++ == 0)
		snprintf(m->why, sizeof(m->why), "%s has id %llu after %llu",
		         csq_event_name(ev->type), (unsigned long long)ev->id,
		         (unsigned long long)m->last_id);
	m->last_id = ev->id;
	m->seen[ev->type]++;
	if (ev->servicer[0] != '\0' && !model_servicer_event(m, ev) &&
	    m->errors++ == 0)
		snprintf(m->why, sizeof(m->why), "%s of room %s",
		         csq_event_name(ev->type), ev->room);
	if (ev->user[0] != '\0')
		model_user_event(m, ev);
	/* A user in a transfer is placed within its operation. */
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void
random_heartbeat(struct csq *c, uint64_t now, const char *sid)
{
	static const char *queues[] = {"default", "q1", "q2"};
	struct csq_heartbeat_args h;
	struct csq_servicer_info si;
	uint32_t j;

	memset(&h, 0, sizeof(h));
	h.servicer = sid;
	h.has_capacity = rnd(2);
	h.capacity = 1 + rnd(RAND_ROOMS - 1);
	h.has_ttl = 1;
	h.ttl_s = 1 + rnd(5);
	if (rnd(2)) {
		h.has_queues = 1;
		h.nqueues = 1 + rnd(3);
		for (j = 0; j < h.nqueues; j++)
			h.queues[j] = queues[rnd(3)];
	}
	h.has_offer = rnd(4) == 0;
	h.offer_s = rnd(3); /* 0: assigned at once */
	h.has_wrapup = rnd(4) == 0;
	h.wrapup_s = rnd(3);
	assert_int_equal(csq_heartbeat(c, now, &h, &si), CSQ_OK);
	assert_true(si.active <= CSQ_CAPACITY_MAX);
}

/*
 * Policies over the three queues: overflow only along default -> q1 ->
 * q2 (no cycle), aging, lengths and strategies, each at random.
 */
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
			v[n].overflow_after_s = 1 + rnd(3);
			strcpy(v[n].overflow_to, queues[i + 1]);
		}
		if (rnd(2)) {
			v[n].aging_every_s = 1 + rnd(3);
			v[n].has_aging_max_tier = rnd(2);
			v[n].aging_max_tier = rnd(4);
		}
		v[n].has_max_length = rnd(3) == 0;
		v[n].max_length = 1 + rnd(10);
		v[n].has_strategy = rnd(2);
		v[n].strategy = rnd(2) ? CSQ_STRATEGY_LEAST_BUSY
		                       : CSQ_STRATEGY_LONGEST_IDLE;
		v[n].service_level_s = rnd(3);
		n++;
	}
	assert_int_equal(csq_set_policies(c, now, v, n), CSQ_OK);
}

static void
random_prefer(struct csq_prefer_args *p)
{
	static char sid[16];

	memset(p, 0, sizeof(*p));
	if (rnd(3) != 0)
		return;
	snprintf(sid, sizeof(sid), "s%u", rnd(RAND_SERVICERS));
	p->has_prefer = 1;
	p->servicer = sid;
	p->seconds = 1 + rnd(4);
}

static void
test_randomized(void **state)
{
	static const char *queues[] = {"default", "q1", "q2"};
	static struct model m;
	struct csq_limits l;
	struct csq *c;
	struct csq_enqueue_args a;
	struct csq_transfer_args t;
	struct csq_user_info u;
	char sid[16], uid[16], room[32], why[256];
	uint64_t now = 1000000, n64;
	int op, i, known, st;
	int ops = (int)scale_steps(RAND_OPS, RAND_OPS_MIN);
	unsigned seen_min = RAND_SEEN * (unsigned)ops / RAND_OPS;

	(void)state;
	memset(&m, 0, sizeof(m));
	csq_limits_default(&l);
	l.max_queue_length = 25;
	l.offer_max_missed = 2;
	l.offer_retry_s = 1;
	c = csq_new(&l, 0, model_event, &m);
	for (op = 0; op < ops; op++) {
		snprintf(sid, sizeof(sid), "s%u", rnd(RAND_SERVICERS));
		snprintf(uid, sizeof(uid), "u%u", rnd(RAND_USERS));
		snprintf(room, sizeof(room), "%s/%u", sid, rnd(RAND_ROOMS));
		switch (rnd(17)) {
		case 0:
		case 1:
			random_heartbeat(c, now, sid);
			break;
		case 2:
			csq_pause(c, now, sid);
			break;
		case 3:
			csq_resume(c, now, sid);
			break;
		case 4:
			if (rnd(4) == 0)
				csq_logout(c, now, sid, &n64);
			break;
		case 5:
			csq_release(c, now, room, &known);
			break;
		case 6:
		case 7:
			memset(&a, 0, sizeof(a));
			a.user = uid;
			a.has_queue = rnd(2);
			a.queue = queues[rnd(3)];
			a.has_tier = rnd(2);
			a.tier = rnd(4);
			a.has_ttl = rnd(2);
			a.ttl_s = rnd(6);
			random_prefer(&a.prefer);
			st = csq_enqueue(c, now, &a, &u);
			assert_true(st == CSQ_OK || st == CSQ_EFULL);
			break;
		case 8:
			csq_touch(c, now, uid, rnd(2) ? -1 : (int64_t)rnd(6),
			          &known);
			break;
		case 9:
			csq_leave(c, now, uid, &known);
			break;
		case 10:
		case 11:
			now += rnd(1500);
			csq_expire(c, now);
			break;
		case 12:
			csq_accept(c, now, room, &known);
			break;
		case 13:
			csq_decline(c, now, room, &known);
			break;
		case 14:
			csq_ready(c, now, room, &known);
			break;
		case 15:
			memset(&t, 0, sizeof(t));
			t.room = room;
			t.queue = queues[rnd(3)];
			random_prefer(&t.prefer);
			st = csq_transfer(c, now, &t, &u);
			assert_true(st == CSQ_OK || st == CSQ_ENOCONV ||
			            st == CSQ_ENOTFOUND);
			break;
		case 16:
			if (rnd(20) == 0) {
				l.strategy =
				    l.strategy == CSQ_STRATEGY_LONGEST_IDLE
				        ? CSQ_STRATEGY_LEAST_BUSY
				        : CSQ_STRATEGY_LONGEST_IDLE;
				csq_set_limits(c, &l);
			}
			if (rnd(10) == 0)
				random_policies(c, now);
			break;
		}
		if (csq_check(c, why, sizeof(why)) != 0)
			fail_msg("after operation %d: %s", op, why);
		if (m.errors)
			fail_msg("after operation %d: %s", op, m.why);
	}
	/* The events told the whole story: the model agrees with WHERE. */
	for (i = 0; i < RAND_USERS; i++) {
		snprintf(uid, sizeof(uid), "u%d", i);
		assert_int_equal(csq_where(c, now, uid, &u), CSQ_OK);
		assert_int_equal((int)u.state, (int)m.users[i]);
	}
	assert_int_equal(csq_last_event_id(c), m.last_id);
	/* And the run made every kind of event it claims to test. */
	for (i = 0; i < CSQ_EV_TYPES; i++)
		if (i != CSQ_EV_RELAXED && /* test_skills.c's run makes them */
		    i != CSQ_EV_OPENED && i != CSQ_EV_CLOSED && /* test_hours */
		    m.seen[i] < seen_min)
			fail_msg("only %u %s events", m.seen[i],
			         csq_event_name((enum csq_event_type)i));
	csq_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_fifo_same_millisecond, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_tiers_and_rescore_keep_arrival,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_longest_idle_servicer, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_best_across_queues, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_lost_together, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_settle_many, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_loss_requeues_at_old_place,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_logout_then_matches, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_user_ttl_and_touch, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_capacity_lowered, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_pause_resume, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_full_and_move, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_bad_input_changes_nothing,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_queue_lifetime, setup,
	                                    teardown),
	    cmocka_unit_test(test_randomized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
