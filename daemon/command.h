/*
 * The command table: each command's name, arity, where it is allowed and
 * its handler. Handlers check every argument, turn the request into an
 * engine call (or answer themselves) and write the reply.
 */
#ifndef CSQD_COMMAND_H
#define CSQD_COMMAND_H

struct client;
struct resp_request;

void command_dispatch(struct client *, const struct resp_request *);
/* 1 when req may run while engine calls of its client are in flight: a
 * command the engine answers (its errors too), in turn. Others wait until
 * every reply before them is out. */
int command_pipelines(const struct resp_request *);
/* EXEC's: runs req, queued after the dispatcher checked it, as part of
 * block x (multi.h); its reply goes to client_output. */
struct multi_exec;
void command_exec_one(struct client *, const struct resp_request *,
                      struct multi_exec *x);

#endif
