/*
 * csq_glob (PSUBSCRIBE's patterns) against a matcher of another kind: the
 * pattern compiled into a list of byte sets and stars, run as an automaton
 * over the string, every position at once. Both must agree on every
 * pattern and string, NUL bytes and unclosed classes included.
 *
 * The first byte of the input is the pattern's length; the pattern, then
 * the string, follow.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "glob.h"
#include "util.h"

/* One element of a pattern: a star, or a set of bytes that takes one. */
struct elem {
	int star;
	uint8_t set[32]; /* bit c: byte c is in the set */
};

static void
set_add(struct elem *e, unsigned c)
{
	e->set[c >> 3] |= (uint8_t)(1u << (c & 7));
}

static int
set_has(const struct elem *e, unsigned c)
{
	return (e->set[c >> 3] >> (c & 7)) & 1;
}

/*
 * The pattern as elements, by glob.h's rules: '?' is every byte, '\\'
 * takes the next byte (or is itself at the end), "[...]" is a set with
 * '^' negating, "\\x" and ranges "a-z" (either way round, as signed
 * chars) inside, and runs to the pattern's end when not closed.
 */
static size_t
compile(const uint8_t *p, size_t plen, struct elem *out)
{
	size_t i = 0, n = 0;
	unsigned c;
	int neg, lo, hi, t;

	while (i < plen) {
		struct elem *e = &out[n++];

		memset(e, 0, sizeof(*e));
		switch (p[i]) {
		case '*':
			e->star = 1;
			i++;
			break;
		case '?':
			memset(e->set, 0xff, sizeof(e->set));
			i++;
			break;
		case '\\':
			set_add(e, i + 1 < plen ? p[i + 1] : '\\');
			i += i + 1 < plen ? 2 : 1;
			break;
		case '[':
			i++;
			neg = i < plen && p[i] == '^';
			i += neg;
			while (i < plen && p[i] != ']') {
				if (p[i] == '\\' && i + 1 < plen) {
					set_add(e, p[i + 1]);
					i += 2;
				} else if (i + 2 < plen && p[i + 1] == '-') {
					lo = (signed char)p[i];
					hi = (signed char)p[i + 2];
					if (lo > hi) {
						t = lo;
						lo = hi;
						hi = t;
					}
					for (c = 0; c < 256; c++)
						if ((signed char)c >= lo &&
						    (signed char)c <= hi)
							set_add(e, c);
					i += 3;
				} else {
					set_add(e, p[i++]);
				}
			}
			i += i < plen; /* the ']' */
			if (neg)
				for (c = 0; c < 32; c++)
					e->set[c] = (uint8_t)~e->set[c];
			break;
		default:
			set_add(e, p[i++]);
			break;
		}
	}
	return n;
}

/* Adds state k and, past stars (which may take nothing), those after. */
static void
reach(const struct elem *e, size_t n, char *states, size_t k)
{
	while (k <= n && !states[k]) {
		states[k] = 1;
		if (k == n || !e[k].star)
			break;
		k++;
	}
}

static int
automaton(const struct elem *e, size_t n, const uint8_t *s, size_t slen)
{
	char *cur = csq_xcalloc(n + 1, 1), *next = csq_xcalloc(n + 1, 1), *t;
	size_t i, k;
	int match;

	reach(e, n, cur, 0);
	for (i = 0; i < slen; i++) {
		memset(next, 0, n + 1);
		for (k = 0; k < n; k++) {
			if (!cur[k])
				continue;
			if (e[k].star)
				reach(e, n, next, k); /* takes one more */
			else if (set_has(&e[k], s[i]))
				reach(e, n, next, k + 1);
		}
		t = cur;
		cur = next;
		next = t;
	}
	match = cur[n];
	free(cur);
	free(next);
	return match;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p, *s;
	struct elem *e;
	size_t plen, slen, n;
	int got, want;

	if (size < 1)
		return 0;
	plen = data[0] < size - 1 ? data[0] : size - 1;
	p = data + 1;
	s = p + plen;
	slen = size - 1 - plen;
	e = csq_xmalloc((plen + 1) * sizeof(*e));
	n = compile(p, plen, e);
	/* Redis: the empty string matches the empty pattern alone. */
	want = slen == 0 ? plen == 0 : automaton(e, n, s, slen);
	got = csq_glob((const char *)p, plen, (const char *)s, slen);
	if (got != want)
		fuzz_fail("pattern of %zu bytes on %zu bytes: csq_glob says %d",
		          plen, slen, got);
	free(e);
	return 0;
}
