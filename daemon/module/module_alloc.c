/*
 * libcsq's allocator inside Redis: libcsq is compiled for the module with
 * malloc, calloc, realloc and free renamed to these (CMakeLists.txt), so
 * that its memory is Redis's (INFO memory, maxmemory) and MEMORY USAGE of
 * a key tells what its state holds.
 *
 * A block of up to MODULE_KEPT_SMALL usable bytes freed while a state
 * runs is kept by that state (struct module_kept, at most
 * MODULE_KEPT_MAX of a size) and handed out again for its next
 * allocation of that size: Redis's allocator (whose zmalloc and zfree ask
 * jemalloc the block's size again, for used_memory) and the charge's own
 * size look-up cost about 230 instructions a block, three blocks a match
 * (docs/benchmarks.md). A kept block stays charged to the state, and
 * counted in Redis's used_memory, until the state reuses it or goes.
 */
#include <stddef.h>
#include <string.h>

#include "module_state.h"

/* The state whose operation is running: what libcsq allocates now is
 * its. NULL outside one (nothing charged, nothing kept). */
static struct module_state *charged;

/*
 * usable_of[n]: the usable size of a block that Redis's allocator gave
 * for a request of n bytes (0: none seen yet). A kept block of that size
 * holds n bytes whatever the allocator: its size is a usable size of a
 * request of n. With jemalloc the size of a request is always the same.
 */
static uint16_t usable_of[MODULE_KEPT_SMALL + 1];

void
module_alloc_charge(struct module_state *st)
{
	charged = st;
}

static struct module_kept *
kept_slot(struct module_state *st, size_t usable)
{
	return &st->kept[(usable - 1) /
	                 (MODULE_KEPT_SMALL / MODULE_KEPT_SLOTS)];
}

/* A block kept by st for a request of n bytes, or NULL. */
static void *
kept_take(struct module_state *st, size_t n)
{
	struct module_kept *k;
	size_t u;
	void *p;

	if (n == 0 || n > MODULE_KEPT_SMALL || (u = usable_of[n]) == 0)
		return NULL;
	k = kept_slot(st, u);
	if (k->n == 0 || k->size != u)
		return NULL;
	p = k->head;
	memcpy(&k->head, p, sizeof(k->head));
	k->n--;
	return p;
}

/* Keeps p (usable bytes) for st: 1, or 0 when it is not kept. */
static int
kept_put(struct module_state *st, void *p, size_t usable)
{
	struct module_kept *k;

	if (usable < sizeof(void *) || usable > MODULE_KEPT_SMALL)
		return 0;
	k = kept_slot(st, usable);
	if (k->n == 0)
		k->size = (uint32_t)usable;
	else if (k->size != usable || k->n >= MODULE_KEPT_MAX)
		return 0;
	memcpy(p, &k->head, sizeof(k->head));
	k->head = p;
	k->n++;
	return 1;
}

/* A new block of n bytes, charged to st; usable_of learns its size. */
static void *
alloc_charged(struct module_state *st, void *p, size_t n)
{
	size_t u = RM_MallocSize(p);

	st->bytes += u;
	if (n > 0 && n <= MODULE_KEPT_SMALL && u <= MODULE_KEPT_SMALL)
		usable_of[n] = (uint16_t)u;
	return p;
}

void
module_alloc_drop(struct module_state *st)
{
	struct module_kept *k;
	void *p;
	size_t i;

	for (i = 0; i < MODULE_KEPT_SLOTS; i++) {
		k = &st->kept[i];
		while (k->n > 0) {
			p = k->head;
			memcpy(&k->head, p, sizeof(k->head));
			k->n--;
			st->bytes -= k->size < st->bytes ? k->size : st->bytes;
			RM_Free(p);
		}
		k->head = NULL;
	}
}

void *csq_mod_malloc(size_t);
void *csq_mod_calloc(size_t, size_t);
void *csq_mod_realloc(void *, size_t);
void csq_mod_free(void *);

void *
csq_mod_malloc(size_t n)
{
	void *p;

	if (charged == NULL)
		return RM_Alloc(n);
	if ((p = kept_take(charged, n)) != NULL)
		return p;
	return alloc_charged(charged, RM_Alloc(n), n);
}

void *
csq_mod_calloc(size_t n, size_t size)
{
	/* 0: more than MODULE_KEPT_SMALL (or nothing), never kept */
	size_t small =
	    size != 0 && n <= MODULE_KEPT_SMALL / size ? n * size : 0;
	void *p;

	if (charged == NULL)
		return RM_Calloc(n, size);
	if ((p = kept_take(charged, small)) != NULL)
		return memset(p, 0, small);
	return alloc_charged(charged, RM_Calloc(n, size), small);
}

void *
csq_mod_realloc(void *old, size_t n)
{
	size_t was = old != NULL ? RM_MallocSize(old) : 0;
	void *p = RM_Realloc(old, n);

	if (charged != NULL)
		charged->bytes += RM_MallocSize(p) - was;
	return p;
}

void
csq_mod_free(void *p)
{
	size_t n;

	if (p == NULL)
		return;
	n = RM_MallocSize(p);
	if (charged != NULL) {
		if (kept_put(charged, p, n))
			return;
		charged->bytes -= n < charged->bytes ? n : charged->bytes;
	}
	RM_Free(p);
}
