/*
 * A hash table with separate chaining. Each node carries its key's length
 * and (the low 32 bits of) its hash, so a resize rehashes nothing and a
 * lookup compares bytes only on a hash match. The dict knows where, from a
 * node, its object and its key are: a copying dict's objects are entries of
 * its own (node, value, key copy); an intrusive dict's are the caller's.
 *
 * A resize is incremental, as Redis's dict does it: the new table is
 * allocated, and each change to the dict after it moves the next
 * DICT_REHASH_STEP chains of the old one, until it is empty. Moving a
 * million users at once walks a million nodes, each a cache miss: 75 ms
 * in which csqd answered nobody (docs/benchmarks.md). While the two
 * tables live, a key is in the old one if its old bucket has not been
 * moved yet, and in the new one otherwise; every lookup and insert
 * follows that rule (dict_bucket).
 */
#include "dict.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define DICT_MIN_BUCKETS 16
#define DICT_SHRINK_AT   8 /* shrink when len < buckets / this */
#define DICT_REHASH_STEP 1 /* old chains moved per change while resizing */

/* An entry of a copying dict. */
struct dict_entry {
	struct csq_dict_node node;
	void *val;
	char key[];
};

struct csq_dict {
	struct csq_dict_node **buckets;
	size_t nbuckets;            /* a power of two */
	struct csq_dict_node **old; /* while resizing: the table emptied */
	size_t nold;                /* its buckets, a power of two */
	size_t moved;               /* old's buckets below this are moved */
	size_t len;
	uint64_t seed;
	int intrusive;
	size_t node_off; /* object to its node */
	size_t key_off;  /* object to its key */
};

static uint64_t
dict_mix(uint64_t x)
{
	x ^= x >> 32;
	x *= UINT64_C(0xd6e8feb86659fd93);
	x ^= x >> 32;
	x *= UINT64_C(0xd6e8feb86659fd93);
	x ^= x >> 32;
	return x;
}

static uint32_t
dict_hash(const struct csq_dict *d, const char *key, size_t len)
{
	uint64_t h = d->seed ^ ((uint64_t)len * UINT64_C(0x9e3779b97f4a7c15));
	uint64_t w;
	unsigned char *tail;

	for (; len >= sizeof(w); key += sizeof(w), len -= sizeof(w)) {
		memcpy(&w, key, sizeof(w));
		h = dict_mix(h ^ w);
	}
	/* The last 0 to 7 bytes, in w's first bytes as one memcpy of len
	 * would put them, by copies of fixed sizes: a copy of a variable
	 * size was a third of a short key's hash. */
	w = 0;
	tail = (unsigned char *)&w;
	if (len & 4)
		memcpy(tail, key, 4);
	if (len & 2)
		memcpy(tail + (len & 4), key + (len & 4), 2);
	if (len & 1)
		tail[len - 1] = (unsigned char)key[len - 1];
	return (uint32_t)dict_mix(h ^ w ^ ((uint64_t)len << 56));
}

static void *
dict_obj(const struct csq_dict *d, const struct csq_dict_node *n)
{
	return (char *)(uintptr_t)n - d->node_off;
}

static struct csq_dict_node *
dict_node(const struct csq_dict *d, void *obj)
{
	return (struct csq_dict_node *)(void *)((char *)obj + d->node_off);
}

static const char *
dict_key(const struct csq_dict *d, const struct csq_dict_node *n)
{
	return (const char *)dict_obj(d, n) + d->key_off;
}

/* What get returns for a node: the value, or the object itself. */
static void *
dict_val(const struct csq_dict *d, const struct csq_dict_node *n)
{
	if (d->intrusive)
		return dict_obj(d, n);
	return ((struct dict_entry *)dict_obj(d, n))->val;
}

static struct csq_dict *
dict_new(uint64_t seed, int intrusive, size_t node_off, size_t key_off)
{
	struct csq_dict *d = csq_xcalloc(1, sizeof(*d));

	d->nbuckets = DICT_MIN_BUCKETS;
	d->buckets = csq_xcalloc(d->nbuckets, sizeof(*d->buckets));
	d->seed = seed;
	d->intrusive = intrusive;
	d->node_off = node_off;
	d->key_off = key_off;
	return d;
}

struct csq_dict *
csq_dict_new(uint64_t seed)
{
	return dict_new(seed, 0, offsetof(struct dict_entry, node),
	                offsetof(struct dict_entry, key));
}

struct csq_dict *
csq_dict_new_intrusive(uint64_t seed, size_t node_off, size_t key_off)
{
	return dict_new(seed, 1, node_off, key_off);
}

void
csq_dict_free(struct csq_dict *d)
{
	struct csq_dict_node *n, *next;
	size_t i;

	if (d == NULL)
		return;
	if (!d->intrusive) {
		for (i = d->moved; i < d->nold; i++)
			for (n = d->old[i]; n != NULL; n = next) {
				next = n->next;
				free(dict_obj(d, n));
			}
		for (i = 0; i < d->nbuckets; i++)
			for (n = d->buckets[i]; n != NULL; n = next) {
				next = n->next;
				free(dict_obj(d, n));
			}
	}
	free(d->old);
	free(d->buckets);
	free(d);
}

size_t
csq_dict_len(const struct csq_dict *d)
{
	return d->len;
}

int
csq_dict_resizing(const struct csq_dict *d)
{
	return d->old != NULL;
}

/* Where the chain of a key with this hash is now. */
static struct csq_dict_node **
dict_bucket(const struct csq_dict *d, uint32_t hash)
{
	if (d->old != NULL && (hash & (d->nold - 1)) >= d->moved)
		return &d->old[hash & (d->nold - 1)];
	return &d->buckets[hash & (d->nbuckets - 1)];
}

/* Starts a resize; the old table empties as the dict changes. */
static void
dict_resize(struct csq_dict *d, size_t nbuckets)
{
	d->old = d->buckets;
	d->nold = d->nbuckets;
	d->moved = 0;
	d->buckets = csq_xcalloc(nbuckets, sizeof(*d->buckets));
	d->nbuckets = nbuckets;
}

/*
 * Moves the next DICT_REHASH_STEP chains of a resize, passing over up to
 * ten times as many empty buckets (after a shrink starts, most are).
 * Called at the start of every change, never between a lookup and the
 * change it leads to, whose link would then point into a moved chain. A
 * grow of n buckets ends within n / DICT_REHASH_STEP changes, before the
 * dict can need the next one.
 */
static void
dict_rehash_step(struct csq_dict *d)
{
	struct csq_dict_node *n, *next;
	size_t chains = DICT_REHASH_STEP, empty = 10 * DICT_REHASH_STEP, slot;

	while (d->old != NULL && chains > 0) {
		n = d->old[d->moved];
		if (n == NULL && empty-- == 0)
			return;
		if (n != NULL)
			chains--;
		for (; n != NULL; n = next) {
			next = n->next;
			slot = n->hash & (d->nbuckets - 1);
			n->next = d->buckets[slot];
			d->buckets[slot] = n;
		}
		d->old[d->moved] = NULL;
		if (++d->moved == d->nold) {
			free(d->old);
			d->old = NULL;
			d->nold = d->moved = 0;
		}
	}
	/* The head of the chain the next change moves, fetched now while
	 * the caller works, not then: a user table that grows as a queue
	 * fills spent 6 to 8 % of redis-server's time in this function,
	 * waiting for it, and 4 % with this (docs/benchmarks.md, issue
	 * 34's direct row). A hint only: a NULL is harmless. */
	if (d->old != NULL)
		__builtin_prefetch(d->old[d->moved], 1);
}

/* The link that points at key's node, or at the NULL ending its chain. */
static struct csq_dict_node **
dict_find(const struct csq_dict *d, const char *key, size_t len, uint32_t hash)
{
	struct csq_dict_node **p = dict_bucket(d, hash);

	for (; *p != NULL; p = &(*p)->next)
		if ((*p)->hash == hash && (*p)->len == len &&
		    memcmp(dict_key(d, *p), key, len) == 0)
			break;
	return p;
}

void *
csq_dict_get(const struct csq_dict *d, const char *key, size_t len)
{
	struct csq_dict_node *n =
	    *dict_find(d, key, len, dict_hash(d, key, len));

	return n != NULL ? dict_val(d, n) : NULL;
}

void
csq_dict_prefetch(const struct csq_dict *d, const char *key, size_t len)
{
	__builtin_prefetch(dict_bucket(d, dict_hash(d, key, len)));
}

/* Links n, with its hash and len set, at the end of chain p. */
static void
dict_link(struct csq_dict *d, struct csq_dict_node **p, struct csq_dict_node *n)
{
	n->next = NULL;
	*p = n;
	if (++d->len > d->nbuckets && d->old == NULL)
		dict_resize(d, d->nbuckets * 2);
}

static void
dict_unlink(struct csq_dict *d, struct csq_dict_node **p)
{
	*p = (*p)->next;
	if (--d->len < d->nbuckets / DICT_SHRINK_AT &&
	    d->nbuckets > DICT_MIN_BUCKETS && d->old == NULL)
		dict_resize(d, d->nbuckets / 2);
}

void *
csq_dict_put(struct csq_dict *d, const char *key, size_t len, void *val)
{
	uint32_t hash = dict_hash(d, key, len);
	struct csq_dict_node **p;
	struct dict_entry *e;
	void *old;

	dict_rehash_step(d);
	p = dict_find(d, key, len, hash);
	if (*p != NULL) {
		e = dict_obj(d, *p);
		old = e->val;
		e->val = val;
		return old;
	}
	e = csq_xmalloc(sizeof(*e) + len);
	e->node.hash = hash;
	e->node.len = (uint32_t)len;
	e->val = val;
	memcpy(e->key, key, len);
	dict_link(d, p, &e->node);
	return NULL;
}

void *
csq_dict_del(struct csq_dict *d, const char *key, size_t len)
{
	struct csq_dict_node **p;
	struct dict_entry *e;
	void *val;

	dict_rehash_step(d);
	p = dict_find(d, key, len, dict_hash(d, key, len));
	if (*p == NULL)
		return NULL;
	e = dict_obj(d, *p);
	val = e->val;
	dict_unlink(d, p);
	free(e);
	return val;
}

void
csq_dict_add(struct csq_dict *d, void *obj, size_t len)
{
	struct csq_dict_node *n = dict_node(d, obj);
	const char *key = (const char *)obj + d->key_off;
	struct csq_dict_node **p;

	dict_rehash_step(d);
	n->hash = dict_hash(d, key, len);
	n->len = (uint32_t)len;
	p = dict_bucket(d, n->hash);
	while (*p != NULL)
		p = &(*p)->next;
	dict_link(d, p, n);
}

void
csq_dict_remove(struct csq_dict *d, void *obj)
{
	struct csq_dict_node *n = dict_node(d, obj);
	struct csq_dict_node **p;

	dict_rehash_step(d);
	p = dict_bucket(d, n->hash);
	while (*p != n)
		p = &(*p)->next;
	dict_unlink(d, p);
}

void
csq_dict_each(const struct csq_dict *d,
              void (*fn)(void *arg, const char *key, size_t len, void *val),
              void *arg)
{
	struct csq_dict_node *n, *next;
	size_t i;

	for (i = d->moved; i < d->nold; i++)
		for (n = d->old[i]; n != NULL; n = next) {
			next = n->next;
			fn(arg, dict_key(d, n), n->len, dict_val(d, n));
		}
	for (i = 0; i < d->nbuckets; i++)
		for (n = d->buckets[i]; n != NULL; n = next) {
			next = n->next;
			fn(arg, dict_key(d, n), n->len, dict_val(d, n));
		}
}

static size_t
chain_longest(struct csq_dict_node *const *b, size_t from, size_t to)
{
	const struct csq_dict_node *n;
	size_t i, len, longest = 0;

	for (i = from; i < to; i++) {
		for (len = 0, n = b[i]; n != NULL; n = n->next)
			len++;
		if (len > longest)
			longest = len;
	}
	return longest;
}

size_t
csq_dict_longest_chain(const struct csq_dict *d)
{
	size_t old = chain_longest(d->old, d->moved, d->nold);
	size_t cur = chain_longest(d->buckets, 0, d->nbuckets);

	return old > cur ? old : cur;
}
