/*
 * Inline requests (lines split with the quoting rules of Redis's
 * sdssplitargs) through csqd's parser: a line that starts with '*' would
 * be a multibulk request, so such a byte becomes a space. At once and in
 * chunks, the requests must be the same; and each request, written again
 * as an inline line with every argument quoted (double quotes and \xHH
 * escapes, single quotes, or bare, as the input picks), must parse back
 * to the same arguments.
 *
 * The first byte of the input picks the chunks and the quoting, and with
 * its top bit the limits of a connection before AUTH.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "resp_feed.h"
#include "util.h"

struct line {
	char *buf;
	size_t len, cap;
};

static void
line_put(struct line *l, const void *p, size_t n)
{
	if (l->buf == NULL || l->len + n > l->cap) {
		l->cap = (l->len + n) * 2 + 64;
		l->buf = csq_xrealloc(l->buf, l->cap);
	}
	memcpy(l->buf + l->len, p, n);
	l->len += n;
}

/* Whether arg can go bare: no byte that ends or quotes a token. */
static int
bare_ok(const char *arg, size_t len)
{
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++)
		if (strchr(" \t\r\n\v\f\"'", arg[i]) != NULL || arg[i] == '\0')
			return 0;
	return 1;
}

/* Whether arg can go in single quotes: no quote, no line end, and no
 * backslash at its end (it would escape the closing quote). */
static int
squote_ok(const char *arg, size_t len)
{
	return memchr(arg, '\'', len) == NULL &&
	       memchr(arg, '\n', len) == NULL &&
	       (len == 0 || arg[len - 1] != '\\');
}

static void
quote_arg(struct line *l, const char *arg, size_t len, unsigned style)
{
	char esc[5];
	size_t i;
	unsigned char c;

	if (style == 1 && bare_ok(arg, len)) {
		line_put(l, arg, len);
		return;
	}
	if (style == 2 && squote_ok(arg, len)) {
		line_put(l, "'", 1);
		line_put(l, arg, len);
		line_put(l, "'", 1);
		return;
	}
	line_put(l, "\"", 1);
	for (i = 0; i < len; i++) {
		c = (unsigned char)arg[i];
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			line_put(l, esc, 2);
		} else if (c >= 0x20 && c < 0x7f) {
			line_put(l, &arg[i], 1);
		} else {
			snprintf(esc, sizeof(esc), "\\x%02x", c);
			line_put(l, esc, 4);
		}
	}
	line_put(l, "\"", 1);
}

/* Writes the canonical requests of canon again as quoted inline lines. */
static void
requote(const char *canon, size_t len, unsigned style, struct line *l)
{
	const char *p, *end;
	unsigned long argc, i, n;
	char *next;

	if (len == 0)
		return; /* and canon may be NULL */
	for (p = canon, end = canon + len; p < end;) {
		argc = strtoul(p + 1, &next, 10); /* "*argc\r\n" */
		p = next + 2;
		for (i = 0; i < argc; i++) {
			n = strtoul(p + 1, &next, 10); /* "$n\r\n" */
			p = next + 2;
			if (i > 0)
				line_put(l, " ", 1);
			/* A line that starts with '*' is multibulk. */
			quote_arg(l, p, n,
			          i == 0 && n > 0 && p[0] == '*'
			              ? 0
			              : (style + (unsigned)i) % 3);
			p += n + 2;
		}
		line_put(l, "\r\n", 2);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resp_outcome whole, chunked, again;
	struct line l = {0};
	uint8_t *text;
	uint32_t seed;
	int authed;
	size_t i;

	if (size < 1)
		return 0;
	seed = (uint32_t)(data[0] + 1) * 2654435761u;
	/* Half the inputs as a connection before AUTH, with its limits. */
	authed = (data[0] & 0x80) == 0;
	text = csq_xmalloc(size);
	memcpy(text, data + 1, size - 1);
	for (i = 0; i < size - 1; i++)
		if (text[i] == '*' && (i == 0 || text[i - 1] == '\n'))
			text[i] = ' ';
	resp_feed(text, size - 1, 0, authed, &whole);
	resp_feed(text, size - 1, seed, authed, &chunked);
	resp_outcome_same(&whole, &chunked, "at once against in chunks", 1);

	line_put(&l, "", 0);
	requote(whole.canon, whole.len, data[0] % 3, &l);
	resp_feed((const uint8_t *)l.buf, l.len, 0, 1, &again);
	if (again.error)
		fuzz_fail("requoted requests refused: %s", again.why);
	resp_outcome_same(&whole, &again, "parsed against quoted again", 0);

	resp_outcome_free(&whole);
	resp_outcome_free(&chunked);
	resp_outcome_free(&again);
	free(l.buf);
	free(text);
	return 0;
}
