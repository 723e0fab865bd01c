/*
 * libcsq's allocator inside Redis: libcsq is compiled for the module with
 * malloc, calloc, realloc and free renamed to these (CMakeLists.txt), so
 * that its memory is Redis's (INFO memory, maxmemory) and MEMORY USAGE of
 * a key tells what its state holds.
 */
#include <stddef.h>

#include "module_state.h"

/* The state whose operation is running: what libcsq allocates now is
 * its. NULL outside one (nothing charged). */
static struct module_state *charged;

void
module_alloc_charge(struct module_state *st)
{
	charged = st;
}

void *csq_mod_malloc(size_t);
void *csq_mod_calloc(size_t, size_t);
void *csq_mod_realloc(void *, size_t);
void csq_mod_free(void *);

void *
csq_mod_malloc(size_t n)
{
	void *p = RM_Alloc(n);

	if (charged != NULL)
		charged->bytes += RM_MallocSize(p);
	return p;
}

void *
csq_mod_calloc(size_t n, size_t size)
{
	void *p = RM_Calloc(n, size);

	if (charged != NULL)
		charged->bytes += RM_MallocSize(p);
	return p;
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

	if (charged != NULL)
		charged->bytes -= n < charged->bytes ? n : charged->bytes;
	RM_Free(p);
}
