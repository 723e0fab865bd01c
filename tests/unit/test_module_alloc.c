/*
 * csq.so's allocator (daemon/module/module_alloc.c) on the C library's
 * malloc in place of Redis's: the blocks a state keeps are handed out
 * again only for a request that fits them, zeroed for calloc, at most
 * MODULE_KEPT_MAX of a size, never outside a state's run; and what the
 * state is charged (MEMORY USAGE) is always what it holds, its kept
 * blocks included, down to nothing once they are dropped. Under ASan
 * (and valgrind) a block's usable size is the size asked for, so a kept
 * block handed out for a larger request is written past its end.
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "module_state.h"
#include "scale.h"

void *csq_mod_malloc(size_t);
void *csq_mod_calloc(size_t, size_t);
void *csq_mod_realloc(void *, size_t);
void csq_mod_free(void *);

#define RANDOM_OPS     40000 /* scaled (scale.h), to no fewer than: */
#define RANDOM_OPS_MIN 4000
#define LIVE           200 /* blocks live at once at most */
#define SIZE_MAX_ASKED 320 /* past MODULE_KEPT_SMALL: some are never kept */

static size_t
usable(void *p)
{
	return malloc_usable_size(p);
}

static void
use_libc(void)
{
	RM_Alloc = malloc;
	RM_Calloc = calloc;
	RM_Realloc = realloc;
	RM_Free = free;
	RM_MallocSize = usable;
}

static size_t
kept_bytes(const struct module_state *st)
{
	size_t i, n = 0;

	for (i = 0; i < MODULE_KEPT_SLOTS; i++) {
		assert_true(st->kept[i].n <= MODULE_KEPT_MAX);
		n += (size_t)st->kept[i].n * st->kept[i].size;
	}
	return n;
}

static size_t
kept_blocks(const struct module_state *st)
{
	size_t i, n = 0;

	for (i = 0; i < MODULE_KEPT_SLOTS; i++)
		n += st->kept[i].n;
	return n;
}

/* A freed block comes back for the next request of its size, charged
 * once; calloc's comes back zeroed. */
static void
kept_block_reused(void **state)
{
	struct module_state st;
	unsigned char *p, *q;
	size_t i, charged;

	(void)state;
	use_libc();
	memset(&st, 0, sizeof(st));
	module_alloc_charge(&st);
	p = csq_mod_malloc(100);
	charged = st.bytes;
	assert_true(charged >= 100);
	memset(p, 0xa5, 100);
	csq_mod_free(p);
	assert_int_equal(st.bytes, charged); /* kept: still held */
	assert_int_equal(kept_blocks(&st), 1);
	q = csq_mod_calloc(4, 25);
	assert_ptr_equal(q, p);
	for (i = 0; i < 100; i++)
		assert_int_equal(q[i], 0);
	assert_int_equal(st.bytes, charged);
	assert_int_equal(kept_blocks(&st), 0);
	csq_mod_free(q);
	module_alloc_charge(NULL);
	module_alloc_drop(&st);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(kept_blocks(&st), 0);
}

/* Outside a state's run nothing is charged and nothing kept. */
static void
nothing_kept_outside_a_run(void **state)
{
	struct module_state st;
	void *p;

	(void)state;
	use_libc();
	memset(&st, 0, sizeof(st));
	module_alloc_charge(&st);
	csq_mod_free(csq_mod_malloc(48)); /* 48 is known, one kept */
	module_alloc_charge(NULL);
	p = csq_mod_malloc(48);
	csq_mod_free(p);
	assert_int_equal(kept_blocks(&st), 1);
	module_alloc_drop(&st);
	assert_int_equal(st.bytes, 0);
}

/* No more than MODULE_KEPT_MAX of a size: the rest goes back. */
static void
kept_bounded(void **state)
{
	struct module_state st;
	void *v[MODULE_KEPT_MAX * 2];
	size_t i, one;

	(void)state;
	use_libc();
	memset(&st, 0, sizeof(st));
	module_alloc_charge(&st);
	for (i = 0; i < MODULE_KEPT_MAX * 2; i++)
		v[i] = csq_mod_malloc(64);
	one = st.bytes / (MODULE_KEPT_MAX * 2);
	for (i = 0; i < MODULE_KEPT_MAX * 2; i++)
		csq_mod_free(v[i]);
	assert_int_equal(kept_blocks(&st), MODULE_KEPT_MAX);
	assert_int_equal(st.bytes, one * MODULE_KEPT_MAX);
	module_alloc_charge(NULL);
	module_alloc_drop(&st);
	assert_int_equal(st.bytes, 0);
}

struct block {
	unsigned char *p;
	size_t n;
	int owner;
	unsigned char fill;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t
rng(uint64_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state % n;
}

static void
check_fill(const struct block *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		assert_int_equal(b->p[i], b->fill);
}

static void
fill(struct block *b)
{
	b->fill = (unsigned char)(1 + rng(255));
	memset(b->p, b->fill, b->n);
}

/* Each state's charge is its live blocks and its kept ones. */
static void
check_charges(struct module_state *st, const struct block *v, size_t n)
{
	size_t live[2] = {0, 0}, i;

	for (i = 0; i < n; i++)
		live[v[i].owner] += usable(v[i].p);
	for (i = 0; i < 2; i++)
		assert_int_equal(st[i].bytes, live[i] + kept_bytes(&st[i]));
}

/* Two states, each allocating, growing and freeing blocks of every size
 * in turn: no block is handed out twice, none is too small (every byte
 * asked for is written and read back), and the charges add up. */
static void
random_runs(void **state)
{
	struct module_state st[2];
	struct block v[LIVE], *b;
	size_t n = 0, i, ops = scale_steps(RANDOM_OPS, RANDOM_OPS_MIN);
	size_t size;
	int who;

	(void)state;
	use_libc();
	memset(st, 0, sizeof(st));
	for (i = 0; i < ops; i++) {
		if (n == LIVE || (n > 0 && rng(2) == 0)) {
			/* Freed or grown by the state that made it. */
			size_t k = rng(n);

			b = &v[k];
			module_alloc_charge(&st[b->owner]);
			check_fill(b);
			if (rng(4) == 0) {
				b->n = 1 + rng(SIZE_MAX_ASKED);
				b->p = csq_mod_realloc(b->p, b->n);
				fill(b);
			} else {
				csq_mod_free(b->p);
				v[k] = v[--n];
			}
		} else {
			who = (int)rng(2);
			module_alloc_charge(&st[who]);
			b = &v[n++];
			size = 1 + rng(SIZE_MAX_ASKED);
			b->owner = who;
			b->n = size;
			if (rng(3) == 0) {
				b->p = csq_mod_calloc(1, size);
				for (size = 0; size < b->n; size++)
					assert_int_equal(b->p[size], 0);
			} else {
				b->p = csq_mod_malloc(size);
			}
			fill(b);
		}
		check_charges(st, v, n);
	}
	for (i = 0; i < n; i++) {
		module_alloc_charge(&st[v[i].owner]);
		check_fill(&v[i]);
		csq_mod_free(v[i].p);
	}
	check_charges(st, v, 0);
	module_alloc_charge(NULL);
	for (i = 0; i < 2; i++) {
		module_alloc_drop(&st[i]);
		assert_int_equal(st[i].bytes, 0);
		assert_int_equal(kept_blocks(&st[i]), 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(kept_block_reused),
	    cmocka_unit_test(nothing_kept_outside_a_run),
	    cmocka_unit_test(kept_bounded),
	    cmocka_unit_test(random_runs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
