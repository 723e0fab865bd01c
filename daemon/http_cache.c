/*
 * A shared answer and the requests waiting for it (http_cache.h). Each
 * waiting request watches its connection, so that one whose client went
 * away is not answered; the answer's body is kept whole and each request
 * gets a reference to it.
 */
#include "http_cache.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "http.h"
#include "log.h"
#include "server.h"
#include "util.h"

/* An answer this large leaves its round's arrays free in the heap, which
 * glibc keeps: the heap is trimmed (client_trim_cb) once such answers have
 * stopped for HTTP_CACHE_TRIM_MS, not after each (a trim after each made
 * the next round fault its pages in again: 16 % of a round's time). */
#define HTTP_CACHE_TRIM_OVER (1024 * 1024)
#define HTTP_CACHE_TRIM_MS   2000
/* An answer is fresh for http.cache_ms, or for this many times what it
 * took to make when that is longer: however many ask, and however large
 * the state, making answers then takes at most a fifth of the loop's
 * time (issue 37; 0.5 s of slices for a snapshot of 100,000 queues). */
#define HTTP_CACHE_SHARE 4

struct http_waiter {
	TAILQ_ENTRY(http_waiter) entry;
	struct http_cache *cache;
	struct evhttp_request *req; /* NULL: the client went away */
};

struct http_cache {
	struct server *server;
	const char *type;
	TAILQ_HEAD(, http_waiter) waiting;
	struct evbuffer *body; /* the last 200, or NULL */
	uint64_t at_ms;        /* when it was made */
	uint64_t fresh_ms;     /* for how long it is served */
	uint64_t begun_ms;     /* when the answer being made was begun */
	int making;            /* an answer is being made */
	struct event *expire;  /* drops body when it is no longer served */
};

/* Trims the heap HTTP_CACHE_TRIM_MS from now (again, if it was to). */
static void
http_cache_trim_later(struct http_cache *hc)
{
	struct timeval tv = {HTTP_CACHE_TRIM_MS / 1000,
	                     (HTTP_CACHE_TRIM_MS % 1000) * 1000};

	if (hc->server->trim_ev != NULL)
		evtimer_add(hc->server->trim_ev, &tv);
}

/* The answer is stale: its memory goes back (a large one's to the
 * system, once the requests still sending it are done). */
static void
http_cache_expire_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http_cache *hc = arg;

	(void)fd, (void)what;
	if (hc->body != NULL) {
		if (evbuffer_get_length(hc->body) >= HTTP_CACHE_TRIM_OVER)
			http_cache_trim_later(hc);
		evbuffer_free(hc->body);
		hc->body = NULL;
	}
}

struct http_cache *
http_cache_new(struct server *s, const char *type)
{
	struct http_cache *hc = csq_xcalloc(1, sizeof(*hc));

	hc->server = s;
	hc->type = type;
	TAILQ_INIT(&hc->waiting);
	hc->expire = evtimer_new(s->base, http_cache_expire_cb, hc);
	return hc;
}

static void
http_waiter_free(struct http_waiter *w)
{
	if (w->req != NULL)
		evhttp_connection_set_closecb(
		    evhttp_request_get_connection(w->req), NULL, NULL);
	TAILQ_REMOVE(&w->cache->waiting, w, entry);
	free(w);
}

void
http_cache_free(struct http_cache *hc)
{
	if (hc == NULL)
		return;
	while (!TAILQ_EMPTY(&hc->waiting))
		http_waiter_free(TAILQ_FIRST(&hc->waiting));
	if (hc->body != NULL)
		evbuffer_free(hc->body);
	event_free(hc->expire);
	free(hc);
}

/* The client went away before the answer: a request that evhttp has let
 * go of is ours to free (as admin_api.c's). */
static void
http_waiter_closed(struct evhttp_connection *conn, void *arg)
{
	struct http_waiter *w = arg;

	(void)conn;
	if (evhttp_request_get_connection(w->req) == NULL)
		evhttp_request_free(w->req);
	w->req = NULL;
}

/* Sends body to req, by reference: the bytes stay body's. */
static void
http_cache_send(struct http_cache *hc, struct evhttp_request *req, int code,
                const char *reason, struct evbuffer *body)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL)
		fatalx("out of memory for an HTTP answer");
	/* A copy when a reference cannot be had (an empty body). */
	if (evbuffer_add_buffer_reference(b, body) != 0 &&
	    evbuffer_get_length(body) > 0)
		evbuffer_add(b, evbuffer_pullup(body, -1),
		             evbuffer_get_length(body));
	http_reply(req, code, reason, hc->type, b);
	evbuffer_free(b);
	http_weigh_soon(hc->server, evbuffer_get_length(body));
}

int
http_cache_take(struct http_cache *hc, struct evhttp_request *req, int *start)
{
	struct http_waiter *w;
	uint64_t now = server_now_ms();

	*start = 0;
	if (hc->body != NULL && !hc->making && now - hc->at_ms < hc->fresh_ms) {
		http_cache_send(hc, req, HTTP_OK, "OK", hc->body);
		return 1;
	}
	w = csq_xcalloc(1, sizeof(*w));
	w->cache = hc;
	w->req = req;
	TAILQ_INSERT_TAIL(&hc->waiting, w, entry);
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	                              http_waiter_closed, w);
	if (!hc->making) {
		hc->making = 1;
		hc->begun_ms = now;
		*start = 1;
	}
	return 0;
}

void
http_cache_fill(struct http_cache *hc, int code, const char *reason,
                struct evbuffer *body)
{
	struct http_waiter *w;
	struct evbuffer *keep;

	hc->making = 0;
	if (evbuffer_get_length(body) >= HTTP_CACHE_TRIM_OVER)
		http_cache_trim_later(hc); /* later again */
	if ((keep = evbuffer_new()) == NULL)
		fatalx("out of memory for an HTTP answer");
	evbuffer_add_buffer(keep, body);
	if (code == HTTP_OK) {
		uint64_t ms = (uint64_t)hc->server->cfg.http_cache_ms;
		uint64_t took;

		if (hc->body != NULL)
			evbuffer_free(hc->body);
		hc->body = keep;
		hc->at_ms = server_now_ms();
		took = hc->at_ms - hc->begun_ms;
		/* cache_ms 0 (every answer fresh) stays 0. */
		if (ms > 0 && took * HTTP_CACHE_SHARE > ms)
			ms = took * HTTP_CACHE_SHARE;
		hc->fresh_ms = ms;
		{
			struct timeval tv = {(time_t)(ms / 1000),
			                     (suseconds_t)(ms % 1000) * 1000};

			evtimer_add(hc->expire, &tv);
		}
	}
	while ((w = TAILQ_FIRST(&hc->waiting)) != NULL) {
		struct evhttp_request *req = w->req;

		http_waiter_free(w);
		if (req != NULL)
			http_cache_send(hc, req, code, reason, keep);
	}
	if (keep != hc->body)
		evbuffer_free(keep);
}
