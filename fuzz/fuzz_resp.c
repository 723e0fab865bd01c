/*
 * csqd's RESP request parser (daemon/resp.h) on any bytes, fed at once and
 * in random chunks: both must give the same requests and end the same way
 * (the same error text, or waiting for more), whatever the chunks; and
 * the requests, written again in canonical RESP, must parse back to
 * themselves.
 *
 * The first byte of the input picks the chunks, and with its top bit the
 * limits of a connection before AUTH; the rest is the stream.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "resp_feed.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resp_outcome whole, chunked, again;
	uint32_t seed;
	int authed;

	if (size < 1)
		return 0;
	/* Never 0, which would mean "at once". */
	seed = (uint32_t)(data[0] + 1) * 2654435761u;
	/* Half the inputs as a connection before AUTH, with its limits. */
	authed = (data[0] & 0x80) == 0;
	resp_feed(data + 1, size - 1, 0, authed, &whole);
	resp_feed(data + 1, size - 1, seed, authed, &chunked);
	resp_outcome_same(&whole, &chunked, "at once against in chunks", 1);

	/* Authenticated: an inline request before AUTH may hold more
	 * arguments than a multibulk one (RESP_INLINE_MAX bounds it). */
	resp_feed((const uint8_t *)whole.canon, whole.len, 0, 1, &again);
	if (again.error)
		fuzz_fail("canonical requests refused: %s", again.why);
	resp_outcome_same(&whole, &again, "parsed against written again", 0);

	resp_outcome_free(&whole);
	resp_outcome_free(&chunked);
	resp_outcome_free(&again);
	return 0;
}
