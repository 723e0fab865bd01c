/*
 * csq.so, the Redis module: one csq state per key, a memory engine of
 * libcsq (lib/engine_memory.c) that Redis keeps, persists and replicates.
 * module.c has the commands; module_type.c the data type (RDB, AOF,
 * memory, digest); module_alloc.c the allocator that puts libcsq's memory
 * in Redis's accounts; module_timer.c the deadlines.
 */
#ifndef CSQ_MODULE_STATE_H
#define CSQ_MODULE_STATE_H

#include <stdint.h>
#include <sys/queue.h>

#include "engine.h"
#include "heap.h"
#include "module_api.h"
#include "result.h"
#include "wire.h"

#define CSQ_MODULE_NAME "csq"
/* The module's own version, and that of the calls csqd makes (the
 * handshake, CSQ.VERSION): a csqd of another call version refuses to
 * start. */
#define CSQ_MODULE_VERSION 1

/*
 * Blocks of one usable size that libcsq freed while running on a state,
 * kept for its next allocations of that size (module_alloc.c): a match
 * frees a user, a room and a node of the line and the next ENQUEUE and
 * match make three more of the same sizes, and each went through Redis's
 * allocator and its size look-ups. Kept, they are still charged to the
 * state: they are Redis's memory that it holds.
 */
#define MODULE_KEPT_SMALL 256 /* the largest usable size kept */
#define MODULE_KEPT_SLOTS 16  /* one a 16 bytes of usable size */
#define MODULE_KEPT_MAX   32  /* blocks kept of one size */
struct module_kept {
	void *head;    /* linked through each block's first word */
	uint32_t size; /* their usable size */
	uint32_t n;
};

struct module_state {
	struct csq_engine *engine;
	uint64_t seed;
	uint64_t now; /* the time of the operation running (the clock) */
	RedisModuleString *key; /* its key's name, kept for the deadlines */
	int db;
	size_t bytes; /* what libcsq allocated for it (kept[] included) */
	struct module_kept kept[MODULE_KEPT_SLOTS];
	/* While a command or a deadline runs on it: where to replicate, and
	 * the events so far (MessagePack facts, for the message). */
	RedisModuleCtx *ctx;
	struct csq_wbuf events; /* MODULE_MSG_HEAD bytes kept first */
	uint32_t nevents;
	/* Made once, not at every call (a fifth of CSQ.ENQUEUE's cost in
	 * csq.so was making and freeing them): the events' channel (NULL
	 * until a message needs it, and again when the key is renamed) and
	 * the seed as CSQ.APPLY's argument. */
	RedisModuleString *channel;
	RedisModuleString *seed_arg;
	/* The run's changes, as whole records one after the other: one
	 * CSQ.APPLY at the run's end replicates them all. */
	struct csq_wbuf repl;
	/* Its place among the states with a deadline, by the earliest
	 * (module_timer.c); serial breaks ties, in the order made. */
	struct csq_heap_node due;
	uint64_t serial;
	LIST_ENTRY(module_state) link; /* module_states */
};

LIST_HEAD(module_state_list, module_state);
extern struct module_state_list module_states;
extern RedisModuleType *module_type;
/* Loaded with "debug-clock": calls may give the time (tests), and the
 * deadlines act only when a call asks (csqd's reaper). */
extern int module_debug_clock;

/* module.c */
struct module_state *module_state_new(uint64_t seed);
/* Frees st and all it holds (the type's free). */
void module_state_free(struct module_state *);
/* Begins a run on st at now: replication through ctx, events collected. */
void module_state_begin(struct module_state *, RedisModuleCtx *, uint64_t now);
/* Ends it: replicates the run's changes (one CSQ.APPLY), publishes the
 * events collected (if any) on the key's channel and points *msg (when
 * not NULL) at their message: its length, 0 for no event. The message
 * is the state's, valid until its next run begins. */
size_t module_state_end(struct module_state *, const uint8_t **msg);
/* The key's name, as the state was last seen under it. */
void module_state_name(struct module_state *, RedisModuleCtx *,
                       RedisModuleString *key, int db);
/* The whole state as records (limits, policies, snapshot items), each
 * with its header: the RDB form, the AOF's CSQ.LOAD and the digest. */
void module_state_dump(struct module_state *, struct csq_wbuf *);
/* The CRC-32C of the dump's records sorted by their bytes, *len theirs:
 * equal for equal states, whatever the history of their tables. */
uint32_t module_state_digest(struct module_state *, size_t *len);
/* A state from dump's bytes, or NULL when they are not one. */
struct module_state *module_state_load(uint64_t seed, const uint8_t *,
                                       size_t len);

/* module_alloc.c: libcsq's allocations charged to the state in use. */
void module_alloc_charge(struct module_state *);
/* The blocks st keeps go back to Redis (st is going). */
void module_alloc_drop(struct module_state *);

/* module_timer.c */
/* Arms the one timer for the earliest deadline of every state, on a
 * master without debug-clock; stops it elsewhere. */
void module_timer_update(RedisModuleCtx *);
/* A state's earliest deadline, or its key, may have changed (the end of
 * a run, a new name): its place among the states is set again, O(log n)
 * in the number of states. */
void module_timer_note(struct module_state *);
/* The state goes (before it is freed). */
void module_timer_forget(struct module_state *);

/* The state of a key open for writing, made (a new seed) when the key is
 * empty and create is set; NULL with an error replied for a key of
 * another type (or, made, beside a state of the Lua engine), and NULL
 * with no reply for an empty key not to make. The caller closes *keyp. */
struct module_state *module_state_open(RedisModuleCtx *, RedisModuleString *,
                                       int create, RedisModuleKey **keyp);

/* module_text.c: CSQ.ENQUEUE and csqd's other commands as text. */
int module_text_register(RedisModuleCtx *);

/* module_import.c: CSQ.IMPORT, a state of the Lua engine's keys. */
int module_cmd_import(RedisModuleCtx *, RedisModuleString **, int);
/* 1, with the error replied, when the prefix of an empty key
 * "{<prefix>}:state" holds the Lua engine's state ({<prefix>}:stats):
 * a client's call makes no new state beside it (replication may). */
int module_import_refuse(RedisModuleCtx *, RedisModuleString *key);

/* module_type.c */
int module_type_register(RedisModuleCtx *);

#endif
