/*
 * A hash table with separate chaining. Each node carries its key's length
 * and (the low 32 bits of) its hash, so a resize rehashes nothing and a
 * lookup compares bytes only on a hash match. The dict knows where, from a
 * node, its object and its key are: a copying dict's objects are entries of
 * its own (node, value, key copy); an intrusive dict's are the caller's.
 */
#include "dict.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define DICT_MIN_BUCKETS 16
#define DICT_SHRINK_AT   8 /* shrink when len < buckets / this */

/* An entry of a copying dict. */
struct dict_entry {
	struct csq_dict_node node;
	void *val;
	char key[];
};

struct csq_dict {
	struct csq_dict_node **buckets;
	size_t nbuckets; /* a power of two */
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

	for (; len >= sizeof(w); key += sizeof(w), len -= sizeof(w)) {
		memcpy(&w, key, sizeof(w));
		h = dict_mix(h ^ w);
	}
	w = 0;
	memcpy(&w, key, len);
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
	if (!d->intrusive)
		for (i = 0; i < d->nbuckets; i++)
			for (n = d->buckets[i]; n != NULL; n = next) {
				next = n->next;
				free(dict_obj(d, n));
			}
	free(d->buckets);
	free(d);
}

size_t
csq_dict_len(const struct csq_dict *d)
{
	return d->len;
}

static void
dict_resize(struct csq_dict *d, size_t nbuckets)
{
	struct csq_dict_node **b = csq_xcalloc(nbuckets, sizeof(*b));
	struct csq_dict_node *n, *next;
	size_t i, slot;

	for (i = 0; i < d->nbuckets; i++)
		for (n = d->buckets[i]; n != NULL; n = next) {
			next = n->next;
			slot = n->hash & (nbuckets - 1);
			n->next = b[slot];
			b[slot] = n;
		}
	free(d->buckets);
	d->buckets = b;
	d->nbuckets = nbuckets;
}

/* The link that points at key's node, or at the NULL ending its chain. */
static struct csq_dict_node **
dict_find(const struct csq_dict *d, const char *key, size_t len, uint32_t hash)
{
	struct csq_dict_node **p = &d->buckets[hash & (d->nbuckets - 1)];

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

/* Links n, with its hash and len set, at the end of chain p. */
static void
dict_link(struct csq_dict *d, struct csq_dict_node **p, struct csq_dict_node *n)
{
	n->next = NULL;
	*p = n;
	if (++d->len > d->nbuckets)
		dict_resize(d, d->nbuckets * 2);
}

static void
dict_unlink(struct csq_dict *d, struct csq_dict_node **p)
{
	*p = (*p)->next;
	if (--d->len < d->nbuckets / DICT_SHRINK_AT &&
	    d->nbuckets > DICT_MIN_BUCKETS)
		dict_resize(d, d->nbuckets / 2);
}

void *
csq_dict_put(struct csq_dict *d, const char *key, size_t len, void *val)
{
	uint32_t hash = dict_hash(d, key, len);
	struct csq_dict_node **p = dict_find(d, key, len, hash);
	struct dict_entry *e;
	void *old;

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
	struct csq_dict_node **p =
	    dict_find(d, key, len, dict_hash(d, key, len));
	struct dict_entry *e;
	void *val;

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

	n->hash = dict_hash(d, key, len);
	n->len = (uint32_t)len;
	p = &d->buckets[n->hash & (d->nbuckets - 1)];
	while (*p != NULL)
		p = &(*p)->next;
	dict_link(d, p, n);
}

void
csq_dict_remove(struct csq_dict *d, void *obj)
{
	struct csq_dict_node *n = dict_node(d, obj);
	struct csq_dict_node **p = &d->buckets[n->hash & (d->nbuckets - 1)];

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

	for (i = 0; i < d->nbuckets; i++)
		for (n = d->buckets[i]; n != NULL; n = next) {
			next = n->next;
			fn(arg, dict_key(d, n), n->len, dict_val(d, n));
		}
}
