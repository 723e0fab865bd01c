/*
 * The queue's commands, those the engine answers: servicers (HEARTBEAT,
 * PAUSE, RESUME, LOGOUT, RELEASE), users (ENQUEUE, TOUCH, LEAVE, WHERE)
 * and the admin's (QUEUE, QLEN, SERVICERS, STATS).
 */
#ifndef CSQD_COMMAND_QUEUE_H
#define CSQD_COMMAND_QUEUE_H

#include <stdint.h>

struct client;
struct resp_request;

void cmd_heartbeat(struct client *, const struct resp_request *);
void cmd_pause(struct client *, const struct resp_request *);
void cmd_resume(struct client *, const struct resp_request *);
void cmd_logout(struct client *, const struct resp_request *);
void cmd_release(struct client *, const struct resp_request *);
void cmd_enqueue(struct client *, const struct resp_request *);
void cmd_touch(struct client *, const struct resp_request *);
void cmd_leave(struct client *, const struct resp_request *);
void cmd_where(struct client *, const struct resp_request *);
void cmd_queue(struct client *, const struct resp_request *);
void cmd_qlen(struct client *, const struct resp_request *);
void cmd_servicers(struct client *, const struct resp_request *);
void cmd_stats(struct client *, const struct resp_request *);

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
