/*
 * The admin's overview commands (protocol-v2 section 6): QUEUES, the
 * queues that exist, and ROOMS, a servicer's rooms with who is in them;
 * and the queues column of SERVICERS. On both engines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static int
setup(void **state)
{
	return csqd_fx_setup_default(state);
}

/* QUEUES: default always; a queue while someone waits in it or a servicer
 * serves it, and not for a user in a room alone; sorted by name. */
static void
queues_that_exist(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c, "['default']", "QUEUES");
	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 QUEUES vip,Zeta,sales"));
	CHECK(fx->c, "['Zeta','default','sales','vip']", "QUEUES");
	/* Waiting with nobody to serve it: listed while it waits. */
	freeReplyObject(CMD(fx->c, "ENQUEUE u1 QUEUE lonely"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u2 QUEUE lonely TIER 2"));
	CHECK(fx->c, "['Zeta','default','lonely','sales','vip']", "QUEUES");
	CHECK(fx->c, ":1", "LEAVE u1");
	CHECK(fx->c, "['Zeta','default','lonely','sales','vip']", "QUEUES");
	CHECK(fx->c, ":1", "LEAVE u2");
	CHECK(fx->c, "['Zeta','default','sales','vip']", "QUEUES");
	/* u3 is in s1's room; s1 then serves other queues: sales is neither
	 * waited in nor served, though u3 came from it. */
	freeReplyObject(CMD(fx->c, "ENQUEUE u3 QUEUE sales"));
	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 QUEUES vip"));
	CHECK(fx->c, "['default','vip']", "QUEUES");
	CHECK(fx->c, ":1", "LOGOUT s1");
	/* u3 waits in sales again. */
	CHECK(fx->c, "['default','sales']", "QUEUES");
	CHECK(fx->c, "-ERR wrong number of arguments for 'queues' command",
	      "QUEUES x");
}

/* ROOMS: every room in index order, free or with its user and for how
 * long; a busy room above a lowered capacity lives on. */
static void
rooms_of_a_servicer(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 CAPACITY 3"));
	CHECK(fx->c,
	      "[['room','s1/0','state','free','user','','since_ms',:0],"
	      "['room','s1/1','state','free','user','','since_ms',:0],"
	      "['room','s1/2','state','free','user','','since_ms',:0]]",
	      "ROOMS s1");
	freeReplyObject(CMD(fx->c, "ENQUEUE u1"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u2"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u3"));
	CHECK(fx->c, ":1", "RELEASE s1/0");
	sleep_ms(250);
	r = CMD(fx->c, "ROOMS s1");
	assert_int_equal(r->elements, 3);
	assert_string_equal(FIELD_STR(r->element[0], "state"), "free");
	assert_string_equal(FIELD_STR(r->element[1], "room"), "s1/1");
	assert_string_equal(FIELD_STR(r->element[1], "state"), "assigned");
	assert_string_equal(FIELD_STR(r->element[1], "user"), "u2");
	assert_true(FIELD_INT(r->element[1], "since_ms") >= 250);
	assert_true(FIELD_INT(r->element[1], "since_ms") < 10000);
	assert_string_equal(FIELD_STR(r->element[2], "user"), "u3");
	freeReplyObject(r);
	/* Capacity 1: rooms 1 and 2 hold users and live on above it, each
	 * until it is free. */
	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 CAPACITY 1"));
	r = CMD(fx->c, "ROOMS s1");
	assert_int_equal(r->elements, 3);
	freeReplyObject(r);
	CHECK(fx->c, ":1", "RELEASE s1/1");
	r = CMD(fx->c, "ROOMS s1");
	assert_int_equal(r->elements, 2);
	assert_string_equal(FIELD_STR(r->element[0], "room"), "s1/0");
	assert_string_equal(FIELD_STR(r->element[1], "room"), "s1/2");
	assert_string_equal(FIELD_STR(r->element[1], "user"), "u3");
	freeReplyObject(r);
	CHECK(fx->c, "-NOTFOUND no such servicer or room", "ROOMS nobody");
	CHECK(fx->c, "-ERR invalid servicer id", "ROOMS %s", "bad!id");
	CHECK(fx->c, "-ERR wrong number of arguments for 'rooms' command",
	      "ROOMS");
	CHECK(fx->c, "-ERR wrong number of arguments for 'rooms' command",
	      "ROOMS s1 s2");
}

/* SERVICERS rows end with the queues each serves. */
static void
servicers_queues(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 QUEUES vip,default"));
	freeReplyObject(CMD(fx->c, "HEARTBEAT s2"));
	r = CMD(fx->c, "SERVICERS");
	assert_int_equal(r->elements, 2);
	/* v1's five, the queues, then OFFER, WRAPUP, missed (v2 §1, §2). */
	assert_int_equal(r->element[0]->elements, 9);
	assert_repr(r->element[0]->element[5], "['vip','default']");
	assert_repr(r->element[1]->element[5], "['default']");
	freeReplyObject(r);
}

/* In a MULTI block as any command; with RESP3 a room is a map. */
static void
in_multi_and_resp3(void **state)
{
	struct csqd_fx *fx = *state;
	char buf[1024];
	int fd, closed;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s1"));
	CHECK(fx->c, "+OK", "MULTI");
	CHECK(fx->c, "+QUEUED", "QUEUES");
	CHECK(fx->c, "+QUEUED", "ROOMS s1");
	CHECK(fx->c,
	      "[['default'],"
	      "[['room','s1/0','state','free','user','','since_ms',:0]]]",
	      "EXEC");
	/* hiredis reads RESP2 only: RESP3 on a socket of its own. */
	fd = raw_connect(fx->d->port);
	raw_sends(fd, "HELLO 3\r\n");
	raw_read(fd, buf, sizeof(buf), 300, &closed);
	raw_sends(fd, "ROOMS s1\r\n");
	raw_read(fd, buf, sizeof(buf), 300, &closed);
	close(fd);
	assert_string_equal(buf, "*1\r\n%4\r\n$4\r\nroom\r\n$4\r\ns1/0\r\n"
	                         "$5\r\nstate\r\n$4\r\nfree\r\n$4\r\nuser\r\n"
	                         "$0\r\n\r\n$8\r\nsince_ms\r\n:0\r\n");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(queues_that_exist, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(rooms_of_a_servicer, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(servicers_queues, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(in_multi_and_resp3, setup,
	                                    csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("overview", tests, NULL, NULL);
}
