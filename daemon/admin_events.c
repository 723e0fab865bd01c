/*
 * The admin view's event stream: the ring of recent events as SSE frames,
 * and the streams that read them.
 *
 * A frame is "id: <id>\nevent: <name>\ndata: <json>\n\n", rendered once
 * for every stream. The ring holds the frames of the last events, their
 * ids one after another: a gap in the ids (the Redis engine's
 * subscription was lost, Redis's state went back) empties it and sends
 * every stream a resync, since what came between is not known here.
 *
 * Events come in while csqd runs commands; their frames wait in one
 * buffer until the end of the loop turn, then go to every stream in one
 * write each, as one chunk.
 */
#include "admin_events.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "config.h"
#include "engine.h"
#include "glob.h"
#include "http.h"
#include "log.h"
#include "util.h"

#define ADMIN_EVENT_JSON_MAX  4096 /* an event's JSON (server.c's too) */
#define ADMIN_FRAME_HEAD_MAX  96   /* "id: ...\nevent: ...\ndata: " */
#define ADMIN_PING_S          15   /* a comment on idle streams */
#define ADMIN_WRITE_TIMEOUT_S 30   /* a stream that takes nothing that long */
#define ADMIN_INPUT_MAX                                                        \
	8192                 /* bytes a client may send after its              \
	                        request, unread, before csqd stops             \
	                        reading it */
#define ADMIN_RETRY_MS  1000 /* the reconnection delay told browsers */
#define ADMIN_ID_DIGITS 20   /* of a uint64_t */

/* Whose an event is, for a filtered stream: the ids of its user:<id> and
 * servicer:<id> channels ("" when it has none). */
struct admin_whose {
	char user[CSQ_ID_MAX + 1];
	char servicer[CSQ_ID_MAX + 1];
};

struct admin_frame {
	uint64_t id;
	char *text;
	size_t len, cap;
	struct admin_whose whose;
};

/* A frame of this turn, in ae->turn. */
struct admin_turn_frame {
	size_t off, len;
	struct admin_whose whose;
};

struct admin_stream {
	TAILQ_ENTRY(admin_stream) entry;
	struct admin_events *ae;
	struct evhttp_request *req;
	struct evhttp_connection *conn;
	struct admin_filter *filter; /* NULL: every event */
};

struct admin_events {
	const struct config *cfg;
	struct csq_engine *engine;
	struct admin_frame *ring; /* cap slots; n from head, oldest first */
	size_t cap, head, n;
	uint64_t last_id;            /* the last event's; 0 before the first */
	struct evbuffer *turn;       /* frames not yet sent to the streams */
	struct admin_turn_frame *tf; /* where each of them is, whose */
	size_t ntf, captf;
	uint64_t nfiltered; /* streams with a filter */
	struct event *flush_ev, *ping_ev;
	TAILQ_HEAD(, admin_stream) streams;
	uint64_t nstreams;
	uint64_t closed_total; /* for a client that did not read */
};

static void admin_flush_cb(evutil_socket_t, short, void *);
static void admin_ping_cb(evutil_socket_t, short, void *);

struct admin_events *
admin_events_new(struct event_base *base, const struct config *cfg,
                 struct csq_engine *engine)
{
	struct admin_events *ae = csq_xcalloc(1, sizeof(*ae));
	struct timeval ping = {ADMIN_PING_S, 0};

	ae->cfg = cfg;
	ae->engine = engine;
	ae->cap = (size_t)cfg->http_event_history;
	ae->ring = csq_xcalloc(ae->cap ? ae->cap : 1, sizeof(*ae->ring));
	if ((ae->turn = evbuffer_new()) == NULL ||
	    (ae->flush_ev = event_new(base, -1, 0, admin_flush_cb, ae)) ==
	        NULL ||
	    (ae->ping_ev =
	         event_new(base, -1, EV_PERSIST, admin_ping_cb, ae)) == NULL)
		fatalx("out of memory for the admin view's events");
	event_add(ae->ping_ev, &ping);
	TAILQ_INIT(&ae->streams);
	return ae;
}

/* The one way a stream ends: unlinked, freed, and its connection closed
 * when it is still there (abort: csqd ends it). */
static void
admin_stream_end(struct admin_stream *st, int abort)
{
	struct admin_events *ae = st->ae;
	struct evhttp_connection *conn = st->conn;

	TAILQ_REMOVE(&ae->streams, st, entry);
	ae->nstreams--;
	if (st->filter != NULL)
		ae->nfiltered--;
	evhttp_connection_set_closecb(conn, NULL, NULL);
	free(st->filter);
	free(st);
	if (abort)
		evhttp_connection_free(conn);
}

/* csqd stops: the stream ends as a response should, with its last chunk
 * (a browser, or a proxy, would otherwise see a response cut short and
 * report an error), as far as the socket takes it at once, since no loop
 * turn comes after this one. The bytes go to the socket directly:
 * evbuffer_write() on evhttp's output buffer fails at this point. Not
 * over TLS (http.tls), whose bytes must go through OpenSSL: there the
 * stream is cut. */
static void
admin_stream_finish(struct admin_stream *st)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(st->conn);
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t len;

	evhttp_send_reply_end(st->req);
	len = evbuffer_get_length(out);
	if (len > 0 && bufferevent_openssl_get_ssl(bev) == NULL)
		(void)send(bufferevent_getfd(bev), evbuffer_pullup(out, -1),
		           len, MSG_NOSIGNAL | MSG_DONTWAIT);
	admin_stream_end(st, 1);
}

void
admin_events_free(struct admin_events *ae)
{
	struct admin_stream *st;
	size_t i;

	if (ae == NULL)
		return;
	while ((st = TAILQ_FIRST(&ae->streams)) != NULL)
		admin_stream_finish(st);
	for (i = 0; i < ae->cap; i++)
		free(ae->ring[i].text);
	free(ae->ring);
	free(ae->tf);
	evbuffer_free(ae->turn);
	event_free(ae->flush_ev);
	event_free(ae->ping_ev);
	free(ae);
}

static struct admin_frame *
admin_ring_at(struct admin_events *ae, size_t i)
{
	return &ae->ring[(ae->head + i) % ae->cap];
}

/* Bytes that the client of st has not taken yet. */
static size_t
admin_stream_unsent(const struct admin_stream *st)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(st->conn);

	return evbuffer_get_length(bufferevent_get_output(bev));
}

void
admin_events_stats(const struct admin_events *ae, uint64_t *streams,
                   uint64_t *unsent, uint64_t *closed)
{
	const struct admin_stream *st;

	*streams = ae->nstreams;
	*unsent = 0;
	TAILQ_FOREACH(st, &ae->streams, entry)
		*unsent += admin_stream_unsent(st);
	*closed = ae->closed_total;
}

/*
 * Adds len bytes to st's stream, or ends it when its client has left too
 * much unread: more than http.event_stream_buffer of what it was sent
 * before. (The bytes of one loop turn go out whole: the socket takes them
 * only after the turn, and a turn of a busy csqd can hold more than the
 * smallest buffer. A stream holds at most that buffer and one turn.) 0,
 * or -1 when st is gone.
 */
static int
admin_stream_send(struct admin_stream *st, const void *data, size_t len)
{
	const struct config *cfg = st->ae->cfg;
	struct evbuffer *b;
	char peer[64] = "?";
	char *addr = NULL;
	ev_uint16_t port = 0;
	size_t unsent = admin_stream_unsent(st);

	if (unsent > (size_t)cfg->http_event_stream_buffer) {
		evhttp_connection_get_peer(st->conn, &addr, &port);
		if (addr != NULL)
			snprintf(peer, sizeof(peer), "%s:%u", addr,
			         (unsigned)port);
		log_info("admin view: event stream of %s closed: %zu bytes "
		         "unread, over http.event_stream_buffer (%lld)",
		         peer, unsent,
		         (long long)cfg->http_event_stream_buffer);
		st->ae->closed_total++;
		admin_stream_end(st, 1);
		return -1;
	}
	if ((b = evbuffer_new()) == NULL)
		fatalx("out of memory for an event stream");
	evbuffer_add(b, data, len);
	evhttp_send_reply_chunk(st->req, b);
	evbuffer_free(b);
	return 0;
}

/* 1 when id (a channel's, "" for none) is one f lets through. */
static int
admin_filter_id(const struct admin_filter *f, const char *id)
{
	size_t len = strlen(id);
	int i;

	if (len == 0)
		return 0;
	if (f->nids == 0)
		return 1;
	for (i = 0; i < f->nids; i++)
		if (csq_glob(f->ids[i], strlen(f->ids[i]), id, len))
			return 1;
	return 0;
}

/* 1 when an event of these channels goes to a stream of f. */
static int
admin_filter_pass(const struct admin_filter *f, const struct admin_whose *w)
{
	return admin_filter_id(f, f->see == ADMIN_SEE_USERS ? w->user
	                                                    : w->servicer);
}

/* The frames of this turn (at data) that st's filter lets through, in one
 * chunk. */
static void
admin_stream_send_whose(struct admin_stream *st, const unsigned char *data)
{
	struct admin_events *ae = st->ae;
	struct evbuffer *b;
	size_t i;

	if ((b = evbuffer_new()) == NULL)
		fatalx("out of memory for an event stream");
	for (i = 0; i < ae->ntf; i++)
		if (admin_filter_pass(st->filter, &ae->tf[i].whose))
			evbuffer_add(b, data + ae->tf[i].off, ae->tf[i].len);
	if (evbuffer_get_length(b) > 0)
		admin_stream_send(st, evbuffer_pullup(b, -1),
		                  evbuffer_get_length(b));
	evbuffer_free(b);
}

/* The frames of this turn go to every stream. */
static void
admin_flush(struct admin_events *ae)
{
	struct admin_stream *st, *next;
	size_t len = evbuffer_get_length(ae->turn);
	const unsigned char *data;

	event_del(ae->flush_ev);
	if (len == 0)
		return;
	data = evbuffer_pullup(ae->turn, -1);
	for (st = TAILQ_FIRST(&ae->streams); st != NULL; st = next) {
		next = TAILQ_NEXT(st, entry);
		if (st->filter == NULL)
			admin_stream_send(st, data, len);
		else
			admin_stream_send_whose(st, data);
	}
	evbuffer_drain(ae->turn, len);
	ae->ntf = 0;
}

static void
admin_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	admin_flush(arg);
}

/* A comment on every stream: proxies keep it open, and a client gone
 * without a word shows itself. */
static void
admin_ping_cb(evutil_socket_t fd, short what, void *arg)
{
	static const char ping[] = ": ping\n\n";
	struct admin_events *ae = arg;
	struct admin_stream *st, *next;

	(void)fd, (void)what;
	admin_flush(ae);
	for (st = TAILQ_FIRST(&ae->streams); st != NULL; st = next) {
		next = TAILQ_NEXT(st, entry);
		admin_stream_send(st, ping, sizeof(ping) - 1);
	}
}

/* "event: resync": the events after the id it resumes from are not all
 * here any more (or never were); it reloads what it shows. */
static int
admin_stream_resync(struct admin_events *ae, struct admin_stream *st)
{
	char frame[128];
	int n;

	n = snprintf(frame, sizeof(frame),
	             "event: resync\ndata: {\"id\":%" PRIu64 "}\n\n",
	             ae->last_id);
	return admin_stream_send(st, frame, (size_t)n);
}

/* The ids went back or skipped some: the ring cannot resume anybody from
 * before this event, and every stream has missed what came between. */
static void
admin_gap(struct admin_events *ae, uint64_t id)
{
	struct admin_stream *st, *next;

	admin_flush(ae);
	if (!TAILQ_EMPTY(&ae->streams))
		log_info("admin view: event ids went from %" PRIu64
		         " to %" PRIu64 "; every event stream resyncs",
		         ae->last_id, id);
	ae->n = 0;
	ae->last_id = id - 1;
	for (st = TAILQ_FIRST(&ae->streams); st != NULL; st = next) {
		next = TAILQ_NEXT(st, entry);
		admin_stream_resync(ae, st);
	}
}

/* The ids of ev's user:<id> and servicer:<id> channels, the ones that
 * SUBSCRIBE would hear it on. */
static void
admin_whose_of(const struct csq_event *ev, struct admin_whose *w)
{
	char ch[CSQ_EVENT_CHANNELS][CSQ_CHANNEL_MAX];
	int i, n = csq_event_channels(ev, ch);

	w->user[0] = w->servicer[0] = '\0';
	for (i = 0; i < n; i++) {
		if (strncmp(ch[i], "user:", 5) == 0)
			snprintf(w->user, sizeof(w->user), "%s", ch[i] + 5);
		else if (strncmp(ch[i], "servicer:", 9) == 0)
			snprintf(w->servicer, sizeof(w->servicer), "%s",
			         ch[i] + 9);
	}
}

/* The frame of ev into f; -1 when its JSON does not fit. */
static int
admin_frame_make(struct admin_frame *f, const struct csq_event *ev)
{
	char json[ADMIN_EVENT_JSON_MAX];
	size_t need;
	int len;

	len = csq_event_json(ev, json, sizeof(json));
	if (len < 0 || (size_t)len >= sizeof(json))
		return -1;
	need = ADMIN_FRAME_HEAD_MAX + (size_t)len + 2;
	if (f->cap < need) {
		f->text = csq_xrealloc(f->text, need);
		f->cap = need;
	}
	f->id = ev->id;
	admin_whose_of(ev, &f->whose);
	f->len = (size_t)snprintf(f->text, f->cap,
	                          "id: %" PRIu64 "\nevent: %s\ndata: %s\n\n",
	                          ev->id, csq_event_name(ev->type), json);
	return 0;
}

void
admin_events_publish(struct admin_events *ae, const struct csq_event *ev)
{
	struct admin_frame *f, spare;

	memset(&spare, 0, sizeof(spare));
	if (ev->id != ae->last_id + 1 && (ae->last_id != 0 || ae->n != 0))
		admin_gap(ae, ev->id);
	if (ae->cap == 0)
		f = &spare;
	else if (ae->n < ae->cap)
		f = admin_ring_at(ae, ae->n++);
	else {
		f = admin_ring_at(ae, 0); /* the oldest gives way */
		ae->head = (ae->head + 1) % ae->cap;
	}
	ae->last_id = ev->id;
	if (admin_frame_make(f, ev) != 0) {
		log_warnx("admin view: event %s too long to stream",
		          csq_event_name(ev->type));
		f->len = 0;
	}
	if (ae->nfiltered > 0) {
		if (ae->ntf == ae->captf) {
			ae->captf = ae->captf ? 2 * ae->captf : 64;
			ae->tf =
			    csq_xrealloc(ae->tf, ae->captf * sizeof(*ae->tf));
		}
		ae->tf[ae->ntf].off = evbuffer_get_length(ae->turn);
		ae->tf[ae->ntf].len = f->len;
		ae->tf[ae->ntf++].whose = f->whose;
	}
	evbuffer_add(ae->turn, f->text, f->len);
	free(spare.text);
	if (!TAILQ_EMPTY(&ae->streams))
		event_active(ae->flush_ev, EV_TIMEOUT, 0);
	else {
		evbuffer_drain(ae->turn, evbuffer_get_length(ae->turn));
		ae->ntf = 0;
	}
}

/* The client went away (or took nothing for too long): evhttp has let go
 * of the request, which is ours to end and free then. */
static void
admin_stream_closed(struct evhttp_connection *conn, void *arg)
{
	struct admin_stream *st = arg;
	struct evhttp_request *req = st->req;

	(void)conn;
	admin_stream_end(st, 0);
	if (evhttp_request_get_connection(req) == NULL)
		evhttp_send_reply_end(req);
}

/* Whether s is an id: decimal digits, 1 to ADMIN_ID_DIGITS of them,
 * within a uint64_t. */
static int
admin_parse_id(const char *s, uint64_t *id)
{
	size_t i, len = strlen(s);
	char *end;

	if (len == 0 || len > ADMIN_ID_DIGITS)
		return -1;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return -1;
	*id = strtoull(s, &end, 10);
	return *end == '\0' && !(*id == UINT64_MAX && len == ADMIN_ID_DIGITS)
	           ? 0
	           : -1;
}

/* The id a stream resumes after: 1 and *id when the request names one
 * (header first), 0 when none, -1 when what it names is no id. */
static int
admin_resume_id(struct evhttp_request *req, uint64_t *id)
{
	const char *h = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Last-Event-ID");
	const char *query =
	    evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	struct evkeyvalq params;
	int rc = 0;

	if (h != NULL)
		return admin_parse_id(h, id) == 0 ? 1 : -1;
	if (query == NULL || evhttp_parse_query_str(query, &params) != 0)
		return 0;
	if ((h = evhttp_find_header(&params, "last_event_id")) != NULL)
		rc = admin_parse_id(h, id) == 0 ? 1 : -1;
	evhttp_clear_headers(&params);
	return rc;
}

/* The events after id from the ring, or a resync when it does not hold
 * them all, or when they would not fit in the stream's buffer. */
static void
admin_stream_resume(struct admin_events *ae, struct admin_stream *st, int have,
                    uint64_t id)
{
	struct admin_frame *f;
	size_t i, from, bytes = 0;

	if (have == 0 || (have == 1 && id == ae->last_id))
		return;
	if (have < 0 || ae->n == 0 || id > ae->last_id ||
	    id + 1 < admin_ring_at(ae, 0)->id) {
		admin_stream_resync(ae, st);
		return;
	}
	from = (size_t)(id + 1 - admin_ring_at(ae, 0)->id);
	for (i = from; i < ae->n; i++)
		bytes += admin_ring_at(ae, i)->len;
	if (bytes > (size_t)ae->cfg->http_event_stream_buffer) {
		admin_stream_resync(ae, st);
		return;
	}
	for (i = from; i < ae->n; i++) {
		f = admin_ring_at(ae, i);
		if (st->filter != NULL &&
		    !admin_filter_pass(st->filter, &f->whose))
			continue;
		if (admin_stream_send(st, f->text, f->len) != 0)
			return;
	}
}

int
admin_events_full(const struct admin_events *ae)
{
	return ae->nstreams >= (uint64_t)ae->cfg->http_max_event_streams;
}

void
admin_events_serve(struct admin_events *ae, struct evhttp_request *req)
{
	admin_events_serve_for(ae, req, NULL);
}

void
admin_events_serve_for(struct admin_events *ae, struct evhttp_request *req,
                       const struct admin_filter *filter)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
	struct timeval wtv = {ADMIN_WRITE_TIMEOUT_S, 0};
	struct admin_stream *st;
	struct evbuffer *b;
	uint64_t id = 0, engine_id;
	int have = admin_resume_id(req, &id);

	evhttp_add_header(h, "Content-Type", "text/event-stream");
	evhttp_add_header(h, "Cache-Control", "no-store");
	/* nginx would hold the stream back in its buffer. */
	evhttp_add_header(h, "X-Accel-Buffering", "no");
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		evhttp_send_reply(req, HTTP_OK, "OK", NULL);
		return;
	}
	if (admin_events_full(ae)) {
		evhttp_remove_header(h, "Content-Type");
		http_text(req, HTTP_SERVUNAVAIL, "Service Unavailable",
		          "too many event streams (http.max_event_streams)\n");
		return;
	}
	/* What went to the others so far, before this one joins them; and
	 * the events the engine has put behind it without this daemon
	 * seeing them (the Redis engine's, from before it subscribed, or
	 * lost with its subscription), which no stream will get. */
	admin_flush(ae);
	engine_id = csq_engine_last_event_id(ae->engine);
	if (engine_id > ae->last_id)
		admin_gap(ae, engine_id + 1);
	st = csq_xcalloc(1, sizeof(*st));
	st->ae = ae;
	st->req = req;
	st->conn = conn;
	if (filter != NULL) {
		/* Where this turn's frames are, from the next one on: those
		 * already in it have gone out (admin_flush above). */
		st->filter = csq_xmalloc(sizeof(*st->filter));
		*st->filter = *filter;
		ae->nfiltered++;
	}
	TAILQ_INSERT_TAIL(&ae->streams, st, entry);
	ae->nstreams++;
	evhttp_connection_set_closecb(conn, admin_stream_closed, st);
	evhttp_send_reply_start(req, HTTP_OK, "OK");
	/* evhttp's read timeout would end a stream whose client, rightly,
	 * sends nothing; a client that takes nothing for long is gone. What
	 * it sends is not read past a bound: it has nothing to say. */
	bufferevent_set_timeouts(bev, NULL, &wtv);
	bufferevent_setwatermark(bev, EV_READ, 0, ADMIN_INPUT_MAX);
	if ((b = evbuffer_new()) == NULL)
		fatalx("out of memory for an event stream");
	evbuffer_add_printf(b, "retry: %d\n\n", ADMIN_RETRY_MS);
	evhttp_send_reply_chunk(req, b);
	evbuffer_free(b);
	admin_stream_resume(ae, st, have, id);
}
