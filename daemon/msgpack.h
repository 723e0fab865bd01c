/*
 * The MessagePack of csq's events as csq.so publishes them (the form the
 * Lua engine's cmsgpack wrote, kept): a reader, for csqd's subscription
 * (redis_subscription.c), and the writer the module uses. Only integers,
 * strings, arrays, nil and booleans; a float is refused.
 */
#ifndef CSQD_MSGPACK_H
#define CSQD_MSGPACK_H

#include <stddef.h>
#include <stdint.h>

#include "event_fact.h"
#include "wire.h"

/* The bytes still to read; every reader moves p past what it read, and
 * leaves it where it was on an error. */
struct msgpack_in {
	const unsigned char *p, *end;
};

void msgpack_init(struct msgpack_in *, const void *buf, size_t len);
/* 0 and the value, or -1 when the next value is not of that type. */
int msgpack_int(struct msgpack_in *, int64_t *);
int msgpack_str(struct msgpack_in *, const char **s, size_t *len);
int msgpack_array(struct msgpack_in *, uint32_t *n);
/* The next value as a fact's field: an integer, a string, or absent for
 * nil and false. -1 for anything else. */
int msgpack_fact_value(struct msgpack_in *, struct csq_fact_value *);

/* The writer (the Redis module's events): each value in its smallest
 * form; an absent fact field is nil. */
void msgpack_put_int(struct csq_wbuf *, int64_t);
void msgpack_put_str(struct csq_wbuf *, const char *, size_t);
void msgpack_put_array(struct csq_wbuf *, uint32_t n);
void msgpack_put_fact_value(struct csq_wbuf *, const struct csq_fact_value *);
/* A fact as csq.so publishes it, [kind, v[0], ..., v[n-1]]: the same
 * bytes as msgpack_put_array, msgpack_put_str and msgpack_put_fact_value
 * one after the other, with one reserve. */
void msgpack_put_fact(struct csq_wbuf *, const char *kind, size_t klen,
                      const struct csq_fact_value *v, size_t n);

#endif
