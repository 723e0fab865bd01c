/* Journal records: the checksum, and every operation through encode and
 * decode unchanged; damaged payloads refused, never crashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "record.h"

static void
test_crc32c(void **state)
{
	uint8_t buf[3 + 64];
	uint32_t crc;
	size_t len, i;
	int k;

	(void)state;
	/* The check value of CRC-32C (Castagnoli). */
	assert_int_equal(csq_crc32c("123456789", 9), 0xe3069283u);
	assert_int_equal(csq_crc32c("", 0), 0);
	/* Eight bytes a step and the rest one at a time, at every length
	 * below 64 from an odd address: as the checksum a bit at a time. */
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 151 + 7);
	for (len = 0; len < 64; len++) {
		crc = 0xffffffffu;
		for (i = 0; i < len; i++)
			for (crc ^= buf[3 + i], k = 0; k < 8; k++)
				crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u
				              : crc >> 1;
		assert_int_equal(csq_crc32c(buf + 3, len), crc ^ 0xffffffffu);
	}
}

/* The sums of RFC 3720 (iSCSI), B.4: 32 bytes of zeros, of ones,
 * ascending and descending; by csq_crc32c and by each of its paths. */
static void
test_crc32c_vectors(void **state)
{
	uint8_t zeros[32], ones[32], up[32], down[32];
	uint32_t (*const path[])(const void *, size_t) = {
	    csq_crc32c, csq_crc32c_table, csq_crc32c_hw};
	size_t i, k, paths = csq_crc32c_hw_ok() ? 3 : 2;

	(void)state;
	for (i = 0; i < 32; i++) {
		zeros[i] = 0;
		ones[i] = 0xff;
		up[i] = (uint8_t)i;
		down[i] = (uint8_t)(31 - i);
	}
	for (k = 0; k < paths; k++) {
		assert_int_equal(path[k]("123456789", 9), 0xe3069283u);
		assert_int_equal(path[k]("", 0), 0);
		assert_int_equal(path[k](zeros, 32), 0x8a9136aau);
		assert_int_equal(path[k](ones, 32), 0x62a8ab43u);
		assert_int_equal(path[k](up, 32), 0x46dd794eu);
		assert_int_equal(path[k](down, 32), 0x113fdb5cu);
	}
}

/* The CPU's crc32 path against the table's: random bytes, every length
 * 0..64 from each of eight alignments (the 8- and 4-byte steps and the
 * tail meet at every split), then large buffers of odd lengths. A CPU
 * without SSE4.2 has only the table: the test says so and skips. */
static void
test_crc32c_paths_agree(void **state)
{
	static uint8_t buf[8 + 70000];
	static const size_t large[] = {255,  256,   1000, 4095,
	                               4096, 65537, 70000};
	uint64_t x = 0x9e3779b97f4a7c15u;
	uint32_t sum;
	size_t i, len, off;

	(void)state;
	if (!csq_crc32c_hw_ok()) {
		print_message("no SSE4.2 here: only the table's path runs\n");
		skip();
	}
	for (i = 0; i < sizeof(buf); i++) { /* xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)(x >> 24);
	}
	for (off = 0; off < 8; off++)
		for (len = 0; len <= 64; len++)
			assert_int_equal(csq_crc32c_hw(buf + off, len),
			                 csq_crc32c_table(buf + off, len));
	for (i = 0; i < sizeof(large) / sizeof(large[0]); i++)
		for (off = 0; off < 8; off += 3)
			assert_int_equal(csq_crc32c_hw(buf + off, large[i]),
			                 csq_crc32c_table(buf + off, large[i]));
	/* One bit changed anywhere changes the sum, alike on both paths
	 * (a CRC catches every error of one bit). */
	sum = csq_crc32c(buf, 64);
	for (i = 0; i < 64; i++) {
		buf[i] ^= 0x10;
		assert_int_equal(csq_crc32c_hw(buf, 64),
		                 csq_crc32c_table(buf, 64));
		assert_int_not_equal(csq_crc32c(buf, 64), sum);
		buf[i] ^= 0x10;
	}
}

/* The payload of a HEARTBEAT record before routing: opcode, time, the
 * servicer, flags, capacity, TTL, the count of queues and their bytes. */
#define HEARTBEAT_LEGACY(sid, qbytes)                                          \
	(1 + 8 + 1 + strlen(sid) + 1 + 4 + 4 + 1 + (qbytes))

/*
 * Encodes op, decodes it back, and returns the decoded copy. legacy: the
 * payload length of the form csq wrote before the record grew a tail (a
 * journal written then must still replay), 0 when there is none.
 */
/* The bytes skills added at the end of op's record (its form before
 * skills is the record without them), 0 for none. */
/* A POLICY's relax steps (the last part of the skills tail). */
static size_t
relax_tail(const struct csq_op *op)
{
	size_t n = 1;
	uint32_t i;

	for (i = 0; i < op->policy.nrelax; i++)
		n += 4 + 1 + 1 + 2 + strlen(op->policy.relax[i].drop);
	return n;
}

/* A POLICY's nobody tail (section 3c), after the relax steps. */
static size_t
nobody_tail(const struct csq_op *op)
{
	const struct csq_nobody_policy *b = &op->policy.nobody;

	if (op->code != CSQ_OP_POLICY || op->count == 0)
		return 0;
	return 1 + (b->on ? 1 + 1 + 1 + 4 + 1 + strlen(b->fallback) + 1 +
	                        strlen(b->move_to)
	                  : 0);
}

/* A POLICY's business hours (its last tail, after nobody's): a 0
 * without them. */
static size_t
hours_tail(const struct csq_op *op)
{
	return op->code == CSQ_OP_POLICY && op->count > 0 &&
	               !op->policy.hours.on
	           ? 1
	           : 0;
}

static size_t
skills_tail(const struct csq_op *op)
{
	switch (op->code) {
	case CSQ_OP_ENQUEUE:
		return op->enqueue.has_needs ? 3 + strlen(op->enqueue.needs)
		                             : 1;
	case CSQ_OP_TRANSFER:
		return op->transfer.has_needs ? 3 + strlen(op->transfer.needs)
		                              : 1;
	case CSQ_OP_POLICY:
		return op->count > 0 ? 1 + relax_tail(op) + nobody_tail(op) +
		                           hours_tail(op)
		                     : 0;
	default:
		return 0;
	}
}

static void
round_trip_legacy(const struct csq_op *op, uint64_t now, struct csq_op *back,
                  struct csq_record_strings *st, size_t legacy)
{
	size_t tail = skills_tail(op);
	size_t hours = hours_tail(op);
	/* Before business hours, nobody's tail was the last: both go. */
	size_t nobody = nobody_tail(op) != 0 ? nobody_tail(op) + hours : 0;
	size_t relax = op->code == CSQ_OP_POLICY && op->count > 0
	                   ? relax_tail(op) + nobody
	                   : 0;
	/* LIMITS before max_queues: without its 8 bytes. */
	size_t maxq = op->code == CSQ_OP_LIMITS ? 8 : 0;
	uint8_t buf[CSQ_RECORD_MAX];
	uint64_t got;
	uint32_t len;
	size_t n = csq_record_encode(op, now, buf);

	assert_true(n > CSQ_RECORD_HEADER && n <= CSQ_RECORD_MAX);
	len = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 |
	      (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24;
	assert_int_equal(len, n - CSQ_RECORD_HEADER);
	assert_int_equal(
	    csq_record_decode(buf + CSQ_RECORD_HEADER, len, back, &got, st), 0);
	assert_int_equal(got, now);
	assert_int_equal(back->code, op->code);
	/* Every strict prefix is refused, but the legacy forms: before
	 * policies, and before skills. */
	while (len-- > 0)
		assert_int_equal(
		    csq_record_decode(buf + CSQ_RECORD_HEADER, len, back, &got,
		                      st),
		    (legacy != 0 && len == legacy) ||
		            (tail != 0 &&
		             len == n - CSQ_RECORD_HEADER - tail) ||
		            (relax != 0 &&
		             len == n - CSQ_RECORD_HEADER - relax) ||
		            (maxq != 0 &&
		             len == n - CSQ_RECORD_HEADER - maxq) ||
		            (nobody != 0 &&
		             len == n - CSQ_RECORD_HEADER - nobody) ||
		            (hours != 0 && len == n - CSQ_RECORD_HEADER - hours)
		        ? 0
		        : -1);
	assert_int_equal(csq_record_decode(buf + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, back, &got,
	                                   st),
	                 0);
}

static void
round_trip(const struct csq_op *op, uint64_t now, struct csq_op *back,
           struct csq_record_strings *st)
{
	round_trip_legacy(op, now, back, st, 0);
}

/* TRANSFER's before policies: opcode, time, room, queue. */
#define TRANSFER_LEGACY(room, queue) (1 + 8 + 1 + (room) + 1 + (queue))
/* ENQUEUE's before policies: opcode, time, user, flags, queue, tier, TTL. */
#define ENQUEUE_LEGACY(user, queue)                                            \
	(1 + 8 + 1 + (user) + 1 + 1 + (queue) + 4 + 4)

/* The payload of a LIMITS record before routing: opcode, time, 4 limits. */
#define LIMITS_LEGACY (1 + 8 + 4 + 4 + 4 + 8)

static void
test_every_operation(void **state)
{
	static const char q64[] = "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"
	                          "qqqqqqqqqqqqqqqqqqqq";
	const enum csq_opcode simple[] = {
	    CSQ_OP_PAUSE, CSQ_OP_RESUME, CSQ_OP_LOGOUT,  CSQ_OP_RELEASE,
	    CSQ_OP_LEAVE, CSQ_OP_ACCEPT, CSQ_OP_DECLINE, CSQ_OP_READY};
	struct csq_record_strings st;
	struct csq_op op, back;
	size_t i;

	(void)state;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat.servicer = op.id = "agent-1";
	op.heartbeat.has_capacity = op.heartbeat.has_queues = 1;
	op.heartbeat.capacity = 1000;
	op.heartbeat.nqueues = CSQ_SERVICER_QUEUES;
	for (i = 0; i < CSQ_SERVICER_QUEUES; i++)
		op.heartbeat.queues[i] = q64; /* the largest record */
	round_trip_legacy(
	    &op, UINT64_MAX, &back, &st,
	    HEARTBEAT_LEGACY("agent-1", CSQ_SERVICER_QUEUES * 65));
	assert_string_equal(back.heartbeat.servicer, "agent-1");
	assert_int_equal(back.heartbeat.has_capacity, 1);
	assert_int_equal(back.heartbeat.has_ttl, 0);
	assert_int_equal(back.heartbeat.capacity, 1000);
	assert_int_equal(back.heartbeat.nqueues, CSQ_SERVICER_QUEUES);
	assert_string_equal(back.heartbeat.queues[31], q64);
	assert_int_equal(back.heartbeat.has_offer, 0);
	assert_int_equal(back.heartbeat.has_wrapup, 0);
	op.heartbeat.has_offer = op.heartbeat.has_wrapup = 1;
	op.heartbeat.offer_s = CSQ_OFFER_MAX;
	op.heartbeat.wrapup_s = CSQ_WRAPUP_MAX;
	round_trip(&op, 7, &back, &st);
	assert_int_equal(back.heartbeat.has_offer, 1);
	assert_int_equal(back.heartbeat.has_wrapup, 1);
	assert_int_equal(back.heartbeat.offer_s, CSQ_OFFER_MAX);
	assert_int_equal(back.heartbeat.wrapup_s, CSQ_WRAPUP_MAX);
	/* Without OFFER and WRAPUP, the form of before routing still
	 * reads: the same record less its last 8 bytes. */
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat.servicer = op.id = "s";
	op.heartbeat.has_ttl = 1;
	op.heartbeat.ttl_s = 5;
	round_trip_legacy(&op, 8, &back, &st, HEARTBEAT_LEGACY("s", 0));
	assert_int_equal(back.heartbeat.ttl_s, 5);

	/* TRANSFER and ENQUEUE before policies: no PREFER tail. */
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_TRANSFER;
	op.transfer.room = op.id = "agent-1/999";
	op.transfer.queue = q64;
	round_trip_legacy(&op, 9, &back, &st, TRANSFER_LEGACY(11, 64));
	assert_string_equal(back.transfer.room, "agent-1/999");
	assert_string_equal(back.transfer.queue, q64);
	assert_int_equal(back.transfer.prefer.has_prefer, 0);
	op.transfer.prefer.has_prefer = 1;
	op.transfer.prefer.servicer = q64;
	op.transfer.prefer.seconds = CSQ_PREFER_MAX;
	round_trip_legacy(&op, 9, &back, &st, TRANSFER_LEGACY(11, 64));
	assert_int_equal(back.transfer.prefer.has_prefer, 1);
	assert_string_equal(back.transfer.prefer.servicer, q64);
	assert_int_equal(back.transfer.prefer.seconds, CSQ_PREFER_MAX);

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_ENQUEUE;
	op.enqueue.user = op.id = "u@x";
	op.enqueue.has_tier = op.enqueue.has_ttl = 1;
	op.enqueue.tier = 15;
	op.enqueue.ttl_s = 86400;
	round_trip_legacy(&op, 1700000000000ULL, &back, &st,
	                  ENQUEUE_LEGACY(3, 0));
	assert_string_equal(back.enqueue.user, "u@x");
	assert_int_equal(back.enqueue.has_queue, 0);
	assert_int_equal(back.enqueue.tier, 15);
	assert_int_equal(back.enqueue.ttl_s, 86400);
	op.enqueue.has_queue = 1;
	op.enqueue.queue = "sales";
	op.enqueue.prefer.has_prefer = 1;
	op.enqueue.prefer.servicer = "alice";
	op.enqueue.prefer.seconds = 1;
	round_trip_legacy(&op, 1, &back, &st, ENQUEUE_LEGACY(3, 5));
	assert_string_equal(back.enqueue.queue, "sales");
	assert_string_equal(back.enqueue.prefer.servicer, "alice");
	assert_int_equal(back.enqueue.prefer.seconds, 1);

	/* A policy of a set, with every field; then an empty set. */
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	op.offset = CSQ_POLICIES_MAX - 1;
	op.count = CSQ_POLICIES_MAX;
	strcpy(op.policy.name, q64);
	op.policy.has_max_length = op.policy.has_strategy = 1;
	op.policy.has_aging_max_tier = 1;
	op.policy.max_length = CSQ_QUEUE_LENGTH_MAX;
	op.policy.strategy = CSQ_STRATEGY_LEAST_BUSY;
	op.policy.overflow_after_s = CSQ_POLICY_SECONDS_MAX;
	strcpy(op.policy.overflow_to, "general");
	op.policy.aging_every_s = 1;
	op.policy.aging_max_tier = CSQ_TIER_LIMIT;
	op.policy.service_level_s = 20;
	round_trip(&op, 10, &back, &st);
	assert_int_equal(back.offset, CSQ_POLICIES_MAX - 1);
	assert_int_equal(back.count, CSQ_POLICIES_MAX);
	assert_memory_equal(&back.policy, &op.policy, sizeof(op.policy));
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	round_trip(&op, 11, &back, &st);
	assert_int_equal(back.count, 0);

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_TOUCH;
	op.id = "u1";
	op.ttl_s = -1;
	round_trip(&op, 2, &back, &st);
	assert_int_equal(back.ttl_s, -1);
	op.ttl_s = 0;
	round_trip(&op, 2, &back, &st);
	assert_int_equal(back.ttl_s, 0);

	for (i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
		memset(&op, 0, sizeof(op));
		op.code = simple[i];
		op.id = "s1/999";
		round_trip(&op, 3, &back, &st);
		assert_string_equal(back.id, "s1/999");
	}

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_LIMITS;
	csq_limits_default(&op.limits);
	op.limits.max_queue_length = 100000000;
	op.limits.offer_timeout_s = CSQ_OFFER_MAX;
	op.limits.offer_max_missed = CSQ_MISSED_MAX;
	op.limits.offer_retry_s = 0;
	op.limits.wrapup_s = CSQ_WRAPUP_MAX;
	op.limits.strategy = CSQ_STRATEGY_LEAST_BUSY;
	op.limits.max_queues = CSQ_QUEUES_LIMIT;
	round_trip_legacy(&op, 4, &back, &st, LIMITS_LEGACY);
	assert_memory_equal(&back.limits, &op.limits, sizeof(op.limits));
	op.code = CSQ_OP_EXPIRE;
	round_trip(&op, 5, &back, &st);
	op.code = CSQ_OP_REARM;
	round_trip(&op, 6, &back, &st);
}

/* A LIMITS record of a journal written before routing: its defaults. */
static void
test_legacy_limits(void **state)
{
	struct csq_record_strings st;
	struct csq_limits def;
	struct csq_op op;
	uint8_t buf[CSQ_RECORD_MAX];
	uint64_t now;

	(void)state;
	memset(&op, 0, sizeof(op));
	memset(&def, 0, sizeof(def));
	op.code = CSQ_OP_LIMITS;
	csq_limits_default(&op.limits);
	op.limits.offer_timeout_s = 30;
	op.limits.offer_retry_s = 1;
	op.limits.strategy = CSQ_STRATEGY_LEAST_BUSY;
	csq_record_encode(&op, 9, buf);
	assert_int_equal(csq_record_decode(buf + CSQ_RECORD_HEADER,
	                                   LIMITS_LEGACY, &op, &now, &st),
	                 0);
	csq_limits_default(&def);
	assert_memory_equal(&op.limits, &def, sizeof(def));
	/* One written before max_queues: its default. */
	op.limits.max_queues = 7;
	csq_record_encode(&op, 9, buf);
	assert_int_equal(csq_record_decode(buf + CSQ_RECORD_HEADER,
	                                   LIMITS_LEGACY + 17, &op, &now, &st),
	                 0);
	assert_int_equal(op.limits.max_queues, CSQ_DEFAULT_MAX_QUEUES);
	/* A strategy csq does not know. */
	buf[CSQ_RECORD_HEADER + LIMITS_LEGACY + 16] = 2;
	assert_int_equal(csq_record_decode(buf + CSQ_RECORD_HEADER,
	                                   LIMITS_LEGACY + 17, &op, &now, &st),
	                 -1);
}

/* Garbage is no record. (Reads are, since the Redis module takes its
 * calls as records: test_result.c.) */
static void
test_refused(void **state)
{
	struct csq_record_strings st;
	struct csq_op op;
	uint8_t junk[64];
	uint64_t now;
	size_t i;

	(void)state;
	memset(junk, 0, sizeof(junk));
	junk[0] = CSQ_OP_STATS;
	assert_int_equal(csq_record_decode(junk, 9, &op, &now, &st), 0);
	/* "Every queue" is a flag of 0 or 1. */
	junk[0] = CSQ_OP_QUEUES;
	junk[9] = 2;
	assert_int_equal(csq_record_decode(junk, 10, &op, &now, &st), -1);
	junk[9] = 0;
	junk[0] = 200;
	assert_int_equal(csq_record_decode(junk, 9, &op, &now, &st), -1);
	/* A string length past the end. */
	junk[0] = CSQ_OP_LEAVE;
	junk[9] = 60;
	assert_int_equal(csq_record_decode(junk, 12, &op, &now, &st), -1);
	/* Every single-byte payload and lengths of random bytes. */
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	for (i = 0; i <= sizeof(junk); i++)
		(void)csq_record_decode(junk, i, &op, &now, &st);
}

/*
 * csq_record_decode does not zero a HEARTBEAT's 256 B of queue pointers
 * (only a HEARTBEAT reads them): get_heartbeat writes them all, the ones
 * past nqueues NULL. Tried to break it: a HEARTBEAT of 2 queues decoded
 * into an op of garbage, then one of none, then a LEAVE between them.
 */
static void
test_heartbeat_queues_written(void **state)
{
	struct csq_record_strings st;
	struct csq_op op, back;
	uint8_t buf[CSQ_RECORD_MAX];
	uint64_t now;
	size_t n, i;

	(void)state;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat.servicer = op.id = "s";
	op.heartbeat.has_queues = 1;
	op.heartbeat.nqueues = 2;
	op.heartbeat.queues[0] = "q1";
	op.heartbeat.queues[1] = "q2";
	n = csq_record_encode(&op, 5, buf);
	memset(&back, 0xa5, sizeof(back));
	assert_int_equal(csq_record_decode(buf + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &now,
	                                   &st),
	                 0);
	assert_string_equal(back.heartbeat.queues[0], "q1");
	assert_string_equal(back.heartbeat.queues[1], "q2");
	for (i = 2; i < CSQ_SERVICER_QUEUES; i++)
		assert_null(back.heartbeat.queues[i]);
	assert_null(back.after);
	assert_int_equal(back.ttl_s, -1);
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_LEAVE;
	op.id = "u";
	n = csq_record_encode(&op, 6, buf);
	assert_int_equal(csq_record_decode(buf + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &now,
	                                   &st),
	                 0);
	assert_string_equal(back.id, "u");
	assert_null(back.heartbeat.servicer);
	assert_int_equal(back.heartbeat.nqueues, 0);
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat.servicer = op.id = "s";
	n = csq_record_encode(&op, 7, buf);
	memset(&back, 0xa5, sizeof(back));
	assert_int_equal(csq_record_decode(buf + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &now,
	                                   &st),
	                 0);
	assert_int_equal(back.heartbeat.nqueues, 0);
	for (i = 0; i < CSQ_SERVICER_QUEUES; i++)
		assert_null(back.heartbeat.queues[i]);
}

/*
 * LIMITS that no configuration passes are not records csqd wrote: a
 * max_tier of 16, replayed, made order keys past their bits (found by
 * fuzz/fuzz_record). The decoder refuses them as damage.
 */
static void
test_limits_out_of_range(void **state)
{
	uint8_t rec[CSQ_RECORD_MAX];
	struct csq_record_strings st;
	struct csq_op op, back;
	uint64_t now;
	size_t n;
	int i;

	(void)state;
	for (i = 0; i < 7; i++) {
		memset(&op, 0, sizeof(op));
		op.code = CSQ_OP_LIMITS;
		csq_limits_default(&op.limits);
		switch (i) {
		case 1:
			op.limits.max_tier = CSQ_TIER_LIMIT + 1;
			break;
		case 2:
			op.limits.servicer_ttl_s = 0;
			break;
		case 3:
			op.limits.user_ttl_s = CSQ_TTL_MAX + 1;
			break;
		case 4:
			op.limits.max_queue_length = 0;
			break;
		case 5:
			op.limits.max_queues = 0;
			break;
		case 6:
			op.limits.max_queues = CSQ_QUEUES_LIMIT + 1;
			break;
		}
		n = csq_record_encode(&op, 7, rec);
		assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
		                                   n - CSQ_RECORD_HEADER, &back,
		                                   &now, &st),
		                 i == 0 ? 0 : -1);
	}
}

/* A POLICY record that csqd never writes: refused as damage. */
static void
test_policy_out_of_range(void **state)
{
	uint8_t rec[CSQ_RECORD_MAX];
	struct csq_record_strings st;
	struct csq_op op, back;
	uint64_t now;
	size_t n;
	int i;

	(void)state;
	for (i = 0; i < 5; i++) {
		memset(&op, 0, sizeof(op));
		op.code = CSQ_OP_POLICY;
		op.count = 2;
		strcpy(op.policy.name, "vip");
		switch (i) {
		case 1:
			op.offset = 2; /* past the set */
			break;
		case 2:
			op.count = CSQ_POLICIES_MAX + 1;
			break;
		case 3:
			op.policy.strategy = (enum csq_strategy)2;
			break;
		case 4:
			op.policy.aging_max_tier = CSQ_TIER_LIMIT + 1;
			break;
		}
		n = csq_record_encode(&op, 7, rec);
		assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
		                                   n - CSQ_RECORD_HEADER, &back,
		                                   &now, &st),
		                 i == 0 ? 0 : -1);
	}
}

/* A snapshot item through its record and back. */
static void
snap_round_trip(const struct csq_snap_item *it, struct csq_snap_item *back)
{
	uint8_t rec[CSQ_RECORD_MAX];
	size_t n = csq_record_encode_snap(it, rec);

	assert_true(n <= CSQ_RECORD_MAX);
	assert_int_equal(
	    csq_record_is_snap(rec + CSQ_RECORD_HEADER, n - CSQ_RECORD_HEADER),
	    1);
	assert_int_equal(csq_record_decode_snap(rec + CSQ_RECORD_HEADER,
	                                        n - CSQ_RECORD_HEADER, back),
	                 0);
	assert_int_equal(back->kind, it->kind);
}

/* The items that policies added: a user's wait, a queue, its ring. */
static void
test_snap_policy_items(void **state)
{
	static struct csq_snap_item it, back;
	uint8_t rec[CSQ_RECORD_MAX];
	size_t n;
	uint32_t i;

	(void)state;
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_USER;
	strcpy(it.u.user.id, "u1");
	strcpy(it.u.user.queue, "q");
	it.u.user.state = CSQ_USER_WAITING;
	it.u.user.flags = 7;
	it.u.user.has_wait = 1;
	it.u.user.clock_kind = 7;
	it.u.user.joined_ms = 1700000000000ULL;
	it.u.user.clock = 1700000060000ULL;
	it.u.user.clock_tie = 42;
	strcpy(it.u.user.prefer, "alice");
	it.u.user.prefer_s = CSQ_PREFER_MAX;
	snap_round_trip(&it, &back);
	assert_memory_equal(&back.u.user, &it.u.user, sizeof(it.u.user));

	/* An assigned user whose room was an offer first: the offer's
	 * time (taken_ms) travels beside the assignment's (since_ms). */
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_USER;
	strcpy(it.u.user.id, "u2");
	strcpy(it.u.user.queue, "q");
	strcpy(it.u.user.servicer, "s1");
	it.u.user.state = CSQ_USER_ASSIGNED;
	it.u.user.room = 3;
	it.u.user.taken_ms = 1700000000000ULL;
	it.u.user.since_ms = 1700000012345ULL;
	snap_round_trip(&it, &back);
	assert_memory_equal(&back.u.user, &it.u.user, sizeof(it.u.user));
	/* A snapshot written before taken_ms: the room was taken at its
	 * since_ms. */
	n = csq_record_encode_snap(&it, rec);
	assert_int_equal(
	    csq_record_decode_snap(rec + CSQ_RECORD_HEADER,
	                           n - CSQ_RECORD_HEADER - 8 - 2 - 1, &back),
	    0);
	assert_int_equal(back.u.user.taken_ms, it.u.user.since_ms);

	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_QUEUE;
	strcpy(it.u.queue.name, "vip");
	it.u.queue.matched = 1;
	it.u.queue.abandoned_leave = 2;
	it.u.queue.abandoned_timeout = 3;
	it.u.queue.overflowed = 4;
	it.u.queue.wait_ms_sum = UINT64_MAX;
	it.u.queue.ring_next = CSQ_OUTCOMES - 1;
	it.u.queue.hold_ms = 5;
	it.u.queue.holds = 6;
	it.u.queue.wait_area_ms = 7;
	it.u.queue.abandons = 8;
	for (i = 0; i <= CSQ_TIER_LIMIT; i++) {
		it.u.queue.last_arrival_ms[i] = 100 + i;
		it.u.queue.gap_ms[i] = 200 + i;
		it.u.queue.arrivals[i] = 300 + i;
	}
	snap_round_trip(&it, &back);
	assert_memory_equal(&back.u.queue, &it.u.queue, sizeof(it.u.queue));

	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_RING;
	strcpy(it.u.ring.queue, "vip");
	it.u.ring.offset = 500;
	it.u.ring.n = CSQ_SNAP_RING_CHUNK;
	for (i = 0; i < CSQ_SNAP_RING_CHUNK; i++)
		it.u.ring.v[i] = i % 2 ? UINT32_MAX : i * 1000;
	snap_round_trip(&it, &back);
	assert_memory_equal(&back.u.ring, &it.u.ring, sizeof(it.u.ring));
}

/*
 * Skills (protocol.md 3c): SKILLS, NEEDS and skill_order travel in their
 * records, the largest lists too, and the snapshot's items carry a
 * servicer's skills and a user's needs; a record cut before them reads
 * as one written before skills.
 */
static void
test_skills_records(void **state)
{
	static struct csq_snap_item it, back;
	static char big[CSQ_SKILLS_TEXT_MAX + 1];
	struct csq_record_strings st;
	struct csq_op op, bop;
	uint8_t rec[CSQ_RECORD_MAX];
	uint64_t got;
	size_t n, off = 0;
	uint32_t i;

	(void)state;
	for (i = 0; i < CSQ_SERVICER_SKILLS; i++)
		off += (size_t)snprintf(big + off, sizeof(big) - off,
		                        "%s%032u:100", i ? "," : "", i);
	assert_int_equal(off, CSQ_SKILLS_TEXT_MAX - 1); /* the longest */
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat.servicer = op.id = "agent-1";
	op.heartbeat.has_skills = 1;
	op.heartbeat.skills = big;
	round_trip(&op, 7, &bop, &st);
	assert_int_equal(bop.heartbeat.has_skills, 1);
	assert_string_equal(bop.heartbeat.skills, big);
	op.heartbeat.skills = "";
	round_trip(&op, 7, &bop, &st);
	assert_string_equal(bop.heartbeat.skills, "");

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_ENQUEUE;
	op.enqueue.user = op.id = "u1";
	op.enqueue.has_needs = 1;
	op.enqueue.needs = "de,billing:2";
	round_trip_legacy(&op, 8, &bop, &st, ENQUEUE_LEGACY(2, 0));
	assert_int_equal(bop.enqueue.has_needs, 1);
	assert_string_equal(bop.enqueue.needs, "de,billing:2");
	op.enqueue.has_needs = 0;
	round_trip_legacy(&op, 8, &bop, &st, ENQUEUE_LEGACY(2, 0));
	assert_int_equal(bop.enqueue.has_needs, 0);

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_TRANSFER;
	op.transfer.room = op.id = "s1/0";
	op.transfer.queue = "q";
	op.transfer.has_needs = 1;
	op.transfer.needs = "";
	round_trip_legacy(&op, 9, &bop, &st, TRANSFER_LEGACY(4, 1));
	assert_int_equal(bop.transfer.has_needs, 1);
	assert_string_equal(bop.transfer.needs, "");

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	op.count = 1;
	strcpy(op.policy.name, "support");
	op.policy.skill_order = CSQ_SKILL_ORDER_LEVEL;
	op.policy.nrelax = CSQ_RELAX_STEPS;
	for (i = 0; i < CSQ_RELAX_STEPS; i++) {
		op.policy.relax[i].after_s = CSQ_POLICY_SECONDS_MAX - 8 + i;
		op.policy.relax[i].lower = i % 2 ? CSQ_SKILL_LEVEL_MAX : 0;
		op.policy.relax[i].drop_all = i == CSQ_RELAX_STEPS - 1;
		/* The longest drop: 99 bytes, "a,b,c,d,e,f,g,hhh...h". Built
		 * in place: an snprintf of a longer literal is refused by
		 * -Werror=format-truncation at -O2. */
		if (i < CSQ_RELAX_STEPS - 1) {
			char *d = op.policy.relax[i].drop;

			memset(d, 'h', CSQ_RELAX_DROP_MAX - 1);
			memcpy(d, "a,b,c,d,e,f,g,", 14);
			d[CSQ_RELAX_DROP_MAX - 1] = '\0';
		}
		assert_int_equal(i == CSQ_RELAX_STEPS - 1 ||
		                     strlen(op.policy.relax[i].drop) ==
		                         CSQ_RELAX_DROP_MAX - 1,
		                 1);
	}
	round_trip(&op, 10, &bop, &st);
	assert_memory_equal(&bop.policy, &op.policy, sizeof(op.policy));
	op.policy.nrelax = 0;
	memset(op.policy.relax, 0, sizeof(op.policy.relax));
	/* A skill_order no csqd writes is no record. */
	n = csq_record_encode(&op, 10, rec);
	rec[n - 3] = 2; /* skill_order, before nrelax and nobody */
	assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &bop, &got,
	                                   &st),
	                 -1);

	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_SERVICER;
	strcpy(it.u.servicer.id, "s1");
	it.u.servicer.nqueues = 1;
	strcpy(it.u.servicer.queues[0], "q");
	strcpy(it.u.servicer.skills, big);
	it.u.servicer.handled = 7;
	it.u.servicer.handle_ms = UINT64_MAX;
	snap_round_trip(&it, &back);
	assert_memory_equal(&back.u.servicer, &it.u.servicer,
	                    sizeof(it.u.servicer));
	/* Written before the counters (issue 38): none, skills kept. */
	n = csq_record_encode_snap(&it, rec);
	assert_int_equal(csq_record_decode_snap(rec + CSQ_RECORD_HEADER,
	                                        n - CSQ_RECORD_HEADER - 16,
	                                        &back),
	                 0);
	assert_string_equal(back.u.servicer.skills, big);
	assert_int_equal(back.u.servicer.handled, 0);
	assert_int_equal(back.u.servicer.handle_ms, 0);
	/* Written before skills: none. */
	assert_int_equal(
	    csq_record_decode_snap(rec + CSQ_RECORD_HEADER,
	                           n - CSQ_RECORD_HEADER - 16 - 2 - strlen(big),
	                           &back),
	    0);
	assert_string_equal(back.u.servicer.skills, "");

	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_USER;
	strcpy(it.u.user.id, "u1");
	strcpy(it.u.user.queue, "q");
	it.u.user.state = CSQ_USER_WAITING;
	strcpy(it.u.user.needs, "billing:2,de:1");
	it.u.user.has_wait = 1;
	it.u.user.relax_step = CSQ_RELAX_STEPS;
	snap_round_trip(&it, &back);
	assert_memory_equal(&back.u.user, &it.u.user, sizeof(it.u.user));
}

/* QUEUES, QSTATS, SERVICERS and ROOMS of a slice (issue 37): the cursor
 * and the count go with them to the Redis module; a count of 0 is none. */
static void
test_slices(void **state)
{
	const enum csq_opcode codes[] = {CSQ_OP_QUEUES, CSQ_OP_QSTATS,
	                                 CSQ_OP_SERVICERS, CSQ_OP_ROOMS};
	struct csq_record_strings st;
	struct csq_op op, back;
	uint8_t rec[CSQ_RECORD_MAX];
	uint64_t now;
	size_t i, n;

	(void)state;
	for (i = 0; i < 4; i++) {
		memset(&op, 0, sizeof(op));
		op.code = codes[i];
		op.after = "q0999";
		op.count = 1000;
		round_trip(&op, 9, &back, &st);
		assert_null(back.id);
		assert_string_equal(back.after, "q0999");
		assert_int_equal(back.count, 1000);
		op.after = NULL; /* the first slice */
		round_trip(&op, 9, &back, &st);
		assert_string_equal(back.after, "");
		op.count = 0; /* every queue at once, as before */
		round_trip(&op, 9, &back, &st);
		assert_null(back.after);
		assert_int_equal(back.count, 0);
	}
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_QUEUES;
	op.after = "a";
	op.count = 1;
	n = csq_record_encode(&op, 9, rec);
	rec[CSQ_RECORD_HEADER + 9] = 3; /* an id flag without its id */
	assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &now,
	                                   &st),
	                 -1);
	op.code = CSQ_OP_ROOMS; /* no slice: the count is not sent */
	op.count = 0;
	n = csq_record_encode(&op, 9, rec);
	assert_int_equal(n - CSQ_RECORD_HEADER, 10);
	rec[CSQ_RECORD_HEADER + 9] = 2;
	assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &now,
	                                   &st),
	                 -1);
	/* SERVICERS has no id: one is never written, and one read is
	 * refused (the ROOMS form of the same bytes is a servicer's). */
	op.code = CSQ_OP_ROOMS;
	op.id = "s1";
	op.after = "a";
	op.count = 5;
	n = csq_record_encode(&op, 9, rec);
	rec[CSQ_RECORD_HEADER] = CSQ_OP_SERVICERS;
	assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &now,
	                                   &st),
	                 -1);
	op.code = CSQ_OP_SERVICERS;
	round_trip(&op, 9, &back, &st);
	assert_null(back.id);
	assert_string_equal(back.after, "a");
}

/* Nobody there (protocol.md 3c): a POLICY's tail and a queue item's,
 * each read back whole, each optional (written before: none). */
static void
test_nobody_records(void **state)
{
	struct csq_record_strings st;
	struct csq_snap_item it, back;
	struct csq_op op, bop;
	uint8_t rec[CSQ_RECORD_MAX];
	uint64_t got;
	size_t n;

	(void)state;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	op.count = 1;
	strcpy(op.policy.name, "support");
	op.policy.nobody.on = 1;
	op.policy.nobody.counts = CSQ_NOBODY_READY;
	op.policy.nobody.when_nobody = CSQ_NOBODY_FALLBACK;
	op.policy.nobody.at_nobody = CSQ_NOBODY_MOVE;
	op.policy.nobody.grace_s = CSQ_POLICY_SECONDS_MAX;
	memset(op.policy.nobody.fallback, 'f', CSQ_ID_MAX);
	strcpy(op.policy.nobody.move_to, "general");
	round_trip(&op, 10, &bop, &st);
	assert_memory_equal(&bop.policy, &op.policy, sizeof(op.policy));
	/* An on that is not 0 or 1 is no record. */
	n = csq_record_encode(&op, 10, rec);
	rec[n - 1 /* hours' 0 */ -
	    (4 + 1 + CSQ_ID_MAX + 1 + strlen("general")) - 4] = 2;
	assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &bop, &got,
	                                   &st),
	                 -1);

	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_QUEUE;
	strcpy(it.u.queue.name, "support");
	it.u.queue.has_nobody = 1;
	it.u.queue.nobody_fired = 0;
	it.u.queue.nobody_since = 1700000000000ULL;
	it.u.queue.nobody_grace = 1700000030000ULL;
	it.u.queue.nobody_grace_tie = 77;
	snap_round_trip(&it, &back);
	assert_memory_equal(&back.u.queue, &it.u.queue, sizeof(it.u.queue));
	/* Written before nobody policies: none. */
	n = csq_record_encode_snap(&it, rec);
	assert_int_equal(csq_record_decode_snap(
	                     rec + CSQ_RECORD_HEADER,
	                     n - CSQ_RECORD_HEADER - (1 + 1 + 3 * 8), &back),
	                 0);
	assert_int_equal(back.u.queue.has_nobody, 0);
	/* With business hours after it: both read back; written before
	 * hours (nobody's tail the last), none. */
	it.u.queue.has_hours = 1;
	it.u.queue.closed = 1;
	it.u.queue.hours_at = 1700000060000ULL;
	it.u.queue.hours_tie = 78;
	snap_round_trip(&it, &back);
	assert_memory_equal(&back.u.queue, &it.u.queue, sizeof(it.u.queue));
	n = csq_record_encode_snap(&it, rec);
	assert_int_equal(
	    csq_record_decode_snap(rec + CSQ_RECORD_HEADER,
	                           n - CSQ_RECORD_HEADER - (1 + 2 * 8), &back),
	    0);
	assert_int_equal(back.u.queue.has_nobody, 1);
	assert_int_equal(back.u.queue.has_hours, 0);
}

/* The bytes of a record as csqd has always written them: a little-endian
 * integer of each width (1, 2, 4, 8), strings, the header's length and
 * CRC. Written whole here, so that a change of how the integers are
 * stored or read (put_u64 and get_u64 store and load words whole where
 * the host is little-endian) shows as a byte, not only as a round trip
 * that an encoder and a decoder wrong the same way would pass. */
static void
hex(const uint8_t *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

static void
test_fixed_bytes(void **state)
{
	static const char enqueue_hex[] =
	    "290000004f6e920405112233445566778803752d3107017101020304"
	    "0a0b0c0d0101732122232401070064653a332c656e";
	static const char touch_hex[] =
	    "15000000f97927e706112233445566778803752d3208070605040302"
	    "01";
	static const char limits_hex[] =
	    "36000000db93d19d0e11223344556677881e0000002c010000090000"
	    "00060504030201000014000000030000003c0000000500000001e803"
	    "000000000000";
	static const char snap_hex[] =
	    "710000007e2531348000000000000000001817161514131211020000"
	    "00000000008090a0b0c0d0e0f0050000000000000000000000000000"
	    "000000000000000000000000000000000000000000000000004d0000"
	    "00000000000000000000000000000000000000000000000000000000"
	    "000000000000000000";
	const uint64_t now = UINT64_C(0x8877665544332211);
	uint8_t rec[CSQ_RECORD_MAX];
	char got[2 * CSQ_RECORD_MAX + 1];
	struct csq_record_strings st;
	struct csq_snap_item it, itb;
	struct csq_op op, back;
	uint64_t t;
	size_t n;

	(void)state;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_ENQUEUE;
	op.enqueue.user = op.id = "u-1";
	op.enqueue.has_queue = op.enqueue.has_tier = op.enqueue.has_ttl = 1;
	op.enqueue.queue = "q";
	op.enqueue.tier = 0x04030201u;
	op.enqueue.ttl_s = 0x0d0c0b0au;
	op.enqueue.prefer.has_prefer = 1;
	op.enqueue.prefer.servicer = "s";
	op.enqueue.prefer.seconds = 0x24232221u;
	op.enqueue.has_needs = 1;
	op.enqueue.needs = "de:3,en";
	n = csq_record_encode(&op, now, rec);
	hex(rec, n, got);
	assert_string_equal(got, enqueue_hex);
	assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &t,
	                                   &st),
	                 0);
	assert_true(t == now);
	assert_int_equal(back.enqueue.tier, 0x04030201u);
	assert_int_equal(back.enqueue.ttl_s, 0x0d0c0b0au);
	assert_int_equal(back.enqueue.prefer.seconds, 0x24232221u);
	assert_string_equal(back.enqueue.needs, "de:3,en");

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_TOUCH;
	op.id = "u-2";
	op.ttl_s = INT64_C(0x0102030405060708);
	n = csq_record_encode(&op, now, rec);
	hex(rec, n, got);
	assert_string_equal(got, touch_hex);
	assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &t,
	                                   &st),
	                 0);
	assert_true(back.ttl_s == INT64_C(0x0102030405060708));

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_LIMITS;
	op.limits.servicer_ttl_s = 30;
	op.limits.user_ttl_s = 300;
	op.limits.max_tier = 9;
	op.limits.max_queue_length = UINT64_C(0x0000010203040506);
	op.limits.offer_timeout_s = 20;
	op.limits.offer_max_missed = 3;
	op.limits.offer_retry_s = 60;
	op.limits.wrapup_s = 5;
	op.limits.strategy = CSQ_STRATEGY_LEAST_BUSY;
	op.limits.max_queues = 1000;
	n = csq_record_encode(&op, now, rec);
	hex(rec, n, got);
	assert_string_equal(got, limits_hex);
	assert_int_equal(csq_record_decode(rec + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &t,
	                                   &st),
	                 0);
	assert_true(back.limits.max_queue_length ==
	            UINT64_C(0x0000010203040506));
	assert_int_equal(back.limits.user_ttl_s, 300);
	assert_int_equal(back.limits.max_queues, 1000);

	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_STATE;
	it.u.state.seq = UINT64_C(0x1112131415161718);
	it.u.state.order = 2;
	it.u.state.tie = UINT64_C(0xf0e0d0c0b0a09080);
	it.u.state.event_id = 77;
	it.u.state.stats.enqueued_total = 5;
	n = csq_record_encode_snap(&it, rec);
	hex(rec, n, got);
	assert_string_equal(got, snap_hex);
	assert_int_equal(csq_record_decode_snap(rec + CSQ_RECORD_HEADER,
	                                        n - CSQ_RECORD_HEADER, &itb),
	                 0);
	assert_true(itb.u.state.seq == UINT64_C(0x1112131415161718));
	assert_true(itb.u.state.tie == UINT64_C(0xf0e0d0c0b0a09080));
	assert_true(itb.u.state.event_id == 77);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nobody_records),
	    cmocka_unit_test(test_crc32c),
	    cmocka_unit_test(test_fixed_bytes),
	    cmocka_unit_test(test_crc32c_vectors),
	    cmocka_unit_test(test_crc32c_paths_agree),
	    cmocka_unit_test(test_every_operation),
	    cmocka_unit_test(test_heartbeat_queues_written),
	    cmocka_unit_test(test_slices),
	    cmocka_unit_test(test_legacy_limits),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_limits_out_of_range),
	    cmocka_unit_test(test_policy_out_of_range),
	    cmocka_unit_test(test_snap_policy_items),
	    cmocka_unit_test(test_skills_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
