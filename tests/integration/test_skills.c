/*
 * Skills (protocol.md section 3c) through a real csqd over TCP. On the
 * memory engine: SKILLS and NEEDS, the rule, the replies that show them
 * (WHERE, SERVICERS, ROOMS, QSTATS), bad lists refused with nothing
 * changed, skill_order from the configuration, and a restart on the
 * journal that keeps skills and needs. On the Redis engine: every SKILLS
 * and NEEDS refused with its error, and nothing changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy_harness.h"

#define ESKILL "-ERR invalid skill list"
#define EUNSUP "-ERR SKILLS and NEEDS need the memory engine"

#define SKILL_CONF "queues = ( { name = \"lv\"; skill_order = \"level\"; } );\n"

/* skill_order is refused on the Redis engine's configuration. */
static int
skills_setup(void **state)
{
	return csqd_fx_setup(
	    state, strcmp(csqd_engine(), "memory") == 0 ? SKILL_CONF : "");
}

static int
memory_engine(void)
{
	return strcmp(csqd_engine(), "memory") == 0;
}

/* The Redis engine refuses skills until it runs libcsq (the module). */
static void
skills_refused_on_redis(void **state)
{
	struct csqd_fx *fx = *state;

	if (memory_engine())
		skip();
	CHECK(fx->c, EUNSUP, "HEARTBEAT s1 QUEUES q SKILLS de:5");
	CHECK(fx->c, "[]", "SERVICERS");
	CHECK(fx->c, EUNSUP, "ENQUEUE u1 QUEUE q NEEDS de");
	CHECK(fx->c, ":0", "QLEN q");
	/* A bad list is a bad list on every engine. */
	CHECK(fx->c, ESKILL, "ENQUEUE u1 QUEUE q NEEDS de:0");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1 QUEUE q");
	CHECK(fx->c, EUNSUP, "TRANSFER s1/0 q NEEDS de");
	CHECK(fx->c, ":1", "RELEASE s1/0");
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

	if (!memory_engine())
		skip();
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

	if (!memory_engine())
		skip();
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
	if (!memory_engine())
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

/* csqd -n: skill_order's values, and the Redis engine refuses it. */
static void
skills_check_config(void **state)
{
	char path[256], out[8192];
	int rc;

	(void)state;
	if (!memory_engine())
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
	conf_file(path, sizeof(path),
	          "engine = \"redis\";\n"
	          "queues = ( { name = \"a\"; skill_order = \"level\"; } );\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 78 || strstr(out, "csqd.conf:2: queues: \"a\": skill_order "
	                            "needs engine = \"memory\"") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
	conf_file(path, sizeof(path),
	          "queues = ( { name = \"a\"; skill_order = \"level\"; },\n"
	          "  { name = \"b\"; skill_order = \"strategy\"; } );\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0 || strstr(out, "configuration OK") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(skills_refused_on_redis,
	                                    skills_setup, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(skills_match, skills_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(skills_level_order, skills_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test(skills_restart),
	    cmocka_unit_test(skills_check_config),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
