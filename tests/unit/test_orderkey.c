/* The order key: its order, and its exact packing below 2^53. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "orderkey.h"

#define SECONDS_PER_YEAR    (365.25 * 24 * 3600)
#define ENQUEUES_PER_SECOND 1e6

static void
test_order(void **state)
{
	struct csq_key a = {0, 1}, b = {0, 2}, vip = {3, 1000};

	(void)state;
	assert_true(csq_key_cmp(&a, &b) < 0); /* FIFO within a tier */
	assert_true(csq_key_cmp(&b, &a) > 0);
	assert_true(csq_key_cmp(&vip, &a) < 0); /* a higher tier first */
	assert_int_equal(csq_key_cmp(&a, &a), 0);
	assert_true(csq_key_pack(&a) < csq_key_pack(&b));
	assert_true(csq_key_pack(&vip) < csq_key_pack(&a));
}

/* The edges: both tiers, both ends of the sequence. */
static void
test_pack_edges(void **state)
{
	const uint32_t tiers[] = {0, 1, 9, CSQ_KEY_TIER_MAX};
	const uint64_t seqs[] = {1, 2, CSQ_KEY_SEQ_MAX - 1, CSQ_KEY_SEQ_MAX};
	struct csq_key k, back;
	uint64_t p;
	size_t i, j;

	(void)state;
	assert_int_equal(CSQ_KEY_LIMIT, UINT64_C(1) << 53);
	for (i = 0; i < sizeof(tiers) / sizeof(tiers[0]); i++)
		for (j = 0; j < sizeof(seqs) / sizeof(seqs[0]); j++) {
			k.tier = tiers[i];
			k.seq = seqs[j];
			p = csq_key_pack(&k);
			assert_true(p < CSQ_KEY_LIMIT);
			/* A Redis score is a double: it must hold p exactly. */
			assert_true((uint64_t)(double)p == p);
			assert_true((double)p != (double)(p + 1));
			csq_key_unpack(p, &back);
			assert_int_equal(back.tier, k.tier);
			assert_int_equal(back.seq, k.seq);
		}
	/* The largest key of one tier sorts before the smallest of the
	 * tier below: tiers never interleave. */
	k.tier = 1;
	k.seq = CSQ_KEY_SEQ_MAX;
	back.tier = 0;
	back.seq = 1;
	assert_true(csq_key_pack(&k) < csq_key_pack(&back));
}

/* Within every tier, a run of arrivals packs strictly ascending. */
static void
test_fifo_within_tier(void **state)
{
	struct csq_key k;
	uint64_t prev, p;
	uint32_t tier;

	(void)state;
	for (tier = 0; tier <= CSQ_KEY_TIER_MAX; tier++) {
		k.tier = tier;
		k.seq = 1;
		prev = csq_key_pack(&k);
		for (k.seq = 2; k.seq <= 10000; k.seq++) {
			p = csq_key_pack(&k);
			assert_int_equal(p, prev + 1);
			prev = p;
		}
	}
}

/*
 * Tiers jump: at every boundary, the last possible arrival of a tier is
 * served before the first of the tier below, and every key of a tier lies
 * in its own block of 2^49 values.
 */
static void
test_tier_jumps(void **state)
{
	struct csq_key hi, lo;
	uint32_t tier;

	(void)state;
	for (tier = 1; tier <= CSQ_KEY_TIER_MAX; tier++) {
		hi.tier = tier;
		hi.seq = CSQ_KEY_SEQ_MAX;
		lo.tier = tier - 1;
		lo.seq = 1;
		assert_true(csq_key_cmp(&hi, &lo) < 0);
		assert_true(csq_key_pack(&hi) < csq_key_pack(&lo));
		assert_int_equal(csq_key_pack(&lo) - csq_key_pack(&hi), 2);
		assert_int_equal(csq_key_pack(&lo) >> CSQ_KEY_SEQ_BITS,
		                 CSQ_KEY_TIER_MAX - lo.tier);
	}
}

/* The largest key (tier 0, last sequence) is 2^53 - 1, still exact. */
static void
test_max_exact(void **state)
{
	struct csq_key k = {0, CSQ_KEY_SEQ_MAX}, top = {CSQ_KEY_TIER_MAX, 1};
	uint64_t p = csq_key_pack(&k);
	double d = (double)p;

	(void)state;
	assert_int_equal(p, CSQ_KEY_LIMIT - 1);
	assert_int_equal(p, (UINT64_C(1) << 53) - 1);
	assert_true((uint64_t)d == p);
	assert_true(d < (double)CSQ_KEY_LIMIT);
	assert_true((double)(p - 1) < d);        /* neighbours stay distinct */
	assert_int_equal(csq_key_pack(&top), 1); /* the smallest key */
}

/* Packed order is the order of csq_key_cmp, for random pairs. */
static void
test_pack_preserves_order(void **state)
{
	uint64_t r = 88172645463325252ULL;
	struct csq_key a, b;
	int i, c;

	(void)state;
	for (i = 0; i < 100000; i++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		a.tier = (uint32_t)(r % 16);
		a.seq = 1 + (r >> 8) % CSQ_KEY_SEQ_MAX;
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		b.tier = (uint32_t)(r % 16);
		b.seq = i % 3 ? 1 + (r >> 8) % CSQ_KEY_SEQ_MAX : a.seq;
		c = csq_key_cmp(&a, &b);
		if (c < 0)
			assert_true(csq_key_pack(&a) < csq_key_pack(&b));
		else if (c > 0)
			assert_true(csq_key_pack(&a) > csq_key_pack(&b));
		else
			assert_true(csq_key_pack(&a) == csq_key_pack(&b));
	}
}

/* Re-scoring keeps the sequence: back in the old tier, back in place. */
static void
test_rescore_keeps_arrival(void **state)
{
	struct csq_key first = {0, 10}, second = {0, 11};

	(void)state;
	first.tier = 5;
	assert_true(csq_key_pack(&first) < csq_key_pack(&second));
	first.tier = 0;
	assert_true(csq_key_pack(&first) < csq_key_pack(&second));
	second.tier = 5;
	assert_true(csq_key_pack(&second) < csq_key_pack(&first));
}

/*
 * The horizon (docs/design.md): at a sustained 1,000,000 enqueues per
 * second, the 49-bit sequence runs out after 2^49 / 10^6 s, 17.8 years.
 */
static void
test_horizon(void **state)
{
	double years =
	    (double)CSQ_KEY_SEQ_MAX / ENQUEUES_PER_SECOND / SECONDS_PER_YEAR;

	(void)state;
	assert_true(years > 17.0 && years < 18.0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_pack_edges),
	    cmocka_unit_test(test_fifo_within_tier),
	    cmocka_unit_test(test_tier_jumps),
	    cmocka_unit_test(test_max_exact),
	    cmocka_unit_test(test_pack_preserves_order),
	    cmocka_unit_test(test_rescore_keeps_arrival),
	    cmocka_unit_test(test_horizon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
