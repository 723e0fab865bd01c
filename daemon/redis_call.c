/*
 * The Redis engine's operations: each struct csq_op becomes a call of one
 * of the script's operations (OPS.<name> in daemon/lua/) with its
 * arguments, kept until its batch is answered, and its answer leaves in
 * the order the calls were made.
 *
 * A command's reply is held until this daemon has seen every event its
 * call published (each event carries an id from one counter in Redis), so
 * that a client hears of an event before the reply that caused it, as with
 * the memory engine (redis_subscription.c).
 */
#include "redis_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "util.h"

#define PARK_TIMEOUT_MS  2000 /* longest a reply waits for its events */
#define EXPIRE_BATCH     "1000"
#define QUEUE_OFFSET_MAX (UINT64_C(1) << 52) /* exact in a Lua number */

static void
call_free(struct redis_call *k)
{
	free(k->entries);
	free(k->servicers);
	free(k->queues);
	free(k->rooms);
	free(k->qstats);
	free(k->owned);
	free(k);
}

/* k's answer is known (k->res); it leaves when every call made before
 * it has left and the events up to wait_event have come in. */
void
redis_call_ready(struct redis_call *k, uint64_t wait_event)
{
	k->ready = 1;
	k->wait_event = wait_event;
	k->parked_ms = redis_mono_ms();
	redis_call_flush(k->r, 0);
}

/* why: CSQ_ETRYAGAIN when the call never reached Redis, CSQ_EUNSURE when
 * it may have run; an operation that only reads changed nothing either
 * way. */
void
redis_call_fail(struct redis_call *k, enum csq_status why)
{
	memset(&k->res, 0, sizeof(k->res));
	k->res.status = why == CSQ_EUNSURE && !csq_op_mutates(k->code)
	                    ? CSQ_ETRYAGAIN
	                    : why;
	redis_call_ready(k, 0);
}

/*
 * Answers, in the order the calls were made, those whose answer is known,
 * whose WAIT (redis.wait_replicas) is answered and whose events have come
 * in (all: or not; the subscription is gone or the engine stops; and never
 * more than PARK_TIMEOUT_MS late). A client
 * may have several calls in flight: its replies must keep its order.
 */
void
redis_call_flush(struct redis_engine *r, int all)
{
	struct redis_call *k;
	uint64_t now = redis_mono_ms();

	if (r->answering) /* a callback's own call: the loop below goes on */
		return;
	r->answering = 1;
	while ((k = TAILQ_FIRST(&r->order)) != NULL && k->ready) {
		/* A WAIT holds its calls whatever the subscription does; its
		 * answer, or the link's end, comes. */
		if (k->wait_seq != 0 && !r->freeing)
			break;
		if (!all && k->wait_event > r->seen_event &&
		    now - k->parked_ms < PARK_TIMEOUT_MS)
			break;
		TAILQ_REMOVE(&r->order, k, order);
		k->cb(k->arg, &k->res);
		call_free(k);
	}
	r->answering = 0;
}

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

struct redis_call *
redis_call_new(struct redis_engine *r, const char *name, enum csq_opcode code,
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
void
redis_call_send(struct redis_engine *r, struct redis_call *k)
{
	TAILQ_INSERT_TAIL(&r->order, k, order);
	if (r->grouping) {
		TAILQ_INSERT_TAIL(&r->grouped, k, entry);
		r->ngrouped++;
		return;
	}
	TAILQ_INSERT_TAIL(&r->pending, k, entry);
	redis_batch_schedule(r);
}

void
redis_call_group_begin(struct redis_engine *r)
{
	r->grouping = 1;
	r->ngrouped = 0;
}

/* The group's calls join pending as one: batch_send never splits it. */
void
redis_call_group_end(struct redis_engine *r)
{
	struct redis_call *first = TAILQ_FIRST(&r->grouped);

	r->grouping = 0;
	if (first == NULL)
		return;
	first->group_len = r->ngrouped;
	TAILQ_CONCAT(&r->pending, &r->grouped, entry);
	redis_batch_schedule(r);
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
	arg_int(k, a->has_offer);
	arg_int(k, a->offer_s);
	arg_int(k, a->has_wrapup);
	arg_int(k, a->wrapup_s);
	arg_int(k, a->has_queues ? (int64_t)a->nqueues : 0);
	for (i = 0; a->has_queues && i < a->nqueues; i++)
		arg_cstr(k, a->queues[i]);
}

/* PREFER's servicer and seconds, or two empty arguments without it
 * (enqueue.lua, transfer.lua). */
static void
args_prefer(struct redis_call *k, const struct csq_prefer_args *p)
{
	if (p->has_prefer) {
		arg_cstr(k, p->servicer);
		arg_int(k, p->seconds);
	} else {
		arg_cstr(k, "");
		arg_cstr(k, "");
	}
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
	args_prefer(k, &a->prefer);
}

/* op as one argument, its record (lib/record.h): csq.so's form. */
void
redis_call_record(struct redis_call *k, const struct csq_op *op)
{
	uint8_t rec[CSQ_RECORD_MAX];

	arg_str(k, (const char *)rec, csq_record_encode(op, 0, rec));
}

/* The script of an operation and its arguments; -1 for none. */
int
redis_call_build(struct redis_engine *r, const struct csq_op *op,
                 csq_engine_cb *cb, void *arg, struct redis_call **out)
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
	    [CSQ_OP_QUEUES] = "queues",       [CSQ_OP_ROOMS] = "rooms",
	    [CSQ_OP_ACCEPT] = "accept",       [CSQ_OP_DECLINE] = "decline",
	    [CSQ_OP_READY] = "ready",         [CSQ_OP_TRANSFER] = "transfer",
	    [CSQ_OP_QSTATS] = "qstats",       [CSQ_OP_POLICY] = "policy",
	};
	char entry[4 * CSQ_ID_MAX];
	char sid[CSQ_ID_MAX + 1];
	struct redis_call *k;
	uint32_t idx;

	if (op->code == CSQ_OP_LIMITS || op->code == CSQ_OP_REARM)
		return -1;
	k = redis_call_new(r, names[op->code], op->code, cb, arg);
	if (r->module) {
		/* The module takes the operation as its journal record; the
		 * time is the module's. */
		redis_call_record(k, op);
		*out = k;
		return 0;
	}
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
	case CSQ_OP_ACCEPT:
	case CSQ_OP_DECLINE:
	case CSQ_OP_READY:
		csq_parse_room(op->id, strlen(op->id), sid, &idx);
		arg_cstr(k, sid);
		arg_int(k, idx);
		break;
	case CSQ_OP_TRANSFER:
		csq_parse_room(op->transfer.room, strlen(op->transfer.room),
		               sid, &idx);
		arg_cstr(k, sid);
		arg_int(k, idx);
		arg_cstr(k, op->transfer.queue);
		args_prefer(k, &op->transfer.prefer);
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
	case CSQ_OP_POLICY: /* redis_policy.c: none has count 0 */
		arg_int(k, (int64_t)op->offset);
		arg_int(k, op->count);
		arg_cstr(k, op->policy.name);
		entry[0] = '\0';
		if (op->policy.name[0] != '\0')
			redis_policy_pack(&op->policy, entry, sizeof(entry));
		arg_cstr(k, entry);
		arg_cstr(k, r->writer);
		break;
	case CSQ_OP_SERVICERS:
	case CSQ_OP_STATS:
		break;
	case CSQ_OP_QUEUES: /* "": every queue that exists */
	case CSQ_OP_ROOMS:  /* "": every servicer's */
		arg_cstr(k, op->id);
		break;
	case CSQ_OP_QSTATS: /* no id (the scrape): every queue that exists */
		arg_cstr(k, op->id != NULL ? op->id : "");
		break;
	default: /* LOGOUT, LEAVE, WHERE, QLEN */
		arg_cstr(k, op->id);
		break;
	}
	*out = k;
	return 0;
}
