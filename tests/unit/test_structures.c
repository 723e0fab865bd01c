/*
 * The data structures under the matcher, each against a simple model in a
 * long randomized run: the waiting line (skiplist with spans), the indexed
 * heap (deadlines, free servicers) and the dict.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dict.h"
#include "heap.h"
#include "line.h"

static uint64_t rng = 0x853c49e6748fea9bULL;

static uint64_t
rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
test_line_basics(void **state)
{
	struct csq_line *l = csq_line_new();
	int v[5];

	(void)state;
	assert_null(csq_line_first(l));
	assert_null(csq_line_nth(l, 0));
	assert_int_equal(csq_line_rank(l, 7), 0);
	assert_null(csq_line_remove(l, 7));
	csq_line_insert(l, 30, &v[3]);
	csq_line_insert(l, 10, &v[1]);
	csq_line_insert(l, 20, &v[2]);
	assert_int_equal(csq_line_len(l), 3);
	assert_int_equal(csq_line_rank(l, 10), 1);
	assert_int_equal(csq_line_rank(l, 30), 3);
	assert_int_equal(csq_line_rank(l, 25), 0);
	assert_ptr_equal(csq_line_node_value(csq_line_first(l)), &v[1]);
	assert_int_equal(csq_line_node_key(csq_line_nth(l, 1)), 20);
	assert_null(csq_line_nth(l, 3));
	assert_ptr_equal(csq_line_remove(l, 20), &v[2]);
	assert_int_equal(csq_line_rank(l, 30), 2);
	assert_int_equal(csq_line_node_key(csq_line_next(csq_line_first(l))),
	                 30);
	assert_null(csq_line_next(csq_line_nth(l, 1)));
	assert_int_equal(csq_line_check(l), 0);
	csq_line_free(l);
}

/* 20,000 random inserts and removes against a sorted array. */
static void
test_line_random(void **state)
{
	enum { OPS = 20000, KEYS = 3000 };
	uint64_t *model = calloc(KEYS, sizeof(*model));
	struct csq_line *l = csq_line_new();
	struct csq_line_node *n;
	size_t len = 0, i, j;
	uint64_t key;
	int op;

	(void)state;
	for (op = 0; op < OPS; op++) {
		key = 1 + rnd(KEYS * 4);
		for (i = 0; i < len && model[i] != key; i++)
			;
		if (i == len && len < KEYS && rnd(3) != 0) {
			csq_line_insert(l, key, (void *)(uintptr_t)key);
			model[len++] = key;
			qsort(model, len, sizeof(*model), u64_cmp);
		} else if (i < len) {
			assert_ptr_equal(csq_line_remove(l, key),
			                 (void *)(uintptr_t)key);
			model[i] = model[--len];
			qsort(model, len, sizeof(*model), u64_cmp);
		} else
			assert_null(csq_line_remove(l, key));
		assert_int_equal(csq_line_len(l), len);
		if (op % 97 == 0 || op > OPS - 5) {
			assert_int_equal(csq_line_check(l), 0);
			for (i = 0, n = csq_line_first(l); i < len;
			     i++, n = csq_line_next(n)) {
				assert_non_null(n);
				assert_int_equal(csq_line_node_key(n),
				                 model[i]);
				assert_int_equal(csq_line_rank(l, model[i]),
				                 i + 1);
				assert_ptr_equal(csq_line_nth(l, i), n);
			}
			assert_null(n);
		}
		j = len ? rnd(len) : 0;
		if (len)
			assert_int_equal(csq_line_rank(l, model[j]), j + 1);
	}
	csq_line_free(l);
	free(model);
}

struct item {
	struct csq_heap_node node;
	int in;
};

/* Top is always the least (key, tie); update and remove anywhere. */
static void
test_heap_random(void **state)
{
	enum { N = 500, OPS = 20000 };
	struct item *items = calloc(N, sizeof(*items));
	struct csq_heap h;
	struct csq_heap_node *top;
	size_t i, best, len = 0;
	int op;

	(void)state;
	csq_heap_init(&h);
	for (i = 0; i < N; i++)
		csq_heap_node_init(&items[i].node);
	assert_null(csq_heap_top(&h));
	for (op = 0; op < OPS; op++) {
		i = rnd(N);
		switch (rnd(3)) {
		case 0:
		case 1: /* insert or move, with many equal keys */
			len += !items[i].in;
			items[i].in = 1;
			csq_heap_set(&h, &items[i].node, rnd(50), rnd(1000));
			break;
		case 2:
			len -= items[i].in;
			items[i].in = 0;
			csq_heap_remove(&h, &items[i].node);
			break;
		}
		assert_int_equal(h.len, len);
		best = N;
		for (i = 0; i < N; i++) {
			assert_int_equal(csq_heap_contains(&items[i].node),
			                 items[i].in);
			if (items[i].in)
				assert_ptr_equal(h.nodes[items[i].node.index],
				                 &items[i].node);
			if (items[i].in &&
			    (best == N ||
			     items[i].node.key < items[best].node.key ||
			     (items[i].node.key == items[best].node.key &&
			      items[i].node.tie < items[best].node.tie)))
				best = i;
		}
		top = csq_heap_top(&h);
		if (best == N)
			assert_null(top);
		else {
			assert_int_equal(top->key, items[best].node.key);
			assert_int_equal(top->tie, items[best].node.tie);
		}
	}
	csq_heap_free(&h);
	free(items);
}

static void
count_entry(void *arg, const char *key, size_t len, void *val)
{
	size_t *seen = arg;

	(void)key, (void)len;
	seen[(uintptr_t)val]++;
}

/* 100k keys in and out: the table grows and shrinks, nothing is lost. */
static void
test_dict(void **state)
{
	enum { N = 100000 };
	struct csq_dict *d = csq_dict_new(42);
	size_t *seen = calloc(N + 1, sizeof(*seen));
	char key[32];
	size_t i;

	(void)state;
	assert_null(csq_dict_get(d, "x", 1));
	for (i = 1; i <= N; i++) {
		snprintf(key, sizeof(key), "user-%zu", i);
		assert_null(
		    csq_dict_put(d, key, strlen(key), (void *)(uintptr_t)i));
	}
	assert_int_equal(csq_dict_len(d), N);
	assert_ptr_equal(csq_dict_put(d, "user-7", 6, (void *)(uintptr_t)7),
	                 (void *)(uintptr_t)7);
	csq_dict_each(d, count_entry, seen);
	for (i = 1; i <= N; i++)
		assert_int_equal(seen[i], 1);
	/* Prefixes and embedded NULs are different keys. */
	assert_null(csq_dict_get(d, "user-1\0", 7));
	assert_null(csq_dict_get(d, "user-", 5));
	assert_ptr_equal(csq_dict_get(d, "user-1", 6), (void *)(uintptr_t)1);
	for (i = 1; i <= N; i += 2) {
		snprintf(key, sizeof(key), "user-%zu", i);
		assert_ptr_equal(csq_dict_del(d, key, strlen(key)),
		                 (void *)(uintptr_t)i);
	}
	assert_null(csq_dict_del(d, "user-1", 6));
	for (i = 1; i <= N; i++) {
		snprintf(key, sizeof(key), "user-%zu", i);
		if (i % 2)
			assert_null(csq_dict_get(d, key, strlen(key)));
		else
			assert_ptr_equal(csq_dict_get(d, key, strlen(key)),
			                 (void *)(uintptr_t)i);
	}
	for (i = 2; i <= N; i += 2) {
		snprintf(key, sizeof(key), "user-%zu", i);
		csq_dict_del(d, key, strlen(key));
	}
	assert_int_equal(csq_dict_len(d), 0);
	/* A long key (channel names are not ids). */
	memset(key, 'k', sizeof(key));
	csq_dict_put(d, key, sizeof(key), seen);
	assert_ptr_equal(csq_dict_get(d, key, sizeof(key)), seen);
	csq_dict_free(d);
	free(seen);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_line_basics),
	    cmocka_unit_test(test_line_random),
	    cmocka_unit_test(test_heap_random),
	    cmocka_unit_test(test_dict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
