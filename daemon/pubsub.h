/*
 * Pub/sub as Redis does it: channels by exact name and Redis glob patterns,
 * messages pushed straight into subscribers' output buffers.
 *
 * Every subscription is one object, linked twice: into its client's list
 * (in the order of subscribing) and into its channel's subscribers, or the
 * list of all patterns. Each client finds its own by name in a hash table,
 * so that a subscribe, an unsubscribe and a client's teardown cost the same
 * however many subscriptions the client has. Publishing costs O(subscribers
 * of the channel + patterns), as in Redis.
 */
#ifndef CSQD_PUBSUB_H
#define CSQD_PUBSUB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

struct client;
struct csq_dict;
struct pubsub_sub;
TAILQ_HEAD(pubsub_sub_list, pubsub_sub);

/* What one client is subscribed to; lives inside struct client, zeroed
 * until its first subscription. */
struct pubsub_subs {
	struct pubsub_sub_list channels, patterns; /* in order of subscribing */
	struct csq_dict *bychannel, *bypattern;    /* name -> subscription */
	size_t nchannels, npatterns;
};

struct pubsub;

/* seed: of the tables of channels and subscriptions; random (server.c). */
struct pubsub *pubsub_new(uint64_t seed);
void pubsub_free(struct pubsub *);

/* Each returns 1 when it changed something, 0 when it was already so. A
 * name is len bytes, any bytes. */
int pubsub_subscribe(struct pubsub *, struct client *, const char *ch,
                     size_t len);
int pubsub_unsubscribe(struct pubsub *, struct client *, const char *ch,
                       size_t len);
int pubsub_psubscribe(struct pubsub *, struct client *, const char *pat,
                      size_t len);
int pubsub_punsubscribe(struct pubsub *, struct client *, const char *pat,
                        size_t len);
/* Drops every subscription of the client (its teardown, RESET). */
void pubsub_forget(struct pubsub *, struct client *);

size_t pubsub_count(const struct pubsub_subs *);
/* 1 when the client holds the pattern already. */
int pubsub_has_pattern(const struct pubsub_subs *, const char *pat, size_t len);
/* Channels with a subscriber, and pattern subscriptions (INFO). */
size_t pubsub_nchannels(const struct pubsub *);
size_t pubsub_npatterns(const struct pubsub *);
/* The client's oldest channel (pattern != 0: pattern), for UNSUBSCRIBE
 * without arguments; NULL when it has none. */
const char *pubsub_first(const struct pubsub_subs *, int pattern, size_t *len);

/* 1 when a publish to ch would reach anybody (a subscriber of ch, or any
 * pattern at all): lets the publisher skip building a message. */
int pubsub_wanted(const struct pubsub *, const char *ch, size_t chlen);
/* Sends msg to every subscriber of ch and of a matching pattern. */
void pubsub_publish(struct pubsub *, const char *ch, size_t chlen,
                    const char *msg, size_t len);

#endif
