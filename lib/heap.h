/*
 * An indexed binary min-heap of intrusive nodes: the node lives inside the
 * object it orders (a user's deadline, a servicer's place in a queue's list
 * of free servicers) and remembers its index, so update and remove are
 * O(log n) with no search. Ties on key break on the tie field, ascending, so
 * that the order is total and deterministic.
 */
#ifndef CSQ_HEAP_H
#define CSQ_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define CSQ_HEAP_NONE UINT32_MAX /* index of a node that is in no heap */
#define CSQ_HEAP_MAX  (UINT32_MAX - 1)

/*
 * 24 bytes: a waiting user embeds one, and its size counts a million
 * times. tag is the owner's, never read or written by the heap (csq's
 * deadlines keep their kind there).
 */
struct csq_heap_node {
	uint64_t key;
	uint64_t tie;
	uint32_t index; /* CSQ_HEAP_NONE when not in a heap */
	uint32_t tag;
};

struct csq_heap {
	struct csq_heap_node **nodes;
	size_t len, cap;
};

void csq_heap_init(struct csq_heap *);
void csq_heap_free(struct csq_heap *); /* frees the array, not the nodes */
/* Out of every heap, key, tie and tag 0. */
void csq_heap_node_init(struct csq_heap_node *);
/* Inserts, or repositions when already in this heap; dies on OOM. */
void csq_heap_set(struct csq_heap *, struct csq_heap_node *, uint64_t key,
                  uint64_t tie);
void csq_heap_remove(struct csq_heap *, struct csq_heap_node *);
struct csq_heap_node *csq_heap_top(const struct csq_heap *);
/*
 * Calls fn for every node whose key is <= key, in no particular order,
 * visiting only those nodes and their children: O(k) for k of them. fn
 * must not change the heap.
 */
void csq_heap_each_upto(const struct csq_heap *, uint64_t key,
                        void (*fn)(void *arg, struct csq_heap_node *),
                        void *arg);
static inline int
csq_heap_contains(const struct csq_heap_node *n)
{
	return n->index != CSQ_HEAP_NONE;
}

#define csq_container_of(ptr, type, member)                                    \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif
