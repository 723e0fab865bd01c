/*
 * The admin view's JSON API. A request is a round of engine calls made as
 * one group, whose answers are copied as they come; the answer is written
 * when the last has come: at once with the memory engine, later with the
 * Redis engine. A snapshot is STATS, QUEUES, SERVICERS and the ROOMS of
 * every servicer (ROOMS without a servicer, which no command sends), the
 * queues and the servicers by slices of ADMIN_SLICE; a page of a line is
 * QUEUES of its queue (its length and longest wait) and QUEUE. A
 * snapshot's rounds serve every request that comes while they run, and
 * its answer those within http.cache_ms (http_cache.h).
 */
#include "admin_api.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "admin_history.h"
#include "command_queue.h"
#include "engine.h"
#include "http.h"
#include "http_cache.h"
#include "log.h"
#include "op_reply.h"
#include "server.h"
#include "util.h"

#define ADMIN_JSON_TYPE  "application/json"
#define ADMIN_INT_DIGITS 19 /* of an offset or a count, at most */
/* Queues, or servicers, of a snapshot per turn of the loop (issue 37): a
 * slice's calls and its JSON take a few milliseconds, and other clients
 * are served between two slices. */
#define ADMIN_SLICE       1000
#define ADMIN_QUEUE_BYTES 160 /* a queue's JSON, about */
/* The answer to the requests of a snapshot dropped for max_output_memory
 * while it was being made. */
#define ADMIN_DROPPED "output over max_output_memory"

/* The calls of a snapshot, in order. QSTATS last: should it fail, the
 * rest stands without the estimates. */
enum {
	SNAP_STATS,
	SNAP_QUEUES,
	SNAP_SERVICERS,
	SNAP_ROOMS,
	SNAP_QSTATS,
	SNAP_CALLS
};
/* And of a page of a line. */
enum { PAGE_QUEUES, PAGE_QUEUE, PAGE_QSTATS, PAGE_CALLS };

enum admin_kind { ADMIN_SNAPSHOT, ADMIN_PAGE };

struct admin_call;

/* One engine call of a round: which request, and which call it is. */
struct admin_slot {
	struct admin_call *x;
	size_t i;
};

struct admin_call {
	TAILQ_ENTRY(admin_call) entry;
	struct admin_api *api;      /* NULL: orphaned by a stop */
	struct evhttp_request *req; /* NULL: the client went away */
	enum admin_kind kind;
	struct admin_slot slots[SNAP_CALLS];
	size_t pending;
	int issuing;            /* inside admin_round: its answers wait */
	enum csq_status status; /* the first failure */
	uint64_t event_id;      /* what the round's state has seen */
	struct csq_stats stats; /* snapshot */
	struct csq_queue_info *queues;
	size_t nqueues;
	struct csq_servicer_info *servicers;
	size_t nservicers;
	struct csq_room_info *rooms; /* by servicer, then index */
	size_t nrooms;
	struct csq_queue_stats *qstats; /* NULL: the engine has none */
	size_t nqstats;
	/* A snapshot made in slices: the answer so far, where the next
	 * slice begins (after this name), the timer that runs it at the
	 * loop's next turn, and the queues written; then the same of the
	 * servicers (serving: the queues are all written). The first
	 * round has the first slice of each, one state. */
	struct evbuffer *body;
	char after[CSQ_ID_MAX + 1];
	int more;
	struct event *turn;
	size_t written;
	int serving;
	int dropped; /* over max_output_memory: answered 503 */
	char safter[CSQ_ID_MAX + 1];
	int smore;
	size_t swritten;
	char queue[CSQ_ID_MAX + 1]; /* page */
	uint64_t offset;
	uint32_t count;
	struct csq_queue_entry *entries;
	size_t nentries;
};

struct admin_api {
	struct server *s;
	struct admin_history *history;
	TAILQ_HEAD(, admin_call) calls;
	struct http_cache *snapshots; /* the snapshot's answer, shared */
};

static void admin_call_free(struct admin_call *);

struct admin_api *
admin_api_new(struct server *s, struct admin_history *history)
{
	struct admin_api *api = csq_xcalloc(1, sizeof(*api));

	api->s = s;
	api->history = history;
	api->snapshots = http_cache_new(s, ADMIN_JSON_TYPE);
	TAILQ_INIT(&api->calls);
	return api;
}

void
admin_api_free(struct admin_api *api)
{
	struct admin_call *x;

	if (api == NULL)
		return;
	while ((x = TAILQ_FIRST(&api->calls)) != NULL) {
		TAILQ_REMOVE(&api->calls, x, entry);
		x->api = NULL;
		x->req = NULL;
		/* Between two slices: no engine call will answer it. */
		if (x->turn != NULL && evtimer_pending(x->turn, NULL))
			admin_call_free(x);
	}
	http_cache_free(api->snapshots);
	free(api);
}

/* A JSON string; ids need no escape, anything else gets one. */
static void
json_str(struct evbuffer *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	evbuffer_add(b, "\"", 1);
	for (; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			evbuffer_add_printf(b, "\\%c", *p);
		else if (*p < 0x20)
			evbuffer_add_printf(b, "\\u%04x", *p);
		else
			evbuffer_add(b, p, 1);
	}
	evbuffer_add(b, "\"", 1);
}

static void
json_key_str(struct evbuffer *b, const char *key, const char *value)
{
	evbuffer_add_printf(b, "\"%s\":", key);
	json_str(b, value);
}

static void
json_key_u64(struct evbuffer *b, const char *key, uint64_t value)
{
	evbuffer_add_printf(b, "\"%s\":%" PRIu64, key, value);
}

static void
json_key_i64(struct evbuffer *b, const char *key, int64_t value)
{
	evbuffer_add_printf(b, "\"%s\":%" PRId64, key, value);
}

/* A queue's business hours (protocol.md 3c), when it has them: open now,
 * and the next change. */
static void
json_hours(struct evbuffer *b, const struct csq_queue_stats *qs)
{
	if (!qs->hours)
		return;
	evbuffer_add_printf(b, ",\"open\":%s", qs->open ? "true" : "false");
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "next_change_ms", qs->next_change_ms);
}

/* The wait estimate and the service level of a queue, as QSTATS has
 * them (-1: none yet), after the fields before them; nothing when the
 * engine has no QSTATS. */
static void
json_estimate(struct evbuffer *b, const struct csq_queue_stats *qs)
{
	if (qs == NULL)
		return;
	evbuffer_add(b, ",", 1);
	json_key_i64(b, "eta_ms", qs->eta_ms);
	evbuffer_add(b, ",", 1);
	json_key_i64(b, "service_level_pct", qs->service_level_pct);
	/* The page's abandon rate (issue 38): QSTATS's counters. */
	evbuffer_add(b, ",", 1);
	json_key_i64(b, "matched_total", (int64_t)qs->matched_total);
	evbuffer_add(b, ",", 1);
	json_key_i64(b, "abandoned_total", (int64_t)qs->abandoned_total);
	json_hours(b, qs);
}

/* What QSTATS says of who serves a queue and who waits with needs
 * (protocol.md 3c): its servicers logged in, its spell of nobody (a
 * queue with a nobody policy), its users with needs by need-set. */
static void
json_serving(struct evbuffer *b, const struct csq_queue_stats *qs)
{
	uint32_t i;

	if (qs == NULL)
		return;
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "servicers", qs->servicers);
	if (qs->nobody_ms != CSQ_QSTATS_NO_NOBODY) {
		evbuffer_add(b, ",", 1);
		json_key_i64(b, "nobody_ms", qs->nobody_ms);
	}
	evbuffer_add_printf(b, ",\"needs_waiting\":[");
	for (i = 0; i < qs->ngroups; i++) {
		evbuffer_add(b, i > 0 ? ",{" : "{", i > 0 ? 2 : 1);
		json_key_str(b, "needs", qs->groups[i].needs);
		evbuffer_add(b, ",", 1);
		json_key_u64(b, "waiting", qs->groups[i].waiting);
		evbuffer_add(b, "}", 1);
	}
	evbuffer_add(b, "]", 1);
	json_hours(b, qs);
}

/* name's QSTATS among v's n, NULL when the engine has none (v NULL). The
 * one at hint is tried first: QUEUES and QSTATS list the queues in the
 * same order. A queue that QSTATS does not list has its defaults (no
 * estimate, no service level yet), as QSTATS of it would answer. */
static const struct csq_queue_stats *
admin_qstats_of(const struct csq_queue_stats *v, size_t n, size_t hint,
                const char *name)
{
	static const struct csq_queue_stats none = {.eta_ms = -1,
	                                            .service_level_pct = -1,
	                                            .nobody_ms =
	                                                CSQ_QSTATS_NO_NOBODY};
	size_t i;

	if (v == NULL)
		return NULL;
	if (hint < n && strcmp(v[hint].queue, name) == 0)
		return &v[hint];
	for (i = 0; i < n; i++) {
		if (strcmp(v[i].queue, name) == 0)
			return &v[i];
	}
	return &none;
}

/* "a,b,c" as ["a","b","c"]. */
static void
json_list(struct evbuffer *b, const char *list)
{
	const char *comma;
	char one[CSQ_ID_MAX + 1];
	int first = 1;
	size_t len;

	evbuffer_add(b, "[", 1);
	while (*list != '\0') {
		comma = strchr(list, ',');
		len = comma != NULL ? (size_t)(comma - list) : strlen(list);
		if (len > CSQ_ID_MAX)
			len = CSQ_ID_MAX;
		memcpy(one, list, len);
		one[len] = '\0';
		if (!first)
			evbuffer_add(b, ",", 1);
		json_str(b, one);
		first = 0;
		list = comma != NULL ? comma + 1 : list + strlen(list);
	}
	evbuffer_add(b, "]", 1);
}

static void
admin_send_json(struct evhttp_request *req, int code, const char *reason,
                struct evbuffer *b)
{
	http_reply(req, code, reason, ADMIN_JSON_TYPE, b);
}

/* The answer to x's request, which is then no longer x's to watch. */
static void
admin_answer(struct admin_call *x, int code, const char *reason,
             struct evbuffer *b)
{
	struct evhttp_request *req = x->req;

	evhttp_connection_set_closecb(evhttp_request_get_connection(req), NULL,
	                              NULL);
	x->req = NULL;
	admin_send_json(req, code, reason, b);
}

static struct evbuffer *
admin_error_json(const char *text)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL)
		fatalx("out of memory for an HTTP answer");
	evbuffer_add(b, "{", 1);
	json_key_str(b, "error", text);
	evbuffer_add(b, "}\n", 2);
	return b;
}

void
admin_api_error(struct evhttp_request *req, int code, const char *reason,
                const char *text)
{
	struct evbuffer *b = admin_error_json(text);

	admin_send_json(req, code, reason, b);
	evbuffer_free(b);
}

static void
admin_call_error(struct admin_call *x, const char *text)
{
	struct evbuffer *b = admin_error_json(text);

	if (x->kind == ADMIN_SNAPSHOT)
		http_cache_fill(x->api->snapshots, HTTP_SERVUNAVAIL,
		                "Service Unavailable", b);
	else
		admin_answer(x, HTTP_SERVUNAVAIL, "Service Unavailable", b);
	evbuffer_free(b);
}

/*
 * The queues of a snapshot are most of its bytes (100,000 of them: 12 MB),
 * so they are written without printf, into one buffer each: a third of a
 * snapshot's time was vfprintf and evbuffer_add of small pieces (issue 37).
 */
#define JSON_QUEUE_MAX 1280 /* two ids escaped at worst, and the rest */

static char *
fmt_lit(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

static char *
fmt_u64(char *p, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	while (n > 0)
		*p++ = tmp[--n];
	return p;
}

static char *
fmt_i64(char *p, int64_t v)
{
	if (v >= 0)
		return fmt_u64(p, (uint64_t)v);
	*p++ = '-';
	return fmt_u64(p, (uint64_t)0 - (uint64_t)v);
}

/* A JSON string of at most CSQ_ID_MAX bytes, as json_str writes it. */
static char *
fmt_str(char *p, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *c = (const unsigned char *)s;
	size_t i;

	*p++ = '"';
	for (i = 0; c[i] != '\0' && i < CSQ_ID_MAX; i++) {
		if (c[i] == '"' || c[i] == '\\') {
			*p++ = '\\';
			*p++ = (char)c[i];
		} else if (c[i] < 0x20) {
			p = fmt_lit(p, "\\u00");
			*p++ = hex[c[i] >> 4];
			*p++ = hex[c[i] & 15];
		} else
			*p++ = (char)c[i];
	}
	*p++ = '"';
	return p;
}

/* A queue of QUEUES, with its estimate from QSTATS (qs, or NULL). */
static void
json_queue(struct evbuffer *b, const struct csq_queue_info *q,
           const struct csq_queue_stats *qs)
{
	char buf[JSON_QUEUE_MAX], *p = buf;

	p = fmt_str(fmt_lit(p, "{\"name\":"), q->name);
	p = fmt_u64(fmt_lit(p, ",\"waiting\":"), q->waiting);
	p = fmt_u64(fmt_lit(p, ",\"preferring\":"), q->preferring);
	p = fmt_u64(fmt_lit(p, ",\"oldest_wait_ms\":"), q->oldest_wait_ms);
	p = fmt_str(fmt_lit(p, ",\"oldest_user\":"), q->oldest_user);
	if (qs != NULL) {
		p = fmt_i64(fmt_lit(p, ",\"eta_ms\":"), qs->eta_ms);
		p = fmt_i64(fmt_lit(p, ",\"service_level_pct\":"),
		            qs->service_level_pct);
		/* The page's abandon rate (issue 38): QSTATS's counters. */
		p = fmt_u64(fmt_lit(p, ",\"matched_total\":"),
		            qs->matched_total);
		p = fmt_u64(fmt_lit(p, ",\"abandoned_total\":"),
		            qs->abandoned_total);
	}
	evbuffer_add(b, buf, (size_t)(p - buf));
	json_serving(b, qs); /* needs_waiting may be long: not in buf */
	evbuffer_add(b, "}", 1);
}

static void
json_room(struct evbuffer *b, const struct csq_room_info *r)
{
	evbuffer_add(b, "{", 1);
	json_key_str(b, "room", r->room);
	evbuffer_add(b, ",", 1);
	json_key_str(b, "state", op_reply_room_state(r->state));
	evbuffer_add(b, ",", 1);
	json_key_str(b, "user", r->user);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "since_ms", r->since_ms);
	evbuffer_add(b, ",", 1);
	json_key_str(b, "needs", r->needs); /* its user's (3c) */
	evbuffer_add(b, "}", 1);
}

/* s, with its rooms: those of *rooms that are its (the rooms come by
 * servicer id, as the servicers do), which *rooms then moves past. */
static void
json_servicer(struct evbuffer *b, const struct csq_servicer_info *s,
              const struct csq_room_info **rooms,
              const struct csq_room_info *end)
{
	size_t idlen = strlen(s->id);
	int first = 1;

	evbuffer_add(b, "{", 1);
	json_key_str(b, "id", s->id);
	evbuffer_add(b, ",", 1);
	json_key_str(b, "status",
	             s->status == CSQ_SERVICER_READY ? "ready" : "paused");
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "capacity", s->capacity);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "active", s->active);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "idle_ms", s->idle_ms);
	/* Why it is paused, and how long it rests after a DECLINE (issue
	 * 38): "" and 0 when neither. */
	evbuffer_add(b, ",", 1);
	json_key_str(b, "paused_by",
	             s->paused_by != CSQ_REASON_NONE
	                 ? csq_reason_name(s->paused_by)
	                 : "");
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "resting_ms", s->resting_ms);
	/* Conversations it ended since its login, and their time in all
	 * (the page's handled count and mean handle time, issue 38). */
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "handled_total", s->handled_total);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "handle_ms_total", s->handle_ms_total);
	evbuffer_add(b, ",\"queues\":", 10);
	json_list(b, s->queues);
	evbuffer_add(b, ",", 1);
	json_key_str(b, "skills", s->skills); /* canonical, "" none (3c) */
	evbuffer_add(b, ",\"rooms\":[", 10);
	for (; *rooms < end && strncmp((*rooms)->room, s->id, idlen) == 0 &&
	       (*rooms)->room[idlen] == '/';
	     (*rooms)++) {
		if (!first)
			evbuffer_add(b, ",", 1);
		json_room(b, *rooms);
		first = 0;
	}
	evbuffer_add(b, "]}", 2);
}

/* A snapshot's head: its id, time and STATS, up to its queues. */
static void
admin_render_head(struct admin_call *x, struct evbuffer *b)
{
	struct op_reply_stat f[OP_REPLY_STATS_MAX];
	size_t i, n = op_reply_stats(&x->stats, f);

	evbuffer_add(b, "{", 1);
	json_key_u64(b, "id", x->event_id);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "ts", server_now_ms());
	evbuffer_add(b, ",\"stats\":{", 10);
	for (i = 0; i < n; i++) {
		if (i > 0)
			evbuffer_add(b, ",", 1);
		json_key_u64(b, f[i].name, f[i].value);
	}
	evbuffer_add(b, "},\"queues\":[", 12);
}

/* The queues of a slice, each with its QSTATS: both lists are in name
 * order, so one walk pairs them (QSTATS lists every queue that exists,
 * QUEUES those with someone waiting or serving). */
static void
admin_render_queues(struct admin_call *x, struct evbuffer *b)
{
	static const struct csq_queue_stats none = {.eta_ms = -1,
	                                            .service_level_pct = -1};
	const struct csq_queue_stats *qs;
	size_t i, j = 0;
	int cmp = 1;

	/* The slice's bytes in one chain (about 130 per queue): a body of
	 * a few large chains is cheap to share with every request. */
	evbuffer_expand(b, x->nqueues * ADMIN_QUEUE_BYTES);
	for (i = 0; i < x->nqueues; i++) {
		if (x->written++ > 0)
			evbuffer_add(b, ",", 1);
		qs = NULL;
		if (x->qstats != NULL) {
			while (j < x->nqstats &&
			       (cmp = strcmp(x->qstats[j].queue,
			                     x->queues[i].name)) < 0)
				j++;
			qs = j < x->nqstats && cmp == 0 ? &x->qstats[j] : &none;
		}
		json_queue(b, &x->queues[i], qs);
	}
}

/* The servicers of a slice, with their rooms (both by servicer id). */
static void
admin_render_servicers(struct admin_call *x, struct evbuffer *b)
{
	const struct csq_room_info *room = x->rooms;
	size_t i;

	for (i = 0; i < x->nservicers; i++) {
		if (x->swritten++ > 0)
			evbuffer_add(b, ",", 1);
		json_servicer(b, &x->servicers[i], &room, x->rooms + x->nrooms);
	}
}

/* Its tail: the history. */
static void
admin_render_tail(struct admin_call *x, struct evbuffer *b)
{
	evbuffer_add(b, "],\"history\":", 12);
	admin_history_json(x->api->history, b);
	evbuffer_add(b, "}\n", 2);
}

static void
admin_render_page(struct admin_call *x, struct evbuffer *b)
{
	const struct csq_queue_entry *e;
	size_t i;

	evbuffer_add(b, "{", 1);
	json_key_str(b, "queue", x->queue);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "id", x->event_id);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "ts", server_now_ms());
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "total", x->nqueues == 1 ? x->queues[0].waiting : 0);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "preferring",
	             x->nqueues == 1 ? x->queues[0].preferring : 0);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "offset", x->offset);
	evbuffer_add(b, ",", 1);
	json_key_u64(b, "oldest_wait_ms",
	             x->nqueues == 1 ? x->queues[0].oldest_wait_ms : 0);
	evbuffer_add(b, ",", 1);
	json_key_str(b, "oldest_user",
	             x->nqueues == 1 ? x->queues[0].oldest_user : "");
	json_estimate(b, admin_qstats_of(x->qstats, x->nqstats, 0, x->queue));
	evbuffer_add(b, ",\"users\":[", 10);
	for (i = 0; i < x->nentries; i++) {
		e = &x->entries[i];
		if (i > 0)
			evbuffer_add(b, ",", 1);
		evbuffer_add(b, "{", 1);
		json_key_str(b, "user", e->user);
		evbuffer_add(b, ",", 1);
		json_key_u64(b, "tier", e->tier);
		evbuffer_add(b, ",", 1);
		json_key_u64(b, "position", x->offset + i + 1);
		evbuffer_add(b, ",", 1);
		json_key_u64(b, "waited_ms", e->waited_ms);
		evbuffer_add(b, ",", 1);
		json_key_str(b, "needs", e->needs); /* in force (3c) */
		evbuffer_add(b, "}", 1);
	}
	evbuffer_add(b, "]}\n", 3);
}

static void
admin_call_free(struct admin_call *x)
{
	if (x->api != NULL)
		TAILQ_REMOVE(&x->api->calls, x, entry);
	if (x->req != NULL)
		evhttp_connection_set_closecb(
		    evhttp_request_get_connection(x->req), NULL, NULL);
	free(x->queues);
	free(x->servicers);
	free(x->rooms);
	free(x->qstats);
	free(x->entries);
	if (x->body != NULL)
		evbuffer_free(x->body);
	if (x->turn != NULL)
		event_free(x->turn);
	free(x);
}

/* The client went away before the answer: a request that evhttp has let
 * go of is ours to free. */
static void
admin_conn_closed(struct evhttp_connection *conn, void *arg)
{
	struct admin_call *x = arg;

	(void)conn;
	if (evhttp_request_get_connection(x->req) == NULL)
		evhttp_request_free(x->req);
	x->req = NULL;
}

static void admin_slice_round(struct admin_call *);

static void
admin_turn_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	admin_slice_round(arg);
}

/* The next slice's calls at the loop's next turn. */
static void
admin_next_turn(struct admin_call *x)
{
	static const struct timeval now = {0, 0};

	if (x->turn == NULL)
		x->turn = evtimer_new(x->api->s->base, admin_turn_cb, x);
	evtimer_add(x->turn, &now);
}

/*
 * A slice of a snapshot has come: its queues are written, and the next
 * slice's calls go at the loop's next turn, so that the clients that
 * came meanwhile are served first; after the last, the servicers (those
 * of the first round, then a slice a turn the same way) and the history,
 * and the answer is the cache's.
 */
static void
admin_snapshot_slice(struct admin_call *x)
{
	struct server *s = x->api->s;

	if (x->body == NULL) {
		if ((x->body = evbuffer_new()) == NULL)
			fatalx("out of memory for an HTTP answer");
		admin_render_head(x, x->body);
	}
	if (!x->serving) {
		admin_render_queues(x, x->body);
		free(x->queues);
		free(x->qstats);
		x->queues = NULL;
		x->qstats = NULL;
		x->nqueues = x->nqstats = 0;
		if (x->more) {
			http_weigh_soon(s, evbuffer_get_length(x->body));
			admin_next_turn(x);
			return;
		}
		evbuffer_add(x->body, "],\"servicers\":[", 15);
		x->serving = 1;
	}
	admin_render_servicers(x, x->body);
	free(x->servicers);
	free(x->rooms);
	x->servicers = NULL;
	x->rooms = NULL;
	x->nservicers = x->nrooms = 0;
	if (x->smore) {
		http_weigh_soon(s, evbuffer_get_length(x->body));
		admin_next_turn(x);
		return;
	}
	admin_render_tail(x, x->body);
	http_cache_fill(x->api->snapshots, HTTP_OK, "OK", x->body);
	admin_call_free(x);
}

static void
admin_done(struct admin_call *x)
{
	struct evbuffer *b;
	const char *why;

	/* A snapshot's round has no request of its own: the cache's. */
	if (x->api == NULL || (x->req == NULL && x->kind != ADMIN_SNAPSHOT)) {
		admin_call_free(x);
		return;
	}
	if (x->dropped) {
		admin_call_error(x, ADMIN_DROPPED);
		admin_call_free(x);
		return;
	}
	if (x->status != CSQ_OK) {
		/* The text without its code word: "engine unavailable, ..." */
		why = strchr(csq_status_text(x->status), ' ');
		admin_call_error(x, why != NULL ? why + 1 : "engine error");
		admin_call_free(x);
		return;
	}
	if (x->kind == ADMIN_SNAPSHOT) {
		admin_snapshot_slice(x);
		return;
	}
	if ((b = evbuffer_new()) == NULL)
		fatalx("out of memory for an HTTP answer");
	{
		admin_render_page(x, b);
		admin_answer(x, HTTP_OK, "OK", b);
	}
	evbuffer_free(b);
	admin_call_free(x);
}

/* A copy of n items of size bytes (the engine's are the callback's). */
static void *
admin_copy(const void *v, size_t n, size_t size)
{
	void *p = csq_xcalloc(n + 1, size);

	if (n > 0)
		memcpy(p, v, n * size);
	return p;
}

static void
admin_qstats_result(struct admin_call *x, const struct csq_result *r)
{
	x->qstats = admin_copy(r->qstats, r->nentries, sizeof(*r->qstats));
	x->nqstats = r->nentries;
}

static void
admin_snapshot_result(struct admin_call *x, size_t i,
                      const struct csq_result *r)
{
	switch (i) {
	case SNAP_STATS:
		x->stats = r->stats;
		x->event_id = r->event_id;
		break;
	case SNAP_QUEUES:
		x->queues =
		    admin_copy(r->queues, r->nentries, sizeof(*r->queues));
		x->nqueues = r->nentries;
		/* Where the next slice begins (none: this was the last). */
		if ((x->more = r->next != NULL))
			snprintf(x->after, sizeof(x->after), "%s", r->next);
		break;
	case SNAP_SERVICERS:
		x->servicers = admin_copy(r->servicers, r->nentries,
		                          sizeof(*r->servicers));
		x->nservicers = r->nentries;
		/* ROOMS's slice visits the same servicers. */
		if ((x->smore = r->next != NULL))
			snprintf(x->safter, sizeof(x->safter), "%s", r->next);
		break;
	case SNAP_ROOMS:
		x->rooms = admin_copy(r->rooms, r->nentries, sizeof(*r->rooms));
		x->nrooms = r->nentries;
		break;
	default:
		admin_qstats_result(x, r);
		break;
	}
}

static void
admin_page_result(struct admin_call *x, size_t i, const struct csq_result *r)
{
	if (i == PAGE_QUEUES) {
		x->queues =
		    admin_copy(r->queues, r->nentries, sizeof(*r->queues));
		x->nqueues = r->nentries;
		x->event_id = r->event_id;
	} else if (i == PAGE_QSTATS) {
		admin_qstats_result(x, r);
	} else {
		x->entries =
		    admin_copy(r->entries, r->nentries, sizeof(*r->entries));
		x->nentries = r->nentries;
	}
}

static int
admin_is_qstats(const struct admin_call *x, size_t i)
{
	return i == (x->kind == ADMIN_SNAPSHOT ? SNAP_QSTATS : PAGE_QSTATS);
}

static void
admin_result(void *arg, const struct csq_result *r)
{
	struct admin_slot *slot = arg;
	struct admin_call *x = slot->x;

	if (r->status != CSQ_OK) {
		/* An engine without QSTATS: no estimates, the rest stands. */
		if (x->status == CSQ_OK && !admin_is_qstats(x, slot->i))
			x->status = r->status;
	} else if (x->kind == ADMIN_SNAPSHOT)
		admin_snapshot_result(x, slot->i, r);
	else
		admin_page_result(x, slot->i, r);
	if (--x->pending == 0 && !x->issuing)
		admin_done(x);
}

static void
admin_op(struct csq_op *op, enum csq_opcode code, const char *id)
{
	memset(op, 0, sizeof(*op));
	op->code = code;
	op->id = id;
	op->ttl_s = -1;
}

/* Every call of the request, as one group. */
static void
admin_round(struct admin_call *x)
{
	struct csq_engine *e = x->api->s->engine;
	size_t i, n = x->kind == ADMIN_SNAPSHOT ? SNAP_CALLS : PAGE_CALLS;
	struct csq_op op;

	x->pending = n;
	x->issuing = 1;
	csq_engine_group_begin(e);
	for (i = 0; i < n; i++) {
		x->slots[i].x = x;
		x->slots[i].i = i;
		if (x->kind == ADMIN_PAGE && i == PAGE_QUEUES)
			admin_op(&op, CSQ_OP_QUEUES, x->queue);
		else if (admin_is_qstats(x, i)) {
			admin_op(&op, CSQ_OP_QSTATS,
			         x->kind == ADMIN_PAGE ? x->queue : NULL);
			if (x->kind == ADMIN_SNAPSHOT)
				op.count = ADMIN_SLICE;
		} else if (x->kind == ADMIN_PAGE) {
			admin_op(&op, CSQ_OP_QUEUE, x->queue);
			op.offset = x->offset;
			op.count = x->count;
		} else if (i == SNAP_STATS)
			admin_op(&op, CSQ_OP_STATS, NULL);
		else if (i == SNAP_QUEUES) {
			admin_op(&op, CSQ_OP_QUEUES, NULL);
			op.count = ADMIN_SLICE;
		} else {
			admin_op(&op,
			         i == SNAP_SERVICERS ? CSQ_OP_SERVICERS
			                             : CSQ_OP_ROOMS,
			         NULL);
			op.count = ADMIN_SLICE;
		}
		csq_engine_call(e, &op, admin_result, &x->slots[i]);
	}
	csq_engine_group_end(e);
	x->issuing = 0;
	if (x->pending == 0)
		admin_done(x);
}

/* The next slice of a snapshot's servicers: SERVICERS and ROOMS from its
 * cursor, as one group (the same servicers visited by both). */
static void
admin_servicers_round(struct admin_call *x)
{
	struct csq_engine *e = x->api->s->engine;
	struct csq_op op;
	size_t i, codes[] = {SNAP_SERVICERS, SNAP_ROOMS};
	char after[CSQ_ID_MAX + 1];

	/* The memory engine answers SERVICERS before ROOMS is asked, and
	 * the answer moves x->safter on: both go on after this one. */
	memcpy(after, x->safter, sizeof(after));
	x->pending = 2;
	x->issuing = 1;
	csq_engine_group_begin(e);
	for (i = 0; i < 2; i++) {
		x->slots[codes[i]].x = x;
		x->slots[codes[i]].i = codes[i];
		admin_op(&op, i == 0 ? CSQ_OP_SERVICERS : CSQ_OP_ROOMS, NULL);
		op.after = after;
		op.count = ADMIN_SLICE;
		csq_engine_call(e, &op, admin_result, &x->slots[codes[i]]);
	}
	csq_engine_group_end(e);
	x->issuing = 0;
	if (x->pending == 0)
		admin_done(x);
}

/* The next slice of a snapshot: QUEUES and QSTATS from its cursor, as
 * one group (the same queues visited by both); once they are all
 * written, the servicers'. */
static void
admin_slice_round(struct admin_call *x)
{
	struct csq_engine *e = x->api->s->engine;
	struct csq_op op;
	char after[CSQ_ID_MAX + 1];

	if (x->serving) {
		admin_servicers_round(x);
		return;
	}
	/* The memory engine answers QUEUES before QSTATS is asked, and the
	 * answer moves x->after on: both go on after this one. */
	memcpy(after, x->after, sizeof(after));
	x->pending = 2;
	x->issuing = 1;
	csq_engine_group_begin(e);
	x->slots[SNAP_QUEUES].x = x;
	x->slots[SNAP_QUEUES].i = SNAP_QUEUES;
	admin_op(&op, CSQ_OP_QUEUES, NULL);
	op.after = after;
	op.count = ADMIN_SLICE;
	csq_engine_call(e, &op, admin_result, &x->slots[SNAP_QUEUES]);
	x->slots[SNAP_QSTATS].x = x;
	x->slots[SNAP_QSTATS].i = SNAP_QSTATS;
	admin_op(&op, CSQ_OP_QSTATS, NULL);
	op.after = after;
	op.count = ADMIN_SLICE;
	csq_engine_call(e, &op, admin_result, &x->slots[SNAP_QSTATS]);
	csq_engine_group_end(e);
	x->issuing = 0;
	if (x->pending == 0)
		admin_done(x);
}

static struct admin_call *
admin_call_new(struct admin_api *api, struct evhttp_request *req,
               enum admin_kind kind)
{
	struct admin_call *x = csq_xcalloc(1, sizeof(*x));

	x->api = api;
	x->req = req;
	x->kind = kind;
	TAILQ_INSERT_TAIL(&api->calls, x, entry);
	if (req != NULL)
		evhttp_connection_set_closecb(
		    evhttp_request_get_connection(req), admin_conn_closed, x);
	return x;
}

void
admin_api_snapshot(struct admin_api *api, struct evhttp_request *req)
{
	int start;

	if (!http_cache_take(api->snapshots, req, &start) && start)
		admin_round(admin_call_new(api, NULL, ADMIN_SNAPSHOT));
}

/*
 * A snapshot being made in slices holds its body so far (12 MB at 100,000
 * queues), shared by every request waiting for it: weighed against
 * max_output_memory with the answers waiting to be sent (issue 37), after
 * each slice.
 */
size_t
admin_api_making(const struct admin_api *api, size_t *most)
{
	const struct admin_call *x;
	size_t n, total = 0;

	*most = 0;
	if (api == NULL)
		return 0;
	TAILQ_FOREACH(x, &api->calls, entry) {
		if (x->body == NULL || x->dropped)
			continue;
		n = evbuffer_get_length(x->body);
		total += n;
		if (n > *most)
			*most = n;
	}
	return total;
}

size_t
admin_api_drop(struct admin_api *api)
{
	struct admin_call *x, *big = NULL;
	size_t n, most = 0;

	TAILQ_FOREACH(x, &api->calls, entry)
		if (x->body != NULL && !x->dropped &&
		    (n = evbuffer_get_length(x->body)) > most)
			big = x, most = n;
	if (big == NULL)
		return 0;
	log_warnx("http: all clients' output over max_output_memory (%lld "
	          "bytes), the snapshot being made %zu, dropped (503)",
	          (long long)api->s->cfg.max_output_memory, most);
	/* Counted as a client closed for the cap (INFO's
	 * client_output_buffer_limit_disconnections, the metric's
	 * csq_output_limit_disconnections_total), once a snapshot however
	 * many wait for it: its requests are answered 503 and their
	 * connections stay, but the cap acted, and these are where an
	 * operator sees it act. */
	api->s->stats.output_closed_total++;
	evbuffer_free(big->body);
	big->body = NULL;
	big->dropped = 1;
	/* Between two slices: its turn would come, no engine call is out
	 * (else the last answer ends it, admin_done). */
	if (big->pending == 0 && !big->issuing) {
		admin_call_error(big, ADMIN_DROPPED);
		admin_call_free(big);
	}
	return most;
}

/* A query parameter as an integer in lo..hi, def when absent; -1 when
 * it is not one. */
static int
admin_param(const struct evkeyvalq *params, const char *name, uint64_t lo,
            uint64_t hi, uint64_t def, uint64_t *out)
{
	const char *v = evhttp_find_header(params, name);
	size_t i, len;

	*out = def;
	if (v == NULL)
		return 0;
	len = strlen(v);
	if (len == 0 || len > ADMIN_INT_DIGITS)
		return -1;
	for (i = 0; i < len; i++)
		if (v[i] < '0' || v[i] > '9')
			return -1;
	*out = strtoull(v, NULL, 10);
	return *out >= lo && *out <= hi ? 0 : -1;
}

void
admin_api_queue(struct admin_api *api, struct evhttp_request *req,
                const char *raw)
{
	const char *query =
	    evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	struct evkeyvalq params;
	struct admin_call *x;
	uint64_t offset, count;
	size_t len = 0;
	char *q;
	int bad;

	TAILQ_INIT(&params);
	if (query != NULL && evhttp_parse_query_str(query, &params) != 0) {
		admin_api_error(req, HTTP_BADREQUEST, "Bad Request",
		                "malformed query string");
		return;
	}
	bad = admin_param(&params, "offset", 0, INT64_MAX, 0, &offset) != 0;
	if (bad)
		admin_api_error(req, HTTP_BADREQUEST, "Bad Request",
		                "offset: an integer, 0 or more");
	else if (admin_param(&params, "count", 0, CSQ_RANGE_COUNT_MAX,
	                     CSQ_RANGE_COUNT_DEF, &count) != 0) {
		bad = 1;
		admin_api_error(req, HTTP_BADREQUEST, "Bad Request",
		                "count: an integer from 0 to 1000");
	}
	evhttp_clear_headers(&params);
	if (bad)
		return;
	q = evhttp_uridecode(raw, 0, &len);
	if (q == NULL || len != strlen(q) || !csq_valid_id(q, len)) {
		free(q);
		admin_api_error(req, HTTP_BADREQUEST, "Bad Request",
		                csq_status_text(CSQ_EQUEUE));
		return;
	}
	x = admin_call_new(api, req, ADMIN_PAGE);
	memcpy(x->queue, q, len + 1);
	free(q);
	x->offset = offset;
	x->count = (uint32_t)count;
	admin_round(x);
}
