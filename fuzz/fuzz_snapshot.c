/*
 * The snapshot decoder (lib/record.h, csq_record_decode_snap) on any
 * payloads, and the restoration of what it accepts (lib/snapshot.h), as a
 * journal's compaction is read back at start.
 *
 * An item that decodes must encode to bytes that decode to it again; the
 * state the accepted items build, unless csq_restore_end refuses it, must
 * keep every invariant (csq_check): csq_restore refuses an item that does
 * not fit rather than build a state that libcsq cannot work on. And that
 * state's own snapshot, restored, must give the same items back.
 *
 * The input is records as the journal frames them (u32 length, u32
 * checksum, payload), the checksum ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csq.h"
#include "fuzz.h"
#include "record.h"
#include "snapshot.h"
#include "util.h"

#define FUZZ_CHECK_MAX 256
#define FUZZ_SEED_A    1
#define FUZZ_SEED_B    2
/* Times after any the items hold (a deadline of 2^62 ms is 146 million
 * years away), and far from the end of uint64_t. */
#define FUZZ_LATER_MS  (1ULL << 62)
#define FUZZ_LATEST_MS (1ULL << 63)

/* The items of a snapshot, each encoded as a whole record, padded with
 * zeros. */
struct items {
	uint8_t (*v)[CSQ_RECORD_MAX];
	size_t n, cap;
};

static void
collect(void *arg, const struct csq_snap_item *it)
{
	struct items *x = arg;

	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 8;
		x->v = csq_xrealloc(x->v, x->cap * sizeof(*x->v));
	}
	memset(x->v[x->n], 0, CSQ_RECORD_MAX);
	csq_record_encode_snap(it, x->v[x->n]);
	x->n++;
}

/* Decodes item i of x. */
static void
item_get(const struct items *x, size_t i, struct csq_snap_item *it)
{
	const uint8_t *r = x->v[i];
	size_t len = (size_t)r[0] | (size_t)r[1] << 8 | (size_t)r[2] << 16 |
	             (size_t)r[3] << 24;

	if (csq_record_decode_snap(r + CSQ_RECORD_HEADER, len, it) != 0)
		fuzz_fail("item %zu of a snapshot does not decode", i);
}

static int
item_cmp(const void *a, const void *b)
{
	return memcmp(a, b, CSQ_RECORD_MAX);
}

/* The items in an order of their own: the tables' order depends on the
 * seed and on the order of insertion. */
static void
items_sort(struct items *x)
{
	qsort(x->v, x->n, sizeof(*x->v), item_cmp);
}

static void
check_state(struct csq *c, const char *when)
{
	char why[FUZZ_CHECK_MAX];

	if (csq_check(c, why, sizeof(why)) != 0)
		fuzz_fail("%s: %s", when, why);
}

/* decode(encode(item)) encodes to the very same bytes. */
static void
check_round_trip(const struct csq_snap_item *it)
{
	uint8_t one[CSQ_RECORD_MAX], two[CSQ_RECORD_MAX];
	struct csq_snap_item back;
	size_t n1, n2;

	n1 = csq_record_encode_snap(it, one);
	if (csq_record_decode_snap(one + CSQ_RECORD_HEADER,
	                           n1 - CSQ_RECORD_HEADER, &back) != 0)
		fuzz_fail("an encoded item of kind %d does not decode",
		          (int)it->kind);
	n2 = csq_record_encode_snap(&back, two);
	if (n1 != n2 || memcmp(one, two, n1) != 0)
		fuzz_fail("an item of kind %d encodes differently once decoded",
		          (int)it->kind);
}

/*
 * Works on a restored state, as the records after a snapshot do: every
 * user enqueued again into the default queue (a waiting one moves there),
 * then every deadline passed. The state must hold after each.
 */
static void
exercise(struct csq *c, const struct items *x)
{
	struct csq_enqueue_args a;
	struct csq_user_info info;
	struct csq_snap_item it;
	size_t i;

	for (i = 0; i < x->n; i++) {
		item_get(x, i, &it);
		if (it.kind != CSQ_SNAP_USER)
			continue;
		memset(&a, 0, sizeof(a));
		a.user = it.u.user.id;
		a.has_queue = 1;
		a.queue = CSQ_DEFAULT_QUEUE;
		(void)csq_enqueue(c, FUZZ_LATER_MS, &a, &info);
		check_state(c, "a user enqueued again");
	}
	csq_expire(c, FUZZ_LATEST_MS);
	check_state(c, "every deadline passed");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct items before = {0}, after = {0};
	struct csq_snap_item it;
	struct csq_limits limits;
	struct csq *a, *b;
	struct fuzz_in in;
	const uint8_t *payload;
	size_t len, i;

	csq_limits_default(&limits);
	a = csq_new(&limits, FUZZ_SEED_A, NULL, NULL);
	fuzz_in_init(&in, data, size);
	while ((payload = fuzz_next_record(&in, &len)) != NULL) {
		if (len > CSQ_RECORD_MAX - CSQ_RECORD_HEADER ||
		    !csq_record_is_snap(payload, len) ||
		    csq_record_decode_snap(payload, len, &it) != 0)
			continue;
		check_round_trip(&it);
		(void)csq_restore(a, &it);
	}
	if (csq_restore_end(a) != 0) {
		csq_free(a); /* refused: a journal with it does not start */
		return 0;
	}
	check_state(a, "restored");

	csq_snapshot(a, collect, &before);
	b = csq_new(&limits, FUZZ_SEED_B, NULL, NULL);
	for (i = 0; i < before.n; i++) {
		item_get(&before, i, &it);
		if (csq_restore(b, &it) != 0)
			fuzz_fail("item %zu of a state's own snapshot refused",
			          i);
	}
	if (csq_restore_end(b) != 0)
		fuzz_fail("a state's own snapshot is refused at its end");
	check_state(b, "restored again");
	csq_snapshot(b, collect, &after);
	items_sort(&before);
	items_sort(&after);
	if (before.n != after.n ||
	    (before.n > 0 &&
	     memcmp(before.v, after.v, before.n * sizeof(*before.v)) != 0))
		fuzz_fail("a restored snapshot differs from its state");
	exercise(a, &before);
	csq_free(a);
	csq_free(b);
	free(before.v);
	free(after.v);
	return 0;
}
