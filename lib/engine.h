/*
 * The engine interface: where the state lives. csqd turns each command into a
 * struct csq_op, hands it to the engine, and writes the reply when the engine
 * calls back with a struct csq_result. The memory engine calls back before
 * csq_engine_call() returns; the Redis engine calls back later, from the event
 * loop. Either way the callback runs exactly once per call, and calls are
 * answered in the order they were made (so a client may have several in
 * flight and its replies keep its order).
 */
#ifndef CSQ_ENGINE_H
#define CSQ_ENGINE_H

#include "csq.h"
#include "op.h"

/*
 * The operations, numbered as their journal records are (lib/op.h: the
 * table of operations, one row each, declares them all).
 */
enum csq_opcode {
#define CSQ_OP_ENUM(code, name, number, ...) CSQ_OP_##code = number,
	CSQ_OPS(CSQ_OP_ENUM)
#undef CSQ_OP_ENUM
};

/* How many operations there are: their numbers are 0 to CSQ_OP_COUNT - 1
 * (lib/op.c checks that they are). */
enum {
#define CSQ_OP_ONE(...) +1
	CSQ_OP_COUNT = 0 CSQ_OPS(CSQ_OP_ONE)
#undef CSQ_OP_ONE
};

/* The row of code, NULL for a number that is no operation. */
const struct csq_op_def *csq_op_def(enum csq_opcode);
/* The command of that name (len bytes, any case), -1 for none. */
int csq_op_lookup(const char *name, size_t len);

/*
 * A room id as csq_op_check parsed it: of is the id parsed (the op's id),
 * its servicer's id of's first sidlen bytes, its index index. of NULL (or
 * not the op's id): not parsed, and the engine parses the id itself.
 */
struct csq_op_room {
	const char *of;
	uint32_t sidlen;
	uint32_t index;
};

/* One request; strings are borrowed for the duration of the call only. */
struct csq_op {
	enum csq_opcode code;
	const char *id; /* servicer, user, room or queue, by code */
	struct csq_heartbeat_args heartbeat;
	struct csq_enqueue_args enqueue;
	struct csq_transfer_args transfer;
	int64_t ttl_s;            /* TOUCH: < 0 keeps the TTL */
	uint64_t offset;          /* QUEUE; POLICY: its index */
	uint32_t count;           /* QUEUE; POLICY: how many make the set;
	                             QUEUES, QSTATS of every queue: a slice
	                             of at most this many (0: all) */
	const char *after;        /* QUEUES, QSTATS of every queue: the slice's
	                             queues sort after this name (NULL: the first) */
	struct csq_op_room room;  /* RELEASE, ACCEPT, DECLINE, READY: id,
	                             parsed by csq_op_check (RELEASE reads it) */
	struct csq_limits limits; /* LIMITS */
	struct csq_policy policy; /* POLICY */
};

/* One answer; arrays are owned by the engine, valid during the callback. */
struct csq_result {
	enum csq_status status;
	int64_t n; /* LOGOUT, RELEASE, TOUCH, LEAVE, QLEN, ACCEPT, DECLINE,
	              READY */
	struct csq_servicer_info servicer;
	struct csq_user_info user; /* ENQUEUE, WHERE, TRANSFER */
	struct csq_stats stats;
	const struct csq_queue_entry *entries;     /* QUEUE */
	const struct csq_servicer_info *servicers; /* SERVICERS */
	const struct csq_queue_info *queues;       /* QUEUES */
	const struct csq_room_info *rooms;         /* ROOMS */
	const struct csq_queue_stats *qstats;      /* QSTATS */
	size_t nentries;
	/* QUEUES, QSTATS by slices: the name the next slice goes on after;
	 * NULL when none is left (or the engine answered all at once). */
	const char *next;
	/* The id of the last event of the state the call saw (its own
	 * events included): a reader that follows the events from there
	 * misses none and counts none twice. */
	uint64_t event_id;
};

typedef void csq_engine_cb(void *arg, const struct csq_result *);

struct csq_engine;

struct csq_engine_ops {
	const char *name;
	void (*call)(struct csq_engine *, const struct csq_op *,
	             csq_engine_cb *, void *);
	/* Earliest deadline (ms of the engine's clock), UINT64_MAX if none. */
	uint64_t (*next_deadline)(struct csq_engine *);
	/* Acts on the deadlines that have passed. */
	void (*expire)(struct csq_engine *);
	void (*set_limits)(struct csq_engine *, const struct csq_limits *);
	/* The queue policies (protocol-v2 section 4), all at once: CSQ_OK
	 * when they are in force. NULL: the engine has none yet. */
	enum csq_status (*set_policies)(struct csq_engine *,
	                                const struct csq_policy *, size_t n);
	/* 1 when the engine can answer (healthz), 0 when it cannot. */
	int (*up)(struct csq_engine *);
	/* The last round trip to the store behind the engine, in
	 * microseconds; -1 while it is down. NULL: no store to reach. */
	int64_t (*rtt_us)(struct csq_engine *);
	/* The id of the last event that has come out through emit, or that
	 * never will (the Redis engine's events published before it
	 * subscribed): a follower of the events that has seen fewer has
	 * missed some. */
	uint64_t (*last_event_id)(struct csq_engine *);
	/*
	 * The calls made between group_begin and group_end run as one
	 * (MULTI/EXEC): no other call comes between them, on any daemon
	 * that shares the store, and they reach the store all together or
	 * not at all (then each is answered TRYAGAIN, or "may have been
	 * applied" for all when the link went meanwhile). NULL: nothing to
	 * do, as for the memory engine, which runs each call as it is made,
	 * so that nothing can come between calls made in one go.
	 */
	void (*group_begin)(struct csq_engine *);
	void (*group_end)(struct csq_engine *);
	void (*free)(struct csq_engine *);
};

struct csq_engine {
	const struct csq_engine_ops *ops;
};

typedef uint64_t csq_clock_fn(void *arg); /* milliseconds */

/*
 * The memory engine: the whole state in this process. seed is csq_new's;
 * clock gives the time; events come out through emit.
 */
struct csq_engine *csq_engine_memory_new(const struct csq_limits *,
                                         uint64_t seed, csq_clock_fn *clock,
                                         void *clock_arg, csq_emit_fn *emit,
                                         void *emit_arg);
/* The state machine behind a memory engine (for tests and checks). */
struct csq *csq_engine_memory_state(struct csq_engine *);
/* A hint before an operation on the user id (len bytes) is called:
 * starts fetching what its lookup of the user will read (the user table's
 * bucket), so that the call, made a little later, does not wait for it.
 * Changes nothing. */
void csq_engine_memory_prefetch_user(struct csq_engine *, const char *id,
                                     size_t len);

/*
 * The journal hook: called with every operation that may change the state,
 * and the time it runs at, before it runs. A nonzero return refuses the
 * operation (-TRYAGAIN, nothing changed). Replaying the same operations at
 * the same times into a new engine rebuilds the same state: libcsq is
 * deterministic.
 */
typedef int csq_journal_fn(void *arg, const struct csq_op *, uint64_t now_ms);
void csq_engine_memory_set_journal(struct csq_engine *, csq_journal_fn *,
                                   void *arg);
/* Applies a journaled operation: no journal, no events, no reply. */
void csq_engine_memory_replay(struct csq_engine *, const struct csq_op *,
                              uint64_t now_ms);
/* After a restart: every TTL runs again from now (journaled). */
void csq_engine_memory_rearm(struct csq_engine *);
/* Compaction: the state as snapshot items, and their restoration into a
 * new engine (lib/snapshot.h). restore returns -1 when an item does not
 * fit. */
struct csq_snap_item;
void csq_engine_memory_snapshot(struct csq_engine *,
                                void (*fn)(void *,
                                           const struct csq_snap_item *),
                                void *arg);
int csq_engine_memory_restore(struct csq_engine *,
                              const struct csq_snap_item *);
/* After the last item (csq_restore_end): -1 when the state is not one. */
int csq_engine_memory_restore_end(struct csq_engine *);
/*
 * The checks of op's input alone, in the order libcsq makes them: CSQ_OK,
 * or the error the memory engine would answer before looking at its state.
 */
enum csq_status csq_op_validate(const struct csq_op *,
                                const struct csq_limits *);
/*
 * csq_op_validate, keeping what it parsed for the engine: the room of an
 * op on a room (op->room), so that the memory engine's RELEASE does not
 * parse it a second time. op->room is set (of NULL when there is none)
 * whatever the answer.
 */
enum csq_status csq_op_check(struct csq_op *, const struct csq_limits *);
/* 1 when op may change the state (and so goes to the journal). */
int csq_op_mutates(enum csq_opcode);

/* CSQ_ERANGE for an engine without queue policies. */
static inline enum csq_status
csq_engine_set_policies(struct csq_engine *e, const struct csq_policy *v,
                        size_t n)
{
	return e->ops->set_policies != NULL ? e->ops->set_policies(e, v, n)
	                                    : CSQ_ERANGE;
}

/* The engine's rtt_us, -1 for an engine without one. */
static inline int64_t
csq_engine_rtt_us(struct csq_engine *e)
{
	return e->ops->rtt_us != NULL ? e->ops->rtt_us(e) : -1;
}

static inline uint64_t
csq_engine_last_event_id(struct csq_engine *e)
{
	return e->ops->last_event_id(e);
}

static inline void
csq_engine_group_begin(struct csq_engine *e)
{
	if (e->ops->group_begin != NULL)
		e->ops->group_begin(e);
}

static inline void
csq_engine_group_end(struct csq_engine *e)
{
	if (e->ops->group_end != NULL)
		e->ops->group_end(e);
}

static inline void
csq_engine_call(struct csq_engine *e, const struct csq_op *op,
                csq_engine_cb *cb, void *arg)
{
	e->ops->call(e, op, cb, arg);
}

#endif
