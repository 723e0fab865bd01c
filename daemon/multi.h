/*
 * Transactions (protocol-v2 section 8): MULTI starts queueing a client's
 * commands, EXEC runs them with no other client's command in between and
 * answers one array, DISCARD drops them. On the Redis engine the engine
 * calls of a block go to Redis as one script call (csq_engine_group_*),
 * so the block is atomic across daemons too.
 */
#ifndef CSQD_MULTI_H
#define CSQD_MULTI_H

#include <stddef.h>

#include "engine.h"

struct client;
struct evbuffer;
struct resp_request;

/* A client's open transaction: the requests queued so far. */
struct multi;

/* A block being run by EXEC, while engine calls of it are in flight. */
struct multi_exec;

/* MULTI, EXEC, DISCARD, WATCH and UNWATCH. */
void cmd_multi(struct client *, const struct resp_request *);
void cmd_exec(struct client *, const struct resp_request *);
void cmd_discard(struct client *, const struct resp_request *);
void cmd_watch(struct client *, const struct resp_request *);
void cmd_unwatch(struct client *, const struct resp_request *);

/* Queues req (checked already) and replies +QUEUED; or, over the limits,
 * replies the error and flags the transaction. */
void multi_queue(struct client *, const struct resp_request *);
/* An error while queueing: the EXEC will answer EXECABORT. */
void multi_flag(struct client *);
/* The commands queued in m and their arguments' bytes (CLIENT LIST). */
size_t multi_count(const struct multi *);
size_t multi_bytes(const struct multi *);
/* Drops the client's transaction, if any (DISCARD, RESET, the close). */
void multi_discard(struct client *);

/* An engine call of the block x is made (command_queue.c). */
void multi_exec_called(struct multi_exec *);
/*
 * An engine call of the block x has answered with status: x knows
 * whether the engine ran the block at all. Called once per call, in the
 * order the calls were made, after its reply is written.
 */
void multi_exec_answered(struct multi_exec *, enum csq_status);

#endif
