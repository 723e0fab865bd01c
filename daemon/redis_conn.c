/*
 * The Redis engine's two connections: one for the calls of csq.so, one
 * subscribed to the events channel. hiredis 0.14 has neither a connect timeout
 * nor a reconnect, so each connection keeps a timer that does both: a fresh
 * context for every attempt, a capped exponential backoff between them.
 * The handshake (AUTH, SELECT and CSQ.VERSION, or SUBSCRIBE) is sent at once;
 * the connection serves when it is answered.
 */
#include "redis_engine.h"

#include <sys/socket.h>

#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "redis_event.h"
#include "result.h"

#define BACKOFF_MIN_MS  100
#define BACKOFF_MAX_MS  2000
#define CONNECT_TIMEOUT 2000 /* ms to connect and finish the handshake */

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct redis_conn *c = arg;

	(void)fd, (void)what;
	if (c->ac == NULL)
		redis_conn_start(c);
	else if (!c->ready)
		redis_conn_drop(c, "timed out connecting");
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

void
redis_conn_failed(struct redis_conn *c, const char *why)
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
	redis_conn_failed(c, why);
	conn_retry(c);
	if (c == &r->sen)
		return; /* the engine's state is the data connections' */
	if (c == &r->cmd) {
		r->peek_sent_us = 0;
		r->reaping = 0;
	}
	redis_engine_update_up(r);
	/* What was not sent will not be: TRYAGAIN, nothing was changed. */
	redis_batch_fail_pending(r);
	/* The events that replies wait for will not come on this link. */
	if (c == &r->sub)
		redis_call_flush(r, 1);
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
void
redis_conn_drop(struct redis_conn *c, const char *why)
{
	redisAsyncContext *ac = c->ac;

	if (ac == NULL)
		return;
	conn_lost(c, why);
	ac->data = NULL;
	redisAsyncFree(ac);
}

/* The handshake is done: this connection serves. */
void
redis_conn_ready(struct redis_conn *c)
{
	c->ready = 1;
	c->backoff_ms = BACKOFF_MIN_MS;
	if (c->failed)
		log_info("engine redis: %s connection restored", c->name);
	c->failed = 0;
	evtimer_del(c->timer);
	redis_engine_update_up(c->r);
}

/* A reply of the handshake: an error ends the attempt, with its reason. */
int
redis_conn_error(redisAsyncContext *ac, redisReply *reply, const char *what)
{
	struct redis_conn *c = ac->data;
	char why[256];

	if (c == NULL || reply == NULL)
		return 1;
	if (reply->type != REDIS_REPLY_ERROR)
		return 0;
	snprintf(why, sizeof(why), "%s: %s", what, reply->str);
	redis_conn_failed(c, why);
	/* Inside a callback hiredis disconnects once the replies it waits
	 * for are in; the disconnect callback then tries again. */
	redisAsyncDisconnect(ac);
	return 1;
}

static void
handshake_auth_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	(void)priv;
	redis_conn_error(ac, reply, "AUTH");
}

/* With Sentinel: a server that is not the master (the sentinels' answer
 * was stale, or it was demoted since) is left, and they are asked again. */
static void
handshake_role_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct redis_conn *c = ac->data;
	redisReply *reply = reply_, *role;

	(void)priv;
	if (redis_conn_error(ac, reply, "ROLE"))
		return;
	if (reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
	    (role = reply->element[0])->type == REDIS_REPLY_STRING &&
	    strcmp(role->str, "master") == 0)
		return;
	redis_conn_failed(c, "ROLE: not the master");
	redisAsyncDisconnect(ac);
	redis_sentinel_ask(c->r, "a server they named is not the master");
}

static void
handshake_select_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	(void)priv;
	redis_conn_error(ac, reply, "SELECT");
}

/*
 * The handshake with csq.so: CSQ.VERSION names the module and the
 * version of the calls it takes. A Redis without the module, or with one
 * of other calls, is an error of the configuration, logged as one each
 * time the link is tried (once per outage), and the engine stays down.
 */
static void
handshake_module_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct redis_conn *c = ac->data;
	redisReply *reply = reply_;
	char why[256];

	(void)priv;
	if (c == NULL || reply == NULL)
		return;
	if (reply->type == REDIS_REPLY_ERROR) {
		snprintf(why, sizeof(why),
		         "CSQ.VERSION: %s: the csq module is not loaded in "
		         "redis-server (add `loadmodule %s` to redis.conf, "
		         "docs/operations.md)",
		         reply->str, CSQ_MODULE_PATH);
	} else if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3 ||
	           reply->element[2]->type != REDIS_REPLY_INTEGER ||
	           reply->element[2]->integer != CSQ_MODULE_CALLS) {
		snprintf(why, sizeof(why),
		         "CSQ.VERSION: the csq module in redis-server takes "
		         "calls of another version than this csqd's (%d): "
		         "install csqd and csq.so of one version",
		         CSQ_MODULE_CALLS);
	} else {
		redis_conn_ready(c);
		return;
	}
	redis_conn_failed(c, why);
	redisAsyncDisconnect(ac);
}

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

void
redis_conn_start(struct redis_conn *c)
{
	char addr[NI_MAXHOST];
	struct redis_engine *r = c->r;
	redisAsyncContext *ac;
	struct timeval tv = {CONNECT_TIMEOUT / 1000,
	                     (CONNECT_TIMEOUT % 1000) * 1000};
	int port = r->port;

	/* With Sentinel, the data connections wait for the master's address,
	 * which starts them (redis_sentinel.c). */
	if (c != &r->sen && r->nsentinels > 0 && !r->have_master)
		return;
	if (c == &r->sen) {
		redis_sentinel_address(c, addr, sizeof(addr), &port);
		ac = redisAsyncConnect(addr, port);
	} else if (r->is_unix) {
		ac = redisAsyncConnectUnix(r->host);
	} else {
		conn_address(c, addr, sizeof(addr));
		ac = redisAsyncConnect(addr, port);
	}
	if (ac == NULL) {
		redis_conn_failed(c, "out of memory");
		conn_retry(c);
		return;
	}
	if (ac->err) {
		redis_conn_failed(c, ac->errstr);
		redisAsyncFree(ac);
		conn_retry(c);
		return;
	}
	c->ac = ac;
	ac->data = c;
	redis_reply_objects(ac);
	redis_event_attach(ac, r->evb);
	redisAsyncSetConnectCallback(ac, conn_connected_cb);
	redisAsyncSetDisconnectCallback(ac, conn_disconnected_cb);
	evtimer_add(c->timer, &tv);

	/* Sent at once: hiredis writes them when the socket connects. */
	if (c == &r->sen) {
		redis_sentinel_handshake(c);
		return;
	}
	if (r->password[0] != '\0')
		redisAsyncCommand(ac, handshake_auth_cb, NULL, "AUTH %s",
		                  r->password);
	if (r->nsentinels > 0)
		redisAsyncCommand(ac, handshake_role_cb, NULL, "ROLE");
	if (c == &r->sub) {
		redisAsyncCommand(ac, redis_subscription_cb, NULL,
		                  "SUBSCRIBE %s", r->channel);
		return;
	}
	if (r->db != 0)
		redisAsyncCommand(ac, handshake_select_cb, NULL, "SELECT %lld",
		                  (long long)r->db);
	redisAsyncCommand(ac, handshake_module_cb, NULL, "CSQ.VERSION");
}

void
redis_conn_now(struct redis_conn *c)
{
	if (c->ac != NULL || c->r->freeing)
		return;
	evtimer_del(c->timer);
	c->backoff_ms = BACKOFF_MIN_MS;
	redis_conn_start(c);
}

void
redis_conn_init(struct redis_engine *r, struct redis_conn *c, const char *name)
{
	c->r = r;
	c->name = name;
	c->backoff_ms = BACKOFF_MIN_MS;
	c->timer = evtimer_new(r->evb, conn_timer_cb, c);
}

void
redis_conn_close(struct redis_conn *c)
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
