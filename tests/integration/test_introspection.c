/*
 * Introspection as Redis has it: CLIENT LIST / INFO / KILL / HELP, INFO's
 * sections (each with its own fields), and MONITOR's refusal, on both
 * engines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* The value of field= in one CLIENT LIST line, into buf. */
static const char *
line_field(const char *line, const char *field, char *buf, size_t len)
{
	char key[64];
	const char *p;
	size_t n;

	snprintf(key, sizeof(key), " %s=", field);
	if (strncmp(line, key + 1, strlen(key) - 1) == 0)
		p = line + strlen(key) - 1;
	else if ((p = strstr(line, key)) != NULL)
		p += strlen(key);
	else
		fail_at(__FILE__, __LINE__, "no %s= in %s", field, line);
	n = strcspn(p, " \n");
	snprintf(buf, len, "%.*s", (int)n, p);
	return buf;
}

/* The CLIENT LIST line of the client with this id, into line. */
static int
list_line(redisContext *c, long long id, char *line, size_t len)
{
	redisReply *r = CMD(c, "CLIENT LIST");
	char want[32];
	const char *p, *end;

	assert_int_equal(r->type, REDIS_REPLY_STRING);
	snprintf(want, sizeof(want), "id=%lld ", id);
	for (p = r->str; p != NULL && *p != '\0'; p = end + 1) {
		end = strchr(p, '\n');
		assert_non_null(end);
		if (strncmp(p, want, strlen(want)) == 0) {
			snprintf(line, len, "%.*s", (int)(end - p), p);
			freeReplyObject(r);
			return 1;
		}
	}
	freeReplyObject(r);
	return 0;
}

static long long
client_id(redisContext *c)
{
	redisReply *r = CMD(c, "CLIENT ID");
	long long id = r->integer;

	freeReplyObject(r);
	return id;
}

#define ASSERT_FIELD(line, f, v)                                               \
	do {                                                                   \
		char buf_[256];                                                \
		assert_string_equal(                                           \
		    line_field((line), (f), buf_, sizeof(buf_)), (v));         \
	} while (0)

static void
client_list_and_info(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = csqd_connect(fx->d), *tx = csqd_connect(fx->d);
	long long me = client_id(fx->c), sid = client_id(sub),
	          tid = client_id(tx);
	const char *chans[] = {"events", "queue:default"};
	char line[1024], laddr[64], buf[64];
	redisReply *r;

	CHECK(fx->c, "+OK", "CLIENT SETNAME ops-console");
	SUBSCRIBE(sub, 2, chans);
	freeReplyObject(CMD(sub, "PSUBSCRIBE user:*"));
	CHECK(tx, "+OK", "MULTI");
	CHECK(tx, "+QUEUED", "ENQUEUE u1");
	CHECK(tx, "+QUEUED", "QLEN default");

	assert_true(list_line(fx->c, me, line, sizeof(line)));
	ASSERT_FIELD(line, "name", "ops-console");
	ASSERT_FIELD(line, "flags", "N");
	ASSERT_FIELD(line, "cmd", "client|list");
	ASSERT_FIELD(line, "db", "0");
	ASSERT_FIELD(line, "multi", "-1");
	ASSERT_FIELD(line, "user", "default");
	ASSERT_FIELD(line, "resp", "2");
	snprintf(laddr, sizeof(laddr), "127.0.0.1:%d", fx->d->port);
	ASSERT_FIELD(line, "laddr", laddr);
	assert_int_equal(strncmp(line_field(line, "addr", buf, sizeof(buf)),
	                         "127.0.0.1:", 10),
	                 0);
	assert_true(list_line(fx->c, sid, line, sizeof(line)));
	ASSERT_FIELD(line, "flags", "P");
	ASSERT_FIELD(line, "sub", "2");
	ASSERT_FIELD(line, "psub", "1");
	ASSERT_FIELD(line, "cmd", "psubscribe");
	assert_true(list_line(fx->c, tid, line, sizeof(line)));
	ASSERT_FIELD(line, "flags", "x");
	ASSERT_FIELD(line, "multi", "2");
	/* TYPE and ID filter the list. */
	r = CMD(fx->c, "CLIENT LIST TYPE pubsub");
	assert_non_null(strstr(r->str, "flags=P"));
	assert_null(strstr(r->str, "flags=N"));
	freeReplyObject(r);
	r = CMD(fx->c, "CLIENT LIST ID %lld %lld", me, tid);
	assert_non_null(strstr(r->str, "name=ops-console"));
	assert_non_null(strstr(r->str, "flags=x"));
	assert_null(strstr(r->str, "flags=P"));
	freeReplyObject(r);
	CHECK(fx->c, "''", "CLIENT LIST TYPE master");
	CHECK(fx->c, "-ERR Unknown client type 'boss'",
	      "CLIENT LIST TYPE boss");
	CHECK(fx->c, "-ERR Invalid client ID", "CLIENT LIST ID 0");
	CHECK(fx->c, "-ERR syntax error", "CLIENT LIST FOO");
	/* CLIENT INFO: the caller's own line, the same fields. */
	r = CMD(fx->c, "CLIENT INFO");
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	snprintf(line, sizeof(line), "%s", r->str);
	freeReplyObject(r);
	ASSERT_FIELD(line, "name", "ops-console");
	ASSERT_FIELD(line, "cmd", "client|info");
	snprintf(buf, sizeof(buf), "%lld", me);
	ASSERT_FIELD(line, "id", buf);
	CHECK(tx, "+OK", "DISCARD");
	redisFree(sub);
	redisFree(tx);
}

/* The peer's address of c as CLIENT LIST shows it. */
static void
client_addr(redisContext *list, redisContext *c, char *addr, size_t len)
{
	char line[1024];

	assert_true(list_line(list, client_id(c), line, sizeof(line)));
	line_field(line, "addr", addr, len);
}

static void
client_kill(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *a = csqd_connect(fx->d), *b = csqd_connect(fx->d),
	             *s = csqd_connect(fx->d);
	const char *chans[] = {"events"};
	char addr[64], laddr[64], line[1024];
	long long bid = client_id(b);
	redisReply *r;

	/* The old form, by address: +OK, and the connection goes. */
	client_addr(fx->c, a, addr, sizeof(addr));
	CHECK(fx->c, "+OK", "CLIENT KILL %s", addr);
	r = redisCommand(a, "PING");
	assert_true(r == NULL || r->type == REDIS_REPLY_ERROR);
	if (r != NULL)
		freeReplyObject(r);
	CHECK(fx->c, "-ERR No such client", "CLIENT KILL %s", addr);
	redisFree(a);
	/* By id: the count. */
	CHECK(fx->c, ":1", "CLIENT KILL ID %lld", bid);
	CHECK(fx->c, ":0", "CLIENT KILL ID %lld", bid);
	redisFree(b);
	/* By type: only the subscriber. */
	SUBSCRIBE(s, 1, chans);
	CHECK(fx->c, ":1", "CLIENT KILL TYPE pubsub");
	r = CMD(fx->c, "CLIENT LIST TYPE pubsub");
	assert_string_equal(r->str, "");
	freeReplyObject(r);
	/* By local address: every other connection to that port; the
	 * caller's own stays unless SKIPME no. */
	a = csqd_connect(fx->d);
	b = csqd_connect(fx->d);
	CHECK(a, "+PONG", "PING"); /* accepted, both */
	CHECK(b, "+PONG", "PING");
	snprintf(laddr, sizeof(laddr), "127.0.0.1:%d", fx->d->port);
	CHECK(fx->c, ":2", "CLIENT KILL LADDR %s", laddr);
	CHECK(fx->c, ":0", "CLIENT KILL LADDR 127.0.0.1:1");
	assert_true(list_line(fx->c, client_id(fx->c), line, sizeof(line)));
	redisFree(a);
	redisFree(b);
	redisFree(s);
	/* ADDR with SKIPME no: the caller itself, after its reply. */
	client_addr(fx->c, fx->c, addr, sizeof(addr));
	CHECK(fx->c, ":1", "CLIENT KILL ADDR %s SKIPME no", addr);
	r = redisCommand(fx->c, "PING");
	assert_true(r == NULL || r->type == REDIS_REPLY_ERROR);
	if (r != NULL)
		freeReplyObject(r);
	redisFree(fx->c);
	fx->c = csqd_connect(fx->d);
	/* Errors, as Redis's. */
	CHECK(fx->c, "-ERR client-id should be greater than 0",
	      "CLIENT KILL ID x");
	CHECK(fx->c, "-ERR syntax error", "CLIENT KILL FOO bar");
	CHECK(fx->c, "-ERR syntax error", "CLIENT KILL ID 1 ADDR");
	CHECK(fx->c, "-ERR Unknown client type 'boss'",
	      "CLIENT KILL TYPE boss");
	CHECK(fx->c, "-ERR syntax error", "CLIENT KILL SKIPME maybe");
	CHECK(fx->c, "-ERR wrong number of arguments for 'client|kill' command",
	      "CLIENT KILL");
	csqd_wait_log(fx->d, "client killed client=");
}

static void
client_help(void **state)
{
	struct csqd_fx *fx = *state;
	const char *subs[] = {"GETNAME",        "ID",   "INFO",
	                      "KILL <ip:port>", "LIST", "SETNAME <name>",
	                      "SETINFO",        "HELP"};
	redisReply *r = CMD(fx->c, "CLIENT HELP");
	size_t i, k;

	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	for (k = 0; k < sizeof(subs) / sizeof(subs[0]); k++) {
		for (i = 0; i < r->elements; i++)
			if (strncmp(r->element[i]->str, subs[k],
			            strlen(subs[k])) == 0)
				break;
		if (i == r->elements)
			fail_at(__FILE__, __LINE__, "CLIENT HELP lacks %s",
			        subs[k]);
	}
	freeReplyObject(r);
	CHECK(fx->c, "-ERR unknown subcommand 'NOPE'. Try CLIENT HELP.",
	      "CLIENT NOPE");
	CHECK(fx->c,
	      "-ERR MONITOR is not supported: SUBSCRIBE events shows every "
	      "change csq makes, as it happens",
	      "MONITOR");
}

/* The section headers of an INFO reply, as "server,clients,...". */
static void
info_headers(redisContext *c, const char *args, char *out, size_t len)
{
	char words[128], *argv[8], *save = NULL, *w;
	const char *p;
	redisReply *r;
	size_t n = 0;
	int argc = 0;

	argv[argc++] = (char *)"INFO";
	snprintf(words, sizeof(words), "%s", args);
	for (w = strtok_r(words, " ", &save); w != NULL && argc < 8;
	     w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	r = CMD_ARGV(c, argc, (const char **)argv, NULL);

	assert_int_equal(r->type, REDIS_REPLY_STRING);
	out[0] = '\0';
	for (p = r->str; (p = strstr(p, "# ")) != NULL; p += 2) {
		size_t wl = strcspn(p + 2, "\r");

		n += (size_t)snprintf(out + n, len - n, "%s%.*s", n ? "," : "",
		                      (int)wl, p + 2);
	}
	freeReplyObject(r);
}

static void
info_sections(void **state)
{
	struct csqd_fx *fx = *state;
	char h[512];
	redisReply *r;
	size_t i;

	info_headers(fx->c, "", h, sizeof(h));
	assert_string_equal(h, "Server,Clients,Memory,Persistence,Stats,"
	                       "Replication,CPU,csq,Keyspace");
	info_headers(fx->c, "all", h, sizeof(h));
	assert_string_equal(h, "Server,Clients,Memory,Persistence,Stats,"
	                       "Replication,CPU,Commandstats,csq,Keyspace");
	info_headers(fx->c, "everything", h, sizeof(h));
	assert_string_equal(h, "Server,Clients,Memory,Persistence,Stats,"
	                       "Replication,CPU,Commandstats,csq,Keyspace");
	info_headers(fx->c, "default", h, sizeof(h));
	assert_string_equal(h, "Server,Clients,Memory,Persistence,Stats,"
	                       "Replication,CPU,csq,Keyspace");
	info_headers(fx->c, "MEMORY", h, sizeof(h));
	assert_string_equal(h, "Memory");
	info_headers(fx->c, "clients stats", h, sizeof(h));
	assert_string_equal(h, "Clients,Stats");
	info_headers(fx->c, "nosuchsection", h, sizeof(h));
	assert_string_equal(h, "");
	/* Each section its own fields. */
	r = CMD(fx->c, "INFO memory");
	assert_non_null(strstr(r->str, "used_memory:"));
	assert_non_null(strstr(r->str, "used_memory_rss:"));
	assert_null(strstr(r->str, "connected_clients"));
	freeReplyObject(r);
	assert_true(INFO_FIELD(fx->c, "used_memory") > 0);
	assert_true(INFO_FIELD(fx->c, "used_memory_rss") > 0);
	assert_int_equal(INFO_FIELD(fx->c, "connected_clients"), 1);
	assert_int_equal(INFO_FIELD(fx->c, "tcp_port"), fx->d->port);
	assert_int_equal(INFO_FIELD(fx->c, "blocked_clients"), 0);
	r = CMD(fx->c, "INFO clients");
	assert_non_null(strstr(r->str, "connected_clients:1\r\n"));
	assert_null(strstr(r->str, "used_memory"));
	freeReplyObject(r);
	/* The csq section and the keyspace line count what csq holds. */
	freeReplyObject(CMD(fx->c, "ENQUEUE u1"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u2"));
	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 CAPACITY 2"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u3"));
	r = CMD(fx->c, "INFO csq keyspace");
	assert_non_null(strstr(r->str, "engine_up:1\r\n"));
	assert_non_null(strstr(r->str, "waiting:1\r\n"));
	assert_non_null(strstr(r->str, "servicers:1\r\n"));
	assert_non_null(strstr(r->str, "rooms_busy:2\r\n"));
	assert_non_null(strstr(r->str, "db0:keys=4,expires=2,avg_ttl=0\r\n"));
	freeReplyObject(r);
	/* Commandstats: a line per command that ran. */
	r = CMD(fx->c, "INFO commandstats");
	assert_non_null(strstr(r->str, "cmdstat_enqueue:calls=3,"));
	assert_non_null(strstr(r->str, "cmdstat_heartbeat:calls=1,"));
	assert_non_null(strstr(r->str, "failed_calls=0"));
	freeReplyObject(r);
	/* Every field of STATS, v2's too, with the same value (an offer
	 * declined and a transfer make v2's counters other than 0). */
	freeReplyObject(CMD(fx->c, "HEARTBEAT s2 OFFER 30"));
	freeReplyObject(CMD(fx->c, "DECLINE s2/0"));
	freeReplyObject(CMD(fx->c, "TRANSFER s1/0 other"));
	r = CMD(fx->c, "STATS");
	assert_true(r->elements >= 26);
	for (i = 0; i + 1 < r->elements; i += 2)
		if (INFO_FIELD(fx->c, r->element[i]->str) !=
		    r->element[i + 1]->integer)
			fail_msg("INFO csq %s: %lld, STATS: %lld",
			         r->element[i]->str,
			         INFO_FIELD(fx->c, r->element[i]->str),
			         r->element[i + 1]->integer);
	assert_int_equal(field_int_at(__FILE__, __LINE__, r, "offers_total"),
	                 1);
	assert_int_equal(
	    field_int_at(__FILE__, __LINE__, r, "offers_declined_total"), 1);
	assert_int_equal(
	    field_int_at(__FILE__, __LINE__, r, "transferred_total"), 1);
	freeReplyObject(r);
	/* Persistence: the journal, on the memory engine with one. */
	r = CMD(fx->c, "INFO persistence");
	assert_non_null(strstr(r->str, "loading:0\r\n"));
	assert_non_null(strstr(r->str, "journal_enabled:0\r\n"));
	freeReplyObject(r);
}

static char journal_path[64];

static int
setup_journal(void **state)
{
	char conf[128];

	if (strcmp(csqd_engine(), "memory") != 0)
		return csqd_fx_setup_default(state);
	snprintf(journal_path, sizeof(journal_path),
	         "/tmp/csq-it-introspection-%ld.journal", (long)getpid());
	snprintf(conf, sizeof(conf), "memory: { journal = \"%s\"; };",
	         journal_path);
	return csqd_fx_setup(state, conf);
}

static int
teardown_journal(void **state)
{
	int rc = csqd_fx_teardown(state);

	if (journal_path[0] != '\0')
		unlink(journal_path);
	return rc;
}

/* With a journal, its size grows with the changes. */
static void
info_journal(void **state)
{
	struct csqd_fx *fx = *state;
	long long before, after;

	if (strcmp(csqd_engine(), "memory") != 0) {
		/* The Redis engine's persistence is Redis's own. */
		assert_int_equal(INFO_FIELD(fx->c, "journal_enabled"), 0);
		return;
	}
	assert_int_equal(INFO_FIELD(fx->c, "journal_enabled"), 1);
	before = INFO_FIELD(fx->c, "journal_bytes");
	freeReplyObject(CMD(fx->c, "ENQUEUE u1"));
	after = INFO_FIELD(fx->c, "journal_bytes");
	assert_true(after > before);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        client_list_and_info, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(client_kill, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(client_help, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        info_sections, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(info_journal, setup_journal,
	                                    teardown_journal),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
