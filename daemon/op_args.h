/*
 * An operation's arguments from a command's words: the one parser of
 * csqd's commands and the module's text commands (CSQ.*), so that both
 * take the same words and refuse the same ones with the same error. Which
 * words an operation takes follows its args column (lib/op.h).
 */
#ifndef CSQD_OP_ARGS_H
#define CSQD_OP_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "resp.h"

#define ERR_SYNTAX "ERR syntax error"
#define ERR_RANGE  "ERR value is not an integer or out of range"

/* What a parsed operation points into besides the words: HEARTBEAT's
 * queues, NUL-separated. */
struct op_args_buf {
	char queues[CSQ_SERVICER_QUEUES * (CSQ_ID_MAX + 1)];
};

/*
 * Reads the words of req after its first (the command's name) into op,
 * an operation of code, whose strings point into req and buf. max_tier:
 * the highest TIER taken. Returns NULL, or the error to reply (nothing
 * parsed: the words are refused whole).
 */
const char *op_args_parse(enum csq_opcode code, const struct resp_request *,
                          uint32_t max_tier, struct csq_op *op,
                          struct op_args_buf *buf);

/* Strict decimal as Redis parses it: no sign but '-', no leading zero. */
int op_args_parse_int(const char *s, size_t len, int64_t *out);

/* argc against an arity in Redis's way: n exactly, or -n at least. */
int op_args_arity_ok(int arity, int argc);

#endif
