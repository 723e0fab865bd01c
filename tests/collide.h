/*
 * Keys that lib/dict.c's hash sends to one chain under a seed that is
 * known: 16 bytes each, the second 8 cancelling the first, so that the
 * hash state after them is the same for every key. For the tests that
 * show what a random seed protects against (test_dict, test_events).
 *
 * This copies dict.c's mixing step, which is static there: if the hash
 * changes, these keys stop colliding, and test_dict's
 * test_seed_decides_chains fails to say so.
 */
#ifndef CSQ_TEST_COLLIDE_H
#define CSQ_TEST_COLLIDE_H

#include <stdint.h>
#include <string.h>

#define COLLIDE_KEY_LEN 16

static inline uint64_t
collide_mix(uint64_t x)
{
	x ^= x >> 32;
	x *= UINT64_C(0xd6e8feb86659fd93);
	x ^= x >> 32;
	x *= UINT64_C(0xd6e8feb86659fd93);
	x ^= x >> 32;
	return x;
}

/* The i-th key (any bytes, NULs among them) of those that share a chain
 * in a dict seeded with seed. */
static inline void
collide_key(uint64_t seed, uint64_t i, char key[COLLIDE_KEY_LEN])
{
	uint64_t h0 = seed ^ (COLLIDE_KEY_LEN * UINT64_C(0x9e3779b97f4a7c15));
	uint64_t w1 = UINT64_C(0x3a3a000000000000) | i;
	uint64_t w2 = collide_mix(h0 ^ w1) ^ UINT64_C(0x1234567890abcdef);

	memcpy(key, &w1, 8);
	memcpy(key + 8, &w2, 8);
}

#endif
