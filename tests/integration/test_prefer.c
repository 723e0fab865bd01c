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
	/* Neither tier nor queue changed: no rescored (section 4; both
	 * engines published one, issue 37), only p's first queued. */
	assert_int_equal(msgs_find(&m, 0, "rescored"), -1);
	assert_true(msgs_find(&m, 0, "queued") >= 0);
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
	assert_int_equal(msgs_find(&m, 0, "rescored"), -1);
	msgs_free(&m);
	redisFree(sub);
}

#ifdef CSQ_TEST_CLOCK
/* The case on the test clock: only a build with DEBUG CLOCK has it
 * (CSQ_TEST_CLOCK, as scripts/test's). */

/* The id of event ev of user in m, or -1 when there is none. */
static long long
event_id_of(const struct msgs *m, const char *ev, const char *user)
{
	const char *payload = event_of(m, ev, user);
	char v[32];

	if (payload == NULL || json_value(payload, "id", v, sizeof(v)) != 0)
		return -1;
	return strtoll(v, NULL, 10);
}

/*
 * A window that runs out among more deadlines than one reap call takes
 * (the Redis engine acts on at most 1000 a call): 1,100 users of another
 * queue time out in the same millisecond as p's window, whose deadline
 * sorts first (p:p before u:...), so the Redis engine takes it in the
 * reap's first call and must keep it for the last (docs/design.md). On
 * both engines the window ends after every timeout, with prefer_ended
 * (timeout), and p then takes s2's free room, which it passed over while
 * it waited for s1. Run on the test clock (DEBUG CLOCK), so that all of
 * it comes due at once. The events are too many for one collection:
 * those of p and of the first, a middle and the last of the others to
 * time out (in the order of their ids' bytes: t0 first, t999 last) are
 * followed, and their ids compared. Acting on the window in the reap's
 * first call, as an early kind, gave p's prefer_ended an id below t999's
 * left.
 */
#define LONG_REAP 1100

static void
prefer_window_in_long_reap(void **state)
{
	struct csqd_fx *fx = *state;
	static const char *channels[] = {"user:p", "user:t0", "user:t1099",
	                                 "user:t999"};
	redisContext *sub = csqd_connect(fx->d);
	struct msgs m = {0};
	const uint64_t t0 = UINT64_C(2000000000000);
	long long ended;
	redisReply *r;
	int i;

	SUBSCRIBE(sub, 4, channels);
	CHECK(fx->c, "+OK", "DEBUG CLOCK %llu", (unsigned long long)t0);
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:3600]",
	      "HEARTBEAT s1 QUEUES q TTL 3600");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE b QUEUE q TTL 0");
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:3600]",
	      "HEARTBEAT s2 QUEUES q TTL 3600");
	r = CMD(fx->c, "ENQUEUE p QUEUE q TTL 0 PREFER s1 1");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "prefer"), "s1");
	freeReplyObject(r);
	for (i = 0; i < LONG_REAP; i++)
		redisAppendCommand(fx->c, "ENQUEUE t%d QUEUE x TTL 1", i);
	for (i = 0; i < LONG_REAP; i++) {
		assert_int_equal(redisGetReply(fx->c, (void **)&r), REDIS_OK);
		freeReplyObject(r);
	}
	MSGS_COLLECT(sub, &m);
	msgs_free(&m);
	CHECK(fx->c, "+OK", "DEBUG CLOCK %llu", (unsigned long long)t0 + 1500);
	WHERE_UNTIL(fx->c, "p", "state", "assigned");
	CHECK(fx->c, ":0", "QLEN x");
	r = CMD(fx->c, "WHERE p");
	assert_string_equal(FIELD_STR(r, "servicer"), "s2");
	freeReplyObject(r);
	r = CMD(fx->c, "STATS");
	assert_int_equal(FIELD_INT(r, "abandoned_total"), LONG_REAP);
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	ended = event_id_of(&m, "prefer_ended", "p");
	assert_true(ended > 0);
	assert_json_str(event_of(&m, "prefer_ended", "p"), "reason", "timeout");
	assert_json_str(event_of(&m, "prefer_ended", "p"), "servicer", "s1");
	assert_true(event_id_of(&m, "left", "t0") > 0);
	assert_true(event_id_of(&m, "left", "t0") < ended);
	assert_true(event_id_of(&m, "left", "t1099") < ended);
	assert_true(event_id_of(&m, "left", "t999") < ended);
	assert_int_equal(event_id_of(&m, "matched", "p"), ended + 1);
	msgs_free(&m);
	redisFree(sub);
}
#endif

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
#ifdef CSQ_TEST_CLOCK
	    cmocka_unit_test_setup_teardown(prefer_window_in_long_reap,
	                                    policy_setup, csqd_fx_teardown),
#endif
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
