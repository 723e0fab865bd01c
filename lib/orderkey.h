/*
 * The order key: service order is tier descending, then arrival ascending.
 * Arrival is a global sequence number taken when a user first arrives, so
 * FIFO within a tier is exact even inside one millisecond, and keys of
 * different queues compare. The key packs exactly into an integer below 2^53
 * (a Redis score is a double); smaller packed value = served first.
 *
 *   bit 52..49  15 - tier              (4 bits, tier 0..15)
 *   bit 48..0   sequence               (49 bits, 1 .. 2^49 - 1)
 *
 * See docs/design.md for the horizon of the sequence.
 */
#ifndef CSQ_ORDERKEY_H
#define CSQ_ORDERKEY_H

#include <stdint.h>

#define CSQ_KEY_TIER_BITS 4
#define CSQ_KEY_SEQ_BITS  49
#define CSQ_KEY_SEQ_MAX   ((UINT64_C(1) << CSQ_KEY_SEQ_BITS) - 1)
#define CSQ_KEY_TIER_MAX  ((1u << CSQ_KEY_TIER_BITS) - 1)
#define CSQ_KEY_LIMIT     (UINT64_C(1) << (CSQ_KEY_TIER_BITS + CSQ_KEY_SEQ_BITS))

struct csq_key {
	uint32_t tier; /* 0..CSQ_KEY_TIER_MAX, higher served first */
	uint64_t seq;  /* 1..CSQ_KEY_SEQ_MAX, lower served first */
};

/* <0 when a is served before b, 0 equal, >0 after. */
int csq_key_cmp(const struct csq_key *a, const struct csq_key *b);
/* Exact packing, < CSQ_KEY_LIMIT (2^53); tier and seq must be in range. */
uint64_t csq_key_pack(const struct csq_key *);
void csq_key_unpack(uint64_t packed, struct csq_key *);

#endif
