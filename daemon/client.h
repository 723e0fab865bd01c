/*
 * One client connection: its buffers, its parser, its authentication and
 * subscriptions, and one state machine with one teardown path.
 */
#ifndef CSQD_CLIENT_H
#define CSQD_CLIENT_H

#include <stdint.h>
#include <sys/queue.h>

#include <event2/util.h>

#include "config.h"
#include "engine.h"
#include "pubsub.h"
#include "resp.h"

struct server;
struct evbuffer;

/*
 * The reply of a request that cannot be written yet because replies of
 * earlier requests are still to come: a client may have several engine
 * calls in flight (the Redis engine answers later), and replies leave in
 * request order. Slots are flushed into out, in order, as they are done.
 */
struct client_slot {
	TAILQ_ENTRY(client_slot) entry;
	struct evbuffer *buf; /* made when a reply must wait in it */
	int filled;           /* buf was given out since it was last emptied */
	int done;
};

TAILQ_HEAD(client_slot_list, client_slot);

#define CLIENT_ADDR_MAX 128 /* "[v6]:port" or a Unix socket's "path:0" */

enum client_state {
	CLIENT_ACTIVE,   /* reading requests, writing replies */
	CLIENT_CLOSING,  /* a last reply is being flushed; input ignored */
	CLIENT_DRAINING, /* write side shut down; reading until EOF */
	CLIENT_DEAD,     /* torn down; freed when the last reference goes */
	CLIENT_STATE_MAX
};

/*
 * The bufferevent owns the socket, but neither reads (rev reads into in, a
 * fixed-size read with no FIONREAD first) nor, mostly, writes: replies go
 * into out, a plain buffer, and client_flush writes them at once when a
 * batch of requests is done, as Redis writes in beforeSleep. Only what the
 * socket does not take, what is held for the journal's commit and what
 * backpressure keeps moves to the bufferevent's output, with EV_WRITE
 * enabled just for that. Saves two epoll_ctl a request, and the
 * bufferevent's callback on every reply piece.
 */
struct client {
	TAILQ_ENTRY(client) entry;
	struct server *server;
	struct bufferevent *bev;
	struct evbuffer *in;
	struct evbuffer *out; /* replies not yet handed to the socket */
	struct evbuffer *cur; /* where replies go now: out, or a slot's */
	struct client_slot_list slots;  /* replies waiting for earlier ones */
	struct client_slot *cur_slot;   /* the slot being filled, unclaimed */
	struct client_slot_list spares; /* kept for the next ones */
	int nspares;
	struct event *rev;   /* readable: read into in */
	struct event *flush; /* deferred write of pushed messages */
	/* In server.pushed while pushed messages wait for flush. */
	TAILQ_ENTRY(client) pushed_entry;
	int pushed;
	struct resp_parser *parser;
	struct resp_request req;
	struct event *linger; /* bounds CLIENT_DRAINING */
	struct event *wake;   /* deferred work: next batch, or a kill */
	struct event *admit;  /* auth_timeout: authenticated by then */
	const char *killed;   /* set when it must go at the next turn */
	enum client_state state;
	uint64_t id;
	int refs; /* the connection itself + engine calls in flight */
	int authed;
	enum config_role role;     /* once authed: the user's (auth.h) */
	char user[CSQ_ID_MAX + 1]; /* "default", or a name of users */
	/* The ids the user may act for, copied at AUTH (auth.h); NULL:
	 * any. */
	char (*ids)[CONFIG_ID_GLOB_MAX];
	int nids;
	int proto;         /* RESP version, 2 or 3 (HELLO) */
	int inflight;      /* engine calls not answered yet */
	int held_req;      /* req parsed, waits for the calls to end */
	int in_paused;     /* not reading: held requests fill the input */
	int tls;           /* over TLS: bev is an openssl bufferevent, no rev */
	int handshaken;    /* TLS: the handshake is done */
	int reading;       /* inside client_process: no re-entry */
	int held;          /* output held for the journal's commit */
	size_t peak;       /* most output ever waiting (client_trim) */
	size_t making;     /* a reply being made in slices (SERVICERS) */
	size_t input_held; /* its part of server.input_total */
	char *name;        /* CLIENT SETNAME */
	struct pubsub_subs subs;
	/* Inside MULTI: the commands queued (multi.h); else NULL. */
	struct multi *multi;
	/* What CLIENT LIST shows (command_client.c): the peer's and the
	 * local address, when it came, its last command and when. */
	char addr[CLIENT_ADDR_MAX], laddr[CLIENT_ADDR_MAX];
	uint64_t created_ms, last_ms;
	const char *last_cmd, *last_sub; /* the command table's names */
	/* A client without a connection (client_new_local): no bev, no
	 * socket, not in the server's list; done is called when its
	 * replies are whole. */
	int local;
	void (*local_done)(struct client *, void *);
	void *local_arg;
};

TAILQ_HEAD(client_list, client);

/* tls: the connection came to a TLS port (server.tls's context). */
struct client *client_new(struct server *, evutil_socket_t fd, int tls);
/*
 * A client with no connection, for a request that comes another way (the
 * HTTP API, http_api.h): it runs through command_dispatch as a
 * connection's would, its replies (RESP3) gather in client_output, and
 * done(c, arg) is called from the loop once no engine call is in flight
 * and nothing is held for the journal. addr names the peer in logs.
 * client_local_free ends it (its calls in flight then answer nobody).
 */
struct client *client_new_local(struct server *, const char *addr,
                                void (*done)(struct client *, void *),
                                void *arg);
/* 1 when the replies of a local client are whole. */
int client_local_whole(const struct client *);
void client_local_free(struct client *);
/* Held output may leave (server.c's release): for a local client,
 * done comes. */
void client_local_release(struct client *);
/* Held output may leave (server.c's release), for a connection: an
 * active one's goes out now, as client_flush would have sent it, from
 * c->out where it waited with nothing ahead of it; what the socket does
 * not take, or an error, is left to the bufferevent. */
void client_release_output(struct client *);

/* Tears the connection down now (errors, EOF, stop); why is logged. */
void client_close(struct client *, const char *why);
/* Sends what is in the output buffer, then closes gracefully. */
void client_close_after_reply(struct client *);
void client_ref(struct client *);
void client_unref(struct client *);
/* The trim that client_unref schedules after a client with big buffers. */
void client_trim_cb(evutil_socket_t, short, void *);
/* Weighs all clients' output against max_output_memory (client.c). */
void client_weigh_cb(evutil_socket_t, short, void *);
/* Closes the clients holding the most input while all clients' input is
 * over max_input_memory (a reload may lower it). */
void client_input_limit(struct server *);

/* c goes at the next turn of the loop, for why (logged then). */
void client_kill(struct client *, const char *why);
/* Output not yet sent: the replies, what waits in the socket's buffer,
 * and a reply being made in slices. */
size_t client_pending(struct client *);
/* The bytes of a reply being made in slices (issue 37): they count
 * against max_output_memory as if they waited to be sent. */
void client_output_making(struct client *, size_t bytes);

struct evbuffer *client_output(struct client *);
struct pubsub_subs *client_subs(struct client *);
int client_subscribed(const struct client *);

/* A pushed message: begin gives the buffer or NULL (client gone). */
struct evbuffer *client_push_begin(struct client *);
void client_push_end(struct client *);
/*
 * The messages pushed so far go out now rather than at the end of the
 * loop turn, as client_push_end would send them: the Redis engine calls
 * this once a reply's events are emitted, so that a `matched` leaves
 * before csqd reads the events' echo or anything else that the same
 * epoll_wait found ready. A client whose requests are being run keeps
 * its write for the turn's end.
 */
void client_flush_pushed(struct server *);

/* An engine call has answered: go on with the requests waiting. */
void client_resume(struct client *);

/*
 * A call that the engine will answer later takes a slot for its reply: the
 * one opened for the request being run, or a new one at the end. Writing
 * the reply: client_slot_write(c, slot) makes client_output the slot's
 * buffer, client_slot_done puts it back and sends what is in order.
 */
struct client_slot *client_slot_claim(struct client *);
void client_slot_write(struct client *, struct client_slot *);
void client_slot_done(struct client *, struct client_slot *);

#endif
