/*
 * The MessagePack reader (daemon/msgpack.c) on the bytes cmsgpack writes
 * for csq's values, at every width; and on messages cut short or lying
 * about their sizes, which it refuses without reading past them. The
 * writer against a reference.
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

/* The writer's bytes, from a reference written here byte by byte as the
 * format says (the smallest form; a negative below -32 as an int64, as
 * cmsgpack writes it). */
static size_t
ref_head(unsigned char *o, unsigned char t, uint64_t v, int n)
{
	int i;

	o[0] = t;
	for (i = 0; i < n; i++)
		o[1 + i] = (unsigned char)(v >> (8 * (n - 1 - i)));
	return 1 + (size_t)n;
}

static size_t
ref_int(unsigned char *o, int64_t v)
{
	uint64_t u = (uint64_t)v;

	if (v < 0)
		return v >= -32 ? (o[0] = (unsigned char)v, 1)
		                : ref_head(o, 0xd3, u, 8);
	if (u <= 0x7f)
		return o[0] = (unsigned char)u, 1;
	if (u <= 0xff)
		return ref_head(o, 0xcc, u, 1);
	if (u <= 0xffff)
		return ref_head(o, 0xcd, u, 2);
	return u <= 0xffffffff ? ref_head(o, 0xce, u, 4)
	                       : ref_head(o, 0xcf, u, 8);
}

static size_t
ref_str(unsigned char *o, const char *s, size_t len)
{
	size_t h;

	if (len <= 31)
		o[0] = (unsigned char)(0xa0 | len), h = 1;
	else if (len <= 0xff)
		h = ref_head(o, 0xd9, len, 1);
	else
		h = ref_head(o, 0xda, len, 2);
	memcpy(o + h, s, len);
	return h + len;
}

/*
 * msgpack_put_fact (one reserve, then plain stores, strings copied by
 * overlapping loads) against the reference: facts of strings of every
 * length 0 to 300, each in a heap block of exactly its length (under ASan
 * a copy that reads a byte past it fails: tried, with 8-byte loads for
 * strings of 5), integers at every width, absent fields, into a buffer
 * already holding 0 to 7 bytes and grown from empty. The one-value
 * writers give the same bytes one after the other.
 */
static void
test_writer(void **state)
{
	static const int64_t ints[] = {
	    0,   1,     31,    127,          128,          255,
	    256, 65535, 65536, 4294967295LL, 4294967296LL, INT64_MAX,
	    -1,  -32,   -33,   INT64_MIN};
	struct csq_fact_value v[CSQ_FACT_FIELDS_MAX];
	struct csq_wbuf w = {0}, one = {0};
	unsigned char want[8 + 16 * 310 + 64];
	char *strs[CSQ_FACT_FIELDS_MAX];
	size_t round, n, i, len, pre, at;
	unsigned seed = 1;

	(void)state;
	for (round = 0; round < 2000; round++) {
		n = round % (CSQ_FACT_FIELDS_MAX + 1);
		pre = round % 8;
		for (i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			strs[i] = NULL;
			switch ((seed >> 16) % 3) {
			case 0:
				v[i].type = CSQ_FACT_ABSENT;
				break;
			case 1:
				v[i].type = CSQ_FACT_INT;
				v[i].n = ints[(seed >> 8) %
				              (sizeof(ints) / sizeof(ints[0]))];
				break;
			default:
				len = round < 301 ? round : (seed >> 4) % 301;
				strs[i] = malloc(len > 0 ? len : 1);
				assert_non_null(strs[i]);
				memset(strs[i], 'a' + (int)(i % 26), len);
				if (len > 0)
					strs[i][len - 1] = 'z';
				v[i].type = CSQ_FACT_STR;
				v[i].s = strs[i];
				v[i].len = len;
				break;
			}
		}
		at = 0;
		memset(want, 'p', pre);
		at = pre;
		if (n + 1 <= 15)
			want[at++] = (unsigned char)(0x90 | (n + 1));
		else
			at += ref_head(want + at, 0xdc, n + 1, 2);
		at += ref_str(want + at, "matched", 7);
		for (i = 0; i < n; i++)
			at += v[i].type == CSQ_FACT_INT
			          ? ref_int(want + at, v[i].n)
			      : v[i].type == CSQ_FACT_STR
			          ? ref_str(want + at, v[i].s, v[i].len)
			          : (want[at] = 0xc0, 1);
		if (round % 3 == 0)
			csq_wbuf_free(&w), w = (struct csq_wbuf){0};
		w.len = 0;
		csq_put_bytes(&w, want, pre);
		msgpack_put_fact(&w, "matched", 7, v, n);
		assert_int_equal(w.len, at);
		assert_memory_equal(w.p, want, at);
		one.len = 0;
		csq_put_bytes(&one, want, pre);
		msgpack_put_array(&one, (uint32_t)(n + 1));
		msgpack_put_str(&one, "matched", 7);
		for (i = 0; i < n; i++)
			msgpack_put_fact_value(&one, &v[i]);
		assert_int_equal(one.len, at);
		assert_memory_equal(one.p, want, at);
		for (i = 0; i < n; i++)
			free(strs[i]);
	}
	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		one.len = 0;
		msgpack_put_int(&one, ints[i]);
		assert_int_equal(one.len, ref_int(want, ints[i]));
		assert_memory_equal(one.p, want, one.len);
	}
	csq_wbuf_free(&w);
	csq_wbuf_free(&one);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ints),
	    cmocka_unit_test(test_strings_and_arrays),
	    cmocka_unit_test(test_fact_values),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_writer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
