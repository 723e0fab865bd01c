/*
 * The Redis engine's operations: each struct csq_op becomes its record
 * (lib/record.h), which csq.so takes as it is, kept until its batch is
 * answered, and its answer leaves in the order the calls were made.
 *
 * A command's reply is held until this daemon has seen every event its
 * call published (each event carries an id from one counter in Redis), so
 * that a client hears of an event before the reply that caused it, as with
 * the memory engine (redis_subscription.c).
 */
#include "redis_engine.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "util.h"

#define PARK_TIMEOUT_MS 2000 /* longest a reply waits for its events */
/* A call whose record fits in CALL_REC_SPARE bytes is allocated with that
 * room, and kept when it is answered, up to CALL_SPARE_MAX of them (300
 * KB), for the next one. */
#define CALL_REC_SPARE 256
#define CALL_SPARE_MAX 64

static void
call_free(struct redis_call *k)
{
	struct redis_engine *r = k->r;

	free(k->owned);
	if (k->reccap == CALL_REC_SPARE && r->nspare < CALL_SPARE_MAX &&
	    !r->freeing) {
		TAILQ_INSERT_HEAD(&r->spare, k, entry);
		r->nspare++;
		return;
	}
	free(k);
}

void
redis_call_spare_free(struct redis_engine *r)
{
	struct redis_call *k;

	while ((k = TAILQ_FIRST(&r->spare)) != NULL) {
		TAILQ_REMOVE(&r->spare, k, entry);
		free(k);
	}
	r->nspare = 0;
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

/*
 * A call with room for a record of reclen bytes, its fields before res
 * zeroed. It was 8 KiB with a record's whole buffer, all of it zeroed for
 * every operation: 0.1 to 0.3 us each, and a fifth of csqd's instructions
 * in a Redis-engine match as valgrind counts them (docs/benchmarks.md,
 * "What csq adds above the hop"). res is written before it is read.
 * A small record's call comes from the spare ones when there is one: the
 * 4.4 KB request went to malloc's large bins, which sort and consolidate
 * its free chunks, and made every other malloc of csqd's slower
 * (docs/benchmarks.md, "csqd's CPU a match on the Redis engine").
 */
static struct redis_call *
call_alloc(struct redis_engine *r, enum csq_opcode code, csq_engine_cb *cb,
           void *arg, size_t reclen)
{
	size_t cap = reclen <= CALL_REC_SPARE ? CALL_REC_SPARE : reclen;
	struct redis_call *k = TAILQ_FIRST(&r->spare);

	if (cap == CALL_REC_SPARE && k != NULL) {
		TAILQ_REMOVE(&r->spare, k, entry);
		r->nspare--;
	} else {
		k = csq_xmalloc(offsetof(struct redis_call, rec) + cap);
	}
	memset(k, 0, offsetof(struct redis_call, res));
	k->reccap = cap;
	k->r = r;
	k->code = code;
	k->cb = cb;
	k->arg = arg;
	return k;
}

struct redis_call *
redis_call_new(struct redis_engine *r, enum csq_opcode code, csq_engine_cb *cb,
               void *arg)
{
	return call_alloc(r, code, cb, arg, 0);
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

/* op as its record, which the module reads (its time: the module's);
 * -1 for the operations that are not the module's to run. */
int
redis_call_build(struct redis_engine *r, const struct csq_op *op,
                 csq_engine_cb *cb, void *arg, struct redis_call **out)
{
	uint8_t rec[CSQ_RECORD_MAX];
	struct redis_call *k;
	size_t len;

	if (op->code == CSQ_OP_LIMITS || op->code == CSQ_OP_REARM)
		return -1;
	len = csq_record_encode(op, 0, rec);
	k = call_alloc(r, op->code, cb, arg, len);
	memcpy(k->rec, rec, len);
	k->reclen = len;
	/* A view of every one by slices (QUEUES, QSTATS, SERVICERS, ROOMS
	 * without an id, a count): about a thousand rows' work. */
	k->slice = op->id == NULL && op->count > 0 && !csq_op_mutates(op->code);
	*out = k;
	return 0;
}
