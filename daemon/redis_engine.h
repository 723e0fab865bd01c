/*
 * The parts of the Redis engine (engine_redis.h is its face): the state
 * they share and what each offers the others. engine_redis.c is the
 * interface; redis_conn.c the connections and their handshake;
 * redis_call.c the operations, from a struct csq_op to their answers in
 * order; redis_batch.c the calls of csq.so (CSQ.CALL) that carry them;
 * redis_reply.c the decoding of a call's reply; redis_subscription.c the
 * events.
 */
#ifndef CSQD_REDIS_ENGINE_H
#define CSQD_REDIS_ENGINE_H

#include <stdint.h>
#include <sys/queue.h>

#include <event2/event.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "config.h"
#include "engine.h"
#include "metrics.h"
#include "record.h"

#define ECHO_MAX 64 /* messages taken from replies, not yet echoed */

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

/* One operation: its record, kept until its batch is sent, and its
 * result while it waits for its events. redis_call_new zeroes the fields
 * before res only: res (4 KiB) is written whole before it is read (the
 * answer's decoding, redis_call_fail), and rec holds reclen bytes. */
struct redis_call {
	TAILQ_ENTRY(redis_call) entry;
	struct redis_engine *r;
	enum csq_opcode code;
	csq_engine_cb *cb;
	void *arg;
	size_t reclen;       /* 0: the health check, which has no operation */
	void *owned;         /* the module's answer's array */
	uint64_t wait_event; /* the last event id of the call */
	uint64_t parked_ms;
	TAILQ_ENTRY(redis_call) order; /* in redis_engine.order */
	int ready;                     /* res is the answer */
	int group_len;   /* the first of a group: its calls, all in one batch */
	int limits_only; /* a LIMITS that goes as CSQ.CALL, to apply them */
	int slice;       /* a view's slice: the last of its batch */
	uint64_t wait_seq; /* held until that WAIT answers; 0: not held */
	size_t reccap;     /* room for a record: CALL_REC_SPARE, or reclen */
	struct csq_result res; /* the answer, once ready */
	uint8_t rec[];         /* the operation's record, reclen bytes */
};

TAILQ_HEAD(redis_call_list, redis_call);

/* The operations of one CSQ.CALL, in the order they were sent. */
struct redis_batch {
	struct redis_engine *r;
	struct redis_call_list calls;
	int ncalls;
	uint64_t sub_gen;    /* the subscription it was made under (0 none) */
	uint64_t wait_seq;   /* the WAIT after its call; 0: none */
	int writes;          /* CSQ.CALL; 0: its operations read (CSQ.READ) */
	uint64_t limits_gen; /* the limits it carried (CSQ.CALL applies them) */
};

struct redis_engine {
	struct csq_engine base;
	struct event_base *evb;
	char host[CONFIG_STR_MAX];
	int port;
	int is_unix;
	char addr[2 * CONFIG_STR_MAX + 32]; /* for the log */
	char password[CONFIG_STR_MAX];
	int64_t db;
	char channel[CONFIG_STR_MAX + 16]; /* "{prefix}:events" */
	struct csq_limits limits;
	/* Each change of limits is a generation; a CSQ.CALL answered applied
	 * the one it carried (CSQ.READ applies none): until the last is, the
	 * tick sends them alone (limits_out: on their way). */
	uint64_t limits_gen, limits_applied;
	int limits_out;
	/* The limits as the LIMITS record every CSQ.CALL carries, encoded
	 * for generation limits_rec_gen (0: not yet): not again for each
	 * call (redis_batch.c). */
	uint64_t limits_rec_gen;
	size_t limits_rec_len;
	uint8_t limits_rec[CSQ_RECORD_MAX];
	csq_clock_fn *clock; /* this daemon's time, for deadlines */
	void *clock_arg;
	csq_emit_fn *emit;
	void *emit_arg;
	void (*deadline_changed)(void *);
	void (*events_out)(void *); /* the events emitted: write them now */
	void *deadline_arg;         /* the argument of both */

	struct redis_conn cmd, sub;
	int up;                              /* both connections ready */
	char state_key[CONFIG_STR_MAX + 16]; /* csq.so's: "{prefix}:state" */

	struct redis_call_list pending; /* not sent yet */
	/* Calls answered, kept for the next ones (redis_call.c): a call is
	 * 4.4 KB, a request malloc serves from its large bins. */
	struct redis_call_list spare;
	int nspare;
	/* The CSQ.CALL being written, RESP (redis_batch.c). */
	char *cmdbuf;
	size_t cmdcap;
	/* Between group_begin and group_end: the group's calls so far,
	 * which join pending together at its end. */
	int grouping;
	struct redis_call_list grouped;
	int ngrouped;
	int inflight;        /* script calls sent, not answered */
	struct event *flush; /* sends pending at the turn's end */
	/* Every call not answered yet, in the order it was made: answers
	 * leave from its head only, so that they come in that order. */
	TAILQ_HEAD(, redis_call) order;
	int answering;       /* inside redis_call_flush */
	uint64_t seen_event; /* highest event id seen */
	/* Subscriptions confirmed so far, and the last one whose starting
	 * point is known (redis_subscription_sync). */
	uint64_t sub_gen, synced_gen;
	/* The last event id that came on the subscription: ids only grow
	 * there, unless Redis's state went back (below). */
	uint64_t sub_last;
	uint64_t went_back_logged_ms; /* when that was last logged */
	uint64_t went_back_unlogged;  /* and how many times since */
	uint64_t policy_rewritten_ms; /* the policies, after ids went back */
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

	/* Sentinel (redis_sentinel.c): where to ask for the master by its
	 * name, and the connection that asks and hears of failovers. With
	 * sentinels, host and port are the master's as they last said
	 * (have_master). */
	int nsentinels;
	struct config_addr sentinels[CONFIG_SENTINELS_MAX];
	char master[CONFIG_STR_MAX];
	struct redis_conn sen;
	int have_master;
	/* WAIT for this many replicas after each call that may write, at
	 * most wait_timeout_ms (0 replicas: no WAIT); wait_seq numbers the
	 * WAITs sent. */
	int64_t wait_replicas, wait_timeout_ms;
	uint64_t wait_seq;

	/* Queue policies (redis_policy.c): this daemon's `queues`, written
	 * to Redis when the link comes up and at each change. */
	struct csq_policy *policies;
	size_t npolicies;
};

/* Milliseconds of a clock that only goes forward, for waits and logs. */
static inline uint64_t
redis_mono_ms(void)
{
	return metrics_now_us() / 1000;
}

/* engine_redis.c */
/* Up when both connections are; said once per change. */
void redis_engine_update_up(struct redis_engine *);

/* redis_conn.c */
void redis_conn_init(struct redis_engine *, struct redis_conn *,
                     const char *name);
void redis_conn_start(struct redis_conn *);
/* The handshake is done: this connection serves. */
void redis_conn_ready(struct redis_conn *);
/* Why an attempt failed, for the log: once per outage (then at debug). */
void redis_conn_failed(struct redis_conn *, const char *why);
/* Ends the connection; the callbacks of what was in flight get NULL. */
void redis_conn_drop(struct redis_conn *, const char *why);
/* Frees the connection and its timer, for good. */
void redis_conn_close(struct redis_conn *);
/* A reply of the handshake: an error ends the attempt, with its reason;
 * 1 when it did (or the reply is gone), 0 when reply is no error. */
int redis_conn_error(redisAsyncContext *, redisReply *, const char *what);
/* Connects c at once unless it is connected or connecting (it may be
 * waiting for its next attempt). */
void redis_conn_now(struct redis_conn *);

/* redis_policy.c */
void redis_policy_init(struct redis_engine *, const struct csq_policy *,
                       size_t n);
enum csq_status redis_policy_set(struct redis_engine *,
                                 const struct csq_policy *, size_t n);
/* The daemon's policies to Redis, in one call. */
void redis_policy_send(struct redis_engine *);

/* redis_sentinel.c */
/* The sentinel connection's handshake: ask for the master, then hear of
 * its failovers. */
void redis_sentinel_handshake(struct redis_conn *);
/* The address of the sentinel to try this time, in turn. */
void redis_sentinel_address(struct redis_conn *, char *host, size_t cap,
                            int *port);
/* What the sentinels say may be stale (a READONLY reply, a server that
 * is not the master): ask them again. */
void redis_sentinel_ask(struct redis_engine *, const char *why);

/* redis_call.c */
struct redis_call *redis_call_new(struct redis_engine *, enum csq_opcode,
                                  csq_engine_cb *, void *arg);
/* The call of an operation, its record; -1 for none. */
int redis_call_build(struct redis_engine *, const struct csq_op *,
                     csq_engine_cb *, void *arg, struct redis_call **out);
/* Queues k for the next batch. */
void redis_call_send(struct redis_engine *, struct redis_call *);
/* The calls sent between these go to Redis in one CSQ.CALL. */
void redis_call_group_begin(struct redis_engine *);
void redis_call_group_end(struct redis_engine *);
void redis_call_ready(struct redis_call *, uint64_t wait_event);
void redis_call_fail(struct redis_call *, enum csq_status why);
void redis_call_flush(struct redis_engine *, int all);
/* Frees the calls kept for reuse (the engine stops). */
void redis_call_spare_free(struct redis_engine *);

/* redis_batch.c */
void redis_batch_schedule(struct redis_engine *);
void redis_batch_fail_pending(struct redis_engine *);
/* The flush event: sends what is pending at the end of a loop turn. */
void redis_batch_flush_cb(evutil_socket_t, short, void *);
/* The events emitted so far go to their clients now (events_out), after a
 * call that waits for the turn's end. */
void redis_events_out(struct redis_engine *);

/* redis_reply.c */
/* The header of a CSQ.CALL's reply: the last event id, or -1. */
int64_t redis_reply_header(struct redis_engine *, const redisReply *);
/* The module's answer to k, element i of the call's reply (result.h). */
void redis_reply_module(struct redis_call *k, const redisReply *reply, size_t i,
                        uint64_t last);
void redis_reply_log_error(struct redis_engine *, const char *what);
/* ac's replies built as redis_reply.c makes them, before it reads any. */
void redis_reply_objects(redisAsyncContext *ac);
/* The same for a reader of its own (the tests'). */
void redis_reply_reader(redisReader *reader);
/* The small objects kept for the next replies, given back (at the
 * engine's end). */
void redis_reply_spares_free(void);
void redis_reply_log_flush(struct redis_engine *);

/* redis_subscription.c */
void redis_subscription_cb(redisAsyncContext *, void *reply, void *priv);
void redis_subscription_reply(struct redis_engine *, const redisReply *);
void redis_subscription_sync(struct redis_engine *, const struct redis_batch *,
                             const redisReply *msg, uint64_t last);

#endif
