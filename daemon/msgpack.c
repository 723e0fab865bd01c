/*
 * The MessagePack reader (msgpack.h). Lengths are checked against what is
 * left before anything is read, so a message cut short or lying about its
 * sizes is refused, never read past.
 */
#include "msgpack.h"

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
