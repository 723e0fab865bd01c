/*
 * The objects csqd builds of Redis's replies (daemon/redis_reply.c): the
 * same trees as hiredis's own functions build, for every type, at the
 * sizes around the kept blocks' (REPLY_SPARE_SIZE: a string or an array
 * one byte under, at and over it), with hundreds of replies alive at once
 * (more than the spares kept, so that blocks go both back to the spares
 * and to free) and freed in another order than made. How it was tried to
 * break: a reply cut short at every byte and the reader freed with it, a
 * reply that is not RESP, arrays of no element and of nil. Under ASan a
 * block reused for a larger object, or freed to the wrong place, fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "redis_engine.h"

/* a and b the same tree. */
static void
same_reply(const redisReply *a, const redisReply *b)
{
	size_t i;

	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->type, b->type);
	switch (a->type) {
	case REDIS_REPLY_INTEGER:
		assert_int_equal(a->integer, b->integer);
		break;
	case REDIS_REPLY_STRING:
	case REDIS_REPLY_STATUS:
	case REDIS_REPLY_ERROR:
		assert_int_equal(a->len, b->len);
		assert_memory_equal(a->str, b->str, a->len);
		assert_int_equal(b->str[b->len], '\0');
		break;
	case REDIS_REPLY_ARRAY:
		assert_int_equal(a->elements, b->elements);
		for (i = 0; i < a->elements; i++)
			same_reply(a->element[i], b->element[i]);
		break;
	default:
		break;
	}
}

/* RESP of a bulk string of n bytes (of c), into out (malloc'd). */
static char *
bulk(size_t n, char c)
{
	char *out = malloc(n + 32);
	int h;

	assert_non_null(out);
	h = snprintf(out, 32, "$%zu\r\n", n);
	memset(out + h, c, n);
	memcpy(out + h + n, "\r\n", 3);
	return out;
}

/* RESP of an array of n integers. */
static char *
int_array(size_t n)
{
	char *out = malloc(32 + n * 24);
	size_t len, i;

	assert_non_null(out);
	len = (size_t)sprintf(out, "*%zu\r\n", n);
	for (i = 0; i < n; i++)
		len += (size_t)sprintf(out + len, ":%zu\r\n", i * 1000003);
	return out;
}

#define NINPUTS 24

/* The replies tried, each one whole reply. */
static void
inputs(char *in[NINPUTS])
{
	/* sizeof(redisReply) 48: a string of 206 or 207 bytes and an array
	 * of 26 elements fit a block of 256 bytes, 208 bytes and 27 do not. */
	static const size_t lens[] = {0, 1, 100, 205, 206, 207, 208, 209, 4000};
	static const size_t elems[] = {0, 1, 25, 26, 27, 200};
	size_t i, k = 0;
	char *big;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		in[k++] = bulk(lens[i], (char)('a' + i));
	for (i = 0; i < sizeof(elems) / sizeof(elems[0]); i++)
		in[k++] = int_array(elems[i]);
	in[k++] = strdup(":-9223372036854775808\r\n");
	in[k++] = strdup("$-1\r\n");
	in[k++] = strdup("*-1\r\n");
	in[k++] = strdup("+OK\r\n");
	in[k++] = strdup("-ERR unknown command\r\n");
	/* A CSQ.CALL's reply's shape: a header and answers, nested. */
	in[k++] =
	    strdup("*5\r\n:-1\r\n:1764464000000\r\n:42\r\n:0\r\n$0\r\n\r\n");
	in[k++] =
	    strdup("*3\r\n*2\r\n$3\r\nabc\r\n*0\r\n$-1\r\n*1\r\n*1\r\n:7\r\n");
	in[k++] = strdup("*2\r\n+QUEUED\r\n-EXECABORT no\r\n");
	/* An answer and a message larger than a block, in one array. */
	big = bulk(300, 'x');
	in[k] = malloc(strlen(big) + 16);
	assert_non_null(in[k]);
	sprintf(in[k++], "*2\r\n:1\r\n%s", big);
	free(big);
	assert_int_equal(k, NINPUTS);
}

static redisReply *
parse(redisReader *rd, const char *s)
{
	void *reply = NULL;

	assert_int_equal(redisReaderFeed(rd, s, strlen(s)), REDIS_OK);
	assert_int_equal(redisReaderGetReply(rd, &reply), REDIS_OK);
	assert_non_null(reply);
	return reply;
}

static void
test_same_as_hiredis(void **state)
{
	char *in[NINPUTS];
	/* 40 rounds of every input alive at once: 960 replies, more than
	 * the 256 spares, freed every other round in reverse. */
	enum { ROUNDS = 40 };
	redisReply *mine[ROUNDS * NINPUTS];
	redisReader *ours = redisReaderCreate(), *theirs = redisReaderCreate();
	size_t i, r, n = 0;

	(void)state;
	redis_reply_reader(ours);
	inputs(in);
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < NINPUTS; i++) {
			redisReply *want = parse(theirs, in[i]);

			mine[n] = parse(ours, in[i]);
			same_reply(want, mine[n]);
			freeReplyObject(want);
			n++;
		}
		/* Some freed now and then, some made again from them. */
		if (r % 3 == 2) {
			for (i = 0; i < NINPUTS; i++)
				ours->fn->freeObject(mine[--n]);
		}
	}
	if (n > 0)
		for (i = n; i-- > 0;)
			if (i % 2 == 0)
				ours->fn->freeObject(mine[i]);
	for (i = 0; i < n; i++)
		if (i % 2 == 1)
			ours->fn->freeObject(mine[i]);
	/* Made again from the spares, still the same. */
	for (i = 0; i < NINPUTS; i++) {
		redisReply *want = parse(theirs, in[i]),
		           *got = parse(ours, in[i]);

		same_reply(want, got);
		freeReplyObject(want);
		ours->fn->freeObject(got);
	}
	for (i = 0; i < NINPUTS; i++)
		free(in[i]);
	redisReaderFree(ours);
	redisReaderFree(theirs);
	redis_reply_spares_free();
	redis_reply_spares_free(); /* twice: nothing left the second time */
}

/* Every reply cut at every byte: nothing yet, and the reader freed with
 * what it holds (the objects made so far, freed by reply_free). */
static void
test_cut_short(void **state)
{
	char *in[NINPUTS];
	size_t i, cut;

	(void)state;
	inputs(in);
	for (i = 0; i < NINPUTS; i++) {
		size_t len = strlen(in[i]);

		for (cut = 1; cut < len; cut++) {
			redisReader *rd = redisReaderCreate();
			void *reply = NULL;

			redis_reply_reader(rd);
			assert_int_equal(redisReaderFeed(rd, in[i], cut),
			                 REDIS_OK);
			assert_int_equal(redisReaderGetReply(rd, &reply),
			                 REDIS_OK);
			assert_null(reply);
			redisReaderFree(rd);
		}
		free(in[i]);
	}
	redis_reply_spares_free();
}

/* Not RESP, or too deep: what hiredis's own objects give (an error of
 * the reader, or the same reply), and no object left behind. */
static void
test_garbage(void **state)
{
	static const char *bad[] = {
	    "?what\r\n",
	    "*2\r\n:1\r\n!x\r\n",
	    "$abc\r\n",
	    ":12a\r\n",
	    "*3\r\n$2\r\nab\r\n$-5\r\n:1\r\n",
	    "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		redisReader *rd = redisReaderCreate(),
		            *ref = redisReaderCreate();
		void *reply = NULL, *want = NULL;
		int rc, want_rc;

		redis_reply_reader(rd);
		redisReaderFeed(rd, bad[i], strlen(bad[i]));
		redisReaderFeed(ref, bad[i], strlen(bad[i]));
		rc = redisReaderGetReply(rd, &reply);
		want_rc = redisReaderGetReply(ref, &want);
		assert_int_equal(rc, want_rc);
		if (want == NULL) {
			assert_null(reply);
		} else {
			same_reply(want, reply);
			freeReplyObject(want);
			rd->fn->freeObject(reply);
		}
		redisReaderFree(rd);
		redisReaderFree(ref);
	}
	redis_reply_spares_free();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_as_hiredis),
	    cmocka_unit_test(test_cut_short),
	    cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
