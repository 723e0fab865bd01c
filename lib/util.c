#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
csq_oom(size_t n)
{
	fprintf(stderr, "csq: out of memory allocating %zu bytes\n", n);
	abort();
}

void *
csq_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		csq_oom(n);
	return p;
}

void *
csq_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		csq_oom(n * size);
	return p;
}

void *
csq_xrealloc(void *old, size_t n)
{
	void *p = realloc(old, n ? n : 1);

	if (p == NULL)
		csq_oom(n);
	return p;
}

char *
csq_xstrndup(const char *s, size_t len)
{
	char *p = csq_xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}
