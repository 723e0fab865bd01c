/*
 * Little-endian integers and length-prefixed strings in a byte buffer: the
 * form of the Redis module's replies (result.c) and messages. A writer
 * grows its buffer; a reader never reads past its end, and any overrun
 * sets bad, after which every read gives zeros.
 */
#ifndef CSQ_WIRE_H
#define CSQ_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct csq_wbuf {
	uint8_t *p;
	size_t len, cap;
};

struct csq_rbuf {
	const uint8_t *p;
	size_t left;
	int bad;
};

void csq_wbuf_free(struct csq_wbuf *);
void csq_wbuf_reserve(struct csq_wbuf *, size_t more);
void csq_put_bytes(struct csq_wbuf *, const void *, size_t);

/*
 * v in bytes little-endian bytes (past 8: zeros). Inline: its callers
 * give bytes as a constant, so that each call becomes a store or two
 * (as a function it was a tenth of a module call's instructions, its
 * loop reloading w->len after each byte a uint8_t store may alias).
 */
static inline void
csq_put_uint(struct csq_wbuf *w, uint64_t v, int bytes)
{
	uint8_t *p;
	int i;

	if (w->len + (size_t)bytes > w->cap)
		csq_wbuf_reserve(w, (size_t)bytes);
	p = w->p + w->len;
	for (i = 0; i < bytes; i++)
		p[i] = i < 8 ? (uint8_t)(v >> (8 * i)) : 0;
	w->len += (size_t)bytes;
}
/*
 * A string of up to 65535 bytes, its length first (2 bytes). Inline, and
 * an empty one (most of a user's answer: its room, servicer, preferred
 * servicer and needs while it waits) is its two zero bytes without a
 * strnlen or a copy: csq.so's answers called it 5 times a match.
 */
static inline void
csq_put_str(struct csq_wbuf *w, const char *s)
{
	size_t n;

	if (s == NULL || s[0] == '\0') {
		csq_put_uint(w, 0, 2);
		return;
	}
	n = strnlen(s, UINT16_MAX);
	csq_put_uint(w, n, 2);
	csq_put_bytes(w, s, n);
}

uint64_t csq_get_uint(struct csq_rbuf *, int bytes);
/* Into out (cap bytes with the NUL); a longer string, or one with a NUL
 * inside, is bad. */
void csq_get_str(struct csq_rbuf *, char *out, size_t cap);

#endif
