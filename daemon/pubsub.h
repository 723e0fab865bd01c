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

/*
 * Whether the pattern is a prefix and one '*' at its end, nothing else
 * special ("user:*"); pubsub_glob then matches it with a memcmp, as
 * csq_glob would (a glob's walk was 70 instructions a channel an event,
 * a pattern subscriber's every event), and any other with csq_glob.
 */
int pubsub_glob_prefix(const char *pat, size_t len);
int pubsub_glob(const char *pat, size_t plen, int prefix, const char *s,
                size_t slen);

/*
 * The message of msg on ch as a subscriber reads it (pat NULL: of the
 * channel; else of the pattern pat), written whole into f in RESP2; send
 * adds it to out in one piece for a client of protocol proto, or in the
 * pieces resp_push and resp_bulk write when it did not fit (f->over).
 * The bytes are the same either way. A channel's message is written once
 * for all its subscribers.
 */
struct resp_buf;
struct evbuffer;
void pubsub_message_frame(struct resp_buf *f, const char *pat, size_t patlen,
                          const char *ch, size_t chlen, const char *msg,
                          size_t len);
void pubsub_message_send(struct resp_buf *f, struct evbuffer *out, int proto,
                         const char *pat, size_t patlen, const char *ch,
                         size_t chlen, const char *msg, size_t len);

#endif
