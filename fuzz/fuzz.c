/* The helpers of fuzz.h. */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "record.h"

void
fuzz_in_init(struct fuzz_in *in, const uint8_t *data, size_t size)
{
	in->p = data;
	in->left = size;
}

int
fuzz_done(const struct fuzz_in *in)
{
	return in->left == 0;
}

uint8_t
fuzz_u8(struct fuzz_in *in)
{
	if (in->left == 0)
		return 0;
	in->left--;
	return *in->p++;
}

uint16_t
fuzz_u16(struct fuzz_in *in)
{
	return (uint16_t)(fuzz_u8(in) | fuzz_u8(in) << 8);
}

uint32_t
fuzz_u32(struct fuzz_in *in)
{
	uint32_t lo = fuzz_u16(in);

	return lo | (uint32_t)fuzz_u16(in) << 16;
}

uint64_t
fuzz_u64(struct fuzz_in *in)
{
	uint64_t lo = fuzz_u32(in);

	return lo | (uint64_t)fuzz_u32(in) << 32;
}

uint32_t
fuzz_pick(struct fuzz_in *in, uint32_t n)
{
	if (n == 0)
		return 0;
	/* One byte is enough for every small table; a second only for a
	 * choice among more than 256. */
	return (n <= 256 ? fuzz_u8(in) : fuzz_u16(in)) % n;
}

const uint8_t *
fuzz_bytes(struct fuzz_in *in, size_t max, size_t *len)
{
	size_t n = fuzz_u8(in);
	const uint8_t *p;

	if (n > max)
		n = max;
	if (n > in->left)
		n = in->left;
	p = in->p;
	in->p += n;
	in->left -= n;
	*len = n;
	return p;
}

void
fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz: property broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

const uint8_t *
fuzz_next_record(struct fuzz_in *in, size_t *len)
{
	const uint8_t *p;
	uint32_t n;

	if (in->left < CSQ_RECORD_HEADER)
		return NULL;
	n = fuzz_u32(in);
	(void)fuzz_u32(in);
	if (n > in->left)
		n = (uint32_t)in->left;
	p = in->p;
	in->p += n;
	in->left -= n;
	*len = n;
	return p;
}
