/*
 * The memory engine: the whole state in this process, in one struct csq.
 * It answers every call at once, before csq_engine_call() returns.
 */
#include "dict.h"
#include "engine.h"
#include "result.h"
#include "snapshot.h"
#include "state.h"
#include "util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct engine_memory {
	struct csq_engine base;
	struct csq *csq;
	csq_clock_fn *clock;
	void *clock_arg;
	csq_emit_fn *emit;
	void *emit_arg;
	csq_journal_fn *journal;
	void *journal_arg;
	int replaying; /* events of a replay are history: not published */
	struct csq_queue_entry entries[CSQ_RANGE_COUNT_MAX];
	char next[CSQ_ID_MAX + 1]; /* a slice's cursor (csq_result's next) */
	/* The policies of a POLICY sequence so far (memory_policy). */
	struct csq_policy *staged;
	size_t nstaged;
};

static struct engine_memory *
engine_memory(struct csq_engine *e)
{
	return (struct engine_memory *)e;
}

static void
memory_emit(void *arg, const struct csq_event *ev)
{
	struct engine_memory *m = arg;

	if (!m->replaying && m->emit != NULL)
		m->emit(m->emit_arg, ev);
}

/*
 * One POLICY of a set: a record holds one policy (a set of them would not
 * fit in CSQ_RECORD_MAX), so a set is count POLICY operations, offset 0
 * to count - 1, staged here, and the last applies them all: replayed, the
 * same records stage and apply the same. A set whose records do not come
 * in order (one refused by the journal) is dropped, and applies nothing.
 */
static enum csq_status
memory_policy(struct engine_memory *m, const struct csq_op *op, uint64_t now)
{
	enum csq_status st;

	if (op->count == 0)
		return csq_set_policies(m->csq, now, NULL, 0);
	if (op->offset == 0 && m->staged == NULL)
		m->staged = csq_xmalloc(CSQ_POLICIES_MAX * sizeof(*m->staged));
	if (op->offset == 0)
		m->nstaged = 0;
	if (m->staged == NULL || op->offset != m->nstaged ||
	    op->count > CSQ_POLICIES_MAX) {
		m->nstaged = 0;
		return CSQ_ERANGE;
	}
	m->staged[m->nstaged++] = op->policy;
	if (m->nstaged < op->count)
		return CSQ_OK;
	st = csq_set_policies(m->csq, now, m->staged, m->nstaged);
	free(m->staged);
	m->staged = NULL;
	m->nstaged = 0;
	return st;
}

/* A slice's cursor, kept past the state's next change. */
static const char *
memory_next(struct engine_memory *m, const char *next)
{
	size_t len;

	if (next == NULL)
		return NULL;
	len = strnlen(next, CSQ_ID_MAX);

	memcpy(m->next, next, len);
	m->next[len] = '\0';
	return m->next;
}

/*
 * The apply column of the table of operations (op.h): apply_<name> runs
 * op at now into r. *owned is an array of the result (SERVICERS, QUEUES,
 * ROOMS, QSTATS) that the caller frees.
 */
typedef void apply_fn(struct engine_memory *, const struct csq_op *,
                      uint64_t now, struct csq_result *, void **owned);

static void
apply_heartbeat(struct engine_memory *m, const struct csq_op *op, uint64_t now,
                struct csq_result *r, void **owned)
{
	(void)owned;
	r->status = csq_heartbeat(m->csq, now, &op->heartbeat, &r->servicer);
}

static void
apply_pause(struct engine_memory *m, const struct csq_op *op, uint64_t now,
            struct csq_result *r, void **owned)
{
	(void)owned;
	r->status = csq_pause(m->csq, now, op->id);
}

static void
apply_resume(struct engine_memory *m, const struct csq_op *op, uint64_t now,
             struct csq_result *r, void **owned)
{
	(void)owned;
	r->status = csq_resume(m->csq, now, op->id);
}

static void
apply_logout(struct engine_memory *m, const struct csq_op *op, uint64_t now,
             struct csq_result *r, void **owned)
{
	uint64_t n = 0;

	(void)owned;
	r->status = csq_logout(m->csq, now, op->id, &n);
	r->n = (int64_t)n;
}

/* The operations on one id that answer whether they knew it. */
typedef enum csq_status known_fn(struct csq *, uint64_t now, const char *id,
                                 int *known);

static void
apply_known(known_fn *fn, struct engine_memory *m, const struct csq_op *op,
            uint64_t now, struct csq_result *r)
{
	int known = 0;

	r->status = fn(m->csq, now, op->id, &known);
	r->n = known;
}

/* The room as csq_op_check parsed it, when it did (csq.so's calls):
 * parsed once. */
static void
apply_release(struct engine_memory *m, const struct csq_op *op, uint64_t now,
              struct csq_result *r, void **owned)
{
	int known = 0;

	(void)owned;
	if (op->room.of == NULL || op->room.of != op->id) {
		apply_known(csq_release, m, op, now, r);
		return;
	}
	r->status = csq_release_at(m->csq, now, op->id, op->room.sidlen,
	                           op->room.index, &known);
	r->n = known;
}

static void
apply_leave(struct engine_memory *m, const struct csq_op *op, uint64_t now,
            struct csq_result *r, void **owned)
{
	(void)owned;
	apply_known(csq_leave, m, op, now, r);
}

static void
apply_accept(struct engine_memory *m, const struct csq_op *op, uint64_t now,
             struct csq_result *r, void **owned)
{
	(void)owned;
	apply_known(csq_accept, m, op, now, r);
}

static void
apply_decline(struct engine_memory *m, const struct csq_op *op, uint64_t now,
              struct csq_result *r, void **owned)
{
	(void)owned;
	apply_known(csq_decline, m, op, now, r);
}

static void
apply_ready(struct engine_memory *m, const struct csq_op *op, uint64_t now,
            struct csq_result *r, void **owned)
{
	(void)owned;
	apply_known(csq_ready, m, op, now, r);
}

static void
apply_enqueue(struct engine_memory *m, const struct csq_op *op, uint64_t now,
              struct csq_result *r, void **owned)
{
	(void)owned;
	r->status = csq_enqueue(m->csq, now, &op->enqueue, &r->user);
	if (r->status == CSQ_ECLOSED) /* when it opens */
		r->n = (int64_t)r->user.opens_ms;
}

static void
apply_touch(struct engine_memory *m, const struct csq_op *op, uint64_t now,
            struct csq_result *r, void **owned)
{
	int known = 0;

	(void)owned;
	r->status = csq_touch(m->csq, now, op->id, op->ttl_s, &known);
	r->n = known;
}

static void
apply_where(struct engine_memory *m, const struct csq_op *op, uint64_t now,
            struct csq_result *r, void **owned)
{
	(void)owned;
	r->status = csq_where(m->csq, now, op->id, &r->user);
}

static void
apply_transfer(struct engine_memory *m, const struct csq_op *op, uint64_t now,
               struct csq_result *r, void **owned)
{
	(void)owned;
	r->status = csq_transfer(m->csq, now, &op->transfer, &r->user);
	if (r->status == CSQ_ECLOSED)
		r->n = (int64_t)r->user.opens_ms;
}

static void
apply_queue(struct engine_memory *m, const struct csq_op *op, uint64_t now,
            struct csq_result *r, void **owned)
{
	(void)owned;
	r->status = csq_queue_range(m->csq, now, op->id, op->offset, op->count,
	                            m->entries, &r->nentries);
	r->entries = m->entries;
}

static void
apply_qlen(struct engine_memory *m, const struct csq_op *op, uint64_t now,
           struct csq_result *r, void **owned)
{
	uint64_t n = 0;

	(void)now, (void)owned;
	r->status = csq_qlen(m->csq, op->id, &n);
	r->n = (int64_t)n;
}

static void
apply_servicers(struct engine_memory *m, const struct csq_op *op, uint64_t now,
                struct csq_result *r, void **owned)
{
	struct csq_servicer_info *v;
	const char *next;

	*owned = v = csq_servicers_slice(m->csq, now, op->after, op->count,
	                                 &r->nentries, &next);
	r->next = memory_next(m, next);
	r->servicers = v;
	r->status = CSQ_OK;
}

/* QUEUES of one queue, or of every queue that exists (by slices). */
static void
apply_queues(struct engine_memory *m, const struct csq_op *op, uint64_t now,
             struct csq_result *r, void **owned)
{
	struct csq_queue_info *v;
	const char *next;

	if (op->id != NULL) {
		*owned = v = csq_xmalloc(sizeof(*v));
		r->status = csq_queue_info(m->csq, now, op->id, v);
		r->nentries = r->status == CSQ_OK;
	} else {
		*owned = v = csq_queues_slice(m->csq, now, op->after, op->count,
		                              &r->nentries, &next);
		r->next = memory_next(m, next);
		r->status = CSQ_OK;
	}
	r->queues = v;
}

static void
apply_rooms(struct engine_memory *m, const struct csq_op *op, uint64_t now,
            struct csq_result *r, void **owned)
{
	struct csq_room_info *v;
	const char *next;

	if (op->id == NULL) { /* every servicer's, by slices */
		csq_rooms_slice(m->csq, now, op->after, op->count, &v,
		                &r->nentries, &next);
		r->next = memory_next(m, next);
		r->status = CSQ_OK;
	} else
		r->status = csq_rooms(m->csq, now, op->id, &v, &r->nentries);
	*owned = v;
	r->rooms = v;
}

static void
apply_stats(struct engine_memory *m, const struct csq_op *op, uint64_t now,
            struct csq_result *r, void **owned)
{
	(void)op, (void)now, (void)owned;
	csq_stats(m->csq, &r->stats);
	r->status = CSQ_OK;
}

/* QSTATS of one queue, or of every queue that exists (by slices). */
static void
apply_qstats(struct engine_memory *m, const struct csq_op *op, uint64_t now,
             struct csq_result *r, void **owned)
{
	struct csq_queue_stats *v;
	const char *next;

	if (op->id == NULL) {
		*owned = v = csq_queues_stats_slice(
		    m->csq, now, op->after, op->count, &r->nentries, &next);
		r->next = memory_next(m, next);
		r->status = CSQ_OK;
	} else {
		*owned = v = csq_xmalloc(sizeof(*v));
		r->status = csq_queue_stats(m->csq, now, op->id, v);
		r->nentries = r->status == CSQ_OK;
	}
	r->qstats = v;
}

static void
apply_expire(struct engine_memory *m, const struct csq_op *op, uint64_t now,
             struct csq_result *r, void **owned)
{
	(void)op, (void)owned;
	csq_expire(m->csq, now);
	r->status = CSQ_OK;
}

static void
apply_limits(struct engine_memory *m, const struct csq_op *op, uint64_t now,
             struct csq_result *r, void **owned)
{
	(void)now, (void)owned;
	csq_set_limits(m->csq, &op->limits);
	r->status = CSQ_OK;
}

static void
apply_rearm(struct engine_memory *m, const struct csq_op *op, uint64_t now,
            struct csq_result *r, void **owned)
{
	(void)op, (void)owned;
	csq_rearm_deadlines(m->csq, now);
	r->status = CSQ_OK;
}

static void
apply_policy(struct engine_memory *m, const struct csq_op *op, uint64_t now,
             struct csq_result *r, void **owned)
{
	(void)owned;
	r->status = memory_policy(m, op, now);
}

#define APPLY_ROW(code, name, ...) [CSQ_OP_##code] = apply_##name,

static apply_fn *const applies[CSQ_OP_COUNT] = {CSQ_OPS(APPLY_ROW)};

/*
 * Runs op at now. The one dispatcher for calls and replays, so that a
 * replay does exactly what the call did.
 */
static void
memory_apply(struct engine_memory *m, const struct csq_op *op, uint64_t now,
             struct csq_result *r, void **owned)
{
	csq_result_clear(r, op->code);
	if ((unsigned)op->code < CSQ_OP_COUNT)
		applies[op->code](m, op, now, r, owned);
	else
		r->status = CSQ_ERANGE;
	r->event_id = csq_last_event_id(m->csq);
}

/* Journals op, then runs it; a journal that cannot write refuses it. */
static int
memory_run(struct engine_memory *m, const struct csq_op *op, uint64_t now,
           struct csq_result *r, void **owned)
{
	if (m->journal != NULL && csq_op_mutates(op->code) &&
	    m->journal(m->journal_arg, op, now) != 0) {
		memset(r, 0, sizeof(*r));
		r->status = CSQ_ETRYAGAIN;
		r->event_id = csq_last_event_id(m->csq);
		return -1;
	}
	memory_apply(m, op, now, r, owned);
	return 0;
}

static void
memory_call(struct csq_engine *e, const struct csq_op *op, csq_engine_cb *cb,
            void *arg)
{
	struct engine_memory *m = engine_memory(e);
	struct csq_result r;
	void *owned = NULL;

	memory_run(m, op, m->clock(m->clock_arg), &r, &owned);
	cb(arg, &r);
	free(owned);
}

/* A state-changing operation that is not a client's command. */
static enum csq_status
memory_internal_op(struct engine_memory *m, const struct csq_op *op)
{
	struct csq_result r;
	void *owned = NULL;

	memory_run(m, op, m->clock(m->clock_arg), &r, &owned);
	free(owned);
	return r.status;
}

static void
memory_internal(struct engine_memory *m, enum csq_opcode code,
                const struct csq_limits *limits)
{
	struct csq_op op;

	memset(&op, 0, sizeof(op));
	op.code = code;
	if (limits != NULL)
		op.limits = *limits;
	memory_internal_op(m, &op);
}

static uint64_t
memory_next_deadline(struct csq_engine *e)
{
	return csq_next_deadline(engine_memory(e)->csq);
}

static void
memory_expire(struct csq_engine *e)
{
	struct engine_memory *m = engine_memory(e);

	/* Journaled only when something is due: an idle timer writes
	 * nothing. */
	if (csq_next_deadline(m->csq) <= m->clock(m->clock_arg))
		memory_internal(m, CSQ_OP_EXPIRE, NULL);
}

static void
memory_set_limits(struct csq_engine *e, const struct csq_limits *limits)
{
	memory_internal(engine_memory(e), CSQ_OP_LIMITS, limits);
}

static uint64_t
memory_last_event_id(struct csq_engine *e)
{
	return csq_last_event_id(engine_memory(e)->csq);
}

/* The set as POLICY operations, each journaled: CSQ_OK once applied. */
static enum csq_status
memory_set_policies(struct csq_engine *e, const struct csq_policy *v, size_t n)
{
	struct engine_memory *m = engine_memory(e);
	enum csq_status st = CSQ_OK;
	struct csq_op op;
	size_t i = 0;

	if (n > CSQ_POLICIES_MAX)
		return CSQ_ERANGE;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	op.count = (uint32_t)n;
	do {
		op.offset = i;
		if (n > 0)
			op.policy = v[i];
		st = memory_internal_op(m, &op);
	} while (st == CSQ_OK && ++i < n);
	return st;
}

static int
memory_up(struct csq_engine *e)
{
	(void)e;
	return 1;
}

static void
memory_free(struct csq_engine *e)
{
	struct engine_memory *m = engine_memory(e);

	csq_free(m->csq);
	free(m->staged);
	free(m);
}

static const struct csq_engine_ops memory_ops = {
    .name = "memory",
    .call = memory_call,
    .next_deadline = memory_next_deadline,
    .expire = memory_expire,
    .set_limits = memory_set_limits,
    .set_policies = memory_set_policies,
    .up = memory_up,
    .last_event_id = memory_last_event_id,
    .free = memory_free,
};

struct csq_engine *
csq_engine_memory_new(const struct csq_limits *limits, uint64_t seed,
                      csq_clock_fn *clock, void *clock_arg, csq_emit_fn *emit,
                      void *emit_arg)
{
	struct engine_memory *m = csq_xcalloc(1, sizeof(*m));

	m->base.ops = &memory_ops;
	m->emit = emit;
	m->emit_arg = emit_arg;
	m->csq = csq_new(limits, seed, memory_emit, m);
	m->clock = clock;
	m->clock_arg = clock_arg;
	return &m->base;
}

struct csq *
csq_engine_memory_state(struct csq_engine *e)
{
	return engine_memory(e)->csq;
}

void
csq_engine_memory_prefetch_user(struct csq_engine *e, const char *id,
                                size_t len)
{
	csq_dict_prefetch(engine_memory(e)->csq->users, id, len);
}

void
csq_engine_memory_set_journal(struct csq_engine *e, csq_journal_fn *fn,
                              void *arg)
{
	struct engine_memory *m = engine_memory(e);

	m->journal = fn;
	m->journal_arg = arg;
}

void
csq_engine_memory_replay(struct csq_engine *e, const struct csq_op *op,
                         uint64_t now)
{
	struct engine_memory *m = engine_memory(e);
	struct csq_result r;
	void *owned = NULL;

	m->replaying = 1;
	memory_apply(m, op, now, &r, &owned);
	m->replaying = 0;
	free(owned);
}

void
csq_engine_memory_rearm(struct csq_engine *e)
{
	memory_internal(engine_memory(e), CSQ_OP_REARM, NULL);
}

void
csq_engine_memory_snapshot(struct csq_engine *e,
                           void (*fn)(void *, const struct csq_snap_item *),
                           void *arg)
{
	csq_snapshot(engine_memory(e)->csq, fn, arg);
}

int
csq_engine_memory_restore(struct csq_engine *e, const struct csq_snap_item *it)
{
	return csq_restore(engine_memory(e)->csq, it);
}

int
csq_engine_memory_restore_end(struct csq_engine *e)
{
	return csq_restore_end(engine_memory(e)->csq);
}
