/*
 * The MessagePack reader (daemon/msgpack.c) on the bytes cmsgpack writes
 * for csq's values, at every width; and on messages cut short or lying
 * about their sizes, which it refuses without reading past them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "msgpack.h"

#define IN(in, ...)                                                            \
	static const unsigned char bytes_[] = {__VA_ARGS__};                   \
	msgpack_init(in, bytes_, sizeof(bytes_))

static void
assert_int_of(const unsigned char *b, size_t len, int64_t want)
{
	struct msgpack_in in;
	int64_t v;

	msgpack_init(&in, b, len);
	assert_int_equal(msgpack_int(&in, &v), 0);
	assert_true(v == want);
	assert_ptr_equal(in.p, b + len);
}

static void
test_ints(void **state)
{
	static const struct {
		unsigned char b[9];
		size_t len;
		int64_t v;
	} cases[] = {
	    {{0x00}, 1, 0},
	    {{0x7f}, 1, 127},
	    {{0xff}, 1, -1},
	    {{0xe0}, 1, -32},
	    {{0xcc, 0xff}, 2, 255},
	    {{0xcd, 0x01, 0x00}, 3, 256},
	    {{0xce, 0xff, 0xff, 0xff, 0xff}, 5, 4294967295LL},
	    {{0xcf, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b},
	     9,
	     1700000000123LL},
	    {{0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	     9,
	     INT64_MAX},
	    {{0xd0, 0x80}, 2, -128},
	    {{0xd1, 0xff, 0x7f}, 3, -129},
	    {{0xd2, 0x80, 0x00, 0x00, 0x00}, 5, INT32_MIN},
	    {{0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, 9, INT64_MIN},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_of(cases[i].b, cases[i].len, cases[i].v);
}

static void
test_strings_and_arrays(void **state)
{
	struct msgpack_in in;
	const char *s;
	size_t len;
	uint32_t n;
	unsigned char big[3 + 300];

	(void)state;
	{
		IN(&in, 0x92, 0xa2, 'a', 'b', 0xa0);
		assert_int_equal(msgpack_array(&in, &n), 0);
		assert_int_equal(n, 2);
		assert_int_equal(msgpack_str(&in, &s, &len), 0);
		assert_int_equal(len, 2);
		assert_memory_equal(s, "ab", 2);
		assert_int_equal(msgpack_str(&in, &s, &len), 0);
		assert_int_equal(len, 0);
		assert_ptr_equal(in.p, in.end);
	}
	{
		IN(&in, 0xd9, 3, 'x', 'y', 'z');
		assert_int_equal(msgpack_str(&in, &s, &len), 0);
		assert_int_equal(len, 3);
	}
	big[0] = 0xda;
	big[1] = 300 >> 8;
	big[2] = 300 & 0xff;
	memset(big + 3, 'q', 300);
	msgpack_init(&in, big, sizeof(big));
	assert_int_equal(msgpack_str(&in, &s, &len), 0);
	assert_int_equal(len, 300);
	assert_ptr_equal(in.p, in.end);
	{
		IN(&in, 0xdc, 0x00, 0x02, 0x01, 0x02);
		assert_int_equal(msgpack_array(&in, &n), 0);
		assert_int_equal(n, 2);
	}
	{
		IN(&in, 0xdd, 0x00, 0x00, 0x00, 0x01, 0xc0);
		assert_int_equal(msgpack_array(&in, &n), 0);
		assert_int_equal(n, 1);
	}
}

static void
test_fact_values(void **state)
{
	struct msgpack_in in;
	struct csq_fact_value v;

	(void)state;
	IN(&in, 0xc0, 0xc2, 0x05, 0xa1, 'u', 0xc3, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0,
	   0x90);
	assert_int_equal(msgpack_fact_value(&in, &v), 0);
	assert_int_equal(v.type, CSQ_FACT_ABSENT); /* nil */
	assert_int_equal(msgpack_fact_value(&in, &v), 0);
	assert_int_equal(v.type, CSQ_FACT_ABSENT); /* false */
	assert_int_equal(msgpack_fact_value(&in, &v), 0);
	assert_int_equal(v.type, CSQ_FACT_INT);
	assert_int_equal(v.n, 5);
	assert_int_equal(msgpack_fact_value(&in, &v), 0);
	assert_int_equal(v.type, CSQ_FACT_STR);
	assert_int_equal(v.len, 1);
	/* true, a float, an array: no field of a fact is one. */
	assert_int_equal(msgpack_fact_value(&in, &v), -1);
	in.p++;
	assert_int_equal(msgpack_fact_value(&in, &v), -1);
	in.p += 9;
	assert_int_equal(msgpack_fact_value(&in, &v), -1);
}

/* How I tried to break it: each read refuses and leaves p where it was. */
static void
test_refused(void **state)
{
	static const struct {
		unsigned char b[8];
		size_t len;
	} bad[] = {
	    {{0}, 0},                                  /* nothing */
	    {{0xcd, 0x01}, 2},                         /* uint16 cut */
	    {{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff}, 6}, /* uint64 cut */
	    {{0xa3, 'a', 'b'}, 3},                     /* fixstr cut */
	    {{0xd9}, 1},                               /* str8, no length */
	    {{0xd9, 0x05, 'a'}, 3},                    /* str8 cut */
	    {{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}, 6},  /* str32 lie */
	    {{0xdc, 0xff, 0xff, 0x01}, 4},             /* array16 lie */
	    {{0xdd, 0x7f, 0xff, 0xff, 0xff, 0x01, 0x02}, 7}, /* array32 lie */
	    {{0xdc, 0x00}, 2},                               /* array16 cut */
	    {{0xc1}, 1},                                     /* never used */
	};
	struct msgpack_in in;
	struct csq_fact_value v;
	const char *s;
	size_t len, i;
	uint32_t n;
	int64_t x;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msgpack_init(&in, bad[i].b, bad[i].len);
		assert_int_equal(msgpack_int(&in, &x), -1);
		assert_int_equal(msgpack_str(&in, &s, &len), -1);
		assert_int_equal(msgpack_array(&in, &n), -1);
		assert_int_equal(msgpack_fact_value(&in, &v), -1);
		assert_ptr_equal(in.p, bad[i].b);
	}
	/* A uint64 beyond int64: no id or time of csq's is one. */
	{
		IN(&in, 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0);
		assert_int_equal(msgpack_int(&in, &x), -1);
	}
	/* Types asked of the wrong reader. */
	{
		IN(&in, 0xa1, 'x');
		assert_int_equal(msgpack_int(&in, &x), -1);
		assert_int_equal(msgpack_array(&in, &n), -1);
	}
	{
		IN(&in, 0x01);
		assert_int_equal(msgpack_str(&in, &s, &len), -1);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ints),
	    cmocka_unit_test(test_strings_and_arrays),
	    cmocka_unit_test(test_fact_values),
	    cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
