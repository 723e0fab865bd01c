/*
 * A hash table from byte-string keys (ids, channel names) to values,
 * with separate chaining and a seeded hash. The dict copies keys; it never
 * owns values. Grows (and shrinks) by doubling.
 */
#ifndef CSQ_DICT_H
#define CSQ_DICT_H

#include <stddef.h>
#include <stdint.h>

struct csq_dict;

struct csq_dict *csq_dict_new(uint64_t seed); /* dies on OOM */
void csq_dict_free(struct csq_dict *);
size_t csq_dict_len(const struct csq_dict *);
void *csq_dict_get(const struct csq_dict *, const char *key, size_t len);
/* Adds or replaces; returns the previous value or NULL. */
void *csq_dict_put(struct csq_dict *, const char *key, size_t len, void *val);
/* Removes; returns the value or NULL. */
void *csq_dict_del(struct csq_dict *, const char *key, size_t len);

/* Calls fn for every entry; fn must not change the dict. */
void csq_dict_each(const struct csq_dict *,
                   void (*fn)(void *arg, const char *key, size_t len,
                              void *val),
                   void *arg);

#endif
