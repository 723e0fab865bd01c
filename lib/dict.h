/*
 * A hash table from byte-string keys (ids, channel names) to values,
 * with separate chaining and a seeded hash. Grows (and shrinks) by doubling,
 * a few buckets at each change, so that no single change walks the table.
 *
 * Two kinds, one implementation. A copying dict (csq_dict_new) copies keys
 * into entries of its own and never owns values: put, del. An intrusive
 * dict (csq_dict_new_intrusive) allocates nothing per entry: each object
 * embeds a struct csq_dict_node and keeps its own key at a fixed offset, so
 * that the key is stored once, in the object: add, remove. get, len and each
 * work on both; on an intrusive dict the value is the object itself.
 */
#ifndef CSQ_DICT_H
#define CSQ_DICT_H

#include <stddef.h>
#include <stdint.h>

/* The link of an object in an intrusive dict; len is its key's length. */
struct csq_dict_node {
	struct csq_dict_node *next;
	uint32_t hash;
	uint32_t len;
};

struct csq_dict;

struct csq_dict *csq_dict_new(uint64_t seed); /* dies on OOM */
/* The objects embed their node at node_off and their key at key_off. */
struct csq_dict *csq_dict_new_intrusive(uint64_t seed, size_t node_off,
                                        size_t key_off);
void csq_dict_free(struct csq_dict *); /* never frees an intrusive object */
size_t csq_dict_len(const struct csq_dict *);
/* A resize is under way: two tables live, the old one emptying (tests). */
int csq_dict_resizing(const struct csq_dict *);
/* The most keys in one chain (tests: what the seed does). */
size_t csq_dict_longest_chain(const struct csq_dict *);
void *csq_dict_get(const struct csq_dict *, const char *key, size_t len);
/* Starts fetching the bucket key is looked up in, and changes nothing:
 * a lookup of key made a little later (a few hundred instructions) finds
 * it in cache. A hint only: a change between them costs the miss again. */
void csq_dict_prefetch(const struct csq_dict *, const char *key, size_t len);

/* Copying dicts. Adds or replaces; returns the previous value or NULL. */
void *csq_dict_put(struct csq_dict *, const char *key, size_t len, void *val);
/* Removes; returns the value or NULL. */
void *csq_dict_del(struct csq_dict *, const char *key, size_t len);

/* Intrusive dicts. Adds obj, whose key (len bytes, at most UINT32_MAX) is in
 * no object of the dict yet; remove takes out an object that is in it. */
void csq_dict_add(struct csq_dict *, void *obj, size_t len);
void csq_dict_remove(struct csq_dict *, void *obj);

/* Calls fn for every entry; fn must not change the dict. */
void csq_dict_each(const struct csq_dict *,
                   void (*fn)(void *arg, const char *key, size_t len,
                              void *val),
                   void *arg);

#endif
