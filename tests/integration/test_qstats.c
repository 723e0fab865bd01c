/*
 * Wait estimates and queue statistics (protocol-v2 section 6) through a
 * real csqd over TCP, on either engine: eta_ms in ENQUEUE and WHERE,
 * QSTATS in RESP2 and RESP3.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy_harness.h"

/*
 * QSTATS: the fields of section 6 in order (then the abandons by
 * reason), a queue's service level from its policy, the share of the
 * outcomes within it; QUEUES lists the queues with a policy.
 */
static void
qstats(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['queue','vip','waiting',:0,'oldest_wait_ms',:0,'eta_ms',:-1,"
	      "'servicers',:0,'free_rooms',:0,'matched_total',:0,"
	      "'abandoned_total',:0,'overflowed_total',:0,'avg_wait_ms',:0,"
	      "'service_level',:5,'service_level_pct',:-1,"
	      "'abandoned_leave_total',:0,'abandoned_timeout_total',:0]",
	      "QSTATS vip");
	/* A queue without a policy nor anyone in it: the defaults. */
	CHECK(fx->c,
	      "['queue','nowhere','waiting',:0,'oldest_wait_ms',:0,"
	      "'eta_ms',:-1,'servicers',:0,'free_rooms',:0,'matched_total',:0,"
	      "'abandoned_total',:0,'overflowed_total',:0,'avg_wait_ms',:0,"
	      "'service_level',:20,'service_level_pct',:-1,"
	      "'abandoned_leave_total',:0,'abandoned_timeout_total',:0]",
	      "QSTATS nowhere");
	CHECK(fx->c, "['ag','default','general','small','vip']", "QUEUES");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES vip CAPACITY 2");
	/* A free room: a new arrival is matched at once. */
	r = CMD(fx->c, "QSTATS vip");
	assert_int_equal(FIELD_INT(r, "servicers"), 1);
	assert_int_equal(FIELD_INT(r, "free_rooms"), 2);
	assert_int_equal(FIELD_INT(r, "eta_ms"), 0);
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','assigned','queue','vip','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE x1 QUEUE vip");
	CHECK(fx->c,
	      "['state','assigned','queue','vip','room','s1/1',"
	      "'servicer','s1']",
	      "ENQUEUE x2 QUEUE vip");
	CHECK(fx->c,
	      "['state','waiting','queue','vip','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE y1 QUEUE vip");
	CHECK(fx->c,
	      "['state','waiting','queue','vip','position',:2,"
	      "'eta_ms',:-1]",
	      "ENQUEUE y2 QUEUE vip");
	sleep_ms(100); /* real time to pass: oldest_wait_ms is to count it */
	r = CMD(fx->c, "QSTATS vip");
	assert_int_equal(FIELD_INT(r, "waiting"), 2);
	assert_true(FIELD_INT(r, "oldest_wait_ms") >= 100);
	assert_true(FIELD_INT(r, "oldest_wait_ms") < 1000);
	assert_int_equal(FIELD_INT(r, "free_rooms"), 0);
	assert_int_equal(FIELD_INT(r, "matched_total"), 2);
	/* Matched at once, well within vip's 5 s. */
	assert_int_equal(FIELD_INT(r, "service_level_pct"), 100);
	freeReplyObject(r);
	CHECK(fx->c, ":1", "LEAVE y1");
	r = CMD(fx->c, "QSTATS vip");
	assert_int_equal(FIELD_INT(r, "waiting"), 1);
	assert_int_equal(FIELD_INT(r, "abandoned_total"), 1);
	assert_int_equal(FIELD_INT(r, "abandoned_leave_total"), 1);
	assert_int_equal(FIELD_INT(r, "abandoned_timeout_total"), 0);
	/* Two matched within, one abandoned: 2 of 3. */
	assert_int_equal(FIELD_INT(r, "service_level_pct"), 66);
	freeReplyObject(r);
	CHECK(fx->c, "-ERR invalid queue id", "QSTATS %s", "a b");
	CHECK(fx->c, "-ERR wrong number of arguments for 'qstats' command",
	      "QSTATS");
	CHECK(fx->c, "-ERR wrong number of arguments for 'qstats' command",
	      "QSTATS a b");
}

/*
 * eta_ms: -1 before any conversation of the queue ended; then, with
 * every room busy, about the time a conversation lasts per user ahead,
 * and 0 in QSTATS while a room is free. Nobody gives up here (a LEAVE
 * would teach the estimate that those ahead leave the line too).
 */
#define HOLD_MS 300

static void
eta(void **state)
{
	struct csqd_fx *fx = *state;
	long long e1, e2, e3;
	redisReply *r;
	int i;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES e");
	CHECK(fx->c,
	      "['state','assigned','queue','e','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE h0 QUEUE e");
	r = CMD(fx->c, "QSTATS e");
	assert_int_equal(FIELD_INT(r, "eta_ms"), -1);
	freeReplyObject(r);
	/* Conversations of HOLD_MS, one after another. */
	sleep_ms(HOLD_MS);
	CHECK(fx->c, ":1", "RELEASE s1/0");
	for (i = 1; i <= 3; i++) {
		r = CMD(fx->c, "ENQUEUE h%d QUEUE e", i);
		assert_string_equal(FIELD_STR(r, "state"), "assigned");
		freeReplyObject(r);
		sleep_ms(HOLD_MS);
		CHECK(fx->c, ":1", "RELEASE s1/0");
	}
	r = CMD(fx->c, "QSTATS e");
	assert_int_equal(FIELD_INT(r, "eta_ms"), 0);
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','assigned','queue','e','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE busy QUEUE e");
	r = CMD(fx->c, "ENQUEUE w1 QUEUE e");
	e1 = FIELD_INT(r, "eta_ms");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE w2 QUEUE e");
	e2 = FIELD_INT(r, "eta_ms");
	freeReplyObject(r);
	r = CMD(fx->c, "QSTATS e");
	e3 = FIELD_INT(r, "eta_ms");
	freeReplyObject(r);
	/* One room, conversations of HOLD_MS (and a little more, under a
	 * loaded machine): the first in line waits about one, the second
	 * two, a new arrival three. */
	if (e1 < HOLD_MS - 50 || e1 > 4 * HOLD_MS || e2 < e1 * 3 / 2 ||
	    e2 > e1 * 5 / 2 || e3 < e1 * 5 / 2 || e3 > e1 * 7 / 2)
		fail_msg("eta_ms %lld, %lld, %lld for conversations of %d ms",
		         e1, e2, e3, HOLD_MS);
	r = CMD(fx->c, "WHERE w2");
	assert_true(FIELD_INT(r, "eta_ms") <= e2);
	assert_true(FIELD_INT(r, "eta_ms") >= e1);
	freeReplyObject(r);
	/* Nobody serves e any more: no estimate. */
	CHECK(fx->c, ":1", "LOGOUT s1");
	r = CMD(fx->c, "WHERE w2");
	assert_int_equal(FIELD_INT(r, "eta_ms"), -1);
	freeReplyObject(r);
}

/* QSTATS in RESP3 is a map. */
static void
qstats_resp3(void **state)
{
	struct csqd_fx *fx = *state;
	char buf[4096];
	size_t n;
	int fd = raw_connect(fx->d->port), closed;

	raw_sends(fd, "HELLO 3\r\n");
	n = raw_read(fd, buf, sizeof(buf) - 1, 200, &closed);
	assert_true(n > 0);
	raw_sends(fd, "QSTATS vip\r\n");
	n = raw_read(fd, buf, sizeof(buf) - 1, 200, &closed);
	buf[n] = '\0';
	if (strncmp(buf, "%14\r\n$5\r\nqueue\r\n$3\r\nvip\r\n", 25) != 0)
		fail_msg("QSTATS in RESP3: %.80s", buf);
	assert_non_null(strstr(buf, "$17\r\nservice_level_pct\r\n:-1\r\n"));
	close(fd);
}

/* A user that overflowed out of vip counts in vip's overflowed_total and
 * no longer in its waiting (the overflow itself is test_policies.c's). */
static void
overflow_counted(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['state','waiting','queue','vip','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE v1 QUEUE vip TIER 1");
	WHERE_UNTIL(fx->c, "v1", "queue", "general");
	r = CMD(fx->c, "QSTATS vip");
	assert_int_equal(FIELD_INT(r, "overflowed_total"), 1);
	assert_int_equal(FIELD_INT(r, "waiting"), 0);
	freeReplyObject(r);
}

/* A reload's service level applies at once; an empty `queues` gives the
 * queue the default again. */
static void
level_reloaded(void **state)
{
	struct csqd_fx *fx = *state;

	csqd_rewrite_conf(fx->d, "queues = ( { name = \"r\"; max_length = 2;"
	                         " service_level = 7; } );");
	kill(fx->d->pid, SIGHUP);
	LEVEL_UNTIL(fx->c, "r", 7);
	csqd_rewrite_conf(fx->d,
	                  "queues = ( { name = \"r\"; overflow_after = 1;"
	                  " overflow_to = \"s\"; service_level = 8; } );");
	kill(fx->d->pid, SIGHUP);
	LEVEL_UNTIL(fx->c, "r", 8);
	csqd_rewrite_conf(fx->d, "");
	kill(fx->d->pid, SIGHUP);
	LEVEL_UNTIL(fx->c, "r", 20);
}

/* Sends the n commands of cmds in one pipeline and reads their replies. */
static void
pipeline(redisContext *c, const char *const *cmds, size_t n)
{
	redisReply *r;
	size_t i;

	for (i = 0; i < n; i++)
		redisAppendCommand(c, cmds[i]);
	for (i = 0; i < n; i++) {
		if (redisGetReply(c, (void **)&r) != REDIS_OK)
			fail_msg("reply %zu of the pipeline: %s", i, c->errstr);
		if (r->type == REDIS_REPLY_ERROR)
			fail_msg("%s: %s", cmds[i], r->str);
		freeReplyObject(r);
	}
}

/*
 * A queue's numbers live while it exists: while a user of it waits or is
 * in a room, or a servicer serves it (protocol-v2 section 6). Forgotten
 * when the last goes, even in the middle of one pipeline (which the Redis
 * engine runs as one script call), and started again from zeros.
 */
static void
numbers_forgotten(void **state)
{
	struct csqd_fx *fx = *state;
	static const char *const first[] = {
	    "HEARTBEAT s1 QUEUES x", "ENQUEUE a QUEUE x",
	    "ENQUEUE b QUEUE x",     "LEAVE b",
	    "RELEASE s1/0",          "LOGOUT s1",
	    "HEARTBEAT s1 QUEUES x", "ENQUEUE c QUEUE x",
	};
	static const char *const held[] = {
	    "HEARTBEAT s2 QUEUES z",
	    "ENQUEUE z1 QUEUE z",
	    "HEARTBEAT s2 QUEUES other",
	};
	redisReply *r;

	pipeline(fx->c, first, sizeof(first) / sizeof(first[0]));
	/* a and b went with x's first life; c is its only outcome. */
	r = CMD(fx->c, "QSTATS x");
	assert_int_equal(FIELD_INT(r, "servicers"), 1);
	assert_int_equal(FIELD_INT(r, "matched_total"), 1);
	assert_int_equal(FIELD_INT(r, "abandoned_total"), 0);
	assert_int_equal(FIELD_INT(r, "service_level_pct"), 100);
	freeReplyObject(r);
	/* A user in a room holds its queue, served or not. */
	pipeline(fx->c, held, sizeof(held) / sizeof(held[0]));
	r = CMD(fx->c, "QSTATS z");
	assert_int_equal(FIELD_INT(r, "servicers"), 0);
	assert_int_equal(FIELD_INT(r, "matched_total"), 1);
	freeReplyObject(r);
	CHECK(fx->c, ":1", "RELEASE s2/0");
	r = CMD(fx->c, "QSTATS z");
	assert_int_equal(FIELD_INT(r, "matched_total"), 0);
	assert_int_equal(FIELD_INT(r, "service_level_pct"), -1);
	freeReplyObject(r);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(qstats, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(eta, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(qstats_resp3, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(overflow_counted, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        level_reloaded, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        numbers_forgotten, csqd_fx_setup_default, csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
