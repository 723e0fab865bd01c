/*
 * Preferred servicers (protocol-v2 section 5) through a real csqd over TCP,
 * on either engine: PREFER in ENQUEUE and TRANSFER, the window and how it
 * ends (prefer_ended), WHERE's prefer and prefer_ms, re-ENQUEUE during a
 * window, a preferred servicer lost or logged out.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy_harness.h"

/*
 * PREFER: a user held for s2 while s2 is busy; s1, free, passes it over
 * for a later user; WHERE shows prefer and prefer_ms; s2's room frees
 * and the user takes it.
 */
static void
prefer_waits_for_servicer(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;
	long long ms;

	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE busy QUEUE q");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	r = CMD(fx->c, "ENQUEUE p1 QUEUE q PREFER s2 60");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	ms = FIELD_INT(r, "prefer_ms");
	assert_true(ms > 55000 && ms <= 60000);
	freeReplyObject(r);
	/* s1 is free and passes p1 over: the next user gets it. */
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u2 QUEUE q");
	r = CMD(fx->c, "WHERE p1");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	assert_true(FIELD_INT(r, "prefer_ms") <= ms);
	freeReplyObject(r);
	/* A re-ENQUEUE without PREFER keeps the window. */
	r = CMD(fx->c, "ENQUEUE p1 QUEUE q");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	freeReplyObject(r);
	CHECK(fx->c, ":1", "RELEASE s2/0");
	r = CMD(fx->c, "WHERE p1");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	assert_string_equal(FIELD_STR(r, "servicer"), "s2");
	assert_null(reply_field(r, "prefer"));
	freeReplyObject(r);
}

/* The window runs out: prefer_ended reason timeout, then matched like
 * any other; a LOGOUT of the servicer ends another at once. */
static void
prefer_ends(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	struct msgs m = {0};
	const char *ev;

	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE busy QUEUE q");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(fx->c,
	      "['servicer','s3','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s3 QUEUES other");
	CHECK(fx->c,
	      "['state','assigned','queue','other','room','s3/0',"
	      "'servicer','s3']",
	      "ENQUEUE busy3 QUEUE other");
	CHECK(fx->c, ":?", "QLEN q");
	ev = NULL;
	{
		redisReply *r = CMD(fx->c, "ENQUEUE p1 QUEUE q PREFER s2 1");
		assert_string_equal(FIELD_STR(r, "prefer"), "s2");
		freeReplyObject(r);
	}
	WHERE_UNTIL(fx->c, "p1", "state", "assigned");
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "prefer_ended", "p1");
	if (ev == NULL)
		fail_msg("no prefer_ended for p1");
	assert_json_str(ev, "servicer", "s2");
	assert_json_str(ev, "queue", "q");
	assert_json_str(ev, "reason", "timeout");
	ev = event_of(&m, "matched", "p1");
	assert_non_null(ev);
	assert_json_str(ev, "servicer", "s1");
	msgs_free(&m);
	/* s1 is busy now; p2 waits for s3, which does not serve q: no
	 * window, no event, p2 waits like anyone. */
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,"
	      "'eta_ms',:?]",
	      "ENQUEUE p2 QUEUE q PREFER s3 60");
	/* p3 waits for s2; s2 logs out: the window ends at once. */
	{
		redisReply *r = CMD(fx->c, "ENQUEUE p3 QUEUE q PREFER s2 60");
		assert_string_equal(FIELD_STR(r, "prefer"), "s2");
		freeReplyObject(r);
	}
	CHECK(fx->c, ":1", "LOGOUT s2");
	MSGS_COLLECT(sub, &m);
	assert_null(event_of(&m, "prefer_ended", "p2"));
	ev = event_of(&m, "prefer_ended", "p3");
	if (ev == NULL)
		fail_msg("no prefer_ended for p3");
	assert_json_str(ev, "reason", "logout");
	msgs_free(&m);
	{
		redisReply *r = CMD(fx->c, "WHERE p3");
		assert_null(reply_field(r, "prefer"));
		freeReplyObject(r);
	}
	/* PREFER's errors change nothing. */
	CHECK(fx->c, SYNTAX, "ENQUEUE p4 QUEUE q PREFER s1");
	CHECK(fx->c, RANGE, "ENQUEUE p4 QUEUE q PREFER s1 0");
	CHECK(fx->c, RANGE, "ENQUEUE p4 QUEUE q PREFER s1 3601");
	CHECK(fx->c, RANGE, "ENQUEUE p4 QUEUE q PREFER s1 x");
	CHECK(fx->c, "-ERR invalid servicer id", "ENQUEUE p4 PREFER %s 5",
	      "a b");
	CHECK(fx->c, "['state','none']", "WHERE p4");
	redisFree(sub);
}

/* A PREFER naming a free servicer that serves the queue: matched to it
 * at once, even when another free one would come first. */
static void
prefer_free_servicer(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE p1 QUEUE q PREFER s2 30");
	/* One not logged in: no window, the longest idle takes it. */
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE p2 QUEUE q PREFER nobody 30");
}

/*
 * TRANSFER with PREFER: s1 hands its conversation to billing for s2, who
 * is busy; s3, free and serving billing, passes the user over; s2's room
 * frees and the user takes it.
 */
static void
transfer_prefer(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u QUEUE q");
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES billing");
	CHECK(fx->c,
	      "['state','assigned','queue','billing','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE busy QUEUE billing");
	CHECK(fx->c,
	      "['servicer','s3','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s3 QUEUES billing");
	r = CMD(fx->c, "TRANSFER s1/0 billing PREFER s2 120");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "queue"), "billing");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	assert_true(FIELD_INT(r, "prefer_ms") > 110000);
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','assigned','queue','billing','room','s3/0',"
	      "'servicer','s3']",
	      "ENQUEUE other QUEUE billing");
	CHECK(fx->c, ":1", "RELEASE s2/0");
	r = CMD(fx->c, "WHERE u");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	assert_string_equal(FIELD_STR(r, "servicer"), "s2");
	freeReplyObject(r);
}

/*
 * The window's servicer is lost (its TTL runs out): prefer_ended with
 * reason lost; the user waits in its queue like any other. Another's
 * HEARTBEAT that drops the queue: reason queues.
 */
static void
prefer_lost_and_dropped(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	struct msgs m = {0};
	const char *ev;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:1]",
	      "HEARTBEAT s2 QUEUES q TTL 1");
	CHECK(fx->c,
	      "['servicer','s3','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s3 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE b2 QUEUE q PREFER s2 60");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s3/0',"
	      "'servicer','s3']",
	      "ENQUEUE b3 QUEUE q");
	r = CMD(fx->c, "ENQUEUE p2 QUEUE q PREFER s2 60");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE p3 QUEUE q PREFER s3 60");
	assert_string_equal(FIELD_STR(r, "prefer"), "s3");
	freeReplyObject(r);
	/* s2 stops its heartbeats: lost after 1 s. */
	WHERE_UNTIL(fx->c, "b2", "state", "waiting");
	r = CMD(fx->c, "WHERE p2");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_null(reply_field(r, "prefer"));
	freeReplyObject(r);
	/* s3 keeps serving, but no longer q. */
	CHECK(fx->c,
	      "['servicer','s3','status','ready','capacity',:1,"
	      "'active',:1,'ttl',:30]",
	      "HEARTBEAT s3 QUEUES other");
	r = CMD(fx->c, "WHERE p3");
	assert_null(reply_field(r, "prefer"));
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "prefer_ended", "p2");
	if (ev == NULL)
		fail_msg("no prefer_ended for p2");
	assert_json_str(ev, "reason", "lost");
	assert_json_str(ev, "servicer", "s2");
	ev = event_of(&m, "prefer_ended", "p3");
	if (ev == NULL)
		fail_msg("no prefer_ended for p3");
	assert_json_str(ev, "reason", "queues");
	msgs_free(&m);
	redisFree(sub);
}

/*
 * A re-ENQUEUE during a window: PREFER again replaces it; PREFER of a
 * servicer that cannot hold it closes it, without an event.
 */
static void
prefer_reenqueue(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	struct msgs m = {0};
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES q");
	freeReplyObject(CMD(fx->c, "ENQUEUE b1 QUEUE q"));
	freeReplyObject(CMD(fx->c, "ENQUEUE b2 QUEUE q"));
	r = CMD(fx->c, "ENQUEUE p QUEUE q PREFER s1 60");
	assert_string_equal(FIELD_STR(r, "prefer"), "s1");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE p QUEUE q PREFER s2 30");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	assert_true(FIELD_INT(r, "prefer_ms") <= 30000);
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	msgs_free(&m);
	r = CMD(fx->c, "ENQUEUE p QUEUE q PREFER nobody 30");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_null(reply_field(r, "prefer"));
	freeReplyObject(r);
	/* No prefer_ended; s1, which p no longer waits for, takes it. */
	CHECK(fx->c, ":1", "RELEASE s1/0");
	r = CMD(fx->c, "WHERE p");
	assert_string_equal(FIELD_STR(r, "servicer"), "s1");
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	assert_int_equal(msgs_find(&m, 0, "prefer_ended"), -1);
	msgs_free(&m);
	redisFree(sub);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(prefer_waits_for_servicer,
	                                    policy_setup, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(prefer_ends, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(prefer_free_servicer, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(transfer_prefer, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(prefer_lost_and_dropped,
	                                    policy_setup, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(prefer_reenqueue, policy_setup,
	                                    csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
