/*
 * The waiting line (a skiplist with spans): order, rank, nth, seek and
 * next at the edges, then a long randomized run against a sorted array, with
 * the spans checked after every operation, and the rank an insert tells.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "line.h"
#include "scale.h"

#define RANDOM_OPS     20000 /* scaled (scale.h), to no fewer than: */
#define RANDOM_OPS_MIN 2000
#define RANDOM_KEYS    2000 /* key space; the line holds about half of it */

static uint64_t rng_state;

static uint64_t
rng(uint64_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state % n;
}

static void *
val(uint64_t key)
{
	return (void *)(uintptr_t)(key + 1);
}

/* Fisher-Yates over keys 1..n, times step so that gaps exist between. */
static uint64_t *
shuffled_keys(size_t n, uint64_t step)
{
	uint64_t *k = calloc(n, sizeof(*k)), t;
	size_t i, j;

	for (i = 0; i < n; i++)
		k[i] = (i + 1) * step;
	for (i = n; i > 1; i--) {
		j = rng(i);
		t = k[i - 1];
		k[i - 1] = k[j];
		k[j] = t;
	}
	return k;
}

/* Walks the whole line and compares it with the sorted model. */
static void
assert_line_is(const struct csq_line *l, const uint64_t *model, size_t len)
{
	struct csq_line_node *n;
	size_t i;

	assert_int_equal(csq_line_check(l), 0);
	assert_int_equal(csq_line_len(l), len);
	n = csq_line_first(l);
	for (i = 0; i < len; i++, n = csq_line_next(n)) {
		assert_non_null(n);
		assert_int_equal(csq_line_node_key(n), model[i]);
		assert_ptr_equal(csq_line_node_value(n), val(model[i]));
		assert_int_equal(csq_line_rank(l, model[i]), i + 1);
		assert_ptr_equal(csq_line_nth(l, i), n);
	}
	assert_null(n);
	assert_null(csq_line_nth(l, len));
}

static int
setup(void **state)
{
	(void)state;
	rng_state = UINT64_C(0x853c49e6748fea9b);
	return 0;
}

static void
test_empty(void **state)
{
	struct csq_line *l = csq_line_new(0);

	(void)state;
	assert_int_equal(csq_line_len(l), 0);
	assert_null(csq_line_first(l));
	assert_null(csq_line_nth(l, 0));
	assert_null(csq_line_nth(l, UINT64_MAX));
	assert_int_equal(csq_line_rank(l, 0), 0);
	assert_int_equal(csq_line_rank(l, 42), 0);
	assert_null(csq_line_remove(l, 42));
	assert_int_equal(csq_line_check(l), 0);
	csq_line_free(l);
	csq_line_free(NULL);
}

/* Inserted in random order, the line comes out sorted with ranks 1..n. */
static void
test_random_order_ranks(void **state)
{
	enum { N = 1000 };
	uint64_t *keys = shuffled_keys(N, 10), model[N];
	struct csq_line *l = csq_line_new(0);
	struct csq_line_node *n;
	size_t i;

	(void)state;
	for (i = 0; i < N; i++) {
		n = csq_line_insert(l, keys[i], val(keys[i]));
		assert_int_equal(csq_line_node_key(n), keys[i]);
		assert_ptr_equal(csq_line_node_value(n), val(keys[i]));
	}
	for (i = 0; i < N; i++)
		model[i] = (i + 1) * 10;
	assert_line_is(l, model, N);
	/* Between keys and beyond both ends: absent. */
	assert_int_equal(csq_line_rank(l, 5), 0);
	assert_int_equal(csq_line_rank(l, 15), 0);
	assert_int_equal(csq_line_rank(l, N * 10 + 10), 0);
	assert_null(csq_line_remove(l, 15));
	assert_null(csq_line_remove(l, 0));
	assert_null(csq_line_remove(l, UINT64_MAX));
	assert_line_is(l, model, N);
	csq_line_free(l);
	free(keys);
}

/* Remove from the middle, the head and the tail; ranks close up. */
static void
test_remove_positions(void **state)
{
	uint64_t model[] = {10, 20, 30, 40, 50, 60, 70};
	size_t len = sizeof(model) / sizeof(model[0]), i;
	struct csq_line *l = csq_line_new(0);

	(void)state;
	for (i = len; i > 0; i--)
		csq_line_insert(l, model[i - 1], val(model[i - 1]));
	assert_line_is(l, model, len);

	assert_ptr_equal(csq_line_remove(l, 40), val(40)); /* middle */
	memmove(&model[3], &model[4], 3 * sizeof(model[0]));
	len--;
	assert_line_is(l, model, len);
	assert_int_equal(csq_line_rank(l, 50), 4);

	assert_ptr_equal(csq_line_remove(l, 10), val(10)); /* head */
	memmove(&model[0], &model[1], (len - 1) * sizeof(model[0]));
	len--;
	assert_line_is(l, model, len);
	assert_int_equal(csq_line_node_key(csq_line_first(l)), 20);

	assert_ptr_equal(csq_line_remove(l, 70), val(70)); /* tail */
	len--;
	assert_line_is(l, model, len);
	assert_null(csq_line_next(csq_line_nth(l, len - 1)));

	assert_null(csq_line_remove(l, 70)); /* twice: absent */
	assert_int_equal(csq_line_rank(l, 70), 0);
	while (len > 0) {
		assert_ptr_equal(csq_line_remove(l, model[len - 1]),
		                 val(model[len - 1]));
		len--;
		assert_line_is(l, model, len);
	}
	assert_null(csq_line_first(l));
	csq_line_free(l);
}

/* The extreme keys, and re-insert of a removed key. */
static void
test_edge_keys(void **state)
{
	uint64_t model[] = {0, 1, UINT64_MAX - 1, UINT64_MAX};
	struct csq_line *l = csq_line_new(0);

	(void)state;
	csq_line_insert(l, UINT64_MAX, val(UINT64_MAX));
	csq_line_insert(l, 0, val(0));
	csq_line_insert(l, UINT64_MAX - 1, val(UINT64_MAX - 1));
	csq_line_insert(l, 1, val(1));
	assert_line_is(l, model, 4);
	assert_ptr_equal(csq_line_remove(l, 0), val(0));
	assert_int_equal(csq_line_rank(l, 0), 0);
	assert_line_is(l, model + 1, 3);
	csq_line_insert(l, 0, val(0));
	assert_line_is(l, model, 4);
	csq_line_free(l);
}

/*
 * The usual shape of a waiting line: keys arrive ascending (FIFO) and
 * leave from the head. nth and next over every index.
 */
static void
test_fifo_shape(void **state)
{
	enum { N = 5000 };
	/* The seed that line.c's own constant cancels to 0. */
	struct csq_line *l = csq_line_new(UINT64_C(0x2545f4914f6cdd1d));
	struct csq_line_node *n;
	uint64_t i;

	(void)state;
	for (i = 1; i <= N; i++)
		csq_line_insert(l, i, val(i));
	assert_int_equal(csq_line_check(l), 0);
	for (i = 0, n = csq_line_first(l); i < N; i++, n = csq_line_next(n)) {
		assert_ptr_equal(csq_line_nth(l, i), n);
		assert_int_equal(csq_line_node_key(n), i + 1);
	}
	assert_null(n);
	for (i = 1; i <= N; i++) {
		n = csq_line_first(l);
		assert_int_equal(csq_line_node_key(n), i);
		assert_int_equal(csq_line_rank(l, i), 1);
		assert_ptr_equal(csq_line_remove(l, i), val(i));
		if (i % 499 == 0)
			assert_int_equal(csq_line_check(l), 0);
	}
	assert_int_equal(csq_line_len(l), 0);
	assert_int_equal(csq_line_check(l), 0);
	csq_line_free(l);
}

static size_t
model_find(const uint64_t *model, size_t len, uint64_t key, int *found)
{
	size_t lo = 0, hi = len, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (model[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < len && model[lo] == key;
	return lo;
}

/* 20,000 random operations against a sorted array; check() after each. */
static void
test_random_model(void **state)
{
	uint64_t *model = calloc(RANDOM_KEYS, sizeof(*model)), key, idx;
	struct csq_line *l = csq_line_new(UINT64_C(0x5eed));
	struct csq_line_node *n;
	size_t len = 0, pos;
	int op, found, ops = (int)scale_steps(RANDOM_OPS, RANDOM_OPS_MIN);

	(void)state;
	for (op = 0; op < ops; op++) {
		key = 1 + rng(RANDOM_KEYS);
		pos = model_find(model, len, key, &found);
		switch (rng(4)) {
		case 0:
		case 1: /* insert, or remove when present */
			if (!found && op % 2 == 1) {
				/* The rank the insert tells is the model's. */
				assert_int_equal(
				    csq_line_insert_rank(l, key, val(key)),
				    pos + 1);
				assert_int_equal(csq_line_rank(l, key),
				                 pos + 1);
			} else if (!found) {
				n = csq_line_insert(l, key, val(key));
				assert_int_equal(csq_line_node_key(n), key);
			}
			if (!found) {
				memmove(&model[pos + 1], &model[pos],
				        (len - pos) * sizeof(*model));
				model[pos] = key;
				len++;
				break;
			}
			/* FALLTHROUGH */
		case 2: /* remove */
			if (found) {
				assert_ptr_equal(csq_line_remove(l, key),
				                 val(key));
				memmove(&model[pos], &model[pos + 1],
				        (len - pos - 1) * sizeof(*model));
				len--;
			} else
				assert_null(csq_line_remove(l, key));
			break;
		case 3: /* queries only */
			assert_int_equal(csq_line_rank(l, key),
			                 found ? pos + 1 : 0);
			/* seek: the first key at or after key, which is
			 * the model's at pos, present or not */
			n = csq_line_seek(l, key);
			if (pos < len)
				assert_int_equal(csq_line_node_key(n),
				                 model[pos]);
			else
				assert_null(n);
			idx = rng(len + 2);
			n = csq_line_nth(l, idx);
			if (idx < len)
				assert_int_equal(csq_line_node_key(n),
				                 model[idx]);
			else
				assert_null(n);
			break;
		}
		assert_int_equal(csq_line_check(l), 0);
		assert_int_equal(csq_line_len(l), len);
		if (len > 0)
			assert_int_equal(csq_line_node_key(csq_line_first(l)),
			                 model[0]);
		else
			assert_null(csq_line_first(l));
		if (op % 1000 == 0)
			assert_line_is(l, model, len);
	}
	assert_line_is(l, model, len);
	csq_line_free(l);
	free(model);
}

/*
 * A queue's life against a sorted array: mostly arrivals after the last
 * key (the append that links to the tails without a descent), leaving
 * from the head and from anywhere, now and then an arrival in the middle
 * (a higher tier) and the line emptied; check() after each, which
 * compares every level's tail with the last node it meets. How it tries
 * to break the tails: remove the last node (its tails go back to the
 * nodes before it), append right after that, append to an empty line.
 */
static void
test_queue_model(void **state)
{
	int ops = (int)scale_steps(RANDOM_OPS, RANDOM_OPS_MIN), op, found;
	uint64_t *model = calloc((size_t)ops + 1, sizeof(*model));
	struct csq_line *l = csq_line_new(UINT64_C(0xfeed));
	uint64_t next = 1, key;
	size_t len = 0, pos;

	(void)state;
	for (op = 0; op < ops; op++) {
		switch (rng(10)) {
		case 0: /* the last one leaves */
			if (len == 0)
				break;
			len--;
			assert_ptr_equal(csq_line_remove(l, model[len]),
			                 val(model[len]));
			break;
		case 1: /* the head leaves */
		case 2:
			if (len == 0)
				break;
			assert_ptr_equal(csq_line_remove(l, model[0]),
			                 val(model[0]));
			memmove(&model[0], &model[1],
			        (len - 1) * sizeof(*model));
			len--;
			break;
		case 3: /* anyone leaves */
			if (len == 0)
				break;
			pos = (size_t)rng(len);
			assert_ptr_equal(csq_line_remove(l, model[pos]),
			                 val(model[pos]));
			memmove(&model[pos], &model[pos + 1],
			        (len - pos - 1) * sizeof(*model));
			len--;
			break;
		case 4: /* an arrival in the middle, when its key is free */
			key = 1 + rng(next);
			pos = model_find(model, len, key, &found);
			if (found)
				break;
			assert_int_equal(csq_line_insert_rank(l, key, val(key)),
			                 pos + 1);
			memmove(&model[pos + 1], &model[pos],
			        (len - pos) * sizeof(*model));
			model[pos] = key;
			len++;
			if (key >= next)
				next = key + 1;
			break;
		default: /* an arrival after the last key */
			key = next + rng(3);
			next = key + 1;
			assert_int_equal(csq_line_count_below(l, key), len);
			assert_int_equal(csq_line_insert_rank(l, key, val(key)),
			                 len + 1);
			model[len++] = key;
			break;
		}
		if (len > 0 && rng(500) == 0) { /* emptied */
			while (len > 0) {
				len--;
				csq_line_remove(l, model[len]);
			}
		}
		assert_int_equal(csq_line_check(l), 0);
		assert_int_equal(csq_line_len(l), len);
		if (op % 1000 == 0)
			assert_line_is(l, model, len);
	}
	assert_line_is(l, model, len);
	csq_line_free(l);
	free(model);
}

/*
 * Two owning lines (need-lines) and one that borrows their nodes
 * (q->needy, csq_line_insert_pair): the borrowing line holds every key of
 * both, ranks them among all of them, and never frees a node, which is
 * what it is for: its nodes live inside the owners' allocations, so a
 * free of one (on a remove, or when it goes with keys still in it) is a
 * free of an address malloc never gave, that ASan reports, and a remove
 * from an owner before the borrower would be a use after free. How it
 * tries to break it: arrivals in the middle and after the last key,
 * removes of the last and of any, and the borrowing line freed while it
 * still holds keys.
 */
static void
test_borrowing_pair(void **state)
{
	int ops = (int)scale_steps(RANDOM_OPS, RANDOM_OPS_MIN), op, found;
	uint64_t *model = calloc((size_t)ops + 1, sizeof(*model));
	uint8_t *owner = calloc((size_t)ops * 4 + 8, 1); /* by key */
	struct csq_line *own[2] = {csq_line_new(1), csq_line_new(2)};
	struct csq_line *b = csq_line_new_borrowing(3);
	uint64_t next = 1, key;
	size_t len = 0, pos;
	int i;

	(void)state;
	for (op = 0; op < ops; op++) {
		if (rng(3) == 0 && len > 0) { /* leaves: b first */
			pos = rng(4) == 0 ? len - 1 : (size_t)rng(len);
			key = model[pos];
			assert_ptr_equal(csq_line_remove(b, key), val(key));
			assert_ptr_equal(csq_line_remove(own[owner[key]], key),
			                 val(key));
			memmove(&model[pos], &model[pos + 1],
			        (len - pos - 1) * sizeof(*model));
			len--;
		} else if (next < (uint64_t)ops * 4) {
			key = rng(4) == 0 ? 1 + rng(next) : next + rng(3);
			pos = model_find(model, len, key, &found);
			if (found)
				continue;
			owner[key] = (uint8_t)rng(2);
			assert_int_equal(csq_line_insert_pair(own[owner[key]],
			                                      b, key, val(key)),
			                 pos + 1);
			memmove(&model[pos + 1], &model[pos],
			        (len - pos) * sizeof(*model));
			model[pos] = key;
			len++;
			if (key >= next)
				next = key + 1;
		}
		assert_int_equal(csq_line_check(b), 0);
		assert_int_equal(csq_line_len(b), len);
		assert_int_equal(csq_line_len(own[0]) + csq_line_len(own[1]),
		                 len);
		if (op % 1000 == 0)
			assert_line_is(b, model, len);
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(csq_line_check(own[i]), 0);
	assert_line_is(b, model, len);
	assert_true(len > 0);
	csq_line_free(b); /* with keys in it: frees none of their nodes */
	csq_line_free(own[0]);
	csq_line_free(own[1]);
	free(owner);
	free(model);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_empty, setup),
	    cmocka_unit_test_setup(test_random_order_ranks, setup),
	    cmocka_unit_test_setup(test_remove_positions, setup),
	    cmocka_unit_test_setup(test_edge_keys, setup),
	    cmocka_unit_test_setup(test_fifo_shape, setup),
	    cmocka_unit_test_setup(test_random_model, setup),
	    cmocka_unit_test_setup(test_queue_model, setup),
	    cmocka_unit_test_setup(test_borrowing_pair, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
