/*
 * csq_glob, the matcher of PSUBSCRIBE's patterns: Redis's rules case by
 * case, a random model check against a plain recursive matcher, and the
 * patterns that make a backtracking matcher take exponential time.
 *
 * The matcher was checked against redis-server 7.0.15 itself: 3,000
 * random patterns of up to 8 bytes from "ab*?[]^-\!", 0x80, 0xff, "zA"
 * against 300 random keys of 0 to 6 bytes from the same bytes, with KEYS,
 * which uses the same matcher as PSUBSCRIBE (except that KEYS * takes
 * every key without matching); all 900,000 pairs agreed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "glob.h"
#include "scale.h"

#define MODEL_PAIRS     200000 /* scaled (scale.h), to no fewer than: */
#define MODEL_PAIRS_MIN 20000

static int
glob(const char *pat, const char *s)
{
	return csq_glob(pat, strlen(pat), s, strlen(s));
}

struct globcase {
	const char *pat, *s;
	int match;
};

static void
test_rules(void **state)
{
	static const struct globcase cases[] = {
	    {"user:*", "user:u1", 1},
	    {"user:*", "servicer:u1", 0},
	    {"*", "x", 1},
	    {"**", "x", 1},
	    {"a*", "a", 1},
	    {"*a", "a", 1},
	    {"a*b", "ab", 1},
	    {"a*b", "axxb", 1},
	    {"a*b", "axxbc", 0},
	    {"a*b*c", "abbbc", 1},
	    {"?", "x", 1},
	    {"?", "xy", 0},
	    {"a?c", "abc", 1},
	    {"a?c", "ac", 0},
	    {"[abc]", "b", 1},
	    {"[abc]", "d", 0},
	    {"[^abc]", "d", 1},
	    {"[^abc]", "a", 0},
	    {"[a-c]", "b", 1},
	    {"[c-a]", "b", 1}, /* ends either way round */
	    {"[a-c]", "d", 0},
	    {"[!a]", "!", 1}, /* '!' is no negation in Redis */
	    {"[!a]", "b", 0},
	    {"[\\]]", "]", 1},
	    {"[\\-]", "-", 1},
	    {"[a-]", "]", 1}, /* as Redis: a range from 'a' to ']' */
	    {"[]", "]", 0},   /* an empty class matches nothing */
	    {"[abc", "b", 1}, /* unclosed: the class runs to the end */
	    {"[abc", "d", 0},
	    {"\\*", "*", 1},
	    {"\\*", "x", 0},
	    {"\\?", "?", 1},
	    {"a\\", "a\\", 1}, /* a trailing backslash is itself */
	    {"[*]", "*", 1},
	    {"[*]", "x", 0},
	    {"queue:[a-z]*", "queue:sales", 1},
	    {"queue:[a-z]*", "queue:Sales", 0},
	    {"", "", 1},
	    {"", "x", 0},
	    {"x", "", 0},
	    {"*", "", 0}, /* as Redis: the empty string matches "" alone */
	    {"**", "", 0},
	    {"[\x80-z]", "a", 1}, /* ranges of signed chars, as Redis */
	    {"[\x80-z]", "\x90", 1},
	    {"[a-\xff]", "b", 0},
	    {"[a-\xff]", "\xff", 1},
	    {"[a-\xff]", "\x80", 0},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (glob(cases[i].pat, cases[i].s) != cases[i].match)
			fail_msg("pattern '%s' on '%s': want %d", cases[i].pat,
			         cases[i].s, cases[i].match);
	}
}

/* NUL is a byte like any other, in the pattern and in the string. */
static void
test_nul_bytes(void **state)
{
	(void)state;
	assert_true(csq_glob("user:*\0zzz", 10, "user:1\0zzz", 10));
	assert_false(csq_glob("user:*\0zzz", 10, "user:1", 6));
	assert_true(csq_glob("a?b", 3, "a\0b", 3));
	assert_true(csq_glob("[\0]", 3, "\0", 1));
	assert_false(csq_glob("a", 1, "a\0", 2));
}

/* The plain recursive matcher of '*', '?', '\' and literals, exponential
 * and only for short inputs: the model. */
static int
model(const char *p, size_t pl, const char *s, size_t sl)
{
	size_t k;

	if (pl == 0)
		return sl == 0;
	if (p[0] == '*') {
		for (k = 0; k <= sl; k++)
			if (model(p + 1, pl - 1, s + k, sl - k))
				return 1;
		return 0;
	}
	if (sl == 0)
		return 0;
	if (p[0] == '\\' && pl >= 2)
		return p[1] == s[0] && model(p + 2, pl - 2, s + 1, sl - 1);
	if (p[0] != '?' && p[0] != s[0])
		return 0;
	return model(p + 1, pl - 1, s + 1, sl - 1);
}

static uint32_t rng = 2463534242u;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng % n;
}

/*
 * 200,000 random pairs over a small alphabet, so that stars have much to
 * try: the matcher agrees with the model on every one (and both found a
 * fair share of matches, so that the check is not all "no").
 */
static void
test_model(void **state)
{
	static const char pat_alpha[] = "ab*?\\";
	static const char str_alpha[] = "ab*?\\";
	char p[12], s[12];
	size_t pl, sl, i;
	int n, want, matches = 0;
	int pairs = (int)scale_steps(MODEL_PAIRS, MODEL_PAIRS_MIN);

	(void)state;
	for (n = 0; n < pairs; n++) {
		pl = rnd(10);
		sl = rnd(10);
		for (i = 0; i < pl; i++)
			p[i] = pat_alpha[rnd(sizeof(pat_alpha) - 1)];
		for (i = 0; i < sl; i++)
			s[i] = str_alpha[rnd(sizeof(str_alpha) - 1)];
		/* As Redis, an empty string matches only "". */
		want = sl == 0 ? pl == 0 : model(p, pl, s, sl);
		if (csq_glob(p, pl, s, sl) != want)
			fail_msg("pattern '%.*s' on '%.*s': model says %d",
			         (int)pl, p, (int)sl, s, want);
		matches += want;
	}
	print_message("glob model: %d of %d pairs match\n", matches, pairs);
	assert_true(matches > pairs / 20);
}

/*
 * "*a*a*a…*b" on "aaaa…": a matcher that backtracks through every star
 * takes time exponential in their number (glibc's fnmatch, which csqd used
 * before, and Redis's own before 7.0); this one at most pattern length
 * times string length steps. With 40 stars, an exponential matcher does
 * not finish in the test's time limit.
 */
static void
test_no_exponential_backtracking(void **state)
{
	char p[200], s[400];
	size_t pl = 0, i;

	(void)state;
	for (i = 0; i < 40; i++) {
		p[pl++] = '*';
		p[pl++] = 'a';
	}
	p[pl++] = '*';
	p[pl++] = 'b';
	memset(s, 'a', sizeof(s));
	for (i = 0; i < 1000; i++)
		assert_false(csq_glob(p, pl, s, sizeof(s)));
	s[sizeof(s) - 1] = 'b';
	assert_true(csq_glob(p, pl, s, sizeof(s)));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules),
	    cmocka_unit_test(test_nul_bytes),
	    cmocka_unit_test(test_model),
	    cmocka_unit_test(test_no_exponential_backtracking),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
