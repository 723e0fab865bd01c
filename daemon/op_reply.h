/*
 * An operation's answer as the protocol writes it (docs/protocol.md):
 * one writer for csqd's replies and the module's text commands' (CSQ.*),
 * so that both say the same, field for field. What it writes follows the
 * operation's reply column (lib/op.h). It writes through a sink: RESP
 * into a client's buffer (command_queue.c) or Redis's reply calls
 * (module_text.c).
 */
#ifndef CSQD_OP_REPLY_H
#define CSQD_OP_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

struct op_reply {
	void *arg;
	/* A map of pairs (RESP2: a flat array of 2 * pairs). */
	void (*map)(void *arg, int64_t pairs);
	void (*array)(void *arg, int64_t n);
	void (*bulk)(void *arg, const char *, size_t len);
	void (*integer)(void *arg, int64_t);
	void (*simple)(void *arg, const char *);
};

/* The reply of a result of code whose status is CSQ_OK. */
void op_reply_write(const struct op_reply *, enum csq_opcode,
                    const struct csq_result *);

/*
 * SERVICERS's rows without the array's length before them: a reply made
 * in slices (issue 37) writes each slice's as it comes, and the length
 * once the last has come.
 */
void op_reply_servicer_rows(const struct op_reply *, const struct csq_result *);

/* STATS's fields, by name, in its order (the admin view's too). */
#define OP_REPLY_STATS_MAX 32
struct op_reply_stat {
	const char *name;
	uint64_t value;
};
size_t op_reply_stats(const struct csq_stats *,
                      struct op_reply_stat out[OP_REPLY_STATS_MAX]);
/* "free", "offered", "assigned", "wrapup": ROOMS's names of the states. */
const char *op_reply_room_state(enum csq_room_state);

#endif
