/*
 * Servicers: HEARTBEAT, PAUSE, RESUME, LOGOUT, RELEASE and room ids, against a
 * fresh csqd per test (protocol.md "Servicers", replies.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define OUT_OF_RANGE "-ERR value is not an integer or out of range"
#define SYNTAX       "-ERR syntax error"
#define NOTFOUND     "-NOTFOUND no such servicer or room"
#define BAD_ROOM     "-ERR invalid room id"

/* First heartbeat: status ready, capacity 1, TTL from servicer_ttl (30). */
static void
heartbeat_defaults(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	r = CMD(fx->c, "SERVICERS");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 1);
	assert_int_equal(r->element[0]->elements, 9);
	assert_reply_bulk(r->element[0]->element[0], "s1");
	assert_reply_bulk(r->element[0]->element[1], "ready");
	assert_reply_integer(r->element[0]->element[2], 1);
	assert_reply_integer(r->element[0]->element[3], 0);
	assert_int_equal(r->element[0]->element[4]->type, REDIS_REPLY_INTEGER);
	assert_true(r->element[0]->element[4]->integer >= 0);
	/* protocol-v2: the queues it serves, an array, after v1's fields */
	assert_repr(r->element[0]->element[5], "['default']");
	/* v2: OFFER, WRAPUP (offer_timeout, wrapup: 0), missed offers. */
	assert_reply_integer(r->element[0]->element[6], 0);
	assert_reply_integer(r->element[0]->element[7], 0);
	assert_reply_integer(r->element[0]->element[8], 0);
	freeReplyObject(r);
	/* Its only queue is "default": a user there is matched at once. */
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
}

/* Options in any order and case; the last of a repeated one wins. */
static void
heartbeat_options(void **state)
{
	struct csqd_fx *fx = *state;
	char cmd[512];
	int i;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:3,'active',:0,"
	      "'ttl',:60]",
	      "HEARTBEAT s1 CAPACITY 3 QUEUES a,b TTL 60");
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:2,'active',:0,"
	      "'ttl',:5]",
	      "heartbeat s2 ttl 5 capacity 2");
	CHECK(fx->c,
	      "['servicer','s3','status','ready','capacity',:4,'active',:0,"
	      "'ttl',:86400]",
	      "HeartBeat s3 Capacity 2 capacity 4 TTL 86400 queues c,c");
	CHECK(fx->c,
	      "['servicer','s4','status','ready','capacity',:1000,'active',:0,"
	      "'ttl',:1]",
	      "HEARTBEAT s4 CAPACITY 1000 TTL 1 QUEUES d");
	/* s1 serves a and b, s3 serves c only, nobody serves "e". */
	CHECK(fx->c,
	      "['state','assigned','queue','b','room','s1/0','servicer','s1']",
	      "ENQUEUE u1 QUEUE b");
	CHECK(fx->c,
	      "['state','assigned','queue','c','room','s3/0','servicer','s3']",
	      "ENQUEUE u2 QUEUE c");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE u3");
	CHECK(fx->c,
	      "['state','waiting','queue','e','position',:1,'eta_ms',:-1]",
	      "ENQUEUE u4 QUEUE e");
	/* 32 queues are allowed. */
	CHECK(fx->c,
	      "['servicer','s5','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s5 QUEUES q1,q2,q3,q4,q5,q6,q7,q8,q9,q10,q11,q12,q13,"
	      "q14,q15,q16,q17,q18,q19,q20,q21,q22,q23,q24,q25,q26,q27,q28,q29,"
	      "q30,q31,q32");
	CHECK(
	    fx->c,
	    "['state','assigned','queue','q32','room','s5/0','servicer','s5']",
	    "ENQUEUE u5 QUEUE q32");
	/* The limit counts distinct names, repeats collapsed first: 40
	 * names of which 32 distinct, and one name 33 times, are fine. */
	snprintf(cmd, sizeof(cmd), "HEARTBEAT s6 QUEUES q1");
	for (i = 2; i <= 40; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), ",q%d",
		         i <= 32 ? i : i - 32);
	CHECK(fx->c,
	      "['servicer','s6','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      cmd);
	snprintf(cmd, sizeof(cmd), "HEARTBEAT s7 QUEUES r");
	for (i = 2; i <= 33; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), ",r");
	CHECK(fx->c,
	      "['servicer','s7','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      cmd);
	CHECK(fx->c,
	      "['state','assigned','queue','r','room','s7/0','servicer','s7']",
	      "ENQUEUE u6 QUEUE r");
}

/* Every bad option is rejected and nothing changes (no login). */
static void
heartbeat_option_errors(void **state)
{
	struct csqd_fx *fx = *state;
	char id65[66], cmd[256];

	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY 0");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY 1001");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY -1");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY abc");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY 1.5");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY 2x");
	/* Strict decimal as Redis parses it: no sign, no leading zero. */
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY +1");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY 01");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY %s", "");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 CAPACITY %s", " 1");
	CHECK(fx->c, OUT_OF_RANGE,
	      "HEARTBEAT e1 CAPACITY 99999999999999999999999");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 TTL 0");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 TTL 86401");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 TTL x");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT e1 TTL -5");
	CHECK(fx->c, SYNTAX, "HEARTBEAT e1 CAPACITY");
	CHECK(fx->c, SYNTAX, "HEARTBEAT e1 TTL");
	CHECK(fx->c, SYNTAX, "HEARTBEAT e1 QUEUES");
	CHECK(fx->c, SYNTAX, "HEARTBEAT e1 FOO 1");
	CHECK(fx->c, SYNTAX, "HEARTBEAT e1 CAPACITY 2 extra");
	CHECK(fx->c, "-ERR invalid queue id", "HEARTBEAT e1 QUEUES a,,b");
	CHECK(fx->c, "-ERR invalid queue id", "HEARTBEAT e1 QUEUES a,");
	CHECK(fx->c, "-ERR invalid queue id", "HEARTBEAT e1 QUEUES ,a");
	CHECK(fx->c, "-ERR invalid queue id", "HEARTBEAT e1 QUEUES %s", "");
	CHECK(fx->c, "-ERR invalid queue id", "HEARTBEAT e1 QUEUES %s", "a b");
	CHECK(fx->c, "-ERR invalid queue id", "HEARTBEAT e1 QUEUES a/b");
	memset(id65, 'q', 65);
	id65[65] = '\0';
	CHECK(fx->c, "-ERR invalid queue id", "HEARTBEAT e1 QUEUES %s", id65);
	/* 33 queues: over the limit of 32 (the text is csq's, protocol.md
	 * §10). */
	snprintf(cmd, sizeof(cmd), "HEARTBEAT e1 QUEUES q1");
	for (int i = 2; i <= 33; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), ",q%d",
		         i);
	{
		redisReply *r = CMD(fx->c, cmd);
		assert_reply_error(r, "ERR too many queues (at most 32)");
		freeReplyObject(r);
	}
	CHECK(fx->c, "-ERR invalid servicer id", "HEARTBEAT %s", "bad id");
	CHECK(fx->c, "-ERR invalid servicer id", "HEARTBEAT %s", "");
	CHECK(fx->c, "-ERR invalid servicer id", "HEARTBEAT %s", "s/0");
	memset(id65, 's', 65);
	CHECK(fx->c, "-ERR invalid servicer id", "HEARTBEAT %s", id65);
	CHECK(fx->c, "-ERR wrong number of arguments for 'heartbeat' command",
	      "HEARTBEAT");
	/* None of these logged anybody in. */
	CHECK(fx->c, "[]", "SERVICERS");
	/* An error on a known servicer changes nothing either. */
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,'active',:0,"
	      "'ttl',:10]",
	      "HEARTBEAT s1 CAPACITY 2 TTL 10");
	CHECK(fx->c, OUT_OF_RANGE, "HEARTBEAT s1 CAPACITY 5 TTL 0");
	CHECK(fx->c, "-ERR invalid queue id",
	      "HEARTBEAT s1 CAPACITY 5 QUEUES ,");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,'active',:0,"
	      "'ttl',:10]",
	      "HEARTBEAT s1");
	/* 64 bytes is the longest valid id. */
	memset(id65, 's', 64);
	id65[64] = '\0';
	{
		redisReply *r = CMD(fx->c, "HEARTBEAT %s", id65);
		assert_int_equal(r->type, REDIS_REPLY_ARRAY);
		assert_string_equal(FIELD_STR(r, "servicer"), id65);
		freeReplyObject(r);
	}
}

/* Options left out keep their values: capacity, queues and TTL. */
static void
heartbeat_keeps_previous(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:3,'active',:0,"
	      "'ttl',:60]",
	      "HEARTBEAT s1 CAPACITY 3 QUEUES q1 TTL 60");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:3,'active',:0,"
	      "'ttl',:60]",
	      "HEARTBEAT s1");
	CHECK(fx->c,
	      "['state','assigned','queue','q1','room','s1/0','servicer','s1']",
	      "ENQUEUE u1 QUEUE q1");
	/* Queues were kept as q1 only: "default" is not served. */
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u2");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,'active',:1,"
	      "'ttl',:60]",
	      "HEARTBEAT s1 CAPACITY 2");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,'active',:1,"
	      "'ttl',:7]",
	      "HEARTBEAT s1 TTL 7");
	CHECK(fx->c,
	      "['state','assigned','queue','q1','room','s1/1','servicer','s1']",
	      "ENQUEUE u3 QUEUE q1");
	/* Changing the queues takes effect: u2 is matched by this heartbeat
	 * once a room is free. */
	CHECK(fx->c, ":1", "RELEASE s1/0");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,'active',:2,"
	      "'ttl',:7]",
	      "HEARTBEAT s1 QUEUES default");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u2");
}

/* A heartbeat keeps a paused servicer paused. */
static void
heartbeat_does_not_resume(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	CHECK(fx->c, "+OK", "PAUSE s1");
	CHECK(fx->c, "+OK", "PAUSE s1");
	/* A paused one says why (issue 38). */
	CHECK(fx->c,
	      "['servicer','s1','status','paused','capacity',:2,'active',:0,"
	      "'ttl',:30,'paused_by','pause']",
	      "HEARTBEAT s1 CAPACITY 2");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1");
	r = CMD(fx->c, "SERVICERS");
	assert_int_equal(r->elements, 1);
	assert_reply_bulk(r->element[0]->element[1], "paused");
	freeReplyObject(r);
	CHECK(fx->c, "+OK", "RESUME s1");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,'active',:1,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
	CHECK(fx->c, "+OK", "RESUME s1");
	/* Paused with a busy room: the room stays busy. */
	CHECK(fx->c, "+OK", "pause s1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u2");
	CHECK(fx->c, ":1", "RELEASE s1/0");
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,'eta_ms',:?]",
	      "ENQUEUE u2");
}

static void
pause_resume_errors(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c, NOTFOUND, "PAUSE nobody");
	CHECK(fx->c, NOTFOUND, "RESUME nobody");
	CHECK(fx->c, "-ERR invalid servicer id", "PAUSE %s", "bad id");
	CHECK(fx->c, "-ERR invalid servicer id", "RESUME %s", "a*");
	CHECK(fx->c, "-ERR wrong number of arguments for 'pause' command",
	      "PAUSE");
	CHECK(fx->c, "-ERR wrong number of arguments for 'resume' command",
	      "RESUME a b");
	CHECK(fx->c, "[]", "SERVICERS");
	/* Ids are case-sensitive. */
	CHECK(fx->c,
	      "['servicer','S1','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT S1");
	CHECK(fx->c, NOTFOUND, "PAUSE s1");
	CHECK(fx->c, "+OK", "PAUSE S1");
}

/* LOGOUT requeues the users of its rooms, keeping their arrival order. */
static void
logout(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s1 CAPACITY 2");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/1',"
	      "'servicer','s1']",
	      "ENQUEUE u2 TIER 1");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u3");
	sleep_ms(120); /* real time to pass: waited_ms is to count it */
	CHECK(fx->c, ":2", "LOGOUT s1");
	/* u2 (tier 1) first, then u1 and u3 by arrival. */
	r = CMD(fx->c, "WHERE u2");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_int_equal(FIELD_INT(r, "position"), 1);
	assert_int_equal(FIELD_INT(r, "tier"), 1);
	freeReplyObject(r);
	r = CMD(fx->c, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_int_equal(FIELD_INT(r, "position"), 2);
	/* waited_ms counts from the original arrival. */
	assert_true(FIELD_INT(r, "waited_ms") >= 120);
	freeReplyObject(r);
	r = CMD(fx->c, "WHERE u3");
	assert_int_equal(FIELD_INT(r, "position"), 3);
	freeReplyObject(r);
	CHECK(fx->c, "[]", "SERVICERS");
	CHECK(fx->c, ":0", "LOGOUT s1");
	CHECK(fx->c, ":0", "LOGOUT nobody");
	CHECK(fx->c, "-ERR invalid servicer id", "LOGOUT %s", "bad id");
	CHECK(fx->c, "-ERR wrong number of arguments for 'logout' command",
	      "LOGOUT");
	CHECK(fx->c, NOTFOUND, "RELEASE s1/0");
	/* Logging in again is a fresh login with the defaults. */
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:1,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u2");
	/* A paused servicer's logout requeues too. */
	CHECK(fx->c, "+OK", "PAUSE s1");
	CHECK(fx->c, ":1", "LOGOUT s1");
	CHECK(fx->c, ":3", "QLEN default");
}

static void
release(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s1 CAPACITY 2");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
	CHECK(fx->c, ":1", "RELEASE s1/0");
	CHECK(fx->c, ":0", "RELEASE s1/0");
	CHECK(fx->c, ":0", "RELEASE s1/1");
	CHECK(fx->c, NOTFOUND, "RELEASE s1/2");
	CHECK(fx->c, NOTFOUND, "RELEASE s1/1000");
	CHECK(fx->c, NOTFOUND, "RELEASE s2/0");
	CHECK(fx->c, NOTFOUND, "RELEASE S1/0");
	CHECK(fx->c, "['state','none']", "WHERE u1");
	CHECK(fx->c, "-ERR wrong number of arguments for 'release' command",
	      "RELEASE");
	/* The user has left the system: enqueueing again is a new arrival. */
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
}

static void
release_invalid_room_ids(void **state)
{
	static const char *bad[] = {
	    "s",     "s/",   "s/01", "s/-1",  "s/x", "bad id/0", "/0",   "s/+1",
	    "s/0/1", "s/ 1", "s/1 ", "s/0x1", "",    "s//0",     "s/1.0"};
	struct csqd_fx *fx = *state;
	size_t i;

	CHECK(fx->c,
	      "['servicer','s','status','ready','capacity',:2,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s CAPACITY 2");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		redisReply *r = CMD(fx->c, "RELEASE %s", bad[i]);
		char got[512];

		reply_repr(r, got, sizeof(got));
		freeReplyObject(r);
		if (strcmp(got, BAD_ROOM) != 0)
			fail_at(__FILE__, __LINE__,
			        "RELEASE '%s': expected %s, got %s", bad[i],
			        BAD_ROOM, got);
	}
	CHECK(fx->c, ":0", "RELEASE s/0");
	CHECK(fx->c, ":0", "RELEASE s/1");
	/* Well formed, however long the index: no such room. */
	CHECK(fx->c, NOTFOUND, "RELEASE s/2");
	CHECK(fx->c, NOTFOUND, "RELEASE s/999999999");
	CHECK(fx->c, NOTFOUND, "RELEASE s/1000000000");
	CHECK(fx->c, NOTFOUND, "RELEASE s/4294967296");
	CHECK(fx->c, NOTFOUND, "RELEASE s/123456789012345678901234567890");
}

/*
 * Capacity lowered below the busy rooms: nobody is cut off, nothing is
 * refilled while busy >= capacity, and rooms above it vanish when released.
 */
static void
capacity_lowered(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:3,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s1 CAPACITY 3");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/1',"
	      "'servicer','s1']",
	      "ENQUEUE u2");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/2',"
	      "'servicer','s1']",
	      "ENQUEUE u3");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u4");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:3,"
	      "'ttl',:30]",
	      "HEARTBEAT s1 CAPACITY 1");
	/* Conversations above the capacity go on. */
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/2',"
	      "'servicer','s1']",
	      "ENQUEUE u3");
	r = CMD(fx->c, "STATS");
	assert_int_equal(FIELD_INT(r, "rooms_busy"), 3);
	assert_int_equal(FIELD_INT(r, "rooms_free"), 0);
	assert_int_equal(FIELD_INT(r, "waiting"), 1);
	freeReplyObject(r);
	CHECK(fx->c, ":1", "RELEASE s1/1");
	CHECK(fx->c, NOTFOUND, "RELEASE s1/1");
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,'eta_ms',:?]",
	      "ENQUEUE u4");
	CHECK(fx->c, ":1", "RELEASE s1/2");
	CHECK(fx->c, NOTFOUND, "RELEASE s1/2");
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,'eta_ms',:?]",
	      "ENQUEUE u4");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:1,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	/* Below the capacity again: the freed room 0 takes u4. */
	CHECK(fx->c, ":1", "RELEASE s1/0");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u4");
	r = CMD(fx->c, "SERVICERS");
	assert_int_equal(r->elements, 1);
	assert_reply_integer(r->element[0]->element[2], 1);
	assert_reply_integer(r->element[0]->element[3], 1);
	freeReplyObject(r);
	/* Raised again: rooms 1 and 2 exist again, and are free. */
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:3,'active',:1,"
	      "'ttl',:30]",
	      "HEARTBEAT s1 CAPACITY 3");
	CHECK(fx->c, ":0", "RELEASE s1/2");
}

/*
 * SERVICERS with thousands of servicers: every one, in id order. (The
 * Redis engine once built this reply with Lua's unpack(), which fails
 * beyond some thousands of values: 3,000 servicers are 15,000.)
 */
#define MANY_SERVICERS 3000

static void
servicers_many(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;
	char id[32];
	size_t i;

	for (i = 0; i < MANY_SERVICERS; i++)
		redisAppendCommand(fx->c, "HEARTBEAT m%05d TTL 600", (int)i);
	for (i = 0; i < MANY_SERVICERS; i++) {
		r = GET_REPLY(fx->c);
		assert_int_equal(r->type, REDIS_REPLY_ARRAY);
		freeReplyObject(r);
	}
	r = CMD(fx->c, "SERVICERS");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, MANY_SERVICERS);
	for (i = 0; i < MANY_SERVICERS; i++) {
		snprintf(id, sizeof(id), "m%05zu", i);
		assert_int_equal(r->element[i]->elements, 9);
		assert_reply_bulk(r->element[i]->element[0], id);
		assert_reply_bulk(r->element[i]->element[1], "ready");
	}
	freeReplyObject(r);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        heartbeat_defaults, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        heartbeat_options, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(heartbeat_option_errors,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(heartbeat_keeps_previous,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(heartbeat_does_not_resume,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        pause_resume_errors, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(logout, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(release, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(release_invalid_room_ids,
	                                    csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        capacity_lowered, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        servicers_many, csqd_fx_setup_default, csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("servicers", tests, NULL, NULL);
}
