/* Integers and strings in byte buffers (wire.h). */
#include "wire.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void
csq_wbuf_free(struct csq_wbuf *w)
{
	free(w->p);
	memset(w, 0, sizeof(*w));
}

void
csq_wbuf_reserve(struct csq_wbuf *w, size_t more)
{
	size_t cap = w->cap != 0 ? w->cap : 256;

	if (w->len + more <= w->cap)
		return;
	while (cap < w->len + more)
		cap *= 2;
	w->p = csq_xrealloc(w->p, cap);
	w->cap = cap;
}

void
csq_put_bytes(struct csq_wbuf *w, const void *s, size_t n)
{
	csq_wbuf_reserve(w, n);
	if (n > 0)
		memcpy(w->p + w->len, s, n);
	w->len += n;
}

uint64_t
csq_get_uint(struct csq_rbuf *r, int bytes)
{
	uint64_t v = 0;
	int i;

	if (r->bad || r->left < (size_t)bytes) {
		r->bad = 1;
		return 0;
	}
	for (i = 0; i < bytes; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += bytes;
	r->left -= (size_t)bytes;
	return v;
}

void
csq_get_str(struct csq_rbuf *r, char *out, size_t cap)
{
	size_t n = (size_t)csq_get_uint(r, 2);

	out[0] = '\0';
	/* A NUL inside would make another string of it on the way back. */
	if (r->bad || n >= cap || n > r->left || memchr(r->p, 0, n) != NULL) {
		r->bad = 1;
		return;
	}
	memcpy(out, r->p, n);
	out[n] = '\0';
	r->p += n;
	r->left -= n;
}
