/*
 * Client connections. A connection moves through the states of enum
 * client_state, only forward, only through client_set_state(); every way
 * out goes through client_close(), and the memory goes only when no engine
 * call in flight still refers to it (client_unref).
 */
#include "client.h"

#include <assert.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "command.h"
#include "log.h"
#include "server.h"
#include "util.h"

#define CLIENT_BATCH           1024 /* requests per turn: no client starves others */
#define CLIENT_OUTPUT_PAUSE    (1024 * 1024) /* stop reading requests above */
#define CLIENT_PUBSUB_HARD_MAX (32 * 1024 * 1024) /* a subscriber too slow */
#define CLIENT_LINGER_S        2 /* after a protocol error, wait for EOF */

static const char *const client_state_names[] = {
    "active",
    "closing",
    "draining",
    "dead",
};

static void client_process(struct client *);

static void
client_set_state(struct client *c, enum client_state state)
{
	assert(state < CLIENT_STATE_MAX && state >= c->state);
	log_debug("client %llu: %s -> %s", (unsigned long long)c->id,
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
	return bufferevent_get_output(c->bev);
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

void
client_unref(struct client *c)
{
	if (--c->refs > 0)
		return;
	resp_request_clear(&c->req);
	resp_parser_free(c->parser);
	free(c->name);
	free(c);
}

void
client_close(struct client *c, const char *why)
{
	struct server *s = c->server;

	if (c->state == CLIENT_DEAD)
		return;
	log_debug("client %llu: closed: %s", (unsigned long long)c->id, why);
	client_set_state(c, CLIENT_DEAD);
	pubsub_forget(s->pubsub, c);
	TAILQ_REMOVE(&s->clients, c, entry);
	event_free(c->linger);
	event_free(c->wake);
	bufferevent_free(c->bev);
	c->bev = NULL;
	client_unref(c);
	server_client_gone(s);
}

/* The write side is done: shut it down and wait a moment for the peer. */
static void
client_drain(struct client *c)
{
	struct timeval tv = {CLIENT_LINGER_S, 0};

	if (c->server->stopping) {
		client_close(c, "server stopping");
		return;
	}
	client_set_state(c, CLIENT_DRAINING);
	shutdown(bufferevent_getfd(c->bev), SHUT_WR);
	evbuffer_drain(bufferevent_get_input(c->bev),
	               evbuffer_get_length(bufferevent_get_input(c->bev)));
	bufferevent_enable(c->bev, EV_READ);
	evtimer_add(c->linger, &tv);
}

void
client_close_after_reply(struct client *c)
{
	if (c->state != CLIENT_ACTIVE)
		return;
	client_set_state(c, CLIENT_CLOSING);
	if (evbuffer_get_length(client_output(c)) == 0)
		client_drain(c);
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
client_read_cb(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	if (c->state == CLIENT_ACTIVE)
		client_process(c);
	else
		evbuffer_drain(in, evbuffer_get_length(in));
}

static void
client_write_cb(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;

	(void)bev;
	if (c->state == CLIENT_CLOSING &&
	    evbuffer_get_length(client_output(c)) == 0) {
		client_drain(c);
		return;
	}
	if (c->state == CLIENT_ACTIVE && c->paused) {
		c->paused = 0;
		bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
		bufferevent_enable(c->bev, EV_READ);
		client_process(c);
	}
}

static void
client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct client *c = arg;

	(void)bev;
	if (what & BEV_EVENT_EOF)
		client_close(c, "end of input");
	else if (what & BEV_EVENT_ERROR)
		client_close(
		    c, evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

/* Runs the requests waiting in the input buffer, in order. */
static void
client_process(struct client *c)
{
	struct evbuffer *in, *out;
	int n = 0;

	if (c->reading || c->state != CLIENT_ACTIVE)
		return;
	c->reading = 1;
	in = bufferevent_get_input(c->bev);
	out = client_output(c);
	while (c->state == CLIENT_ACTIVE && !c->inflight && !c->paused) {
		if (n++ == CLIENT_BATCH) {
			client_wake(c);
			break;
		}
		if (evbuffer_get_length(out) > CLIENT_OUTPUT_PAUSE) {
			/* The client does not read its replies: stop reading
			 * its requests until they drain. */
			c->paused = 1;
			bufferevent_disable(c->bev, EV_READ);
			bufferevent_setwatermark(c->bev, EV_WRITE,
			                         CLIENT_OUTPUT_PAUSE / 2, 0);
			break;
		}
		switch (resp_parse(c->parser, in, &c->req)) {
		case RESP_PARSE_OK:
			command_dispatch(c, &c->req);
			continue;
		case RESP_PARSE_NEED:
			break;
		case RESP_PARSE_ERROR:
			resp_error(out, "ERR Protocol error: %s",
			           resp_parser_error(c->parser));
			log_debug("client %llu: protocol error: %s",
			          (unsigned long long)c->id,
			          resp_parser_error(c->parser));
			client_close_after_reply(c);
			break;
		}
		break;
	}
	c->reading = 0;
}

void
client_resume(struct client *c)
{
	c->inflight = 0;
	if (c->state == CLIENT_ACTIVE && !c->reading)
		client_wake(c);
}

struct evbuffer *
client_push_begin(struct client *c)
{
	if (c->state != CLIENT_ACTIVE || c->killed != NULL)
		return NULL;
	return client_output(c);
}

void
client_push_end(struct client *c)
{
	server_hold_output(c->server, c);
	if (evbuffer_get_length(client_output(c)) <= CLIENT_PUBSUB_HARD_MAX)
		return;
	/* Not closed here: the publisher may be walking a list that holds
	 * this client. */
	log_warnx("client %llu: subscriber output over %d bytes, closing",
	          (unsigned long long)c->id, CLIENT_PUBSUB_HARD_MAX);
	c->killed = "output buffer limit";
	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	client_wake(c);
}

struct client *
client_new(struct server *s, evutil_socket_t fd)
{
	struct client *c = csq_xcalloc(1, sizeof(*c));
	int one = 1;

	evutil_make_socket_nonblocking(fd);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->server = s;
	c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		log_warnx("cannot set up a connection");
		evutil_closesocket(fd);
		free(c);
		return NULL;
	}
	c->parser = resp_parser_new();
	c->linger = evtimer_new(s->base, client_linger_cb, c);
	c->wake = event_new(s->base, -1, 0, client_wake_cb, c);
	c->id = ++s->next_client_id;
	c->refs = 1;
	c->authed = s->cfg.requirepass[0] == '\0';
	c->state = CLIENT_ACTIVE;
	TAILQ_INSERT_TAIL(&s->clients, c, entry);
	s->nclients++;
	bufferevent_setcb(c->bev, client_read_cb, client_write_cb,
	                  client_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	log_debug("client %llu: connected", (unsigned long long)c->id);
	return c;
}
