/*
 * The queue's commands, those the engine answers: servicers (HEARTBEAT,
 * PAUSE, RESUME, LOGOUT, RELEASE, ACCEPT, DECLINE, READY, TRANSFER), users
 * (ENQUEUE, TOUCH, LEAVE, WHERE) and the admin's (QUEUE, QLEN, SERVICERS,
 * STATS, QUEUES, ROOMS).
 */
#ifndef CSQD_COMMAND_QUEUE_H
#define CSQD_COMMAND_QUEUE_H

#include <stdint.h>

#include "csq.h"

struct client;
struct csq_op;
struct csq_result;
struct evbuffer;
struct resp_request;

void cmd_heartbeat(struct client *, const struct resp_request *);
void cmd_pause(struct client *, const struct resp_request *);
void cmd_resume(struct client *, const struct resp_request *);
void cmd_logout(struct client *, const struct resp_request *);
void cmd_release(struct client *, const struct resp_request *);
void cmd_accept(struct client *, const struct resp_request *);
void cmd_decline(struct client *, const struct resp_request *);
void cmd_ready(struct client *, const struct resp_request *);
void cmd_transfer(struct client *, const struct resp_request *);
void cmd_enqueue(struct client *, const struct resp_request *);
void cmd_touch(struct client *, const struct resp_request *);
void cmd_leave(struct client *, const struct resp_request *);
void cmd_where(struct client *, const struct resp_request *);
void cmd_queue(struct client *, const struct resp_request *);
void cmd_qlen(struct client *, const struct resp_request *);
void cmd_qstats(struct client *, const struct resp_request *);
void cmd_servicers(struct client *, const struct resp_request *);
void cmd_stats(struct client *, const struct resp_request *);
void cmd_queues(struct client *, const struct resp_request *);
void cmd_rooms(struct client *, const struct resp_request *);
/* STATS's fields, by name, in its order (the admin view's too). */
#define COMMAND_STATS_MAX 32
struct command_stat {
	const char *name;
	uint64_t value;
};
size_t command_stats(const struct csq_stats *,
                     struct command_stat out[COMMAND_STATS_MAX]);
/* "free", "offered", "assigned", "wrapup": ROOMS's names of the states. */
const char *command_room_state(enum csq_room_state);

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
