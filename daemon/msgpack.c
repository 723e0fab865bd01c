/*
 * The MessagePack reader (msgpack.h). Lengths are checked against what is
 * left before anything is read, so a message cut short or lying about its
 * sizes is refused, never read past.
 */
#include "msgpack.h"

#include <string.h>

/* MessagePack's first bytes (the format's own names). */
#define MP_POSFIXINT_MAX 0x7f
#define MP_FIXARRAY      0x90 /* to 0x9f: up to 15 elements */
#define MP_FIXSTR        0xa0 /* to 0xbf: up to 31 bytes */
#define MP_NIL           0xc0
#define MP_FALSE         0xc2
#define MP_UINT8         0xcc /* to 0xcf: uint16, uint32, uint64 */
#define MP_INT8          0xd0 /* to 0xd3: int16, int32, int64 */
#define MP_STR8          0xd9 /* to 0xdb: str16, str32 */
#define MP_ARRAY16       0xdc
#define MP_ARRAY32       0xdd
#define MP_NEGFIXINT     0xe0 /* to 0xff: -32 to -1 */

void
msgpack_init(struct msgpack_in *in, const void *buf, size_t len)
{
	in->p = buf;
	in->end = in->p + len;
}

/* The big-endian integer of n bytes after the type byte, into *v; 0, or
 * -1 when fewer bytes are left. */
static int
msgpack_be(const struct msgpack_in *in, size_t n, uint64_t *v)
{
	size_t i;

	if ((size_t)(in->end - in->p) < 1 + n)
		return -1;
	*v = 0;
	for (i = 1; i <= n; i++)
		*v = *v << 8 | in->p[i];
	return 0;
}

int
msgpack_int(struct msgpack_in *in, int64_t *out)
{
	unsigned char t;
	size_t n;
	uint64_t v;

	if (in->p >= in->end)
		return -1;
	t = *in->p;
	if (t <= MP_POSFIXINT_MAX || t >= MP_NEGFIXINT) {
		*out = t <= MP_POSFIXINT_MAX ? (int64_t)t : (int64_t)t - 256;
		in->p++;
		return 0;
	}
	if (t >= MP_UINT8 && t <= MP_UINT8 + 3) {
		n = (size_t)1 << (t - MP_UINT8);
		if (msgpack_be(in, n, &v) != 0 || v > INT64_MAX)
			return -1;
		*out = (int64_t)v;
	} else if (t >= MP_INT8 && t <= MP_INT8 + 3) {
		n = (size_t)1 << (t - MP_INT8);
		if (msgpack_be(in, n, &v) != 0)
			return -1;
		/* Sign-extend the n-byte two's complement. */
		if (n < 8 && (v >> (8 * n - 1)) != 0)
			v |= ~(uint64_t)0 << (8 * n);
		*out = (int64_t)v;
	} else {
		return -1;
	}
	in->p += 1 + n;
	return 0;
}

int
msgpack_str(struct msgpack_in *in, const char **s, size_t *len)
{
	unsigned char t;
	size_t head;
	uint64_t v;

	if (in->p >= in->end)
		return -1;
	t = *in->p;
	if (t >= MP_FIXSTR && t < MP_NIL) {
		head = 1;
		v = t - MP_FIXSTR;
	} else if (t >= MP_STR8 && t <= MP_STR8 + 2) {
		head = (size_t)1 << (t - MP_STR8);
		if (msgpack_be(in, head, &v) != 0)
			return -1;
		head++;
	} else {
		return -1;
	}
	if (v > (uint64_t)(in->end - in->p) - head)
		return -1;
	*s = (const char *)in->p + head;
	*len = (size_t)v;
	in->p += head + v;
	return 0;
}

int
msgpack_array(struct msgpack_in *in, uint32_t *n)
{
	unsigned char t;
	uint64_t v;

	if (in->p >= in->end)
		return -1;
	t = *in->p;
	if (t >= MP_FIXARRAY && t < MP_FIXSTR) {
		*n = t - MP_FIXARRAY;
		in->p++;
		return 0;
	}
	if (t != MP_ARRAY16 && t != MP_ARRAY32)
		return -1;
	if (msgpack_be(in, t == MP_ARRAY16 ? 2 : 4, &v) != 0)
		return -1;
	/* Every element takes a byte at least: a count beyond what is left
	 * is a lie. */
	in->p += t == MP_ARRAY16 ? 3 : 5;
	if (v > (uint64_t)(in->end - in->p)) {
		in->p -= t == MP_ARRAY16 ? 3 : 5;
		return -1;
	}
	*n = (uint32_t)v;
	return 0;
}

int
msgpack_fact_value(struct msgpack_in *in, struct csq_fact_value *v)
{
	if (in->p < in->end && (*in->p == MP_NIL || *in->p == MP_FALSE)) {
		v->type = CSQ_FACT_ABSENT;
		in->p++;
		return 0;
	}
	if (msgpack_int(in, &v->n) == 0) {
		v->type = CSQ_FACT_INT;
		return 0;
	}
	if (msgpack_str(in, &v->s, &v->len) == 0) {
		v->type = CSQ_FACT_STR;
		return 0;
	}
	return -1;
}

/*
 * The writer: the smallest form of each value, as cmsgpack writes it.
 * Each value is written by one of the mp_* below at a pointer with room
 * for it (MP_*_MAX bytes, a string's bytes beside), which returns the
 * pointer past it; the msgpack_put_* reserve that room once and move the
 * buffer's length once, so that a whole fact is one reserve and plain
 * stores (the buffer checked and grown byte by byte was two thirds of
 * an event's cost in csq.so, issue 34).
 */
#define MP_INT_MAX   9 /* a type byte and 8 */
#define MP_HEAD_MAX  5 /* a string's or an array's: a type byte and 4 */
#define MP_VALUE_MAX 9 /* a fact value but its string's bytes */

static inline uint8_t *
mp_head(uint8_t *p, unsigned char t, uint64_t v, int n)
{
	int i;

	*p++ = t;
	for (i = n - 1; i >= 0; i--)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

static inline uint8_t *
mp_int(uint8_t *p, int64_t v)
{
	uint64_t u = (uint64_t)v;

	if (v < 0 && v >= -32)
		*p++ = (uint8_t)v;
	else if (v < 0)
		p = mp_head(p, MP_INT8 + 3, u, 8);
	else if (u <= MP_POSFIXINT_MAX)
		*p++ = (uint8_t)u;
	else if (u <= UINT8_MAX)
		p = mp_head(p, MP_UINT8, u, 1);
	else if (u <= UINT16_MAX)
		p = mp_head(p, MP_UINT8 + 1, u, 2);
	else if (u <= UINT32_MAX)
		p = mp_head(p, MP_UINT8 + 2, u, 4);
	else
		p = mp_head(p, MP_UINT8 + 3, u, 8);
	return p;
}

/* len bytes of s at p: an event's strings are mostly ids of a few
 * bytes, which two overlapping loads of 16, 8 or 4 bytes copy with no
 * call (reading only s's own len bytes). */
static inline uint8_t *
mp_copy(uint8_t *p, const char *s, size_t len)
{
	uint64_t a, b, e, f;
	uint32_t c, d;

	if (len > 16 && len <= 32) {
		memcpy(&a, s, 8);
		memcpy(&b, s + 8, 8);
		memcpy(&e, s + len - 16, 8);
		memcpy(&f, s + len - 8, 8);
		memcpy(p, &a, 8);
		memcpy(p + 8, &b, 8);
		memcpy(p + len - 16, &e, 8);
		memcpy(p + len - 8, &f, 8);
	} else if (len >= 8 && len <= 16) {
		memcpy(&a, s, 8);
		memcpy(&b, s + len - 8, 8);
		memcpy(p, &a, 8);
		memcpy(p + len - 8, &b, 8);
	} else if (len >= 4 && len < 8) {
		memcpy(&c, s, 4);
		memcpy(&d, s + len - 4, 4);
		memcpy(p, &c, 4);
		memcpy(p + len - 4, &d, 4);
	} else if (len < 4) {
		if (len > 0)
			p[0] = (uint8_t)s[0];
		if (len > 1)
			p[1] = (uint8_t)s[1];
		if (len > 2)
			p[2] = (uint8_t)s[2];
	} else {
		memcpy(p, s, len);
	}
	return p + len;
}

static inline uint8_t *
mp_str(uint8_t *p, const char *s, size_t len)
{
	if (len <= 31)
		*p++ = (uint8_t)(MP_FIXSTR | len);
	else if (len <= UINT8_MAX)
		p = mp_head(p, MP_STR8, len, 1);
	else if (len <= UINT16_MAX)
		p = mp_head(p, MP_STR8 + 1, len, 2);
	else
		p = mp_head(p, MP_STR8 + 2, len, 4);
	return mp_copy(p, s, len);
}

static inline uint8_t *
mp_array(uint8_t *p, uint32_t n)
{
	if (n <= 15)
		*p++ = (uint8_t)(MP_FIXARRAY | n);
	else if (n <= UINT16_MAX)
		p = mp_head(p, MP_ARRAY16, n, 2);
	else
		p = mp_head(p, MP_ARRAY32, n, 4);
	return p;
}

static inline uint8_t *
mp_fact_value(uint8_t *p, const struct csq_fact_value *v)
{
	switch (v->type) {
	case CSQ_FACT_INT:
		return mp_int(p, v->n);
	case CSQ_FACT_STR:
		return mp_str(p, v->s, v->len);
	default:
		*p = MP_NIL;
		return p + 1;
	}
}

/* Room for more bytes at w's end, and where they go. */
static uint8_t *
mp_room(struct csq_wbuf *w, size_t more)
{
	csq_wbuf_reserve(w, more);
	return w->p + w->len;
}

static void
mp_done(struct csq_wbuf *w, const uint8_t *end)
{
	w->len = (size_t)(end - w->p);
}

void
msgpack_put_int(struct csq_wbuf *w, int64_t v)
{
	mp_done(w, mp_int(mp_room(w, MP_INT_MAX), v));
}

void
msgpack_put_str(struct csq_wbuf *w, const char *s, size_t len)
{
	mp_done(w, mp_str(mp_room(w, MP_HEAD_MAX + len), s, len));
}

void
msgpack_put_array(struct csq_wbuf *w, uint32_t n)
{
	mp_done(w, mp_array(mp_room(w, MP_HEAD_MAX), n));
}

void
msgpack_put_fact_value(struct csq_wbuf *w, const struct csq_fact_value *v)
{
	size_t more = MP_VALUE_MAX + (v->type == CSQ_FACT_STR ? v->len : 0);

	mp_done(w, mp_fact_value(mp_room(w, more), v));
}

/* The room is reserved for the heads and the kind at once, and for each
 * string's bytes as it comes (so that before value i there is room for
 * the n - i values' heads at least): a first pass over the values only
 * to add up their strings cost more than this check. */
void
msgpack_put_fact(struct csq_wbuf *w, const char *kind, size_t klen,
                 const struct csq_fact_value *v, size_t n)
{
	uint8_t *p = mp_room(w, 2 * MP_HEAD_MAX + klen + n * MP_VALUE_MAX);
	uint8_t *end = w->p + w->cap;
	size_t i;

	p = mp_array(p, (uint32_t)(n + 1));
	p = mp_str(p, kind, klen);
	for (i = 0; i < n; i++) {
		if (v[i].type == CSQ_FACT_STR &&
		    v[i].len > (size_t)(end - p) - (n - i) * MP_VALUE_MAX) {
			mp_done(w, p);
			p = mp_room(w, (n - i) * MP_VALUE_MAX + v[i].len);
			end = w->p + w->cap;
		}
		p = mp_fact_value(p, &v[i]);
	}
	mp_done(w, p);
}
