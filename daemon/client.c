/*
 * Client connections. A connection moves through the states of enum
 * client_state, only forward, only through client_set_state(); every way
 * out goes through client_close(), and the memory goes only when no engine
 * call in flight still refers to it (client_unref).
 */
#include "client.h"

#include <assert.h>
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "auth.h"
#include "command.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "multi.h"
#include "server.h"
#include "tls.h"
#include "util.h"

#define CLIENT_BATCH           1024 /* requests per turn: no client starves others */
#define CLIENT_OUTPUT_HARD_MAX (256 * 1024 * 1024) /* unread replies */
#define CLIENT_PUBSUB_HARD_MAX (32 * 1024 * 1024)  /* a subscriber too slow */
/* Past this much output waiting (or less: client_weigh), a client has all
 * clients' output weighed against max_output_memory, at most once per
 * CLIENT_WEIGH_MS. */
#define CLIENT_WEIGH_OVER    (64 * 1024)
#define CLIENT_WEIGH_MS      10
#define CLIENT_LINGER_S      2     /* after a protocol error, wait for EOF */
#define CLIENT_READ_CHUNK    16384 /* bytes per read(2), as Redis */
#define CLIENT_INFLIGHT_MAX  128   /* engine calls in flight per client */
#define CLIENT_KEEPALIVE_S   300   /* TCP keepalive's idle time, as Redis */
#define CLIENT_TRIM_OVER     (8 * 1024 * 1024) /* buffers worth a trim */
#define CLIENT_TRIM_DELAY_MS 200           /* the trim waits for others to go */
#define CLIENT_COPY_UNDER    4096          /* output copied, not moved, below */
#define CLIENT_INPUT_PAUSE   (1024 * 1024) /* held requests: stop reading */
#define CLIENT_WHY_MAX       256           /* why a TLS connection failed */
#define CLIENT_ADMIT_LOG_MS  10000 /* auth_timeout's closes: a line at most */
#define CLIENT_SLOT_SPARES   16 /* slots a connection keeps, buffers and all */

static const char *const client_state_names[] = {
    "active",
    "closing",
    "draining",
    "dead",
};

static void client_process(struct client *);
static void client_drain(struct client *);
static void client_weigh(struct client *, size_t pending);
static void client_input_account(struct client *);
static void client_reading(struct client *, int on);
static void client_got_input(struct client *);
static void client_unpush(struct client *);

static void client_log(enum log_level, const struct client *, const char *key,
                       const char *value, const char *, ...)
    __attribute__((format(printf, 5, 6)));

/* A line about one connection: the message, then its id and the peer's
 * address as fields, and key=value when key is not NULL. */
static void
client_log(enum log_level level, const struct client *c, const char *key,
           const char *value, const char *fmt, ...)
{
	struct log_kv kv[] = {
	    LOG_NUM("client", c->id),
	    LOG_STR("addr", c->addr),
	    LOG_STR(key, value),
	};
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_kv(level, msg, kv, key != NULL ? 3 : 2);
}

static void
client_set_state(struct client *c, enum client_state state)
{
	assert(state < CLIENT_STATE_MAX && state >= c->state);
	client_log(LOG_LVL_DEBUG, c, NULL, NULL, "client state %s -> %s",
	           client_state_names[c->state], client_state_names[state]);
	/* nclients counts the connections that are served, not those on
	 * their way out, so that max_clients admits new ones at once. */
	if (c->state == CLIENT_ACTIVE && state != CLIENT_ACTIVE)
		c->server->nclients--;
	c->state = state;
}

struct evbuffer *
client_output(struct client *c)
{
	return c->cur;
}

/* Output not yet sent: the replies and what waits in the bufferevent,
 * and a reply being made. */
size_t
client_pending(struct client *c)
{
	return evbuffer_get_length(c->out) +
	       evbuffer_get_length(bufferevent_get_output(c->bev)) + c->making;
}

/* client_pending, noted in c->peak when it is the most so far. */
static size_t
client_pending_peak(struct client *c)
{
	size_t n = client_pending(c);

	if (n > c->peak)
		c->peak = n;
	return n;
}

/* Nothing left to send, and no reply still to come. */
static int
client_quiet(struct client *c)
{
	return client_pending(c) == 0 && TAILQ_EMPTY(&c->slots);
}

/* Slots. */

/*
 * A slot's buffer is made only when a reply must wait in it, behind an
 * earlier one (client_slot_write); a connection keeps up to
 * CLIENT_SLOT_SPARES slots, buffers and all, for its next calls. On the
 * Redis engine every call takes a slot: its calloc, an evbuffer's and
 * their frees were 1,600 instructions a match, 4 % of csqd's
 * (docs/benchmarks.md, "csqd's CPU a match on the Redis engine"); a
 * client with calls pipelined (the match's feeder) made and freed a slot
 * and a buffer for every call but its first while one spare was kept,
 * 600 instructions a match ("csqd's replies and messages written in one
 * piece").
 */
static struct client_slot *
client_slot_open(struct client *c)
{
	struct client_slot *s = TAILQ_FIRST(&c->spares);

	if (s != NULL) {
		TAILQ_REMOVE(&c->spares, s, entry);
		c->nspares--;
	} else
		s = csq_xcalloc(1, sizeof(*s));
	s->done = 0;
	TAILQ_INSERT_TAIL(&c->slots, s, entry);
	return s;
}

static void
client_slot_drop(struct client_slot *s)
{
	if (s->buf != NULL)
		evbuffer_free(s->buf);
	free(s);
}

/* A slot's buffer is empty once its replies went to out (a buffer that
 * still holds some is a client's that is going: dropped). */
static void
client_slot_free(struct client *c, struct client_slot *s)
{
	TAILQ_REMOVE(&c->slots, s, entry);
	if (c->nspares < CLIENT_SLOT_SPARES &&
	    (!s->filled || evbuffer_get_length(s->buf) == 0)) {
		s->filled = 0;
		TAILQ_INSERT_HEAD(&c->spares, s, entry);
		c->nspares++;
	} else
		client_slot_drop(s);
}

/* What s holds goes to out. A kept slot's buffer, given out or not, is
 * looked at only when it was (filled): 2 calls a reply less. */
static void
client_slot_empty(struct client *c, struct client_slot *s)
{
	if (!s->filled)
		return;
	if (evbuffer_get_length(s->buf) > 0)
		evbuffer_add_buffer(c->out, s->buf);
	s->filled = 0;
}

struct client_slot *
client_slot_claim(struct client *c)
{
	struct client_slot *s = c->cur_slot;

	if (s == NULL)
		return client_slot_open(c);
	c->cur_slot = NULL;
	return s;
}

/* The first slot's reply goes straight to out, after what the slot holds
 * already: every reply before it is there. */
void
client_slot_write(struct client *c, struct client_slot *s)
{
	if (s == TAILQ_FIRST(&c->slots)) {
		client_slot_empty(c, s);
		c->cur = c->out;
		return;
	}
	if (s->buf == NULL && (s->buf = evbuffer_new()) == NULL)
		fatalx("out of memory");
	s->filled = 1;
	c->cur = s->buf;
}

void
client_slot_done(struct client *c, struct client_slot *s)
{
	c->cur = c->out;
	s->done = 1;
	while ((s = TAILQ_FIRST(&c->slots)) != NULL && s->done) {
		client_slot_empty(c, s);
		client_slot_free(c, s);
	}
}

struct pubsub_subs *
client_subs(struct client *c)
{
	return &c->subs;
}

int
client_subscribed(const struct client *c)
{
	return pubsub_count(&c->subs) > 0;
}

void
client_ref(struct client *c)
{
	c->refs++;
}

/*
 * A client that had megabytes of output waiting (a stalled subscriber, a
 * deep pipeline) leaves them free in the heap when it goes, and glibc
 * keeps them: csqd's resident size would stay at the peak (an audit saw
 * 172 MB with no client left). So the heap is trimmed a moment after such
 * a client goes: one trim for all that go together.
 */
static void
client_trim(struct client *c)
{
	struct timeval tv = {0, CLIENT_TRIM_DELAY_MS * 1000};

	if (c->peak >= CLIENT_TRIM_OVER &&
	    !evtimer_pending(c->server->trim_ev, NULL))
		evtimer_add(c->server->trim_ev, &tv);
}

void
client_trim_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
#ifdef __GLIBC__
	(void)malloc_trim(0);
#endif
}

void
client_unref(struct client *c)
{
	struct client_slot *s;

	if (--c->refs > 0)
		return;
	while ((s = TAILQ_FIRST(&c->slots)) != NULL)
		client_slot_free(c, s);
	while ((s = TAILQ_FIRST(&c->spares)) != NULL) {
		TAILQ_REMOVE(&c->spares, s, entry);
		client_slot_drop(s);
	}
	resp_request_clear(&c->req);
	resp_parser_free(c->parser);
	if (c->in != NULL)
		evbuffer_free(c->in);
	if (c->out != NULL)
		evbuffer_free(c->out);
	free(c->name);
	free(c->ids);
	multi_discard(c);
	client_trim(c);
	free(c);
}

void
client_close(struct client *c, const char *why)
{
	struct server *s = c->server;

	if (c->state == CLIENT_DEAD)
		return;
	client_log(LOG_LVL_DEBUG, c, "why", why, "client closed");
	client_set_state(c, CLIENT_DEAD);
	client_input_account(c);
	pubsub_forget(s->pubsub, c);
	TAILQ_REMOVE(&s->clients, c, entry);
	event_free(c->linger);
	event_free(c->wake);
	event_free(c->admit);
	client_unpush(c);
	event_free(c->flush);
	if (c->rev != NULL)
		event_free(c->rev); /* before the socket closes with the bev */
	bufferevent_free(c->bev);
	c->bev = NULL;
	client_unref(c);
	server_client_gone(s);
}

/* Whether c sent what csqd has not read or not run, or has not yet
 * received all that csqd sent it (the kernel holds some still). */
static int
client_unsettled(struct client *c)
{
	int fd = bufferevent_getfd(c->bev), in = 0, out = 0;

	return evbuffer_get_length(c->in) > 0 ||
	       ioctl(fd, FIONREAD, &in) == -1 || in > 0 ||
	       ioctl(fd, SIOCOUTQ, &out) == -1 || out > 0;
}

/*
 * The write side is done: shut it down and wait a moment for the peer.
 * A close with unread input, or data that arrives after it, makes the
 * kernel send a reset, which destroys what it has not delivered of the
 * replies; so the input is read and dropped until the peer closes too,
 * CLIENT_LINGER_S at most. At a stop, a client that has sent nothing
 * unread and has been delivered every byte is closed at once, so that
 * idle connections do not hold the stop up; any other gets its replies
 * as at any other close, if it reads them within the linger.
 */
static void
client_drain(struct client *c)
{
	struct timeval tv = {CLIENT_LINGER_S, 0};

	if (c->server->stopping && !client_unsettled(c)) {
		client_close(c, "server stopping");
		return;
	}
	client_set_state(c, CLIENT_DRAINING);
	if (c->tls)
		tls_close_notify(c->bev);
	shutdown(bufferevent_getfd(c->bev), SHUT_WR);
	evbuffer_drain(c->in, evbuffer_get_length(c->in));
	client_reading(c, 1);
	evtimer_add(c->linger, &tv);
}

/*
 * Puts what out holds at the end of bout, the output that waits for the
 * socket. A few bytes are copied into the free space of bout's last chain:
 * moved, each flush of a short reply would keep a chain of a kilobyte or
 * more (an audit's client that sent one PING at a time and read nothing
 * made csqd hold 14 times the replies' size). Larger amounts move, without
 * a copy.
 */
static void
client_move_out(struct evbuffer *bout, struct evbuffer *out)
{
	size_t len = evbuffer_get_length(out);
	unsigned char *p;

	if (len >= CLIENT_COPY_UNDER ||
	    (p = evbuffer_pullup(out, (ev_ssize_t)len)) == NULL) {
		evbuffer_add_buffer(bout, out);
		return;
	}
	evbuffer_add(bout, p, len);
	evbuffer_drain(out, len);
}

/*
 * Sends the replies now, unless they must wait for the journal's commit
 * or the record's write (held: server_release lets them go) or behind
 * what the bufferevent still has to write. Held replies with nothing
 * ahead of them stay in c->out, to be written from there as unheld ones
 * are: moved into the bufferevent's buffer, each cost a chain allocated
 * and freed and a copy, most of what the record of the day cost an
 * ENQUEUE (docs/benchmarks.md). What waits behind older output, what
 * the socket does not take, or a write error, goes to the bufferevent,
 * which writes when it can or reports the error. A closing client with
 * nothing left to send drains; so this is the last thing a caller does
 * with c.
 */
static void
client_flush(struct client *c)
{
	struct evbuffer *bout;
	int direct;

	if (c->state != CLIENT_ACTIVE && c->state != CLIENT_CLOSING)
		return;
	if (c->killed != NULL)
		return;
	bout = bufferevent_get_output(c->bev);
	if (evbuffer_get_length(c->out) > 0) {
		/* TLS: everything goes through the bufferevent, which
		 * encrypts. */
		direct = !c->tls && evbuffer_get_length(bout) == 0;
		if (direct && !c->held) {
			/* EV_WRITE may be left on by a commit: nothing for
			 * it to write now. */
			bufferevent_disable(c->bev, EV_WRITE);
			(void)evbuffer_write(c->out, bufferevent_getfd(c->bev));
		}
		if (evbuffer_get_length(c->out) > 0 && !(direct && c->held)) {
			client_move_out(bout, c->out);
			if (!c->held)
				bufferevent_enable(c->bev, EV_WRITE);
		}
	}
	client_weigh(c, client_pending_peak(c));
	if (c->state == CLIENT_CLOSING && client_quiet(c))
		client_drain(c);
}

void
client_release_output(struct client *c)
{
	struct evbuffer *bout;
	int n = 0;

	if (c->state == CLIENT_DEAD)
		return;
	bout = bufferevent_get_output(c->bev);
	if (c->state == CLIENT_ACTIVE && !c->tls && c->killed == NULL) {
		/* The bufferevent keeps its output's front frozen against
		 * drains but its own. */
		if (evbuffer_get_length(bout) > 0) {
			evbuffer_unfreeze(bout, 1);
			n = evbuffer_write(bout, bufferevent_getfd(c->bev));
			evbuffer_freeze(bout, 1);
		}
		if (n >= 0 && evbuffer_get_length(bout) == 0 &&
		    evbuffer_get_length(c->out) > 0)
			n = evbuffer_write(c->out, bufferevent_getfd(c->bev));
		if (evbuffer_get_length(c->out) > 0)
			client_move_out(bout, c->out);
		if (n < 0 || evbuffer_get_length(bout) > 0)
			bufferevent_enable(c->bev, EV_WRITE);
		return;
	}
	if (c->killed == NULL && evbuffer_get_length(c->out) > 0)
		client_move_out(bout, c->out);
	bufferevent_enable(c->bev, EV_WRITE);
}

/* Out of server.pushed: its pushed messages are being written. */
static void
client_unpush(struct client *c)
{
	if (!c->pushed)
		return;
	TAILQ_REMOVE(&c->server->pushed, c, pushed_entry);
	c->pushed = 0;
}

static void
client_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	client_unpush(arg);
	client_flush(arg);
}

void
client_flush_pushed(struct server *s)
{
	struct client *c;

	while ((c = TAILQ_FIRST(&s->pushed)) != NULL) {
		client_unpush(c);
		if (c->reading)
			continue; /* its flush, still active, ends the turn */
		event_del(c->flush);
		client_flush(c);
	}
}

void
client_close_after_reply(struct client *c)
{
	if (c->state != CLIENT_ACTIVE)
		return;
	client_set_state(c, CLIENT_CLOSING);
	/* Inside client_process, its own flush comes at the end. */
	if (!c->reading)
		client_flush(c);
}

static void
client_linger_cb(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;

	(void)fd, (void)what;
	client_close(c, c->killed ? c->killed : "linger timeout");
}

/* Deferred work: more requests after a full batch, or a kill. */
static void
client_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;

	(void)fd, (void)what;
	if (c->local) {
		if (c->state == CLIENT_ACTIVE && client_local_whole(c))
			c->local_done(c, c->local_arg);
		return;
	}
	if (c->killed != NULL)
		client_close(c, c->killed);
	else
		client_process(c);
}

static void
client_wake(struct client *c)
{
	event_active(c->wake, EV_TIMEOUT, 0);
}

static void
client_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;
	struct evbuffer_iovec v;
	ssize_t n;

	(void)what;
	loop_did_work();
	if (evbuffer_reserve_space(c->in, CLIENT_READ_CHUNK, &v, 1) != 1) {
		client_close(c, "out of memory");
		return;
	}
	n = read(fd, v.iov_base, CLIENT_READ_CHUNK);
	if (n == 0) {
		client_close(c, "end of input");
		return;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			client_close(c, evutil_socket_error_to_string(errno));
		return;
	}
	v.iov_len = (size_t)n;
	evbuffer_commit_space(c->in, &v, 1);
	client_got_input(c);
}

/* What a read brought, in c->in: run it, or drop it while closing. */
static void
client_got_input(struct client *c)
{
	if (c->state == CLIENT_ACTIVE)
		client_process(c);
	else
		evbuffer_drain(c->in, evbuffer_get_length(c->in));
	client_input_account(c);
}

/* TLS: the bufferevent has decrypted what it read. */
static void
client_tls_read_cb(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;

	loop_did_work();
	c->handshaken = 1;
	evbuffer_add_buffer(c->in, bufferevent_get_input(bev));
	client_got_input(c);
}

/* Reading on or off: the plain socket's event, or TLS's bufferevent. */
static void
client_reading(struct client *c, int on)
{
	if (c->tls) {
		if (on)
			bufferevent_enable(c->bev, EV_READ);
		else
			bufferevent_disable(c->bev, EV_READ);
	} else if (on)
		event_add(c->rev, NULL);
	else
		event_del(c->rev);
}

static void
client_write_cb(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;
	struct evbuffer *bout = bufferevent_get_output(c->bev);

	(void)bev;
	if (c->state == CLIENT_CLOSING && client_quiet(c)) {
		client_drain(c);
		return;
	}
	if (c->state != CLIENT_ACTIVE)
		return;
	/* All written: the next replies go out from client_flush. */
	if (evbuffer_get_length(bout) == 0 && !c->held)
		bufferevent_disable(c->bev, EV_WRITE);
}

static void
client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct client *c = arg;
	char why[CLIENT_WHY_MAX];

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		c->handshaken = 1; /* TLS: the handshake is done */
		return;
	}
	if (what & BEV_EVENT_EOF)
		client_close(c, "end of input");
	else if ((what & BEV_EVENT_ERROR) && c->tls &&
	         *tls_last_error(c->bev, why, sizeof(why)) != '\0')
		client_close(c, why); /* a failed handshake, say */
	else if (what & BEV_EVENT_ERROR)
		client_close(
		    c, evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

/* A malformed request: its error (after the replies still to come), then
 * the close. */
static void
client_protocol_error(struct client *c)
{
	struct client_slot *s = NULL;

	if (!TAILQ_EMPTY(&c->slots))
		client_slot_write(c, s = client_slot_open(c));
	resp_error(client_output(c), "ERR Protocol error: %s",
	           resp_parser_error(c->parser));
	c->server->stats.errors_total++; /* INFO, as Redis counts it */
	if (s != NULL)
		client_slot_done(c, s);
	client_log(LOG_LVL_DEBUG, c, NULL, NULL, "protocol error: %s",
	           resp_parser_error(c->parser));
	client_close_after_reply(c);
}

/* Runs c->req while replies of earlier requests are still to come: its
 * reply goes into a slot of its own, in order. */
static void
client_dispatch_slotted(struct client *c)
{
	struct client_slot *s = client_slot_open(c);

	client_slot_write(c, s);
	c->cur_slot = s;
	command_dispatch(c, &c->req);
	if (c->cur_slot == s) { /* not claimed by a call still in flight */
		c->cur_slot = NULL;
		client_slot_done(c, s);
	}
	c->cur = c->out;
}

/* c goes at the next turn, for why (logged by the caller). */
void
client_kill(struct client *c, const char *why)
{
	c->killed = why;
	client_reading(c, 0);
	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	client_wake(c);
}

/*
 * While requests wait behind engine calls in flight (held_req), csqd stops
 * reading the client once a megabyte of them is in: otherwise a client
 * that pipelines faster than Redis answers, or while Redis is stalled,
 * would pile up its requests in csqd's memory without bound. Reading goes
 * on when they can run, which depends on the engine, never on the client,
 * so this cannot deadlock as a pause on unread replies would.
 */
static void
client_input_pause(struct client *c)
{
	if (c->state != CLIENT_ACTIVE || c->killed != NULL)
		return;
	if (c->held_req && evbuffer_get_length(c->in) > CLIENT_INPUT_PAUSE) {
		if (!c->in_paused) {
			c->in_paused = 1;
			client_reading(c, 0);
		}
	} else if (c->in_paused) {
		c->in_paused = 0;
		client_reading(c, 1);
	}
}

/*
 * Runs the requests waiting in the input buffer, in order. While engine
 * calls are in flight only requests that the engine answers in turn go on
 * (command_pipelines: a pipeline of ENQUEUEs on the Redis engine is one
 * batch, not one round trip each); anything else waits, parsed, until
 * every reply before it is out, so that what it changes (AUTH, SUBSCRIBE,
 * QUIT) applies exactly after them.
 */
static void
client_process(struct client *c)
{
	int n = 0;

	if (c->reading || c->state != CLIENT_ACTIVE)
		return;
	c->reading = 1;
	while (c->state == CLIENT_ACTIVE) {
		if (n++ == CLIENT_BATCH) {
			client_wake(c);
			break;
		}
		/* Requests are read and run however many replies wait, as
		 * Redis does: a client that writes a whole pipeline before it
		 * reads (hiredis, redis-py's pipeline) would otherwise wait on
		 * csqd while csqd waits on it. Only past a hard limit, a
		 * client that does not read at all, it goes. */
		if (client_pending(c) > CLIENT_OUTPUT_HARD_MAX) {
			client_log(LOG_LVL_WARNING, c, NULL, NULL,
			           "replies over %d bytes, closing",
			           CLIENT_OUTPUT_HARD_MAX);
			c->server->stats.output_closed_total++;
			client_kill(c, "output buffer limit");
			break;
		}
		/* Before AUTH a connection costs little: its replies are
		 * errors, and a few of them are all an honest client reads
		 * before it logs in (issue 37: 12 connections pipelining
		 * "X" unread reached the global 1 GiB). */
		if (auth_required(c) &&
		    client_pending(c) >
		        (size_t)c->server->cfg.max_unauth_output) {
			client_log(LOG_LVL_WARNING, c, NULL, NULL,
			           "replies over max_unauth_output (%lld "
			           "bytes) before AUTH, closing",
			           (long long)c->server->cfg.max_unauth_output);
			c->server->stats.output_closed_total++;
			client_kill(c, "output buffer limit before AUTH");
			break;
		}
		if (!c->held_req) {
			enum resp_parse got;

			/* The limits before AUTH, as things stand now: a
			 * request may have authenticated, or a reload
			 * removed the password. */
			resp_parser_set_authed(c->parser, !auth_required(c));
			got = resp_parse(c->parser, c->in, &c->req);

			if (got == RESP_PARSE_NEED)
				break;
			if (got == RESP_PARSE_ERROR) {
				client_protocol_error(c);
				break;
			}
		}
		if (c->inflight == 0) {
			c->held_req = 0;
			command_dispatch(c, &c->req);
			continue;
		}
		if (c->inflight >= CLIENT_INFLIGHT_MAX ||
		    !command_pipelines(&c->req)) {
			c->held_req = 1;
			break;
		}
		c->held_req = 0;
		client_dispatch_slotted(c);
	}
	c->reading = 0;
	client_input_pause(c);
	client_input_account(c);
	client_flush(c);
}

void
client_resume(struct client *c)
{
	c->inflight--;
	if (c->local) {
		if (c->state == CLIENT_ACTIVE)
			client_wake(c);
		return;
	}
	if (c->state == CLIENT_ACTIVE && !c->reading)
		client_wake(c);
	else if (c->state == CLIENT_CLOSING)
		event_active(c->flush, EV_TIMEOUT, 0);
}

struct evbuffer *
client_push_begin(struct client *c)
{
	if (c->state != CLIENT_ACTIVE || c->killed != NULL)
		return NULL;
	/* Not client_output: never into a slot, which may be ahead of it. */
	return c->out;
}

void
client_push_end(struct client *c)
{
	server_hold_output(c->server, c);
	if (client_pending_peak(c) <= CLIENT_PUBSUB_HARD_MAX) {
		/* Written at this turn's end, with whatever else is pushed,
		 * or sooner (client_flush_pushed); that flush weighs what is
		 * left (client_weigh). A client in server.pushed has its
		 * flush active already (client_unpush takes it out whenever
		 * the flush runs or is deleted): a message more needs no
		 * event_active. */
		if (!c->pushed) {
			TAILQ_INSERT_TAIL(&c->server->pushed, c, pushed_entry);
			c->pushed = 1;
			event_active(c->flush, EV_TIMEOUT, 0);
		}
		return;
	}
	/* Not closed here: the publisher may be walking a list that holds
	 * this client. */
	client_log(LOG_LVL_WARNING, c, NULL, NULL,
	           "subscriber output over %d bytes, closing",
	           CLIENT_PUBSUB_HARD_MAX);
	c->server->stats.output_closed_total++;
	client_kill(c, "output buffer limit");
}

/*
 * max_output_memory bounds what all clients together have waiting to be
 * sent, as Redis's maxmemory-clients does: the limits of one client
 * (above) still let thousands of subscribers that stopped reading hold
 * gigabytes between them. A client with more than its share of the cap
 * waiting (the cap over the clients, CLIENT_WEIGH_OVER at most) has them
 * all counted, CLIENT_WEIGH_MS later at most (once for all that ask
 * meanwhile): when all of them hold more than the cap, one at least
 * holds more than its share. Over the cap, the clients with the most go,
 * the largest first, until the rest fit.
 */
static void
client_weigh(struct client *c, size_t pending)
{
	struct server *s = c->server;
	struct timeval tv = {0, CLIENT_WEIGH_MS * 1000};
	uint64_t share;

	if (s->cfg.max_output_memory <= 0 || pending == 0)
		return;
	share = (uint64_t)s->cfg.max_output_memory /
	        (s->nclients > 0 ? s->nclients : 1);
	if (share > CLIENT_WEIGH_OVER)
		share = CLIENT_WEIGH_OVER;
	if (pending > share && !evtimer_pending(s->weigh_ev, NULL))
		evtimer_add(s->weigh_ev, &tv);
}

void
client_output_making(struct client *c, size_t bytes)
{
	struct server *s = c->server;
	size_t pending;

	c->making = bytes;
	/* A connection's only: a local client's output is its caller's. */
	if (bytes == 0 || c->local || c->state != CLIENT_ACTIVE ||
	    c->killed != NULL)
		return;
	pending = client_pending_peak(c);
	/* Over the whole cap alone: weighed before the next slice is made,
	 * not CLIENT_WEIGH_MS later, when the reply may be whole and in the
	 * kernel's buffers (issue 37). */
	if (s->cfg.max_output_memory > 0 &&
	    pending > (uint64_t)s->cfg.max_output_memory)
		event_active(s->weigh_ev, EV_TIMEOUT, 0);
	else
		client_weigh(c, pending);
}

void
client_weigh_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	uint64_t total = 0, cap = (uint64_t)s->cfg.max_output_memory;
	struct client *c, *big;
	size_t n, most, http_most;

	(void)fd, (void)what;
	TAILQ_FOREACH(c, &s->clients, entry)
		if (c->killed == NULL)
			total += client_pending(c);
	/* HTTP answers too (issue 37: 800 unread /metrics took 470 MB
	 * that nothing counted). */
	total += http_output(s, &http_most);
	while (cap > 0 && total > cap) {
		big = NULL;
		most = 0;
		TAILQ_FOREACH(c, &s->clients, entry)
			if (c->killed == NULL && (n = client_pending(c)) > most)
				big = c, most = n;
		if (http_most > most) {
			n = http_shed(s);
			total -= n < total ? n : total;
			(void)http_output(s, &http_most);
			if (n == 0)
				break;
			continue;
		}
		if (big == NULL)
			break;
		client_log(LOG_LVL_WARNING, big, NULL, NULL,
		           "all clients' output over max_output_memory (%llu "
		           "bytes), this one's %zu, closing",
		           (unsigned long long)cap, most);
		s->stats.output_closed_total++;
		client_kill(big, "output memory limit");
		total -= most;
	}
}

/*
 * Input a client makes csqd hold: read and not yet parsed, the request
 * being read (a bulk of up to 512 MiB), and a parsed request waiting
 * for the engine calls before it.
 */
static size_t
client_input_size(const struct client *c)
{
	size_t n = evbuffer_get_length(c->in) + resp_parser_held(c->parser);
	int i;

	if (c->held_req)
		for (i = 0; i < c->req.argc; i++)
			n += c->req.argvlen[i];
	return n;
}

/*
 * max_input_memory bounds the input all clients hold together, as
 * max_output_memory bounds their output: each client's limit alone
 * (a 512 MiB bulk) lets a few connections take gigabytes. Each client's
 * share is kept current after every read and every batch of requests, so
 * the total is known at once, without a walk; over the cap, the clients
 * that hold the most go, the largest first, until the rest fit.
 */
static void
client_input_account(struct client *c)
{
	struct server *s = c->server;
	size_t now = 0;

	if (c->state != CLIENT_DEAD && c->killed == NULL)
		now = client_input_size(c);
	s->input_total = s->input_total - c->input_held + now;
	c->input_held = now;
	client_input_limit(s);
}

void
client_input_limit(struct server *s)
{
	uint64_t cap = (uint64_t)s->cfg.max_input_memory;
	struct client *c, *big;
	size_t most;

	while (cap > 0 && s->input_total > cap) {
		big = NULL;
		most = 0;
		TAILQ_FOREACH(c, &s->clients, entry)
			if (c->killed == NULL && c->input_held > most)
				big = c, most = c->input_held;
		if (big == NULL)
			break;
		client_log(LOG_LVL_WARNING, big, NULL, NULL,
		           "all clients' input over max_input_memory (%llu "
		           "bytes), this one's %zu, closing",
		           (unsigned long long)cap, most);
		s->stats.input_closed_total++;
		client_kill(big, "input memory limit");
		s->input_total -= most;
		big->input_held = 0;
	}
}

/*
 * The closes of auth_timeout come in crowds when they come (an attack
 * that holds connections open): one line at most every
 * CLIENT_ADMIT_LOG_MS, which counts those since the line before.
 */
static void
client_admit_log(struct client *c)
{
	static unsigned long closed;
	static uint64_t logged_ms;
	uint64_t now = server_now_ms();

	closed++;
	client_log(LOG_LVL_DEBUG, c, NULL, NULL, "auth_timeout");
	if (logged_ms != 0 && now - logged_ms < CLIENT_ADMIT_LOG_MS)
		return;
	log_warnx("closed %lu connection%s that had not authenticated (or "
	          "finished the TLS handshake) within auth_timeout (%lld s)",
	          closed, closed == 1 ? "" : "s",
	          (long long)c->server->cfg.auth_timeout);
	closed = 0;
	logged_ms = now;
}

/*
 * auth_timeout after it came: a connection that must authenticate has,
 * and one on a TLS port has finished its handshake, or it goes (issue
 * 37: 600 connections that sent 6 bytes of a ClientHello held every slot
 * of max_clients). One check at the deadline, nothing to undo before.
 */
static void
client_admit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;

	(void)fd, (void)what;
	if (c->state != CLIENT_ACTIVE || c->killed != NULL)
		return;
	if ((c->tls && !c->handshaken) || auth_required(c)) {
		client_admit_log(c);
		client_close(c, "auth_timeout");
	}
}

/*
 * TCP keepalive as Redis sets it (tcp-keepalive 300): a probe after 300 s
 * of silence, then every 100 s, three unanswered and the connection is
 * dead. With the kernel's defaults a client whose host vanished would
 * hold its place under max_clients for over two hours. (On a Unix socket
 * these fail, harmlessly.)
 */
static void
client_keepalive(evutil_socket_t fd)
{
	int on = 1, idle = CLIENT_KEEPALIVE_S, intvl = CLIENT_KEEPALIVE_S / 3,
	    cnt = 3;

	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) != 0)
		return;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* The peer's (peer 1) or the local address of fd as CLIENT LIST shows
 * it, as Redis does: "ip:port", "[ipv6]:port", or "path:0" for a Unix
 * socket (the listener's path: a client's own has none). */
static void
client_addr(evutil_socket_t fd, int peer, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN];
	const void *ip;
	int port;

	memset(&ss, 0, sizeof(ss));
	if ((peer ? getpeername(fd, (struct sockaddr *)&ss, &sl)
	          : getsockname(fd, (struct sockaddr *)&ss, &sl)) != 0) {
		snprintf(buf, len, "?:0");
		return;
	}
	if (ss.ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;

		if (peer && sl <= offsetof(struct sockaddr_un, sun_path))
			getsockname(fd, (struct sockaddr *)&ss, &sl);
		snprintf(buf, len, "%s:0", un->sun_path);
		return;
	}
	if (ss.ss_family == AF_INET6) {
		ip = &((const struct sockaddr_in6 *)&ss)->sin6_addr;
		port = ntohs(((const struct sockaddr_in6 *)&ss)->sin6_port);
	} else {
		ip = &((const struct sockaddr_in *)&ss)->sin_addr;
		port = ntohs(((const struct sockaddr_in *)&ss)->sin_port);
	}
	if (inet_ntop(ss.ss_family, ip, host, sizeof(host)) == NULL)
		snprintf(host, sizeof(host), "?");
	snprintf(buf, len, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host,
	         port);
}

struct client *
client_new(struct server *s, evutil_socket_t fd, int tls)
{
	struct client *c = csq_xcalloc(1, sizeof(*c));
	int one = 1;

	evutil_make_socket_nonblocking(fd);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	client_keepalive(fd);
	c->server = s;
	c->tls = tls && s->tls != NULL;
	if (c->tls)
		c->bev = tls_accept(s->tls, s->base, fd);
	else
		c->bev =
		    bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		log_warnx("cannot set up a connection");
		evutil_closesocket(fd);
		free(c);
		return NULL;
	}
	c->parser = resp_parser_new();
	c->in = evbuffer_new();
	c->out = evbuffer_new();
	c->cur = c->out;
	TAILQ_INIT(&c->slots);
	TAILQ_INIT(&c->spares);
	if (c->in == NULL || c->out == NULL) {
		log_warnx("cannot set up a connection");
		bufferevent_free(c->bev);
		resp_parser_free(c->parser);
		if (c->in != NULL)
			evbuffer_free(c->in);
		if (c->out != NULL)
			evbuffer_free(c->out);
		free(c);
		return NULL;
	}
	if (!c->tls)
		c->rev = event_new(s->base, fd, EV_READ | EV_PERSIST,
		                   client_read_cb, c);
	c->flush = event_new(s->base, -1, 0, client_flush_cb, c);
	c->linger = evtimer_new(s->base, client_linger_cb, c);
	c->wake = event_new(s->base, -1, 0, client_wake_cb, c);
	c->admit = evtimer_new(s->base, client_admit_cb, c);
	c->id = ++s->next_client_id;
	client_addr(fd, 1, c->addr, sizeof(c->addr));
	client_addr(fd, 0, c->laddr, sizeof(c->laddr));
	c->created_ms = c->last_ms = server_now_ms();
	c->refs = 1;
	auth_reset(c);
	c->proto = 2;
	c->state = CLIENT_ACTIVE;
	TAILQ_INSERT_TAIL(&s->clients, c, entry);
	s->nclients++;
	bufferevent_setcb(c->bev, c->tls ? client_tls_read_cb : NULL,
	                  client_write_cb, client_event_cb, c);
	bufferevent_disable(c->bev, EV_READ | EV_WRITE); /* EV_WRITE is on */
	client_reading(c, 1);
	if (c->tls || auth_required(c)) {
		struct timeval tv = {(time_t)s->cfg.auth_timeout, 0};

		evtimer_add(c->admit, &tv);
	}
	client_log(LOG_LVL_DEBUG, c, "laddr", c->laddr, "client connected");
	return c;
}

struct client *
client_new_local(struct server *s, const char *addr,
                 void (*done)(struct client *, void *), void *arg)
{
	struct client *c = csq_xcalloc(1, sizeof(*c));

	c->server = s;
	c->local = 1;
	c->local_done = done;
	c->local_arg = arg;
	if ((c->out = evbuffer_new()) == NULL)
		fatalx("out of memory");
	c->cur = c->out;
	TAILQ_INIT(&c->slots);
	TAILQ_INIT(&c->spares);
	c->wake = event_new(s->base, -1, 0, client_wake_cb, c);
	c->id = ++s->next_client_id;
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	snprintf(c->laddr, sizeof(c->laddr), "http");
	c->created_ms = c->last_ms = server_now_ms();
	c->refs = 1;
	auth_reset(c);
	c->proto = 3; /* maps are maps: the HTTP API's JSON objects */
	c->state = CLIENT_ACTIVE;
	return c;
}

int
client_local_whole(const struct client *c)
{
	return c->inflight == 0 && !c->held && TAILQ_EMPTY(&c->slots);
}

void
client_local_release(struct client *c)
{
	if (c->state == CLIENT_ACTIVE)
		client_wake(c);
}

void
client_local_free(struct client *c)
{
	/* Not client_set_state: a local client is not in nclients. */
	c->state = CLIENT_DEAD;
	event_free(c->wake);
	c->wake = NULL;
	client_unref(c);
}
