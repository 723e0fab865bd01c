/*
 * The admin's overview commands (protocol-v2 section 6): QUEUES, the
 * queues that exist, and ROOMS, a servicer's rooms with who is in them;
 * and the queues column of SERVICERS. On both engines.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

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
	sleep_ms(250); /* real time to pass: since_ms is to count it */
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

#define SLICED_QUEUES 2500 /* more than a slice (1,000) */

/*
 * Views of every queue in slices (issue 37): with 2,500 queues the
 * memory engine and csq.so make /api/snapshot and QUEUES 1,000 queues at
 * a time from a cursor (the Lua script in one call); every queue is
 * listed once, in name order, with its line.
 */
static void
snapshot_in_slices(void **state)
{
	struct csqd *d = csqd_start_http("");
	redisContext *c = csqd_connect(d);
	char *body, *p, prev[68] = "", name[68]; /* an id, 64 at most */
	redisReply *r;
	int i, n = 0, waiting = 0, w;

	(void)state;
	for (i = 0; i < SLICED_QUEUES; i++)
		redisAppendCommand(c, "ENQUEUE u%d QUEUE q%05d", i,
		                   (i * 7) % SLICED_QUEUES);
	for (i = 0; i < SLICED_QUEUES; i++)
		freeReplyObject(GET_REPLY(c));
	body = http_get(d->http_port, "/api/snapshot");
	assert_non_null(strstr(body, " 200 "));
	for (p = body; (p = strstr(p, "{\"name\":\"")) != NULL; p++) {
		assert_int_equal(sscanf(p,
		                        "{\"name\":\"%65[^\"]\",\"waiting\":%d",
		                        name, &w),
		                 2);
		assert_true(strcmp(prev, name) < 0);
		snprintf(prev, sizeof(prev), "%s", name);
		waiting += w;
		n++;
	}
	assert_int_equal(n, SLICED_QUEUES + 1); /* and default */
	assert_int_equal(waiting, SLICED_QUEUES);
	free(body);
	/* QUEUES too, and a PING pipelined after it answers after it. */
	redisAppendCommand(c, "QUEUES");
	redisAppendCommand(c, "PING");
	r = GET_REPLY(c);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, SLICED_QUEUES + 1);
	assert_string_equal(r->element[0]->str, "default");
	for (i = 2; i < (int)r->elements; i++)
		assert_true(strcmp(r->element[i - 1]->str, r->element[i]->str) <
		            0);
	freeReplyObject(r);
	r = GET_REPLY(c);
	assert_string_equal(r->str, "PONG");
	freeReplyObject(r);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

#define SLICED_SERVICERS 2500 /* more than two slices (1,000) */

/* The rows of SERVICERS are equal but for idle_ms (element 4), which
 * runs between two replies. */
static void
rows_equal(const redisReply *a, const redisReply *b)
{
	size_t i, j;

	assert_int_equal(a->elements, b->elements);
	for (i = 0; i < a->elements; i++) {
		const redisReply *x = a->element[i], *y = b->element[i];

		assert_int_equal(x->elements, y->elements);
		for (j = 0; j < x->elements; j++) {
			if (j == 4)
				continue;
			assert_int_equal(x->element[j]->type,
			                 y->element[j]->type);
			if (x->element[j]->type == REDIS_REPLY_INTEGER)
				assert_true(x->element[j]->integer ==
				            y->element[j]->integer);
			else if (x->element[j]->type == REDIS_REPLY_STRING)
				assert_string_equal(x->element[j]->str,
				                    y->element[j]->str);
		}
	}
}

/*
 * SERVICERS and the snapshot's servicers in slices (issue 37): with
 * 2,500 servicers csqd makes them 1,000 at a time from a cursor (by id),
 * on the memory engine and on csq.so. The reply is the one a single call
 * gives (inside MULTI, one state), and a PING pipelined after it answers
 * after it. Tried with another connection logging servicers out and in
 * while the slices are made: every servicer there throughout is listed
 * once, in id order, and none twice.
 */
static void
servicers_in_slices(void **state)
{
	struct csqd *d = csqd_start_http("");
	redisContext *c = csqd_connect(d), *c2 = csqd_connect(d);
	char *body, *p, *end, prev[68] = "", id[68];
	redisReply *r, *whole;
	int i, n = 0, busy = 0, seen[SLICED_SERVICERS], done = 0;

	(void)state;
	for (i = 0; i < SLICED_SERVICERS; i++)
		redisAppendCommand(c, "HEARTBEAT s%05d CAPACITY 2 QUEUES q%d",
		                   (i * 7) % SLICED_SERVICERS, i % 3);
	for (i = 0; i < 300; i++)
		redisAppendCommand(c, "ENQUEUE u%d QUEUE q%d", i, i % 3);
	for (i = 0; i < SLICED_SERVICERS + 300; i++)
		freeReplyObject(GET_REPLY(c));
	redisAppendCommand(c, "SERVICERS");
	redisAppendCommand(c, "PING");
	r = GET_REPLY(c);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, SLICED_SERVICERS);
	for (i = 0; i < SLICED_SERVICERS; i++) {
		assert_true(strcmp(prev, r->element[i]->element[0]->str) < 0);
		snprintf(prev, sizeof(prev), "%s",
		         r->element[i]->element[0]->str);
		busy += (int)r->element[i]->element[3]->integer;
	}
	assert_int_equal(busy, 300);
	freeReplyObject(GET_REPLY(c)); /* PONG, after it */
	/* Inside MULTI: one call of the engine, as SERVICERS was before. */
	freeReplyObject(CMD(c, "MULTI"));
	freeReplyObject(CMD(c, "SERVICERS"));
	whole = CMD(c, "EXEC");
	assert_int_equal(whole->elements, 1);
	rows_equal(r, whole->element[0]);
	freeReplyObject(whole);
	freeReplyObject(r);
	/* The snapshot's servicers: every one, by id, with its rooms. */
	body = http_get(d->http_port, "/api/snapshot");
	assert_non_null(strstr(body, " 200 "));
	assert_non_null(p = strstr(body, "\"servicers\":["));
	assert_non_null(end = strstr(p, "],\"history\":"));
	prev[0] = '\0';
	for (; (p = strstr(p, "{\"id\":\"")) != NULL && p < end; p++) {
		assert_int_equal(sscanf(p, "{\"id\":\"%65[^\"]\"", id), 1);
		assert_true(strcmp(prev, id) < 0);
		snprintf(prev, sizeof(prev), "%s", id);
		n++;
	}
	assert_int_equal(n, SLICED_SERVICERS);
	for (p = body, busy = 0; (p = strstr(p, "\"user\":\"u")) != NULL; p++)
		busy++;
	assert_int_equal(busy, 300);
	free(body);
	/* Churn while the slices are made: s00000 to s00009 go, and new
	 * ones come before and after the cursor. */
	redisAppendCommand(c, "SERVICERS");
	assert_int_equal(redisBufferWrite(c, &done), REDIS_OK);
	for (i = 0; i < 10; i++) {
		redisAppendCommand(c2, "LOGOUT s%05d", i);
		redisAppendCommand(c2, "HEARTBEAT a%02d", i);
		redisAppendCommand(c2, "HEARTBEAT z%02d", i);
	}
	for (i = 0; i < 30; i++)
		freeReplyObject(GET_REPLY(c2));
	r = GET_REPLY(c);
	memset(seen, 0, sizeof(seen));
	prev[0] = '\0';
	for (i = 0; i < (int)r->elements; i++) {
		const char *sid = r->element[i]->element[0]->str;

		assert_true(strcmp(prev, sid) < 0);
		snprintf(prev, sizeof(prev), "%s", sid);
		if (sid[0] == 's')
			seen[atoi(sid + 1)]++;
	}
	for (i = 10; i < SLICED_SERVICERS; i++)
		assert_int_equal(seen[i], 1);
	freeReplyObject(r);
	redisFree(c2);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
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
	    cmocka_unit_test(snapshot_in_slices),
	    cmocka_unit_test(servicers_in_slices),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("overview", tests, NULL, NULL);
}
