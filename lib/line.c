/*
 * The waiting line: a skiplist with spans, after Redis's t_zset.c. Each
 * link knows how many nodes it skips (its span), so the rank of a key and
 * the node at a rank come out of the same O(log n) descent as a search.
 * The level of a new node is drawn from a per-line xorshift generator,
 * seeded by the caller: with a seed that is known, a client could tell
 * which of its users got the tall nodes, and by taking those out of line
 * leave a line of short ones, a list to walk. The levels change no answer.
 */
#include "line.h"

#include <stdlib.h>

#include "util.h"

#define LINE_MAX_LEVEL 32
#define LINE_SEED      UINT64_C(0x2545f4914f6cdd1d)

/*
 * A link is 16 bytes whether its span is 32 or 64 bits wide (the pointer
 * pads it), so the span is 64 bits and can never overflow. A node of level
 * 1 (three in four nodes) is 32 bytes.
 */
struct line_link {
	struct csq_line_node *forward;
	uint64_t span; /* nodes from this one to forward, or to the end */
};

struct csq_line_node {
	uint64_t key;
	void *value;
	struct line_link level[];
};

/*
 * tail[i]: the last node at level i (the header when there is none), so
 * that an insert after the last key, a queue's usual arrival (its key is
 * its arrival time), links in without a descent: the descent to the tail
 * was most of an ENQUEUE's cost, two of them for a user with NEEDS
 * (docs/benchmarks.md, "Skills").
 */
struct csq_line {
	struct csq_line_node *header;
	uint64_t length;
	int level;
	uint64_t rng;
	int borrows; /* its nodes live in another's (csq_line_insert_pair) */
	struct csq_line_node *tail[LINE_MAX_LEVEL];
};

static size_t
line_node_size(int level)
{
	return sizeof(struct csq_line_node) +
	       (size_t)level * sizeof(struct line_link);
}

static struct csq_line_node *
line_node_new(int level, uint64_t key, void *value)
{
	struct csq_line_node *n;

	n = csq_xmalloc(line_node_size(level));
	n->key = key;
	n->value = value;
	return n;
}

struct csq_line *
csq_line_new(uint64_t seed)
{
	struct csq_line *l = csq_xmalloc(sizeof(*l));
	int i;

	l->header = line_node_new(LINE_MAX_LEVEL, 0, NULL);
	for (i = 0; i < LINE_MAX_LEVEL; i++) {
		l->header->level[i].forward = NULL;
		l->header->level[i].span = 0;
		l->tail[i] = l->header;
	}
	l->length = 0;
	l->level = 1;
	l->borrows = 0;
	/* xorshift's one state it never leaves is 0. */
	l->rng = seed ^ LINE_SEED;
	if (l->rng == 0)
		l->rng = LINE_SEED;
	return l;
}

struct csq_line *
csq_line_new_borrowing(uint64_t seed)
{
	struct csq_line *l = csq_line_new(seed);

	l->borrows = 1;
	return l;
}

void
csq_line_free(struct csq_line *l)
{
	struct csq_line_node *n, *next;

	if (l == NULL)
		return;
	if (l->borrows) { /* its nodes are the other lines' to free */
		free(l->header);
		free(l);
		return;
	}
	for (n = l->header; n != NULL; n = next) {
		next = n->level[0].forward;
		free(n);
	}
	free(l);
}

uint64_t
csq_line_len(const struct csq_line *l)
{
	return l->length;
}

/* 1 + the number of heads in a row of a coin with p = 1/4. */
static int
line_random_level(struct csq_line *l)
{
	uint64_t r;
	int level = 1;

	l->rng ^= l->rng << 13;
	l->rng ^= l->rng >> 7;
	l->rng ^= l->rng << 17;
	for (r = l->rng; (r & 3) == 0 && level < LINE_MAX_LEVEL; r >>= 2)
		level++;
	return level;
}

static uint64_t line_link_in(struct csq_line *, struct csq_line_node *x,
                             int level);

struct csq_line_node *
csq_line_insert(struct csq_line *l, uint64_t key, void *value)
{
	int level = line_random_level(l);
	struct csq_line_node *x = line_node_new(level, key, value);

	line_link_in(l, x, level);
	return x;
}

uint64_t
csq_line_insert_rank(struct csq_line *l, uint64_t key, void *value)
{
	int level = line_random_level(l);

	return line_link_in(l, line_node_new(level, key, value), level);
}

/*
 * Both nodes in one allocation, l's first: an ENQUEUE with NEEDS joins its
 * need-line and q->needy, and a second allocation was the largest part of
 * what it cost more than one without (docs/benchmarks.md, "Skills").
 */
uint64_t
csq_line_insert_pair(struct csq_line *l, struct csq_line *b, uint64_t key,
                     void *value)
{
	int level = line_random_level(l), blevel = line_random_level(b);
	size_t size = line_node_size(level);
	struct csq_line_node *x, *y;

	x = csq_xmalloc(size + line_node_size(blevel));
	y = (struct csq_line_node *)((char *)x + size);
	x->key = y->key = key;
	x->value = y->value = value;
	line_link_in(l, x, level);
	return line_link_in(b, y, blevel);
}

/*
 * Links x (of level, its key and value set) in after the last key: the
 * tails are the nodes before it, and the last link of a level spans the
 * nodes after it (to the end), so the link from a tail to the new node
 * spans one more, and a tail above the new node's levels has one more
 * node after it. Returns x's rank, the last.
 */
static uint64_t
line_append(struct csq_line *l, struct csq_line_node *x, int level)
{
	struct csq_line_node *t;
	int i;

	for (i = l->level; i < level; i++)
		l->header->level[i].span = l->length; /* tail[i]: the header */
	if (level > l->level)
		l->level = level;
	for (i = 0; i < level; i++) {
		t = l->tail[i];
		t->level[i].forward = x;
		t->level[i].span++;
		x->level[i].forward = NULL;
		x->level[i].span = 0;
		l->tail[i] = x;
	}
	for (; i < l->level; i++)
		l->tail[i]->level[i].span++;
	return ++l->length;
}

/* Links x (of level, its key, not in l yet, and value set) in; returns the
 * 1-based rank it got, which the descent knows. */
static uint64_t
line_link_in(struct csq_line *l, struct csq_line_node *x, int level)
{
	struct csq_line_node *update[LINE_MAX_LEVEL], *p = l->header;
	/* before: the nodes before x, counted down the descent; rank[i]:
	 * those before update[i] */
	uint64_t rank[LINE_MAX_LEVEL], before = 0, key = x->key;
	int i;

	if (l->length > 0 && l->tail[0]->key < key)
		return line_append(l, x, level);
	for (i = l->level - 1; i >= 0; i--) {
		while (p->level[i].forward != NULL &&
		       p->level[i].forward->key < key) {
			before += p->level[i].span;
			p = p->level[i].forward;
		}
		rank[i] = before;
		update[i] = p;
	}
	if (level > l->level) {
		for (i = l->level; i < level; i++) {
			rank[i] = 0;
			update[i] = l->header;
			update[i]->level[i].span = l->length;
		}
		l->level = level;
	}
	for (i = 0; i < level; i++) {
		x->level[i].forward = update[i]->level[i].forward;
		update[i]->level[i].forward = x;
		x->level[i].span =
		    update[i]->level[i].span - (before - rank[i]);
		update[i]->level[i].span = (before - rank[i]) + 1;
		if (x->level[i].forward == NULL)
			l->tail[i] = x;
	}
	for (i = level; i < l->level; i++)
		update[i]->level[i].span++;
	l->length++;
	return before + 1;
}

void *
csq_line_remove(struct csq_line *l, uint64_t key)
{
	struct csq_line_node *update[LINE_MAX_LEVEL], *x = l->header;
	void *value;
	int i;

	/* The head (a match takes the head of a line): the header is
	 * before it at every level, and no other node is read. */
	if (x->level[0].forward != NULL && x->level[0].forward->key == key)
		for (i = 0; i < l->level; i++)
			update[i] = x;
	else
		for (i = l->level - 1; i >= 0; i--) {
			while (x->level[i].forward != NULL &&
			       x->level[i].forward->key < key)
				x = x->level[i].forward;
			update[i] = x;
		}
	x = x->level[0].forward;
	if (x == NULL || x->key != key)
		return NULL;
	for (i = 0; i < l->level; i++) {
		if (l->tail[i] == x)
			l->tail[i] = update[i];
		if (update[i]->level[i].forward == x) {
			update[i]->level[i].span += x->level[i].span - 1;
			update[i]->level[i].forward = x->level[i].forward;
		} else
			update[i]->level[i].span--;
	}
	while (l->level > 1 && l->header->level[l->level - 1].forward == NULL)
		l->level--;
	l->length--;
	value = x->value;
	if (!l->borrows)
		free(x);
	return value;
}

uint64_t
csq_line_rank(const struct csq_line *l, uint64_t key)
{
	const struct csq_line_node *x = l->header;
	uint64_t rank = 0;
	int i;

	for (i = l->level - 1; i >= 0; i--) {
		while (x->level[i].forward != NULL &&
		       x->level[i].forward->key <= key) {
			rank += x->level[i].span;
			x = x->level[i].forward;
		}
		if (x != l->header && x->key == key)
			return rank;
	}
	return 0;
}

uint64_t
csq_line_count_below(const struct csq_line *l, uint64_t key)
{
	const struct csq_line_node *x = l->header;
	uint64_t rank = 0;
	int i;

	if (l->length > 0 && l->tail[0]->key < key)
		return l->length;
	for (i = l->level - 1; i >= 0; i--)
		while (x->level[i].forward != NULL &&
		       x->level[i].forward->key < key) {
			rank += x->level[i].span;
			x = x->level[i].forward;
		}
	return rank;
}

struct csq_line_node *
csq_line_first(const struct csq_line *l)
{
	return l->header->level[0].forward;
}

struct csq_line_node *
csq_line_seek(const struct csq_line *l, uint64_t key)
{
	const struct csq_line_node *x = l->header;
	int i;

	for (i = l->level - 1; i >= 0; i--)
		while (x->level[i].forward != NULL &&
		       x->level[i].forward->key < key)
			x = x->level[i].forward;
	return x->level[0].forward;
}

struct csq_line_node *
csq_line_nth(const struct csq_line *l, uint64_t index)
{
	struct csq_line_node *x = l->header;
	uint64_t traversed = 0, target = index + 1;
	int i;

	if (index >= l->length)
		return NULL;
	for (i = l->level - 1; i >= 0; i--) {
		while (x->level[i].forward != NULL &&
		       traversed + x->level[i].span <= target) {
			traversed += x->level[i].span;
			x = x->level[i].forward;
		}
		if (traversed == target)
			return x;
	}
	return NULL;
}

struct csq_line_node *
csq_line_next(const struct csq_line_node *n)
{
	return n->level[0].forward;
}

uint64_t
csq_line_node_key(const struct csq_line_node *n)
{
	return n->key;
}

void *
csq_line_node_value(const struct csq_line_node *n)
{
	return n->value;
}

/*
 * One walk along level 0, counting positions. At each level, the node that
 * the previous link of that level points at must turn up later in the walk,
 * exactly span positions further on; the last link of a level spans the
 * nodes after it, and the last node met at a level is that level's tail.
 * O(n) plus the total of the node levels.
 */
int
csq_line_check(const struct csq_line *l)
{
	const struct csq_line_node *expect[LINE_MAX_LEVEL], *x;
	const struct csq_line_node *last[LINE_MAX_LEVEL];
	uint64_t from[LINE_MAX_LEVEL], span[LINE_MAX_LEVEL], pos = 0;
	int i;

	if (l->level < 1 || l->level > LINE_MAX_LEVEL)
		return -1;
	if (l->level > 1 && l->header->level[l->level - 1].forward == NULL)
		return -1; /* the level did not come down after a remove */
	for (i = 0; i < LINE_MAX_LEVEL; i++) {
		if (i >= l->level && l->header->level[i].forward != NULL)
			return -1;
		expect[i] = l->header->level[i].forward;
		span[i] = l->header->level[i].span;
		from[i] = 0;
		last[i] = l->header;
	}
	for (x = l->header->level[0].forward; x != NULL;
	     x = x->level[0].forward) {
		pos++;
		if (x->level[0].forward != NULL &&
		    x->level[0].forward->key <= x->key)
			return -1;
		/* A node of level n is the one expected at levels 0..n-1. */
		for (i = 0; i < l->level && expect[i] == x; i++) {
			if (pos - from[i] != span[i])
				return -1;
			expect[i] = x->level[i].forward;
			span[i] = x->level[i].span;
			from[i] = pos;
			last[i] = x;
		}
	}
	if (pos != l->length)
		return -1;
	for (i = 0; i < l->level; i++)
		if (expect[i] != NULL || span[i] != pos - from[i])
			return -1;
	for (i = 0; i < LINE_MAX_LEVEL; i++)
		if (l->tail[i] != last[i])
			return -1; /* the tails that an append links to */
	return 0;
}
