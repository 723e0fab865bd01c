/*
 * An operation's result as bytes, and back: how the Redis module answers
 * csqd (one string per operation of a call). Which parts a result has
 * follows from its operation's code, which both sides know: the status,
 * n and the event id always; the servicer (HEARTBEAT), the user (ENQUEUE,
 * WHERE, TRANSFER), the counters (STATS), or an array (QUEUE, SERVICERS,
 * QUEUES, ROOMS, QSTATS), only with the status OK.
 */
#ifndef CSQ_RESULT_H
#define CSQ_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "wire.h"

/* The version of this form and of the records csqd sends the Redis
 * module (CSQ.CALL): the module's CSQ.VERSION says it, and csqd refuses
 * a module of another. */
/* 2: servicers' why and counters; 3: SERVICERS and ROOMS by slices */
#define CSQ_MODULE_CALLS 3

/* Zeroes r for an answer of code, but for the servicer, which only a
 * SERVICER answer (HEARTBEAT's) fills and reads: what csq_result_decode
 * and the memory engine do before they fill a result. */
void csq_result_clear(struct csq_result *, enum csq_opcode);

void csq_result_encode(enum csq_opcode, const struct csq_result *,
                       struct csq_wbuf *);
/*
 * Reads a result of code from len bytes into r. Its array, if any, is
 * one allocation that *owned gets and the caller frees (NULL when none).
 * Returns 0, or -1 when the bytes are not a whole result of that code
 * (then nothing is owned).
 */
int csq_result_decode(enum csq_opcode, const uint8_t *, size_t len,
                      struct csq_result *r, void **owned);

#endif
