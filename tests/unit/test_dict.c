/*
 * The dict: put, get, replace and delete; keys are bytes (any length,
 * embedded NULs, shared prefixes) and are copied; 100k keys make the table
 * grow and shrink; each visits every entry exactly once. An intrusive dict
 * keys objects by the id they hold, and stays true through growth, removal
 * in any order and a random mix with a model. A resize is incremental: it
 * spans many changes, and every lookup, insert, removal and visit made
 * while the old and the new table both live gives the same answers. Keys
 * made to share a chain under one seed spread out under another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../collide.h"
#include "dict.h"
#include "scale.h"

/* The loops' lengths are scaled (scale.h) down to the _MIN beside them. */
#define MANY_KEYS     100000
#define MANY_KEYS_MIN 10000 /* still grows past 8,192 buckets and back */
#define MODEL_KEYS    512
#define MODEL_OPS     50000
#define MODEL_OPS_MIN 5000
#define LONG_KEY      300  /* channel names may be longer than ids */
#define SWING_KEYS    5000 /* the phased model's keys */
#define SWING_OPS     200000
#define SWING_OPS_MIN 20000 /* several swings, and a visit every 5000 */
#define RESIZE_CHECK  1024  /* changes between full checks in a grow */
#define SHRINK_CHECK  512   /* and in a shrink (both times the divisor) */

static uint64_t rng_state = UINT64_C(0x2545f4914f6cdd1d);

static uint64_t
rng(uint64_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state % n;
}

static void *
val(size_t i)
{
	return (void *)(uintptr_t)(i + 1);
}

static size_t
key_of(char *buf, size_t size, size_t i)
{
	return (size_t)snprintf(buf, size, "user-%zu", i);
}

static void
test_basics(void **state)
{
	struct csq_dict *d = csq_dict_new(1);
	int a, b, c;

	(void)state;
	assert_int_equal(csq_dict_len(d), 0);
	assert_null(csq_dict_get(d, "alice", 5));
	assert_null(csq_dict_del(d, "alice", 5));
	assert_null(csq_dict_put(d, "alice", 5, &a));
	assert_null(csq_dict_put(d, "bob", 3, &b));
	assert_int_equal(csq_dict_len(d), 2);
	assert_ptr_equal(csq_dict_get(d, "alice", 5), &a);
	assert_ptr_equal(csq_dict_get(d, "bob", 3), &b);
	/* Replace returns the old value and does not add an entry. */
	assert_ptr_equal(csq_dict_put(d, "alice", 5, &c), &a);
	assert_int_equal(csq_dict_len(d), 2);
	assert_ptr_equal(csq_dict_get(d, "alice", 5), &c);
	assert_ptr_equal(csq_dict_del(d, "alice", 5), &c);
	assert_null(csq_dict_get(d, "alice", 5));
	assert_null(csq_dict_del(d, "alice", 5));
	assert_int_equal(csq_dict_len(d), 1);
	/* The length is part of the key: "bo" and "bobb" are others. */
	assert_null(csq_dict_get(d, "bob", 2));
	assert_null(csq_dict_get(d, "bobb", 4));
	csq_dict_free(d);
	csq_dict_free(NULL);
}

/* The dict keeps its own copy: the caller's buffer may change. */
static void
test_keys_copied(void **state)
{
	struct csq_dict *d = csq_dict_new(2);
	char buf[16];
	int a;

	(void)state;
	memcpy(buf, "queue-1", 7);
	csq_dict_put(d, buf, 7, &a);
	memcpy(buf, "XXXXXXX", 7);
	assert_null(csq_dict_get(d, buf, 7));
	assert_ptr_equal(csq_dict_get(d, "queue-1", 7), &a);
	csq_dict_free(d);
}

/*
 * Binary keys: every prefix of one buffer (length 0 to LONG_KEY, with NUL
 * bytes inside) is its own key.
 */
static void
test_binary_prefixes(void **state)
{
	struct csq_dict *d = csq_dict_new(3);
	char key[LONG_KEY];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(key); i++)
		key[i] = (char)(i % 3 == 0 ? 0 : 'a' + i % 26);
	for (i = 0; i <= sizeof(key); i++)
		assert_null(csq_dict_put(d, key, i, val(i)));
	assert_int_equal(csq_dict_len(d), sizeof(key) + 1);
	for (i = 0; i <= sizeof(key); i++)
		assert_ptr_equal(csq_dict_get(d, key, i), val(i));
	/* Same length, one byte different: absent. */
	key[5] ^= 1;
	for (i = 6; i <= sizeof(key); i++)
		assert_null(csq_dict_get(d, key, i));
	key[5] ^= 1;
	for (i = 0; i <= sizeof(key); i += 2)
		assert_ptr_equal(csq_dict_del(d, key, i), val(i));
	for (i = 0; i <= sizeof(key); i++)
		assert_ptr_equal(csq_dict_get(d, key, i),
		                 i % 2 ? val(i) : NULL);
	csq_dict_free(d);
}

/* Ids that share a long prefix and differ only at the end. */
static void
test_same_prefix(void **state)
{
	struct csq_dict *d = csq_dict_new(4);
	char key[64];
	size_t i, len;

	(void)state;
	memset(key, 'p', sizeof(key));
	for (i = 0; i < 256; i++) {
		key[sizeof(key) - 1] = (char)i;
		assert_null(csq_dict_put(d, key, sizeof(key), val(i)));
	}
	for (i = 0; i < 256; i++) {
		key[sizeof(key) - 1] = (char)i;
		assert_ptr_equal(csq_dict_get(d, key, sizeof(key)), val(i));
	}
	/* "user-1" .. "user-19": prefixes of each other. */
	for (i = 1; i < 20; i++) {
		len = key_of(key, sizeof(key), i);
		assert_null(csq_dict_put(d, key, len, val(1000 + i)));
	}
	for (i = 1; i < 20; i++) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_get(d, key, len), val(1000 + i));
	}
	assert_int_equal(csq_dict_len(d), 256 + 19);
	csq_dict_free(d);
}

struct visit {
	unsigned char *seen;
	size_t calls;
};

/* Checks that the key handed to fn is the key the value was stored under. */
static void
visit_entry(void *arg, const char *key, size_t len, void *v)
{
	struct visit *vi = arg;
	size_t i = (size_t)(uintptr_t)v - 1;
	char buf[32];

	assert_int_equal(len, key_of(buf, sizeof(buf), i));
	assert_memory_equal(key, buf, len);
	vi->seen[i]++;
	vi->calls++;
}

/* Counts the entries and checks each key is one of the model's. */
static void
visit_entry_any(void *arg, const char *key, size_t len, void *v)
{
	struct visit *vi = arg;
	size_t i = 0, at;

	(void)v;
	assert_true(len > 5 && memcmp(key, "user-", 5) == 0);
	/* The key is len bytes with no NUL after them: strtoul would read
	 * on into whatever follows it in the dict's node. */
	for (at = 5; at < len; at++) {
		assert_true(key[at] >= '0' && key[at] <= '9');
		i = i * 10 + (size_t)(key[at] - '0');
	}
	assert_true(i < SWING_KEYS);
	assert_int_equal(vi->seen[i]++, 0);
	vi->calls++;
}

static void
assert_each_once(const struct csq_dict *d, size_t n, int (*in)(size_t))
{
	struct visit vi = {calloc(n, 1), 0};
	size_t i;

	csq_dict_each(d, visit_entry, &vi);
	assert_int_equal(vi.calls, csq_dict_len(d));
	for (i = 0; i < n; i++)
		assert_int_equal(vi.seen[i], in(i) ? 1 : 0);
	free(vi.seen);
}

static size_t each_from; /* for from(): the first key still in */

static int
from(size_t i)
{
	return i >= each_from;
}

static void
assert_each_once_from(const struct csq_dict *d, size_t n, size_t first)
{
	each_from = first;
	assert_each_once(d, n, from);
}

static int
all(size_t i)
{
	(void)i;
	return 1;
}

static int
odd(size_t i)
{
	return i % 2 == 1;
}

static int
none(size_t i)
{
	(void)i;
	return 0;
}

/* 100k keys in: the table grows; out again: it shrinks; nothing lost. */
static void
test_grow_shrink(void **state)
{
	struct csq_dict *d = csq_dict_new(UINT64_C(0xdeadbeefcafe));
	char key[32];
	size_t i, len, many = scale_steps(MANY_KEYS, MANY_KEYS_MIN) / 2 * 2;

	(void)state;
	for (i = 0; i < many; i++) {
		len = key_of(key, sizeof(key), i);
		assert_null(csq_dict_put(d, key, len, val(i)));
	}
	assert_int_equal(csq_dict_len(d), many);
	assert_each_once(d, many, all);
	for (i = 0; i < many; i++) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_get(d, key, len), val(i));
	}
	for (i = 0; i < many; i += 2) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_del(d, key, len), val(i));
	}
	assert_int_equal(csq_dict_len(d), many / 2);
	assert_each_once(d, many, odd);
	for (i = 0; i < many; i++) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_get(d, key, len),
		                 i % 2 ? val(i) : NULL);
	}
	/* Down to a handful: shrinks past every size on the way. */
	for (i = 1; i < many - 10; i += 2) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_del(d, key, len), val(i));
	}
	assert_int_equal(csq_dict_len(d), 5);
	for (i = many - 9; i < many; i += 2) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_get(d, key, len), val(i));
		assert_ptr_equal(csq_dict_del(d, key, len), val(i));
	}
	assert_int_equal(csq_dict_len(d), 0);
	assert_each_once(d, many, none);
	/* And it still works after shrinking. */
	assert_null(csq_dict_put(d, "again", 5, val(0)));
	assert_ptr_equal(csq_dict_get(d, "again", 5), val(0));
	csq_dict_free(d); /* frees the entries left */
}

/* Random put / replace / del against an array model. */
static void
test_random_model(void **state)
{
	struct csq_dict *d = csq_dict_new(99);
	void *model[MODEL_KEYS] = {0}, *v;
	size_t i, len, n = 0;
	char key[32];
	int op, ops = (int)scale_steps(MODEL_OPS, MODEL_OPS_MIN);

	(void)state;
	for (op = 0; op < ops; op++) {
		i = rng(MODEL_KEYS);
		len = key_of(key, sizeof(key), i);
		switch (rng(3)) {
		case 0:
			v = val(rng(1000));
			assert_ptr_equal(csq_dict_put(d, key, len, v),
			                 model[i]);
			n += model[i] == NULL;
			model[i] = v;
			break;
		case 1:
			assert_ptr_equal(csq_dict_del(d, key, len), model[i]);
			n -= model[i] != NULL;
			model[i] = NULL;
			break;
		case 2:
			assert_ptr_equal(csq_dict_get(d, key, len), model[i]);
			break;
		}
		assert_int_equal(csq_dict_len(d), n);
	}
	for (i = 0; i < MODEL_KEYS; i++) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_get(d, key, len), model[i]);
	}
	csq_dict_free(d);
}

/*
 * A resize is spread over the changes after it: a change moves one chain
 * of the old 16,384 buckets (and passes over up to 10 empty ones), so
 * with about 10,400 chains (16,384 keys hashed into 16,384 buckets) it
 * takes about as many changes, and at most 16,384. While it runs, every
 * key is found, a replace, a delete and a re-insert land where lookups
 * look, and each visits every entry once. Then it ends, with nothing
 * lost. The same for a shrink. A dict that moved everything at once (the
 * old one) is never seen resizing, and fails at the first check.
 */
static void
test_resize_incremental(void **state)
{
	struct csq_dict *d = csq_dict_new(7);
	char key[32];
	size_t i, len, n = 0, changes = 0;
	size_t grow_check = RESIZE_CHECK * scale_divisor();
	size_t shrink_check = SHRINK_CHECK * scale_divisor();

	(void)state;
	assert_false(csq_dict_resizing(d));
	/* 16,384 keys fill 16,384 buckets; the next one starts a resize. */
	while (n <= 16384) {
		len = key_of(key, sizeof(key), n);
		assert_null(csq_dict_put(d, key, len, val(n)));
		n++;
	}
	assert_true(csq_dict_resizing(d));
	while (csq_dict_resizing(d)) {
		/* Puts of new keys, with a delete and a re-insert in between.
		 */
		len = key_of(key, sizeof(key), n);
		assert_null(csq_dict_put(d, key, len, val(n)));
		n++;
		changes++;
		if (changes % 97 == 0) {
			i = (size_t)rng(n);
			len = key_of(key, sizeof(key), i);
			assert_ptr_equal(csq_dict_del(d, key, len), val(i));
			assert_null(csq_dict_get(d, key, len));
			assert_null(csq_dict_put(d, key, len, val(i)));
			assert_ptr_equal(csq_dict_put(d, key, len, val(i)),
			                 val(i));
			changes += 3;
		}
		if (changes % grow_check == 0) {
			assert_each_once(d, n, all);
			for (i = 0; i < n; i++) {
				len = key_of(key, sizeof(key), i);
				assert_ptr_equal(csq_dict_get(d, key, len),
				                 val(i));
			}
		}
		assert_true(changes <= 16384);
	}
	print_message("grow: the resize took %zu changes\n", changes);
	assert_true(changes >= 8000);
	assert_int_equal(csq_dict_len(d), n);
	assert_each_once(d, n, all);

	/* Down: below 32,768 / 8 keys, a shrink starts; it spreads too. */
	changes = 0;
	for (i = 0; !csq_dict_resizing(d); i++) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_del(d, key, len), val(i));
	}
	print_message("shrink: started with %zu keys left\n", csq_dict_len(d));
	assert_int_equal(csq_dict_len(d), 32768 / 8 - 1);
	/* A delete and the same key back, until it ends: the keys from i on
	 * stay, and every one is found. */
	while (csq_dict_resizing(d)) {
		size_t j = i + (size_t)rng(n - i);

		len = key_of(key, sizeof(key), j);
		assert_ptr_equal(csq_dict_del(d, key, len), val(j));
		assert_null(csq_dict_get(d, key, len));
		assert_null(csq_dict_put(d, key, len, val(j)));
		changes += 2;
		if (changes % shrink_check == 0)
			for (j = 0; j < n; j++) {
				len = key_of(key, sizeof(key), j);
				assert_ptr_equal(csq_dict_get(d, key, len),
				                 j < i ? NULL : val(j));
			}
		assert_true(changes <= 2 * 32768);
	}
	print_message("shrink: the resize took %zu changes\n", changes);
	assert_true(changes >= 1000);
	assert_each_once_from(d, n, i);
	assert_int_equal(csq_dict_len(d), n - i);
	csq_dict_free(d); /* frees the entries left */
}

/*
 * The model again, in phases that fill the dict to thousands of keys and
 * empty it again, so that grows and shrinks start often and every kind of
 * change meets a resize under way; the test counts the changes made while
 * one was.
 */
static void
test_swing_model(void **state)
{
	struct csq_dict *d = csq_dict_new(1234);
	void **model = calloc(SWING_KEYS, sizeof(*model));
	size_t i, len, n = 0, during = 0;
	char key[32];
	int op, fill = 1, put, ops = (int)scale_steps(SWING_OPS, SWING_OPS_MIN);

	(void)state;
	assert_non_null(model);
	for (op = 0; op < ops; op++) {
		if (fill && n > SWING_KEYS * 9 / 10)
			fill = 0;
		else if (!fill && n < 20)
			fill = 1;
		during += csq_dict_resizing(d) != 0;
		/*
		 * 3 in 4: the phase's change, to the next key (from a random
		 * one) that it changes, so that the dict swings all the way;
		 * else the other change, to a random key.
		 */
		i = rng(SWING_KEYS);
		put = fill;
		if (rng(4) != 0) {
			while ((model[i] == NULL) != fill)
				i = (i + 1) % SWING_KEYS;
		} else
			put = !fill;
		len = key_of(key, sizeof(key), i);
		if (put) {
			void *v = val(rng(1000));

			assert_ptr_equal(csq_dict_put(d, key, len, v),
			                 model[i]);
			n += model[i] == NULL;
			model[i] = v;
		} else {
			assert_ptr_equal(csq_dict_del(d, key, len), model[i]);
			n -= model[i] != NULL;
			model[i] = NULL;
		}
		i = rng(SWING_KEYS);
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_get(d, key, len), model[i]);
		assert_int_equal(csq_dict_len(d), n);
		if (op % 5000 == 0) {
			struct visit vi = {calloc(SWING_KEYS, 1), 0};

			csq_dict_each(d, visit_entry_any, &vi);
			assert_int_equal(vi.calls, n);
			free(vi.seen);
		}
	}
	print_message("swing: %zu of %d changes with a resize under way\n",
	              during, ops);
	assert_true(during > (size_t)ops / 20);
	csq_dict_free(d);
	free(model);
}

/* Two seeds, same contents: the seed changes placement, not answers. */
static void
test_seeds(void **state)
{
	struct csq_dict *a = csq_dict_new(0), *b = csq_dict_new(UINT64_MAX);
	char key[32];
	size_t i, len;

	(void)state;
	for (i = 0; i < 1000; i++) {
		len = key_of(key, sizeof(key), i);
		csq_dict_put(a, key, len, val(i));
		csq_dict_put(b, key, len, val(i));
	}
	for (i = 0; i < 1000; i++) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_get(a, key, len),
		                 csq_dict_get(b, key, len));
	}
	assert_each_once(a, 1000, all);
	assert_each_once(b, 1000, all);
	csq_dict_free(a);
	csq_dict_free(b);
}

#define CRAFTED     5000 /* scaled (scale.h): one chain costs n * n / 2 */
#define CRAFTED_MIN 500

/*
 * The seed is all that keeps a client from filling one chain: keys made
 * to share one under a seed (tests/collide.h) are one chain in a dict
 * with that seed, and spread out in a dict with any other; both find
 * every key. csqd seeds its tables at random (daemon/server.c).
 */
static void
test_seed_decides_chains(void **state)
{
	const uint64_t seed = UINT64_C(0x5eed);
	struct csq_dict *same = csq_dict_new(seed),
	                *other = csq_dict_new(seed + 1);
	char key[COLLIDE_KEY_LEN];
	size_t i, crafted = scale_steps(CRAFTED, CRAFTED_MIN);

	(void)state;
	for (i = 0; i < crafted; i++) {
		collide_key(seed, i, key);
		assert_null(csq_dict_put(same, key, sizeof(key), val(i)));
		assert_null(csq_dict_put(other, key, sizeof(key), val(i)));
	}
	print_message("longest chain: %zu with the seed, %zu with another\n",
	              csq_dict_longest_chain(same),
	              csq_dict_longest_chain(other));
	assert_int_equal(csq_dict_longest_chain(same), crafted);
	assert_true(csq_dict_longest_chain(other) < 20);
	for (i = 0; i < crafted; i++) {
		collide_key(seed, i, key);
		assert_ptr_equal(csq_dict_get(same, key, sizeof(key)), val(i));
		assert_ptr_equal(csq_dict_get(other, key, sizeof(key)), val(i));
	}
	csq_dict_free(same);
	csq_dict_free(other);
}

struct obj {
	int tag;
	struct csq_dict_node link;
	char id[24];
};

static struct csq_dict *
obj_dict(uint64_t seed)
{
	return csq_dict_new_intrusive(seed, offsetof(struct obj, link),
	                              offsetof(struct obj, id));
}

static void
count_obj(void *arg, const char *key, size_t len, void *v)
{
	struct obj *o = v;

	assert_int_equal(len, strlen(o->id));
	assert_ptr_equal(key, o->id);
	(*(size_t *)arg)++;
}

static void
test_intrusive(void **state)
{
	size_t many = scale_steps(MANY_KEYS, MANY_KEYS_MIN) / 2 * 2;
	struct obj *objs = calloc(many, sizeof(*objs));
	struct csq_dict *d = obj_dict(5);
	char key[32];
	size_t i, len, seen = 0;

	(void)state;
	assert_non_null(objs);
	assert_null(csq_dict_get(d, "user-0", 6));
	for (i = 0; i < many; i++) {
		objs[i].tag = (int)i;
		len = key_of(objs[i].id, sizeof(objs[i].id), i);
		csq_dict_add(d, &objs[i], len);
	}
	assert_int_equal(csq_dict_len(d), many);
	for (i = 0; i < many; i++) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_get(d, key, len), &objs[i]);
	}
	csq_dict_each(d, count_obj, &seen);
	assert_int_equal(seen, many);
	/* Odd ones out, from the end: chains lose middles and heads. */
	for (i = many; i-- > 0;)
		if (i % 2 == 1)
			csq_dict_remove(d, &objs[i]);
	assert_int_equal(csq_dict_len(d), many / 2);
	for (i = 0; i < many; i++) {
		len = key_of(key, sizeof(key), i);
		assert_ptr_equal(csq_dict_get(d, key, len),
		                 i % 2 ? NULL : &objs[i]);
	}
	for (i = 0; i < many; i += 2)
		csq_dict_remove(d, &objs[i]);
	assert_int_equal(csq_dict_len(d), 0);
	csq_dict_add(d, &objs[7], strlen(objs[7].id));
	assert_ptr_equal(csq_dict_get(d, "user-7", 6), &objs[7]);
	assert_null(csq_dict_get(d, "user-", 5));
	csq_dict_free(d); /* the objects are the caller's */
	assert_int_equal(objs[7].tag, 7);
	free(objs);
}

/* lib/dict.c's hash as it was first written (one memcpy of the last
 * bytes), with its mixing step from collide.h: the order a dict's walk
 * follows, and so a snapshot's and an RDB's bytes, hang on it, so a
 * faster hash must give the same. */
static uint32_t
ref_hash(uint64_t seed, const char *key, size_t len)
{
	uint64_t h = seed ^ ((uint64_t)len * UINT64_C(0x9e3779b97f4a7c15));
	uint64_t w;

	for (; len >= sizeof(w); key += sizeof(w), len -= sizeof(w)) {
		memcpy(&w, key, sizeof(w));
		h = collide_mix(h ^ w);
	}
	w = 0;
	memcpy(&w, key, len);
	return (uint32_t)collide_mix(h ^ w ^ ((uint64_t)len << 56));
}

/* Every length from 1 to 23 (every tail of 0 to 7 bytes, after 0 to 2
 * words), random bytes (NUL and 0xff among them), two seeds: each node
 * holds the hash the first one gave. */
static void
test_hash_unchanged(void **state)
{
	static const uint64_t seeds[] = {0, UINT64_C(0x9e3779b97f4a7c15)};
	struct obj o[23];
	size_t s, len, i;

	(void)state;
	for (s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		struct csq_dict *d = obj_dict(seeds[s]);

		for (len = 1; len <= 23; len++) {
			for (i = 0; i < len; i++)
				o[len - 1].id[i] = (char)(rng(256));
			csq_dict_add(d, &o[len - 1], len);
			assert_int_equal(
			    o[len - 1].link.hash,
			    ref_hash(seeds[s], o[len - 1].id, len));
			assert_int_equal(o[len - 1].link.len, len);
		}
		/* The hint before a lookup changes nothing, for a key
		 * there or not, in a resize (23 keys: 16 buckets grew). */
		assert_true(csq_dict_resizing(d));
		for (len = 1; len <= 23; len++) {
			csq_dict_prefetch(d, o[len - 1].id, len);
			csq_dict_prefetch(d, "absent", 6);
			assert_ptr_equal(csq_dict_get(d, o[len - 1].id, len),
			                 &o[len - 1]);
		}
		assert_int_equal(csq_dict_len(d), 23);
		csq_dict_free(d);
	}
}

static void
test_intrusive_model(void **state)
{
	struct obj objs[MODEL_KEYS];
	int in[MODEL_KEYS];
	struct csq_dict *d = obj_dict(77);
	size_t i, n = 0, len, op, ops = scale_steps(MODEL_OPS, MODEL_OPS_MIN);
	char key[32];

	(void)state;
	memset(in, 0, sizeof(in));
	for (i = 0; i < MODEL_KEYS; i++)
		key_of(objs[i].id, sizeof(objs[i].id), i);
	for (op = 0; op < ops; op++) {
		i = (size_t)rng(MODEL_KEYS);
		len = strlen(objs[i].id);
		if (!in[i]) {
			assert_null(csq_dict_get(d, objs[i].id, len));
			csq_dict_add(d, &objs[i], len);
			in[i] = 1;
			n++;
		} else if (rng(2)) {
			csq_dict_remove(d, &objs[i]);
			in[i] = 0;
			n--;
		}
		len = key_of(key, sizeof(key), (size_t)rng(MODEL_KEYS));
		i = (size_t)strtoul(key + 5, NULL, 10);
		assert_ptr_equal(csq_dict_get(d, key, len),
		                 in[i] ? &objs[i] : NULL);
		assert_int_equal(csq_dict_len(d), n);
	}
	csq_dict_free(d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basics),
	    cmocka_unit_test(test_keys_copied),
	    cmocka_unit_test(test_binary_prefixes),
	    cmocka_unit_test(test_same_prefix),
	    cmocka_unit_test(test_grow_shrink),
	    cmocka_unit_test(test_random_model),
	    cmocka_unit_test(test_resize_incremental),
	    cmocka_unit_test(test_swing_model),
	    cmocka_unit_test(test_seeds),
	    cmocka_unit_test(test_seed_decides_chains),
	    cmocka_unit_test(test_intrusive),
	    cmocka_unit_test(test_hash_unchanged),
	    cmocka_unit_test(test_intrusive_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
