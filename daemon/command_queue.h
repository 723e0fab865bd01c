/*
 * The queue's commands, those the engine answers: the operations of
 * lib/op.h's table that are commands (servicers', users' and the
 * admin's).
 */
#ifndef CSQD_COMMAND_QUEUE_H
#define CSQD_COMMAND_QUEUE_H

#include <stdint.h>

#include "engine.h"

struct client;
struct csq_op;
struct csq_result;
struct evbuffer;
struct resp_request;

/* The command of operation code (lib/op.h): its words parsed
 * (op_args.h), then the engine's call, its reply written when it
 * answers (op_reply.h). */
void command_queue_op(struct client *, const struct resp_request *,
                      enum csq_opcode code);

/*
 * An engine call whose reply the caller writes: render runs when the
 * engine answers, whatever it answered, and arg (malloc'd, or NULL) is
 * freed after it. INFO's csq section is one.
 */
typedef void command_render_fn(struct client *, struct evbuffer *out,
                               const struct csq_result *, void *arg);
void command_call_render(struct client *, const struct csq_op *,
                         command_render_fn *, void *arg);

/*
 * The dispatcher's side of an engine call answered later: begin names the
 * command about to run and when it came; later says whether it left a
 * call in flight, which is then measured when its answer comes.
 */
void command_queue_begin(const char *name, uint64_t start_us);
int command_queue_later(void);
/*
 * MULTI's queue: with check on, a handler checks its arguments and
 * replies their error, but makes no call; checked then says whether it
 * got as far as the call (the arguments are good).
 */
void command_queue_check(int on);
int command_queue_checked(void);
/* EXEC: the calls made until the next call with NULL belong to block x. */
struct multi_exec;
void command_queue_exec(struct multi_exec *x);

#endif
