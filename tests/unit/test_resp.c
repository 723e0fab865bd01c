/*
 * The RESP codec: every request form, fed whole and a byte at a time,
 * pipelining, binary bulks, each protocol error and limit, inline quoting,
 * the exact bytes of every reply writer, and random garbage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "resp.h"
#include "scale.h"

#define DUMP_INITIAL     256
#define PIPELINE_N       1000
#define GARBAGE_RUNS     3000 /* scaled (scale.h), to no fewer than: */
#define GARBAGE_RUNS_MIN 300
#define GARBAGE_LEN_MAX  160
#define GARBAGE_SEED     20240601u

/* A growing text that records what a parse run produced. */
struct dump {
	char *s;
	size_t len;
	size_t size;
};

static void
dump_add(struct dump *d, const void *p, size_t len)
{
	if (d->len + len + 1 > d->size) {
		while (d->len + len + 1 > d->size)
			d->size = d->size ? d->size * 2 : DUMP_INITIAL;
		d->s = realloc(d->s, d->size);
		assert_non_null(d->s);
	}
	memcpy(d->s + d->len, p, len);
	d->len += len;
	d->s[d->len] = '\0';
}

static void
dump_printf(struct dump *d, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(buf));
	dump_add(d, buf, n);
}

/* Adds bytes readably: printable ASCII as is, the rest (and '\\') as \\xHH. */
static void
dump_escaped(struct dump *d, const char *p, size_t len)
{
	size_t i;
	unsigned char c;

	for (i = 0; i < len; i++) {
		c = (unsigned char)p[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			dump_add(d, &p[i], 1);
		else
			dump_printf(d, "\\x%02x", c);
	}
}

/* Records one request: "[argc|len:bytes|len:bytes]". */
static void
dump_request(struct dump *d, const struct resp_request *req)
{
	int i;

	assert_true(req->argc > 0);
	dump_printf(d, "[%d", req->argc);
	for (i = 0; i < req->argc; i++) {
		/* Every argument is NUL-terminated past its length. */
		assert_int_equal(req->argv[i][req->argvlen[i]], '\0');
		dump_printf(d, "|%zu:", req->argvlen[i]);
		dump_escaped(d, req->argv[i], req->argvlen[i]);
	}
	dump_add(d, "]", 1);
}

/* Parses until NEED or ERROR; returns the last status. */
static enum resp_parse
drain(struct resp_parser *p, struct evbuffer *in, struct resp_request *req,
      struct dump *d)
{
	enum resp_parse r;

	while ((r = resp_parse(p, in, req)) == RESP_PARSE_OK)
		dump_request(d, req);
	if (r == RESP_PARSE_ERROR) {
		dump_add(d, "ERROR:", 6);
		dump_escaped(d, resp_parser_error(p),
		             strlen(resp_parser_error(p)));
	} else
		dump_add(d, "NEED", 4);
	return r;
}

/*
 * Feeds buf in chunks of at most chunk bytes (0: whole), each added as a
 * separate evbuffer chain, and returns the record of what came out: every
 * request, then NEED or ERROR:text. The caller frees it.
 */
static char *
run_as(const char *buf, size_t len, size_t chunk, int authed)
{
	struct resp_parser *p = resp_parser_new();
	struct evbuffer *in = evbuffer_new();
	struct resp_request req = {0};
	struct dump d = {0};
	enum resp_parse r = RESP_PARSE_NEED;
	size_t off = 0, k;

	resp_parser_set_authed(p, authed);
	if (chunk == 0)
		chunk = len ? len : 1;
	while (off < len && r != RESP_PARSE_ERROR) {
		k = len - off < chunk ? len - off : chunk;
		evbuffer_add(in, buf + off, k);
		off += k;
		for (;;) {
			r = resp_parse(p, in, &req);
			if (r != RESP_PARSE_OK)
				break;
			dump_request(&d, &req);
		}
	}
	if (r == RESP_PARSE_ERROR) {
		dump_add(&d, "ERROR:", 6);
		dump_escaped(&d, resp_parser_error(p),
		             strlen(resp_parser_error(p)));
		/* The error is sticky. */
		assert_int_equal(resp_parse(p, in, &req), RESP_PARSE_ERROR);
	} else
		dump_add(&d, "NEED", 4);
	assert_int_equal(req.argc, 0);
	resp_request_clear(&req);
	evbuffer_free(in);
	resp_parser_free(p);
	if (d.s == NULL)
		dump_add(&d, "", 0);
	return d.s;
}

static char *
run(const char *buf, size_t len, size_t chunk)
{
	return run_as(buf, len, chunk, 1);
}

/* buf gives expect, fed whole, a byte at a time and in a few other sizes,
 * to a parser of an authenticated connection or not. */
static void
check_as(const char *buf, size_t len, const char *expect, int authed)
{
	static const size_t chunks[] = {0, 1, 2, 3, 7, 64};
	size_t i;
	char *got;

	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		got = run_as(buf, len, chunks[i], authed);
		if (strcmp(got, expect) != 0)
			fail_msg("chunk %zu: got \"%s\", expected \"%s\"",
			         chunks[i], got, expect);
		free(got);
	}
}

static void
check_n(const char *buf, size_t len, const char *expect)
{
	check_as(buf, len, expect, 1);
}

static void
check(const char *buf, const char *expect)
{
	check_n(buf, strlen(buf), expect);
}

/* A request of n bulks of len bytes each ('a's), into a new string. */
static char *
request_of(int n, size_t len)
{
	struct dump d = {0};
	char *fill = malloc(len + 1);
	int i;

	assert_non_null(fill);
	memset(fill, 'a', len);
	fill[len] = '\0';
	dump_printf(&d, "*%d\r\n", n);
	for (i = 0; i < n; i++) {
		dump_printf(&d, "$%zu\r\n", len);
		dump_add(&d, fill, len);
		dump_add(&d, "\r\n", 2);
	}
	free(fill);
	return d.s;
}

/*
 * Before AUTH, as Redis: at most 10 elements and bulks of 16 KiB, on the
 * fast path (a whole request in one piece) as in the scanner (pieces);
 * the same requests pass once the connection is authenticated.
 */
static void
test_unauth_limits(void **state)
{
	char *ten = request_of(RESP_UNAUTH_ARGS_MAX, 1);
	char *eleven = request_of(RESP_UNAUTH_ARGS_MAX + 1, 1);
	char *bulk = request_of(1, RESP_UNAUTH_BULK_MAX);
	char *over = request_of(1, RESP_UNAUTH_BULK_MAX + 1);
	char *got;

	(void)state;
	got = run_as(ten, strlen(ten), 0, 0);
	assert_int_equal(strncmp(got, "[10|1:a|", 8), 0);
	free(got);
	check_as(eleven, strlen(eleven),
	         "ERROR:unauthenticated multibulk length", 0);
	got = run_as(eleven, strlen(eleven), 0, 1);
	assert_int_equal(strncmp(got, "[11|1:a|", 8), 0);
	free(got);
	got = run_as(bulk, strlen(bulk), 7, 0);
	assert_int_equal(strncmp(got, "[1|16384:aaa", 12), 0);
	free(got);
	check_as(over, strlen(over), "ERROR:unauthenticated bulk length", 0);
	got = run_as(over, strlen(over), 0, 1);
	assert_int_equal(strncmp(got, "[1|16385:aaa", 12), 0);
	free(got);
	/* The header alone is refused: nothing of the payload is needed. */
	check_as("*2\r\n$4\r\nAUTH\r\n$536870912\r\n",
	         strlen("*2\r\n$4\r\nAUTH\r\n$536870912\r\n"),
	         "ERROR:unauthenticated bulk length", 0);
	/* Over both, the general limit is named first, as in Redis. */
	check_as("*1\r\n$536870913\r\n", strlen("*1\r\n$536870913\r\n"),
	         "ERROR:invalid bulk length", 0);
	free(ten);
	free(eleven);
	free(bulk);
	free(over);
}

/*
 * The limits follow the connection from one request to the next: the
 * parser never reads past the request it returns, so an AUTH followed
 * in the same packet by a large request is judged after the AUTH.
 */
static void
test_unauth_then_authed(void **state)
{
	struct resp_parser *p = resp_parser_new();
	struct evbuffer *in = evbuffer_new();
	struct resp_request req = {0};
	char *big = request_of(12, 20000);

	(void)state;
	resp_parser_set_authed(p, 0);
	evbuffer_add_printf(in, "*2\r\n$4\r\nAUTH\r\n$1\r\np\r\n");
	evbuffer_add(in, big, strlen(big));
	assert_int_equal(resp_parse(p, in, &req), RESP_PARSE_OK);
	assert_int_equal(req.argc, 2);
	resp_parser_set_authed(p, 1);
	assert_int_equal(resp_parse(p, in, &req), RESP_PARSE_OK);
	assert_int_equal(req.argc, 12);
	assert_int_equal(req.argvlen[11], 20000);
	assert_int_equal(resp_parse(p, in, &req), RESP_PARSE_NEED);
	resp_request_clear(&req);
	evbuffer_free(in);
	resp_parser_free(p);
	free(big);
}

/* What the parser holds: the request being read, and none of it once the
 * request is out (hiredis's buffer for a big one is given back). */
static void
test_held(void **state)
{
	struct resp_parser *p = resp_parser_new();
	struct evbuffer *in = evbuffer_new();
	struct resp_request req = {0};
	char *big = request_of(1, 3 * 1024 * 1024);
	size_t len = strlen(big), half = len / 2;

	(void)state;
	evbuffer_add(in, big, half);
	assert_int_equal(resp_parse(p, in, &req), RESP_PARSE_NEED);
	assert_int_equal(evbuffer_get_length(in), 0);
	assert_true(resp_parser_held(p) + 64 >= half);
	assert_true(resp_parser_held(p) <= half);
	evbuffer_add(in, big + half, len - half);
	assert_int_equal(resp_parse(p, in, &req), RESP_PARSE_OK);
	assert_int_equal(req.argvlen[0], 3 * 1024 * 1024);
	assert_int_equal(resp_parser_held(p), 0);
	/* An inline line being read is held too. */
	evbuffer_add_printf(in, "PING hello");
	assert_int_equal(resp_parse(p, in, &req), RESP_PARSE_NEED);
	assert_int_equal(resp_parser_held(p), 10);
	evbuffer_add_printf(in, "\r\n");
	assert_int_equal(resp_parse(p, in, &req), RESP_PARSE_OK);
	assert_int_equal(resp_parser_held(p), 0);
	resp_request_clear(&req);
	evbuffer_free(in);
	resp_parser_free(p);
	free(big);
}

static void
test_multibulk(void **state)
{
	(void)state;
	check("*1\r\n$4\r\nPING\r\n", "[1|4:PING]NEED");
	check("*3\r\n$7\r\nENQUEUE\r\n$2\r\nu1\r\n$0\r\n\r\n",
	      "[3|7:ENQUEUE|2:u1|0:]NEED");
	/* Incomplete: nothing comes out, however it is split. */
	check("*2\r\n$3\r\nfoo\r\n$3\r\nba", "NEED");
	check("*2\r\n$3\r\nfoo\r\n", "NEED");
	check("*2\r\n", "NEED");
	check("*", "NEED");
	/* Large counts and lengths inside the limits. */
	check("*12\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"
	      "$1\r\nf\r\n$1\r\ng\r\n$1\r\nh\r\n$1\r\ni\r\n$1\r\nj\r\n"
	      "$1\r\nk\r\n$10\r\n0123456789\r\n",
	      "[12|1:a|1:b|1:c|1:d|1:e|1:f|1:g|1:h|1:i|1:j|1:k|10:0123456789]"
	      "NEED");
}

static void
test_inline(void **state)
{
	(void)state;
	check("PING\r\n", "[1|4:PING]NEED");
	check("PING\n", "[1|4:PING]NEED");
	check("ENQUEUE u1 QUEUE q\r\n", "[4|7:ENQUEUE|2:u1|5:QUEUE|1:q]NEED");
	check("  \tHEARTBEAT\t s1   CAPACITY  3  \r\n",
	      "[4|9:HEARTBEAT|2:s1|8:CAPACITY|1:3]NEED");
	check("PING", "NEED");
	check("PING\r", "NEED");
	/* Only one trailing \r is stripped; an inner one separates. */
	check("a\rb\r\r\n", "[2|1:a|1:b]NEED");
	/* \v and \f skip between words but do not end one. */
	check("\va\fb\v \n", "[1|4:a\\x0cb\\x0b]NEED");
}

static void
test_skipped(void **state)
{
	(void)state;
	check("\r\n", "NEED");
	check("\n\n\r\n   \r\n\t\n", "NEED");
	check("*0\r\n", "NEED");
	check("*-1\r\n", "NEED");
	check("\r\n*0\r\n\n*-1\r\n*1\r\n$4\r\nPING\r\n\r\nQUIT\r\n",
	      "[1|4:PING][1|4:QUIT]NEED");
}

static void
test_binary_bulk(void **state)
{
	static const char req[] = "*2\r\n$3\r\nSET\r\n$8\r\na\0b\r\nc\r\n\r\n";
	static const char expect[] =
	    "[2|3:SET|8:a\\x00b\\x0d\\x0ac\\x0d\\x0a]NEED";
	struct resp_parser *p = resp_parser_new();
	struct evbuffer *in = evbuffer_new();
	struct resp_request r = {0};
	char *got;
	size_t chunk;

	(void)state;
	for (chunk = 0; chunk < 8; chunk++) {
		got = run(req, sizeof(req) - 1, chunk);
		assert_string_equal(got, expect);
		free(got);
	}

	evbuffer_add(in, req, sizeof(req) - 1);
	assert_int_equal(resp_parse(p, in, &r), RESP_PARSE_OK);
	assert_int_equal(r.argc, 2);
	assert_int_equal(r.argvlen[1], 8);
	assert_memory_equal(r.argv[1], "a\0b\r\nc\r\n", 9);
	assert_int_equal(evbuffer_get_length(in), 0);
	assert_int_equal(resp_parse(p, in, &r), RESP_PARSE_NEED);
	assert_int_equal(r.argc, 0);
	evbuffer_free(in);
	resp_parser_free(p);
}

static void
test_pipeline(void **state)
{
	struct resp_parser *p = resp_parser_new();
	struct evbuffer *in = evbuffer_new();
	struct resp_request r = {0};
	struct dump all = {0}, expect = {0};
	char *got;
	int i;

	(void)state;
	for (i = 0; i < PIPELINE_N; i++) {
		char id[32];
		int n = snprintf(id, sizeof(id), "u%d", i);

		if (i % 3 == 0) {
			dump_printf(&all, "ENQUEUE %s\r\n", id);
			dump_printf(&expect, "[2|7:ENQUEUE|%d:%s]", n, id);
		} else {
			dump_printf(&all, "*2\r\n$5\r\nWHERE\r\n$%d\r\n%s\r\n",
			            n, id);
			dump_printf(&expect, "[2|5:WHERE|%d:%s]", n, id);
		}
	}
	dump_add(&expect, "NEED", 4);
	check_n(all.s, all.len, expect.s);

	/* One request per call, in order, and what is left stays put. */
	evbuffer_add(in, all.s, all.len);
	for (i = 0; i < PIPELINE_N; i++) {
		assert_int_equal(resp_parse(p, in, &r), RESP_PARSE_OK);
		assert_int_equal(r.argc, 2);
		assert_int_equal(atoi(r.argv[1] + 1), i);
	}
	assert_int_equal(evbuffer_get_length(in), 0);
	assert_int_equal(resp_parse(p, in, &r), RESP_PARSE_NEED);
	got = run(all.s, all.len, 4096);
	assert_string_equal(got, expect.s);
	free(got);
	free(all.s);
	free(expect.s);
	evbuffer_free(in);
	resp_parser_free(p);
}

static void
test_protocol_errors(void **state)
{
	(void)state;
	check("*abc\r\n", "ERROR:invalid multibulk length");
	check("*\r\n", "ERROR:invalid multibulk length");
	check("*+1\r\n", "ERROR:invalid multibulk length");
	check("*01\r\n", "ERROR:invalid multibulk length");
	check("*-0\r\n", "ERROR:invalid multibulk length");
	check("*1 \r\n", "ERROR:invalid multibulk length");
	check("*1\rX", "ERROR:invalid multibulk length");
	check("*1\n$1\r\na\r\n", "ERROR:invalid multibulk length");
	check("*99999999999999999999999\r\n", "ERROR:invalid multibulk length");
	check("*1\r\n$-5\r\n", "ERROR:invalid bulk length");
	check("*1\r\n$-1\r\n", "ERROR:invalid bulk length");
	check("*1\r\n$12x\r\n", "ERROR:invalid bulk length");
	check("*1\r\n$\r\n", "ERROR:invalid bulk length");
	check("*1\r\n$01\r\na\r\n", "ERROR:invalid bulk length");
	check("*1\r\n$1\rX", "ERROR:invalid bulk length");
	check("*1\r\n$99999999999999999999\r\n", "ERROR:invalid bulk length");
	check("*1\r\n:5\r\n", "ERROR:expected '$', got ':'");
	check("*1\r\n+OK\r\n", "ERROR:expected '$', got '+'");
	check("*2\r\n$1\r\na\r\n*1\r\n", "ERROR:expected '$', got '*'");
	check("*1\r\nPING\r\n", "ERROR:expected '$', got 'P'");
	check("*1\r\n\r\n", "ERROR:expected '$', got '\\x0d'");
	check("*1\r\n$1\r\nab\r\n", "ERROR:bulk string not followed by CRLF");
	check("*1\r\n$1\r\na\rb", "ERROR:bulk string not followed by CRLF");
	check("\"abc\r\n", "ERROR:unbalanced quotes in request");
	/* Requests before the error come out first. */
	check("PING\r\n*1\r\n$x\r\n", "[1|4:PING]ERROR:invalid bulk length");
}

static void
test_limits_count(void **state)
{
	struct resp_parser *p = resp_parser_new();
	struct evbuffer *in = evbuffer_new();
	struct resp_request r = {0};

	(void)state;
	check("*1048576\r\n", "NEED");
	check("*1048577\r\n", "ERROR:invalid multibulk length");
	check("*2147483648\r\n", "ERROR:invalid multibulk length");

	/* The error comes with the header alone: nothing is waited for. */
	evbuffer_add(in, "*1048577\r\n", 10);
	assert_int_equal(resp_parse(p, in, &r), RESP_PARSE_ERROR);
	assert_string_equal(resp_parser_error(p), "invalid multibulk length");
	assert_int_equal(r.argc, 0);
	assert_null(r.argv);
	evbuffer_free(in);
	resp_parser_free(p);
}

static void
test_limits_bulk(void **state)
{
	struct resp_parser *p = resp_parser_new();
	struct evbuffer *in = evbuffer_new();
	struct resp_request r = {0};

	(void)state;
	/* 512 MiB exactly is accepted (only the header is fed), one more
	 * byte is not. */
	check("*1\r\n$536870912\r\n", "NEED");
	check("*1\r\n$536870912\r\nabc", "NEED");
	check("*1\r\n$536870913\r\n", "ERROR:invalid bulk length");

	evbuffer_add(in, "*1\r\n$536870913\r\n", 16);
	assert_int_equal(resp_parse(p, in, &r), RESP_PARSE_ERROR);
	assert_string_equal(resp_parser_error(p), "invalid bulk length");
	evbuffer_free(in);
	resp_parser_free(p);
}

static void
test_limits_inline(void **state)
{
	size_t max = RESP_INLINE_MAX;
	char *buf = malloc(max + 3);
	struct dump expect = {0};
	char *got;

	(void)state;
	assert_non_null(buf);
	memset(buf, 'a', max + 1);

	/* One byte over the limit without a newline. */
	got = run(buf, max + 1, 0);
	assert_string_equal(got, "ERROR:too big inline request");
	free(got);
	got = run(buf, max + 1, 4096);
	assert_string_equal(got, "ERROR:too big inline request");
	free(got);
	/* Over the limit even with the newline behind it. */
	buf[max + 1] = '\n';
	got = run(buf, max + 2, 0);
	assert_string_equal(got, "ERROR:too big inline request");
	free(got);

	/* Exactly at the limit: waits, then is one argument. */
	got = run(buf, max, 0);
	assert_string_equal(got, "NEED");
	free(got);
	dump_printf(&expect, "[1|%zu:", max);
	dump_add(&expect, buf, max);
	dump_add(&expect, "]NEED", 5);
	buf[max] = '\n';
	got = run(buf, max + 1, 0);
	assert_string_equal(got, expect.s);
	free(got);
	got = run(buf, max + 1, 1000);
	assert_string_equal(got, expect.s);
	free(got);
	/* At the limit with CRLF: the '\r' is not part of the line. */
	buf[max] = '\r';
	buf[max + 1] = '\n';
	got = run(buf, max + 1, 0);
	assert_string_equal(got, "NEED");
	free(got);
	got = run(buf, max + 2, 0);
	assert_string_equal(got, expect.s);
	free(got);
	got = run(buf, max + 2, 1);
	assert_string_equal(got, expect.s);
	free(got);
	/* ... but a '\r' that does not end the line counts. */
	buf[max + 1] = 'b';
	got = run(buf, max + 2, 0);
	assert_string_equal(got, "ERROR:too big inline request");
	free(got);
	free(expect.s);
	free(buf);
}

static void
test_limits_header(void **state)
{
	size_t max = RESP_INLINE_MAX;
	char *buf = malloc(max + 16);
	char *got;

	(void)state;
	assert_non_null(buf);

	/* A count line of max + 1 bytes without '\r'. */
	buf[0] = '*';
	memset(buf + 1, '1', max);
	got = run(buf, max + 1, 0);
	assert_string_equal(got, "ERROR:too big mbulk count string");
	free(got);
	got = run(buf, max + 1, 999);
	assert_string_equal(got, "ERROR:too big mbulk count string");
	free(got);
	/* max bytes is not too big, only not a number. */
	got = run(buf, max, 0);
	assert_string_equal(got, "NEED");
	free(got);
	memcpy(buf + max, "\r\n", 2);
	got = run(buf, max + 2, 0);
	assert_string_equal(got, "ERROR:invalid multibulk length");
	free(got);

	/* A bulk header line of max + 1 bytes without '\r'. */
	memcpy(buf, "*1\r\n$", 5);
	memset(buf + 5, '1', max);
	got = run(buf, 4 + max + 1, 0);
	assert_string_equal(got, "ERROR:too big bulk count string");
	free(got);
	got = run(buf, 4 + max, 0);
	assert_string_equal(got, "NEED");
	free(got);
	free(buf);
}

static void
test_inline_quoting(void **state)
{
	(void)state;
	check("SET \"a b\" 'c d'\r\n", "[3|3:SET|3:a b|3:c d]NEED");
	check("\"\\x41\\x4a\\x4A\\xff\"\n", "[1|4:AJJ\\xff]NEED");
	check("\"\\n\\r\\t\\b\\a\\\\\\\"\\q\"\n",
	      "[1|8:\\x0a\\x0d\\x09\\x08\\x07\\x5c\"q]NEED");
	/* \x without two hex digits is just an escaped 'x'. */
	check("\"\\x4\" \"\\xg1\"\n", "[2|2:x4|3:xg1]NEED");
	check("'it\\'s' 'a\\nb' 'x\"y'\n", "[3|4:it's|4:a\\x5cnb|3:x\"y]NEED");
	check("foo\"bar baz\" x\n", "[2|10:foobar baz|1:x]NEED");
	check("a'b c'\n", "[1|4:ab c]NEED");
	check("\"\" ''\n", "[2|0:|0:]NEED");
	check("\"a\"\t'b'\n", "[2|1:a|1:b]NEED");
	check("\"a\"\r\n", "[1|1:a]NEED");
	check("\"a \\\" b\"\n", "[1|5:a \" b]NEED");
	/* A NUL is an ordinary byte. */
	check_n("a\0b c\n", 6, "[2|3:a\\x00b|1:c]NEED");
	check("\"a\"b\n", "ERROR:unbalanced quotes in request");
	check("'a'b\n", "ERROR:unbalanced quotes in request");
	check("\"abc\n", "ERROR:unbalanced quotes in request");
	check("'abc\n", "ERROR:unbalanced quotes in request");
	check("\"abc\\\"\n", "ERROR:unbalanced quotes in request");
	check("'abc\\'\n", "ERROR:unbalanced quotes in request");
}

static char *
writer_bytes(struct evbuffer *out, size_t *len)
{
	char *s;

	*len = evbuffer_get_length(out);
	s = malloc(*len + 1);
	assert_non_null(s);
	evbuffer_remove(out, s, *len);
	s[*len] = '\0';
	return s;
}

static void
expect_bytes(struct evbuffer *out, const char *expect, size_t len)
{
	size_t got_len;
	char *got = writer_bytes(out, &got_len);

	assert_int_equal(got_len, len);
	assert_memory_equal(got, expect, len);
	free(got);
}

#define EXPECT(out, lit) expect_bytes(out, lit, sizeof(lit) - 1)

static void
test_writers(void **state)
{
	struct evbuffer *out = evbuffer_new();
	char *big, *got;
	size_t len, i;

	(void)state;
	resp_simple(out, "OK");
	EXPECT(out, "+OK\r\n");
	resp_simple(out, "PONG");
	EXPECT(out, "+PONG\r\n");

	resp_error(out, "NOTFOUND no such servicer or room");
	EXPECT(out, "-NOTFOUND no such servicer or room\r\n");
	resp_error(out, "ERR unknown command '%s'", "FOO");
	EXPECT(out, "-ERR unknown command 'FOO'\r\n");
	resp_error(out, "ERR %s", "a\r\nb\nc\rd");
	EXPECT(out, "-ERR a  b c d\r\n");
	resp_error(out, "%s", "");
	EXPECT(out, "-\r\n");

	resp_integer(out, 0);
	EXPECT(out, ":0\r\n");
	resp_integer(out, -5);
	EXPECT(out, ":-5\r\n");
	resp_integer(out, INT64_MAX);
	EXPECT(out, ":9223372036854775807\r\n");
	resp_integer(out, INT64_MIN);
	EXPECT(out, ":-9223372036854775808\r\n");

	resp_bulk(out, "a\0b", 3);
	EXPECT(out, "$3\r\na\0b\r\n");
	resp_bulk(out, "", 0);
	EXPECT(out, "$0\r\n\r\n");
	resp_bulk_str(out, "state");
	EXPECT(out, "$5\r\nstate\r\n");
	resp_bulk_str(out, "");
	EXPECT(out, "$0\r\n\r\n");
	resp_bulk_str(out, NULL);
	EXPECT(out, "$-1\r\n");
	resp_bulk_u64(out, 0);
	EXPECT(out, "$1\r\n0\r\n");
	resp_bulk_u64(out, 1234);
	EXPECT(out, "$4\r\n1234\r\n");
	resp_bulk_u64(out, UINT64_MAX);
	EXPECT(out, "$20\r\n18446744073709551615\r\n");
	resp_null(out);
	EXPECT(out, "$-1\r\n");
	resp_array(out, 0);
	EXPECT(out, "*0\r\n");
	resp_array(out, 10);
	EXPECT(out, "*10\r\n");
	resp_array(out, -1);
	EXPECT(out, "*-1\r\n");

	/* Writers append to what is there. */
	resp_array(out, 2);
	resp_bulk_str(out, "state");
	resp_bulk_str(out, "none");
	EXPECT(out, "*2\r\n$5\r\nstate\r\n$4\r\nnone\r\n");

	/* A long error text, behind other output, in one piece. */
	len = 100000;
	big = malloc(len + 1);
	assert_non_null(big);
	for (i = 0; i < len; i++)
		big[i] = i % 1000 == 999 ? '\n' : 'x';
	big[len] = '\0';
	resp_integer(out, 1);
	resp_error(out, "ERR %s", big);
	got = writer_bytes(out, &i);
	assert_int_equal(i, 4 + 1 + 4 + len + 2);
	assert_memory_equal(got, ":1\r\n-ERR ", 9);
	assert_null(memchr(got + 9, '\n', len));
	assert_null(memchr(got + 9, '\r', len));
	assert_memory_equal(got + 9 + len, "\r\n", 2);
	free(got);
	free(big);
	evbuffer_free(out);
}

/* The reply writers' output parses back as the same request. */
static void
test_roundtrip(void **state)
{
	struct evbuffer *buf = evbuffer_new();
	struct resp_parser *p = resp_parser_new();
	struct resp_request r = {0};

	(void)state;
	resp_array(buf, 3);
	resp_bulk_str(buf, "HEARTBEAT");
	resp_bulk(buf, "s\r\n1", 4);
	resp_bulk_u64(buf, 42);
	assert_int_equal(resp_parse(p, buf, &r), RESP_PARSE_OK);
	assert_int_equal(r.argc, 3);
	assert_string_equal(r.argv[0], "HEARTBEAT");
	assert_memory_equal(r.argv[1], "s\r\n1", 5);
	assert_string_equal(r.argv[2], "42");
	resp_request_clear(&r);
	assert_int_equal(r.argc, 0);
	assert_null(r.argv);
	evbuffer_free(buf);
	resp_parser_free(p);
}

/* A random byte, mostly ones that mean something to the parser. */
static char
garbage_byte(void)
{
	static const char alphabet[] = "*$\r\n\r\n0123456789-: \t\"'\\xaZ+";

	if (rand() % 8 == 0)
		return (char)(rand() % 256);
	return alphabet[rand() % (sizeof(alphabet) - 1)];
}

/*
 * Random input in random chunks never crashes, always ends in NEED or
 * ERROR, and gives exactly what the same input fed whole gives.
 */
static void
test_garbage(void **state)
{
	char buf[GARBAGE_LEN_MAX + 32];
	struct dump d;
	size_t len, off, k, i;
	char *whole;
	int run_i, kind,
	    runs = (int)scale_steps(GARBAGE_RUNS, GARBAGE_RUNS_MIN);

	(void)state;
	srand(GARBAGE_SEED);
	for (run_i = 0; run_i < runs; run_i++) {
		struct resp_parser *p = resp_parser_new();
		struct evbuffer *in = evbuffer_new();
		struct resp_request r = {0};
		enum resp_parse st = RESP_PARSE_NEED;

		len = 0;
		kind = rand() % 3;
		/* Start some with a plausible prefix to get deeper. */
		if (kind == 0) {
			memcpy(buf, "*2\r\n$", 5);
			len = 5;
		} else if (kind == 1) {
			memcpy(buf, "*1\r\n$3\r\n", 8);
			len = 8;
		}
		k = (size_t)rand() % GARBAGE_LEN_MAX;
		for (i = 0; i < k; i++)
			buf[len++] = garbage_byte();

		memset(&d, 0, sizeof(d));
		off = 0;
		while (off < len && st != RESP_PARSE_ERROR) {
			k = 1 + (size_t)rand() % 12;
			if (k > len - off)
				k = len - off;
			/* A chain per chunk, so peeks cross chains. */
			evbuffer_add_reference(in, buf + off, k, NULL, NULL);
			off += k;
			st = drain(p, in, &r, &d);
			if (st != RESP_PARSE_ERROR) {
				/* Only the final status is kept. */
				assert_true(d.len >= 4);
				d.len -= 4;
				d.s[d.len] = '\0';
			}
		}
		if (st != RESP_PARSE_ERROR)
			dump_add(&d, "NEED", 4);
		assert_true(st == RESP_PARSE_NEED || st == RESP_PARSE_ERROR);
		if (d.s == NULL)
			dump_add(&d, "", 0);

		whole = run(buf, len, 0);
		if (strcmp(d.s, whole) != 0)
			fail_msg("run %d differs: \"%s\" vs \"%s\"", run_i, d.s,
			         whole);
		free(whole);
		free(d.s);
		resp_request_clear(&r);
		evbuffer_free(in);
		resp_parser_free(p);
	}
}

/* Fed whole (a request in one chain takes resp_parse's fast path) and a
 * byte at a time (never the fast path), buf gives the same. */
static void
same_as_slow(const char *buf, size_t len)
{
	char *whole = run(buf, len, 0), *bytes = run(buf, len, 1);

	if (strcmp(whole, bytes) != 0)
		fail_msg("whole \"%s\", byte by byte \"%s\"", whole, bytes);
	free(whole);
	free(bytes);
}

static void
test_fast_path_edges(void **state)
{
	static const char *const cases[] = {
	    "*1\r\n$4\r\nPING\r\n",
	    "*2\r\n$4\r\nPING\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n",
	    "*01\r\n$4\r\nPING\r\n",
	    "*1\r\n$04\r\nPING\r\n",
	    "*1\r\n$+4\r\nPING\r\n",
	    "*+1\r\n$4\r\nPING\r\n",
	    "*-1\r\n*1\r\n$4\r\nPING\r\n",
	    "*0\r\n*1\r\n$4\r\nPING\r\n",
	    "*1\r\n$-1\r\n",
	    "*1 \r\n$4\r\nPING\r\n",
	    "*1\r\n$4 \r\nPING\r\n",
	    "*1\r\n$4\r\nPINGx\r\n",
	    "*1\r\n$4\r\nPIN\r\n\r\n",
	    "*1\r\n$4\r\nPING\n\r",
	    "*1\r\n$4\r\nPING\r\r",
	    "*1\n$4\r\nPING\r\n",
	    "*1\r\r$4\r\nPING\r\n",
	    "*1\r\n$4\n\nPING\r\n",
	    "*1\r\n:4\r\nPING\r\n",
	    "*2\r\n$4\r\nPING\r\n",
	    "*1\r\n$4\r\nPI",
	    "*1\r\n$",
	    "*",
	    "*1\r\n$99999999999999999999\r\n",
	    "*99999999999999999999\r\n",
	    "*1\r\n$65537\r\n",
	    "PING\r\n*1\r\n$4\r\nPING\r\n",
	};
	char buf[4096];
	size_t i, len;
	int n;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		same_as_slow(cases[i], strlen(cases[i]));
	/* Around the fast path's limits on arguments: 64 and 65. */
	for (n = 63; n <= 65; n++) {
		len = (size_t)snprintf(buf, sizeof(buf), "*%d\r\n", n);
		for (i = 0; i < (size_t)n; i++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
			                        "$1\r\n%c\r\n",
			                        (char)('a' + i % 26));
		same_as_slow(buf, len);
	}
	/* A bulk with NULs and CRLFs inside. */
	same_as_slow("*2\r\n$3\r\na\0b\r\n$2\r\n\r\n\r\n", 22);
}

/* Valid requests with a byte changed, dropped or doubled: the fast path's
 * verdicts are the slow path's. */
static void
test_fast_path_mutants(void **state)
{
	static const char base[] = "*3\r\n$7\r\nENQUEUE\r\n$2\r\nu1\r\n"
	                           "$0\r\n\r\n*1\r\n$4\r\nPING\r\n";
	static const char alphabet[] = "*$\r\n0123456789-+ x";
	char buf[sizeof(base) + 1];
	size_t len = sizeof(base) - 1, i, k;
	int op;

	(void)state;
	for (i = 0; i < len; i++)
		for (op = 0; op < 3; op++)
			for (k = 0; k < (op == 0 ? sizeof(alphabet) - 1 : 1);
			     k++) {
				memcpy(buf, base, i);
				if (op == 0) { /* changed */
					buf[i] = alphabet[k];
					memcpy(buf + i + 1, base + i + 1,
					       len - i - 1);
					same_as_slow(buf, len);
				} else if (op == 1) { /* dropped */
					memcpy(buf + i, base + i + 1,
					       len - i - 1);
					same_as_slow(buf, len - 1);
				} else { /* doubled */
					memcpy(buf + i, base + i, len - i);
					buf[len] = base[i];
					memcpy(buf + i + 1, base + i, len - i);
					same_as_slow(buf, len + 1);
				}
			}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_multibulk),
	    cmocka_unit_test(test_unauth_limits),
	    cmocka_unit_test(test_unauth_then_authed),
	    cmocka_unit_test(test_held),
	    cmocka_unit_test(test_fast_path_edges),
	    cmocka_unit_test(test_fast_path_mutants),
	    cmocka_unit_test(test_inline),
	    cmocka_unit_test(test_skipped),
	    cmocka_unit_test(test_binary_bulk),
	    cmocka_unit_test(test_pipeline),
	    cmocka_unit_test(test_protocol_errors),
	    cmocka_unit_test(test_limits_count),
	    cmocka_unit_test(test_limits_bulk),
	    cmocka_unit_test(test_limits_inline),
	    cmocka_unit_test(test_limits_header),
	    cmocka_unit_test(test_inline_quoting),
	    cmocka_unit_test(test_writers),
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
