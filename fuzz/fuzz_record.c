/*
 * The journal's record decoder (lib/record.h) on any payloads, and the
 * replay of what it accepts, as csqd replays its journal at start.
 *
 * A payload that decodes must encode into a record that decodes to the
 * same operation again (the encoding of that is the same bytes); and the
 * memory engine, replaying the operations one after another, must keep
 * every invariant (csq_check) and not crash, whatever the record says:
 * the checksum keeps out damage, not records that csqd never wrote.
 *
 * The input is records as the journal frames them (u32 length, u32
 * checksum, payload), the checksum ignored. Each payload is also read as
 * the Redis module's answer to each operation (check_results).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fuzz.h"
#include "record.h"
#include "result.h"

#define FUZZ_CHECK_MAX 256

static uint64_t
no_clock(void *arg)
{
	(void)arg;
	return 0;
}

/* Decodes a whole record made by csq_record_encode. */
static int
decode_record(const uint8_t *rec, size_t len, struct csq_op *op, uint64_t *now,
              struct csq_record_strings *st)
{
	if (len < CSQ_RECORD_HEADER)
		fuzz_fail("a record of %zu bytes", len);
	return csq_record_decode(rec + CSQ_RECORD_HEADER,
	                         len - CSQ_RECORD_HEADER, op, now, st);
}

/* decode(encode(op)) encodes to the very same bytes. */
static void
check_round_trip(const struct csq_op *op, uint64_t now)
{
	uint8_t one[CSQ_RECORD_MAX], two[CSQ_RECORD_MAX];
	struct csq_record_strings st;
	struct csq_op back;
	uint64_t at;
	size_t n1, n2;

	n1 = csq_record_encode(op, now, one);
	if (n1 > CSQ_RECORD_MAX)
		fuzz_fail("a record of %zu bytes", n1);
	if (decode_record(one, n1, &back, &at, &st) != 0)
		fuzz_fail("an encoded operation %d does not decode",
		          (int)op->code);
	if (back.code != op->code || at != now)
		fuzz_fail("operation %d at %llu came back as %d at %llu",
		          (int)op->code, (unsigned long long)now,
		          (int)back.code, (unsigned long long)at);
	n2 = csq_record_encode(&back, at, two);
	if (n1 != n2 || memcmp(one, two, n1) != 0)
		fuzz_fail("operation %d encodes differently once decoded",
		          (int)op->code);
}

/*
 * The same bytes as the Redis module's answer to an operation of each
 * code (lib/result.h), as csqd reads it: what decodes encodes to the very
 * same bytes, and nothing is read past the end (ASan).
 */
static void
check_results(const uint8_t *p, size_t len)
{
	struct csq_wbuf w = {0};
	struct csq_result res;
	void *owned;
	int code;

	for (code = 0; code < CSQ_OP_COUNT; code++) {
		if (csq_result_decode((enum csq_opcode)code, p, len, &res,
		                      &owned) != 0)
			continue;
		w.len = 0;
		csq_result_encode((enum csq_opcode)code, &res, &w);
		if (w.len != len || memcmp(w.p, p, len) != 0)
			fuzz_fail("a result of operation %d encodes to other "
			          "bytes once decoded",
			          code);
		free(owned);
	}
	csq_wbuf_free(&w);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct csq_record_strings st;
	struct csq_limits limits;
	struct csq_engine *e;
	struct csq_op op;
	struct fuzz_in in;
	const uint8_t *payload;
	char why[FUZZ_CHECK_MAX];
	uint64_t now;
	size_t len;

	csq_limits_default(&limits);
	e = csq_engine_memory_new(&limits, 1, no_clock, NULL, NULL, NULL);
	fuzz_in_init(&in, data, size);
	while ((payload = fuzz_next_record(&in, &len)) != NULL) {
		check_results(payload, len);
		if (len > CSQ_RECORD_MAX - CSQ_RECORD_HEADER)
			continue; /* the journal refuses it unread */
		if (csq_record_decode(payload, len, &op, &now, &st) != 0)
			continue;
		check_round_trip(&op, now);
		csq_engine_memory_replay(e, &op, now);
		if (csq_check(csq_engine_memory_state(e), why, sizeof(why)) !=
		    0)
			fuzz_fail("after replaying operation %d: %s",
			          (int)op.code, why);
	}
	e->ops->free(e);
	return 0;
}
