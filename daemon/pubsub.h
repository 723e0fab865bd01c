/*
 * Pub/sub as Redis does it: channels by exact name and glob patterns
 * (fnmatch), messages pushed straight into subscribers' output buffers.
 * Publishing costs O(subscribers of the channel + patterns).
 */
#ifndef CSQD_PUBSUB_H
#define CSQD_PUBSUB_H

#include <stddef.h>

struct client;
struct pubsub_channel;

/* What one client is subscribed to; lives inside struct client. */
struct pubsub_subs {
	struct pubsub_channel **channels;
	size_t nchannels, capchannels;
	char **patterns;
	size_t npatterns, cappatterns;
};

struct pubsub;

struct pubsub *pubsub_new(void);
void pubsub_free(struct pubsub *);

/* Each returns 1 when it changed something, 0 when it was already so. */
int pubsub_subscribe(struct pubsub *, struct client *, const char *ch,
                     size_t len);
int pubsub_unsubscribe(struct pubsub *, struct client *, const char *ch,
                       size_t len);
int pubsub_psubscribe(struct pubsub *, struct client *, const char *pat,
                      size_t len);
int pubsub_punsubscribe(struct pubsub *, struct client *, const char *pat,
                        size_t len);
/* Drops every subscription of the client (its teardown). */
void pubsub_forget(struct pubsub *, struct client *);

size_t pubsub_count(const struct pubsub_subs *);
/* Name of the i-th channel / pattern of a client, for UNSUBSCRIBE all. */
const char *pubsub_channel_name(const struct pubsub_subs *, size_t i,
                                size_t *len);

/* 1 when a publish to ch would reach anybody (a subscriber of ch, or any
 * pattern at all): lets the publisher skip building a message. */
int pubsub_wanted(const struct pubsub *, const char *ch, size_t chlen);
/* Sends msg to every subscriber of ch and of a matching pattern. */
void pubsub_publish(struct pubsub *, const char *ch, size_t chlen,
                    const char *msg, size_t len);

#endif
