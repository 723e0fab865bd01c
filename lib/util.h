/* Allocation wrappers that die on out of memory, so callers need no checks. */
#ifndef CSQ_UTIL_H
#define CSQ_UTIL_H

#include <stddef.h>

void *csq_xmalloc(size_t);
void *csq_xcalloc(size_t, size_t);
void *csq_xrealloc(void *, size_t);
char *csq_xstrndup(const char *, size_t);

#endif
