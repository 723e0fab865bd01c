/*
 * A hash table with separate chaining. Each entry carries a copy of its key
 * and the key's hash, so a resize rehashes nothing and a lookup compares
 * bytes only on a full hash match.
 */
#include "dict.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define DICT_MIN_BUCKETS 16
#define DICT_SHRINK_AT   8 /* shrink when len < buckets / this */

struct dict_entry {
	struct dict_entry *next;
	void *val;
	uint64_t hash;
	size_t len;
	char key[];
};

struct csq_dict {
	struct dict_entry **buckets;
	size_t nbuckets; /* a power of two */
	size_t len;
	uint64_t seed;
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

static uint64_t
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
	return dict_mix(h ^ w ^ ((uint64_t)len << 56));
}

struct csq_dict *
csq_dict_new(uint64_t seed)
{
	struct csq_dict *d = csq_xcalloc(1, sizeof(*d));

	d->nbuckets = DICT_MIN_BUCKETS;
	d->buckets = csq_xcalloc(d->nbuckets, sizeof(*d->buckets));
	d->seed = seed;
	return d;
}

void
csq_dict_free(struct csq_dict *d)
{
	struct dict_entry *e, *next;
	size_t i;

	if (d == NULL)
		return;
	for (i = 0; i < d->nbuckets; i++)
		for (e = d->buckets[i]; e != NULL; e = next) {
			next = e->next;
			free(e);
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
	struct dict_entry **b = csq_xcalloc(nbuckets, sizeof(*b));
	struct dict_entry *e, *next;
	size_t i, slot;

	for (i = 0; i < d->nbuckets; i++)
		for (e = d->buckets[i]; e != NULL; e = next) {
			next = e->next;
			slot = e->hash & (nbuckets - 1);
			e->next = b[slot];
			b[slot] = e;
		}
	free(d->buckets);
	d->buckets = b;
	d->nbuckets = nbuckets;
}

/* The link that points at key's entry, or at the NULL ending its chain. */
static struct dict_entry **
dict_find(const struct csq_dict *d, const char *key, size_t len, uint64_t hash)
{
	struct dict_entry **p = &d->buckets[hash & (d->nbuckets - 1)];

	for (; *p != NULL; p = &(*p)->next)
		if ((*p)->hash == hash && (*p)->len == len &&
		    memcmp((*p)->key, key, len) == 0)
			break;
	return p;
}

void *
csq_dict_get(const struct csq_dict *d, const char *key, size_t len)
{
	struct dict_entry *e = *dict_find(d, key, len, dict_hash(d, key, len));

	return e != NULL ? e->val : NULL;
}

void *
csq_dict_put(struct csq_dict *d, const char *key, size_t len, void *val)
{
	uint64_t hash = dict_hash(d, key, len);
	struct dict_entry **p = dict_find(d, key, len, hash), *e;
	void *old;

	if ((e = *p) != NULL) {
		old = e->val;
		e->val = val;
		return old;
	}
	e = csq_xmalloc(sizeof(*e) + len);
	e->next = NULL;
	e->val = val;
	e->hash = hash;
	e->len = len;
	memcpy(e->key, key, len);
	*p = e;
	if (++d->len > d->nbuckets)
		dict_resize(d, d->nbuckets * 2);
	return NULL;
}

void *
csq_dict_del(struct csq_dict *d, const char *key, size_t len)
{
	struct dict_entry **p = dict_find(d, key, len, dict_hash(d, key, len));
	struct dict_entry *e = *p;
	void *val;

	if (e == NULL)
		return NULL;
	*p = e->next;
	val = e->val;
	free(e);
	if (--d->len < d->nbuckets / DICT_SHRINK_AT &&
	    d->nbuckets > DICT_MIN_BUCKETS)
		dict_resize(d, d->nbuckets / 2);
	return val;
}

void
csq_dict_each(const struct csq_dict *d,
              void (*fn)(void *arg, const char *key, size_t len, void *val),
              void *arg)
{
	struct dict_entry *e, *next;
	size_t i;

	for (i = 0; i < d->nbuckets; i++)
		for (e = d->buckets[i]; e != NULL; e = next) {
			next = e->next;
			fn(arg, e->key, e->len, e->val);
		}
}
