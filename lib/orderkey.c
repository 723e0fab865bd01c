/* The order key and its exact packing below 2^53. */
#include "orderkey.h"

int
csq_key_cmp(const struct csq_key *a, const struct csq_key *b)
{
	if (a->tier != b->tier)
		return a->tier > b->tier ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

uint64_t
csq_key_pack(const struct csq_key *k)
{
	return ((uint64_t)(CSQ_KEY_TIER_MAX - k->tier) << CSQ_KEY_SEQ_BITS) |
	       (k->seq & CSQ_KEY_SEQ_MAX);
}

void
csq_key_unpack(uint64_t packed, struct csq_key *k)
{
	k->tier = CSQ_KEY_TIER_MAX - (uint32_t)(packed >> CSQ_KEY_SEQ_BITS);
	k->seq = packed & CSQ_KEY_SEQ_MAX;
}
