/*
 * csqd's events read in one pass: the string values of the keys a scenario
 * asks for, found in a flat JSON object without copying them.
 *
 * A message is scanned once, key by key, whatever it holds: a string
 * (escapes skipped, so a quote or a key's text inside a value is never
 * taken for a key), a number, true, false, null, or a nested object or
 * array, skipped whole. Only the top level's keys count.
 */
#include <string.h>

#include "bench.h"

/*
 * The closing quote of the string whose text starts at p, or NULL: the
 * first quote after no backslash or an even run of them (a JSON escape is
 * a backslash and one byte, or \uXXXX).
 */
static const char *
json_string_end(const char *p, const char *end)
{
	const char *q, *b;

	while (p < end && (q = memchr(p, '"', (size_t)(end - p))) != NULL) {
		for (b = q; b > p && b[-1] == '\\'; b--)
			;
		if ((q - b) % 2 == 0)
			return q;
		p = q + 1;
	}
	return NULL;
}

/* The bytes that end a number, true, false or null, and JSON's spaces. */
enum { JSON_SPACE = 1, JSON_STOP = 2 };
static const unsigned char json_class[256] = {
    [' '] = JSON_SPACE | JSON_STOP,
    ['\t'] = JSON_SPACE | JSON_STOP,
    ['\n'] = JSON_SPACE | JSON_STOP,
    ['\r'] = JSON_SPACE | JSON_STOP,
    [','] = JSON_STOP,
    ['}'] = JSON_STOP,
    [']'] = JSON_STOP,
};

static inline int
json_is_space(char c)
{
	return json_class[(unsigned char)c] & JSON_SPACE;
}

static inline const char *
json_space(const char *p, const char *end)
{
	while (p < end && json_is_space(*p))
		p++;
	return p;
}

/* Past the value that starts at p (p < end), or NULL when it does not end. */
static const char *
json_value_end(const char *p, const char *end)
{
	int depth = 0;

	if (*p == '"') {
		p = json_string_end(p + 1, end);
		return p == NULL ? NULL : p + 1;
	}
	if (*p != '{' && *p != '[') {
		/* A number, true, false or null: up to what ends it. */
		while (p < end && !(json_class[(unsigned char)*p] & JSON_STOP))
			p++;
		return p;
	}
	for (; p < end; p++) {
		if (*p == '"') {
			if ((p = json_string_end(p + 1, end)) == NULL)
				return NULL;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if ((*p == '}' || *p == ']') && --depth == 0) {
			return p + 1;
		}
	}
	return NULL;
}

/*
 * For each of the n keys, out[i] is the text of its string value, between
 * the quotes and as sent (an escape stays as it is), or {NULL, 0} when the
 * object has no such key at its top level or its value is not a string.
 * The first of a key written twice counts. Returns how many keys were
 * found, or -1 when json is not an object this can read or n is over
 * BENCH_JSON_KEYS_MAX (out is then of no use). It stops reading once
 * every key is found.
 */
int
bench_json_strings(const char *json, size_t len, const char *const *keys, int n,
                   struct bench_span *out)
{
	const char *p, *end = json + len, *k, *v;
	size_t klen, keylen[BENCH_JSON_KEYS_MAX];
	int found = 0, i;

	if (n < 0 || n > BENCH_JSON_KEYS_MAX)
		return -1;
	for (i = 0; i < n; i++) {
		out[i].p = NULL;
		out[i].len = 0;
		keylen[i] = strlen(keys[i]);
	}
	p = json_space(json, end);
	if (p >= end || *p++ != '{')
		return -1;
	p = json_space(p, end);
	if (p < end && *p == '}')
		return 0;
	while (p < end) {
		if (*p != '"' || (v = json_string_end(p + 1, end)) == NULL)
			return -1;
		k = p + 1;
		klen = (size_t)(v - k);
		p = json_space(v + 1, end);
		if (p >= end || *p++ != ':')
			return -1;
		p = json_space(p, end);
		if (p >= end || (v = json_value_end(p, end)) == NULL || v == p)
			return -1;
		for (i = 0; i < n && *p == '"'; i++) {
			if (out[i].p != NULL || keylen[i] != klen ||
			    memcmp(keys[i], k, klen) != 0)
				continue;
			out[i].p = p + 1;
			out[i].len = (size_t)(v - p) - 2;
			if (++found == n)
				return found;
			break;
		}
		p = json_space(v, end);
		if (p >= end)
			return -1;
		if (*p == '}')
			return found;
		if (*p++ != ',')
			return -1;
		p = json_space(p, end);
	}
	return -1;
}

/* Whether span s holds exactly the NUL-terminated text t. */
int
bench_span_is(struct bench_span s, const char *t)
{
	return s.p != NULL && strlen(t) == s.len && memcmp(t, s.p, s.len) == 0;
}
