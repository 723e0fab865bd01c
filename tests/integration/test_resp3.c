/*
 * RESP3, as a client gets it with HELLO 3 (node-redis 5 and ioredis 6 ask
 * for it by default): HELLO's checks and reply, maps for the replies that
 * describe a thing, the null type, pub/sub messages and confirmations as
 * pushes, any command while subscribed, and the way back (HELLO 2,
 * RESET). hiredis 0.14 reads only RESP2, so these tests read the bytes
 * themselves, on a raw socket, and render each frame as text: 'bulk',
 * :int, +simple, -error, _ (null), nil (RESP2's null), [array],
 * {key:value map} and >[push].
 *
 * How it was attacked: every HELLO error must leave the protocol as it
 * was; a HELLO between pipelined engine calls must not change the framing
 * of the replies before it (on the Redis engine those are still in flight
 * when it is read); a subscriber's own command must get its messages
 * before its reply, both framed as RESP3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define R3_BUF 65536

struct r3 {
	int fd;
	char buf[R3_BUF];
	size_t len, pos;
};

static void
r3_open(struct r3 *r, int port)
{
	memset(r, 0, sizeof(*r));
	r->fd = raw_connect(port);
}

/* Reads more, waiting up to 5 s; fails the test on EOF or timeout. */
static void
r3_more(struct r3 *r)
{
	size_t n;

	if (r->pos > 0) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
	}
	if (r->len + 1 >= sizeof(r->buf))
		fail_msg("a frame over %zu bytes", sizeof(r->buf));
	n = raw_read_n(r->fd, r->buf + r->len, 1, 5000);
	if (n == 0)
		fail_msg("no more bytes from csqd (had: %.*s)", (int)r->len,
		         r->buf);
	r->len += n;
}

/* One line of the input, without its CRLF, NUL-terminated in place. */
static char *
r3_line(struct r3 *r)
{
	char *eol, *line;

	while ((eol = memmem(r->buf + r->pos, r->len - r->pos, "\r\n", 2)) ==
	       NULL)
		r3_more(r);
	line = r->buf + r->pos;
	*eol = '\0';
	r->pos = (size_t)(eol + 2 - r->buf);
	return line;
}

static void
r3_put(char *out, size_t cap, const char *s)
{
	size_t n = strlen(out);

	snprintf(out + n, cap - n, "%s", s);
}

/* Reads one frame and appends its rendering to out. */
static void
r3_frame(struct r3 *r, char *out, size_t cap)
{
	char *line = r3_line(r), type = line[0], text[R3_BUF + 3];
	long long n = strtoll(line + 1, NULL, 10), i;

	switch (type) {
	case '+':
	case '-':
	case ':':
		r3_put(out, cap, line);
		return;
	case '_':
		r3_put(out, cap, "_");
		return;
	case '=': /* verbatim: shown as =txt:... */
	case '$':
		if (n < 0) {
			r3_put(out, cap, "nil");
			return;
		}
		while (r->len - r->pos < (size_t)n + 2)
			r3_more(r);
		snprintf(text, sizeof(text), type == '=' ? "=%.*s" : "'%.*s'",
		         (int)n, r->buf + r->pos);
		r->pos += (size_t)n + 2;
		r3_put(out, cap, text);
		return;
	case '*':
	case '>':
	case '%':
		if (n < 0) {
			r3_put(out, cap, "nil");
			return;
		}
		r3_put(out, cap, type == '%' ? "{" : type == '>' ? ">[" : "[");
		for (i = 0; i < (type == '%' ? 2 * n : n); i++) {
			if (i > 0)
				r3_put(out, cap,
				       type == '%' && i % 2 ? ":" : ",");
			r3_frame(r, out, cap);
		}
		r3_put(out, cap, type == '%' ? "}" : "]");
		return;
	default:
		fail_msg("not a RESP frame: %s", line);
	}
}

static void
r3_expect_at(const char *file, int line, struct r3 *r, const char *expect)
{
	char got[R3_BUF] = "";

	r3_frame(r, got, sizeof(got));
	if (strcmp(got, expect) != 0)
		fail_msg("%s:%d: got %s, expected %s", file, line, got, expect);
}

/* The next frame begins with prefix (the rest varies: times). */
static void
r3_expect_prefix_at(const char *file, int line, struct r3 *r,
                    const char *prefix)
{
	char got[R3_BUF] = "";

	r3_frame(r, got, sizeof(got));
	if (strncmp(got, prefix, strlen(prefix)) != 0)
		fail_msg("%s:%d: got %s, expected %s…", file, line, got,
		         prefix);
}

#define EXPECT(r, e)        r3_expect_at(__FILE__, __LINE__, (r), (e))
#define EXPECT_PREFIX(r, e) r3_expect_prefix_at(__FILE__, __LINE__, (r), (e))

/* An inline request. */
static void
r3_send(struct r3 *r, const char *line)
{
	raw_sends(r->fd, line);
	raw_sends(r->fd, "\r\n");
}

#define HELLO_TAIL "'mode':'standalone','role':'master','modules':[]}"

/* HELLO: its checks, its reply in each protocol, and the way back. */
static void
hello_versions(void **state)
{
	struct csqd_fx *fx = *state;
	struct r3 r;
	char id[64], want[512];

	r3_open(&r, fx->d->port);
	r3_send(&r, "CLIENT ID");
	snprintf(id, sizeof(id), "%s", r3_line(&r) + 1);

	/* Without a version it changes nothing. */
	r3_send(&r, "HELLO");
	snprintf(want, sizeof(want),
	         "['server','csq','version','7.0.0','proto',:2,'id',:%s,"
	         "'mode','standalone','role','master','modules',[]]",
	         id);
	EXPECT(&r, want);
	r3_send(&r, "CLIENT GETNAME");
	EXPECT(&r, "nil");

	r3_send(&r, "hello 3");
	snprintf(
	    want, sizeof(want),
	    "{'server':'csq','version':'7.0.0','proto'::3,'id'::%s," HELLO_TAIL,
	    id);
	EXPECT(&r, want);
	r3_send(&r, "CLIENT GETNAME");
	EXPECT(&r, "_");

	/* Refused, each leaves RESP3 as it was. */
	r3_send(&r, "HELLO 4");
	EXPECT(&r, "-NOPROTO unsupported protocol version");
	r3_send(&r, "HELLO 1");
	EXPECT(&r, "-NOPROTO unsupported protocol version");
	r3_send(&r, "HELLO x");
	EXPECT(&r, "-ERR Protocol version is not an integer or out of range");
	r3_send(&r, "HELLO 2 BOGUS");
	EXPECT(&r, "-ERR Syntax error in HELLO option 'BOGUS'");
	r3_send(&r, "HELLO 2 SETNAME");
	EXPECT(&r, "-ERR Syntax error in HELLO option 'SETNAME'");
	r3_send(&r, "HELLO 2 AUTH default");
	EXPECT(&r, "-ERR Syntax error in HELLO option 'AUTH'");
	r3_send(&r, "HELLO 2 AUTH bob x");
	EXPECT(&r, "-WRONGPASS invalid username-password pair");
	r3_send(&r, "HELLO 2 SETNAME \"a b\"");
	EXPECT(&r, "-ERR Client names cannot contain spaces, newlines or "
	           "special characters.");
	r3_send(&r, "CLIENT GETNAME");
	EXPECT(&r, "_");
	/* INFO is text for a person: a verbatim string, as Redis 7's. */
	r3_send(&r, "INFO");
	EXPECT_PREFIX(&r, "=txt:# Server\r\ncsq_version:");

	/* Back to RESP2, then RESP3 with a name; RESET ends both. */
	r3_send(&r, "HELLO 2");
	EXPECT_PREFIX(&r, "['server','csq','version','7.0.0','proto',:2,");
	r3_send(&r, "INFO");
	EXPECT_PREFIX(&r, "'# Server\r\ncsq_version:");
	r3_send(&r, "CLIENT GETNAME");
	EXPECT(&r, "nil");
	r3_send(&r, "HELLO 3 AUTH default anything SETNAME app");
	EXPECT_PREFIX(&r, "{'server':'csq','version':'7.0.0','proto'::3,");
	r3_send(&r, "CLIENT GETNAME");
	EXPECT(&r, "'app'");
	r3_send(&r, "RESET");
	EXPECT(&r, "+RESET");
	r3_send(&r, "CLIENT GETNAME");
	EXPECT(&r, "nil");
	close(r.fd);
}

/* The replies that describe a thing are maps; lists stay arrays. */
static void
replies_as_maps(void **state)
{
	struct csqd_fx *fx = *state;
	struct r3 r;

	r3_open(&r, fx->d->port);
	r3_send(&r, "HELLO 3");
	EXPECT_PREFIX(&r, "{'server':'csq'");
	r3_send(&r, "WHERE nobody");
	EXPECT(&r, "{'state':'none'}");
	r3_send(&r, "ENQUEUE u1");
	EXPECT(
	    &r,
	    "{'state':'waiting','queue':'default','position'::1,'eta_ms'::-1}");
	r3_send(&r, "WHERE u1");
	EXPECT_PREFIX(&r, "{'state':'waiting','queue':'default','position'::1,"
	                  "'tier'::0,'waited_ms'::");
	r3_send(&r, "HEARTBEAT s1 TTL 60");
	EXPECT(&r, "{'servicer':'s1','status':'ready','capacity'::1,"
	           "'active'::1,'ttl'::60}");
	r3_send(&r, "ENQUEUE u1");
	EXPECT(&r, "{'state':'assigned','queue':'default','room':'s1/0',"
	           "'servicer':'s1'}");
	r3_send(&r, "WHERE u1");
	EXPECT_PREFIX(&r, "{'state':'assigned','queue':'default','room':"
	                  "'s1/0','servicer':'s1','since_ms'::");
	r3_send(&r, "ENQUEUE u2 TIER 2");
	EXPECT(
	    &r,
	    "{'state':'waiting','queue':'default','position'::1,'eta_ms'::-1}");
	r3_send(&r, "STATS");
	EXPECT(&r, "{'waiting'::1,'servicers'::1,'rooms_busy'::1,"
	           "'rooms_free'::0,'enqueued_total'::2,'matched_total'::1,"
	           "'abandoned_total'::0,'requeued_total'::0,"
	           "'servicers_lost_total'::0,'offers_total'::0,"
	           "'offers_declined_total'::0,'offers_missed_total'::0,"
	           "'transferred_total'::0}");
	r3_send(&r, "QUEUE default");
	EXPECT_PREFIX(&r, "[['u2',:2,:");
	r3_send(&r, "SERVICERS");
	EXPECT_PREFIX(&r, "[['s1','ready',:1,:1,:");
	r3_send(&r, "QLEN default");
	EXPECT(&r, ":1");
	r3_send(&r, "RELEASE s1/0");
	EXPECT(&r, ":1");
	r3_send(&r, "ENQUEUE bad!id");
	EXPECT(&r, "-ERR invalid user id");
	r3_send(&r, "PING");
	EXPECT(&r, "+PONG");
	close(r.fd);
}

/*
 * Pub/sub: confirmations and messages are pushes, and a subscribed
 * connection runs any command; its own ENQUEUE's messages come before
 * the reply, as events come before replies everywhere.
 */
static void
pubsub_pushes(void **state)
{
	struct csqd_fx *fx = *state;
	struct r3 r;
	char got[R3_BUF];
	int i, matched = 0, down = 0;

	r3_open(&r, fx->d->port);
	r3_send(&r, "HELLO 3");
	EXPECT_PREFIX(&r, "{'server':'csq'");
	r3_send(&r, "SUBSCRIBE user:p1 queue:q");
	EXPECT(&r, ">['subscribe','user:p1',:1]");
	EXPECT(&r, ">['subscribe','queue:q',:2]");
	r3_send(&r, "PING");
	EXPECT(&r, "+PONG");
	r3_send(&r, "ENQUEUE p1 QUEUE q");
	EXPECT_PREFIX(&r, ">['message','user:p1','{\"event\":\"queued\","
	                  "\"id\":");
	EXPECT_PREFIX(&r, ">['message','queue:q','{\"event\":\"queued\","
	                  "\"id\":");
	EXPECT(&r,
	       "{'state':'waiting','queue':'q','position'::1,'eta_ms'::-1}");
	r3_send(&r, "PSUBSCRIBE servicer:*");
	EXPECT(&r, ">['psubscribe','servicer:*',:3]");

	/* Another connection's login matches p1; then it logs out. */
	freeReplyObject(CMD(fx->c, "HEARTBEAT s9 QUEUES q"));
	freeReplyObject(CMD(fx->c, "LEAVE p1"));
	freeReplyObject(CMD(fx->c, "LOGOUT s9"));
	for (i = 0; i < 20 && !(matched && down); i++) {
		got[0] = '\0';
		r3_frame(&r, got, sizeof(got));
		if (strncmp(got, ">['message','", 13) != 0 &&
		    strncmp(got, ">['pmessage','servicer:*','servicer:s9','",
		            41) != 0)
			fail_msg("not a message push: %s", got);
		if (strstr(got, "'user:p1','{\"event\":\"matched\"") != NULL)
			matched = 1;
		if (strstr(got, "{\"event\":\"servicer_down\"") != NULL)
			down = 1;
	}
	assert_true(matched);
	assert_true(down);
	r3_send(&r, "WHERE p1");
	/* Pushes still on their way first (the released of p1), then it. */
	for (i = 0; i < 10; i++) {
		got[0] = '\0';
		r3_frame(&r, got, sizeof(got));
		if (got[0] != '>')
			break;
	}
	assert_string_equal(got, "{'state':'none'}");

	r3_send(&r, "UNSUBSCRIBE");
	EXPECT(&r, ">['unsubscribe','user:p1',:2]");
	EXPECT(&r, ">['unsubscribe','queue:q',:1]");
	r3_send(&r, "PUNSUBSCRIBE");
	EXPECT(&r, ">['punsubscribe','servicer:*',:0]");
	r3_send(&r, "UNSUBSCRIBE");
	EXPECT(&r, ">['unsubscribe',_,:0]");
	close(r.fd);
}

/* HELLO in a pipeline of engine calls: each reply framed as the protocol
 * stood when its request came. */
static void
pipeline_switch(void **state)
{
	struct csqd_fx *fx = *state;
	struct r3 r;

	r3_open(&r, fx->d->port);
	raw_sends(r.fd,
	          "ENQUEUE a1\r\nENQUEUE a2\r\nHELLO 3\r\nENQUEUE a3\r\n"
	          "WHERE a1\r\nHELLO 2\r\nENQUEUE a4\r\nCLIENT GETNAME\r\n");
	EXPECT(
	    &r,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]");
	EXPECT(
	    &r,
	    "['state','waiting','queue','default','position',:2,'eta_ms',:-1]");
	EXPECT_PREFIX(&r, "{'server':'csq','version':'7.0.0','proto'::3,");
	EXPECT(
	    &r,
	    "{'state':'waiting','queue':'default','position'::3,'eta_ms'::-1}");
	EXPECT_PREFIX(&r,
	              "{'state':'waiting','queue':'default','position'::1,");
	EXPECT_PREFIX(&r, "['server','csq','version','7.0.0','proto',:2,");
	EXPECT(
	    &r,
	    "['state','waiting','queue','default','position',:4,'eta_ms',:-1]");
	EXPECT(&r, "nil");
	close(r.fd);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        hello_versions, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        replies_as_maps, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        pubsub_pushes, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        pipeline_switch, csqd_fx_setup_default, csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("resp3", tests, NULL, NULL);
}
