/* The order key: its order, and its exact packing below 2^53. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "orderkey.h"

#define SECONDS_PER_YEAR (365.25 * 24 * 3600)

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

/* docs/design.md: the 49-bit sequence lasts > 17 years at 10^6/s. */
static void
test_horizon(void **state)
{
	double years = (double)CSQ_KEY_SEQ_MAX / 1e6 / SECONDS_PER_YEAR;

	(void)state;
	assert_true(years > 17.0 && years < 18.0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_pack_edges),
	    cmocka_unit_test(test_pack_preserves_order),
	    cmocka_unit_test(test_rescore_keeps_arrival),
	    cmocka_unit_test(test_horizon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
