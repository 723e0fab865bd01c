/* An indexed binary min-heap of intrusive nodes, ordered by (key, tie). */
#include "heap.h"

#include <stdlib.h>

#include "util.h"

#define HEAP_MIN_CAP 16

void
csq_heap_init(struct csq_heap *h)
{
	h->nodes = NULL;
	h->len = h->cap = 0;
}

void
csq_heap_free(struct csq_heap *h)
{
	free(h->nodes);
	csq_heap_init(h);
}

void
csq_heap_node_init(struct csq_heap_node *n)
{
	n->key = n->tie = 0;
	n->index = CSQ_HEAP_NONE;
	n->tag = 0;
}

static int
heap_less(const struct csq_heap_node *a, const struct csq_heap_node *b)
{
	return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

static void
heap_place(struct csq_heap *h, struct csq_heap_node *n, size_t i)
{
	h->nodes[i] = n;
	n->index = (uint32_t)i;
}

static void
heap_up(struct csq_heap *h, size_t i)
{
	struct csq_heap_node *n = h->nodes[i];
	size_t parent;

	while (i > 0) {
		parent = (i - 1) / 2;
		if (!heap_less(n, h->nodes[parent]))
			break;
		heap_place(h, h->nodes[parent], i);
		i = parent;
	}
	heap_place(h, n, i);
}

static void
heap_down(struct csq_heap *h, size_t i)
{
	struct csq_heap_node *n = h->nodes[i];
	size_t child;

	for (;;) {
		child = 2 * i + 1;
		if (child >= h->len)
			break;
		if (child + 1 < h->len &&
		    heap_less(h->nodes[child + 1], h->nodes[child]))
			child++;
		if (!heap_less(h->nodes[child], n))
			break;
		heap_place(h, h->nodes[child], i);
		i = child;
	}
	heap_place(h, n, i);
}

void
csq_heap_set(struct csq_heap *h, struct csq_heap_node *n, uint64_t key,
             uint64_t tie)
{
	n->key = key;
	n->tie = tie;
	if (n->index != CSQ_HEAP_NONE) {
		heap_up(h, n->index);
		heap_down(h, n->index);
		return;
	}
	if (h->len >= CSQ_HEAP_MAX)
		abort(); /* 4 billion deadlines: memory ran out long before */
	if (h->len == h->cap) {
		h->cap = h->cap ? h->cap * 2 : HEAP_MIN_CAP;
		h->nodes = csq_xrealloc(h->nodes, h->cap * sizeof(*h->nodes));
	}
	heap_place(h, n, h->len++);
	heap_up(h, n->index);
}

void
csq_heap_remove(struct csq_heap *h, struct csq_heap_node *n)
{
	size_t i = n->index;
	struct csq_heap_node *last;

	if (n->index == CSQ_HEAP_NONE)
		return;
	n->index = CSQ_HEAP_NONE;
	last = h->nodes[--h->len];
	if (i == h->len)
		return;
	heap_place(h, last, i);
	heap_up(h, i);
	heap_down(h, last->index);
}

struct csq_heap_node *
csq_heap_top(const struct csq_heap *h)
{
	return h->len > 0 ? h->nodes[0] : NULL;
}

static void
heap_each_upto(const struct csq_heap *h, size_t i, uint64_t key,
               void (*fn)(void *, struct csq_heap_node *), void *arg)
{
	/* A child's key is never below its parent's: a subtree whose root
	 * is past key holds nothing for fn. Depth O(log n): recursion. */
	while (i < h->len && h->nodes[i]->key <= key) {
		fn(arg, h->nodes[i]);
		heap_each_upto(h, 2 * i + 1, key, fn, arg);
		i = 2 * i + 2;
	}
}

void
csq_heap_each_upto(const struct csq_heap *h, uint64_t key,
                   void (*fn)(void *arg, struct csq_heap_node *), void *arg)
{
	heap_each_upto(h, 0, key, fn, arg);
}
