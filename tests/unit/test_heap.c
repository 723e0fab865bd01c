/*
 * The indexed min-heap: (key, tie) order, repositioning up and down,
 * removal from anywhere, and a randomized run against a model in which
 * the heap property and every node's index are checked after each step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "heap.h"
#include "scale.h"

#define RANDOM_ITEMS   300
#define RANDOM_OPS     10000 /* scaled (scale.h), to no fewer than: */
#define RANDOM_OPS_MIN 1000

static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t
rng(uint64_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state % n;
}

/* An object that carries its heap node, as users and servicers do. */
struct item {
	int id;
	struct csq_heap_node node;
	int in; /* the model: in the heap or not */
};

static int
node_less(const struct csq_heap_node *a, const struct csq_heap_node *b)
{
	return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

/* The heap property, and that every node knows where it is. */
static void
assert_heap_valid(const struct csq_heap *h)
{
	size_t i;

	assert_true(h->len <= h->cap);
	for (i = 0; i < h->len; i++) {
		assert_int_equal(h->nodes[i]->index, i);
		if (i > 0)
			assert_false(
			    node_less(h->nodes[i], h->nodes[(i - 1) / 2]));
	}
}

static struct item *
top_item(const struct csq_heap *h)
{
	struct csq_heap_node *n = csq_heap_top(h);

	return n != NULL ? csq_container_of(n, struct item, node) : NULL;
}

static void
test_empty(void **state)
{
	struct csq_heap h;
	struct item a;

	(void)state;
	csq_heap_init(&h);
	csq_heap_node_init(&a.node);
	assert_null(csq_heap_top(&h));
	assert_int_equal(a.node.index, CSQ_HEAP_NONE);
	assert_false(csq_heap_contains(&a.node));
	csq_heap_remove(&h, &a.node); /* not in the heap: nothing happens */
	assert_int_equal(h.len, 0);
	csq_heap_free(&h);
	csq_heap_free(&h); /* free leaves an empty heap behind */
	assert_null(csq_heap_top(&h));
}

/* Equal keys come out by tie, ascending. */
static void
test_tie_order(void **state)
{
	struct item it[4];
	struct csq_heap h;
	int i;

	(void)state;
	csq_heap_init(&h);
	for (i = 0; i < 4; i++) {
		it[i].id = i;
		csq_heap_node_init(&it[i].node);
	}
	csq_heap_set(&h, &it[0].node, 5, 30);
	csq_heap_set(&h, &it[1].node, 5, 10);
	csq_heap_set(&h, &it[2].node, 5, 20);
	csq_heap_set(&h, &it[3].node, 6, 0);
	assert_int_equal(top_item(&h)->id, 1);
	csq_heap_remove(&h, &it[1].node);
	assert_false(csq_heap_contains(&it[1].node));
	assert_int_equal(top_item(&h)->id, 2);
	csq_heap_remove(&h, &it[2].node);
	assert_int_equal(top_item(&h)->id, 0);
	csq_heap_remove(&h, &it[0].node);
	assert_int_equal(top_item(&h)->id, 3);
	csq_heap_remove(&h, &it[3].node);
	assert_null(csq_heap_top(&h));
	csq_heap_free(&h);
}

/* set on a node already in the heap moves it up or down. */
static void
test_reposition(void **state)
{
	enum { N = 100 };
	struct item it[N];
	struct csq_heap h;
	int i;

	(void)state;
	csq_heap_init(&h);
	for (i = 0; i < N; i++) {
		it[i].id = i;
		csq_heap_node_init(&it[i].node);
		csq_heap_set(&h, &it[i].node, 1000 + (uint64_t)i, 0);
	}
	assert_int_equal(h.len, N);
	assert_int_equal(top_item(&h)->id, 0);
	csq_heap_set(&h, &it[77].node, 1, 0); /* up to the top */
	assert_heap_valid(&h);
	assert_int_equal(h.len, N);
	assert_int_equal(top_item(&h)->id, 77);
	csq_heap_set(&h, &it[77].node, 5000, 0); /* down to a leaf */
	assert_heap_valid(&h);
	assert_int_equal(top_item(&h)->id, 0);
	csq_heap_set(&h, &it[0].node, 1000, 0); /* unchanged */
	assert_heap_valid(&h);
	assert_int_equal(top_item(&h)->id, 0);
	/* A larger tie alone does not pass a smaller key... */
	csq_heap_set(&h, &it[0].node, 1000, 1);
	assert_int_equal(top_item(&h)->id, 0);
	/* ...but on an equal key, (1001, 0) goes before (1001, 1). */
	csq_heap_set(&h, &it[0].node, 1001, 1);
	assert_heap_valid(&h);
	assert_int_equal(top_item(&h)->id, 1);
	csq_heap_free(&h);
}

/* Popping everything is a heap sort; removal from the middle too. */
static void
test_pop_sorted(void **state)
{
	enum { N = 2000 };
	struct item *it = calloc(N, sizeof(*it));
	struct csq_heap_node *n, *prev = NULL;
	struct csq_heap h;
	size_t i, popped = 0;

	(void)state;
	csq_heap_init(&h);
	for (i = 0; i < N; i++) {
		it[i].id = (int)i;
		csq_heap_node_init(&it[i].node);
		csq_heap_set(&h, &it[i].node, rng(100), rng(1000));
	}
	for (i = 0; i < N; i += 7) /* a few from anywhere */
		csq_heap_remove(&h, &it[i].node);
	assert_heap_valid(&h);
	while ((n = csq_heap_top(&h)) != NULL) {
		if (prev != NULL)
			assert_false(node_less(n, prev));
		csq_heap_remove(&h, n);
		assert_int_equal(n->index, CSQ_HEAP_NONE);
		prev = n;
		popped++;
	}
	assert_int_equal(popped, N - (N + 6) / 7);
	csq_heap_free(&h);
	free(it);
}

/* The least (key, tie) among the items the model says are in. */
static struct item *
model_min(struct item *it, size_t n)
{
	struct item *best = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		if (it[i].in &&
		    (best == NULL || node_less(&it[i].node, &best->node)))
			best = &it[i];
	return best;
}

/* 10,000 set / update / remove / pop operations against a model. */
static void
test_random_model(void **state)
{
	struct item *it = calloc(RANDOM_ITEMS, sizeof(*it)), *m, *t;
	struct csq_heap h;
	size_t i, len = 0;
	int op, ops = (int)scale_steps(RANDOM_OPS, RANDOM_OPS_MIN);

	(void)state;
	csq_heap_init(&h);
	for (i = 0; i < RANDOM_ITEMS; i++) {
		it[i].id = (int)i;
		csq_heap_node_init(&it[i].node);
	}
	for (op = 0; op < ops; op++) {
		i = rng(RANDOM_ITEMS);
		switch (rng(5)) {
		case 0: /* set: insert or update, many equal keys */
		case 1:
			len += !it[i].in;
			it[i].in = 1;
			csq_heap_set(&h, &it[i].node, rng(64), rng(4));
			break;
		case 2: /* nudge the key up or down, same tie */
			len += !it[i].in;
			it[i].in = 1;
			csq_heap_set(&h, &it[i].node,
			             rng(2) ? it[i].node.key + rng(8)
			                    : it[i].node.key / 2,
			             it[i].node.tie);
			break;
		case 3: /* remove anywhere, maybe absent */
			len -= it[i].in;
			it[i].in = 0;
			csq_heap_remove(&h, &it[i].node);
			break;
		case 4: /* pop */
			m = model_min(it, RANDOM_ITEMS);
			t = top_item(&h);
			if (m == NULL) {
				assert_null(t);
				break;
			}
			assert_non_null(t);
			m = t; /* equal (key, tie) may be another item */
			m->in = 0;
			len--;
			csq_heap_remove(&h, &m->node);
			break;
		}
		assert_int_equal(h.len, len);
		assert_heap_valid(&h);
		for (i = 0; i < RANDOM_ITEMS; i++) {
			assert_int_equal(csq_heap_contains(&it[i].node),
			                 it[i].in);
			if (it[i].in)
				assert_ptr_equal(h.nodes[it[i].node.index],
				                 &it[i].node);
		}
		m = model_min(it, RANDOM_ITEMS);
		t = top_item(&h);
		if (m == NULL)
			assert_null(t);
		else {
			assert_non_null(t);
			assert_int_equal(t->node.key, m->node.key);
			assert_int_equal(t->node.tie, m->node.tie);
		}
	}
	csq_heap_free(&h);
	free(it);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_tie_order),
	    cmocka_unit_test(test_reposition),
	    cmocka_unit_test(test_pop_sorted),
	    cmocka_unit_test(test_random_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
