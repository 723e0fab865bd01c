/*
 * The Redis engine. Two connections: one for the scripts, one subscribed
 * to the events channel. hiredis 0.14 has neither a connect timeout nor a
 * reconnect, so each connection keeps a timer that does both: a fresh
 * context for every attempt, a capped exponential backoff between them.
 *
 * Operations are batched: those that arrive in one loop turn go together,
 * in order, in one call of the one script (batch.lua); when BATCH_INFLIGHT
 * calls are in flight, the next waits for a reply. A busy daemon so pays
 * Redis's cost of a script call once for many operations.
 *
 * A call is an FCALL of the script loaded as a function library, where
 * Redis has functions (7.0 and later) and lets this daemon load them: the
 * library's functions are built once, not on every call as with EVALSHA.
 * Else, and for a call that Redis refuses before running it (the library
 * is gone, or Redis is out of memory, which refuses a whole FCALL but only
 * the writes of an EVALSHA), it is an EVALSHA; after a NOSCRIPT, an EVAL.
 *
 * A command's reply is held until this daemon has seen every event its
 * call published (each event carries an id from one counter in Redis), so
 * that a client hears of an event before the reply that caused it, as with
 * the memory engine. The events come on the subscription, in the order
 * the calls ran, whichever daemon made them; a call's reply carries its
 * own, which go out at once when every earlier event has been seen (with
 * one daemon, always), a hop sooner than their PUBLISH.
 */
#include "engine_redis.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <netdb.h>

#include <event2/event.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "log.h"
#include "metrics.h"
#include "redis_event.h"
#include "redis_scripts.h"
#include "server.h"
#include "util.h"

#define BACKOFF_MIN_MS   100
#define BACKOFF_MAX_MS   2000
#define CONNECT_TIMEOUT  2000  /* ms to connect and finish the handshake */
#define TICK_MS          1000  /* health check and earliest deadline */
#define HEALTH_TIMEOUT   5000  /* ms without an answer: the link is dead */
#define PARK_TIMEOUT_MS  2000  /* longest a reply waits for its events */
#define ERROR_LOG_MS     1000  /* at most one error line per second */
#define EXPIRE_RETRY_MS  1000  /* a reap that failed waits this long */
#define WENT_BACK_LOG_MS 10000 /* at most one "went back" line in 10 s */
#define EXPIRE_BATCH     "1000"
#define CALL_ARGS        48 /* HEARTBEAT: 6 and up to 32 queues */
#define CALL_STORE       4096
#define BATCH_MAX        128 /* operations in one script call */
#define BATCH_INFLIGHT   8   /* script calls in flight at once */
#define QUEUE_OFFSET_MAX (UINT64_C(1) << 52) /* exact in a Lua number */
#define ECHO_MAX         64 /* messages taken from replies, not yet echoed */

struct redis_engine;

struct redis_conn {
	struct redis_engine *r;
	const char *name; /* "commands" or "events", for the log */
	redisAsyncContext *ac;
	int ready;        /* connected, handshake done */
	int failed;       /* this outage was logged */
	unsigned attempt; /* which of the host's addresses to try next */
	uint32_t backoff_ms;
	struct event *timer; /* connect timeout, or the next attempt */
};

/* One operation: its arguments, kept until its batch is answered (a
 * NOSCRIPT resend needs them), and its result while it waits for its
 * events. */
struct redis_call {
	TAILQ_ENTRY(redis_call) entry;
	struct redis_engine *r;
	const char *name; /* OPS.<name> in the script */
	enum csq_opcode code;
	csq_engine_cb *cb;
	void *arg;
	int argc;
	const char *argv[CALL_ARGS];
	size_t argvlen[CALL_ARGS];
	char store[CALL_STORE];
	size_t used;
	char sid[CSQ_ID_MAX + 1]; /* HEARTBEAT: the servicer in the reply */
	struct csq_result res;
	struct csq_queue_entry *entries;
	struct csq_servicer_info *servicers;
	uint64_t wait_event; /* the last event id of the script */
	uint64_t parked_ms;
	TAILQ_ENTRY(redis_call) order; /* in redis_engine.order */
	int ready;                     /* res is the answer */
};

TAILQ_HEAD(redis_call_list, redis_call);

/* How a batch is sent: the first of these that Redis takes. */
enum batch_how {
	HOW_FCALL,   /* the function, when loaded (redis_engine.fn) */
	HOW_EVALSHA, /* the script, by the hash that SCRIPT LOAD gave */
	HOW_EVAL     /* the script's source, after a NOSCRIPT */
};

/* The operations of one script call, in the order they were sent. */
struct redis_batch {
	struct redis_engine *r;
	struct redis_call_list calls;
	int ncalls;
	enum batch_how how;
	uint64_t sub_gen; /* the subscription it was made under (0 none) */
};

struct redis_engine {
	struct csq_engine base;
	struct event_base *evb;
	char host[CONFIG_STR_MAX];
	int port;
	int is_unix;
	char addr[CONFIG_STR_MAX + 16]; /* for the log */
	char password[CONFIG_STR_MAX];
	int64_t db;
	char stats_key[CONFIG_STR_MAX + 16]; /* KEYS[1]: "{prefix}:stats" */
	char channel[CONFIG_STR_MAX + 16];   /* "{prefix}:events" */
	struct csq_limits limits;
	csq_emit_fn *emit;
	void *emit_arg;
	void (*deadline_changed)(void *);
	void *deadline_arg;

	struct redis_conn cmd, sub;
	int up;             /* both connections ready */
	char sha[41];       /* of redis_lua_source */
	int fn;             /* redis_lua_library is loaded: calls are FCALLs */
	char fn_error[128]; /* FUNCTION LOAD's last error, as logged */

	struct redis_call_list pending; /* not sent yet */
	int inflight;                   /* script calls sent, not answered */
	struct event *flush;            /* sends pending at the turn's end */
	/* Every call not answered yet, in the order it was made: answers
	 * leave from its head only, so that they come in that order. */
	TAILQ_HEAD(, redis_call) order;
	int answering;       /* inside order_flush */
	uint64_t seen_event; /* highest event id seen */
	/* Subscriptions confirmed so far, and the last one whose starting
	 * point is known (sync_seen). */
	uint64_t sub_gen, synced_gen;
	/* The last event id that came on the subscription: ids only grow
	 * there, unless Redis's state went back (below). */
	uint64_t sub_last;
	uint64_t went_back_logged_ms; /* when that was last logged */
	uint64_t went_back_unlogged;  /* and how many times since */
	/* The last event ids of the messages taken from this daemon's own
	 * replies, oldest first: their copies on the subscription (echoes)
	 * are not emitted again. */
	uint64_t echo[ECHO_MAX];
	unsigned echo_head, echo_n;

	int64_t next_redis; /* earliest deadline, Redis ms; -1 none */
	int64_t skew_ms;    /* Redis clock - our clock */
	int reaping;
	struct event *tick;
	uint64_t peek_sent_us;    /* 0: no health check outstanding */
	int peek_refused;         /* the last health check got an error */
	uint64_t error_logged_ms; /* Redis's errors: when last logged */
	uint64_t errors_unlogged; /* and how many since */
	char error_last[256];     /* the last of those, for the tick */
	int64_t rtt_us;
	int freeing;
};

static void conn_start(struct redis_conn *);
static void peek_send(struct redis_engine *);
static void order_flush(struct redis_engine *, int all);
static void conn_drop(struct redis_conn *, const char *why);
static void pending_fail(struct redis_engine *);

static struct redis_engine *
redis_engine(struct csq_engine *e)
{
	return (struct redis_engine *)e;
}

static uint64_t
mono_ms(void)
{
	return metrics_now_us() / 1000;
}

/* Up when both connections are; said once per change. */
static void
engine_update_up(struct redis_engine *r)
{
	int up = r->cmd.ready && r->sub.ready;

	if (up == r->up)
		return;
	r->up = up;
	/* At once: the earliest deadline, which others may have set. */
	if (up && r->peek_sent_us == 0)
		peek_send(r);
	if (up)
		log_info("engine redis: up at %s, calls by %s", r->addr,
		         r->fn ? "FCALL" : "EVALSHA");
	else
		log_warnx("engine redis: down; commands answer TRYAGAIN until "
		          "it is back");
}

/* Connections. */

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct redis_conn *c = arg;

	(void)fd, (void)what;
	if (c->ac == NULL)
		conn_start(c);
	else if (!c->ready)
		conn_drop(c, "timed out connecting");
}

/* The next attempt after a failure, later each time up to the cap. */
static void
conn_retry(struct redis_conn *c)
{
	struct timeval tv;

	if (c->r->freeing)
		return;
	tv.tv_sec = c->backoff_ms / 1000;
	tv.tv_usec = (suseconds_t)(c->backoff_ms % 1000) * 1000;
	evtimer_add(c->timer, &tv);
	c->backoff_ms *= 2;
	if (c->backoff_ms > BACKOFF_MAX_MS)
		c->backoff_ms = BACKOFF_MAX_MS;
}

static void
conn_failed(struct redis_conn *c, const char *why)
{
	if (!c->failed)
		log_warnx("engine redis: %s connection: %s; retrying", c->name,
		          why);
	else
		log_debug("engine redis: %s connection: %s", c->name, why);
	c->failed = 1;
}

/* The context is gone (hiredis frees it): forget it and try again. */
static void
conn_lost(struct redis_conn *c, const char *why)
{
	struct redis_engine *r = c->r;

	c->ac = NULL;
	c->ready = 0;
	if (c == &r->cmd) {
		r->peek_sent_us = 0;
		r->reaping = 0;
	}
	conn_failed(c, why);
	engine_update_up(r);
	conn_retry(c);
	/* What was not sent will not be: TRYAGAIN, nothing was changed. */
	pending_fail(r);
	/* The events that replies wait for will not come on this link. */
	if (c == &r->sub)
		order_flush(r, 1);
}

static void
conn_connected_cb(const redisAsyncContext *ac, int status)
{
	struct redis_conn *c = ac->data;

	if (c == NULL || c->ac != ac)
		return;
	if (status != REDIS_OK)
		conn_lost(c, ac->errstr[0] ? ac->errstr : "connect failed");
}

static void
conn_disconnected_cb(const redisAsyncContext *ac, int status)
{
	struct redis_conn *c = ac->data;

	(void)status;
	if (c == NULL || c->ac != ac)
		return;
	conn_lost(c, ac->errstr[0] ? ac->errstr : "connection closed");
}

/* Ends the connection; the callbacks of what was in flight get NULL. */
static void
conn_drop(struct redis_conn *c, const char *why)
{
	redisAsyncContext *ac = c->ac;

	if (ac == NULL)
		return;
	conn_lost(c, why);
	ac->data = NULL;
	redisAsyncFree(ac);
}

/* The handshake is done: this connection serves. */
static void
conn_ready(struct redis_conn *c)
{
	c->ready = 1;
	c->backoff_ms = BACKOFF_MIN_MS;
	if (c->failed)
		log_info("engine redis: %s connection restored", c->name);
	c->failed = 0;
	evtimer_del(c->timer);
	engine_update_up(c->r);
}

/* A reply of the handshake: an error ends the attempt, with its reason. */
static int
handshake_error(redisAsyncContext *ac, redisReply *reply, const char *what)
{
	struct redis_conn *c = ac->data;
	char why[256];

	if (c == NULL || reply == NULL)
		return 1;
	if (reply->type != REDIS_REPLY_ERROR)
		return 0;
	snprintf(why, sizeof(why), "%s: %s", what, reply->str);
	conn_failed(c, why);
	/* Inside a callback hiredis disconnects once the replies it waits
	 * for are in; the disconnect callback then tries again. */
	redisAsyncDisconnect(ac);
	return 1;
}

static void
handshake_auth_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	(void)priv;
	handshake_error(ac, reply, "AUTH");
}

static void
handshake_select_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	(void)priv;
	handshake_error(ac, reply, "SELECT");
}

/*
 * The answer to FUNCTION LOAD: the library's name, or an error that says
 * it is there already (from an earlier connection, or another daemon of
 * this build), and calls go by FCALL. Any other error (Redis before 7.0,
 * an ACL without FUNCTION, out of memory) leaves them to EVALSHA, which
 * serves as well, a little slower. The "up" line of the log says which;
 * the reason is logged once for each kind of error in a row.
 */
static void
function_loaded(struct redis_engine *r, const redisReply *reply)
{
	r->fn = reply->type != REDIS_REPLY_ERROR ||
	        strstr(reply->str, "already exists") != NULL;
	if (r->fn) {
		r->fn_error[0] = '\0';
	} else if (strncmp(r->fn_error, reply->str, sizeof(r->fn_error) - 1)) {
		snprintf(r->fn_error, sizeof(r->fn_error), "%s", reply->str);
		log_info("engine redis: FUNCTION LOAD: %s; calls go by EVALSHA",
		         reply->str);
	}
}

static void
function_reload_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct redis_conn *c = ac->data;

	(void)priv;
	if (c != NULL && reply != NULL)
		function_loaded(c->r, reply);
}

/* The library is gone (FUNCTION FLUSH, a Redis that restarted empty):
 * calls go by EVALSHA until it is loaded again. */
static void
function_reload(struct redis_engine *r)
{
	if (!r->fn || r->cmd.ac == NULL)
		return;
	r->fn = 0;
	redisAsyncCommand(r->cmd.ac, function_reload_cb, NULL,
	                  "FUNCTION LOAD %s", redis_lua_library);
}

static void
handshake_function_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct redis_conn *c = ac->data;

	(void)priv;
	if (c == NULL || reply == NULL)
		return;
	function_loaded(c->r, reply);
	conn_ready(c);
}

static void
handshake_load_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct redis_conn *c = ac->data;
	redisReply *reply = reply_;

	(void)priv;
	if (handshake_error(ac, reply, "SCRIPT LOAD"))
		return;
	if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
		conn_failed(c, "SCRIPT LOAD: unexpected reply");
		redisAsyncDisconnect(ac);
		return;
	}
	memcpy(c->r->sha, reply->str, 40);
	c->r->sha[40] = '\0';
	redisAsyncCommand(ac, handshake_function_cb, NULL, "FUNCTION LOAD %s",
	                  redis_lua_library);
}

static void sub_message_cb(redisAsyncContext *, void *, void *);

/*
 * The address of the host to try this time. hiredis connects to the first
 * address a name resolves to and gives up if it refuses ("localhost" may
 * be ::1 first while Redis listens on 127.0.0.1), so each attempt takes
 * the next address in turn. A name that does not resolve is tried as is.
 */
static void
conn_address(struct redis_conn *c, char *out, size_t cap)
{
	struct addrinfo hints, *res, *ai;
	unsigned n = 0, k;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(out, cap, "%s", c->r->host);
	if (getaddrinfo(c->r->host, NULL, &hints, &res) != 0)
		return;
	for (ai = res; ai != NULL; ai = ai->ai_next)
		n++;
	for (ai = res, k = c->attempt++ % n; k > 0; k--)
		ai = ai->ai_next;
	getnameinfo(ai->ai_addr, ai->ai_addrlen, out, (socklen_t)cap, NULL, 0,
	            NI_NUMERICHOST);
	freeaddrinfo(res);
}

static void
conn_start(struct redis_conn *c)
{
	char addr[NI_MAXHOST];
	struct redis_engine *r = c->r;
	redisAsyncContext *ac;
	struct timeval tv = {CONNECT_TIMEOUT / 1000,
	                     (CONNECT_TIMEOUT % 1000) * 1000};

	if (r->is_unix)
		ac = redisAsyncConnectUnix(r->host);
	else {
		conn_address(c, addr, sizeof(addr));
		ac = redisAsyncConnect(addr, r->port);
	}
	if (ac == NULL) {
		conn_failed(c, "out of memory");
		conn_retry(c);
		return;
	}
	if (ac->err) {
		conn_failed(c, ac->errstr);
		redisAsyncFree(ac);
		conn_retry(c);
		return;
	}
	c->ac = ac;
	ac->data = c;
	redis_event_attach(ac, r->evb);
	redisAsyncSetConnectCallback(ac, conn_connected_cb);
	redisAsyncSetDisconnectCallback(ac, conn_disconnected_cb);
	evtimer_add(c->timer, &tv);

	/* Sent at once: hiredis writes them when the socket connects. */
	if (r->password[0] != '\0')
		redisAsyncCommand(ac, handshake_auth_cb, NULL, "AUTH %s",
		                  r->password);
	if (c == &r->sub) {
		redisAsyncCommand(ac, sub_message_cb, NULL, "SUBSCRIBE %s",
		                  r->channel);
		return;
	}
	if (r->db != 0)
		redisAsyncCommand(ac, handshake_select_cb, NULL, "SELECT %lld",
		                  (long long)r->db);
	redisAsyncCommand(ac, handshake_load_cb, NULL, "SCRIPT LOAD %s",
	                  redis_lua_source);
}

/* Results. */

static void
call_free(struct redis_call *k)
{
	free(k->entries);
	free(k->servicers);
	free(k);
}

/* k's answer is known (k->res); it leaves when every call made before
 * it has left and the events up to wait_event have come in. */
static void
call_ready(struct redis_call *k, uint64_t wait_event)
{
	k->ready = 1;
	k->wait_event = wait_event;
	k->parked_ms = mono_ms();
	order_flush(k->r, 0);
}

/* why: CSQ_ETRYAGAIN when the call never reached Redis, CSQ_EUNSURE when
 * it may have run; an operation that only reads changed nothing either
 * way. */
static void
call_fail(struct redis_call *k, enum csq_status why)
{
	memset(&k->res, 0, sizeof(k->res));
	k->res.status = why == CSQ_EUNSURE && !csq_op_mutates(k->code)
	                    ? CSQ_ETRYAGAIN
	                    : why;
	call_ready(k, 0);
}

/*
 * Answers, in the order the calls were made, those whose answer is known
 * and whose events have come in (all: or not; the subscription is gone or
 * the engine stops; and never more than PARK_TIMEOUT_MS late). A client
 * may have several calls in flight: its replies must keep its order.
 */
static void
order_flush(struct redis_engine *r, int all)
{
	struct redis_call *k;
	uint64_t now = mono_ms();

	if (r->answering) /* a callback's own call: the loop below goes on */
		return;
	r->answering = 1;
	while ((k = TAILQ_FIRST(&r->order)) != NULL && k->ready) {
		if (!all && k->wait_event > r->seen_event &&
		    now - k->parked_ms < PARK_TIMEOUT_MS)
			break;
		TAILQ_REMOVE(&r->order, k, order);
		k->cb(k->arg, &k->res);
		call_free(k);
	}
	r->answering = 0;
}

static int64_t
elem_int(const redisReply *a, size_t i)
{
	if (i >= a->elements || a->element[i]->type != REDIS_REPLY_INTEGER)
		return INT64_MIN;
	return a->element[i]->integer;
}

static int
elem_str(const redisReply *a, size_t i, char *out, size_t cap)
{
	const redisReply *e;

	if (i >= a->elements ||
	    (e = a->element[i])->type != REDIS_REPLY_STRING || e->len >= cap)
		return -1;
	memcpy(out, e->str, e->len);
	out[e->len] = '\0';
	return 0;
}

static uint64_t
u64_of(int64_t v)
{
	return v < 0 ? 0 : (uint64_t)v;
}

/* ENQUEUE and WHERE: state, queue, position, tier, waited, servicer, room,
 * since, from index i. */
static int
parse_user(const redisReply *a, size_t i, struct csq_user_info *u)
{
	char state[16];

	if (elem_str(a, i, state, sizeof(state)) != 0 ||
	    elem_str(a, i + 1, u->queue, sizeof(u->queue)) != 0 ||
	    elem_str(a, i + 5, u->servicer, sizeof(u->servicer)) != 0 ||
	    elem_str(a, i + 6, u->room, sizeof(u->room)) != 0 ||
	    elem_int(a, i + 7) == INT64_MIN)
		return -1;
	if (strcmp(state, "waiting") == 0)
		u->state = CSQ_USER_WAITING;
	else if (strcmp(state, "assigned") == 0)
		u->state = CSQ_USER_ASSIGNED;
	else
		u->state = CSQ_USER_NONE;
	u->position = u64_of(elem_int(a, i + 2));
	u->tier = (uint32_t)u64_of(elem_int(a, i + 3));
	u->waited_ms = u64_of(elem_int(a, i + 4));
	u->since_ms = u64_of(elem_int(a, i + 7));
	return 0;
}

static int
parse_queue(struct redis_call *k, const redisReply *a, size_t i)
{
	size_t n = (a->elements - i) / 3, j;

	if ((a->elements - i) % 3 != 0 || n > CSQ_RANGE_COUNT_MAX)
		return -1;
	k->entries = csq_xcalloc(n + 1, sizeof(*k->entries));
	for (j = 0; j < n; j++, i += 3) {
		if (elem_str(a, i, k->entries[j].user,
		             sizeof(k->entries[j].user)) != 0 ||
		    elem_int(a, i + 1) == INT64_MIN ||
		    elem_int(a, i + 2) == INT64_MIN)
			return -1;
		k->entries[j].tier = (uint32_t)u64_of(elem_int(a, i + 1));
		k->entries[j].waited_ms = u64_of(elem_int(a, i + 2));
	}
	k->res.entries = k->entries;
	k->res.nentries = n;
	return 0;
}

static int
parse_servicers(struct redis_call *k, const redisReply *a, size_t i)
{
	size_t n = (a->elements - i) / 5, j;
	struct csq_servicer_info *s;
	char status[16];

	if ((a->elements - i) % 5 != 0)
		return -1;
	k->servicers = csq_xcalloc(n + 1, sizeof(*k->servicers));
	for (j = 0; j < n; j++, i += 5) {
		s = &k->servicers[j];
		if (elem_str(a, i, s->id, sizeof(s->id)) != 0 ||
		    elem_str(a, i + 1, status, sizeof(status)) != 0)
			return -1;
		s->status = strcmp(status, "paused") == 0 ? CSQ_SERVICER_PAUSED
		                                          : CSQ_SERVICER_READY;
		s->capacity = (uint32_t)u64_of(elem_int(a, i + 2));
		s->active = (uint32_t)u64_of(elem_int(a, i + 3));
		s->idle_ms = u64_of(elem_int(a, i + 4));
	}
	k->res.servicers = k->servicers;
	k->res.nentries = n;
	return 0;
}

static int
parse_stats(struct csq_stats *st, const redisReply *a, size_t i)
{
	uint64_t *f[] = {&st->waiting,
	                 &st->servicers,
	                 &st->rooms_busy,
	                 &st->rooms_free,
	                 &st->enqueued_total,
	                 &st->matched_total,
	                 &st->abandoned_total,
	                 &st->requeued_total,
	                 &st->servicers_lost_total};
	size_t j;

	for (j = 0; j < sizeof(f) / sizeof(f[0]); j++) {
		if (elem_int(a, i + j) == INT64_MIN)
			return -1;
		*f[j] = u64_of(elem_int(a, i + j));
	}
	return 0;
}

/* The data of an operation's reply (from element 1) by operation. */
static int
parse_data(struct redis_call *k, const redisReply *a)
{
	struct csq_result *res = &k->res;
	char status[16];

	switch (k->code) {
	case CSQ_OP_HEARTBEAT:
		memcpy(res->servicer.id, k->sid, sizeof(k->sid));
		if (elem_str(a, 1, status, sizeof(status)) != 0 ||
		    elem_int(a, 4) == INT64_MIN)
			return -1;
		res->servicer.status = strcmp(status, "paused") == 0
		                           ? CSQ_SERVICER_PAUSED
		                           : CSQ_SERVICER_READY;
		res->servicer.capacity = (uint32_t)u64_of(elem_int(a, 2));
		res->servicer.active = (uint32_t)u64_of(elem_int(a, 3));
		res->servicer.ttl_s = (uint32_t)u64_of(elem_int(a, 4));
		return 0;
	case CSQ_OP_PAUSE:
	case CSQ_OP_RESUME:
	case CSQ_OP_LIMITS: /* the health check: no data */
		return 0;
	case CSQ_OP_LOGOUT:
	case CSQ_OP_RELEASE:
	case CSQ_OP_TOUCH:
	case CSQ_OP_LEAVE:
	case CSQ_OP_QLEN:
	case CSQ_OP_EXPIRE:
		if (elem_int(a, 1) == INT64_MIN)
			return -1;
		res->n = elem_int(a, 1);
		return 0;
	case CSQ_OP_ENQUEUE:
	case CSQ_OP_WHERE:
		return parse_user(a, 1, &res->user);
	case CSQ_OP_QUEUE:
		return parse_queue(k, a, 1);
	case CSQ_OP_SERVICERS:
		return parse_servicers(k, a, 1);
	case CSQ_OP_STATS:
		return parse_stats(&res->stats, a, 1);
	case CSQ_OP_REARM:
		break;
	}
	return -1;
}

static enum csq_status
status_of(const char *s)
{
	if (strcmp(s, "OK") == 0)
		return CSQ_OK;
	if (strcmp(s, "NOTFOUND") == 0)
		return CSQ_ENOTFOUND;
	if (strcmp(s, "FULL") == 0)
		return CSQ_EFULL;
	if (strcmp(s, "EXHAUSTED") == 0)
		return CSQ_EEXHAUSTED;
	return CSQ_ETRYAGAIN;
}

/* The header of a call's reply: a deadline, Redis time, the last event id,
 * whether the deadline is the true earliest, the events' message. Returns
 * the last event id, or -1 for a reply of another shape. */
static int64_t
parse_header(struct redis_engine *r, const redisReply *a)
{
	int64_t next = elem_int(a, 0), now = elem_int(a, 1);
	int64_t last = elem_int(a, 2), exact = elem_int(a, 3);

	if (a->type != REDIS_REPLY_ARRAY || next == INT64_MIN ||
	    now == INT64_MIN || last == INT64_MIN || exact == INT64_MIN ||
	    a->elements < 5 || a->element[4]->type != REDIS_REPLY_STRING)
		return -1;
	r->skew_ms = now - (int64_t)server_now_ms();
	/* The reaper and the health check know the earliest deadline; other
	 * operations tell the earliest they set. One that was removed leaves
	 * the timer early: the reaper then finds nothing and says what is
	 * next. */
	if (exact)
		r->next_redis = next;
	else if (next >= 0 && (r->next_redis < 0 || next < r->next_redis))
		r->next_redis = next;
	return last < 0 ? 0 : last;
}

/*
 * An error Redis gave, for the log: one line a second at most, which says
 * how many were left out. A full Redis (OOM) refuses every write of every
 * call, and a line for each would flood the log.
 */
static void
engine_error(struct redis_engine *r, const char *what)
{
	uint64_t now = mono_ms();

	if (r->error_logged_ms != 0 &&
	    now - r->error_logged_ms < ERROR_LOG_MS) {
		r->errors_unlogged++;
		snprintf(r->error_last, sizeof(r->error_last), "%s", what);
		return;
	}
	if (r->errors_unlogged > 0)
		log_warnx("engine redis: %s (and %llu more errors in the "
		          "last %llu ms)",
		          what, (unsigned long long)r->errors_unlogged,
		          (unsigned long long)(now - r->error_logged_ms));
	else
		log_warnx("engine redis: %s", what);
	r->error_logged_ms = now;
	r->errors_unlogged = 0;
}

/* The errors held back at the end of a burst, logged by the tick once
 * their second is over rather than with the next error, which may never
 * come: the last of them, and how many. */
static void
engine_error_flush(struct redis_engine *r)
{
	uint64_t now = mono_ms();

	if (r->errors_unlogged == 0 || now - r->error_logged_ms < ERROR_LOG_MS)
		return;
	log_warnx("engine redis: %s (the last of %llu errors in the %llu ms "
	          "after the line before)",
	          r->error_last, (unsigned long long)r->errors_unlogged,
	          (unsigned long long)(now - r->error_logged_ms));
	r->error_logged_ms = now;
	r->errors_unlogged = 0;
}

/* An operation's reply a, NULL if missing: its result goes, or waits for
 * the events up to last. */
static void
call_done(struct redis_call *k, const redisReply *a, uint64_t last)
{
	struct redis_engine *r = k->r;
	char status[16];

	if (a == NULL || a->type != REDIS_REPLY_ARRAY ||
	    elem_str(a, 0, status, sizeof(status)) != 0) {
		log_warnx("engine redis: a reply of %s has an unexpected shape",
		          k->name);
		call_fail(k, CSQ_EUNSURE);
		return;
	}
	if (strcmp(status, "ERR") == 0) {
		const char *why =
		    a->elements > 1 && a->element[1]->type == REDIS_REPLY_STRING
		        ? a->element[1]->str
		        : "an operation failed";

		engine_error(r, why);
		/* Redis refuses for want of memory only a call's first write
		 * (a script that has written may go on writing), so before
		 * this operation wrote anything; any other failure may have
		 * come after some of its writes. */
		call_fail(k, strstr(why, "OOM ") != NULL ? CSQ_ETRYAGAIN
		                                         : CSQ_EUNSURE);
		return;
	}
	k->res.status = status_of(status);
	if (k->res.status == CSQ_OK && parse_data(k, a) != 0) {
		log_warnx("engine redis: a reply of %s has an unexpected shape",
		          k->name);
		call_fail(k, CSQ_EUNSURE);
		return;
	}
	call_ready(k, last);
}

/* Batches. */

static void batch_write(struct redis_batch *);

/* Sends the next batch at the end of this loop turn, when it may go. */
static void
batch_schedule(struct redis_engine *r)
{
	if (!r->freeing && !TAILQ_EMPTY(&r->pending) &&
	    r->inflight < BATCH_INFLIGHT)
		event_active(r->flush, EV_TIMEOUT, 0);
}

/* TRYAGAIN to every call of list, in order; a callback may add more. */
static void
calls_fail(struct redis_call_list *list, enum csq_status why)
{
	struct redis_call *k;

	while ((k = TAILQ_FIRST(list)) != NULL) {
		TAILQ_REMOVE(list, k, entry);
		call_fail(k, why);
	}
}

static void
batch_fail(struct redis_batch *b, enum csq_status why)
{
	calls_fail(&b->calls, why);
	free(b);
}

static void
pending_fail(struct redis_engine *r)
{
	calls_fail(&r->pending, CSQ_ETRYAGAIN);
}

/*
 * The next operation's reply in a call's reply, from element *i: its
 * length, then its elements (batch.lua), seen through view as an array of
 * its own. NULL when the reply is cut short; *i moves past it.
 */
static const redisReply *
op_reply(const redisReply *reply, size_t *i, redisReply *view)
{
	int64_t n = elem_int(reply, *i);

	if (n < 1 || (uint64_t)n >= reply->elements - *i) {
		*i = reply->elements;
		return NULL;
	}
	memset(view, 0, sizeof(*view));
	view->type = REDIS_REPLY_ARRAY;
	view->elements = (size_t)n;
	view->element = reply->element + *i + 1;
	*i += 1 + (size_t)n;
	return view;
}

static void reply_events(struct redis_engine *, const redisReply *);

/*
 * Whether Redis refused b's call before running it, in a way that the
 * next kind of call (enum batch_how) gets past: then b is sent again that
 * way. A call that ran and failed is never sent again, since it may have
 * written. Redis appends " script: ..." to the errors that a script
 * raises, never to its refusals.
 */
static int
batch_refused(struct redis_batch *b, const char *err)
{
	switch (b->how) {
	case HOW_FCALL:
		if (strcmp(err, "ERR Function not found") == 0) {
			function_reload(b->r);
			return 1;
		}
		return strncmp(err, "OOM ", 4) == 0 &&
		       strstr(err, " script: ") == NULL;
	case HOW_EVALSHA:
		/* The script cache was flushed: the source itself, once. */
		return strncmp(err, "NOSCRIPT", 8) == 0;
	default:
		return 0;
	}
}

/* How many events a message of batch.lua holds: a header line, then an
 * event a line ('' holds none). */
static uint64_t
msg_events(const char *msg, size_t len)
{
	const char *p, *end = msg + len;
	uint64_t n = 0;

	for (p = msg;
	     p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
		n++;
	return n;
}

/*
 * Every reply waits for the events before it, its own or, when it has
 * none, every one published until its call ran (batch.lua), so that a
 * reply that reads what another daemon's call changed never reaches its
 * client before that change's event reaches this daemon's subscribers.
 * The events published before a subscription began will never come: the
 * first reply to a call made under a new subscription says how far they
 * went (all but its own events), and those count as seen. Events
 * published between the subscription's start and that call may still be
 * on their way then; a reply waiting for one of them in that moment goes
 * without it.
 */
static void
sync_seen(struct redis_engine *r, const struct redis_batch *b,
          const redisReply *msg, uint64_t last)
{
	uint64_t n;

	/* (A batch made with no subscription has sub_gen 0, which matches
	 * only while none was ever confirmed, and then synced_gen too.) */
	if (b->sub_gen != r->sub_gen || r->synced_gen == r->sub_gen)
		return;
	r->synced_gen = r->sub_gen;
	n = msg_events(msg->str, msg->len);
	if (last >= n && last - n > r->seen_event)
		r->seen_event = last - n;
}

static void
batch_reply_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct redis_batch *b = priv;
	struct redis_engine *r = b->r;
	redisReply *reply = reply_;
	struct redis_call *k;
	redisReply view;
	int64_t last;
	size_t i = 5;

	(void)ac;
	if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
	    batch_refused(b, reply->str)) {
		b->how++;
		batch_write(b);
		return;
	}
	r->inflight--;
	if (reply == NULL) {
		/* The link went while the call was out: it may have run. */
		batch_fail(b, CSQ_EUNSURE);
	} else if (reply->type == REDIS_REPLY_ERROR) {
		engine_error(r, reply->str);
		batch_fail(b, strstr(reply->str, " script: ") != NULL
		                  ? CSQ_EUNSURE
		                  : CSQ_ETRYAGAIN);
	} else if ((last = parse_header(r, reply)) < 0) {
		log_warnx("engine redis: a reply of an unexpected shape");
		batch_fail(b, CSQ_EUNSURE);
	} else {
		sync_seen(r, b, reply->element[4], (uint64_t)last);
		reply_events(r, reply->element[4]);
		while ((k = TAILQ_FIRST(&b->calls)) != NULL) {
			TAILQ_REMOVE(&b->calls, k, entry);
			call_done(k, op_reply(reply, &i, &view),
			          (uint64_t)last);
		}
		free(b);
	}
	batch_schedule(r);
}

/* Sends b as b->how says, with the limits and b's operations. */
static void
batch_write(struct redis_batch *b)
{
	struct redis_engine *r = b->r;
	char limits[4][24], counts[BATCH_MAX + 1][12];
	const char **argv;
	size_t *argvlen;
	struct redis_call *k;
	int argc = 0, n = 9, i, j = 0, rc;

	TAILQ_FOREACH(k, &b->calls, entry)
		n += 2 + k->argc;
	argv = csq_xmalloc((size_t)n * sizeof(*argv));
	argvlen = csq_xmalloc((size_t)n * sizeof(*argvlen));
#define ARG(s, len) (argv[argc] = (s), argvlen[argc++] = (len))
	switch (b->how) {
	case HOW_FCALL:
		ARG("FCALL", 5);
		ARG(redis_lua_function, strlen(redis_lua_function));
		break;
	case HOW_EVALSHA:
		ARG("EVALSHA", 7);
		ARG(r->sha, strlen(r->sha));
		break;
	case HOW_EVAL:
		ARG("EVAL", 4);
		ARG(redis_lua_source, strlen(redis_lua_source));
		break;
	}
	ARG("1", 1);
	ARG(r->stats_key, strlen(r->stats_key));
	snprintf(limits[0], sizeof(limits[0]), "%u", r->limits.servicer_ttl_s);
	snprintf(limits[1], sizeof(limits[1]), "%u", r->limits.user_ttl_s);
	snprintf(limits[2], sizeof(limits[2]), "%u", r->limits.max_tier);
	snprintf(limits[3], sizeof(limits[3]), "%llu",
	         (unsigned long long)r->limits.max_queue_length);
	for (i = 0; i < 4; i++)
		ARG(limits[i], strlen(limits[i]));
	snprintf(counts[j], sizeof(counts[j]), "%d", b->ncalls);
	ARG(counts[j], strlen(counts[j]));
	j++;
	TAILQ_FOREACH(k, &b->calls, entry) {
		ARG(k->name, strlen(k->name));
		snprintf(counts[j], sizeof(counts[j]), "%d", k->argc);
		ARG(counts[j], strlen(counts[j]));
		j++;
		for (i = 0; i < k->argc; i++)
			ARG(k->argv[i], k->argvlen[i]);
	}
#undef ARG
	/* hiredis copies the command into its output buffer at once. */
	rc = r->cmd.ac == NULL
	         ? REDIS_ERR
	         : redisAsyncCommandArgv(r->cmd.ac, batch_reply_cb, b, argc,
	                                 argv, argvlen);
	free(argv);
	free(argvlen);
	if (rc != REDIS_OK) {
		r->inflight--;
		batch_fail(b, CSQ_ETRYAGAIN);
		/* The connection is going: so is what waits to be sent. */
		pending_fail(r);
	}
}

/* Sends up to BATCH_MAX pending operations as one script call. */
static void
batch_send(struct redis_engine *r)
{
	struct redis_batch *b;
	struct redis_call *k;

	if (TAILQ_EMPTY(&r->pending))
		return;
	b = csq_xcalloc(1, sizeof(*b));
	b->r = r;
	b->how = r->fn ? HOW_FCALL : HOW_EVALSHA;
	b->sub_gen = r->sub.ready ? r->sub_gen : 0;
	TAILQ_INIT(&b->calls);
	while (b->ncalls < BATCH_MAX &&
	       (k = TAILQ_FIRST(&r->pending)) != NULL) {
		TAILQ_REMOVE(&r->pending, k, entry);
		TAILQ_INSERT_TAIL(&b->calls, k, entry);
		b->ncalls++;
	}
	r->inflight++;
	batch_write(b);
}

static void
flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct redis_engine *r = arg;

	(void)fd, (void)what;
	if (!r->up) {
		pending_fail(r);
		return;
	}
	while (r->inflight < BATCH_INFLIGHT && !TAILQ_EMPTY(&r->pending))
		batch_send(r);
	/* redis_event.c writes them at the end of this turn of the loop. */
}

/* Operations. */

static void
arg_str(struct redis_call *k, const char *s, size_t len)
{
	if (k->argc == CALL_ARGS || k->used + len + 1 > CALL_STORE)
		abort(); /* the arguments of an operation are bounded */
	memcpy(k->store + k->used, s, len);
	k->store[k->used + len] = '\0';
	k->argv[k->argc] = k->store + k->used;
	k->argvlen[k->argc++] = len;
	k->used += len + 1;
}

static void
arg_cstr(struct redis_call *k, const char *s)
{
	arg_str(k, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

static void
arg_int(struct redis_call *k, int64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%lld", (long long)v);

	arg_str(k, buf, (size_t)n);
}

static struct redis_call *
call_new(struct redis_engine *r, const char *name, enum csq_opcode code,
         csq_engine_cb *cb, void *arg)
{
	struct redis_call *k = csq_xcalloc(1, sizeof(*k));

	k->r = r;
	k->name = name;
	k->code = code;
	k->cb = cb;
	k->arg = arg;
	return k;
}

/* Queues k for the next batch. */
static void
call_send(struct redis_engine *r, struct redis_call *k)
{
	TAILQ_INSERT_TAIL(&r->order, k, order);
	TAILQ_INSERT_TAIL(&r->pending, k, entry);
	batch_schedule(r);
}

static void
args_heartbeat(struct redis_call *k, const struct csq_heartbeat_args *a)
{
	size_t i;

	snprintf(k->sid, sizeof(k->sid), "%s", a->servicer);
	arg_cstr(k, a->servicer);
	arg_int(k, a->has_capacity);
	arg_int(k, a->capacity);
	arg_int(k, a->has_ttl);
	arg_int(k, a->ttl_s);
	arg_int(k, a->has_queues ? (int64_t)a->nqueues : 0);
	for (i = 0; a->has_queues && i < a->nqueues; i++)
		arg_cstr(k, a->queues[i]);
}

/* An option not given is empty (enqueue.lua): a queue name, a tier and a
 * TTL never are. */
static void
args_enqueue(struct redis_call *k, const struct csq_enqueue_args *a)
{
	arg_cstr(k, a->user);
	arg_cstr(k, a->has_queue ? a->queue : "");
	if (a->has_tier)
		arg_int(k, a->tier);
	else
		arg_cstr(k, "");
	if (a->has_ttl)
		arg_int(k, a->ttl_s);
	else
		arg_cstr(k, "");
}

/* The script of an operation and its arguments; -1 for none. */
static int
call_build(struct redis_engine *r, const struct csq_op *op, csq_engine_cb *cb,
           void *arg, struct redis_call **out)
{
	/* The functions of daemon/lua/, OPS.<name>. */
	static const char *const names[] = {
	    [CSQ_OP_HEARTBEAT] = "heartbeat", [CSQ_OP_PAUSE] = "status",
	    [CSQ_OP_RESUME] = "status",       [CSQ_OP_LOGOUT] = "logout",
	    [CSQ_OP_RELEASE] = "release",     [CSQ_OP_ENQUEUE] = "enqueue",
	    [CSQ_OP_TOUCH] = "touch",         [CSQ_OP_LEAVE] = "leave",
	    [CSQ_OP_WHERE] = "where",         [CSQ_OP_QUEUE] = "queue",
	    [CSQ_OP_QLEN] = "qlen",           [CSQ_OP_SERVICERS] = "servicers",
	    [CSQ_OP_STATS] = "stats",         [CSQ_OP_EXPIRE] = "expire",
	};
	char sid[CSQ_ID_MAX + 1];
	struct redis_call *k;
	uint32_t idx;

	if (op->code == CSQ_OP_LIMITS || op->code == CSQ_OP_REARM)
		return -1;
	k = call_new(r, names[op->code], op->code, cb, arg);
	switch (op->code) {
	case CSQ_OP_HEARTBEAT:
		args_heartbeat(k, &op->heartbeat);
		break;
	case CSQ_OP_PAUSE:
	case CSQ_OP_RESUME:
		arg_cstr(k, op->id);
		arg_cstr(k, op->code == CSQ_OP_PAUSE ? "paused" : "ready");
		break;
	case CSQ_OP_RELEASE:
		csq_parse_room(op->id, strlen(op->id), sid, &idx);
		arg_cstr(k, sid);
		arg_int(k, idx);
		break;
	case CSQ_OP_ENQUEUE:
		args_enqueue(k, &op->enqueue);
		break;
	case CSQ_OP_TOUCH:
		arg_cstr(k, op->id);
		arg_int(k, op->ttl_s < 0 ? -1 : op->ttl_s);
		break;
	case CSQ_OP_QUEUE:
		arg_cstr(k, op->id);
		arg_int(k, (int64_t)(op->offset > QUEUE_OFFSET_MAX
		                         ? QUEUE_OFFSET_MAX
		                         : op->offset));
		arg_int(k, op->count);
		break;
	case CSQ_OP_EXPIRE:
		arg_cstr(k, EXPIRE_BATCH);
		break;
	case CSQ_OP_SERVICERS:
	case CSQ_OP_STATS:
		break;
	default: /* LOGOUT, LEAVE, WHERE, QLEN */
		arg_cstr(k, op->id);
		break;
	}
	*out = k;
	return 0;
}

static void
redis_call(struct csq_engine *e, const struct csq_op *op, csq_engine_cb *cb,
           void *arg)
{
	struct redis_engine *r = redis_engine(e);
	struct csq_result res;
	struct redis_call *k;

	memset(&res, 0, sizeof(res));
	/* Bad input is refused here as the memory engine refuses it, and
	 * an unreachable Redis gets TRYAGAIN at once: nothing half done.
	 * At once, unless earlier calls are still to answer: then in turn. */
	if ((res.status = csq_op_validate(op, &r->limits)) != CSQ_OK ||
	    (res.status = r->up ? CSQ_OK : CSQ_ETRYAGAIN) != CSQ_OK ||
	    call_build(r, op, cb, arg, &k) != 0) {
		if (res.status == CSQ_OK)
			res.status = CSQ_ERANGE;
		if (TAILQ_EMPTY(&r->order)) {
			cb(arg, &res);
			return;
		}
		k = call_new(r, "refused", op->code, cb, arg);
		k->res = res;
		TAILQ_INSERT_TAIL(&r->order, k, order);
		call_ready(k, 0);
		return;
	}
	call_send(r, k);
}

/* Deadlines. */

static uint64_t
redis_next_deadline(struct csq_engine *e)
{
	struct redis_engine *r = redis_engine(e);
	int64_t local;

	if (r->freeing || !r->up || r->reaping || r->next_redis < 0)
		return UINT64_MAX;
	local = r->next_redis - r->skew_ms;
	return local < 0 ? 0 : (uint64_t)local;
}

static void
deadline_moved(struct redis_engine *r)
{
	if (!r->freeing && r->deadline_changed != NULL)
		r->deadline_changed(r->deadline_arg);
}

static void
expire_done(void *arg, const struct csq_result *res)
{
	struct redis_engine *r = arg;

	r->reaping = 0;
	/* A reap that failed (a key of csq's with the wrong type, say)
	 * leaves its deadline past, and would go again at once, hundreds of
	 * times a second: it waits. The health check, once a second, says
	 * the earliest deadline again. */
	if (res->status != CSQ_OK)
		r->next_redis =
		    (int64_t)server_now_ms() + r->skew_ms + EXPIRE_RETRY_MS;
	deadline_moved(r);
}

static void
redis_expire(struct csq_engine *e)
{
	struct redis_engine *r = redis_engine(e);
	struct csq_op op;

	if (!r->up || r->reaping)
		return;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_EXPIRE;
	r->reaping = 1;
	redis_call(e, &op, expire_done, r);
}

/* The tick: a health check that also learns the earliest deadline, which
 * another daemon may have set. */
static void
peek_done(void *arg, const struct csq_result *res)
{
	struct redis_engine *r = arg;

	if (res->status == CSQ_OK && r->peek_sent_us != 0)
		r->rtt_us = (int64_t)(metrics_now_us() - r->peek_sent_us);
	r->peek_sent_us = 0;
	/* Connected, but every call refused (an ACL that does not cover
	 * csq's keys, a key of csq's with the wrong type): /healthz and
	 * csq_engine_up say down until a health check is answered. A call
	 * lost with a dropped link is the link's business: the first health
	 * check after the link is back, sent at once, clears it. */
	if (res->status != CSQ_OK && r->up && !r->peek_refused) {
		r->peek_refused = 1;
		log_warnx("engine redis: the health check got %s; reporting "
		          "the engine down (see Redis's error above)",
		          csq_status_text(res->status));
	} else if (res->status == CSQ_OK && r->peek_refused) {
		r->peek_refused = 0;
		log_info("engine redis: the health check is answered again");
	}
	deadline_moved(r);
}

static void
peek_send(struct redis_engine *r)
{
	r->peek_sent_us = metrics_now_us();
	call_send(r, call_new(r, "peek", CSQ_OP_LIMITS, peek_done, r));
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct redis_engine *r = arg;

	(void)fd, (void)what;
	order_flush(r, 0);
	engine_error_flush(r);
	if (!r->up)
		return;
	if (r->peek_sent_us == 0)
		peek_send(r);
	else if (metrics_now_us() - r->peek_sent_us >
	         (uint64_t)HEALTH_TIMEOUT * 1000)
		conn_drop(&r->cmd, "no answer to the health check");
}

/* Events. */

static void
sub_event(struct redis_engine *r, const char *json, size_t len, uint64_t ts_ms)
{
	struct csq_event ev;
	uint64_t id;

	if (csq_event_parse(json, len, &ev, &id) != 0) {
		log_warnx("engine redis: an event that is not csq's on %s",
		          r->channel);
		return;
	}
	ev.ts_ms = ts_ms;
	if (r->emit != NULL)
		r->emit(r->emit_arg, &ev);
}

/*
 * A message holds the events of one script call: a line with the last
 * event's id and the time (batch.lua), then the events, one a line.
 * Returns where the events start, with the first line's numbers in *last
 * and *ts_ms, or NULL when the first line is not exactly "<digits>
 * <digits>".
 */
static const char *
msg_head(const char *msg, size_t len, uint64_t *last, uint64_t *ts_ms)
{
	const char *nl = memchr(msg, '\n', len);
	char *p = NULL;

	errno = 0;
	if (nl == NULL || !isdigit((unsigned char)msg[0]))
		return NULL;
	*last = strtoull(msg, &p, 10);
	if (*p != ' ' || !isdigit((unsigned char)p[1]))
		return NULL;
	*ts_ms = strtoull(p + 1, &p, 10);
	if (p != nl || errno != 0)
		return NULL;
	return nl + 1;
}

static void
msg_emit(struct redis_engine *r, const char *msg, const char *end,
         uint64_t ts_ms)
{
	const char *nl;

	for (; msg < end; msg = nl + 1) {
		nl = memchr(msg, '\n', (size_t)(end - msg));
		if (nl == NULL)
			nl = end;
		sub_event(r, msg, (size_t)(nl - msg), ts_ms);
	}
}

/*
 * The ids of the events on the subscription went back from sub_last to
 * last: Redis's state is an older one (Redis restarted without its data, a
 * FLUSHALL, a failover to a replica that was behind) or another deployment
 * publishes on the channel (another database, same prefix). The users and
 * servicers of the lost state are gone, and nothing else would say so.
 * What this daemon knew of the ids is dropped, so that replies wait for
 * their events again; one line per 10 s at most, which counts the others.
 */
static void
went_back(struct redis_engine *r, uint64_t last)
{
	uint64_t now = mono_ms();

	r->seen_event = last;
	r->echo_n = 0;
	if (r->went_back_logged_ms != 0 &&
	    now - r->went_back_logged_ms < WENT_BACK_LOG_MS) {
		r->went_back_unlogged++;
		return;
	}
	log_warnx("engine redis: event ids on %s went back from %llu to %llu: "
	          "Redis lost csq's state (a restart without persistence, a "
	          "FLUSHALL, a failover to a replica behind), or another "
	          "deployment publishes there (same prefix, other database)%s",
	          r->channel, (unsigned long long)r->sub_last,
	          (unsigned long long)last,
	          r->went_back_unlogged > 0 ? "; again since the last line"
	                                    : "");
	r->went_back_logged_ms = now;
	r->went_back_unlogged = 0;
}

/* A message on the subscription, unless it echoes one taken from a reply;
 * one taken from a reply and older than this one was published while the
 * subscription was away, and will not come. */
static void
sub_events(struct redis_engine *r, const char *msg, size_t len)
{
	const char *body;
	uint64_t last, ts_ms;
	int echo = 0;

	if ((body = msg_head(msg, len, &last, &ts_ms)) == NULL) {
		log_warnx("engine redis: a message that is not csq's on %s",
		          r->channel);
		return;
	}
	if (last <= r->sub_last)
		went_back(r, last);
	r->sub_last = last;
	while (r->echo_n > 0 && r->echo[r->echo_head] <= last) {
		echo = r->echo[r->echo_head] == last;
		r->echo_head = (r->echo_head + 1) % ECHO_MAX;
		r->echo_n--;
	}
	if (!echo)
		msg_emit(r, body, msg + len, ts_ms);
	if (last > r->seen_event)
		r->seen_event = last;
}

/*
 * The events of a call this daemon made, from its reply (m, '' when it
 * has none): emitted now when every event before them has been seen, and
 * then skipped when their PUBLISH comes; otherwise left to it. Only while
 * subscribed: an echo never comes to a daemon that is not.
 */
static void
reply_events(struct redis_engine *r, const redisReply *m)
{
	const char *body, *end = m->str + m->len;
	uint64_t last, ts_ms, n;

	if (m->len == 0 || !r->sub.ready || r->echo_n == ECHO_MAX ||
	    (body = msg_head(m->str, m->len, &last, &ts_ms)) == NULL)
		return;
	n = msg_events(m->str, m->len);
	if (last < n || last - n != r->seen_event)
		return;
	msg_emit(r, body, end, ts_ms);
	r->seen_event = last;
	r->echo[(r->echo_head + r->echo_n++) % ECHO_MAX] = last;
}

static void
sub_message_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct redis_conn *c = ac->data;
	redisReply *reply = reply_, *kind, *body;

	(void)priv;
	if (c == NULL || reply == NULL)
		return;
	if (reply->type == REDIS_REPLY_ERROR) {
		handshake_error(ac, reply, "SUBSCRIBE");
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
	    (kind = reply->element[0])->type != REDIS_REPLY_STRING)
		return;
	body = reply->element[2];
	if (strcmp(kind->str, "subscribe") == 0) {
		/* Nothing published before this is coming. */
		c->r->echo_n = 0;
		c->r->sub_gen++;
		conn_ready(c);
		/* Events missed while away are gone: nothing waits for them. */
		order_flush(c->r, 1);
		return;
	}
	if (strcmp(kind->str, "message") == 0 &&
	    body->type == REDIS_REPLY_STRING) {
		sub_events(c->r, body->str, body->len);
		order_flush(c->r, 0);
	}
}

/* The rest of the interface. */

static void
redis_set_limits(struct csq_engine *e, const struct csq_limits *limits)
{
	redis_engine(e)->limits = *limits;
}

static int
redis_up(struct csq_engine *e)
{
	struct redis_engine *r = redis_engine(e);

	return r->up && !r->peek_refused;
}

static void
conn_close(struct redis_conn *c)
{
	redisAsyncContext *ac = c->ac;

	c->ac = NULL;
	c->ready = 0;
	if (ac != NULL) {
		ac->data = NULL;
		redisAsyncFree(ac);
	}
	event_free(c->timer);
}

static void
redis_free(struct csq_engine *e)
{
	struct redis_engine *r = redis_engine(e);

	r->freeing = 1;
	pending_fail(r);
	order_flush(r, 1);
	conn_close(&r->cmd);
	conn_close(&r->sub);
	order_flush(r, 1);
	event_free(r->tick);
	event_free(r->flush);
	free(r);
}

static const struct csq_engine_ops redis_ops = {
    .name = "redis",
    .call = redis_call,
    .next_deadline = redis_next_deadline,
    .expire = redis_expire,
    .set_limits = redis_set_limits,
    .up = redis_up,
    .free = redis_free,
};

int64_t
engine_redis_rtt_us(struct csq_engine *e)
{
	if (e == NULL || e->ops != &redis_ops || !redis_engine(e)->up)
		return -1;
	return redis_engine(e)->rtt_us;
}

static void
conn_init(struct redis_engine *r, struct redis_conn *c, const char *name)
{
	c->r = r;
	c->name = name;
	c->backoff_ms = BACKOFF_MIN_MS;
	c->timer = evtimer_new(r->evb, conn_timer_cb, c);
}

struct csq_engine *
engine_redis_new(struct event_base *evb, const struct config *cfg,
                 csq_emit_fn *emit, void *emit_arg,
                 void (*deadline_changed)(void *), void *arg)
{
	struct redis_engine *r = csq_xcalloc(1, sizeof(*r));
	struct timeval tv = {TICK_MS / 1000, (TICK_MS % 1000) * 1000};
	const char *host = cfg->redis_host;

	r->base.ops = &redis_ops;
	r->evb = evb;
	if (strncmp(host, "unix:", 5) == 0)
		host += 5;
	r->is_unix = host[0] == '/';
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->port = (int)cfg->redis_port;
	if (r->is_unix)
		snprintf(r->addr, sizeof(r->addr), "%s", r->host);
	else
		snprintf(r->addr, sizeof(r->addr), "%s:%d", r->host, r->port);
	snprintf(r->password, sizeof(r->password), "%s", cfg->redis_password);
	r->db = cfg->redis_db;
	snprintf(r->stats_key, sizeof(r->stats_key), "{%s}:stats",
	         cfg->redis_prefix);
	snprintf(r->channel, sizeof(r->channel), "{%s}:events",
	         cfg->redis_prefix);
	r->limits = cfg->limits;
	r->emit = emit;
	r->emit_arg = emit_arg;
	r->deadline_changed = deadline_changed;
	r->deadline_arg = arg;
	r->next_redis = -1;
	r->rtt_us = -1;
	TAILQ_INIT(&r->pending);
	TAILQ_INIT(&r->order);
	r->flush = event_new(evb, -1, 0, flush_cb, r);
	conn_init(r, &r->cmd, "commands");
	conn_init(r, &r->sub, "events");
	r->tick = event_new(evb, -1, EV_PERSIST, tick_cb, r);
	evtimer_add(r->tick, &tv);
	conn_start(&r->cmd);
	conn_start(&r->sub);
	return &r->base;
}
