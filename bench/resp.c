/*
 * Commands written as RESP without a format string: hiredis's
 * redisAsyncCommand parses its format and builds each word as an sds for
 * every command, which cost csq-bench more instructions a match than
 * anything else it did (docs/benchmarks.md, "csq-bench's own CPU a
 * match"). The bytes are the same.
 */
#include <string.h>

#include "bench.h"

#define RESP_DEC_MAX 20 /* digits of the largest unsigned long long */

/* Writes v in decimal at p; returns the digits written. */
size_t
bench_resp_ulong(char *p, unsigned long long v)
{
	char tmp[RESP_DEC_MAX];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

/* The digits of v in decimal. */
static size_t
resp_digits(unsigned long long v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/*
 * Writes the command as RESP into buf, byte for byte what hiredis's
 * redisFormatCommandArgv makes of it. Returns its length, or 0 when it
 * does not fit in cap bytes or has no word.
 */
size_t
bench_resp_cmd(char *buf, size_t cap, int argc, const char *const *argv,
               const size_t *argvlen)
{
	size_t len = 0, need;
	int i;

	if (argc < 1)
		return 0;
	/* "*" argc "\r\n", then "$" len "\r\n" word "\r\n" each. */
	need = 1 + resp_digits((unsigned long long)argc) + 2;
	for (i = 0; i < argc; i++)
		need += 1 + resp_digits(argvlen[i]) + 2 + argvlen[i] + 2;
	if (need > cap)
		return 0;
	buf[len++] = '*';
	len += bench_resp_ulong(buf + len, (unsigned long long)argc);
	buf[len++] = '\r';
	buf[len++] = '\n';
	for (i = 0; i < argc; i++) {
		buf[len++] = '$';
		len += bench_resp_ulong(buf + len, argvlen[i]);
		buf[len++] = '\r';
		buf[len++] = '\n';
		memcpy(buf + len, argv[i], argvlen[i]);
		len += argvlen[i];
		buf[len++] = '\r';
		buf[len++] = '\n';
	}
	return len;
}
