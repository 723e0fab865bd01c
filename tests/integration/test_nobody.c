/*
 * Nobody there (protocol.md 3c) through a real csqd over TCP, on the
 * memory engine and on csq.so (integration.redis.nobody): an
 * ENQUEUE refused (and nothing changed) or sent to a fallback while no
 * servicer serves the queue, let in once one logs in; the users waiting
 * moved or released when the grace runs out after the last servicer
 * logs out or pauses, each with its event; QSTATS' nobody_ms; a SIGHUP
 * that gives a policy to a queue with users waiting already; csqd -n's
 * errors.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy_harness.h"

#define ENOBODY "-NOBODY nobody serves the queue now"

#define NOBODY_CONF                                                            \
	"queues = (\n"                                                         \
	"  { name = \"closed\"; nobody = { when_nobody = \"refuse\"; }; },\n"  \
	"  { name = \"fb\"; nobody = { when_nobody = \"fallback\";\n"          \
	"    fallback = \"general\"; }; },\n"                                  \
	"  { name = \"gr\"; nobody = { at_nobody = \"move\"; grace = 1;\n"     \
	"    move_to = \"general\"; }; },\n"                                   \
	"  { name = \"rl\"; nobody = { counts = \"ready\";\n"                  \
	"    at_nobody = \"release\"; grace = 1; }; } );\n"

static int
nobody_setup(void **state)
{
	return csqd_fx_setup(state, NOBODY_CONF);
}

/* QSTATS q's nobody_ms, or -2 when QSTATS has none. */
static long long
nobody_ms(redisContext *c, const char *q)
{
	redisReply *r = CMD(c, "QSTATS %s", q);
	redisReply *f = reply_field(r, "nobody_ms");
	long long v = f != NULL ? f->integer : -2;

	freeReplyObject(r);
	return v;
}

/* Runs cmd and checks its reply's field (a string). */
#define FIELD_IS(c, field, value, ...)                                         \
	do {                                                                   \
		redisReply *r_ = CMD(c, __VA_ARGS__);                          \
		assert_string_equal(FIELD_STR(r_, field), value);              \
		freeReplyObject(r_);                                           \
	} while (0)

/* Arrivals: refused with nothing changed, sent to the fallback, let in
 * once a servicer logs in. */
static void
arrivals(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub;
	struct msgs m;

	sub = subscriber(fx->d, "events");
	CHECK(fx->c, ENOBODY, "ENQUEUE u1 QUEUE closed");
	CHECK(fx->c, "['state','none']", "WHERE u1");
	CHECK(fx->c, ":0", "QLEN closed");
	assert_true(nobody_ms(fx->c, "closed") >= 0);
	assert_int_equal(nobody_ms(fx->c, "general"), -2);
	CHECK(fx->c,
	      "['state','waiting','queue','general','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE u2 QUEUE fb");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES closed");
	assert_int_equal(nobody_ms(fx->c, "closed"), -1);
	CHECK(fx->c,
	      "['state','assigned','queue','closed','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1 QUEUE closed");
	/* A move by ENQUEUE into a queue nobody serves: refused, u2 stays. */
	CHECK(fx->c, ":1", "LOGOUT s1"); /* u1 back in line */
	CHECK(fx->c, ENOBODY, "ENQUEUE u2 QUEUE closed");
	FIELD_IS(fx->c, "queue", "general", "WHERE u2");
	MSGS_COLLECT(sub, &m);
	/* u1 went with s1 back in closed's line: requeued, and nothing
	 * for the refusals. */
	assert_int_equal(msgs_find(&m, 0, "left"), -1);
	msgs_free(&m);
	redisFree(sub);
}

/* The grace: after the last servicer goes, its users go too. */
static void
grace(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub;
	struct msgs m;
	const char *ev;

	sub = subscriber(fx->d, "events");
	FIELD_IS(fx->c, "status", "ready", "HEARTBEAT s2 QUEUES gr");
	FIELD_IS(fx->c, "state", "assigned", "ENQUEUE u3 QUEUE gr");
	FIELD_IS(fx->c, "state", "waiting", "ENQUEUE u4 QUEUE gr");
	CHECK(fx->c, ":1", "LOGOUT s2");
	WHERE_UNTIL(fx->c, "u3", "queue", "general");
	WHERE_UNTIL(fx->c, "u4", "queue", "general");
	/* counts = "ready": a pause starts the spell. */
	FIELD_IS(fx->c, "status", "ready", "HEARTBEAT s3 QUEUES rl");
	FIELD_IS(fx->c, "state", "assigned", "ENQUEUE u5 QUEUE rl");
	FIELD_IS(fx->c, "state", "waiting", "ENQUEUE u6 QUEUE rl");
	CHECK(fx->c, "+OK", "PAUSE s3");
	WHERE_UNTIL(fx->c, "u6", "state", "none");
	FIELD_IS(fx->c, "state", "assigned", "WHERE u5"); /* in its room */
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "overflowed", "u4");
	assert_non_null(ev);
	assert_json_str(ev, "reason", "nobody");
	assert_json_str(ev, "from_queue", "gr");
	ev = event_of(&m, "left", "u6");
	assert_non_null(ev);
	assert_json_str(ev, "reason", "nobody");
	msgs_free(&m);
	redisFree(sub);
}

/* SIGHUP: a policy given to a queue with a user waiting already, and no
 * servicer: its grace from the reload. */
static void
reload(void **state)
{
	struct csqd_fx *fx = *state;

	FIELD_IS(fx->c, "state", "waiting", "ENQUEUE u7 QUEUE late");
	csqd_rewrite_conf(fx->d,
	                  "queues = ( { name = \"late\"; nobody = {\n"
	                  "  at_nobody = \"release\"; grace = 1; }; } );\n");
	kill(fx->d->pid, SIGHUP);
	WHERE_UNTIL(fx->c, "u7", "state", "none");
}

/* csqd -n: every bad key at its line; both engines take the keys. */
static void
check_config(void **state)
{
	char path[256], out[8192];
	int rc;

	(void)state;
	conf_file(path, sizeof(path),
	          "queues = ( { name = \"a\"; nobody = { when_nobody = "
	          "\"maybe\"; }; },\n"
	          "  { name = \"b\"; nobody = { grace = 0; }; },\n"
	          "  { name = \"c\"; nobody = { at_nobody = \"move\"; "
	          "grace = 5; }; },\n"
	          "  { name = \"d\"; nobody = { when_nobody = \"fallback\"; "
	          "fallback = \"e\"; }; },\n"
	          "  { name = \"e\"; nobody = { when_nobody = \"fallback\"; "
	          "fallback = \"d\"; }; },\n"
	          "  { name = \"f\"; nobody = { nobody = 1; }; } );\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 78 ||
	    strstr(out, "csqd.conf:1: queues: nobody: when_nobody must be "
	                "\"wait\", \"refuse\" or \"fallback\"") == NULL ||
	    strstr(out, "csqd.conf:2: queues: nobody: grace must be") == NULL ||
	    strstr(out, "csqd.conf:3: queues: \"c\": nobody:") == NULL ||
	    strstr(out, "csqd.conf:4: queues: \"d\": nobody: fallback leads "
	                "back") == NULL ||
	    strstr(out, "csqd.conf:6: queues: nobody: unknown key nobody") ==
	        NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
	/* The Redis engine is csq.so, libcsq: it takes them too. */
	conf_file(path, sizeof(path),
	          "engine = \"redis\";\n"
	          "queues = ( { name = \"a\";\n"
	          "  nobody = { when_nobody = \"refuse\"; }; } );\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0 || strstr(out, "configuration OK") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
	conf_file(path, sizeof(path), NOBODY_CONF);
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0 || strstr(out, "configuration OK") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(arrivals, nobody_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(grace, nobody_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(reload, nobody_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test(check_config),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("nobody", tests, NULL, NULL);
}
