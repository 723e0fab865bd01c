/*
 * csq.so's text commands (daemon/module/module_text.c): CSQ.ENQUEUE,
 * CSQ.LEAVE, CSQ.WHERE, CSQ.QLEN and CSQ.RELEASE, called on the module
 * straight from a Redis client, on the state a csqd uses at the same
 * time. They answer as csqd's commands do, change the state csqd sees,
 * publish their events and are replicated as every change is (a
 * replica's digest equals its master's); a read of no state makes none,
 * and bad arguments (syntax, ranges, ids, random bytes) are errors that
 * change nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define PREFIX  "txt"
#define KEY     "{" PREFIX "}:state"
#define CHANNEL "{" PREFIX "}:events"
#define WAIT_MS 8000

/* The reply's repr starts with prefix (since_ms and waits vary). */
static void
repr_starts(redisReply *rep, const char *prefix)
{
	char got[1024];

	reply_repr(rep, got, sizeof(got));
	if (strncmp(got, prefix, strlen(prefix)) != 0)
		fail_msg("got %s, expected it to start with %s", got, prefix);
	freeReplyObject(rep);
}

/*
 * The commands beside a csqd on the same state: csqd sees what they do,
 * they see what csqd does, events are published, and the replica
 * follows.
 */
static void
text_commands_share_csqds_state(void **state)
{
	struct redisd *m = redisd_start(REDISD_MODULE_CLOCK),
	              *r = redisd_start(REDISD_MODULE_CLOCK);
	char conf[256], dm[64], dr[64];
	redisContext *c, *rc, *sub;
	redisReply *rep;
	struct csqd *d;

	(void)state;
	redisd_replica_of(r, m);
	snprintf(conf, sizeof(conf),
	         "redis: { host = \"127.0.0.1\"; port = %d; prefix = \"%s\"; "
	         "module = true; wait_replicas = 1; };\n",
	         m->port, PREFIX);
	d = csqd_start_redis_conf(conf, NULL);
	csqd_wait_engine(d);
	c = csqd_connect(d);
	rc = redisd_connect(m);
	sub = redisd_connect(m);
	freeReplyObject(CMD(sub, "SUBSCRIBE %s", CHANNEL));

	CHECK(rc,
	      "['state','waiting','queue','sales','position',:1,'eta_ms',:-1]",
	      "CSQ.ENQUEUE %s u1 QUEUE sales TIER 2 TTL 0", KEY);
	assert_true(redis_wait_message(sub, "u1", "queued"));
	CHECK(c,
	      "['state','waiting','queue','sales','position',:1,'eta_ms',:-1]",
	      "ENQUEUE u1");
	CHECK(rc,
	      "['state','waiting','queue','sales','position',:2,'eta_ms',:-1]",
	      "CSQ.ENQUEUE %s u2 queue sales", KEY);
	CHECK(rc, ":2", "CSQ.QLEN %s sales", KEY);
	CHECK(c, ":2", "QLEN sales");
	repr_starts(CMD(rc, "CSQ.WHERE %s u1", KEY),
	            "['state','waiting','queue','sales','position',:1,'tier',:"
	            "2,'waited_ms',:");
	/* csqd's servicer takes u1 (tier 2 first). */
	CHECK(c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:1,"
	      "'ttl',:300]",
	      "HEARTBEAT s1 QUEUES sales TTL 300");
	repr_starts(CMD(rc, "CSQ.WHERE %s u1", KEY),
	            "['state','assigned','queue','sales','room','s1/0',"
	            "'servicer','s1','since_ms',:");
	CHECK(rc, ":1", "CSQ.RELEASE %s s1/0", KEY);
	assert_true(redis_wait_message(sub, "s1", "released"));
	/* u2 took the room. */
	repr_starts(CMD(c, "WHERE u2"),
	            "['state','assigned','queue','sales','room','s1/0'");
	CHECK(rc, ":1", "CSQ.LEAVE %s u2", KEY);
	CHECK(rc, ":0", "CSQ.LEAVE %s u2", KEY);
	CHECK(rc, "['state','none']", "CSQ.WHERE %s u2", KEY);
	CHECK(c, "['state','none']", "WHERE u2");
	/* A window for a paused servicer: it keeps its windows. */
	CHECK(c, "+OK", "PAUSE s1");
	rep = CMD(rc, "CSQ.ENQUEUE %s u3 QUEUE sales PREFER s1 30 TTL 0", KEY);
	assert_string_equal(reply_field(rep, "state")->str, "waiting");
	assert_string_equal(reply_field(rep, "prefer")->str, "s1");
	assert_int_equal(reply_field(rep, "prefer_ms")->integer, 30000);
	freeReplyObject(rep);

	/* The changes went to the replica as csqd's did. */
	rep = CMD(rc, "WAIT 1 %d", WAIT_MS);
	assert_int_equal(rep->integer, 1);
	freeReplyObject(rep);
	redisd_digest(m, KEY, dm, sizeof(dm));
	redisd_digest(r, KEY, dr, sizeof(dr));
	assert_string_equal(dm, dr);
	redisFree(sub);
	redisFree(rc);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	redisd_free(r);
	redisd_free(m);
}

/* Bad arguments: each an error, the state unchanged, the server up; a
 * read of no state makes none; no state beside the Lua engine's. */
static void
text_commands_refuse_garbage(void **state)
{
	struct redisd *r = redisd_start(REDISD_MODULE_CLOCK);
	static const char *const bad[][2] = {
	    {"CSQ.ENQUEUE {txt}:state", "ERR wrong number of arguments"},
	    {"CSQ.ENQUEUE {txt}:state u9 TIER", "ERR syntax error"},
	    {"CSQ.ENQUEUE {txt}:state u9 COLOR red", "ERR syntax error"},
	    {"CSQ.ENQUEUE {txt}:state u9 PREFER s1", "ERR syntax error"},
	    {"CSQ.ENQUEUE {txt}:state u9 TIER 10",
	     "ERR value is not an integer or out of range"},
	    {"CSQ.ENQUEUE {txt}:state u9 TIER -1",
	     "ERR value is not an integer or out of range"},
	    {"CSQ.ENQUEUE {txt}:state u9 TTL 86401",
	     "ERR value is not an integer or out of range"},
	    {"CSQ.ENQUEUE {txt}:state u9 TTL 1x",
	     "ERR value is not an integer or out of range"},
	    {"CSQ.ENQUEUE {txt}:state u9 PREFER s1 0",
	     "ERR value is not an integer or out of range"},
	    {"CSQ.ENQUEUE {txt}:state bad/id", "ERR invalid user id"},
	    {"CSQ.ENQUEUE {txt}:state u9 QUEUE a,b", "ERR invalid queue id"},
	    {"CSQ.LEAVE {txt}:state", "ERR wrong number of arguments"},
	    {"CSQ.RELEASE {txt}:state s1", "ERR invalid room id"},
	    {"CSQ.QLEN {txt}:state no!", "ERR invalid queue id"},
	    {"CSQ.ENQUEUE {str}:state u1", "WRONGTYPE"},
	    {"CSQ.WHERE {str}:state u1", "WRONGTYPE"},
	    {"CSQ.ENQUEUE {lua}:state u1",
	     "ERR {lua} holds a state of the Lua"},
	};
	char before[64], after[64], rnd[200];
	const char *argv[6];
	size_t argvlen[6], i;
	redisContext *rc = redisd_connect(r);
	redisReply *rep;
	int k, j;

	(void)state;
	CHECK(rc,
	      "['state','waiting','queue','default','position',:1,'eta_ms',:-"
	      "1]",
	      "CSQ.ENQUEUE %s u1 TTL 0", KEY);
	freeReplyObject(CMD(rc, "SET {str}:state x"));
	freeReplyObject(CMD(rc, "HSET {lua}:stats seq 1"));
	redisd_digest(r, KEY, before, sizeof(before));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rep = CMD(rc, bad[i][0]);
		assert_error_prefix_at(__FILE__, __LINE__, rep, bad[i][1]);
		freeReplyObject(rep);
	}
	/* Reads of no state: answers, and still no key. */
	CHECK(rc, "['state','none']", "CSQ.WHERE {none}:state u1");
	CHECK(rc, ":0", "CSQ.QLEN {none}:state q");
	CHECK(rc, ":0", "EXISTS {none}:state");
	/* Random bytes as the arguments: 1,000 tries; a read or a LEAVE of
	 * a random id that is valid changes nothing. */
	srand(5);
	for (k = 0; k < 1000; k++) {
		static const char *const cmds[] = {"CSQ.ENQUEUE", "CSQ.LEAVE",
		                                   "CSQ.WHERE", "CSQ.QLEN",
		                                   "CSQ.RELEASE"};
		int n = 3 + (cmds[k % 5][4] == 'E' && k % 2 ? rand() % 4 : 0);

		for (j = 0; j < (int)sizeof(rnd); j++)
			rnd[j] = (char)(rand() % 256);
		argv[0] = cmds[k % 5], argvlen[0] = strlen(cmds[k % 5]);
		argv[1] = KEY, argvlen[1] = strlen(KEY);
		for (j = 2; j < n; j++) {
			argv[j] = rnd + 40 * (j - 2);
			argvlen[j] = (size_t)(rand() % 40);
		}
		/* An ENQUEUE's user is never an id (a space first), so
		 * that nothing changes; its options are random. */
		if (k % 5 == 0)
			rnd[0] = ' ';
		rep = CMD_ARGV(rc, n, argv, argvlen);
		assert_non_null(rep);
		freeReplyObject(rep);
	}
	rep = CMD(rc, "PING");
	assert_status_at(__FILE__, __LINE__, rep, "PONG");
	freeReplyObject(rep);
	redisd_digest(r, KEY, after, sizeof(after));
	assert_string_equal(before, after);
	redisFree(rc);
	redisd_free(r);
}

/*
 * The deadlines of several states (one per prefix), with no csqd: each
 * acts on time and in order, whichever state was written last, and a
 * state deleted with a deadline pending is forgotten (ASan would see its
 * use after the free). The timer keeps the states by their earliest
 * deadline; a write moves only its own state.
 */
static void
deadlines_of_many_states(void **state)
{
	struct redisd *r = redisd_start(REDISD_MODULE_CLOCK);
	redisContext *rc, *sub;
	redisReply *rep;

	(void)state;
	rc = redisd_connect(r);
	sub = redisd_connect(r);
	freeReplyObject(CMD(sub, "SUBSCRIBE {ta}:events"));
	freeReplyObject(CMD(sub, "SUBSCRIBE {tb}:events"));
	CHECK(rc,
	      "['state','waiting','queue','default','position',:1,"
	      "'eta_ms',:-1]",
	      "CSQ.ENQUEUE {ta}:state late-in-a TTL 2");
	CHECK(rc,
	      "['state','waiting','queue','default','position',:1,"
	      "'eta_ms',:-1]",
	      "CSQ.ENQUEUE {td}:state gone-with-d TTL 1");
	CHECK(rc,
	      "['state','waiting','queue','default','position',:1,"
	      "'eta_ms',:-1]",
	      "CSQ.ENQUEUE {tb}:state early-in-b TTL 1");
	/* The last write is to a state with no deadline at all. */
	CHECK(rc,
	      "['state','waiting','queue','default','position',:1,"
	      "'eta_ms',:-1]",
	      "CSQ.ENQUEUE {tc}:state stays-in-c TTL 0");
	rep = CMD(rc, "DEL {td}:state");
	assert_int_equal(rep->integer, 1);
	freeReplyObject(rep);
	/* b's user goes first, then a's: a message for a's first would be
	 * read (and dropped) while waiting for b's, and the second wait
	 * would fail. */
	assert_true(redis_wait_message(sub, "early-in-b", "timeout"));
	assert_true(redis_wait_message(sub, "late-in-a", "timeout"));
	CHECK(rc, ":0", "CSQ.QLEN {ta}:state default");
	CHECK(rc, ":0", "CSQ.QLEN {tb}:state default");
	CHECK(rc, ":1", "CSQ.QLEN {tc}:state default");
	rep = CMD(rc, "EXISTS {td}:state");
	assert_int_equal(rep->integer, 0);
	freeReplyObject(rep);
	redisFree(sub);
	redisFree(rc);
	redisd_free(r);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(text_commands_share_csqds_state),
	    cmocka_unit_test(text_commands_refuse_garbage),
	    cmocka_unit_test(deadlines_of_many_states),
	};

	csqd_init(argc, argv);
	if (harness_module() == NULL) {
		fprintf(stderr,
		        "%s: CSQ_TEST_REDIS_MODULE names no csq.so; "
		        "skipping\n",
		        argv[0]);
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
