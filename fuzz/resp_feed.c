/* The parsing of fuzz/resp_feed.h. */
#include "resp_feed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "fuzz.h"
#include "resp.h"
#include "util.h"

/* Chunks are 1 to this many bytes, as reads of a socket may be. */
#define FEED_CHUNK_MAX 700

static void
outcome_put(struct resp_outcome *out, const void *p, size_t n)
{
	if (out->len + n > out->cap) {
		out->cap = (out->len + n) * 2 + 64;
		out->canon = csq_xrealloc(out->canon, out->cap);
	}
	memcpy(out->canon + out->len, p, n);
	out->len += n;
}

void
resp_outcome_add(struct resp_outcome *out, const struct resp_request *req)
{
	char hdr[32];
	int i, n;

	if (req->argc < 1)
		fuzz_fail("a request of %d arguments", req->argc);
	n = snprintf(hdr, sizeof(hdr), "*%d\r\n", req->argc);
	outcome_put(out, hdr, (size_t)n);
	for (i = 0; i < req->argc; i++) {
		/* Every argument is NUL-terminated (resp.h). */
		if (req->argv[i][req->argvlen[i]] != '\0')
			fuzz_fail("argument %d is not NUL-terminated", i);
		n = snprintf(hdr, sizeof(hdr), "$%zu\r\n", req->argvlen[i]);
		outcome_put(out, hdr, (size_t)n);
		outcome_put(out, req->argv[i], req->argvlen[i]);
		outcome_put(out, "\r\n", 2);
	}
	out->requests++;
}

/* Parses every request that in holds; 0 when it needs more, -1 after an
 * error. */
static int
drain(struct resp_parser *p, struct evbuffer *in, struct resp_outcome *out)
{
	struct resp_request req = {0};
	enum resp_parse r;

	while ((r = resp_parse(p, in, &req)) == RESP_PARSE_OK)
		resp_outcome_add(out, &req);
	resp_request_clear(&req);
	if (r == RESP_PARSE_ERROR) {
		out->error = 1;
		snprintf(out->why, sizeof(out->why), "%s",
		         resp_parser_error(p));
		return -1;
	}
	if (evbuffer_get_length(in) != 0)
		fuzz_fail("the parser needs more with %zu bytes unread",
		          evbuffer_get_length(in));
	return 0;
}

static uint32_t
next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

void
resp_feed(const uint8_t *data, size_t size, uint32_t chunk_seed, int authed,
          struct resp_outcome *out)
{
	struct resp_parser *p = resp_parser_new();
	struct evbuffer *in = evbuffer_new();
	uint32_t rnd = chunk_seed;
	size_t off = 0, n;

	memset(out, 0, sizeof(*out));
	resp_parser_set_authed(p, authed);
	if (chunk_seed == 0) {
		evbuffer_add(in, data, size);
		drain(p, in, out);
	}
	while (chunk_seed != 0 && off < size) {
		n = next_rand(&rnd) % FEED_CHUNK_MAX + 1;
		/* Mostly small reads: a byte at a time is where a parser
		 * that forgets its place goes wrong. */
		if (next_rand(&rnd) % 4 != 0)
			n = n % 8 + 1;
		if (n > size - off)
			n = size - off;
		/* A chain of its own, as a read into an evbuffer makes; some
		 * wait for the next one, so that the parser sees several. */
		evbuffer_add_reference(in, data + off, n, NULL, NULL);
		off += n;
		if (off < size && next_rand(&rnd) % 3 == 0)
			continue;
		if (drain(p, in, out) != 0)
			break;
	}
	evbuffer_free(in);
	resp_parser_free(p);
}

void
resp_outcome_free(struct resp_outcome *out)
{
	free(out->canon);
	memset(out, 0, sizeof(*out));
}

void
resp_outcome_same(const struct resp_outcome *a, const struct resp_outcome *b,
                  const char *what, int ends_too)
{
	if (a->requests != b->requests || a->len != b->len ||
	    (a->len > 0 && memcmp(a->canon, b->canon, a->len) != 0))
		fuzz_fail("%s: %zu requests (%zu bytes) against %zu (%zu)",
		          what, a->requests, a->len, b->requests, b->len);
	if (ends_too && (a->error != b->error || strcmp(a->why, b->why) != 0))
		fuzz_fail("%s: error %d \"%s\" against %d \"%s\"", what,
		          a->error, a->why, b->error, b->why);
}
