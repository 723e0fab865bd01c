/*
 * csq-bench's reading and writing of what crosses its connections
 * (bench/json.c, bench/resp.c): the keys of csqd's events found in one
 * pass, and commands written as RESP by hand, byte for byte what hiredis
 * writes of them. How it was tried to break: a key missing, at the end,
 * written twice, a key's text inside another value (escaped quotes), an
 * escaped backslash before a closing quote, nested objects and arrays
 * holding the key, a value that is not a string, objects cut short at
 * every byte, and commands at every size around a length's digits and a
 * buffer's end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench.h"

#define MATCHED                                                                \
	"{\"event\":\"matched\",\"id\":130,\"ts\":1796012741099,\"user\":"     \
	"\"m1.2.u0\",\"queue\":\"default\",\"tier\":0,\"servicer\":"           \
	"\"m1.3.s0\",\"room\":\"m1.3.s0/0\",\"waited_ms\":8}"

static const char *const ids[] = {"event", "room", "user"};

/* Finds ids in json; returns how many. */
static int
read_ids(const char *json, struct bench_span f[3])
{
	return bench_json_strings(json, strlen(json), ids, 3, f);
}

static void
assert_span(struct bench_span s, const char *want)
{
	assert_non_null(s.p);
	assert_int_equal(s.len, strlen(want));
	assert_memory_equal(s.p, want, s.len);
	assert_true(bench_span_is(s, want));
}

static void
test_event(void **state)
{
	struct bench_span f[3];

	(void)state;
	assert_int_equal(read_ids(MATCHED, f), 3);
	assert_span(f[0], "matched");
	assert_span(f[1], "m1.3.s0/0");
	assert_span(f[2], "m1.2.u0");
	assert_false(bench_span_is(f[0], "matche"));
	assert_false(bench_span_is(f[0], "matchedx"));
	/* Spaces where JSON allows them. */
	assert_int_equal(read_ids(" { \"user\" : \"u\" ,\n\"room\":\"r\" "
	                          ", \"event\"\t:\"e\" } ",
	                          f),
	                 3);
	assert_span(f[0], "e");
	assert_span(f[1], "r");
	assert_span(f[2], "u");
}

static void
test_missing_and_last(void **state)
{
	struct bench_span f[3];

	(void)state;
	/* csqd's queued: no room. */
	assert_int_equal(read_ids("{\"event\":\"queued\",\"id\":1,\"user\":"
	                          "\"u0\",\"position\":1,\"eta_ms\":-1}",
	                          f),
	                 2);
	assert_span(f[0], "queued");
	assert_null(f[1].p);
	assert_int_equal(f[1].len, 0);
	assert_span(f[2], "u0");
	assert_false(bench_span_is(f[1], ""));
	/* The key last, right before the brace; and an empty string. */
	assert_int_equal(read_ids("{\"id\":1,\"room\":\"\"}", f), 1);
	assert_null(f[0].p);
	assert_span(f[1], "");
	assert_null(f[2].p);
	assert_int_equal(read_ids("{}", f), 0);
	assert_int_equal(read_ids(" {  } ", f), 0);
	/* A value not a string is not the key's. */
	assert_int_equal(read_ids("{\"room\":5,\"user\":null,\"event\":"
	                          "true,\"x\":\"room\"}",
	                          f),
	                 0);
	/* The first of a key written twice. */
	assert_int_equal(read_ids("{\"room\":\"a\",\"room\":\"b\"}", f), 1);
	assert_span(f[1], "a");
	/* A key that begins or ends another. */
	assert_int_equal(
	    read_ids("{\"rooms\":\"a\",\"roo\":\"b\",\"xroom\":\"c\"}", f), 0);
}

static void
test_escaped(void **state)
{
	struct bench_span f[3];

	(void)state;
	/* A key's text inside another value is no key. */
	assert_int_equal(
	    read_ids("{\"note\":\"a \\\",\\\"room\\\":\\\"fake\",\"room\":"
	             "\"s1/0\"}",
	             f),
	    1);
	assert_span(f[1], "s1/0");
	assert_int_equal(read_ids("{\"note\":\"\\\",\\\"room\\\":\\\"x\"}", f),
	                 0);
	/* Escapes are kept as sent; an escaped backslash ends before the
	 * quote that closes. */
	assert_int_equal(read_ids("{\"user\":\"a\\\"b\",\"room\":\"c\\\\\","
	                          "\"event\":\"\\\\\\\\\"}",
	                          f),
	                 3);
	assert_span(f[2], "a\\\"b");
	assert_span(f[1], "c\\\\");
	assert_span(f[0], "\\\\\\\\");
	/* An escaped key is another key. */
	assert_int_equal(read_ids("{\"r\\u006fom\":\"a\"}", f), 0);
	/* An escaped quote at the end: the string does not end. */
	assert_int_equal(read_ids("{\"user\":\"a\\\"}", f), -1);
}

static void
test_nested(void **state)
{
	struct bench_span f[3];

	(void)state;
	assert_int_equal(
	    read_ids("{\"event\":\"matched\",\"needs\":{\"room\":\"no\",\"a\":"
	             "[1,{\"user\":\"no\"},\"]}\"]},\"list\":[[\"room\"],{}],"
	             "\"room\":\"yes\",\"user\":\"u\"}",
	             f),
	    3);
	assert_span(f[1], "yes");
	assert_span(f[2], "u");
	assert_int_equal(read_ids("{\"room\":{\"room\":\"x\"}}", f), 0);
}

static void
test_not_objects(void **state)
{
	static const char *const bad[] = {
	    "",
	    "[\"room\",\"x\"]",
	    "\"room\"",
	    "{\"room\" \"x\"}",
	    "{\"room\":\"x\" \"user\":\"y\"}",
	    "{room:\"x\"}",
	    "{\"room\":}",
	    "{\"a\":{\"b\":1}",
	    "{\"a\":1,}",
	};
	struct bench_span f[3];
	const char *full = MATCHED;
	size_t i, n = strlen(full);

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(read_ids(bad[i], f), -1);
	/*
	 * Cut short at every byte: nothing read past the cut (ASan sees a
	 * copy of exactly that length), and what ends before "room" and
	 * "user" are read is not an object.
	 */
	for (i = 0; i < n; i++) {
		char *cut = malloc(i > 0 ? i : 1);
		int got;

		assert_non_null(cut);
		memcpy(cut, full, i);
		got = bench_json_strings(cut, i, ids, 3, f);
		assert_true(got == -1 || got == 3);
		if (got == 3) {
			assert_span(f[1], "m1.3.s0/0");
			assert_span(f[2], "m1.2.u0");
		}
		free(cut);
	}
	/* More keys than one call takes. */
	assert_int_equal(bench_json_strings(full, n, ids, -1, f), -1);
	assert_int_equal(bench_json_strings(full, n, ids, 0, f), 0);
}

/* What hiredis writes of argv, and what bench_resp_cmd does, the same. */
static void
same_as_hiredis(int argc, const char **argv, const size_t *argvlen)
{
	char buf[4096];
	char *want;
	int wlen;
	size_t len;

	wlen = redisFormatCommandArgv(&want, argc, argv, argvlen);
	assert_true(wlen > 0);
	len = bench_resp_cmd(buf, sizeof(buf), argc, argv, argvlen);
	assert_int_equal(len, (size_t)wlen);
	assert_memory_equal(buf, want, len);
	/* Exactly what it needs is enough; a byte less is not. */
	assert_int_equal(bench_resp_cmd(buf, len, argc, argv, argvlen), len);
	assert_memory_equal(buf, want, len);
	assert_int_equal(bench_resp_cmd(buf, len - 1, argc, argv, argvlen), 0);
	free(want);
}

static void
test_resp_cmd(void **state)
{
	static char word[1200];
	const char *argv[12];
	size_t argvlen[12], n;
	int argc;

	(void)state;
	memset(word, 'x', sizeof(word));
	word[3] = '\0';
	word[7] = '\r';
	word[8] = '\n';
	/* Words of every length around one, two, three and four digits. */
	for (n = 0; n <= sizeof(word); n++) {
		if (n > 12 && n != 99 && n != 100 && n != 101 && n != 999 &&
		    n != 1000 && n < sizeof(word))
			continue;
		argv[0] = "RELEASE";
		argvlen[0] = 7;
		argv[1] = word;
		argvlen[1] = n;
		same_as_hiredis(2, argv, argvlen);
	}
	/* One word, and from 1 to 12 words (two digits of a count). */
	for (argc = 1; argc <= 12; argc++) {
		int i;

		for (i = 0; i < argc; i++) {
			argv[i] = i % 2 ? "ENQUEUE" : "";
			argvlen[i] = strlen(argv[i]);
		}
		same_as_hiredis(argc, argv, argvlen);
	}
	argv[0] = "PING";
	argvlen[0] = 4;
	assert_int_equal(bench_resp_cmd(word, 0, 1, argv, argvlen), 0);
	assert_int_equal(bench_resp_cmd(word, sizeof(word), 0, argv, argvlen),
	                 0);
}

static void
test_resp_ulong(void **state)
{
	static const struct {
		unsigned long long v;
		const char *text;
	} cases[] = {
	    {0, "0"},
	    {7, "7"},
	    {9, "9"},
	    {10, "10"},
	    {99, "99"},
	    {100, "100"},
	    {1796012741099ULL, "1796012741099"},
	    {18446744073709551615ULL, "18446744073709551615"},
	};
	char buf[32];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(buf, '#', sizeof(buf));
		n = bench_resp_ulong(buf, cases[i].v);
		assert_int_equal(n, strlen(cases[i].text));
		assert_memory_equal(buf, cases[i].text, n);
		assert_int_equal(buf[n], '#');
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_event),
	    cmocka_unit_test(test_missing_and_last),
	    cmocka_unit_test(test_escaped),
	    cmocka_unit_test(test_nested),
	    cmocka_unit_test(test_not_objects),
	    cmocka_unit_test(test_resp_cmd),
	    cmocka_unit_test(test_resp_ulong),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
