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

#include "csq.h"

#define MAX_EVENTS 4096

struct fixture {
	struct csq *csq;
	uint64_t now;
	struct csq_event events[MAX_EVENTS];
	size_t nevents;
};

static void
record(void *arg, const struct csq_event *ev)
{
	struct fixture *f = arg;

	if (f->nevents < MAX_EVENTS)
		f->events[f->nevents++] = *ev;
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct csq_limits l;

	csq_limits_default(&l);
	f->csq = csq_new(&l, 0, record, f);
	f->now = 1700000000000ULL;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	csq_free(f->csq);
	free(f);
	return 0;
}

static void
check(struct fixture *f)
{
	char why[256];

	if (csq_check(f->csq, why, sizeof(why)) != 0)
		fail_msg("invariant broken: %s", why);
}

static void
hb(struct fixture *f, const char *sid, uint32_t capacity, const char *queues,
   struct csq_servicer_info *out)
{
	struct csq_heartbeat_args a;
	struct csq_servicer_info info;
	static char buf[512];
	char *p, *save = NULL;

	memset(&a, 0, sizeof(a));
	a.servicer = sid;
	if (capacity > 0) {
		a.has_capacity = 1;
		a.capacity = capacity;
	}
	if (queues != NULL) {
		snprintf(buf, sizeof(buf), "%s", queues);
		a.has_queues = 1;
		for (p = strtok_r(buf, ",", &save); p != NULL;
		     p = strtok_r(NULL, ",", &save))
			a.queues[a.nqueues++] = p;
	}
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, out ? out : &info),
	                 CSQ_OK);
	check(f);
}

static void
enq(struct fixture *f, const char *uid, const char *queue, int tier,
    struct csq_user_info *out)
{
	struct csq_enqueue_args a;
	struct csq_user_info info;

	memset(&a, 0, sizeof(a));
	a.user = uid;
	if (queue != NULL) {
		a.has_queue = 1;
		a.queue = queue;
	}
	if (tier >= 0) {
		a.has_tier = 1;
		a.tier = (uint32_t)tier;
	}
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, out ? out : &info),
	                 CSQ_OK);
	check(f);
}

static int
release(struct fixture *f, const char *room)
{
	int ended = -1;

	assert_int_equal(csq_release(f->csq, f->now, room, &ended), CSQ_OK);
	check(f);
	return ended;
}

static void
where(struct fixture *f, const char *uid, struct csq_user_info *out)
{
	assert_int_equal(csq_where(f->csq, f->now, uid, out), CSQ_OK);
}

/* The users of q in service order, as "a,b,c". */
static const char *
line_of(struct fixture *f, const char *q)
{
	static char buf[4096];
	struct csq_queue_entry e[CSQ_RANGE_COUNT_MAX];
	size_t n, i, off = 0;

	assert_int_equal(
	    csq_queue_range(f->csq, f->now, q, 0, CSQ_RANGE_COUNT_MAX, e, &n),
	    CSQ_OK);
	buf[0] = '\0';
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s",
		                        i ? "," : "", e[i].user);
	return buf;
}

static const struct csq_event *
last_event(struct fixture *f)
{
	assert_true(f->nevents > 0);
	return &f->events[f->nevents - 1];
}

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
 * random order with random arguments, the clock moving on. After each
 * operation csq_check() must pass, and every event must be a legal move
 * of its user: nobody matched twice, nobody lost without an event.
 */
enum model_state { M_NONE, M_WAITING, M_ASSIGNED };

#define RAND_USERS     60
#define RAND_SERVICERS 8
#define RAND_OPS       20000

struct model {
	enum model_state users[RAND_USERS];
	int errors;
	char why[256];
};

static int
user_index(const char *uid)
{
	return atoi(uid + 1);
}

static void
model_event(void *arg, const struct csq_event *ev)
{
	struct model *m = arg;
	enum model_state *st, from;
	int ok = 1;

	if (ev->user[0] == '\0')
		return;
	st = &m->users[user_index(ev->user)];
	from = *st;
	switch (ev->type) {
	case CSQ_EV_QUEUED:
		ok = from == M_NONE;
		*st = M_WAITING;
		break;
	case CSQ_EV_RESCORED:
		ok = from == M_WAITING;
		break;
	case CSQ_EV_MATCHED:
		ok = from != M_ASSIGNED;
		*st = M_ASSIGNED;
		break;
	case CSQ_EV_LEFT:
		ok = from == M_WAITING;
		*st = M_NONE;
		break;
	case CSQ_EV_RELEASED:
		ok = from == M_ASSIGNED;
		*st = M_NONE;
		break;
	case CSQ_EV_REQUEUED:
		ok = from == M_ASSIGNED;
		*st = M_WAITING;
		break;
	default:
		break;
	}
	if (!ok && m->errors++ == 0)
		snprintf(m->why, sizeof(m->why), "%s of %s in state %d",
		         csq_event_name(ev->type), ev->user, (int)from);
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
test_randomized(void **state)
{
	static const char *queues[] = {"default", "q1", "q2"};
	struct model m;
	struct csq_limits l;
	struct csq *c;
	struct csq_heartbeat_args h;
	struct csq_enqueue_args a;
	struct csq_servicer_info si;
	struct csq_user_info u;
	char sid[16], uid[16], room[32], why[256];
	uint64_t now = 1000000, n64;
	int op, i, known;
	uint32_t j;

	(void)state;
	memset(&m, 0, sizeof(m));
	csq_limits_default(&l);
	l.max_queue_length = 25;
	c = csq_new(&l, 0, model_event, &m);
	for (op = 0; op < RAND_OPS; op++) {
		snprintf(sid, sizeof(sid), "s%u", rnd(RAND_SERVICERS));
		snprintf(uid, sizeof(uid), "u%u", rnd(RAND_USERS));
		switch (rnd(12)) {
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
			assert_int_equal(csq_heartbeat(c, now, &h, &si),
			                 CSQ_OK);
			assert_true(si.active <= CSQ_CAPACITY_MAX);
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
		case 6:
			snprintf(room, sizeof(room), "%s/%u", sid, rnd(4));
			csq_release(c, now, room, &known);
			break;
		case 7:
		case 8:
			memset(&a, 0, sizeof(a));
			a.user = uid;
			a.has_queue = rnd(2);
			a.queue = queues[rnd(3)];
			a.has_tier = rnd(2);
			a.tier = rnd(4);
			a.has_ttl = rnd(2);
			a.ttl_s = rnd(6);
			i = csq_enqueue(c, now, &a, &u);
			assert_true(i == CSQ_OK || i == CSQ_EFULL);
			break;
		case 9:
			csq_touch(c, now, uid, rnd(2) ? -1 : (int64_t)rnd(6),
			          &known);
			break;
		case 10:
			csq_leave(c, now, uid, &known);
			break;
		case 11:
			now += rnd(1500);
			csq_expire(c, now);
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
