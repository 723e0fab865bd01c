/*
 * What every command handler checks its arguments with: each helper that
 * finds an argument bad replies Redis's error for it and returns -1, so
 * that a handler stops before it changes anything.
 */
#ifndef CSQD_COMMAND_ARG_H
#define CSQD_COMMAND_ARG_H

#include <stddef.h>
#include <stdint.h>

#include "csq.h"
#include "op_args.h" /* ERR_SYNTAX, ERR_RANGE */

struct client;
struct evbuffer;
struct resp_request;

/* Redis's arity error, for too few arguments, or for more than a
 * command's positional ones when it has no options beside (as LRANGE). */
void command_arg_arity_error(struct evbuffer *, const char *name);
/* How much of argument i an error quotes back: at most NAME_ECHO_MAX. */
int command_arg_echo_len(const struct resp_request *, int i);
/* 1 when argument i is word, in any case. */
int command_arg_is(const struct resp_request *, int i, const char *word);
/* Strict decimal as Redis parses it: no sign but '-', no leading zero. */
int command_arg_parse_int(const char *s, size_t len, int64_t *out);
/* An integer argument within [min, max]; replies the error otherwise. */
int command_arg_int(struct client *, const struct resp_request *, int i,
                    int64_t min, int64_t max, int64_t *out);
/* A valid id; replies invalid's error otherwise. */
int command_arg_id(struct client *, const struct resp_request *, int i,
                   enum csq_status invalid);

#endif
