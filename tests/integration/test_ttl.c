/*
 * Time to live: lost servicers (servicer_ttl = 1), abandoning users (TTL 1),
 * TOUCH and ENQUEUE keeping users alive, TTL 0 never expiring.
 * Waits poll with a deadline, so the whole program sleeps a few seconds.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define POLL_MS     100
#define DEADLINE_MS 5000
/* How much shorter csqd may count a time span than the test does: its
 * clock is another (the wall clock, in whole ms), and may be read at the
 * start of its loop's turn. */
#define CLOCK_SLACK_MS 50

static int
setup_servicer_ttl(void **state)
{
	return csqd_fx_setup(state, "servicer_ttl = 1;\nmax_queue_length = 1;");
}

/*
 * touch_keeps_alive's user_ttl, and how often it touches its users: a
 * touch may come up to USER_TTL_MS - TOUCH_EVERY_MS late (a test process
 * not run for that long) before a user expires that should not. With
 * user_ttl 1 and a touch every 400 ms, the 600 ms left were not enough at
 * a load average of 11 (docs/testing.md).
 */
#define USER_TTL_MS    2000
#define TOUCH_EVERY_MS 400
#define TOUCHES        8

static int
setup_user_ttl(void **state)
{
	return csqd_fx_setup(state, "user_ttl = 2;");
}

static int
user_state_is(redisContext *c, const char *user, const char *state)
{
	redisReply *r;
	int yes;

	r = CMD(c, "WHERE %s", user);
	yes = r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
	      strcmp(r->element[1]->str, state) == 0;
	freeReplyObject(r);
	return yes;
}

/*
 * s1's TTL (1 s) runs out: its user is requeued at its old place, ahead of a
 * user who came later, past the queue's length limit; s2, kept alive by
 * heartbeats, stays.
 */
static void
servicer_lost_requeues(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;
	int64_t t0, t, arrived;

	r = CMD(fx->c, "HEARTBEAT s2 QUEUES other");
	assert_int_equal(FIELD_INT(r, "ttl"), 1);
	freeReplyObject(r);
	t0 = now_ms();
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:1]",
	      "HEARTBEAT s1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
	arrived = now_ms(); /* u1 arrived before this */
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u2");
	CHECK(fx->c, "-FULL queue is at its maximum length", "ENQUEUE u3");
	for (;;) {
		r = CMD(fx->c, "HEARTBEAT s2");
		freeReplyObject(r);
		if (user_state_is(fx->c, "u1", "waiting"))
			break;
		if (now_ms() - t0 > DEADLINE_MS)
			fail_msg("s1 not lost %d ms after its last heartbeat",
			         DEADLINE_MS);
		sleep_ms(POLL_MS);
	}
	t = now_ms() - t0;
	/* Not before its TTL ran out. */
	assert_true(t >= 1000);
	/* u1 keeps its arrival: it has waited at least since the ENQUEUE's
	 * reply (a wait counted from the requeue, which came about 1 s
	 * later, is short of that). Counted from the reply, not as "a little
	 * under 1000 ms", which a round trip slowed by load made false. */
	t = now_ms() - arrived;
	r = CMD(fx->c, "WHERE u1");
	assert_int_equal(FIELD_INT(r, "position"), 1);
	assert_int_equal(FIELD_INT(r, "tier"), 0);
	assert_true(FIELD_INT(r, "waited_ms") >= t - CLOCK_SLACK_MS);
	freeReplyObject(r);
	r = CMD(fx->c, "WHERE u2");
	assert_int_equal(FIELD_INT(r, "position"), 2);
	freeReplyObject(r);
	/* Nobody is lost: the length limit (1) does not apply. */
	CHECK(fx->c, ":2", "QLEN default");
	r = CMD(fx->c, "SERVICERS");
	assert_int_equal(r->elements, 1);
	assert_reply_bulk(r->element[0]->element[0], "s2");
	freeReplyObject(r);
	CHECK(fx->c, "-NOTFOUND no such servicer or room", "RELEASE s1/0");
	CHECK(fx->c, "-NOTFOUND no such servicer or room", "PAUSE s1");
	r = CMD(fx->c, "STATS");
	assert_int_equal(FIELD_INT(r, "servicers_lost_total"), 1);
	assert_int_equal(FIELD_INT(r, "requeued_total"), 1);
	assert_int_equal(FIELD_INT(r, "servicers"), 1);
	assert_int_equal(FIELD_INT(r, "waiting"), 2);
	freeReplyObject(r);
	/* Back again: a new login, which takes u1 first. */
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:1,"
	      "'ttl',:1]",
	      "HEARTBEAT s1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
}

/* ENQUEUE TTL 1 and no touch: the user abandons, reason timeout. */
static void
user_ttl_abandon(void **state)
{
	struct csqd_fx *fx = *state;
	const char *ch[] = {"user:u1"};
	struct msgs *m = calloc(1, sizeof(*m));
	redisContext *sub;
	redisReply *r;
	int64_t t0;

	sub = csqd_connect(fx->d);
	SUBSCRIBE(sub, 1, ch);
	t0 = now_ms();
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1 TTL 1");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:2,'eta_ms',:-1]",
	    "ENQUEUE u2 TTL 0");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:3,'eta_ms',:-1]",
	    "ENQUEUE u3");
	while (!user_state_is(fx->c, "u1", "none")) {
		if (now_ms() - t0 > DEADLINE_MS)
			fail_msg("u1 (TTL 1) still waiting after %d ms",
			         DEADLINE_MS);
		sleep_ms(POLL_MS);
	}
	assert_true(now_ms() - t0 >= 1000);
	MSGS_COLLECT(sub, m);
	assert_int_equal(m->n, 2);
	assert_json_str(m->m[0].payload, "event", "queued");
	assert_json_str(m->m[1].payload, "event", "left");
	assert_json_str(m->m[1].payload, "user", "u1");
	assert_json_str(m->m[1].payload, "queue", "default");
	assert_json_str(m->m[1].payload, "reason", "timeout");
	r = CMD(fx->c, "WHERE u2");
	assert_int_equal(FIELD_INT(r, "position"), 1);
	freeReplyObject(r);
	r = CMD(fx->c, "WHERE u3");
	assert_int_equal(FIELD_INT(r, "position"), 2);
	freeReplyObject(r);
	r = CMD(fx->c, "STATS");
	assert_int_equal(FIELD_INT(r, "abandoned_total"), 1);
	assert_int_equal(FIELD_INT(r, "waiting"), 2);
	freeReplyObject(r);
	CHECK(fx->c, ":0", "TOUCH u1");
	msgs_free(m);
	free(m);
	redisFree(sub);
}

/*
 * user_ttl = 2: TOUCH and ENQUEUE keep users alive past it, TOUCH TTL
 * replaces the TTL, TTL 0 never expires, assigned users do not expire.
 */
static void
touch_keeps_alive(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;
	int64_t t0, touched = 0;
	int i;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:60]",
	      "HEARTBEAT s1 QUEUES vip TTL 60");
	CHECK(
	    fx->c,
	    "['state','assigned','queue','vip','room','s1/0','servicer','s1']",
	    "ENQUEUE v1 QUEUE vip");
	t0 = now_ms();
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:2,'eta_ms',:-1]",
	    "ENQUEUE u2 TTL 0");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:3,'eta_ms',:-1]",
	    "ENQUEUE u3 TTL 0");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:4,'eta_ms',:-1]",
	    "ENQUEUE u4");
	CHECK(fx->c, ":1", "TOUCH u3 TTL 1");
	/* A TOUCH without TTL keeps the one given (not the 0 of before). */
	CHECK(fx->c, ":1", "TOUCH u3");
	for (i = 0; i < TOUCHES; i++) {
		sleep_ms(TOUCH_EVERY_MS);
		touched = now_ms(); /* before u1's and u4's touches */
		CHECK(fx->c, ":1", "TOUCH u1");
		CHECK(fx->c,
		      "['state','waiting','queue','default','position',:1,'eta_"
		      "ms',:-1]",
		      "ENQUEUE u1");
		assert_true(user_state_is(fx->c, "u4", "waiting"));
		/* ENQUEUE touches too (u4's position moves when u3 goes). */
		r = CMD(fx->c, "ENQUEUE u4");
		assert_string_equal(FIELD_STR(r, "state"), "waiting");
		freeReplyObject(r);
	}
	/* Longer after their arrival than their TTL. */
	assert_true(now_ms() - t0 >= TOUCHES * TOUCH_EVERY_MS);
	assert_true(TOUCHES * TOUCH_EVERY_MS > USER_TTL_MS);
	assert_true(user_state_is(fx->c, "u1", "waiting"));
	assert_true(user_state_is(fx->c, "u4", "waiting"));
	/* u3 was last touched at the start with TTL 1: gone by now or soon. */
	while (!user_state_is(fx->c, "u3", "none")) {
		if (now_ms() - t0 > DEADLINE_MS)
			fail_msg("u3 (TOUCH TTL 1) did not expire");
		sleep_ms(POLL_MS);
	}
	/* Now nobody touches u1 and u4: they live user_ttl from their last
	 * touch (times from before it, so that a slow reply cannot shorten
	 * them). */
	while (!user_state_is(fx->c, "u1", "none") ||
	       !user_state_is(fx->c, "u4", "none")) {
		if (now_ms() - touched > DEADLINE_MS)
			fail_msg("u1/u4 (user_ttl 2) did not expire");
		sleep_ms(POLL_MS);
	}
	assert_true(now_ms() - touched >= USER_TTL_MS - CLOCK_SLACK_MS);
	/* TTL 0: still there; the assigned user too. */
	CHECK(fx->c, ":1", "QLEN default");
	assert_true(user_state_is(fx->c, "u2", "waiting"));
	assert_true(user_state_is(fx->c, "v1", "assigned"));
	/*
	 * v1 has been in its room for over 2 s: requeued, its TTL restarts
	 * (it does not abandon at once), then runs out.
	 */
	t0 = now_ms();
	CHECK(fx->c, ":1", "LOGOUT s1");
	assert_true(user_state_is(fx->c, "v1", "waiting"));
	while (!user_state_is(fx->c, "v1", "none")) {
		if (now_ms() - t0 > DEADLINE_MS)
			fail_msg("requeued v1 (user_ttl 2) did not expire");
		sleep_ms(POLL_MS);
	}
	assert_true(now_ms() - t0 >= USER_TTL_MS - CLOCK_SLACK_MS);
}

/*
 * A TTL given to ENQUEUE is the user's own: it is what an ENQUEUE without
 * one restarts, and what a requeue restarts, not user_ttl (the default
 * here, far longer). Breaks if the user's record keeps the default instead
 * of the given TTL.
 */
static void
given_ttl_is_kept(void **state)
{
	struct csqd_fx *fx = *state;
	int64_t t0, tu = -1, tw = -1;

	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1 TTL 1");
	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 QUEUES q"));
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0','servicer','s1']",
	      "ENQUEUE w1 QUEUE q TTL 1");
	sleep_ms(600);
	/* The TTL restarts: u1 lives 1 s from here, w1 1 s from its requeue.
	 * t0 is taken before either, so that each lives at least 1 s from
	 * t0 however slowly the replies come back. */
	t0 = now_ms();
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1");
	CHECK(fx->c, ":1", "LOGOUT s1");
	assert_true(user_state_is(fx->c, "w1", "waiting"));
	/* Each one's own time: a w1 that expired 400 ms after t0 (its TTL
	 * counted from its arrival, 600 ms before t0) must not hide behind
	 * u1. */
	while (tu < 0 || tw < 0) {
		if (tu < 0 && user_state_is(fx->c, "u1", "none"))
			tu = now_ms() - t0;
		if (tw < 0 && user_state_is(fx->c, "w1", "none"))
			tw = now_ms() - t0;
		if (now_ms() - t0 > DEADLINE_MS)
			fail_msg("u1/w1 (TTL 1) did not expire");
		sleep_ms(POLL_MS);
	}
	print_message("u1 gone after %lld ms, w1 after %lld ms\n",
	              (long long)tu, (long long)tw);
	assert_true(tu >= 1000 - CLOCK_SLACK_MS);
	assert_true(tw >= 1000 - CLOCK_SLACK_MS);
}

/*
 * A user requeued because its servicer was lost gets its TTL afresh, as
 * after a LOGOUT: w2 arrived with TTL 1 and sat in a room for 2 s, so a
 * TTL still counted from its arrival would abandon it as soon as it is
 * back in line.
 */
static void
lost_servicer_restarts_ttl(void **state)
{
	struct csqd_fx *fx = *state;
	int64_t t0 = now_ms(), back = -1, gone = -1;
	redisReply *r;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 QUEUES q TTL 2"));
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0','servicer','s1']",
	      "ENQUEUE w2 QUEUE q TTL 1");
	/* Times from t0, taken before the HEARTBEAT: s1 is lost 2 s after
	 * it at the earliest, w2 abandons 1 s after that at the earliest. A
	 * test process that ran late may not see w2 back in line at all (a
	 * gap between two WHEREs over 1 s): the requeue is then in STATS. */
	while (gone < 0) {
		if (user_state_is(fx->c, "w2", "none"))
			gone = now_ms();
		else if (back < 0 && user_state_is(fx->c, "w2", "waiting"))
			back = now_ms();
		if (now_ms() - t0 > 3 * DEADLINE_MS)
			fail_msg("w2 was not requeued then abandoned");
		sleep_ms(POLL_MS);
	}
	print_message("w2 back in line after %lld ms, gone after %lld ms\n",
	              (long long)(back - t0), (long long)(gone - t0));
	assert_true(back < 0 || back - t0 >= 2000 - CLOCK_SLACK_MS);
	/* A TTL counted from w2's arrival would abandon it as it came
	 * back, about 2000 ms after t0. */
	assert_true(gone - t0 >= 3000 - CLOCK_SLACK_MS);
	r = CMD(fx->c, "STATS");
	assert_int_equal(FIELD_INT(r, "servicers_lost_total"), 1);
	assert_int_equal(FIELD_INT(r, "requeued_total"), 1);
	assert_int_equal(FIELD_INT(r, "abandoned_total"), 1);
	freeReplyObject(r);
}

/*
 * Two servicers whose deadlines pass in one pass of the reaper (csqd is
 * stopped past both, as when its timer fires late): the user of the first
 * goes back in line and stays there, not into a room of the second, whose
 * deadline has passed too. Before, both engines put it into s1's room
 * and requeued it again the next moment (matched_total and
 * requeued_total 2).
 */
static void
lost_together(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;
	int64_t t0;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s0 QUEUES q TTL 1"));
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s0/0','servicer','s0']",
	      "ENQUEUE u0 QUEUE q");
	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 QUEUES q TTL 1"));
	kill(fx->d->pid, SIGSTOP);
	sleep_ms(1600);
	kill(fx->d->pid, SIGCONT);
	t0 = now_ms();
	for (;;) {
		r = CMD(fx->c, "STATS");
		if (FIELD_INT(r, "servicers") == 0)
			break;
		freeReplyObject(r);
		if (now_ms() - t0 > DEADLINE_MS)
			fail_msg("the servicers were not declared lost");
		sleep_ms(POLL_MS);
	}
	assert_int_equal(FIELD_INT(r, "servicers_lost_total"), 2);
	assert_int_equal(FIELD_INT(r, "matched_total"), 1);
	assert_int_equal(FIELD_INT(r, "requeued_total"), 1);
	assert_int_equal(FIELD_INT(r, "waiting"), 1);
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE u0");
}

/*
 * A storm larger than one call of the Redis engine's reaper (storm_begin,
 * harness.c), lost while csqd is stopped: every user goes back in line
 * and the 3 best go to the live servicer, as in one pass. Before, the
 * Redis engine matched the first call's users at once, into rooms of
 * servicers lost in the next call (requeued_total 1200, matched_total
 * 1203), and into the live servicer's rooms ahead of the VIPs.
 */
static void
lost_beyond_one_reap(void **state)
{
	struct csqd_fx *fx = *state;

	storm_begin(fx->c);
	kill(fx->d->pid, SIGSTOP);
	sleep_ms(STORM_PAST_MS);
	kill(fx->d->pid, SIGCONT);
	storm_end(fx->c, 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        servicer_lost_requeues, setup_servicer_ttl, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        user_ttl_abandon, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(touch_keeps_alive, setup_user_ttl,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        given_ttl_is_kept, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        lost_together, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        lost_beyond_one_reap, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(lost_servicer_restarts_ttl,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("ttl", tests, NULL, NULL);
}
