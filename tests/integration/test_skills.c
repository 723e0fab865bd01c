/*
 * Skills (protocol.md section 3c) through a real csqd over TCP. On the
 * memory engine: SKILLS and NEEDS, the rule, the replies that show them
 * (WHERE, SERVICERS, ROOMS, QSTATS), bad lists refused with nothing
 * changed, skill_order from the configuration, and a restart on the
 * journal that keeps skills and needs; the same on the Redis engine (on
 * csq.so, libcsq itself), but for the journal's restart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy_harness.h"

#define ESKILL "-ERR invalid skill list"

#define SKILL_CONF                                                             \
	"queues = ( { name = \"lv\"; skill_order = \"level\"; },\n"            \
	"  { name = \"support\"; overflow_after = 90; overflow_to = \"lv\";\n" \
	"    relax = ( { after = 30;  drop = \"billing\"; },\n"                \
	"              { after = 60;  lower = 2; },\n"                         \
	"              { after = 120; drop = \"*\"; } ); } );\n"

static int
skills_setup(void **state)
{
	return csqd_fx_setup(state, SKILL_CONF);
}

/*
 * The rule and what shows it: a user whose needs nobody meets waits
 * while a room without them stays free; a later user that one servicer
 * may take goes past it; WHERE, SERVICERS, ROOMS and QSTATS tell.
 */
static void
skills_match(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r, *f;

	CHECK(fx->c,
	      "['servicer','agent7','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT agent7 QUEUES support SKILLS de:5,billing:3");
	CHECK(fx->c,
	      "['servicer','agent8','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT agent8 QUEUES support SKILLS en:4");
	r = CMD(fx->c, "ENQUEUE u1 QUEUE support NEEDS de,billing:4");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_int_equal(FIELD_INT(r, "position"), 1);
	assert_string_equal(FIELD_STR(r, "needs"), "billing:4,de:1");
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','assigned','queue','support','room','agent7/0',"
	      "'servicer','agent7','needs','de:3']",
	      "ENQUEUE u2 QUEUE support NEEDS de:3");
	CHECK(fx->c,
	      "['state','assigned','queue','support','room','agent8/0',"
	      "'servicer','agent8']",
	      "ENQUEUE u3 QUEUE support");
	r = CMD(fx->c, "ENQUEUE u4 QUEUE support NEEDS en");
	assert_int_equal(FIELD_INT(r, "position"), 2);
	freeReplyObject(r);
	/* Bad lists: refused, nothing changes. */
	CHECK(fx->c, ESKILL, "ENQUEUE u5 QUEUE support NEEDS fr,,de");
	CHECK(fx->c, ESKILL,
	      "ENQUEUE u5 QUEUE support NEEDS a,b,c,d,e,f,g,h,i");
	CHECK(fx->c, ESKILL, "HEARTBEAT agent7 SKILLS de:101");
	CHECK(fx->c, ESKILL, "HEARTBEAT agent7 SKILLS de:5,de:4");
	CHECK(fx->c, SYNTAX, "ENQUEUE u5 QUEUE support NEEDS");
	CHECK(fx->c, ":2", "QLEN support");
	r = CMD(fx->c, "QUEUE support");
	assert_int_equal(r->elements, 2);
	assert_string_equal(r->element[0]->element[0]->str, "u1");
	assert_string_equal(r->element[1]->element[0]->str, "u4");
	freeReplyObject(r);
	/* SERVICERS: a 10th element for a servicer with skills. */
	r = CMD(fx->c, "SERVICERS");
	assert_int_equal(r->elements, 2);
	assert_int_equal(r->element[0]->elements, 10);
	assert_string_equal(r->element[0]->element[9]->str, "billing:3,de:5");
	freeReplyObject(r);
	/* ROOMS: the needs of the user in the room. */
	r = CMD(fx->c, "ROOMS agent7");
	assert_int_equal(r->elements, 1);
	assert_string_equal(FIELD_STR(r->element[0], "user"), "u2");
	assert_string_equal(FIELD_STR(r->element[0], "needs"), "de:3");
	freeReplyObject(r);
	/* QSTATS: users with needs waiting, by need-set. */
	r = CMD(fx->c, "QSTATS support");
	f = reply_field(r, "needs_waiting");
	assert_non_null(f);
	assert_int_equal(f->elements, 4);
	assert_string_equal(f->element[0]->str, "billing:4,de:1");
	assert_int_equal(f->element[1]->integer, 1);
	assert_string_equal(f->element[2]->str, "en:1");
	freeReplyObject(r);
	/* agent7 learns billing at 4: u1 is its next, when its room frees. */
	CHECK(fx->c,
	      "['servicer','agent7','status','ready','capacity',:2,"
	      "'active',:2,'ttl',:30]",
	      "HEARTBEAT agent7 CAPACITY 2 SKILLS de:5,billing:4");
	r = CMD(fx->c, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "room"), "agent7/1");
	assert_string_equal(FIELD_STR(r, "needs"), "billing:4,de:1");
	freeReplyObject(r);
	/* agent8's room frees and takes u4 (en). */
	CHECK(fx->c, ":1", "RELEASE agent8/0");
	WHERE_UNTIL(fx->c, "u4", "room", "agent8/0");
}

/* skill_order = "level" (the fixture's queue lv): the highest first. */
static void
skills_level_order(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	r = CMD(fx->c, "HEARTBEAT low QUEUES lv SKILLS de:2");
	freeReplyObject(r);
	r = CMD(fx->c, "HEARTBEAT high QUEUES lv SKILLS de:9");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u1 QUEUE lv NEEDS de");
	assert_string_equal(FIELD_STR(r, "servicer"), "high");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u2 QUEUE lv NEEDS de");
	assert_string_equal(FIELD_STR(r, "servicer"), "low");
	freeReplyObject(r);
	/* TRANSFER with NEEDS: u1 back to lv needing de at 5: only high,
	 * whose room it just left, may take it. */
	r = CMD(fx->c, "TRANSFER high/0 lv NEEDS de:5");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	assert_string_equal(FIELD_STR(r, "servicer"), "high");
	assert_string_equal(FIELD_STR(r, "needs"), "de:5");
	freeReplyObject(r);
}

/* A restart on the journal keeps skills and needs. */
static void
skills_restart(void **state)
{
	char dir[] = "/tmp/csq-skills-XXXXXX", conf[512], path[256];
	struct csqd *d;
	redisContext *c;
	redisReply *r;

	(void)state;
	/* The journal's: a daemon on Redis gets a prefix of its own at each
	 * start (the module's persistence: test_module.c). */
	if (strcmp(csqd_engine(), "memory") != 0)
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/csqd.journal", dir);
	snprintf(conf, sizeof(conf), "memory: { journal = \"%s\"; };\n", path);
	d = csqd_start(conf);
	c = csqd_connect(d);
	r = CMD(c, "HEARTBEAT s1 QUEUES q SKILLS fr:2 TTL 3600");
	freeReplyObject(r);
	r = CMD(c, "ENQUEUE u1 QUEUE q NEEDS de TTL 0");
	freeReplyObject(r);
	r = CMD(c, "ENQUEUE u2 QUEUE q NEEDS fr TTL 0");
	assert_string_equal(FIELD_STR(r, "room"), "s1/0");
	freeReplyObject(r);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	d = csqd_start(conf);
	c = csqd_connect(d);
	r = CMD(c, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "needs"), "de:1");
	freeReplyObject(r);
	r = CMD(c, "WHERE u2");
	assert_string_equal(FIELD_STR(r, "needs"), "fr:1");
	freeReplyObject(r);
	r = CMD(c, "SERVICERS");
	assert_string_equal(r->element[0]->element[9]->str, "fr:2");
	freeReplyObject(r);
	/* s1 still lacks de: its freed room stays free beside u1. */
	CHECK(c, ":1", "RELEASE s1/0");
	r = CMD(c, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	unlink(path);
	rmdir(dir);
}

/* csqd -n: skill_order's and relax's values, on either engine. */
static void
skills_check_config(void **state)
{
	char path[256], out[8192];
	int rc;

	(void)state;
	if (strcmp(csqd_engine(), "memory") != 0)
		skip(); /* csqd -n reads the file alone: one run is enough */
	conf_file(path, sizeof(path),
	          "queues = ( { name = \"a\"; skill_order = \"lvl\"; },\n"
	          "  { name = \"b\"; skill_order = 1; } );\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 78 ||
	    strstr(out, "csqd.conf:1: queues: skill_order must be "
	                "\"strategy\" or \"level\"") == NULL ||
	    strstr(out, "csqd.conf:2: queues: skill_order must be") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
	/* The Redis engine is csq.so, libcsq: it takes them too. */
	conf_file(path, sizeof(path),
	          "engine = \"redis\";\n"
	          "queues = ( { name = \"a\"; skill_order = \"level\";\n"
	          "  relax = ( { after = 5; drop = \"*\"; } ); } );\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0 || strstr(out, "configuration OK") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
	conf_file(
	    path, sizeof(path),
	    "queues = ( { name = \"a\"; relax = ( { after = 5; },\n"
	    "  { after = 9; drop = \"de:2\"; }, { after = 2; lower = 1; },\n"
	    "  { after = 3; lower = 0; } ); } );\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 78 ||
	    strstr(out, "csqd.conf:1: queues: a relax step needs drop or "
	                "lower") == NULL ||
	    strstr(out, "csqd.conf:2: queues: relax drop must be") == NULL ||
	    strstr(out, "csqd.conf:3: queues: relax lower must be between 1 "
	                "and 100") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
	conf_file(path, sizeof(path),
	          "queues = ( { name = \"a\"; skill_order = \"level\"; },\n"
	          "  { name = \"b\"; skill_order = \"strategy\"; } );\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0 || strstr(out, "configuration OK") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
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
 * Relaxation on the test clock (DEBUG CLOCK): the steps as deadlines,
 * relaxed on the user's channel with what went, WHERE's needs and
 * relax_ms, the place kept, a step that ends in matched; then the
 * overflow at 90 s, and lv's policy (none) keeps the needs.
 */
static void
skills_relax(void **state)
{
	const uint64_t t0 = UINT64_C(2000000000000);
	struct csqd_fx *fx = *state;
	redisContext *sub;
	struct msgs m = {0};
	const char *ev;
	redisReply *r;

	CHECK(fx->c, "+OK", "DEBUG CLOCK %llu", (unsigned long long)t0);
	sub = subscriber(fx->d, "user:u1");
	r = CMD(fx->c, "HEARTBEAT s1 QUEUES support SKILLS de:3 TTL 3600");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u0 QUEUE support NEEDS fr TTL 0");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u1 QUEUE support NEEDS de:5,billing:2 TTL 0");
	assert_int_equal(FIELD_INT(r, "position"), 2);
	assert_int_equal(FIELD_INT(r, "relax_ms"), 30000);
	freeReplyObject(r);
	CHECK(fx->c, "+OK", "DEBUG CLOCK %llu", (unsigned long long)t0 + 30000);
	r = CMD(fx->c, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "needs"), "de:5");
	assert_int_equal(FIELD_INT(r, "position"), 2);
	assert_int_equal(FIELD_INT(r, "relax_ms"), 30000);
	freeReplyObject(r);
	CHECK(fx->c, "+OK", "DEBUG CLOCK %llu", (unsigned long long)t0 + 60000);
	WHERE_UNTIL(fx->c, "u1", "room", "s1/0");
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "relaxed", "u1");
	assert_non_null(ev);
	assert_json_str(ev, "dropped", "billing");
	assert_json_str(ev, "needs", "de:5");
	assert_true(event_id_of(&m, "matched", "u1") >
	            event_id_of(&m, "relaxed", "u1"));
	msgs_free(&m);
	/* u0 (fr, nobody has it) overflows at 90 s, keeping its needs. */
	CHECK(fx->c, "+OK", "DEBUG CLOCK %llu", (unsigned long long)t0 + 90000);
	WHERE_UNTIL(fx->c, "u0", "queue", "lv");
	r = CMD(fx->c, "WHERE u0");
	assert_string_equal(FIELD_STR(r, "needs"), "fr:1");
	assert_null(reply_field(r, "relax_ms"));
	freeReplyObject(r);
	redisFree(sub);
}
#endif

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(skills_match, skills_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(skills_level_order, skills_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test(skills_restart),
	    cmocka_unit_test(skills_check_config),
#ifdef CSQ_TEST_CLOCK
	    cmocka_unit_test_setup_teardown(skills_relax, skills_setup,
	                                    csqd_fx_teardown),
#endif
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
