/*
 * The HTTP endpoint. A scrape of /metrics asks the engine through the same
 * asynchronous interface as the commands (STATS, SERVICERS, QSTATS of
 * every queue, then QLEN of each queue seen), one call after another, and
 * answers when the last one has: at once with the memory engine, later
 * with one that talks to Redis. Every other path is the admin view's
 * (admin_page.h, admin_api.h, admin_events.h), behind HTTP Basic auth
 * when a password is set.
 */
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "admin_api.h"
#include "admin_events.h"
#include "admin_history.h"
#include "admin_page.h"
#include "engine.h"
#include "engine_redis.h"
#include "http_api.h"
#include "http_auth.h"
#include "http_cache.h"
#include "journal.h"
#include "listener.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "tls.h"
#include "util.h"

#define HTTP_TIMEOUT_S    10    /* idle or slow clients */
#define HTTP_RECHECK_MS   100   /* a connection shut down: freed yet? */
#define HTTP_LOG_MS       10000 /* refusals and timeouts: a line at most */
#define HTTP_HEADERS_MAX  8192  /* bytes of request headers */
#define HTTP_BACKLOG      128
#define HTTP_METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define HTTP_API_QUEUE    "/api/queue/"
/* evhttp 2.1 types a method it does not know (PROPFIND, FOO) as this
 * bit (EVHTTP_REQ_UNKNOWN_ in its http.c), and answers it 501 itself
 * unless it is allowed: allowed, it reaches the callback like the others,
 * which answers 401 without credentials (section 11a), else 405. */
#define HTTP_REQ_UNKNOWN (1 << 15)
#define HTTP_ALL_METHODS                                                       \
	(EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT | \
	 EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |           \
	 EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH | HTTP_REQ_UNKNOWN)

/* The engine calls of a scrape, in order; SERVICERS repeats per slice of
 * the servicers, QSTATS per slice of the queues, QLEN per queue with a
 * series. */
enum scrape_step { SCRAPE_STATS, SCRAPE_SERVICERS, SCRAPE_QSTATS, SCRAPE_QLEN };
/* Calls of a scrape per turn of the loop, and queues per QSTATS slice
 * (issue 37): the clients that come meanwhile are served between two. */
#define SCRAPE_SLICE 1000

/* One round of a scrape, for every request waiting in the cache. */
struct scrape {
	TAILQ_ENTRY(scrape) entry;
	struct server *server; /* NULL: orphaned by a stop, just freed */
	struct metrics_scrape sc;
	uint64_t *qlen;
	size_t nqueues;
	size_t step;  /* next call: SCRAPE_* then QLEN of queue step - 2 */
	int waiting;  /* a call has not answered yet */
	int stepping; /* inside scrape_next: no recursion */
	char after[CSQ_ID_MAX + 1]; /* SERVICERS, QSTATS: the next slice's
	                               cursor */
	int more;                   /* SERVICERS, QSTATS: a slice is left */
	size_t calls;               /* made in this turn */
	struct event *turn;         /* the next turn's calls */
};

/*
 * One HTTP connection as csqd counts it (http.max_connections) and times
 * it (http.request_timeout). evhttp 2.1 tells nobody when it accepts or
 * frees a connection; but it takes each connection's bufferevent from
 * http_bev, which keeps a reference to it: when evhttp frees the
 * connection the bufferevent stays, with its callbacks cleared, until
 * http_conn_release drops that reference (and so closes the socket).
 */
struct http_conn {
	TAILQ_ENTRY(http_conn) entry;
	struct server *server;
	struct bufferevent *bev; /* one reference is ours */
	struct event *timer;     /* the deadline, or a recheck */
	uint64_t deadline_ms;    /* a whole request by then */
	int admitted;            /* past the check of http_conn_admit */
	int open;                /* requests being answered (a stream too) */
	int shut;                /* shut down by csqd: evhttp frees it */
};

/* Refusals and closes, counted between two log lines (http_note). */
enum http_note_kind { HTTP_NOTE_FULL, HTTP_NOTE_FDS, HTTP_NOTE_SLOW };

struct http {
	struct evhttp *evh;
	TAILQ_HEAD(, http_conn) conns;
	size_t nconns; /* in conns */
	unsigned long noted[3];
	uint64_t noted_ms[3];
	struct accept_guard *guard;   /* accept() out of descriptors */
	TAILQ_HEAD(, scrape) scrapes; /* waiting for the engine */
	struct admin_api *api;
	struct admin_events *events;
	struct admin_history *history;
	struct http_cache *metrics; /* /metrics' answer, shared */
	struct http_api *cmds;      /* POST /api/v1/<command> */
};

void
http_reply(struct evhttp_request *req, int code, const char *reason,
           const char *type, struct evbuffer *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	char len[32];

	evhttp_add_header(h, "Content-Type", type);
	evhttp_add_header(h, "Cache-Control", "no-store");
	/* evhttp 2.1 would send a HEAD answer's body: the length of what
	 * GET would send, and no body. */
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		snprintf(len, sizeof(len), "%zu", evbuffer_get_length(body));
		evhttp_add_header(h, "Content-Length", len);
		body = NULL;
	}
	evhttp_send_reply(req, code, reason, body);
}

void
http_text(struct evhttp_request *req, int code, const char *reason,
          const char *text)
{
	struct evbuffer *b = evbuffer_new();

	evbuffer_add(b, text, strlen(text));
	http_reply(req, code, reason, "text/plain; charset=utf-8", b);
	evbuffer_free(b);
}

static void
scrape_finish(struct scrape *x)
{
	struct server *s = x->server;
	struct evbuffer *b;

	if (s != NULL) {
		TAILQ_REMOVE(&s->http->scrapes, x, entry);
		x->sc.qlen = x->qlen;
		x->sc.nqueues = x->nqueues;
		x->sc.engine_up = s->engine->ops->up(s->engine);
		x->sc.redis_rtt_us = csq_engine_rtt_us(s->engine);
		x->sc.connected_clients = s->nclients;
		x->sc.output_closed_total = s->stats.output_closed_total;
		x->sc.input_closed_total = s->stats.input_closed_total;
		x->sc.input_bytes = s->input_total;
		admin_events_stats(s->http->events, &x->sc.event_streams,
		                   &x->sc.event_stream_bytes,
		                   &x->sc.event_streams_closed);
		x->sc.journal = journal_stats(s->journal);
	}
	if (s != NULL) {
		if ((b = evbuffer_new()) == NULL)
			fatalx("out of memory for an HTTP answer");
		metrics_render(s->metrics, &x->sc, b);
		http_cache_fill(s->http->metrics, HTTP_OK, "OK", b);
		evbuffer_free(b);
	}
	/* After the rendering, which pairs lengths with names by index.
	 * The lengths belong to the queues listed when the scrape began;
	 * events since then may only have appended more. */
	if (s != NULL && x->sc.have_stats)
		metrics_prune(s->metrics, x->qlen, x->nqueues);
	metrics_scrape_free(&x->sc);
	free(x->qlen);
	if (x->turn != NULL)
		event_free(x->turn);
	free(x);
}

static void scrape_next(struct scrape *);

static void
scrape_result(void *arg, const struct csq_result *r)
{
	struct scrape *x = arg;
	size_t i, step = x->step - 1;

	x->waiting = 0;
	if (step == SCRAPE_QSTATS) {
		/* An engine without per-queue numbers (Redis, so far)
		 * leaves their series out, and nothing else. */
		if (r->status == CSQ_OK && x->server != NULL) {
			metrics_fold_qstats(x->server->metrics, &x->sc,
			                    r->qstats, r->nentries);
			/* Another slice to come: the same step again. */
			if ((x->more = r->next != NULL)) {
				snprintf(x->after, sizeof(x->after), "%s",
				         r->next);
				x->step = SCRAPE_QSTATS;
			}
		}
	} else if (r->status != CSQ_OK) {
		/* Half an answer is no answer: leave the engine's series out.
		 */
		x->sc.have_stats = 0;
		x->step = SCRAPE_QLEN + x->nqueues;
	} else if (step == SCRAPE_STATS) {
		x->sc.stats = r->stats;
		x->sc.have_stats = 1;
	} else if (step == SCRAPE_SERVICERS) {
		for (i = 0; i < r->nentries; i++) {
			if (r->servicers[i].status == CSQ_SERVICER_READY)
				x->sc.servicers_ready++;
			else
				x->sc.servicers_paused++;
		}
		/* Another slice to come: the same step again (issue 37);
		 * else QSTATS begins from the first queue. */
		if ((x->more = r->next != NULL)) {
			snprintf(x->after, sizeof(x->after), "%s", r->next);
			x->step = SCRAPE_SERVICERS;
		} else
			x->after[0] = '\0';
	} else
		x->qlen[step - SCRAPE_QLEN] = (uint64_t)r->n;
	if (!x->stepping)
		scrape_next(x);
}

static void
scrape_turn_cb(evutil_socket_t fd, short what, void *arg)
{
	struct scrape *x = arg;

	(void)fd, (void)what;
	x->calls = 0;
	scrape_next(x);
}

/* Issues the calls one after another; an engine answering at once loops
 * here instead of recursing, SCRAPE_SLICE calls (or one QSTATS slice)
 * per turn of the loop. */
static void
scrape_next(struct scrape *x)
{
	static const struct timeval now = {0, 0};
	struct csq_op op;
	size_t step;

	x->stepping = 1;
	while (!x->waiting && x->step < SCRAPE_QLEN + x->nqueues) {
		if (x->server == NULL) {
			x->step = SCRAPE_QLEN + x->nqueues;
			break;
		}
		if (x->calls >= SCRAPE_SLICE || x->more) {
			if (x->turn == NULL)
				x->turn = evtimer_new(x->server->base,
				                      scrape_turn_cb, x);
			x->more = 0;
			evtimer_add(x->turn, &now);
			x->stepping = 0;
			return;
		}
		step = x->step++;
		x->calls++;
		memset(&op, 0, sizeof(op));
		op.ttl_s = -1;
		if (step == SCRAPE_STATS)
			op.code = CSQ_OP_STATS;
		else if (step == SCRAPE_SERVICERS) {
			op.code = CSQ_OP_SERVICERS; /* by slices */
			op.after = x->after;
			op.count = SCRAPE_SLICE;
			x->calls = SCRAPE_SLICE;
		} else if (step == SCRAPE_QSTATS) {
			op.code = CSQ_OP_QSTATS; /* no id: every queue */
			op.after = x->after;
			op.count = SCRAPE_SLICE;
			x->calls = SCRAPE_SLICE;
		} else {
			op.code = CSQ_OP_QLEN;
			op.id = metrics_queue(x->server->metrics,
			                      step - SCRAPE_QLEN);
		}
		x->waiting = 1;
		csq_engine_call(x->server->engine, &op, scrape_result, x);
	}
	x->stepping = 0;
	if (!x->waiting)
		scrape_finish(x);
}

/* A scrape: one round for every request that comes while it runs, and
 * its answer for those within http.cache_ms (http_cache.h). */
static void
http_metrics(struct server *s, struct evhttp_request *req)
{
	struct scrape *x;
	int start;

	if (http_cache_take(s->http->metrics, req, &start) || !start)
		return;
	x = csq_xcalloc(1, sizeof(*x));
	x->server = s;
	TAILQ_INSERT_TAIL(&s->http->scrapes, x, entry);
	if (!s->engine->ops->up(s->engine)) {
		x->step = SCRAPE_QLEN; /* nothing to ask */
		scrape_finish(x);
		return;
	}
	x->nqueues = metrics_nqueues(s->metrics);
	x->qlen = csq_xcalloc(x->nqueues ? x->nqueues : 1, sizeof(uint64_t));
	scrape_next(x);
}

/* 200 "ok", or 503 with the reason: the engine is down (Redis), or the
 * journal cannot be written (every change is then refused). */
static void
http_healthz(struct server *s, struct evhttp_request *req)
{
	const char *why = journal_failure(s->journal);
	char text[256];

	if (!s->engine->ops->up(s->engine))
		http_text(req, HTTP_SERVUNAVAIL, "Service Unavailable",
		          "engine down\n");
	else if (why != NULL) {
		snprintf(text, sizeof(text), "journal not writable: %s\n", why);
		http_text(req, HTTP_SERVUNAVAIL, "Service Unavailable", text);
	} else
		http_text(req, HTTP_OK, "OK", "ok\n");
}

/* 1 when the method may read: GET and HEAD, the only ones served. */
static int
http_method_ok(struct evhttp_request *req)
{
	enum evhttp_cmd_type method = evhttp_request_get_command(req);

	if (method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD)
		return 1;
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
	                  "GET, HEAD");
	http_text(req, HTTP_BADMETHOD, "Method Not Allowed",
	          "method not allowed\n");
	return 0;
}

/* The admin view: the page, the API and the events, after the
 * credentials; a path of none of them is 404, in JSON under /api/. */
static void
http_admin(struct server *s, struct evhttp_request *req, const char *path)
{
	struct http *h = s->http;

	if (!http_auth_ok(&s->cfg, req)) {
		http_auth_challenge(req);
		return;
	}
	if (!http_method_ok(req))
		return;
	if (strcmp(path, "/api/snapshot") == 0)
		admin_api_snapshot(h->api, req);
	else if (strncmp(path, HTTP_API_QUEUE, strlen(HTTP_API_QUEUE)) == 0 &&
	         path[strlen(HTTP_API_QUEUE)] != '\0')
		admin_api_queue(h->api, req, path + strlen(HTTP_API_QUEUE));
	else if (strcmp(path, "/api/events") == 0)
		admin_events_serve(h->events, req);
	else if (strncmp(path, "/api/", 5) == 0 || strcmp(path, "/api") == 0)
		admin_api_error(req, HTTP_NOTFOUND, "Not Found", "not found");
	else if (!admin_page_serve(req, path))
		http_text(req, HTTP_NOTFOUND, "Not Found", "not found\n");
}

static void http_conn_arm(struct http_conn *, uint64_t ms);

/* A request's answer is sent: the connection's next request must come
 * whole within http.request_timeout (or evhttp has closed it: a look at
 * the next turn). */
static void
http_request_done(struct evhttp_request *req, void *arg)
{
	struct http_conn *hc = arg;

	(void)req;
	hc->open--;
	hc->deadline_ms =
	    server_now_ms() +
	    (uint64_t)hc->server->cfg.http_request_timeout * 1000u;
	http_conn_arm(hc, 0);
}

/* The connection req came on, or NULL (one evhttp made itself). */
static struct http_conn *
http_conn_of(struct http *h, struct evhttp_request *req)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(
	    evhttp_request_get_connection(req));
	struct http_conn *hc;

	TAILQ_FOREACH(hc, &h->conns, entry)
		if (hc->bev == bev)
			return hc;
	return NULL;
}

static void
http_request_cb(struct evhttp_request *req, void *arg)
{
	struct server *s = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	struct http_conn *hc = http_conn_of(s->http, req);

	/* Being answered: no deadline until the answer is sent. */
	if (hc != NULL) {
		hc->open++;
		evhttp_request_set_on_complete_cb(req, http_request_done, hc);
	}
	if (path == NULL)
		path = "";
	/* Frontends and agents, under their own users (http_api.h). */
	if (strncmp(path, HTTP_API_PREFIX, strlen(HTTP_API_PREFIX)) == 0) {
		http_api_serve(s->http->cmds, req,
		               path + strlen(HTTP_API_PREFIX));
		return;
	}
	/* For load balancers and Prometheus: never behind the password. */
	if (strcmp(path, "/metrics") != 0 && strcmp(path, "/healthz") != 0) {
		http_admin(s, req, path);
		return;
	}
	if (!http_method_ok(req))
		return;
	if (strcmp(path, "/metrics") == 0) {
		http_metrics(s, req);
		return;
	}
	http_healthz(s, req);
}

/* One line at most every HTTP_LOG_MS for each kind of refusal or close,
 * which counts those since the line before (they come in crowds). */
static void
http_note(struct server *s, enum http_note_kind kind)
{
	struct http *h = s->http;
	uint64_t now = server_now_ms();

	h->noted[kind]++;
	if (h->noted_ms[kind] != 0 && now - h->noted_ms[kind] < HTTP_LOG_MS)
		return;
	switch (kind) {
	case HTTP_NOTE_FULL:
		log_warnx("http: refused %lu connection(s): "
		          "http.max_connections (%lld) open",
		          h->noted[kind],
		          (long long)s->cfg.http_max_connections);
		break;
	case HTTP_NOTE_FDS:
		log_warnx("http: refused %lu connection(s): fewer than "
		          "reserved_fds (%lld) descriptors left",
		          h->noted[kind], (long long)s->cfg.reserved_fds);
		break;
	case HTTP_NOTE_SLOW:
		log_warnx("http: closed %lu connection(s) that sent no whole "
		          "request within http.request_timeout (%lld s)",
		          h->noted[kind],
		          (long long)s->cfg.http_request_timeout);
		break;
	}
	h->noted[kind] = 0;
	h->noted_ms[kind] = now;
}

static void
http_conn_arm(struct http_conn *hc, uint64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000),
	                     (suseconds_t)(ms % 1000) * 1000};

	evtimer_add(hc->timer, &tv);
}

/* Whether evhttp has freed the connection (bufferevent_free clears the
 * callbacks; a live one always has evhttp's, or a stream's). */
static int
http_conn_dead(const struct http_conn *hc)
{
	bufferevent_data_cb r, w;
	bufferevent_event_cb e;
	void *arg;

	bufferevent_getcb(hc->bev, &r, &w, &e, &arg);
	return r == NULL && w == NULL && e == NULL;
}

/* Drops csqd's reference: the socket closes now if evhttp is done. */
static void
http_conn_release(struct http *h, struct http_conn *hc)
{
	TAILQ_REMOVE(&h->conns, hc, entry);
	h->nconns--;
	event_free(hc->timer);
	bufferevent_decref(hc->bev);
	free(hc);
}

/* csqd ends the connection: evhttp sees the end and frees it, and a
 * recheck releases it then. */
static void
http_conn_shut(struct http_conn *hc)
{
	shutdown(bufferevent_getfd(hc->bev), SHUT_RDWR);
	hc->shut = 1;
	http_conn_arm(hc, HTTP_RECHECK_MS);
}

/*
 * A new connection, at the turn after evhttp took it (its socket is set
 * by then): the connections evhttp has freed are released first, then
 * it is refused over http.max_connections, or when its descriptor is
 * among the last reserved_fds below RLIMIT_NOFILE, which are kept for
 * RESP connections (issue 37: 650 slow HTTP connections made the RESP
 * port fail accept() with "Too many open files"). The kernel gives the
 * lowest free descriptor, so one that high means all below are taken.
 */
static void
http_conn_admit(struct http_conn *hc)
{
	struct server *s = hc->server;
	struct http *h = s->http;
	struct http_conn *x, *next;
	evutil_socket_t fd = bufferevent_getfd(hc->bev);
	struct rlimit rl;

	hc->admitted = 1;
	for (x = TAILQ_FIRST(&h->conns); x != NULL; x = next) {
		next = TAILQ_NEXT(x, entry);
		if (x != hc && http_conn_dead(x))
			http_conn_release(h, x);
	}
	if (h->nconns > (size_t)s->cfg.http_max_connections) {
		http_note(s, HTTP_NOTE_FULL);
		http_conn_shut(hc);
		return;
	}
	if (s->cfg.reserved_fds > 0 && fd >= 0 &&
	    getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)fd + (rlim_t)s->cfg.reserved_fds >= rl.rlim_cur) {
		http_note(s, HTTP_NOTE_FDS);
		http_conn_shut(hc);
		return;
	}
	http_conn_arm(hc, (uint64_t)s->cfg.http_request_timeout * 1000u);
}

static void
http_conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn *hc = arg;
	struct server *s = hc->server;
	uint64_t now = server_now_ms();

	(void)fd, (void)what;
	if (http_conn_dead(hc)) {
		http_conn_release(s->http, hc);
		return;
	}
	if (!hc->admitted) {
		http_conn_admit(hc);
		return;
	}
	if (hc->shut) /* evhttp has not seen the end yet */
		http_conn_arm(hc, HTTP_RECHECK_MS);
	else if (hc->open > 0) /* being answered (a stream): look again */
		http_conn_arm(hc,
		              (uint64_t)s->cfg.http_request_timeout * 1000u);
	else if (now < hc->deadline_ms)
		http_conn_arm(hc, hc->deadline_ms - now);
	else {
		/* The 10 s of evhttp's own timeout start again at every byte:
		 * this one counts from the connection, or from the answer
		 * before, and ends a slowloris. */
		http_note(s, HTTP_NOTE_SLOW);
		http_conn_shut(hc);
	}
}

unsigned long long
http_output(struct server *s, size_t *most)
{
	struct http_conn *hc;
	unsigned long long total = 0;
	size_t n;

	*most = 0;
	if (s->http == NULL)
		return 0;
	TAILQ_FOREACH(hc, &s->http->conns, entry) {
		if (hc->shut || http_conn_dead(hc))
			continue;
		n = evbuffer_get_length(bufferevent_get_output(hc->bev));
		total += n;
		if (n > *most)
			*most = n;
	}
	/* And a snapshot still being made (issue 37). */
	total += admin_api_making(s->http->api, &n);
	if (n > *most)
		*most = n;
	return total;
}

size_t
http_shed(struct server *s)
{
	struct http_conn *hc, *big = NULL;
	size_t n, most = 0;

	TAILQ_FOREACH(hc, &s->http->conns, entry) {
		if (hc->shut || http_conn_dead(hc))
			continue;
		n = evbuffer_get_length(bufferevent_get_output(hc->bev));
		if (n > most)
			big = hc, most = n;
	}
	/* A snapshot being made that holds more goes first. */
	if (admin_api_making(s->http->api, &n) > 0 && n > most)
		return admin_api_drop(s->http->api);
	if (big == NULL)
		return 0;
	log_warnx("http: all clients' output over max_output_memory (%lld "
	          "bytes), this HTTP connection's %zu, closing",
	          (long long)s->cfg.max_output_memory, most);
	s->stats.output_closed_total++;
	http_conn_shut(big);
	return most;
}

void
http_weigh_soon(struct server *s, size_t len)
{
	/* No weighing without the server's timer (fuzz_http's server). At
	 * the end of this turn of the loop, once for all its answers, and
	 * before any of their bytes is written: what csqd holds is counted
	 * whether the kernel would take it soon or not (an answer made of a
	 * few large chains goes to the socket in one turn). */
	if (s->weigh_ev != NULL && s->cfg.max_output_memory > 0 && len > 0)
		event_active(s->weigh_ev, EV_TIMEOUT, 0);
}

/* Every connection's bufferevent (http.tls: through OpenSSL, with tls's
 * certificate), kept track of as above. */
static struct bufferevent *
http_bev(struct event_base *base, void *arg)
{
	struct server *s = arg;
	struct http *h = s->http;
	struct bufferevent *bev;
	struct http_conn *hc;

	bev = s->cfg.http_tls
	          ? tls_accept(s->tls, base, -1)
	          : bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL || h == NULL)
		return bev;
	hc = csq_xcalloc(1, sizeof(*hc));
	hc->server = s;
	hc->bev = bev;
	bufferevent_incref(bev);
	hc->timer = evtimer_new(base, http_conn_timer_cb, hc);
	hc->deadline_ms =
	    server_now_ms() + (uint64_t)s->cfg.http_request_timeout * 1000u;
	TAILQ_INSERT_TAIL(&h->conns, hc, entry);
	h->nconns++;
	event_active(hc->timer, EV_TIMEOUT, 0);
	return bev;
}

void
http_event(struct server *s, const struct csq_event *ev)
{
	if (s->http != NULL)
		admin_events_publish(s->http->events, ev);
}

/*
 * The listening socket, made here rather than by evhttp, which makes one
 * without an error callback: out of descriptors, its accept() failed and
 * was retried at once, for good, at 100 % of a core and with a log line
 * each time (libevent's), until a descriptor was freed.
 */
static struct evconnlistener *
http_listen(struct server *s, const struct config_addr *addr, const char *name)
{
	struct evconnlistener *evl;
	struct addrinfo *res;

	/* The first address only, as evhttp's own bind did. */
	if ((res = listener_resolve(name, "http.listen", addr->host,
	                            addr->port)) == NULL)
		return NULL;
	evl = evconnlistener_new_bind(
	    s->base, NULL, NULL,
	    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
	    HTTP_BACKLOG, res->ai_addr, (int)res->ai_addrlen);
	if (evl == NULL)
		log_error("cannot listen on %s: %s; not starting: free the "
		          "address or change http.listen (\"\" turns HTTP off)",
		          name, strerror(errno));
	freeaddrinfo(res);
	return evl;
}

int
http_open(struct server *s)
{
	char name[CONFIG_STR_MAX + 8], history[CONFIG_STR_MAX + 16] = "";
	struct config_addr addr;
	struct evconnlistener *evl;
	struct http *h;

	if (s->cfg.http_listen[0] == '\0')
		return 0;
	if (config_parse_addr(s->cfg.http_listen, &addr) != 0 || addr.is_unix) {
		log_warnx("invalid http.listen address: %s",
		          s->cfg.http_listen);
		return -1;
	}
	h = csq_xcalloc(1, sizeof(*h));
	TAILQ_INIT(&h->scrapes);
	TAILQ_INIT(&h->conns);
	if ((h->evh = evhttp_new(s->base)) == NULL)
		fatalx("cannot create the HTTP server");
	evhttp_set_timeout(h->evh, HTTP_TIMEOUT_S);
	evhttp_set_max_headers_size(h->evh, HTTP_HEADERS_MAX);
	evhttp_set_max_body_size(h->evh, HTTP_API_BODY_MAX);
	/* Every method reaches the callback, which answers 405 for the
	 * ones it does not serve (evhttp itself would say 501). */
	evhttp_set_allowed_methods(h->evh, HTTP_ALL_METHODS);
	evhttp_set_gencb(h->evh, http_request_cb, s);
	evhttp_set_bevcb(h->evh, http_bev, s);
	snprintf(name, sizeof(name), "http %s", s->cfg.http_listen);
	/* The chart's hour is kept where the state is (admin_history.h). */
	if (s->cfg.http_history[0] != '\0')
		snprintf(history, sizeof(history), "%s", s->cfg.http_history);
	else if (strcmp(s->cfg.engine, "memory") == 0 &&
	         s->cfg.journal[0] != '\0')
		snprintf(history, sizeof(history), "%s.history",
		         s->cfg.journal);
	if ((evl = http_listen(s, &addr, name)) == NULL ||
	    evhttp_bind_listener(h->evh, evl) == NULL) {
		if (evl != NULL) {
			log_warnx("cannot serve http on %s",
			          s->cfg.http_listen);
			evconnlistener_free(evl);
		}
		evhttp_free(h->evh);
		free(h);
		return -1;
	}
	h->guard = accept_guard_new(s->base, evl, name);
	h->metrics = http_cache_new(s, HTTP_METRICS_TYPE);
	h->history = admin_history_new(s->base, s->engine, history);
	h->api = admin_api_new(s, h->history);
	h->events = admin_events_new(s->base, &s->cfg, s->engine);
	h->cmds = http_api_new(s, h->events);
	s->http = h;
	log_info("http listening on %s", s->cfg.http_listen);
	return 0;
}

void
http_close(struct server *s)
{
	struct http *h = s->http;
	struct scrape *x;

	if (h == NULL)
		return;
	/* Engine calls still out may answer later: they find an orphan. */
	while ((x = TAILQ_FIRST(&h->scrapes)) != NULL) {
		TAILQ_REMOVE(&h->scrapes, x, entry);
		x->server = NULL;
		/* Between two turns: no engine call will answer it. */
		if (x->turn != NULL && evtimer_pending(x->turn, NULL))
			scrape_finish(x);
	}
	http_cache_free(h->metrics);
	/* Before evhttp frees their connections. */
	admin_api_free(h->api);
	http_api_free(h->cmds);
	admin_events_free(h->events);
	admin_history_free(h->history);
	accept_guard_free(h->guard); /* before evhttp frees its listener */
	evhttp_free(h->evh);
	while (!TAILQ_EMPTY(&h->conns))
		http_conn_release(h, TAILQ_FIRST(&h->conns));
	free(h);
	s->http = NULL;
}
