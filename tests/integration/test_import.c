/*
 * CSQ.IMPORT (daemon/module/module_import.c): a state that the Lua engine
 * wrote, in its own key layout, made into csq.so's one key.
 *
 * The state is tests/integration/lua_state/: keys.resp, every key the
 * Lua engine had written under the prefix "lua" (loaded here into a
 * redis-server that runs no Lua, as Redis commands), and script.txt,
 * what that engine answered from it: every view of the state, then the
 * views again after its deadlines acted (an offer ran out, users
 * overflowed and aged), then conversations that ended and the users
 * matched next. make.py made both on a commit that still had the Lua
 * engine (lua_state/made-on); it cannot run once the Lua is gone.
 *
 * Here: a csqd on the module, started before the import, says in its log
 * what to run and makes no state meanwhile; after the import it answers
 * the script as the Lua engine did, request for request; a second
 * import is refused; a replica ends with the master's digest, and so
 * does an AOF restart. And the import is tried with a layout broken in
 * each way we could think of (fields missing, garbage numbers, records
 * that are not csq's, deadlines that time nothing or are missing, a
 * ring cut short, counters that disagree, a room nobody is in, random
 * bytes): each is a clear error, and nothing is written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define FIXTURE  CSQ_SOURCE_DIR "/tests/integration/lua_state/"
#define PREFIX   "lua"
#define KEY      "{" PREFIX "}:state"
#define REPR_MAX 65536

static char *
read_all(const char *name, size_t *len)
{
	char path[1024];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s%s", FIXTURE, name);
	f = fopen(path, "rb");
	if (f == NULL)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len != NULL)
		*len = (size_t)n;
	return buf;
}

/* The commands of keys.resp: RESP arrays of bulk strings, counted. */
static int
count_commands(const char *p, size_t len)
{
	const char *end = p + len;
	long n, i, blen;
	int cmds = 0;

	while (p < end) {
		assert_true(*p == '*');
		n = strtol(p + 1, NULL, 10);
		p = strstr(p, "\r\n") + 2;
		for (i = 0; i < n; i++) {
			assert_true(*p == '$');
			blen = strtol(p + 1, NULL, 10);
			p = strstr(p, "\r\n") + 2 + blen + 2;
		}
		cmds++;
	}
	return cmds;
}

/* The Lua engine's keys, written to r as they were. */
static void
load_fixture(struct redisd *r)
{
	size_t len;
	char *keys = read_all("keys.resp", &len);
	redisContext *c = redisd_connect(r);
	redisReply *rep;
	int n = count_commands(keys, len), i;

	assert_int_equal(redisAppendFormattedCommand(c, keys, len), REDIS_OK);
	for (i = 0; i < n; i++) {
		assert_int_equal(redisGetReply(c, (void **)&rep), REDIS_OK);
		assert_true(rep->type == REDIS_REPLY_INTEGER);
		freeReplyObject(rep);
	}
	free(keys);
	redisFree(c);
}

/* CSQ.IMPORT of the state's key, with options (" DRYRUN ..."). */
static redisReply *
import(redisContext *rc, const char *opts)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "CSQ.IMPORT %s%s", KEY, opts);
	return CMD(rc, cmd);
}

/* An import's error holds text, and nothing is written. */
static void
import_fails(redisContext *rc, const char *text)
{
	redisReply *rep = import(rc, "");

	if (rep->type != REDIS_REPLY_ERROR || strstr(rep->str, text) == NULL)
		fail_msg("CSQ.IMPORT: '%s', expected an error with '%s'",
		         rep->type == REDIS_REPLY_ERROR ? rep->str : "no error",
		         text);
	freeReplyObject(rep);
	rep = CMD(rc, "EXISTS %s", KEY);
	assert_int_equal(rep->integer, 0);
	freeReplyObject(rep);
}

/* A field of an import's reply (field/value pairs), as text. */
static void
import_field(const redisReply *rep, const char *name, char *out, size_t cap)
{
	const redisReply *v = reply_field(rep, name);

	assert_non_null(v);
	if (v->type == REDIS_REPLY_INTEGER)
		snprintf(out, cap, "%lld", v->integer);
	else
		snprintf(out, cap, "%s", v->str);
}

/*
 * script.txt, request for request, on c: "@ <ms>" sets DEBUG CLOCK,
 * "> <request>" is sent, and the line after it is the reply the Lua
 * engine gave, as reply_repr prints it. Every difference is printed;
 * their number is returned.
 */
static int
replay(redisContext *c, const char *script)
{
	char *text = strdup(script), *line, *save = NULL, *want = NULL;
	char *got = malloc(REPR_MAX), *argv[16];
	const char *req = NULL;
	size_t argvlen[16];
	redisReply *rep;
	int diffs = 0, n, requests = 0;

	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		if (line[0] == '@') {
			rep = CMD(c, "DEBUG CLOCK %s", line + 2);
			assert_status_at(__FILE__, __LINE__, rep, "OK");
			freeReplyObject(rep);
			continue;
		}
		if (line[0] == '>') {
			req = line + 2;
			continue;
		}
		want = line;
		assert_non_null(req);
		{
			char *r = strdup(req), *w, *s2 = NULL;

			for (n = 0, w = strtok_r(r, " ", &s2);
			     w != NULL && n < 16;
			     w = strtok_r(NULL, " ", &s2)) {
				argv[n] = w;
				argvlen[n++] = strlen(w);
			}
			rep = CMD_ARGV(c, n, (const char **)argv, argvlen);
			reply_repr(rep, got, REPR_MAX);
			freeReplyObject(rep);
			if (strcmp(got, want) != 0) {
				fprintf(
				    stderr,
				    "%s\n  Lua engine: %s\n  module:     %s\n",
				    req, want, got);
				diffs++;
			}
			free(r);
		}
		requests++;
		req = NULL;
	}
	fprintf(stderr, "replayed %d requests, %d differ\n", requests, diffs);
	assert_true(requests > 100);
	free(got);
	free(text);
	return diffs;
}

static struct csqd *
csqd_on(struct redisd *r)
{
	char conf[512];
	char *extra = read_all("config", NULL);
	struct csqd *d;

	snprintf(conf, sizeof(conf),
	         "redis: { host = \"127.0.0.1\"; port = %d; prefix = \"%s\"; "
	         "module = true; };\n",
	         r->port, PREFIX);
	d = csqd_start_redis_conf(conf, extra);
	free(extra);
	return d;
}

/* The first line of script.txt, "@ <ms>": the state's time. */
static unsigned long long
fixture_time(const char *script)
{
	assert_true(script[0] == '@');
	return strtoull(script + 2, NULL, 10);
}

/*
 * csqd on the module, started first, makes no state beside the Lua
 * engine's and says what to run; after the import it answers as the
 * Lua engine did; the replica's digest is the master's.
 */
static void
import_answers_as_the_lua_engine(void **state)
{
	struct redisd *m = redisd_start(0), *r = redisd_start(0);
	char *script = read_all("script.txt", NULL);
	char dry[64], done[64], v[64], dm[64], dr[64], want[512];
	redisContext *c, *rc;
	redisReply *rep;
	struct csqd *d;

	(void)state;
	redisd_replica_of(r, m);
	load_fixture(m);
	d = csqd_on(m);
	/* The log names the command, and no state is made meanwhile (the
	 * daemon's calls are refused: TRYAGAIN). */
	csqd_wait_log(d, "CSQ.IMPORT {lua}:state");
	c = csqd_connect(d);
	/* The fixture's time before any call that could run (a test clock
	 * acts before its reply: refused now, as every call is). */
	rep = CMD(c, "DEBUG CLOCK %llu", fixture_time(script));
	freeReplyObject(rep);
	CHECK(c, "-TRYAGAIN engine unavailable, nothing was changed",
	      "ENQUEUE u1");
	rc = redisd_connect(m);
	rep = CMD(rc, "EXISTS %s", KEY);
	assert_int_equal(rep->integer, 0);
	freeReplyObject(rep);

	rep = import(rc, " DRYRUN");
	import_field(rep, "import", v, sizeof(v));
	assert_string_equal(v, "dry run");
	import_field(rep, "digest", dry, sizeof(dry));
	freeReplyObject(rep);
	rep = CMD(rc, "EXISTS %s", KEY);
	assert_int_equal(rep->integer, 0);
	freeReplyObject(rep);

	rep = import(rc, "");
	import_field(rep, "digest", done, sizeof(done));
	assert_string_equal(done, dry);
	snprintf(want, sizeof(want),
	         "['import','imported','servicers',:4,'users',:15,'waiting',:9,"
	         "'preferring',:1,'offered',:1,'assigned',:5,'wrapups',:1,"
	         "'policies',:3,'queues_with_numbers',:4,'deadlines',:22,"
	         "'digest','%s','old_keys','kept']",
	         dry);
	assert_repr_at(__FILE__, __LINE__, rep, want);
	freeReplyObject(rep);
	/* Once. */
	rep = import(rc, "");
	assert_error_prefix_at(__FILE__, __LINE__, rep,
	                       "ERR the key holds a state already");
	freeReplyObject(rep);
	redisd_digest(m, KEY, dm, sizeof(dm));
	assert_string_equal(dm, done);

	/* The daemon's next call finds the state. */
	csqd_wait_engine(d);
	assert_int_equal(replay(c, script), 0);

	redisd_replicated(m);
	redisd_digest(m, KEY, dm, sizeof(dm));
	redisd_digest(r, KEY, dr, sizeof(dr));
	assert_string_equal(dm, dr);
	/* The old keys stay, for a way back. */
	rep = CMD(rc, "EXISTS {lua}:users {lua}:stats");
	assert_int_equal(rep->integer, 2);
	freeReplyObject(rep);
	free(script);
	redisFree(rc);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	redisd_free(r);
	redisd_free(m);
}

/* REPLACE, DELETE (replicated: the replica loses the old keys too), the
 * AOF's restart, and the options and keys refused. */
static void
import_replace_delete_restart(void **state)
{
	struct redisd *m = redisd_start(0), *r = redisd_start(0);
	char d1[64], d2[64], dr[64], v[64];
	redisContext *rc, *rr;
	redisReply *rep;

	(void)state;
	redisd_replica_of(r, m);
	load_fixture(m);
	rc = redisd_connect(m);
	rep = import(rc, " DRYRUN DELETE");
	assert_error_prefix_at(__FILE__, __LINE__, rep, "ERR DRYRUN");
	freeReplyObject(rep);
	rep = import(rc, " NOW");
	assert_error_prefix_at(__FILE__, __LINE__, rep, "ERR syntax error");
	freeReplyObject(rep);
	rep = CMD(rc, "CSQ.IMPORT lua");
	assert_error_prefix_at(__FILE__, __LINE__, rep,
	                       "ERR the key is not a state's");
	freeReplyObject(rep);
	rep = CMD(rc, "CSQ.IMPORT {other}:state");
	assert_error_prefix_at(__FILE__, __LINE__, rep,
	                       "ERR the Lua engine's state under {other}: no "
	                       "such state");
	freeReplyObject(rep);
	freeReplyObject(CMD(rc, "SET {str}:state x"));
	rep = CMD(rc, "CSQ.IMPORT {str}:state");
	assert_error_prefix_at(__FILE__, __LINE__, rep, "WRONGTYPE");
	freeReplyObject(rep);

	rep = import(rc, "");
	import_field(rep, "digest", d1, sizeof(d1));
	freeReplyObject(rep);
	rep = import(rc, " REPLACE DELETE");
	assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
	import_field(rep, "digest", d2, sizeof(d2));
	assert_string_equal(d1, d2);
	import_field(rep, "old_keys", v, sizeof(v));
	assert_string_equal(v, "28");
	freeReplyObject(rep);
	rep = CMD(rc, "KEYS {lua}:*");
	assert_int_equal(rep->elements, 1);
	assert_string_equal(rep->element[0]->str, KEY);
	freeReplyObject(rep);
	/* Nothing left to import from. */
	rep = import(rc, " REPLACE");
	assert_error_prefix_at(__FILE__, __LINE__, rep,
	                       "ERR the Lua engine's state under {lua}: no "
	                       "such state");
	freeReplyObject(rep);
	redisd_replicated(m);
	redisd_digest(r, KEY, dr, sizeof(dr));
	assert_string_equal(dr, d1);
	rr = redisd_connect(r);
	rep = CMD(rr, "KEYS {lua}:*");
	assert_int_equal(rep->elements, 1);
	freeReplyObject(rep);
	redisFree(rr);
	/* The AOF: CSQ.LOAD of the same bytes, then the DELs. */
	redisFree(rc);
	redisd_restart(m);
	redisd_digest(m, KEY, d2, sizeof(d2));
	assert_string_equal(d1, d2);
	rc = redisd_connect(m);
	rep = CMD(rc, "DBSIZE");
	assert_int_equal(rep->integer, 2); /* the state, {str}:state */
	freeReplyObject(rep);
	redisFree(rc);
	redisd_free(r);
	redisd_free(m);
}

/* Fresh keys of the fixture, then the breaking commands (a command
 * with "%s" takes arg: a value with spaces). */
static void
broken(struct redisd *r, redisContext *rc, const char *cmd1, const char *arg,
       const char *cmd2, const char *text)
{
	freeReplyObject(CMD(rc, "FLUSHALL"));
	load_fixture(r);
	if (arg != NULL)
		freeReplyObject(CMD(rc, cmd1, arg));
	else
		freeReplyObject(CMD(rc, cmd1));
	if (cmd2 != NULL)
		freeReplyObject(CMD(rc, cmd2));
	import_fails(rc, text);
}

/*
 * A layout broken in every way we could think of: each import is an
 * error that says what is wrong, writes nothing, and the server lives.
 */
static void
import_refuses_a_broken_layout(void **state)
{
	static const struct {
		const char *cmd1, *arg, *cmd2, *text;
	} cases[] = {
	    {"DEL {lua}:stats", NULL, NULL, "no such state"},
	    {"HSET {lua}:stats reaping 1", NULL, NULL, "a reap of more than"},
	    {"RPUSH {lua}:rematch:late u:w1", NULL, NULL,
	     "a reap was cut short"},
	    {"HSET {lua}:stats seq x", NULL, NULL, "seq is not a number"},
	    {"HSET {lua}:stats strategy 7", NULL, NULL,
	     "strategy is not 0 or 1"},
	    {"HDEL {lua}:servicer:a1 capacity", NULL, NULL,
	     "has no field capacity"},
	    {"HSET {lua}:servicer:a2 last_ms 12x", NULL, NULL,
	     "last_ms is not a number: '12x'"},
	    {"HSET {lua}:servicer:a3 status gone", NULL, NULL,
	     "status is not ready or paused"},
	    {"HSET {lua}:servicer:a4 capacity 0", NULL, NULL, "out of range"},
	    {"HSET {lua}:servicer:a4 queues sales,,vip", NULL, NULL,
	     "not a list of queue ids"},
	    {"DEL {lua}:servicer:a4", NULL, NULL, "servicer a4 is listed but"},
	    {"HSET {lua}:servicer:a4 active 2", NULL, NULL,
	     "servicer a4 has 3 busy rooms"},
	    {"ZREM {lua}:deadlines s:a1", NULL, NULL, "no deadline s:a1"},
	    {"ZREM {lua}:deadlines w:a1/1", NULL, NULL,
	     "in wrap-up without its deadline"},
	    {"HSET {lua}:S2R:a1 1 !later", NULL, NULL,
	     "wrap-up start is not a number"},
	    {"HSET {lua}:users w1 garbage", NULL, NULL,
	     "user w1's record is not csq's"},
	    {"HSET {lua}:users w1 %s",
	     "sales 99999999 1700000054950 600 waiting", NULL,
	     "is not one the state handed out"},
	    {"HSET {lua}:users w1 %s",
	     "sales 8444249301319694 1700000054950 600 asleep", NULL,
	     "record is not csq's"},
	    {"ZREM {lua}:queue:sales w1", NULL, NULL,
	     "user w1 waits but is not in {lua}:queue:sales"},
	    {"ZREM {lua}:deadlines u:w4", NULL, NULL,
	     "has a TTL and no deadline u:w4"},
	    {"ZADD {lua}:deadlines 5 u:ghost", NULL, NULL,
	     "deadline u:ghost times nothing"},
	    {"ZADD {lua}:deadlines 1.5 u:w4", NULL, NULL,
	     "time is not a number of ms"},
	    {"HDEL {lua}:clock w1", NULL, NULL,
	     "clock deadline and no join time"},
	    {"HSET {lua}:clock w1 soon", NULL, NULL,
	     "join time in {lua}:clock"},
	    {"ZREM {lua}:deadlines m:w1", NULL, NULL,
	     "neither of its deadlines"},
	    {"ZREM {lua}:deadlines p:p1", NULL, NULL, "has no deadline p:p1"},
	    {"ZREM {lua}:deadlines o:a2/1", NULL, NULL,
	     "offered room a2/1 with no deadline"},
	    {"HSET {lua}:S2R:a2 1 nobody", NULL, NULL,
	     "which {lua}:S2R:a2 does"},
	    {"HSET {lua}:S2R:a3 0 ghost", NULL,
	     "HSET {lua}:servicer:a3 active 1",
	     "the servicers' rooms hold 7 users, and 6"},
	    {"HSET {lua}:servicer:a2 status paused", NULL, NULL,
	     "user w3 does not fit the state made before it"},
	    {"HSET {lua}:taken f1 later", NULL, NULL, "time in {lua}:taken"},
	    {"HSET {lua}:qstat:sales n short", NULL, NULL,
	     "n is not 14 numbers"},
	    {"HDEL {lua}:qring:sales r3", NULL, NULL,
	     "is not the ring of the last"},
	    {"HSET {lua}:qring:vip r2 -5", NULL, NULL, "is not the ring of"},
	    {"HSET {lua}:qstat:vip tiers 1:6:x:1", NULL, NULL,
	     "tiers are not csq's"},
	    {"HSET {lua}:policy vip x", NULL, NULL,
	     "the policy of vip is not csq's"},
	    {"HSET {lua}:policy sales %s", "-1 0 120 0 -1 0 sales", NULL,
	     "the policy of sales:"},
	    {"HSET {lua}:stats waiting 10", NULL, NULL,
	     "counts 10 users waiting, and 9 wait"},
	    {"HSET {lua}:stats servicers 5", NULL, NULL, "counts 5 servicers"},
	    {"HSET {lua}:stats rooms_busy 1", NULL, NULL,
	     "counts 1 busy rooms"},
	    {"DEL {lua}:users", NULL, "SET {lua}:users x", "WRONGTYPE"},
	};
	struct redisd *r = redisd_start(0);
	redisContext *rc = redisd_connect(r);
	const char *argv[4];
	size_t argvlen[4], i;
	char rnd[120];
	redisReply *rep;
	int k, j;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		broken(r, rc, cases[i].cmd1, cases[i].arg, cases[i].cmd2,
		       cases[i].text);
	/* Random bytes where numbers and records go: 40 tries. */
	srand(11);
	for (k = 0; k < 40; k++) {
		static const char *const spots[][2] = {
		    {"{lua}:qstat:sales", "n"},      {"{lua}:users", "w9"},
		    {"{lua}:servicer:a1", "queues"}, {"{lua}:policy", "vip"},
		    {"{lua}:S2R:a4", "1"},
		};
		int s = k % 5;

		freeReplyObject(CMD(rc, "FLUSHALL"));
		load_fixture(r);
		for (j = 0; j < (int)sizeof(rnd); j++)
			rnd[j] = (char)(rand() % 256);
		argv[0] = "HSET", argvlen[0] = 4;
		argv[1] = spots[s][0], argvlen[1] = strlen(spots[s][0]);
		argv[2] = spots[s][1], argvlen[2] = strlen(spots[s][1]);
		argv[3] = rnd,
		argvlen[3] = s == 0 ? 112 : (size_t)(1 + rand() % 100);
		freeReplyObject(CMD_ARGV(rc, 4, argv, argvlen));
		import_fails(rc, "ERR");
	}
	rep = CMD(rc, "PING");
	assert_status_at(__FILE__, __LINE__, rep, "PONG");
	freeReplyObject(rep);
	/* And the fixture itself imports. */
	freeReplyObject(CMD(rc, "FLUSHALL"));
	load_fixture(r);
	rep = import(rc, "");
	assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
	freeReplyObject(rep);
	redisFree(rc);
	redisd_free(r);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(import_answers_as_the_lua_engine),
	    cmocka_unit_test(import_replace_delete_restart),
	    cmocka_unit_test(import_refuses_a_broken_layout),
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
