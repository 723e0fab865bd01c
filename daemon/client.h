/*
 * One client connection: its buffers, its parser, its authentication and
 * subscriptions, and one state machine with one teardown path.
 */
#ifndef CSQD_CLIENT_H
#define CSQD_CLIENT_H

#include <stdint.h>
#include <sys/queue.h>

#include <event2/util.h>

#include "engine.h"
#include "pubsub.h"
#include "resp.h"

struct server;
struct evbuffer;

enum client_state {
	CLIENT_ACTIVE,   /* reading requests, writing replies */
	CLIENT_CLOSING,  /* a last reply is being flushed; input ignored */
	CLIENT_DRAINING, /* write side shut down; reading until EOF */
	CLIENT_DEAD,     /* torn down; freed when the last reference goes */
	CLIENT_STATE_MAX
};

struct client {
	TAILQ_ENTRY(client) entry;
	struct server *server;
	struct bufferevent *bev;
	struct resp_parser *parser;
	struct resp_request req;
	struct event *linger; /* bounds CLIENT_DRAINING */
	struct event *wake;   /* deferred work: next batch, or a kill */
	const char *killed;   /* set when it must go at the next turn */
	enum client_state state;
	uint64_t id;
	int refs; /* the connection itself + engine calls in flight */
	int authed;
	int inflight;            /* an engine call has not answered yet */
	enum csq_opcode pending; /* what it was */
	int reading;             /* inside client_process: no re-entry */
	int paused;              /* output too large: not reading requests */
	int held;                /* output held for the journal's commit */
	char *name;              /* CLIENT SETNAME */
	struct pubsub_subs subs;
};

TAILQ_HEAD(client_list, client);

struct client *client_new(struct server *, evutil_socket_t fd);
/* Tears the connection down now (errors, EOF, stop); why is logged. */
void client_close(struct client *, const char *why);
/* Sends what is in the output buffer, then closes gracefully. */
void client_close_after_reply(struct client *);
void client_ref(struct client *);
void client_unref(struct client *);

struct evbuffer *client_output(struct client *);
struct pubsub_subs *client_subs(struct client *);
int client_subscribed(const struct client *);

/* A pushed message: begin gives the buffer or NULL (client gone). */
struct evbuffer *client_push_begin(struct client *);
void client_push_end(struct client *);

/* An engine call has answered: go on with the requests waiting. */
void client_resume(struct client *);

#endif
