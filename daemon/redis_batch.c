/*
 * The Redis engine's script calls. Operations are batched: those that
 * arrive in one loop turn go together, in order, in one call of the one
 * script (batch.lua); when BATCH_INFLIGHT calls are in flight, the next
 * waits for a reply. A busy daemon so pays Redis's cost of a script call
 * once for many operations.
 *
 * A call is an FCALL of the script loaded as a function library, where
 * Redis has functions (7.0 and later) and lets this daemon load them: the
 * library's functions are built once, not on every call as with EVALSHA.
 * Else, and for a call that Redis refuses before running it (the library
 * is gone, or Redis is out of memory, which refuses a whole FCALL but only
 * the writes of an EVALSHA), it is an EVALSHA; after a NOSCRIPT, an EVAL.
 */
#include "redis_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_clock.h"
#include "log.h"
#include "record.h"
#include "redis_scripts.h"
#include "util.h"

/* Operations in one script call; a MULTI block larger than this goes
 * alone, whole (max_multi_commands bounds it). */
#define BATCH_MAX      128
#define BATCH_INFLIGHT 8 /* script calls in flight at once */
/* ARGV[1..10]: the limits, and the time (common.lua). */
#define BATCH_LIMITS 10

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

/* Whether k may change the state (the health check, a LIMITS, does not). */
static int
call_writes(const struct redis_call *k)
{
	return k->code != CSQ_OP_LIMITS && csq_op_mutates(k->code);
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
			redis_conn_function_reload(b->r);
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
		redis_reply_log_error(r, reply->str);
		/* A master demoted under csqd: its new one is elsewhere. */
		if (strncmp(reply->str, "READONLY", 8) == 0 &&
		    r->nsentinels > 0 && r->cmd.ac != NULL) {
			redisAsyncDisconnect(r->cmd.ac);
			redis_sentinel_ask(r, "the master answers READONLY");
		}
		batch_fail(b, strstr(reply->str, " script: ") != NULL
		                  ? CSQ_EUNSURE
		                  : CSQ_ETRYAGAIN);
	} else if ((last = redis_reply_header(r, reply)) < 0) {
		log_warnx("engine redis: a reply of an unexpected shape");
		batch_fail(b, CSQ_EUNSURE);
	} else {
		redis_subscription_sync(r, b, reply->element[4],
		                        (uint64_t)last);
		redis_subscription_reply(r, reply->element[4]);
		while ((k = TAILQ_FIRST(&b->calls)) != NULL) {
			TAILQ_REMOVE(&b->calls, k, entry);
			if (b->how == HOW_MODULE)
				redis_reply_module(k, reply, i++,
				                   (uint64_t)last);
			else
				redis_reply_call(
				    k, redis_reply_op(reply, &i, &view),
				    (uint64_t)last);
		}
		free(b);
	}
	redis_batch_schedule(r);
}

/* Writes b's call, argc arguments (hiredis copies them into its output
 * buffer at once); a link that is going fails it, and what waits. */
static void
batch_command(struct redis_batch *b, int argc, const char **argv,
              const size_t *argvlen)
{
	struct redis_engine *r = b->r;
	int rc = r->cmd.ac == NULL
	             ? REDIS_ERR
	             : redisAsyncCommandArgv(r->cmd.ac, batch_reply_cb, b, argc,
	                                     argv, argvlen);

	if (rc != REDIS_OK) {
		r->inflight--;
		batch_fail(b, CSQ_ETRYAGAIN);
		redis_batch_fail_pending(r);
		return;
	}
	batch_wait(b);
}

/*
 * CSQ.CALL <state key> <limits> <time> <op>...: the limits as a LIMITS
 * record, the time empty (the module's) or a test's clock, and each
 * operation as its record (redis_call_record); the health check, which
 * has none, as the limits again (the module answers it with nothing).
 */
static void
batch_write_module(struct redis_batch *b)
{
	struct redis_engine *r = b->r;
	uint8_t limits[CSQ_RECORD_MAX];
	size_t *argvlen, limits_len;
	char now[24];
	const char **argv;
	struct redis_call *k;
	struct csq_op op;
	int argc = 0;

	argv = csq_xmalloc((size_t)(b->ncalls + 4) * sizeof(*argv));
	argvlen = csq_xmalloc((size_t)(b->ncalls + 4) * sizeof(*argvlen));
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_LIMITS;
	op.limits = r->limits;
	limits_len = csq_record_encode(&op, 0, limits);
	now[0] = '\0';
#ifdef CSQ_TEST_CLOCK
	if (debug_clock_ms() != 0)
		snprintf(now, sizeof(now), "%llu",
		         (unsigned long long)debug_clock_ms());
#endif
	argv[argc] = "CSQ.CALL", argvlen[argc++] = 8;
	argv[argc] = r->state_key, argvlen[argc++] = strlen(r->state_key);
	argv[argc] = (const char *)limits, argvlen[argc++] = limits_len;
	argv[argc] = now, argvlen[argc++] = strlen(now);
	TAILQ_FOREACH(k, &b->calls, entry) {
		if (k->argc > 0) {
			argv[argc] = k->argv[0];
			argvlen[argc++] = k->argvlen[0];
		} else { /* the health check */
			argv[argc] = (const char *)limits;
			argvlen[argc++] = limits_len;
		}
	}
	batch_command(b, argc, argv, argvlen);
	free(argv);
	free(argvlen);
}

/* Sends b as b->how says, with the limits and b's operations. */
static void
batch_write(struct redis_batch *b)
{
	struct redis_engine *r = b->r;
	char limits[BATCH_LIMITS][24], (*counts)[12];
	const char **argv;
	size_t *argvlen;
	struct redis_call *k;
	int argc = 0, n = 5 + BATCH_LIMITS, i, j = 0;

	TAILQ_FOREACH(k, &b->calls, entry)
		n += 2 + k->argc;
	counts = csq_xmalloc((size_t)(b->ncalls + 1) * sizeof(*counts));
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
	case HOW_MODULE:
		free(argv);
		free(argvlen);
		free(counts);
		batch_write_module(b);
		return;
	}
	ARG("1", 1);
	ARG(r->stats_key, strlen(r->stats_key));
	snprintf(limits[0], sizeof(limits[0]), "%u", r->limits.servicer_ttl_s);
	snprintf(limits[1], sizeof(limits[1]), "%u", r->limits.user_ttl_s);
	snprintf(limits[2], sizeof(limits[2]), "%u", r->limits.max_tier);
	snprintf(limits[3], sizeof(limits[3]), "%llu",
	         (unsigned long long)r->limits.max_queue_length);
	snprintf(limits[4], sizeof(limits[4]), "%u", r->limits.offer_timeout_s);
	snprintf(limits[5], sizeof(limits[5]), "%u",
	         r->limits.offer_max_missed);
	snprintf(limits[6], sizeof(limits[6]), "%u", r->limits.offer_retry_s);
	snprintf(limits[7], sizeof(limits[7]), "%u", r->limits.wrapup_s);
	snprintf(limits[8], sizeof(limits[8]), "%u",
	         (unsigned)r->limits.strategy);
	/* The time the script runs at: Redis's (TIME), unless a test set
	 * its clock (debug_clock.h). */
	limits[9][0] = '\0';
#ifdef CSQ_TEST_CLOCK
	if (debug_clock_ms() != 0)
		snprintf(limits[9], sizeof(limits[9]), "%llu",
		         (unsigned long long)debug_clock_ms());
#endif
	for (i = 0; i < BATCH_LIMITS; i++)
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
	batch_command(b, argc, argv, argvlen);
	free(argv);
	free(argvlen);
	free(counts);
}

/* Sends up to BATCH_MAX pending operations as one script call, a
 * group (MULTI) whole. */
static void
batch_send(struct redis_engine *r)
{
	struct redis_batch *b;
	struct redis_call *k;
	int take;

	if (TAILQ_EMPTY(&r->pending))
		return;
	b = csq_xcalloc(1, sizeof(*b));
	b->r = r;
	b->how = r->module ? HOW_MODULE : r->fn ? HOW_FCALL : HOW_EVALSHA;
	b->sub_gen = r->sub.ready ? r->sub_gen : 0;
	TAILQ_INIT(&b->calls);
	while ((k = TAILQ_FIRST(&r->pending)) != NULL) {
		take = k->group_len > 1 ? k->group_len : 1;
		if (b->ncalls > 0 && b->ncalls + take > BATCH_MAX)
			break;
		while (take-- > 0) {
			k = TAILQ_FIRST(&r->pending);
			TAILQ_REMOVE(&r->pending, k, entry);
			TAILQ_INSERT_TAIL(&b->calls, k, entry);
			b->ncalls++;
		}
	}
	r->inflight++;
	batch_write(b);
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
	/* redis_event.c writes them at the end of this turn of the loop. */
}
