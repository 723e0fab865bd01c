/*
 * csq.so: libcsq inside Redis (module_state.h). Its commands:
 *
 *   CSQ.CALL <key> <limits> <time> <op>...   csqd's calls (docs/protocol.md)
 *   CSQ.READ <key> <limits> <time> <op>...   the same, reads only: they are
 *                                            answered over maxmemory
 *   CSQ.VERSION                              the handshake
 *   CSQ.DIGEST <key>                         the state's checksum
 *   CSQ.DUMP <key>                           the state's records
 *   CSQ.APPLY <key> <seed> <records>         replication and AOF only
 *   CSQ.LOAD <key> <seed> <dump>             AOF rewrite only
 *   CSQ.IMPORT <key> [DRYRUN] [REPLACE] [DELETE]  the Lua engine's state
 *                                            (module_import.c)
 *   CSQ.ENQUEUE, CSQ.LEAVE, CSQ.WHERE, CSQ.QLEN, CSQ.RELEASE <key> ...
 *                                            csqd's commands, as text
 *                                            (module_text.c)
 *
 * An operation travels as a journal record (lib/record.h); a change is
 * applied by libcsq at the master's time and replicated as its record with
 * that time (CSQ.APPLY), so a replica or an AOF reaches the same state byte
 * for byte and never reads its own clock. The events of a call are
 * published once, by the master, on "<prefix>:events" as the Lua engine
 * published them (a MessagePack message of facts, lib/event_fact.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "event_fact.h"
#include "msgpack.h"
#include "record.h"
#include "result.h"
#include "snapshot.h"
#include "util.h"

#include "module_state.h"

struct module_state_list module_states = LIST_HEAD_INITIALIZER(module_states);
/* Each state made is numbered: the order of states with one deadline. */
static uint64_t serial;
int module_debug_clock;

/* The reply's header before the operations' results (csqd's
 * redis_reply_header): deadline, time, last event id, exact, message. */
#define CALL_HEADER  5
#define CALL_OPS_MAX 4096 /* operations in one CSQ.CALL */
/* The room kept before a run's events for the message's head (the last
 * event id, the time and the array's length, MessagePack, 9 + 9 + 5
 * bytes at most): the head is written there, the events are not moved. */
#define MSG_HEAD 23

static uint64_t
state_clock(void *arg)
{
	return ((struct module_state *)arg)->now;
}

/* An event of the state: a fact appended to the call's message. */
static void
state_emit(void *arg, const struct csq_event *ev)
{
	struct module_state *st = arg;
	struct csq_fact_value v[CSQ_FACT_FIELDS_MAX];
	size_t n = csq_event_to_fact(ev, v);
	const char *kind = csq_event_name(ev->type);

	if (st->nevents == 0) { /* the run's first: after the head's room */
		st->events.len = 0;
		csq_wbuf_reserve(&st->events, MSG_HEAD);
		st->events.len = MSG_HEAD;
	}
	msgpack_put_fact(&st->events, kind, csq_event_name_len(ev->type), v, n);
	st->nevents++;
}

/* A change about to be applied: replicated (and so in the AOF) as its
 * record, with the time it runs at, at the end of the run with the run's
 * other changes (module_state_end): one CSQ.APPLY a call, not one a
 * change, for RM_Replicate's own cost (a command lookup and an argv) was
 * a fifth of a call's instructions when each change had its own. */
static int
state_journal(void *arg, const struct csq_op *op, uint64_t now)
{
	struct module_state *st = arg;

	if (st->ctx != NULL && st->key != NULL) {
		csq_wbuf_reserve(&st->repl, CSQ_RECORD_MAX);
		st->repl.len +=
		    csq_record_encode(op, now, st->repl.p + st->repl.len);
	}
	return 0;
}

struct module_state *
module_state_new(uint64_t seed)
{
	struct module_state *st = RM_Calloc(1, sizeof(*st));
	struct csq_limits limits;

	st->seed = seed;
	csq_limits_default(&limits);
	module_alloc_charge(st);
	st->engine = csq_engine_memory_new(&limits, seed, state_clock, st,
	                                   state_emit, st);
	csq_engine_memory_set_journal(st->engine, state_journal, st);
	module_alloc_charge(NULL);
	st->db = -1;
	csq_heap_node_init(&st->due);
	st->serial = ++serial;
	LIST_INSERT_HEAD(&module_states, st, link);
	return st;
}

void
module_state_free(struct module_state *st)
{
	module_timer_forget(st);
	LIST_REMOVE(st, link);
	module_alloc_charge(st);
	st->engine->ops->free(st->engine);
	csq_wbuf_free(&st->events);
	csq_wbuf_free(&st->repl);
	module_alloc_charge(NULL);
	module_alloc_drop(st);
	if (st->key != NULL)
		RM_FreeString(NULL, st->key);
	if (st->channel != NULL)
		RM_FreeString(NULL, st->channel);
	if (st->seed_arg != NULL)
		RM_FreeString(NULL, st->seed_arg);
	RM_Free(st);
}

void
module_state_name(struct module_state *st, RedisModuleCtx *ctx,
                  RedisModuleString *key, int db)
{
	size_t a, b;
	const char *s = RM_StringPtrLen(key, &a);

	(void)ctx;
	if (st->key != NULL) {
		const char *t = RM_StringPtrLen(st->key, &b);

		if (a == b && memcmp(s, t, a) == 0 && st->db == db)
			return;
		RM_FreeString(NULL, st->key);
	}
	if (st->channel != NULL) {
		RM_FreeString(NULL, st->channel);
		st->channel = NULL;
	}
	st->key = RM_CreateString(NULL, s, a);
	st->db = db;
	module_timer_note(st);
}

void
module_state_begin(struct module_state *st, RedisModuleCtx *ctx, uint64_t now)
{
	st->ctx = ctx;
	st->now = now;
	st->events.len = 0; /* the head's room is kept at the first event */
	st->nevents = 0;
	st->repl.len = 0;
	module_alloc_charge(st);
}

/* "<prefix>:events" for a key "{<prefix>}:...", or "<key>:events":
 * made when the state first publishes under its key, then kept. */
static RedisModuleString *
state_channel(struct module_state *st)
{
	char buf[512];
	size_t len;
	const char *k, *end;
	int n;

	if (st->channel != NULL)
		return st->channel;
	k = RM_StringPtrLen(st->key, &len);
	end = len > 0 && k[0] == '{' ? memchr(k, '}', len) : NULL;
	n = snprintf(buf, sizeof(buf), "%.*s:events",
	             (int)(end != NULL ? (size_t)(end - k + 1)
	                               : (len < 400 ? len : 400)),
	             k);
	st->channel = RM_CreateString(NULL, buf, (size_t)n);
	return st->channel;
}

size_t
module_state_end(struct module_state *st, const uint8_t **msg)
{
	struct csq *csq = csq_engine_memory_state(st->engine);
	struct csq_wbuf head;
	RedisModuleString *body;
	uint8_t *m = NULL;
	size_t len = 0;

	if (st->nevents > 0) {
		/* Three values one after the other, as cmsgpack.pack(last,
		 * ts, events) wrote them for the Lua engine: the head is
		 * written after the events (still charged to the state, as
		 * they are), then copied into the room kept before them. */
		head = st->events;
		msgpack_put_int(&head, (int64_t)csq_last_event_id(csq));
		msgpack_put_int(&head, (int64_t)st->now);
		msgpack_put_array(&head, st->nevents);
		len = head.len - st->events.len;
		st->events.p = head.p;
		st->events.cap = head.cap;
		m = st->events.p + MSG_HEAD - len;
		memcpy(m, st->events.p + st->events.len, len);
		len += st->events.len - MSG_HEAD;
	}
	module_alloc_charge(NULL);
	if (st->repl.len > 0 && st->ctx != NULL && st->key != NULL) {
		if (st->seed_arg == NULL)
			st->seed_arg = RM_CreateStringFromLongLong(
			    NULL, (long long)st->seed);
		RM_Replicate(st->ctx, "CSQ.APPLY", "ssb", st->key, st->seed_arg,
		             (const char *)st->repl.p, st->repl.len);
	}
	st->repl.len = 0;
	if (len > 0 && st->key != NULL && st->ctx != NULL) {
		body = RM_CreateString(st->ctx, (const char *)m, len);
		RM_PublishMessage(st->ctx, state_channel(st), body);
		RM_FreeString(st->ctx, body);
	}
	if (msg != NULL)
		*msg = m;
	st->ctx = NULL;
	st->nevents = 0;
	module_timer_note(st);
	return len;
}

/* A record with its header (length and CRC), whole: 0 and its op. */
static int
record_open(const char *s, size_t len, struct csq_op *op, uint64_t *now,
            struct csq_record_strings *strs)
{
	const uint8_t *p = (const uint8_t *)s;
	uint32_t plen, crc;

	if (len < CSQ_RECORD_HEADER || len > CSQ_RECORD_MAX)
		return -1;
	plen = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
	crc = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
	      (uint32_t)p[7] << 24;
	if (plen != len - CSQ_RECORD_HEADER ||
	    csq_crc32c(p + CSQ_RECORD_HEADER, plen) != crc ||
	    csq_record_is_snap(p + CSQ_RECORD_HEADER, plen))
		return -1;
	return csq_record_decode(p + CSQ_RECORD_HEADER, plen, op, now, strs);
}

#define WRONGTYPE_ERR                                                          \
	"WRONGTYPE the key holds something that is not a csq state"

/* The key holds a value that is not a csq state. */
static int
key_is_other(RedisModuleKey *key)
{
	int type = RM_KeyType(key);

	return type != RM_KEYTYPE_EMPTY &&
	       (type != RM_KEYTYPE_MODULE ||
	        RM_ModuleTypeGetType(key) != module_type);
}

/* The state of a key open for reading into *st (NULL: the key is
 * empty); -1, with WRONGTYPE replied, for a key of another type. The
 * caller closes *keyp. */
static int
state_read(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey **keyp,
           struct module_state **st)
{
	*keyp = RM_OpenKey(ctx, name, RM_READ);
	*st = NULL;
	if (key_is_other(*keyp)) {
		RM_ReplyWithError(ctx, WRONGTYPE_ERR);
		return -1;
	}
	if (RM_KeyType(*keyp) != RM_KEYTYPE_EMPTY)
		*st = RM_ModuleTypeGetValue(*keyp);
	return 0;
}

/* The state of the key open for writing, made (with a new seed) when the
 * key is empty; NULL with an error replied for a key of another type. */
static struct module_state *
state_open(RedisModuleCtx *ctx, RedisModuleString *name, int create,
           uint64_t seed, RedisModuleKey **keyp)
{
	RedisModuleKey *key = RM_OpenKey(ctx, name, RM_READ | RM_WRITE);
	struct module_state *st;

	*keyp = key;
	if (key_is_other(key)) {
		RM_ReplyWithError(ctx, WRONGTYPE_ERR);
		return NULL;
	}
	if (RM_KeyType(key) == RM_KEYTYPE_EMPTY) {
		if (!create || module_import_refuse(ctx, name))
			return NULL;
		if (seed == 0 &&
		    getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
			seed =
			    (uint64_t)RM_Milliseconds() * 0x9e3779b97f4a7c15u;
		st = module_state_new(seed);
		RM_ModuleTypeSetValue(key, module_type, st);
	} else {
		st = RM_ModuleTypeGetValue(key);
	}
	module_state_name(st, ctx, name, RM_GetSelectedDb(ctx));
	return st;
}

struct module_state *
module_state_open(RedisModuleCtx *ctx, RedisModuleString *name, int create,
                  RedisModuleKey **keyp)
{
	return state_open(ctx, name, create, 0, keyp);
}

/* The operations' answers: their results as bytes, one after the other
 * in one buffer (one allocation a call, not one an operation); an
 * operation's answer starts at start. */
struct call_reply {
	struct module_state *st;
	enum csq_opcode code;
	size_t start;
	struct csq_wbuf buf;
};

/* The answer is the call's, not the state's: its bytes are charged to
 * nobody (they are freed once the reply is written, outside the run).
 * An operation answered twice would keep its last answer. */
static void
call_answer(void *arg, const struct csq_result *res)
{
	struct call_reply *cr = arg;

	module_alloc_charge(NULL);
	cr->buf.len = cr->start;
	csq_result_encode(cr->code, res, &cr->buf);
	module_alloc_charge(cr->st);
}

static int
limits_equal(const struct csq_limits *a, const struct csq_limits *b)
{
	return a->servicer_ttl_s == b->servicer_ttl_s &&
	       a->user_ttl_s == b->user_ttl_s && a->max_tier == b->max_tier &&
	       a->max_queue_length == b->max_queue_length &&
	       a->offer_timeout_s == b->offer_timeout_s &&
	       a->offer_max_missed == b->offer_max_missed &&
	       a->offer_retry_s == b->offer_retry_s &&
	       a->wrapup_s == b->wrapup_s && a->strategy == b->strategy &&
	       a->max_queues == b->max_queues;
}

/*
 * A call's decoded operations, their strings and where their answers end:
 * 6.9 KB an operation, in one allocation (the operations, the ends, the
 * strings). Allocated and freed by each call, they were two large
 * allocations of jemalloc's, about 2,000 instructions a call, more than
 * its records' decoding; now they are kept from one call to the next,
 * grown to the largest call of at most CALL_KEPT_OPS operations (the
 * limits' included: 110 KB at most), and a larger call has its own. Redis
 * runs one command at a time, and nothing in a call runs another.
 */
#define CALL_KEPT_OPS 16
struct call_space {
	struct csq_op *ops;
	struct csq_record_strings *strs;
	size_t *ends;
	size_t cap;
};
static struct call_space call_kept;

_Static_assert(sizeof(struct csq_op) % sizeof(size_t) == 0,
               "the ends follow the operations in one allocation");

/* Room for n operations. */
static void
call_space_alloc(struct call_space *s, size_t n)
{
	s->ops = RM_Alloc(
	    n * (sizeof(*s->ops) + sizeof(*s->ends) + sizeof(*s->strs)));
	s->ends = (size_t *)(void *)(s->ops + n);
	s->strs = (struct csq_record_strings *)(void *)(s->ends + n);
	s->cap = n;
}

static struct call_space
call_space_take(size_t n)
{
	struct call_space *k = &call_kept, s;
	size_t cap = k->cap > 0 ? k->cap : 4;

	if (n > CALL_KEPT_OPS) {
		call_space_alloc(&s, n);
		return s;
	}
	if (k->cap < n) {
		RM_Free(k->ops);
		while (cap < n)
			cap *= 2;
		call_space_alloc(k, cap);
	}
	return *k;
}

static void
call_space_give(struct call_space *s)
{
	if (s->ops != call_kept.ops)
		RM_Free(s->ops);
}

/*
 * The operations' answers' buffer, kept from one call to the next as the
 * operations are: grown from 256 B by realloc 2.3 times a call and freed
 * at its end, it cost 238 instructions a match in the replay of
 * scripts/bench-calls. A call takes it (the kept one is then empty, so
 * that a call inside a call would have its own) and gives it back,
 * emptied, unless it grew past CALL_KEPT_ANSWERS: a large call's buffer
 * is freed. Charged to nobody, as the answers always were.
 */
#define CALL_KEPT_ANSWERS 16384
static struct csq_wbuf call_answers_kept;

static struct csq_wbuf
call_answers_take(void)
{
	struct csq_wbuf b = call_answers_kept;

	memset(&call_answers_kept, 0, sizeof(call_answers_kept));
	b.len = 0;
	return b;
}

static void
call_answers_give(struct csq_wbuf *b)
{
	if (b->cap > CALL_KEPT_ANSWERS || call_answers_kept.p != NULL) {
		csq_wbuf_free(b);
		return;
	}
	call_answers_kept = *b;
	call_answers_kept.len = 0;
}

/* The time a call runs at: Redis's, or with debug-clock the caller's. */
static int
call_time(RedisModuleCtx *ctx, RedisModuleString *arg, uint64_t *now)
{
	size_t len;
	const char *s = RM_StringPtrLen(arg, &len);
	char buf[24], *end;
	unsigned long long v;

	*now = (uint64_t)RM_Milliseconds();
	if (len == 0)
		return 0;
	if (!module_debug_clock) {
		RM_ReplyWithError(ctx, "ERR a time given to a csq module "
		                       "loaded without debug-clock");
		return -1;
	}
	if (len >= sizeof(buf))
		goto bad;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0)
		goto bad;
	*now = v;
	return 0;
bad:
	RM_ReplyWithError(ctx, "ERR the time is not a number of ms");
	return -1;
}

/*
 * CSQ.CALL <key> <limits> <time> <op>...: limits is a LIMITS record (the
 * caller's limits, applied first when they differ from the state's),
 * time empty (Redis's) or, with debug-clock, the ms to run at; each op a
 * record. Every record is read before anything runs: one that is not
 * whole refuses the call, and nothing changes. The reply: the earliest
 * deadline (-1 none), the time, the last event id, 1, the events'
 * message ("" none), then each operation's result (lib/result.h).
 *
 * CSQ.READ takes the same arguments and gives the same reply, for
 * operations that only read (csq_op_mutates; a LIMITS is the health
 * check): it is registered readonly and without deny-oom, so that reads
 * are answered when Redis is over its maxmemory, as Redis answers GET
 * there. It changes nothing: the limits are not applied, an empty key
 * is read as an empty state and not made, and an operation that would
 * change the state refuses the whole call before anything runs.
 */
static int
call_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int reads)
{
	struct csq_record_strings *strs;
	struct csq_op limits_op, *ops;
	struct call_space sp;
	struct call_reply cr = {NULL, 0, 0, {0}};
	struct module_state *st, *tmp = NULL;
	RedisModuleKey *key;
	const uint8_t *msg;
	uint64_t now, t, next;
	const char *s;
	size_t len, msglen;
	int i, n;

	if (argc < 4)
		return RM_WrongArity(ctx);
	n = argc - 4;
	if (n > CALL_OPS_MAX)
		return RM_ReplyWithError(ctx, "ERR too many operations in one "
		                              "call");
	/* Not zeroed: the decoder writes all it reads (each string's NUL
	 * included), and these are large (a call's first cost was their
	 * memset). The last of each holds the limits. */
	sp = call_space_take((size_t)n + 1);
	ops = sp.ops;
	strs = sp.strs;
	s = RM_StringPtrLen(argv[2], &len);
	if (record_open(s, len, &ops[n], &t, &strs[n]) != 0 ||
	    ops[n].code != CSQ_OP_LIMITS) {
		call_space_give(&sp);
		return RM_ReplyWithError(ctx, "ERR the limits are not a csq "
		                              "LIMITS record");
	}
	limits_op = ops[n];
	if (call_time(ctx, argv[3], &now) != 0) {
		call_space_give(&sp);
		return RM_OK;
	}
	for (i = 0; i < n; i++) {
		char err[112];

		s = RM_StringPtrLen(argv[4 + i], &len);
		if (record_open(s, len, &ops[i], &t, &strs[i]) != 0 ||
		    ops[i].code == CSQ_OP_REARM) {
			snprintf(err, sizeof(err),
			         "ERR operation %d is not a csq record", i + 1);
		} else if (reads && ops[i].code != CSQ_OP_LIMITS &&
		           csq_op_mutates(ops[i].code)) {
			snprintf(err, sizeof(err),
			         "ERR operation %d changes the state: "
			         "CSQ.READ takes reads only (CSQ.CALL)",
			         i + 1);
		} else {
			continue;
		}
		call_space_give(&sp);
		return RM_ReplyWithError(ctx, err);
	}
	if (reads) {
		if (state_read(ctx, argv[1], &key, &st) != 0 ||
		    (st == NULL && module_import_refuse(ctx, argv[1]))) {
			call_space_give(&sp);
			RM_CloseKey(key);
			return RM_OK;
		}
		/* An empty key reads as the state CSQ.CALL would make. */
		if (st == NULL)
			st = tmp = module_state_new(1);
	} else if ((st = state_open(ctx, argv[1], 1, 0, &key)) == NULL) {
		call_space_give(&sp);
		RM_CloseKey(key);
		return RM_OK;
	}
	module_state_begin(st, ctx, now);
	cr.st = st;
	cr.buf = call_answers_take();
	if (!reads &&
	    !limits_equal(&limits_op.limits,
	                  csq_get_limits(csq_engine_memory_state(st->engine))))
		st->engine->ops->set_limits(st->engine, &limits_op.limits);
	/* The answers are made first, the reply's header after them. */
	{
		size_t *ends = sp.ends; /* where each answer ends in cr.buf */
		struct csq_result res;
		enum csq_status status;

		for (i = 0; i < n; i++) {
			cr.code = ops[i].code;
			cr.start = cr.buf.len;
			/* An answer of its own is zeroed here; the engine's
			 * (the last branch) is zeroed by the engine, as much
			 * as the operation fills. */
			if (ops[i].code == CSQ_OP_EXPIRE ||
			    ops[i].code == CSQ_OP_LIMITS) {
				/* The reaper, and the health check. */
				if (ops[i].code == CSQ_OP_EXPIRE)
					st->engine->ops->expire(st->engine);
				memset(&res, 0, sizeof(res));
				res.event_id = csq_last_event_id(
				    csq_engine_memory_state(st->engine));
				call_answer(&cr, &res);
			} else if ((status = csq_op_check(
			                &ops[i],
			                csq_get_limits(csq_engine_memory_state(
			                    st->engine)))) != CSQ_OK) {
				memset(&res, 0, sizeof(res));
				res.status = status;
				res.event_id = csq_last_event_id(
				    csq_engine_memory_state(st->engine));
				call_answer(&cr, &res);
			} else {
				csq_engine_call(st->engine, &ops[i],
				                call_answer, &cr);
			}
			ends[i] = cr.buf.len;
		}
		next = csq_next_deadline(csq_engine_memory_state(st->engine));
		msglen = module_state_end(st, &msg);
		RM_ReplyWithArray(ctx, CALL_HEADER + n);
		RM_ReplyWithLongLong(ctx,
		                     next == UINT64_MAX ? -1 : (long long)next);
		RM_ReplyWithLongLong(ctx, (long long)now);
		RM_ReplyWithLongLong(ctx,
		                     (long long)csq_last_event_id(
		                         csq_engine_memory_state(st->engine)));
		RM_ReplyWithLongLong(ctx, 1);
		RM_ReplyWithStringBuffer(
		    ctx, msglen > 0 ? (const char *)msg : "", msglen);
		for (i = 0; i < n; i++) {
			size_t at = i > 0 ? ends[i - 1] : 0;

			RM_ReplyWithStringBuffer(
			    ctx, cr.buf.p != NULL ? (char *)cr.buf.p + at : "",
			    ends[i] - at);
		}
		call_answers_give(&cr.buf);
	}
	call_space_give(&sp);
	RM_CloseKey(key);
	if (tmp != NULL)
		module_state_free(tmp);
	if (!reads)
		module_timer_update(ctx);
	return RM_OK;
}

static int
cmd_call(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return call_run(ctx, argv, argc, 0);
}

static int
cmd_read(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return call_run(ctx, argv, argc, 1);
}

/* Only Redis itself may send these: from its master, or from its AOF. */
static int
from_replication(RedisModuleCtx *ctx)
{
	return (RM_GetContextFlags(ctx) &
	        (RM_CTX_FLAGS_REPLICATED | RM_CTX_FLAGS_LOADING)) != 0;
}

static int
arg_seed(RedisModuleString *arg, uint64_t *seed)
{
	size_t len;
	const char *s = RM_StringPtrLen(arg, &len);
	char buf[24], *end;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	*seed = (uint64_t)strtoll(buf, &end, 10);
	return errno != 0 || *end != '\0' ? -1 : 0;
}

/* The whole record at the start of s (len bytes, 8 at least): its size
 * with its header, or 0 when the header says more than there is. */
static size_t
record_size(const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;
	uint32_t plen = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
	                (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;

	return plen <= len - CSQ_RECORD_HEADER ? CSQ_RECORD_HEADER + plen : 0;
}

/* The records of a CSQ.APPLY, one after the other: one at least, each
 * whole, none cut. 0, or -1. */
static int
records_check(const char *s, size_t len)
{
	struct csq_record_strings strs;
	struct csq_op op;
	uint64_t now;
	size_t n;

	if (len == 0)
		return -1;
	for (; len > 0; s += n, len -= n)
		if (len < CSQ_RECORD_HEADER || (n = record_size(s, len)) == 0 ||
		    record_open(s, n, &op, &now, &strs) != 0)
			return -1;
	return 0;
}

/* CSQ.APPLY <key> <seed> <records>: the changes of one call (or deadline)
 * of the master, each at its time, whole records one after the other (a
 * single record, as csq.so before 2026-11-29 wrote one per change, is the
 * case of one); the seed makes a key that does not exist yet as the
 * master's. Checked whole before any is applied. */
static int
cmd_apply(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	struct csq_record_strings strs;
	struct module_state *st;
	RedisModuleKey *key;
	struct csq_op op;
	uint64_t seed, now;
	const char *s;
	size_t len, n;

	if (argc != 4)
		return RM_WrongArity(ctx);
	if (!from_replication(ctx))
		return RM_ReplyWithError(ctx, "ERR CSQ.APPLY is for Redis's "
		                              "replication and AOF only");
	s = RM_StringPtrLen(argv[3], &len);
	if (arg_seed(argv[2], &seed) != 0 || records_check(s, len) != 0)
		return RM_ReplyWithError(ctx, "ERR not a csq record");
	if ((st = state_open(ctx, argv[1], 1, seed, &key)) == NULL) {
		RM_CloseKey(key);
		return RM_OK;
	}
	for (; len > 0; s += n, len -= n) {
		n = record_size(s, len);
		(void)record_open(s, n, &op, &now, &strs); /* checked above */
		module_state_begin(st, NULL, now);
		csq_engine_memory_replay(st->engine, &op, now);
		module_state_end(st, NULL);
	}
	RM_CloseKey(key);
	return RM_ReplyWithSimpleString(ctx, "OK");
}

/* CSQ.LOAD <key> <seed> <dump>: a whole state, as the AOF rewrite wrote
 * it; it replaces what the key held. */
static int
cmd_load(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	struct module_state *st;
	RedisModuleKey *key;
	uint64_t seed;
	const char *s;
	size_t len;

	if (argc != 4)
		return RM_WrongArity(ctx);
	if (!from_replication(ctx))
		return RM_ReplyWithError(ctx, "ERR CSQ.LOAD is for Redis's "
		                              "AOF only");
	s = RM_StringPtrLen(argv[3], &len);
	if (arg_seed(argv[2], &seed) != 0 ||
	    (st = module_state_load(seed, (const uint8_t *)s, len)) == NULL)
		return RM_ReplyWithError(ctx, "ERR not a csq state");
	key = RM_OpenKey(ctx, argv[1], RM_READ | RM_WRITE);
	if (key_is_other(key)) {
		RM_CloseKey(key);
		module_state_free(st);
		return RM_ReplyWithError(ctx, WRONGTYPE_ERR);
	}
	RM_ModuleTypeSetValue(key, module_type, st); /* frees the old one */
	module_state_name(st, ctx, argv[1], RM_GetSelectedDb(ctx));
	RM_CloseKey(key);
	return RM_ReplyWithSimpleString(ctx, "OK");
}

/* CSQ.VERSION: the module's name, its version, the version of the calls
 * it takes, and libcsq's version. */
static int
cmd_version(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	(void)argv;
	if (argc != 1)
		return RM_WrongArity(ctx);
	RM_ReplyWithArray(ctx, 4);
	RM_ReplyWithSimpleString(ctx, CSQ_MODULE_NAME);
	RM_ReplyWithLongLong(ctx, CSQ_MODULE_VERSION);
	RM_ReplyWithLongLong(ctx, CSQ_MODULE_CALLS);
	RM_ReplyWithSimpleString(ctx, CSQ_VERSION);
	return RM_OK;
}

/* CSQ.DIGEST <key>: the CRC-32C of the state's records (in the order of
 * their bytes, module_state_digest) and their length, as "<crc
 * hex>:<bytes>"; "0:0" for an empty key. A replica equals its master
 * when their digests do. */
static int
cmd_digest(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	struct module_state *st;
	RedisModuleKey *key;
	char buf[48];
	size_t len = 0;
	uint32_t crc = 0;

	if (argc != 2)
		return RM_WrongArity(ctx);
	if (state_read(ctx, argv[1], &key, &st) == 0) {
		if (st != NULL)
			crc = module_state_digest(st, &len);
		snprintf(buf, sizeof(buf), st != NULL ? "%08x:%zu" : "%x:%zu",
		         crc, len);
		RM_ReplyWithSimpleString(ctx, buf);
	}
	RM_CloseKey(key);
	return RM_OK;
}

/* CSQ.DUMP <key>: the state's dump itself (module_state_dump), for a
 * look at what two digests that differ hold; "" for an empty key. */
static int
cmd_dump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	struct module_state *st;
	RedisModuleKey *key;
	struct csq_wbuf w = {0};

	if (argc != 2)
		return RM_WrongArity(ctx);
	if (state_read(ctx, argv[1], &key, &st) == 0) {
		if (st != NULL)
			module_state_dump(st, &w);
		RM_ReplyWithStringBuffer(ctx, w.len > 0 ? (char *)w.p : "",
		                         w.len);
	}
	csq_wbuf_free(&w);
	RM_CloseKey(key);
	return RM_OK;
}

/* A promoted replica takes the deadlines over; a loaded state has its
 * own to arm. */
static void
server_event(RedisModuleCtx *ctx, struct rm_event e, uint64_t sub, void *data)
{
	(void)e, (void)sub, (void)data;
	module_timer_update(ctx);
}

/* The one symbol Redis looks for (the others are hidden). */
__attribute__((visibility("default"))) int
RedisModule_OnLoad(RedisModuleCtx *, RedisModuleString **, int);

__attribute__((visibility("default"))) int
RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	const struct rm_event role = {RM_EVENT_REPLICATION_ROLE_CHANGED, 1},
	                      loading = {RM_EVENT_LOADING, 1};
	const char *s;
	size_t len;
	int i;

	if (module_api_init(ctx) != RM_OK)
		return RM_ERR; /* a Redis before 7.0 */
	if (RM_IsModuleNameBusy(CSQ_MODULE_NAME))
		return RM_ERR;
	RM_SetModuleAttribs(ctx, CSQ_MODULE_NAME, CSQ_MODULE_VERSION,
	                    RM_APIVER_1);
	for (i = 0; i < argc; i++) {
		s = RM_StringPtrLen(argv[i], &len);
		if (len == 11 && memcmp(s, "debug-clock", 11) == 0) {
			module_debug_clock = 1;
		} else {
			RM_Log(ctx, "warning",
			       "csq: unknown module argument %.*s (known: "
			       "debug-clock)",
			       (int)(len < 64 ? len : 64), s);
			return RM_ERR;
		}
	}
	if (module_type_register(ctx) != RM_OK ||
	    RM_CreateCommand(ctx, "csq.call", cmd_call, "write deny-oom", 1, 1,
	                     1) != RM_OK ||
	    RM_CreateCommand(ctx, "csq.read", cmd_read, "readonly", 1, 1, 1) !=
	        RM_OK ||
	    RM_CreateCommand(ctx, "csq.apply", cmd_apply, "write", 1, 1, 1) !=
	        RM_OK ||
	    RM_CreateCommand(ctx, "csq.load", cmd_load, "write", 1, 1, 1) !=
	        RM_OK ||
	    RM_CreateCommand(ctx, "csq.version", cmd_version, "readonly fast",
	                     0, 0, 0) != RM_OK ||
	    RM_CreateCommand(ctx, "csq.digest", cmd_digest, "readonly", 1, 1,
	                     1) != RM_OK ||
	    RM_CreateCommand(ctx, "csq.dump", cmd_dump, "readonly", 1, 1, 1) !=
	        RM_OK ||
	    RM_CreateCommand(ctx, "csq.import", module_cmd_import,
	                     "write deny-oom", 1, 1, 1) != RM_OK ||
	    module_text_register(ctx) != RM_OK)
		return RM_ERR;
	RM_SubscribeToServerEvent(ctx, role, server_event);
	RM_SubscribeToServerEvent(ctx, loading, server_event);
	return RM_OK;
}
