/*
 * Matching: which room an enqueued user gets, which user a freed room gets,
 * and that every change that frees capacity matches at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define FIFO_USERS 200

static void
check_assigned(const char *file, int line, redisContext *c, const char *user,
               const char *queue, const char *room)
{
	char expect[512], sid[128], *slash;

	snprintf(sid, sizeof(sid), "%s", room);
	slash = strchr(sid, '/');
	if (slash != NULL)
		*slash = '\0';
	snprintf(
	    expect, sizeof(expect),
	    "['state','assigned','queue','%s','room','%s','servicer','%s']",
	    queue, room, sid);
	check_at(file, line, c, expect, "ENQUEUE %s QUEUE %s", user, queue);
}
#define ASSIGNED(c, u, q, room)                                                \
	check_assigned(__FILE__, __LINE__, (c), (u), (q), (room))

/*
 * The servicer that has gone longest without a new user gets it: ordered by
 * login or last assignment (heartbeats do not count), lowest free room.
 */
static void
longest_idle_servicer(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	r = CMD(fx->c, "HEARTBEAT s1");
	freeReplyObject(r);
	r = CMD(fx->c, "HEARTBEAT s2");
	freeReplyObject(r);
	r = CMD(fx->c, "HEARTBEAT s3");
	freeReplyObject(r);
	/* A later heartbeat of s1 does not make it "newer". */
	r = CMD(fx->c, "HEARTBEAT s1");
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE u2");
	CHECK(fx->c, ":1", "RELEASE s1/0");
	/* s3 logged in before s1's last assignment. */
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s3/0',"
	      "'servicer','s3']",
	      "ENQUEUE u3");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u4");
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,'eta_ms',:?]",
	      "ENQUEUE u5");
}

/* Capacity 3 each: the servicers alternate; each fills its lowest room. */
static void
alternating_and_lowest_room(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	r = CMD(fx->c, "HEARTBEAT a CAPACITY 3");
	freeReplyObject(r);
	r = CMD(fx->c, "HEARTBEAT b CAPACITY 3");
	freeReplyObject(r);
	ASSIGNED(fx->c, "u1", "default", "a/0");
	ASSIGNED(fx->c, "u2", "default", "b/0");
	ASSIGNED(fx->c, "u3", "default", "a/1");
	ASSIGNED(fx->c, "u4", "default", "b/1");
	ASSIGNED(fx->c, "u5", "default", "a/2");
	CHECK(fx->c, ":1", "RELEASE a/1");
	CHECK(fx->c, ":1", "RELEASE a/0");
	/* b's last assignment (u4) came before a's (u5): b/2 next. */
	ASSIGNED(fx->c, "u6", "default", "b/2");
	/* Then a, in its lowest free room. */
	ASSIGNED(fx->c, "u7", "default", "a/0");
	ASSIGNED(fx->c, "u8", "default", "a/1");
	/* (Conversations of a millisecond or so: an estimate of 0 or -1.) */
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,'eta_ms',:?]",
	      "ENQUEUE u9");
}

/* Paused servicers and servicers of other queues are passed over. */
static void
paused_and_other_queues_skipped(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	r = CMD(fx->c, "HEARTBEAT s1");
	freeReplyObject(r);
	r = CMD(fx->c, "HEARTBEAT s2 QUEUES vip");
	freeReplyObject(r);
	r = CMD(fx->c, "HEARTBEAT s3 QUEUES default,vip");
	freeReplyObject(r);
	CHECK(fx->c, "+OK", "PAUSE s1");
	ASSIGNED(fx->c, "u1", "default", "s3/0");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u2");
	r = CMD(fx->c, "ENQUEUE v1 QUEUE vip");
	assert_string_equal(FIELD_STR(r, "room"), "s2/0");
	freeReplyObject(r);
}

/* A freed room takes the best user across all the queues it serves. */
static void
freed_room_best_across_queues(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	r = CMD(fx->c, "HEARTBEAT s1 QUEUES qa,qb");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE x QUEUE qa");
	assert_string_equal(FIELD_STR(r, "room"), "s1/0");
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','waiting','queue','qa','position',:1,'eta_ms',:-1]",
	      "ENQUEUE a1 QUEUE qa");
	CHECK(fx->c,
	      "['state','waiting','queue','qb','position',:1,'eta_ms',:-1]",
	      "ENQUEUE b1 QUEUE qb TIER 1");
	CHECK(fx->c,
	      "['state','waiting','queue','qa','position',:1,'eta_ms',:-1]",
	      "ENQUEUE a2 QUEUE qa TIER 1");
	CHECK(fx->c,
	      "['state','waiting','queue','qc','position',:1,'eta_ms',:-1]",
	      "ENQUEUE c1 QUEUE qc TIER 9");
	CHECK(fx->c,
	      "['state','waiting','queue','qb','position',:2,'eta_ms',:-1]",
	      "ENQUEUE b2 QUEUE qb");
	/* Tier 1 first; b1 arrived before a2. */
	CHECK(fx->c, ":1", "RELEASE s1/0");
	ASSIGNED(fx->c, "b1", "qb", "s1/0");
	CHECK(fx->c, ":1", "RELEASE s1/0");
	ASSIGNED(fx->c, "a2", "qa", "s1/0");
	/* Tier 0: a1 arrived before b2. */
	CHECK(fx->c, ":1", "RELEASE s1/0");
	ASSIGNED(fx->c, "a1", "qa", "s1/0");
	CHECK(fx->c, ":1", "RELEASE s1/0");
	ASSIGNED(fx->c, "b2", "qb", "s1/0");
	CHECK(fx->c, ":1", "RELEASE s1/0");
	CHECK(fx->c, ":0", "RELEASE s1/0");
	/* qc is not served: c1 still waits. */
	CHECK(fx->c,
	      "['state','waiting','queue','qc','position',:1,'eta_ms',:?]",
	      "ENQUEUE c1");
	/* LEAVE of an assigned user frees the room the same way. */
	ASSIGNED(fx->c, "y", "qb", "s1/0");
	CHECK(fx->c, ":1", "LEAVE y");
	CHECK(fx->c, ":0", "RELEASE s1/0");
}

/* RESUME, a capacity raise and a login all match at once. */
static void
capacity_changes_match_at_once(void **state)
{
	struct csqd_fx *fx = *state;

	/* Login: the best waiting user (tier 1) is matched by the heartbeat. */
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u2 TIER 1");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:3,'eta_ms',:-1]",
	    "ENQUEUE u3");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:4,'eta_ms',:-1]",
	    "ENQUEUE u4");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:1,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	ASSIGNED(fx->c, "u2", "default", "s1/0");
	/* Capacity raise: two more rooms, filled by the heartbeat. */
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:3,'active',:3,"
	      "'ttl',:30]",
	      "HEARTBEAT s1 CAPACITY 3");
	ASSIGNED(fx->c, "u1", "default", "s1/1");
	ASSIGNED(fx->c, "u3", "default", "s1/2");
	/* Resume: matched before RESUME's reply. */
	CHECK(fx->c, "+OK", "PAUSE s1");
	CHECK(fx->c, ":1", "RELEASE s1/1");
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,'eta_ms',:?]",
	      "ENQUEUE u4");
	CHECK(fx->c, "+OK", "RESUME s1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/1',"
	      "'servicer','s1']",
	      "ENQUEUE u4");
	/* A requeued user is matched again at once where a room is free. */
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s2");
	CHECK(fx->c, "+OK", "PAUSE s1");
	CHECK(fx->c, ":3", "LOGOUT s1");
	/* Best of u2 (tier 1), u3, u4 is u2. */
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE u2");
	CHECK(fx->c, ":2", "QLEN default");
}

/*
 * 200 users enqueued back to back in one pipeline (many arrive in the same
 * millisecond): FIFO within a tier, exactly, in QUEUE and in the rooms.
 */
static void
fifo_pipelined(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;
	char name[32];
	int i, k, tier1 = 0, tier0 = 0;

	for (i = 0; i < FIFO_USERS; i++)
		redisAppendCommand(fx->c, "ENQUEUE u%03d TIER %d", i, i % 2);
	for (i = 0; i < FIFO_USERS; i++) {
		r = GET_REPLY(fx->c);
		/* Odd users are tier 1: they pass every tier 0 user. */
		if (i % 2 == 1)
			tier1++;
		else
			tier0++;
		assert_string_equal(FIELD_STR(r, "state"), "waiting");
		if (i % 2 == 1)
			assert_int_equal(FIELD_INT(r, "position"), tier1);
		else
			assert_int_equal(FIELD_INT(r, "position"),
			                 tier1 + tier0);
		freeReplyObject(r);
	}
	r = CMD(fx->c, "QUEUE default 0 1000");
	assert_int_equal(r->elements, FIFO_USERS);
	for (k = 0; k < FIFO_USERS; k++) {
		i = k < FIFO_USERS / 2 ? 2 * k + 1 : 2 * (k - FIFO_USERS / 2);
		snprintf(name, sizeof(name), "u%03d", i);
		assert_reply_bulk(r->element[k]->element[0], name);
		assert_reply_integer(r->element[k]->element[1], i % 2);
	}
	freeReplyObject(r);
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:150,'active',:150,"
	      "'ttl',:30]",
	      "HEARTBEAT s1 CAPACITY 150");
	/* Room k holds the k-th user in service order. */
	for (k = 0; k < 150; k++) {
		char room[32];

		i = k < FIFO_USERS / 2 ? 2 * k + 1 : 2 * (k - FIFO_USERS / 2);
		snprintf(name, sizeof(name), "u%03d", i);
		snprintf(room, sizeof(room), "s1/%d", k);
		ASSIGNED(fx->c, name, "default", room);
	}
	CHECK(fx->c, ":50", "QLEN default");
	r = CMD(fx->c, "WHERE u100");
	assert_int_equal(FIELD_INT(r, "position"), 1);
	freeReplyObject(r);
	r = CMD(fx->c, "WHERE u198");
	assert_int_equal(FIELD_INT(r, "position"), 50);
	freeReplyObject(r);
}

/* One STATS reply's counters, checked. */
static void
stats_are(redisReply *r, long long waiting, long long busy, long long free_,
          long long enqueued, long long matched)
{
	assert_int_equal(FIELD_INT(r, "waiting"), waiting);
	assert_int_equal(FIELD_INT(r, "rooms_busy"), busy);
	assert_int_equal(FIELD_INT(r, "rooms_free"), free_);
	assert_int_equal(FIELD_INT(r, "enqueued_total"), enqueued);
	assert_int_equal(FIELD_INT(r, "matched_total"), matched);
}

/*
 * Matches and counters inside one pipeline, which the Redis engine runs as
 * one script call: each STATS counts what came before it in the same call,
 * a user who arrives when the last free room went earlier in the call
 * waits, and a room freed later in the call takes it. (Before, the Redis
 * engine's STATS read the counters as the call had found them.)
 */
static void
counters_within_pipeline(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 CAPACITY 2"));
	redisAppendCommand(fx->c, "ENQUEUE a");
	redisAppendCommand(fx->c, "STATS");
	redisAppendCommand(fx->c, "ENQUEUE b");
	redisAppendCommand(fx->c, "ENQUEUE c");
	redisAppendCommand(fx->c, "STATS");
	redisAppendCommand(fx->c, "LEAVE a");
	redisAppendCommand(fx->c, "STATS");
	r = GET_REPLY(fx->c);
	assert_string_equal(FIELD_STR(r, "room"), "s1/0");
	freeReplyObject(r);
	r = GET_REPLY(fx->c);
	stats_are(r, 0, 1, 1, 1, 1);
	freeReplyObject(r);
	r = GET_REPLY(fx->c);
	assert_string_equal(FIELD_STR(r, "room"), "s1/1");
	freeReplyObject(r);
	r = GET_REPLY(fx->c);
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_int_equal(FIELD_INT(r, "position"), 1);
	freeReplyObject(r);
	r = GET_REPLY(fx->c);
	stats_are(r, 1, 2, 0, 3, 2);
	freeReplyObject(r);
	r = GET_REPLY(fx->c);
	assert_reply_integer(r, 1);
	freeReplyObject(r);
	r = GET_REPLY(fx->c);
	stats_are(r, 0, 2, 0, 3, 3);
	freeReplyObject(r);
	ASSIGNED(fx->c, "c", "default", "s1/0");
	r = CMD(fx->c, "STATS");
	stats_are(r, 0, 2, 0, 3, 3);
	freeReplyObject(r);
}

#define PIPE_ROUNDS 20 /* pipelines of replies_behind_calls */
#define PIPE_DEPTH  12 /* good and refused ENQUEUE pairs in each */

/*
 * Replies written at once (an ENQUEUE refused for its arguments),
 * pipelined behind calls still in flight (on the Redis engine, each
 * ENQUEUE until its CSQ.CALL is answered): each waits in a slot of its
 * own and leaves in its order, and the slots a connection keeps for its
 * next calls (daemon/client.c) serve round after round. With a kept
 * slot's reply taken for none, the refusals were lost and this failed
 * (tried).
 */
static void
replies_behind_calls(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;
	int round, i;

	for (round = 0; round < PIPE_ROUNDS; round++) {
		for (i = 0; i < PIPE_DEPTH; i++) {
			redisAppendCommand(fx->c, "ENQUEUE p%d.%d", round, i);
			redisAppendCommand(fx->c, "ENQUEUE x%d.%d TIER x",
			                   round, i);
		}
		for (i = 0; i < PIPE_DEPTH; i++) {
			r = GET_REPLY(fx->c);
			assert_string_equal(FIELD_STR(r, "state"), "waiting");
			assert_int_equal(FIELD_INT(r, "position"),
			                 round * PIPE_DEPTH + i + 1);
			freeReplyObject(r);
			r = GET_REPLY(fx->c);
			assert_reply_error(
			    r, "ERR value is not an integer or out of range");
			freeReplyObject(r);
		}
	}
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        longest_idle_servicer, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(alternating_and_lowest_room,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(paused_and_other_queues_skipped,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(freed_room_best_across_queues,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(capacity_changes_match_at_once,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        fifo_pipelined, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(counters_within_pipeline,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        replies_behind_calls, csqd_fx_setup_default, csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("matching", tests, NULL, NULL);
}
