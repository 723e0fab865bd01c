/*
 * Authentication and administration: requirepass and AUTH, the commands
 * Redis clients send on their own (INFO, CLIENT, SELECT, COMMAND), SIGHUP
 * reload, SIGINT, and the command line (-n, -v).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NOAUTH    "-NOAUTH Authentication required."
#define WRONGPASS "-WRONGPASS invalid username-password pair"
#define EX_CONFIG 78

static int
setup_pw(void **state)
{
	return csqd_fx_setup(state,
	                     "requirepass = \"pw\";\nservicer_ttl = 30;");
}

static void
raw_expect(int port, const char *req, const char *expect, int expect_close)
{
	char out[1024];
	int fd, closed;

	fd = raw_connect(port);
	raw_sends(fd, req);
	/* The whole reply, however slow; then the close, which comes at
	 * once when it is right, or 300 ms of silence. */
	raw_read_until(fd, out, sizeof(out), expect,
	               expect_close ? RAW_REPLY_MS : 300, &closed);
	close(fd);
	assert_string_equal(out, expect);
	assert_int_equal(closed, expect_close);
}

/* Before AUTH, everything but AUTH and QUIT gets -NOAUTH. */
static void
auth_required(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c2;
	redisReply *r;

	CHECK(fx->c, NOAUTH, "PING");
	CHECK(fx->c, NOAUTH, "ENQUEUE u1");
	CHECK(fx->c, NOAUTH, "HEARTBEAT s1");
	CHECK(fx->c, NOAUTH, "FOO bar");
	CHECK(fx->c, NOAUTH, "SUBSCRIBE events");
	CHECK(fx->c, NOAUTH, "INFO");
	CHECK(fx->c, NOAUTH, "CLIENT SETNAME x");
	CHECK(fx->c, NOAUTH, "SELECT 0");
	CHECK(fx->c, NOAUTH, "COMMAND");
	CHECK(fx->c, NOAUTH, "ENQUEUE");
	/* HELLO before AUTH, as in Redis: only with its AUTH option, and a
	 * refused one changes nothing (the protocol neither: hiredis, which
	 * reads only RESP2, would fail on the next reply). */
	CHECK(fx->c,
	      "-NOAUTH HELLO must be called with the client already "
	      "authenticated, otherwise the HELLO <proto> AUTH <user> <pass> "
	      "option can be used to authenticate the client and select the "
	      "RESP protocol version at the same time",
	      "HELLO 3");
	CHECK(fx->c, WRONGPASS, "HELLO 3 AUTH default nope");
	CHECK(fx->c, WRONGPASS, "HELLO 3 AUTH bob pw");
	CHECK(fx->c, "-ERR Syntax error in HELLO option 'AUTH'",
	      "HELLO 3 AUTH pw");
	CHECK(fx->c, NOAUTH, "PING");
	CHECK(fx->c, WRONGPASS, "AUTH nope");
	CHECK(fx->c, WRONGPASS, "AUTH default nope");
	CHECK(fx->c, WRONGPASS, "AUTH bob pw");
	CHECK(fx->c, WRONGPASS, "AUTH PW");
	CHECK(fx->c, "-ERR wrong number of arguments for 'auth' command",
	      "AUTH");
	CHECK(fx->c, "-ERR syntax error", "AUTH a b c");
	CHECK(fx->c, NOAUTH, "PING");
	CHECK(fx->c, "+OK", "AUTH pw");
	CHECK(fx->c, "+PONG", "PING");
	/* The refused ENQUEUE did nothing. */
	CHECK(fx->c, "['state','none']", "WHERE u1");
	CHECK(fx->c, "[]", "SERVICERS");
	/* RESET makes the connection new again: unauthenticated. */
	CHECK(fx->c, "+RESET", "RESET");
	CHECK(fx->c, NOAUTH, "PING");
	CHECK(fx->c, NOAUTH, "RESET");
	CHECK(fx->c, "+OK", "AUTH pw");

	c2 = csqd_connect(fx->d);
	CHECK(c2, NOAUTH, "PING");
	CHECK(c2, "+OK", "auth default pw");
	CHECK(c2, "+PONG", "PING");
	redisFree(c2);

	/* HELLO's AUTH and SETNAME at once, staying on RESP2; a bad name
	 * refuses the whole of it, after the password is taken, as Redis. */
	c2 = csqd_connect(fx->d);
	CHECK(c2,
	      "-ERR Client names cannot contain spaces, newlines or "
	      "special characters.",
	      "HELLO 2 AUTH default pw SETNAME %s", "a\nb");
	CHECK(c2, "+PONG", "PING");
	CHECK(c2, "nil", "CLIENT GETNAME");
	redisFree(c2);
	c2 = csqd_connect(fx->d);
	r = CMD(c2, "HELLO 2 AUTH default pw SETNAME app");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 14);
	assert_string_equal(FIELD_STR(r, "server"), "csq");
	assert_int_equal(FIELD_INT(r, "proto"), 2);
	freeReplyObject(r);
	CHECK(c2, "+PONG", "PING");
	CHECK(c2, "'app'", "CLIENT GETNAME");
	redisFree(c2);

	raw_expect(fx->d->port, "PING\r\n", NOAUTH "\r\n", 0);
	raw_expect(fx->d->port, "QUIT\r\n", "+OK\r\n", 1);
	raw_expect(fx->d->port, "AUTH pw\r\nPING\r\n", "+OK\r\n+PONG\r\n", 0);
	raw_expect(fx->d->port, "AUTH x\r\nPING\r\n",
	           WRONGPASS "\r\n" NOAUTH "\r\n", 0);
}

static void
auth_without_password(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "-ERR AUTH <password> called without any password configured for "
	      "the default user. Are you sure your configuration is correct?",
	      "AUTH x");
	/* As Redis 6+: the default user takes any password (a client given
	 * redis://default:pw@host sends this), another user none. */
	CHECK(fx->c, "+OK", "AUTH default x");
	CHECK(fx->c, "+OK", "auth DEFAULT anything");
	CHECK(fx->c, WRONGPASS, "AUTH bob x");
	CHECK(fx->c, "+PONG", "PING");
}

static void
ping_and_info(void **state)
{
	struct csqd_fx *fx = *state;
	char out[256], *v, *e;
	redisReply *r;

	CHECK(fx->c, "+PONG", "PING");
	CHECK(fx->c, "'hello'", "PING hello");
	CHECK(fx->c, "''", "PING %s", "");
	r = CMD(fx->c, "INFO");
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	assert_non_null(strstr(r->str, "# Server\r\n"));
	assert_non_null(strstr(r->str, "loading:0\r\n"));
	v = strstr(r->str, "csq_version:");
	assert_non_null(v);
	/* The same version as csqd -v prints. */
	v += strlen("csq_version:");
	e = strstr(v, "\r\n");
	assert_non_null(e);
	*e = '\0';
	assert_true(strlen(v) > 0);
	assert_int_equal(csqd_run(out, sizeof(out), "-v", NULL), 0);
	assert_true(strncmp(out, "csqd ", 5) == 0);
	assert_true(strncmp(out + 5, v, strlen(v)) == 0);
	freeReplyObject(r);
	r = CMD(fx->c, "INFO server");
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	assert_non_null(strstr(r->str, "# Server\r\n"));
	freeReplyObject(r);
	r = CMD(fx->c, "info");
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	freeReplyObject(r);
}

/*
 * INFO's total_error_replies counts every error reply, as Redis's does and
 * as /metrics does: it used to miss the errors that a command gives
 * itself (an invalid id, a syntax error, SELECT 1), and counted only
 * arity, unknown commands and the engine's.
 */
/* Sends cmd (a literal, split on spaces), which must get an error. */
#define EXPECT_ERROR(c, cmd, n)                                                \
	do {                                                                   \
		redisReply *r_ = CMD((c), cmd);                                \
		assert_int_equal(r_->type, REDIS_REPLY_ERROR);                 \
		freeReplyObject(r_);                                           \
		(n)++;                                                         \
	} while (0)

/* Sends a malformed request on a connection of its own; its reply must be
 * the protocol error, and the connection must close. */
static void
raw_protocol_error(int port, const char *req)
{
	char buf[256];
	int fd = raw_connect(port), closed = 0;

	raw_sends(fd, req);
	raw_read(fd, buf, sizeof(buf), 2000, &closed);
	close(fd);
	if (strncmp(buf, "-ERR Protocol error", 19) != 0 || !closed)
		fail_msg("%s: got %s%s", req, buf, closed ? "" : " (open)");
}

static void
info_counts_errors(void **state)
{
	struct csqd_fx *fx = *state;
	long long before, after, n = 0;

	before = INFO_FIELD(fx->c, "total_error_replies");
	assert_true(before >= 0);
	EXPECT_ERROR(fx->c, "ENQUEUE bad!id", n);
	EXPECT_ERROR(fx->c, "ENQUEUE u1 TIER x", n);
	EXPECT_ERROR(fx->c, "ENQUEUE u1 BOGUS", n);
	EXPECT_ERROR(fx->c, "SELECT 1", n);
	EXPECT_ERROR(fx->c, "AUTH x", n);
	EXPECT_ERROR(fx->c, "CLIENT bogus", n);
	EXPECT_ERROR(fx->c, "HEARTBEAT s1 CAPACITY 0", n);
	EXPECT_ERROR(fx->c, "RELEASE nosuch/0", n);
	EXPECT_ERROR(fx->c, "NOSUCHCOMMAND", n);
	EXPECT_ERROR(fx->c, "PING a b", n);
	EXPECT_ERROR(fx->c, "HELLO 4", n);
	/* Protocol errors too, as Redis counts them: a bad bulk length and
	 * an unbalanced quote, each on a connection of its own (it closes). */
	raw_protocol_error(fx->d->port, "*1\r\n$abc\r\n");
	n++;
	raw_protocol_error(fx->d->port, "SET \"a\r\n");
	n++;
	CHECK(fx->c, "+PONG", "PING");
	freeReplyObject(CMD(fx->c, "ENQUEUE u1"));
	after = INFO_FIELD(fx->c, "total_error_replies");
	print_message("total_error_replies %lld then %lld\n", before, after);
	assert_int_equal(after - before, n);
}

static void
client_commands(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c2;
	redisReply *r;
	long long id1, id2;
	char lng[301], want[400];

	CHECK(fx->c, "nil", "CLIENT GETNAME");
	CHECK(fx->c, "+OK", "CLIENT SETNAME agent-7");
	CHECK(fx->c, "'agent-7'", "CLIENT GETNAME");
	CHECK(fx->c, "'agent-7'", "client getname");
	CHECK(fx->c, "+OK", "CLIENT SETINFO lib-name hiredis");
	CHECK(fx->c, "+OK", "client setinfo LIB-VER 0.14.1");
	r = CMD(fx->c, "CLIENT ID");
	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	id1 = r->integer;
	freeReplyObject(r);
	c2 = csqd_connect(fx->d);
	CHECK(c2, "nil", "CLIENT GETNAME");
	r = CMD(c2, "client id");
	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	id2 = r->integer;
	freeReplyObject(r);
	assert_true(id2 != id1);
	redisFree(c2);
	r = CMD(fx->c, "CLIENT ID");
	assert_reply_integer(r, id1);
	freeReplyObject(r);
	CHECK(fx->c, "-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.",
	      "CLIENT NOSUCH");
	/* A name of 300 bytes is quoted back cut at 128, wherever an error
	 * quotes one. */
	memset(lng, 'x', 300);
	lng[300] = '\0';
	snprintf(want, sizeof(want), "-ERR unknown command '%.128s'", lng);
	CHECK(fx->c, want, "%s", lng);
	snprintf(want, sizeof(want),
	         "-ERR unknown subcommand '%.128s'. Try CLIENT HELP.", lng);
	CHECK(fx->c, want, "CLIENT %s", lng);
	snprintf(want, sizeof(want),
	         "-ERR unknown subcommand '%.128s'. Try COMMAND HELP.", lng);
	CHECK(fx->c, want, "COMMAND %s", lng);
	snprintf(want, sizeof(want),
	         "-ERR Syntax error in HELLO option '%.128s'", lng);
	CHECK(fx->c, want, "HELLO 2 %s", lng);
	CHECK(fx->c, "-ERR wrong number of arguments for 'client' command",
	      "CLIENT");
	/* The subcommand is named as Redis names it, whatever the case. */
	CHECK(fx->c,
	      "-ERR wrong number of arguments for 'client|setname' command",
	      "CLIENT SetName");
	CHECK(fx->c, "-ERR wrong number of arguments for 'client|id' command",
	      "client ID x");
}

static void
select_and_command(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c, "+OK", "SELECT 0");
	CHECK(fx->c, "+OK", "select 0");
	CHECK(fx->c, "-ERR DB index is out of range", "SELECT 1");
	CHECK(fx->c, "-ERR DB index is out of range", "SELECT 15");
	CHECK(fx->c, "-ERR value is not an integer or out of range",
	      "SELECT x");
	CHECK(fx->c, "[]", "COMMAND");
	CHECK(fx->c, "[]", "COMMAND DOCS");
	CHECK(fx->c, "[]", "command docs enqueue");
	CHECK(fx->c, ":0", "COMMAND COUNT");
	CHECK(fx->c, ":0", "command count");
	CHECK(fx->c, "[]", "COMMAND HELP");
	CHECK(fx->c, "-ERR unknown subcommand 'bogus'. Try COMMAND HELP.",
	      "COMMAND bogus");
	CHECK(fx->c,
	      "-ERR wrong number of arguments for 'command|count' command",
	      "COMMAND COUNT x");
	CHECK(fx->c,
	      "-ERR wrong number of arguments for 'client|setinfo' command",
	      "CLIENT SETINFO lib-name");
	CHECK(fx->c, "+PONG", "PING");
}

static int
auth_ok(struct csqd *d, const char *pw)
{
	redisContext *c;
	redisReply *r;
	int ok;

	c = csqd_connect(d);
	r = CMD(c, "AUTH %s", pw);
	ok = r->type == REDIS_REPLY_STATUS;
	freeReplyObject(r);
	redisFree(c);
	return ok;
}

/*
 * SIGHUP reloads requirepass and servicer_ttl; connections stay; a bad file
 * keeps the running configuration.
 */
static void
sighup_reload(void **state)
{
	struct csqd_fx *fx = *state;
	static const char *bad[] = {
	    "requirepass = \"pw3\";\nservicer_ttl = 0;",
	    "requirepass = \"pw3\";\nservicer_ttl = \"ten\";",
	    "requirepass = \"pw3\";\nbogus_key = 1;",
	    "requirepass = \"pw3\" servicer_ttl = ;;; {",
	};
	int64_t deadline;
	redisContext *c;
	size_t i;

	CHECK(fx->c, "+OK", "AUTH pw");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	csqd_rewrite_conf(fx->d, "requirepass = \"pw2\";\nservicer_ttl = 5;\n"
	                         "max_queue_length = 1;\nmax_tier = 3;");
	kill(fx->d->pid, SIGHUP);
	deadline = now_ms() + 3000;
	while (!auth_ok(fx->d, "pw2")) {
		if (now_ms() > deadline)
			fail_msg(
			    "new requirepass not in force 3 s after SIGHUP");
		sleep_ms(50);
	}
	assert_false(auth_ok(fx->d, "pw"));
	/* The old connection is still open and authenticated. */
	CHECK(fx->c, "+PONG", "PING");
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:5]",
	      "HEARTBEAT s2");
	/* s1 keeps the TTL it had. */
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	/* Limits are reloaded too. */
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE x1 QUEUE q TIER 3");
	CHECK(fx->c, "-FULL queue is at its maximum length",
	      "ENQUEUE x2 QUEUE q");
	CHECK(fx->c, "-ERR value is not an integer or out of range",
	      "ENQUEUE x3 QUEUE r TIER 4");

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t until = now_ms() + 10000;

		csqd_rewrite_conf(fx->d, bad[i]);
		kill(fx->d->pid, SIGHUP);
		/* Handled, and refused, before anything is asserted. */
		while (count_in_file(fx->d->log_path,
		                     "keeping the running configuration") <=
		       (int)i) {
			if (now_ms() > until)
				fail_msg("reload %zu never refused", i);
			sleep_ms(10);
		}
		assert_true(csqd_alive(fx->d));
		assert_false(auth_ok(fx->d, "pw3"));
		assert_true(auth_ok(fx->d, "pw2"));
		CHECK(fx->c,
		      "['servicer','s3','status','ready','capacity',:1,"
		      "'active',:0,'ttl',:5]",
		      "HEARTBEAT s3");
		CHECK(fx->c, ":0", "LOGOUT s3");
	}

	/* requirepass "" turns authentication off. */
	csqd_rewrite_conf(fx->d, "requirepass = \"\";");
	kill(fx->d->pid, SIGHUP);
	deadline = now_ms() + 3000;
	for (;;) {
		redisReply *r;
		int ok;

		c = csqd_connect(fx->d);
		r = CMD(c, "PING");
		ok = r->type == REDIS_REPLY_STATUS;
		freeReplyObject(r);
		redisFree(c);
		if (ok)
			break;
		if (now_ms() > deadline)
			fail_msg("requirepass \"\" not in force after SIGHUP");
		sleep_ms(50);
	}
	/* And the default servicer_ttl is back to 30. */
	CHECK(fx->c,
	      "['servicer','s4','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s4");
	/* And the default limits. */
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:2,'eta_ms',:-1]",
	      "ENQUEUE x2 QUEUE q TIER 0");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE x3 QUEUE q TIER 9");
}

/* listen may name a Unix socket and IPv6 beside IPv4: all serve the same
 * state. */
static void
unix_socket(void **state)
{
	struct timeval tv = {5, 0};
	redisContext *u, *c, *v6;
	struct csqd *d;

	(void)state;
	d = csqd_start_unix("");
	u = redisConnectUnixWithTimeout(d->unix_path, tv);
	assert_non_null(u);
	if (u->err)
		fail_msg("connect %s: %s", d->unix_path, u->errstr);
	CHECK(u, "+PONG", "PING");
	CHECK(
	    u,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1");
	c = csqd_connect(d);
	CHECK(
	    c,
	    "['state','waiting','queue','default','position',:2,'eta_ms',:-1]",
	    "ENQUEUE u2");
	CHECK(u, ":2", "QLEN default");
	/* The same daemon on IPv6 loopback. */
	v6 = redisConnectWithTimeout("::1", d->port, tv);
	assert_non_null(v6);
	if (v6->err)
		fail_msg("connect [::1]:%d: %s", d->port, v6->errstr);
	CHECK(v6, ":2", "QLEN default");
	redisFree(v6);
	redisFree(u);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

/* SIGINT stops the daemon cleanly too. */
static void
sigint_exits_0(void **state)
{
	struct csqd *d;

	(void)state;
	d = csqd_start("");
	kill(d->pid, SIGINT);
	/* It exits by itself, with 0: no SIGTERM from csqd_stop. */
	assert_int_equal(csqd_wait_exit(d, 5000), 0);
	assert_int_equal(csqd_stop(d), 0);
}

static void
expect_check_fails(const char *dir, const char *text, int line)
{
	char path[600], out[4096], want[700];
	int rc;

	snprintf(path, sizeof(path), "%s/bad.conf", dir);
	write_file(path, text);
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != EX_CONFIG)
		fail_msg("csqd -n on\n%s\nexit %d (expected 78), output: %s",
		         text, rc, out);
	if (line > 0)
		snprintf(want, sizeof(want), "%s:%d:", path, line);
	else
		snprintf(want, sizeof(want), "%s:", path);
	if (strstr(out, want) == NULL)
		fail_msg("csqd -n on\n%s\noutput lacks '%s': %s", text, want,
		         out);
	if (strstr(out, "configuration OK") != NULL)
		fail_msg("csqd -n on a bad file said OK: %s", out);
}

/* csqd -n -c FILE: "configuration OK" and 0, or FILE:LINE: errors and 78. */
static void
check_config(void **state)
{
	static const char full[] =
	    "listen = [ \"127.0.0.1:7878\", \"unix:/tmp/csqd-it-none.sock\" "
	    "];\n"
	    "requirepass = \"\";\n"
	    "engine = \"memory\";\n"
	    "servicer_ttl = 30;\n"
	    "user_ttl = 120;\n"
	    "max_tier = 9;\n"
	    "max_queue_length = 100000;\n"
	    "max_clients = 10000;\n"
	    "memory: { journal = \"\"; fsync = \"everysec\"; };\n"
	    "redis: { host = \"127.0.0.1\"; port = 6379; password = \"\"; "
	    "db = 0; prefix = \"csq\"; };\n"
	    "http: { listen = \"127.0.0.1:7879\"; };\n"
	    "log: { level = \"info\"; };\n";
	char dir[] = "/tmp/csqd-it-conf.XXXXXX", path[600], out[4096];
	int rc;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/good.conf", dir);
	write_file(path, full);
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0 || strstr(out, "configuration OK") == NULL)
		fail_msg("csqd -n on the documented example: exit %d: %s", rc,
		         out);
	write_file(path, "");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "configuration OK"));
	write_file(path,
	           "max_tier = 15;\nservicer_ttl = 86400;\nuser_ttl = 0;\n"
	           "max_clients = 1;\nmax_queue_length = 100000000;\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0)
		fail_msg("limits themselves rejected: %s", out);

	expect_check_fails(dir,
	                   "servicer_ttl = 30;\nuser_ttl = 120;\n"
	                   "bogus_key = 1;\n",
	                   3);
	expect_check_fails(dir, "max_tier = 16;\n", 1);
	expect_check_fails(dir, "\nservicer_ttl = \"x\";\n", 2);
	expect_check_fails(dir, "servicer_ttl = 0;\n", 1);
	expect_check_fails(dir, "user_ttl = 86401;\n", 1);
	expect_check_fails(dir, "max_clients = 0;\n", 1);
	expect_check_fails(dir, "max_queue_length = 0;\n", 1);
	expect_check_fails(dir, "engine = \"nope\";\n", 1);
	expect_check_fails(dir, "\n\nrequirepass = 5;\n", 3);
	expect_check_fails(dir, "memory: { fsync = \"sometimes\"; };\n", 1);
	expect_check_fails(dir, "log: { level = \"loud\"; };\n", 1);
	expect_check_fails(dir, "log: { level = \"info\"; colour = 1; };\n", 1);
	/* A syntax error: the line is libconfig's to choose. */
	expect_check_fails(dir, "listen = [ \"127.0.0.1:7878\"\n", 0);

	snprintf(path, sizeof(path), "%s/missing.conf", dir);
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	assert_int_not_equal(rc, 0);
	assert_null(strstr(out, "configuration OK"));

	snprintf(path, sizeof(path), "%s/good.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bad.conf", dir);
	unlink(path);
	rmdir(dir);
}

static void
version_and_usage(void **state)
{
	char out[1024];
	int rc;

	(void)state;
	rc = csqd_run(out, sizeof(out), "-v", NULL);
	assert_int_equal(rc, 0);
	assert_memory_equal(out, "csqd ", 5);
	assert_true(strlen(out) > 5);
	rc = csqd_run(out, sizeof(out), "-Z", NULL);
	assert_int_not_equal(rc, 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(auth_required, setup_pw,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        auth_without_password, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        ping_and_info, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        info_counts_errors, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        client_commands, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        select_and_command, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(sighup_reload, setup_pw,
	                                    csqd_fx_teardown),
	    cmocka_unit_test(unix_socket),
	    cmocka_unit_test(sigint_exits_0),
	    cmocka_unit_test(check_config),
	    cmocka_unit_test(version_and_usage),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("admin", tests, NULL, NULL);
}
