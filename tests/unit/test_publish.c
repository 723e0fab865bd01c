/*
 * What csqd writes in one piece on the match path, against the pieces it
 * wrote before, on random input: a reply through struct resp_buf (the
 * same bytes as the resp_* writers, whether the buffer holds it, fills on
 * the way or is given more than it holds in one item), a pub/sub message
 * through pubsub_message_frame and _send (the same bytes as resp_push and
 * resp_bulk, for both protocols, of a channel and of a pattern, short and
 * over the buffer's size), and a pattern's prefix match (pubsub_glob: the
 * same answer as csq_glob for every pattern, a prefix and '*' or not). How
 * it was tried to break: with resp_buf_bulk's room test one byte short,
 * with a RESP3 message sent in RESP2's first byte, and with '?' left out
 * of pubsub_glob_prefix's special characters, each test here fails.
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

#include "glob.h"
#include "pubsub.h"
#include "resp.h"
#include "scale.h"

#define SEQ_RUNS      3000 /* random reply sequences (scaled) */
#define SEQ_RUNS_MIN  300
#define SEQ_ITEMS     40   /* items in a sequence, at most */
#define MSG_RUNS      3000 /* random messages (scaled) */
#define MSG_RUNS_MIN  300
#define GLOB_RUNS     200000 /* random pattern and name pairs (scaled) */
#define GLOB_RUNS_MIN 20000
#define TEXT_MAX      (3 * RESP_BUF_SIZE) /* a string, at most */

static uint64_t seed = 88172645463325252ull;

static uint64_t
rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* A length, most often short, sometimes around or over the buffer's. */
static size_t
rnd_len(void)
{
	switch (rnd() % 4) {
	case 0:
		return rnd() % 8;
	case 1:
		return rnd() % 300;
	case 2:
		return RESP_BUF_SIZE - 40 + rnd() % 80;
	default:
		return rnd() % TEXT_MAX;
	}
}

static void
rnd_text(char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		s[i] = (char)(rnd() % 256);
}

/* The same bytes in a and b. */
static void
same_bytes(struct evbuffer *a, struct evbuffer *b)
{
	size_t n = evbuffer_get_length(a);

	assert_int_equal(n, evbuffer_get_length(b));
	assert_memory_equal(evbuffer_pullup(a, -1), evbuffer_pullup(b, -1), n);
}

static int64_t
rnd_int(void)
{
	switch (rnd() % 3) {
	case 0:
		return (int64_t)(rnd() % 100);
	case 1:
		return -(int64_t)(rnd() % 1000000);
	default:
		return (int64_t)rnd();
	}
}

/* Random sequences of items, through resp_buf into one buffer and
 * through the resp_* writers into another, out given: the same bytes. */
static void
test_buf_as_writers(void **state)
{
	static char text[TEXT_MAX + 1];
	size_t runs = scale_steps(SEQ_RUNS, SEQ_RUNS_MIN), r, i, n, len;
	struct resp_buf b;
	int proto;
	int64_t v;

	(void)state;
	for (r = 0; r < runs; r++) {
		struct evbuffer *a = evbuffer_new(), *w = evbuffer_new();

		assert_non_null(a);
		assert_non_null(w);
		resp_buf_init(&b, a);
		n = 1 + rnd() % SEQ_ITEMS;
		for (i = 0; i < n; i++) {
			proto = rnd() % 2 ? 3 : 2;
			v = rnd_int();
			switch (rnd() % 6) {
			case 0:
				len = rnd_len();
				rnd_text(text, len);
				resp_buf_bulk(&b, text, len);
				resp_bulk(w, text, len);
				break;
			case 1:
				resp_buf_integer(&b, v);
				resp_integer(w, v);
				break;
			case 2:
				len = rnd_len();
				memset(text, 'a' + (int)(rnd() % 26), len);
				text[len] = '\0';
				resp_buf_simple(&b, text);
				resp_simple(w, text);
				break;
			case 3:
				resp_buf_array(&b, v);
				resp_array(w, v);
				break;
			case 4:
				resp_buf_map(&b, proto, v % 1000);
				resp_map(w, proto, v % 1000);
				break;
			default:
				resp_buf_push(&b, proto, v % 1000);
				resp_push(w, proto, v % 1000);
				break;
			}
			assert_false(b.over);
			assert_true(b.len <= RESP_BUF_SIZE);
		}
		resp_buf_flush(&b);
		assert_int_equal(b.len, 0);
		same_bytes(a, w);
		evbuffer_free(a);
		evbuffer_free(w);
	}
}

/* With no out, what fits is written as the writers write it, and what
 * does not sets over, whatever came before. */
static void
test_buf_alone(void **state)
{
	static char text[TEXT_MAX];
	size_t runs = scale_steps(SEQ_RUNS, SEQ_RUNS_MIN), r, len, total;
	struct resp_buf b;

	(void)state;
	for (r = 0; r < runs; r++) {
		struct evbuffer *w = evbuffer_new();

		assert_non_null(w);
		resp_buf_init(&b, NULL);
		total = 0;
		while (total <= RESP_BUF_SIZE + 64) {
			len = rnd_len() % 400;
			rnd_text(text, len);
			resp_buf_bulk(&b, text, len);
			resp_bulk(w, text, len);
			total = evbuffer_get_length(w);
			if (total <= RESP_BUF_SIZE) {
				assert_false(b.over);
				assert_int_equal(b.len, total);
				assert_memory_equal(
				    b.buf, evbuffer_pullup(w, -1), total);
			} else {
				assert_true(b.over);
			}
		}
		resp_buf_flush(&b); /* nothing to add it to: a no-op */
		evbuffer_free(w);
	}
}

/* A message of a channel or a pattern, for RESP2 and RESP3, in one piece
 * or in pieces (over the buffer): the bytes resp_push and resp_bulk write;
 * a frame made once serves subscribers of either protocol, in any order. */
static void
test_message_as_pieces(void **state)
{
	static char pat[TEXT_MAX], ch[TEXT_MAX], msg[TEXT_MAX];
	size_t runs = scale_steps(MSG_RUNS, MSG_RUNS_MIN), r, plen, clen, mlen;
	struct resp_buf f;
	int k, proto, ispat;

	(void)state;
	for (r = 0; r < runs; r++) {
		ispat = (int)(rnd() % 2);
		plen = rnd_len() % 300;
		clen = rnd_len() % 300;
		mlen = rnd_len();
		rnd_text(pat, plen);
		rnd_text(ch, clen);
		rnd_text(msg, mlen);
		pubsub_message_frame(&f, ispat ? pat : NULL, plen, ch, clen,
		                     msg, mlen);
		for (k = 0; k < 3; k++) {
			struct evbuffer *a = evbuffer_new(),
			                *w = evbuffer_new();

			assert_non_null(a);
			assert_non_null(w);
			proto = rnd() % 2 ? 3 : 2;
			pubsub_message_send(&f, a, proto, ispat ? pat : NULL,
			                    plen, ch, clen, msg, mlen);
			resp_push(w, proto, ispat ? 4 : 3);
			if (ispat) {
				resp_bulk(w, "pmessage", 8);
				resp_bulk(w, pat, plen);
			} else {
				resp_bulk(w, "message", 7);
			}
			resp_bulk(w, ch, clen);
			resp_bulk(w, msg, mlen);
			same_bytes(a, w);
			evbuffer_free(a);
			evbuffer_free(w);
		}
	}
}

/* A random text of the characters that patterns are made of. */
static size_t
glob_text(char *s, size_t max, int star_last)
{
	static const char alphabet[] = "ab*?[]^-\\";
	size_t len = rnd() % (max + 1), i;

	for (i = 0; i < len; i++)
		s[i] = rnd() % 3 ? alphabet[rnd() % 2]
		                 : alphabet[rnd() % (sizeof(alphabet) - 1)];
	if (star_last) {
		if (len == max)
			len--;
		s[len++] = '*';
	}
	return len;
}

/* pubsub_glob as csq_glob, for patterns made to be prefixes (a plain
 * prefix and '*') half the time; and pubsub_glob_prefix says so of the
 * plain ones. */
static void
test_glob_prefix(void **state)
{
	size_t runs = scale_steps(GLOB_RUNS, GLOB_RUNS_MIN), r, plen, slen, i;
	char pat[12], s[12];
	int prefix, plain, prefixes = 0;

	(void)state;
	for (r = 0; r < runs; r++) {
		plen = glob_text(pat, 8, (int)(rnd() % 2));
		if (rnd() % 2) /* a plain prefix and '*' */
			for (i = 0; i + 1 < plen; i++)
				pat[i] = rnd() % 2 ? 'a' : 'b';
		slen = glob_text(s, 10, 0);
		if (plen > 0 && rnd() % 2) /* a name that starts as it does */
			for (i = 0; i + 1 < plen && i < slen; i++)
				s[i] = pat[i];
		prefix = pubsub_glob_prefix(pat, plen);
		plain = plen > 0 && pat[plen - 1] == '*';
		for (i = 0; plain && i + 1 < plen; i++)
			plain = strchr("*?[\\", pat[i]) == NULL;
		assert_int_equal(prefix, plain);
		prefixes += prefix;
		assert_int_equal(pubsub_glob(pat, plen, prefix, s, slen),
		                 csq_glob(pat, plen, s, slen));
	}
	assert_true((size_t)prefixes > runs / 8);
	/* The cases by hand: Redis's empty name, the pattern "*". */
	assert_false(pubsub_glob("*", 1, 1, "", 0));
	assert_true(pubsub_glob("*", 1, 1, "x", 1));
	assert_true(pubsub_glob("user:*", 6, 1, "user:", 5));
	assert_false(pubsub_glob("user:*", 6, 1, "user", 4));
	assert_false(pubsub_glob_prefix("user:\\*", 7));
	assert_false(pubsub_glob_prefix("us?r:*", 6));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_buf_as_writers),
	    cmocka_unit_test(test_buf_alone),
	    cmocka_unit_test(test_message_as_pieces),
	    cmocka_unit_test(test_glob_prefix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
