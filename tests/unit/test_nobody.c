/*
 * Nobody there (protocol.md 3c), with the fake clock: the policy's check,
 * an arrival refused, sent to a fallback or let wait while no servicer
 * serves the queue (or none is ready), the grace after which the users
 * waiting move or leave, a reload, a restart, and a randomized run that
 * checks every invariant (csq_check: the spell of nobody and its grace
 * are what the counters say) and that no operation leaves a deadline due.
 * How it tries to break it: servicers that come back within the grace,
 * pause and resume with counts = "ready", a fallback chain, a refused
 * ENQUEUE, re-ENQUEUE and TRANSFER that must change nothing.
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

static struct csq_policy
nobody(const char *name, uint32_t when, const char *fallback, uint32_t at,
       uint32_t grace, const char *move_to)
{
	struct csq_policy p;

	memset(&p, 0, sizeof(p));
	snprintf(p.name, sizeof(p.name), "%s", name);
	p.nobody.on = 1;
	p.nobody.when_nobody = when;
	p.nobody.at_nobody = at;
	p.nobody.grace_s = grace;
	snprintf(p.nobody.fallback, sizeof(p.nobody.fallback), "%s",
	         fallback != NULL ? fallback : "");
	snprintf(p.nobody.move_to, sizeof(p.nobody.move_to), "%s",
	         move_to != NULL ? move_to : "");
	return p;
}

/* pass, and then no deadline is left due. */
static void
pass_all(struct fixture *f, uint64_t ms)
{
	pass(f, ms);
	assert_true(csq_next_deadline(f->csq) > f->now);
}

/* An agent with a long TTL serving queues, capacity cap. */
static void
agent(struct fixture *f, const char *sid, uint32_t cap, const char *queues)
{
	struct csq_heartbeat_args a;
	char buf[128];

	hb_args(&a, sid, cap, queues, buf, sizeof(buf));
	a.has_capacity = 1; /* cap 0 too */
	a.has_ttl = 1;
	a.ttl_s = CSQ_TTL_MAX;
	assert_int_equal(hb_run(f, &a, NULL), CSQ_OK);
}

/* ENQUEUE with no TTL; the status. */
static enum csq_status
enq_st(struct fixture *f, const char *uid, const char *queue,
       struct csq_user_info *out)
{
	struct csq_enqueue_args a;

	enq_args(&a, uid, queue, -1);
	a.has_ttl = 1;
	return enq_run(f, &a, out);
}

static int64_t
nobody_ms(struct fixture *f, const char *q)
{
	struct csq_queue_stats st;

	assert_int_equal(csq_queue_stats(f->csq, f->now, q, &st), CSQ_OK);
	return st.nobody_ms;
}

static void
test_check(void **state)
{
	struct csq_limits l;
	struct csq_policy v[2];
	size_t bad;

	(void)state;
	csq_limits_default(&l);
#define REFUSED(e) assert_int_equal(csq_policies_check(v, 1, &l, &bad), e)
	v[0] = nobody("q", CSQ_NOBODY_REFUSE, NULL, CSQ_NOBODY_KEEP, 0, NULL);
	REFUSED(CSQ_POLICY_OK);
	v[0] = nobody("q", CSQ_NOBODY_FALLBACK, NULL, 0, 0, NULL);
	REFUSED(CSQ_POLICY_NOBODY); /* fallback, no queue */
	v[0] = nobody("q", CSQ_NOBODY_FALLBACK, "q", 0, 0, NULL);
	REFUSED(CSQ_POLICY_NOBODY); /* itself */
	v[0] = nobody("q", CSQ_NOBODY_WAIT, "r", 0, 0, NULL);
	REFUSED(CSQ_POLICY_NOBODY); /* a fallback without "fallback" */
	v[0] = nobody("q", 0, NULL, CSQ_NOBODY_MOVE, 0, "r");
	REFUSED(CSQ_POLICY_NOBODY); /* no grace */
	v[0] = nobody("q", 0, NULL, CSQ_NOBODY_MOVE, 10, NULL);
	REFUSED(CSQ_POLICY_NOBODY); /* move, nowhere */
	v[0] = nobody("q", 0, NULL, CSQ_NOBODY_RELEASE, 10, "r");
	REFUSED(CSQ_POLICY_NOBODY); /* move_to without "move" */
	v[0] = nobody("q", 0, NULL, CSQ_NOBODY_KEEP, 10, NULL);
	REFUSED(CSQ_POLICY_NOBODY); /* a grace for nothing */
	v[0] = nobody("q", 0, NULL, CSQ_NOBODY_RELEASE, 86401, NULL);
	REFUSED(CSQ_POLICY_NOBODY);
	v[0] = nobody("q", 3, NULL, 0, 0, NULL);
	REFUSED(CSQ_POLICY_NOBODY);
	v[0] = nobody("q", 0, NULL, 0, 0, NULL);
	v[0].nobody.counts = 2;
	REFUSED(CSQ_POLICY_NOBODY);
	v[0].nobody.on = 0; /* off, with a value left: not a policy's */
	REFUSED(CSQ_POLICY_NOBODY);
	v[0] = nobody("q", 0, NULL, 0, 0, NULL);
	memset(v[0].nobody.fallback, 'a', sizeof(v[0].nobody.fallback));
	v[0].nobody.when_nobody = CSQ_NOBODY_FALLBACK;
	REFUSED(CSQ_POLICY_NOBODY); /* no terminating NUL */
	/* A chain of fallbacks that comes back. */
	v[0] = nobody("a", CSQ_NOBODY_FALLBACK, "b", 0, 0, NULL);
	v[1] = nobody("b", CSQ_NOBODY_FALLBACK, "a", 0, 0, NULL);
	assert_int_equal(csq_policies_check(v, 2, &l, &bad),
	                 CSQ_POLICY_NOBODY_CYCLE);
	v[1].nobody.when_nobody = CSQ_NOBODY_REFUSE;
	v[1].nobody.fallback[0] = '\0';
	assert_int_equal(csq_policies_check(v, 2, &l, &bad), CSQ_POLICY_OK);
#undef REFUSED
}

/* An arrival while nobody serves the queue: refused (nothing changes),
 * sent on along the fallbacks, or let wait; a servicer logged in, even
 * paused, is somebody unless the policy counts the ready only. */
static void
test_arrivals(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[3];
	struct csq_user_info u;
	size_t from;
	uint64_t n64;

	v[0] = nobody("a", CSQ_NOBODY_FALLBACK, "b", 0, 0, NULL);
	v[1] = nobody("b", CSQ_NOBODY_FALLBACK, "c", 0, 0, NULL);
	v[2] = nobody("c", CSQ_NOBODY_REFUSE, NULL, 0, 0, NULL);
	v[2].nobody.counts = CSQ_NOBODY_READY;
	set_policies(f, v, 3);
	from = f->nevents;
	assert_int_equal(enq_st(f, "u1", "a", NULL), CSQ_ENOBODY);
	assert_int_equal(enq_st(f, "u1", "c", NULL), CSQ_ENOBODY);
	assert_string_equal(events_since(f, from), "");
	assert_int_equal(csq_where(f->csq, f->now, "u1", &u), CSQ_OK);
	assert_int_equal(u.state, CSQ_USER_NONE);
	/* c has a servicer, paused: not ready, so still nobody for c. */
	agent(f, "s", 1, "c");
	assert_int_equal(csq_pause(f->csq, f->now, "s"), CSQ_OK);
	check(f);
	assert_int_equal(enq_st(f, "u1", "a", NULL), CSQ_ENOBODY);
	assert_int_equal(csq_resume(f->csq, f->now, "s"), CSQ_OK);
	check(f);
	/* a and b have nobody: u1 goes on to c, where s takes it. */
	assert_int_equal(enq_st(f, "u1", "a", &u), CSQ_OK);
	assert_string_equal(u.queue, "c");
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	/* b gets somebody (logged in, paused): u2 waits in b. */
	agent(f, "t", 1, "b");
	assert_int_equal(csq_pause(f->csq, f->now, "t"), CSQ_OK);
	check(f);
	assert_int_equal(enq_st(f, "u2", "a", &u), CSQ_OK);
	assert_string_equal(u.queue, "b");
	/* c has s (ready, busy): u2 may move there by ENQUEUE. */
	assert_int_equal(enq_st(f, "u2", "c", &u), CSQ_OK);
	assert_string_equal(u.queue, "c");
	assert_int_equal(csq_logout(f->csq, f->now, "s", &n64), CSQ_OK);
	check(f);
	assert_int_equal(n64, 1); /* u1 back in c's line */
	/* Nobody in c now: a move by ENQUEUE into it changes nothing... */
	assert_int_equal(enq_st(f, "u5", "b", &u), CSQ_OK);
	from = f->nevents;
	assert_int_equal(enq_st(f, "u5", "c", &u), CSQ_ENOBODY);
	assert_string_equal(events_since(f, from), "");
	where(f, "u5", &u);
	assert_string_equal(u.queue, "b");
	/* ... nor does a TRANSFER into one: the conversation goes on. */
	agent(f, "x", 1, "x");
	assert_int_equal(enq_st(f, "u3", "x", &u), CSQ_OK);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	{
		struct csq_transfer_args t;

		memset(&t, 0, sizeof(t));
		t.room = "x/0";
		t.queue = "c";
		from = f->nevents;
		assert_int_equal(csq_transfer(f->csq, f->now, &t, &u),
		                 CSQ_ENOBODY);
		check(f);
		assert_string_equal(events_since(f, from), "");
		t.queue = "a"; /* a: nobody, its fallback b has t */
		assert_int_equal(csq_transfer(f->csq, f->now, &t, &u), CSQ_OK);
		check(f);
		assert_string_equal(u.queue, "b");
	}
	/* The user's own queue stays its own: a re-ENQUEUE into c, where
	 * it waits already, is no arrival. */
	assert_int_equal(enq_st(f, "u2", "c", &u), CSQ_OK);
	assert_string_equal(u.queue, "c");
}

/* The grace: from the last servicer's logout, the users waiting then
 * move (in their order, overflowed with reason nobody) once; one who
 * comes later waits; a servicer back within the grace ends the spell. */
static void
test_grace_move(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[1];
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t from;
	uint64_t n64;

	v[0] = nobody("q", CSQ_NOBODY_WAIT, NULL, CSQ_NOBODY_MOVE, 30, "r");
	set_policies(f, v, 1);
	assert_int_equal(nobody_ms(f, "q"), 0);
	assert_int_equal(nobody_ms(f, "r"), CSQ_QSTATS_NO_NOBODY);
	agent(f, "s", 1, "q");
	assert_int_equal(nobody_ms(f, "q"), -1);
	enq_st(f, "u1", "q", NULL); /* in s's room */
	f->now += 1;
	enq_st(f, "u2", "q", NULL);
	f->now += 1;
	enq_st(f, "u3", "q", NULL);
	/* s goes, comes back within the grace: nothing moves. */
	assert_int_equal(csq_logout(f->csq, f->now, "s", &n64), CSQ_OK);
	check(f);
	pass_all(f, 29999);
	assert_int_equal(nobody_ms(f, "q"), 29999);
	agent(f, "s", 1, "q"); /* takes u1 */
	pass_all(f, 60000);
	where(f, "u2", &u);
	assert_string_equal(u.queue, "q");
	/* s goes for good, and u1 back in line with it: after 30 s the
	 * three move to r, in their order. */
	assert_int_equal(csq_logout(f->csq, f->now, "s", &n64), CSQ_OK);
	check(f);
	assert_int_equal(n64, 1);
	pass_all(f, 29999);
	from = f->nevents;
	pass_all(f, 1);
	assert_string_equal(events_since(f, from),
	                    "overflowed,overflowed,overflowed");
	ev = &f->events[from];
	assert_string_equal(ev->user, "u1");
	assert_int_equal(ev->reason, CSQ_REASON_NOBODY);
	assert_string_equal(ev->from_queue, "q");
	assert_string_equal(ev->queue, "r");
	assert_int_equal(ev->position, 1);
	assert_string_equal(f->events[from + 1].user, "u2");
	assert_string_equal(f->events[from + 2].user, "u3");
	assert_int_equal(f->events[from + 2].position, 3);
	/* Once per spell: u4 comes after, and waits in q. */
	enq_st(f, "u4", "q", NULL);
	pass_all(f, 100000);
	where(f, "u4", &u);
	assert_string_equal(u.queue, "q");
	/* A servicer of r takes them in their order. */
	agent(f, "t", 3, "r");
	where(f, "u1", &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
}

/* Release: left, reason nobody; a later arrival (wait) stays; counts =
 * ready: a pause starts the spell, a resume ends it. */
static void
test_grace_release(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[1];
	struct csq_user_info u;
	size_t from;

	v[0] = nobody("q", CSQ_NOBODY_WAIT, NULL, CSQ_NOBODY_RELEASE, 10, NULL);
	v[0].nobody.counts = CSQ_NOBODY_READY;
	set_policies(f, v, 1);
	agent(f, "s", 1, "q");
	enq_st(f, "u0", "q", NULL); /* in s's room */
	enq_st(f, "u1", "q", NULL);
	assert_int_equal(csq_pause(f->csq, f->now, "s"), CSQ_OK);
	check(f);
	pass_all(f, 5000);
	assert_int_equal(csq_resume(f->csq, f->now, "s"), CSQ_OK);
	check(f);
	pass_all(f, 20000);
	where(f, "u1", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(csq_pause(f->csq, f->now, "s"), CSQ_OK);
	check(f);
	from = f->nevents;
	pass_all(f, 10000);
	assert_string_equal(events_since(f, from), "left");
	assert_string_equal(f->events[from].user, "u1");
	assert_int_equal(f->events[from].reason, CSQ_REASON_NOBODY);
	where(f, "u1", &u);
	assert_int_equal(u.state, CSQ_USER_NONE);
	/* Once per spell: u2 comes after, and waits. */
	enq_st(f, "u2", "q", NULL);
	pass_all(f, 100000);
	where(f, "u2", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(nobody_ms(f, "q"), 110000);
	/* In u0's room all along: a conversation is not a wait. */
	where(f, "u0", &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
}

/* A reload: a queue that gets the policy measures from the reload; a
 * shorter grace in a spell under way acts in the reload itself; a
 * restart (rearm) gives every spell its grace again, from then. */
static void
test_reload_and_rearm(void **state)
{
	struct fixture *f = *state;
	struct csq_policy v[1];
	struct csq_user_info u;
	size_t from;

	enq_st(f, "u1", "q", NULL);
	pass_all(f, 100000);
	v[0] = nobody("q", CSQ_NOBODY_WAIT, NULL, CSQ_NOBODY_RELEASE, 60, NULL);
	set_policies(f, v, 1);
	assert_int_equal(nobody_ms(f, "q"), 0);
	pass_all(f, 40000);
	where(f, "u1", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	v[0].nobody.grace_s = 30;
	from = f->nevents;
	set_policies(f, v, 1);
	assert_string_equal(events_since(f, from), "left");
	assert_true(csq_next_deadline(f->csq) > f->now);
	/* A restart: the spell again, from now, and its grace. */
	enq_st(f, "u2", "q", NULL);
	pass_all(f, 1000);
	csq_rearm_deadlines(f->csq, f->now);
	check(f);
	assert_int_equal(nobody_ms(f, "q"), 0);
	pass_all(f, 29999);
	where(f, "u2", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	from = f->nevents;
	pass_all(f, 1);
	assert_string_equal(events_since(f, from), "left");
	/* The policy gone: the spell with it. */
	set_policies(f, NULL, 0);
	assert_int_equal(nobody_ms(f, "q"), CSQ_QSTATS_NO_NOBODY);
}

/* The randomized run: servicers come, go, pause; users arrive, move,
 * transfer; policies change; every invariant after each operation. */
#define RAND_OPS     20000
#define RAND_OPS_MIN 2000

static uint64_t rng = 0x853c49e6748fea9bULL;

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
	struct fixture *f = *state;
	struct csq_heartbeat_args h;
	struct csq_enqueue_args a;
	struct csq_transfer_args t;
	struct csq_servicer_info si;
	struct csq_user_info u;
	struct csq_policy p[3];
	char sid[16], uid[16], room[32], why[256];
	uint64_t n64;
	int op, known, i, ops = (int)scale_steps(RAND_OPS, RAND_OPS_MIN);
	unsigned refused = 0, moved = 0, released = 0;
	size_t seen = 0;

	for (op = 0; op < ops; op++) {
		snprintf(sid, sizeof(sid), "s%u", rnd(4));
		snprintf(uid, sizeof(uid), "u%u", rnd(40));
		snprintf(room, sizeof(room), "%s/%u", sid, rnd(2));
		switch (rnd(9)) {
		case 0:
			memset(&h, 0, sizeof(h));
			h.servicer = sid;
			h.has_capacity = 1;
			h.capacity = 1 + rnd(2);
			h.has_ttl = 1;
			h.ttl_s = 1 + rnd(20);
			h.has_queues = rnd(2);
			h.nqueues = 1;
			h.queues[0] = queues[rnd(3)];
			assert_int_equal(csq_heartbeat(f->csq, f->now, &h, &si),
			                 CSQ_OK);
			break;
		case 1:
		case 2:
			memset(&a, 0, sizeof(a));
			a.user = uid;
			a.has_queue = rnd(3) != 0;
			a.queue = queues[rnd(3)];
			a.has_ttl = 1;
			a.ttl_s = rnd(40);
			refused +=
			    csq_enqueue(f->csq, f->now, &a, &u) == CSQ_ENOBODY;
			break;
		case 3:
			csq_release(f->csq, f->now, room, &known);
			break;
		case 4:
			if (rnd(3) == 0)
				csq_logout(f->csq, f->now, sid, &n64);
			else if (rnd(2))
				csq_pause(f->csq, f->now, sid);
			else
				csq_resume(f->csq, f->now, sid);
			break;
		case 5:
			memset(&t, 0, sizeof(t));
			t.room = room;
			t.queue = queues[rnd(3)];
			csq_transfer(f->csq, f->now, &t, &u);
			break;
		case 6:
		case 7:
			f->now += rnd(4000);
			csq_expire(f->csq, f->now);
			break;
		case 8:
			if (rnd(8) != 0)
				break;
			for (i = 0; i < 3; i++) {
				p[i] = nobody(queues[i], rnd(3), NULL, rnd(3),
				              0, NULL);
				p[i].nobody.counts = rnd(2);
				if (p[i].nobody.when_nobody ==
				    CSQ_NOBODY_FALLBACK)
					strcpy(p[i].nobody.fallback,
					       queues[(i + 1) % 3]);
				if (p[i].nobody.at_nobody != CSQ_NOBODY_KEEP)
					p[i].nobody.grace_s = 1 + rnd(8);
				if (p[i].nobody.at_nobody == CSQ_NOBODY_MOVE)
					strcpy(p[i].nobody.move_to,
					       queues[(i + 2) % 3]);
			}
			/* No cycle: the last never falls back. */
			if (p[2].nobody.when_nobody == CSQ_NOBODY_FALLBACK) {
				p[2].nobody.when_nobody = CSQ_NOBODY_REFUSE;
				p[2].nobody.fallback[0] = '\0';
			}
			assert_int_equal(
			    csq_set_policies(f->csq, f->now, p, 1 + rnd(3)),
			    CSQ_OK);
			break;
		}
		if (csq_check(f->csq, why, sizeof(why)) != 0)
			fail_msg("after operation %d: %s", op, why);
		if (csq_next_deadline(f->csq) <= f->now)
			fail_msg("after operation %d: a deadline left due", op);
		for (; seen < f->nevents; seen++) {
			moved += f->events[seen].type == CSQ_EV_OVERFLOWED &&
			         f->events[seen].reason == CSQ_REASON_NOBODY;
			released += f->events[seen].type == CSQ_EV_LEFT &&
			            f->events[seen].reason == CSQ_REASON_NOBODY;
		}
		f->nevents = seen = 0;
	}
	fprintf(stderr, "refused %u, moved %u, released %u\n", refused, moved,
	        released);
	assert_true(refused > 0 && moved > 0 && released > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_check),
	    cmocka_unit_test_setup_teardown(test_arrivals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_grace_move, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_grace_release, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_reload_and_rearm, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_randomized, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
