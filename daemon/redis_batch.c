/*
 * The Redis engine's calls of csq.so. Operations are batched: those that
 * arrive in one loop turn go together, in order, in one CSQ.CALL; when
 * BATCH_INFLIGHT calls are in flight, the next waits for a reply. A busy
 * daemon so pays Redis's cost of a command once for many operations.
 * A run of operations that only read goes as CSQ.READ, which Redis runs
 * over its maxmemory (CSQ.CALL is deny-oom): reads are answered when
 * Redis is full, and writes are refused with an error that says so.
 */
#include "redis_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_clock.h"
#include "log.h"
#include "record.h"
#include "redis_event.h"
#include "util.h"

/* Operations in one CSQ.CALL; a MULTI block larger than this goes alone,
 * whole (max_multi_commands bounds it). A view's slice (a thousand
 * queues or servicers) ends its call (issue 37): twenty SERVICERS'
 * slices batched together were one call of 20,000 servicers, which every
 * other call on the prefix waited for. */
#define BATCH_MAX      128
#define BATCH_INFLIGHT 8 /* calls in flight at once */

static void batch_write(struct redis_batch *);
static void batch_reply_cb(redisAsyncContext *, void *, void *);
static void batch_wait(struct redis_batch *);

/* Sends the next batch at the end of this loop turn, when it may go. */
void
redis_batch_schedule(struct redis_engine *r)
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
		redis_call_fail(k, why);
	}
}

static void
batch_fail(struct redis_batch *b, enum csq_status why)
{
	calls_fail(&b->calls, why);
	free(b);
}

void
redis_batch_fail_pending(struct redis_engine *r)
{
	calls_fail(&r->pending, CSQ_ETRYAGAIN);
}

/* Whether k may change the state (the health check, a LIMITS, does not;
 * the limits sent alone are applied by a CSQ.CALL). */
static int
call_writes(const struct redis_call *k)
{
	return k->code != CSQ_OP_LIMITS ? csq_op_mutates(k->code)
	                                : k->limits_only;
}

/* A WAIT sent after a call: which one, for its answer. */
struct batch_wait {
	struct redis_engine *r;
	uint64_t seq;
};

/*
 * WAIT's answer: the calls it holds leave (redis_call_flush). When fewer
 * replicas than redis.wait_replicas have their changes (or the link went),
 * a failover may lose them: those that changed something are answered as
 * an operation that may have been applied (UNSURE), never as done.
 */
static void
batch_wait_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct batch_wait *w = priv;
	struct redis_engine *r = w->r;
	redisReply *reply = reply_;
	struct redis_call *k;
	char why[128];
	int enough;

	(void)ac;
	enough = reply != NULL && reply->type == REDIS_REPLY_INTEGER &&
	         reply->integer >= r->wait_replicas;
	if (!enough && reply != NULL) {
		snprintf(why, sizeof(why),
		         "WAIT: %lld of %lld replicas within %lld ms; the "
		         "changes answered TRYAGAIN (may have been applied)",
		         reply->type == REDIS_REPLY_INTEGER
		             ? (long long)reply->integer
		             : -1LL,
		         (long long)r->wait_replicas,
		         (long long)r->wait_timeout_ms);
		redis_reply_log_error(r, why);
	}
	TAILQ_FOREACH(k, &r->order, order) {
		if (k->wait_seq != w->seq)
			continue;
		k->wait_seq = 0;
		if (!enough && k->ready && k->res.status == CSQ_OK &&
		    call_writes(k)) {
			memset(&k->res, 0, sizeof(k->res));
			k->res.status = CSQ_EUNSURE;
		}
	}
	free(w);
	redis_call_flush(r, 0);
}

/* With redis.wait_replicas, a WAIT after a call that may write; its
 * calls wait for its answer. */
static void
batch_wait(struct redis_batch *b)
{
	struct redis_engine *r = b->r;
	struct batch_wait *w;
	struct redis_call *k;
	int writes = 0;

	if (r->wait_replicas == 0)
		return;
	TAILQ_FOREACH(k, &b->calls, entry)
		writes |= call_writes(k);
	if (!writes)
		return;
	w = csq_xmalloc(sizeof(*w));
	w->r = r;
	w->seq = ++r->wait_seq;
	TAILQ_FOREACH(k, &b->calls, entry)
		k->wait_seq = w->seq;
	if (redisAsyncCommand(r->cmd.ac, batch_wait_cb, w, "WAIT %lld %lld",
	                      (long long)r->wait_replicas,
	                      (long long)r->wait_timeout_ms) != REDIS_OK) {
		/* The link is going: the call's own reply says so. */
		TAILQ_FOREACH(k, &b->calls, entry)
			k->wait_seq = 0;
		free(w);
	}
}

static void
batch_reply_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct redis_batch *b = priv;
	struct redis_engine *r = b->r;
	redisReply *reply = reply_;
	struct redis_call *k;
	int64_t last;
	size_t i = 5;

	(void)ac;
	r->inflight--;
	if (reply == NULL) {
		/* The link went while the call was out: it may have run. */
		batch_fail(b, CSQ_EUNSURE);
	} else if (reply->type == REDIS_REPLY_ERROR) {
		redis_reply_log_error(r, reply->str);
		/* A master demoted under csqd: its new one is elsewhere. */
		if (strncmp(reply->str, "READONLY", 8) == 0 &&
		    r->nsentinels > 0 && r->cmd.ac != NULL) {
			redisAsyncDisconnect(r->cmd.ac);
			redis_sentinel_ask(r, "the master answers READONLY");
		}
		/* csq.so reads every record before it runs any, and Redis
		 * refuses a call (OOM, a wrong key type) before the module
		 * runs: an error reply changed nothing. Over maxmemory only
		 * changes are refused (reads go as CSQ.READ), and say so. */
		batch_fail(b, strncmp(reply->str, "OOM", 3) == 0
		                  ? CSQ_EOOM
		                  : CSQ_ETRYAGAIN);
	} else if ((last = redis_reply_header(r, reply)) < 0) {
		log_warnx("engine redis: a reply of an unexpected shape");
		batch_fail(b, CSQ_EUNSURE);
	} else {
		if (b->writes && b->limits_gen > r->limits_applied)
			r->limits_applied = b->limits_gen;
		redis_subscription_sync(r, b, reply->element[4],
		                        (uint64_t)last);
		redis_subscription_reply(r, reply->element[4]);
		/* The events (a `matched`) leave now, before the answers are
		 * decoded and before the loop reads their echo on the
		 * subscription (docs/benchmarks.md, "Events written from the
		 * reply", 2026-11-29). */
		redis_events_out(r);
		while ((k = TAILQ_FIRST(&b->calls)) != NULL) {
			TAILQ_REMOVE(&b->calls, k, entry);
			redis_reply_module(k, reply, i++, (uint64_t)last);
		}
		free(b);
	}
	redis_batch_schedule(r);
}

#define CMDBUF_KEEP 65536 /* a larger CSQ.CALL's buffer is not kept */

/* Room for n more bytes of the CSQ.CALL being written at len. */
static char *
cmd_room(struct redis_engine *r, size_t len, size_t n)
{
	size_t cap = r->cmdcap > 0 ? r->cmdcap : 4096;

	while (cap < len + n)
		cap *= 2;
	if (cap != r->cmdcap) {
		r->cmdbuf = csq_xrealloc(r->cmdbuf, cap);
		r->cmdcap = cap;
	}
	return r->cmdbuf + len;
}

/* n in decimal at p, then CRLF: the bytes written. */
static size_t
cmd_uint(char *p, size_t n)
{
	char tmp[24];
	size_t i = sizeof(tmp), len;

	do
		tmp[--i] = (char)('0' + n % 10);
	while ((n /= 10) > 0);
	len = sizeof(tmp) - i;
	memcpy(p, tmp + i, len);
	p[len] = '\r';
	p[len + 1] = '\n';
	return len + 2;
}

/* One argument of the call, a RESP bulk string, at len: the new length. */
static size_t
cmd_arg(struct redis_engine *r, size_t len, const void *arg, size_t n)
{
	char *p = cmd_room(r, len, n + 28);

	p[0] = '$';
	len += 1 + cmd_uint(p + 1, n);
	p = r->cmdbuf + len;
	memcpy(p, arg, n);
	p[n] = '\r';
	p[n + 1] = '\n';
	return len + n + 2;
}

/*
 * Writes b's call, cmd (len bytes of RESP, as hiredis's
 * redisFormatCommandArgv writes the same arguments, which hiredis copies
 * into its output buffer at once); a link that is going fails it, and what
 * waits. csqd formats it itself, into a buffer it keeps: hiredis grew an
 * sds argument by argument with sdscatfmt, 4 % of csqd's instructions a
 * match on the Redis engine (docs/benchmarks.md, "csqd's CPU a match on
 * the Redis engine").
 */
static void
batch_command(struct redis_batch *b, const char *cmd, size_t len)
{
	struct redis_engine *r = b->r;
	int rc = r->cmd.ac == NULL
	             ? REDIS_ERR
	             : redisAsyncFormattedCommand(r->cmd.ac, batch_reply_cb, b,
	                                          cmd, len);

	if (rc != REDIS_OK) {
		r->inflight--;
		batch_fail(b, CSQ_ETRYAGAIN);
		redis_batch_fail_pending(r);
		return;
	}
	batch_wait(b);
}

/*
 * The limits as their LIMITS record (in *rec; its length), encoded once a
 * generation: zeroing a struct csq_op and encoding it for every CSQ.CALL
 * was 700 instructions a match at 1 servicer (docs/benchmarks.md,
 * "csqd's replies and messages written in one piece").
 */
static size_t
batch_limits(struct redis_engine *r, const uint8_t **rec)
{
	struct csq_op op;

	if (r->limits_rec_gen != r->limits_gen) {
		memset(&op, 0, sizeof(op));
		op.code = CSQ_OP_LIMITS;
		op.limits = r->limits;
		r->limits_rec_len = csq_record_encode(&op, 0, r->limits_rec);
		r->limits_rec_gen = r->limits_gen;
	}
	*rec = r->limits_rec;
	return r->limits_rec_len;
}

/*
 * CSQ.CALL (or CSQ.READ) <state key> <limits> <time> <op>...: the limits
 * as a LIMITS
 * record, the time empty (the module's) or a test's clock, and each
 * operation as its record (redis_call_record); the health check, which
 * has none, as the limits again (the module answers it with nothing).
 */
static void
batch_write(struct redis_batch *b)
{
	struct redis_engine *r = b->r;
	const uint8_t *limits;
	size_t limits_len, len;
	char now[24], *p;
	struct redis_call *k;

	limits_len = batch_limits(r, &limits);
	b->limits_gen = r->limits_gen;
	now[0] = '\0';
#ifdef CSQ_TEST_CLOCK
	if (debug_clock_ms() != 0)
		snprintf(now, sizeof(now), "%llu",
		         (unsigned long long)debug_clock_ms());
#endif
	p = cmd_room(r, 0, 32);
	p[0] = '*';
	len = 1 + cmd_uint(p + 1, (size_t)b->ncalls + 4);
	len = cmd_arg(r, len, b->writes ? "CSQ.CALL" : "CSQ.READ", 8);
	len = cmd_arg(r, len, r->state_key, strlen(r->state_key));
	len = cmd_arg(r, len, limits, limits_len);
	len = cmd_arg(r, len, now, strlen(now));
	TAILQ_FOREACH(k, &b->calls, entry) {
		if (k->reclen > 0) /* else the health check */
			len = cmd_arg(r, len, k->rec, k->reclen);
		else
			len = cmd_arg(r, len, limits, limits_len);
	}
	batch_command(b, r->cmdbuf, len);
	if (r->cmdcap > CMDBUF_KEEP) {
		free(r->cmdbuf);
		r->cmdbuf = NULL;
		r->cmdcap = 0;
	}
}

/* Whether the operation k (a group's first: the whole group) may change
 * the state, and so goes in a CSQ.CALL rather than a CSQ.READ. */
static int
run_writes(const struct redis_call *k)
{
	int n = k->group_len > 1 ? k->group_len : 1, w = 0;

	for (; n > 0 && k != NULL; n--, k = TAILQ_NEXT(k, entry))
		w |= call_writes(k);
	return w;
}

/* Sends up to BATCH_MAX pending operations as one CSQ.CALL (or, when
 * they only read, one CSQ.READ), a group (MULTI) whole. */
static void
batch_send(struct redis_engine *r)
{
	struct redis_batch *b;
	struct redis_call *k;
	int take, slice = 0;

	if (TAILQ_EMPTY(&r->pending))
		return;
	b = csq_xcalloc(1, sizeof(*b));
	b->r = r;
	b->sub_gen = r->sub.ready ? r->sub_gen : 0;
	b->writes = run_writes(TAILQ_FIRST(&r->pending));
	TAILQ_INIT(&b->calls);
	while (!slice && (k = TAILQ_FIRST(&r->pending)) != NULL) {
		take = k->group_len > 1 ? k->group_len : 1;
		if (b->ncalls > 0 && (b->ncalls + take > BATCH_MAX ||
		                      run_writes(k) != b->writes))
			break;
		while (take-- > 0) {
			k = TAILQ_FIRST(&r->pending);
			TAILQ_REMOVE(&r->pending, k, entry);
			TAILQ_INSERT_TAIL(&b->calls, k, entry);
			b->ncalls++;
			slice |= k->slice;
		}
	}
	r->inflight++;
	batch_write(b);
}

/*
 * The events emitted so far go to their clients now (events_out), not at
 * the end of the loop turn: before csqd reads anything else that the
 * turn's epoll_wait found ready, the echo of these events among it. A
 * call of requests already read in this turn, waiting for the turn's end,
 * goes first: a call still leaves before the turn's writes to clients.
 */
void
redis_events_out(struct redis_engine *r)
{
	if (r->events_out == NULL)
		return;
	if (event_pending(r->flush, EV_TIMEOUT, NULL)) {
		event_del(r->flush);
		redis_batch_flush_cb(-1, 0, r);
	}
	r->events_out(r->deadline_arg);
}

void
redis_batch_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct redis_engine *r = arg;

	(void)fd, (void)what;
	if (!r->up) {
		redis_batch_fail_pending(r);
		return;
	}
	while (r->inflight < BATCH_INFLIGHT && !TAILQ_EMPTY(&r->pending))
		batch_send(r);
	/* Written now, ahead of what this turn has for the clients: the
	 * flush runs once the turn's requests are read, so the call holds
	 * them all, and Redis's work overlaps the clients' writes. */
	if (r->cmd.ac != NULL)
		redis_event_write_now(r->cmd.ac);
}
