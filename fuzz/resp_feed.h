/*
 * What the RESP targets share: a stream of bytes parsed by csqd's request
 * parser (daemon/resp.h), either all at once or cut into chunks the way
 * reads from a socket cut it, with every request written down in
 * canonical RESP so that two parses can be compared byte for byte.
 */
#ifndef CSQ_FUZZ_RESP_FEED_H
#define CSQ_FUZZ_RESP_FEED_H

#include <stddef.h>
#include <stdint.h>

struct resp_request;

/* Everything one parse of a stream gave. */
struct resp_outcome {
	char *canon; /* every request as "*n\r\n$len\r\n...\r\n" */
	size_t len, cap;
	size_t requests;
	int error; /* the stream ended in a protocol error */
	char why[256];
};

/*
 * Parses data, with the limits of a connection before AUTH unless authed.
 * chunk_seed 0: all of it at once; otherwise in chunks of pseudo-random
 * sizes (from the seed), sometimes several of them queued before the
 * parser runs. The outcome is freed with resp_outcome_free.
 */
void resp_feed(const uint8_t *data, size_t size, uint32_t chunk_seed,
               int authed, struct resp_outcome *out);
void resp_outcome_free(struct resp_outcome *);
/* Aborts unless a and b hold the same requests and, with ends_too, end
 * the same way; what names the two ways of parsing. */
void resp_outcome_same(const struct resp_outcome *a,
                       const struct resp_outcome *b, const char *what,
                       int ends_too);
/* Appends one request to out->canon. */
void resp_outcome_add(struct resp_outcome *out, const struct resp_request *);

#endif
