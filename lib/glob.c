/* Redis's glob patterns, at a cost bounded by the product of the lengths. */
#include "glob.h"

/*
 * One element of a pattern, at p[*pi], not '*', against the byte c:
 * whether it matches; *pi moves past it. As Redis's stringmatchlen.
 */
static int
glob_one(const char *p, size_t plen, size_t *pi, unsigned char c)
{
	size_t i = *pi;
	int match = 0, negated;

	switch (p[i]) {
	case '?':
		*pi = i + 1;
		return 1;
	case '[':
		i++;
		negated = i < plen && p[i] == '^';
		if (negated)
			i++;
		for (; i < plen && p[i] != ']'; i++) {
			if (p[i] == '\\' && i + 1 < plen) {
				i++;
				match |= (unsigned char)p[i] == c;
			} else if (i + 2 < plen && p[i + 1] == '-') {
				/* As signed chars, as Redis on x86-64 compares
				 * them: [\x80-z] holds the ASCII bytes. */
				signed char lo = (signed char)p[i];
				signed char hi = (signed char)p[i + 2];
				signed char sc = (signed char)c;

				if (lo > hi) {
					signed char t = lo;

					lo = hi;
					hi = t;
				}
				match |= sc >= lo && sc <= hi;
				i += 2;
			} else {
				match |= (unsigned char)p[i] == c;
			}
		}
		*pi = i < plen ? i + 1 : i;
		return match != negated;
	case '\\':
		if (i + 1 < plen)
			i++;
		/* FALLTHROUGH */
	default:
		*pi = i + 1;
		return (unsigned char)p[i] == c;
	}
}

/*
 * Every element but '*' takes one byte, so on a mismatch it is enough to
 * go back to the last '*' and let it take one byte more: no element is
 * tried at a position twice from the same '*', and the cost is at most
 * plen * slen, where a recursive matcher (or glibc's fnmatch on some
 * patterns) is exponential in the number of stars.
 */
int
csq_glob(const char *p, size_t plen, const char *s, size_t slen)
{
	size_t pi = 0, si = 0, star = 0, from = 0, next;
	int starred = 0;

	/* Redis: an empty string matches the empty pattern alone, not "*". */
	if (slen == 0)
		return plen == 0;

	while (si < slen) {
		if (pi < plen && p[pi] == '*') {
			while (pi < plen && p[pi] == '*')
				pi++;
			if (pi == plen)
				return 1;
			starred = 1;
			star = pi;
			from = si;
			continue;
		}
		next = pi;
		if (pi < plen &&
		    glob_one(p, plen, &next, (unsigned char)s[si])) {
			pi = next;
			si++;
			continue;
		}
		if (!starred)
			return 0;
		pi = star;
		si = ++from;
	}
	while (pi < plen && p[pi] == '*')
		pi++;
	return pi == plen;
}
