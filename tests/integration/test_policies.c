/*
 * Queue policies (protocol-v2 section 4) through a real csqd over TCP, on
 * either engine: the `queues` configuration (csqd -n, SIGHUP), max_length,
 * per-queue strategy, overflow and aging on their deadlines. Timed rules
 * run on the wall clock with their shortest settings (1 s); each wait is a
 * poll with a bound (policy_harness.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy_harness.h"

/* Waits until d's log says its configuration was reloaded n times: the
 * commands sent after that come after the reload on either engine (the
 * Redis engine sends the new policies before them). */
static void
reloads_until(struct csqd *d, int n)
{
	int64_t deadline = now_ms() + WAIT_MS;
	char buf[65536];
	const char *p;
	size_t len;
	int seen;
	FILE *f;

	for (;;) {
		seen = 0;
		if ((f = fopen(d->log_path, "r")) != NULL) {
			len = fread(buf, 1, sizeof(buf) - 1, f);
			buf[len] = '\0';
			fclose(f);
			for (p = buf;
			     (p = strstr(p, "configuration reloaded")) != NULL;
			     p++)
				seen++;
		}
		if (seen >= n)
			return;
		if (now_ms() > deadline)
			fail_msg("csqd reloaded %d times, not %d", seen, n);
		sleep_ms(20);
	}
}

/*
 * Overflow: a user that waited overflow_after in vip moves to general,
 * keeping its tier; event overflowed to both queues, its own channel and
 * events (vip's count of it is test_qstats.c's). A re-ENQUEUE naming vip
 * does not pull it back.
 */
static void
overflow_moves(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	redisContext *qsub = subscriber(fx->d, "queue:vip");
	struct msgs m = {0}, mq = {0};
	const char *ev;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES general");
	CHECK(fx->c,
	      "['state','assigned','queue','general','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE g0 QUEUE general");
	/* Nobody serves vip: no estimate. */
	CHECK(fx->c,
	      "['state','waiting','queue','vip','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE v1 QUEUE vip TIER 1");
	WHERE_UNTIL(fx->c, "v1", "queue", "general");
	r = CMD(fx->c, "WHERE v1");
	assert_int_equal(FIELD_INT(r, "tier"), 1);
	assert_true(FIELD_INT(r, "waited_ms") >= 1000);
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "overflowed", "v1");
	if (ev == NULL)
		fail_msg("no overflowed event for v1");
	assert_json_str(ev, "from_queue", "vip");
	assert_json_str(ev, "queue", "general");
	assert_json_int(ev, "tier", 1);
	assert_json_int(ev, "position", 1);
	assert_json_has(ev, "id");
	MSGS_COLLECT(qsub, &mq);
	assert_non_null(event_of(&mq, "overflowed", "v1"));
	CHECK(fx->c, ":0", "QLEN vip");
	/* A refreshing frontend names vip again: v1 stays in general. */
	r = CMD(fx->c, "ENQUEUE v1 QUEUE vip");
	assert_string_equal(FIELD_STR(r, "queue"), "general");
	freeReplyObject(r);
	/* The room frees: v1 takes it. */
	CHECK(fx->c, ":1", "RELEASE s1/0");
	WHERE_UNTIL(fx->c, "v1", "state", "assigned");
	msgs_free(&m);
	msgs_free(&mq);
	redisFree(sub);
	redisFree(qsub);
}

/* Overflow into a queue with a free room ends in matched, from_queue vip,
 * without an overflowed event. */
static void
overflow_into_free_room(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	struct msgs m = {0};
	const char *ev;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES general");
	CHECK(fx->c,
	      "['state','waiting','queue','vip','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE v1 QUEUE vip");
	WHERE_UNTIL(fx->c, "v1", "state", "assigned");
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "matched", "v1");
	if (ev == NULL)
		fail_msg("no matched event for v1");
	assert_json_str(ev, "from_queue", "vip");
	assert_json_str(ev, "reason", "overflow"); /* not a re-ENQUEUE's */
	assert_json_str(ev, "queue", "general");
	assert_json_str(ev, "servicer", "s1");
	assert_null(event_of(&m, "overflowed", "v1"));
	msgs_free(&m);
	redisFree(sub);
}

/*
 * Aging in general: one tier per second waited, up to 2; event rescored
 * with reason aging. A user whose own tier is higher keeps it.
 */
static void
aging(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "queue:general");
	struct msgs m = {0};
	const char *ev;
	int i, n;

	CHECK(fx->c,
	      "['state','waiting','queue','general','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE a1 QUEUE general");
	CHECK(fx->c,
	      "['state','waiting','queue','general','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE a2 QUEUE general TIER 5");
	WHERE_UNTIL_INT(fx->c, "a1", "tier", 1);
	WHERE_UNTIL_INT(fx->c, "a1", "tier", 2);
	/* A second more: the cap holds. */
	sleep_ms(1300);
	WHERE_UNTIL_INT(fx->c, "a1", "tier", 2);
	WHERE_UNTIL_INT(fx->c, "a2", "tier", 5);
	MSGS_COLLECT(sub, &m);
	for (i = 0, n = 0; (i = msgs_find(&m, i, "rescored")) >= 0; i++, n++) {
		ev = m.m[i].payload;
		assert_json_str(ev, "user", "a1");
		assert_json_str(ev, "reason", "aging");
		assert_json_int(ev, "tier", n + 1);
	}
	assert_int_equal(n, 2);
	/* A v1 rescore names its reason too. */
	CHECK(fx->c,
	      "['state','waiting','queue','general','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE a1 QUEUE general TIER 9");
	msgs_free(&m);
	MSGS_COLLECT(sub, &m);
	i = msgs_find(&m, 0, "rescored");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "reason", "enqueue");
	msgs_free(&m);
	redisFree(sub);
}

/* max_length of a policy: small takes 2, default goes on. */
static void
max_length(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "['state','waiting','queue','small','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE m1 QUEUE small");
	CHECK(fx->c,
	      "['state','waiting','queue','small','position',:2,"
	      "'eta_ms',:-1]",
	      "ENQUEUE m2 QUEUE small");
	CHECK(fx->c, FULL, "ENQUEUE m3 QUEUE small");
	CHECK(fx->c, "['state','none']", "WHERE m3");
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE m3");
}

/*
 * Aging meets overflow: in ag the user ages once (1 s), then overflows
 * (2 s) to general with its tier, where its clocks start again and
 * general's aging goes on from there.
 */
static void
aging_then_overflow(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "user:a");
	struct msgs m = {0};
	int i;

	CHECK(fx->c,
	      "['state','waiting','queue','ag','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE a QUEUE ag");
	WHERE_UNTIL(fx->c, "a", "queue", "general");
	WHERE_UNTIL_INT(fx->c, "a", "tier", 2);
	MSGS_COLLECT(sub, &m);
	i = msgs_find(&m, 0, "rescored");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "queue", "ag");
	assert_json_int(m.m[i].payload, "tier", 1);
	i = msgs_find(&m, i + 1, "overflowed");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "from_queue", "ag");
	assert_json_int(m.m[i].payload, "tier", 1);
	i = msgs_find(&m, i + 1, "rescored");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "queue", "general");
	assert_json_str(m.m[i].payload, "reason", "aging");
	assert_json_int(m.m[i].payload, "tier", 2);
	msgs_free(&m);
	redisFree(sub);
}

/* csqd -n: each bad queues entry is an error at its line. */
static void
check_errors(void **state)
{
	char path[256], out[8192], want[512];
	size_t i;
	int rc;
	static const char *const expect[] = {
	    ":3: queues: unknown key colour",
	    ":4: queues: max_length must be between 1 and 100000000 (not 0)",
	    ":5: queues: \"z\": overflow_after and overflow_to go together",
	    ":6: queues: name must be a queue id",
	    ":7: queues: \"a\": overflow_to leads back to this queue (a "
	    "cycle)",
	    ":8: queues: \"b\": overflow_to leads back to this queue (a "
	    "cycle)",
	    ":9: queues: \"vip\": a second policy for the same queue",
	    ":10: queues: an entry needs a name",
	    ":11: queues: strategy must be \"longest_idle\" or "
	    "\"least_busy\"",
	    ":12: queues: \"t\": aging_max_tier above max_tier",
	    ":13: queues: service_level must be an integer",
	};

	(void)state;
	conf_file(
	    path, sizeof(path),
	    "max_tier = 3;\n"
	    "queues = ( { name = \"vip\"; },\n"
	    "  { name = \"x\"; colour = \"red\"; },\n"
	    "  { name = \"y\"; max_length = 0; },\n"
	    "  { name = \"z\"; overflow_after = 5; },\n"
	    "  { name = \"bad id!\"; },\n"
	    "  { name = \"a\"; overflow_after = 5; overflow_to = \"b\"; },\n"
	    "  { name = \"b\"; overflow_after = 5; overflow_to = \"a\"; },\n"
	    "  { name = \"vip\"; },\n"
	    "  { service_level = 3; },\n"
	    "  { name = \"s\"; strategy = \"random\"; },\n"
	    "  { name = \"t\"; aging_every = 9; aging_max_tier = 4; },\n"
	    "  { name = \"u\"; service_level = \"20\"; }\n"
	    ");\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 78)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
	for (i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		snprintf(want, sizeof(want), "csqd.conf%s", expect[i]);
		if (strstr(out, want) == NULL)
			fail_msg("no \"%s\" in:\n%s", want, out);
	}
	assert_null(strstr(out, "configuration OK"));
	/* The example of the protocol passes. */
	conf_file(path, sizeof(path),
	          "queues = (\n"
	          "  { name = \"vip\"; strategy = \"least_busy\"; "
	          "max_length = 500;\n"
	          "    overflow_after = 60; overflow_to = \"general\";\n"
	          "    aging_every = 120; aging_max_tier = 3;\n"
	          "    service_level = 20; }\n"
	          ");\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0 || strstr(out, "configuration OK") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
}

/*
 * SIGHUP: new policies apply to the users already waiting (their clocks
 * from their arrival in the queue); a bad file keeps the ones in force;
 * an empty one removes them. (A reloaded service level is
 * test_qstats.c's.)
 */
static void
reload(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "['state','waiting','queue','r','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE r1 QUEUE r");
	CHECK(fx->c,
	      "['state','waiting','queue','r','position',:2,"
	      "'eta_ms',:-1]",
	      "ENQUEUE r2 QUEUE r");
	csqd_rewrite_conf(fx->d, "queues = ( { name = \"r\"; max_length = 2;"
	                         " service_level = 7; } );");
	kill(fx->d->pid, SIGHUP);
	reloads_until(fx->d, 1);
	CHECK(fx->c, FULL, "ENQUEUE r3 QUEUE r");
	/* A cycle: refused, the running policies stay. */
	csqd_rewrite_conf(fx->d,
	                  "queues = ( { name = \"r\"; overflow_after = 1;"
	                  " overflow_to = \"r\"; service_level = 9; } );");
	kill(fx->d->pid, SIGHUP);
	csqd_wait_log(fx->d, "keeping the running configuration");
	CHECK(fx->c, FULL, "ENQUEUE r3 QUEUE r");
	/* Overflow added for those waiting: they have waited long enough. */
	sleep_ms(1000);
	csqd_rewrite_conf(fx->d,
	                  "queues = ( { name = \"r\"; overflow_after = 1;"
	                  " overflow_to = \"s\"; service_level = 8; } );");
	kill(fx->d->pid, SIGHUP);
	reloads_until(fx->d, 2);
	WHERE_UNTIL(fx->c, "r1", "queue", "s");
	WHERE_UNTIL(fx->c, "r2", "queue", "s");
	csqd_rewrite_conf(fx->d, "");
	kill(fx->d->pid, SIGHUP);
	reloads_until(fx->d, 3);
	CHECK(fx->c, "['default','s']", "QUEUES");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(overflow_moves, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(overflow_into_free_room,
	                                    policy_setup, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(aging, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(max_length, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(aging_then_overflow, policy_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test(check_errors),
	    cmocka_unit_test_setup_teardown(reload, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
