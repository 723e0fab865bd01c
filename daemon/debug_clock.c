/*
 * The test clock (debug_clock.h). Only in builds with CSQ_TEST_CLOCK.
 */
#ifdef CSQ_TEST_CLOCK

#include "debug_clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client.h"
#include "command_arg.h"
#include "command_queue.h"
#include "engine.h"
#include "resp.h"
#include "server.h"

static uint64_t clock_ms;

uint64_t
debug_clock_ms(void)
{
	return clock_ms;
}

static void
debug_clock_done(struct client *c, struct evbuffer *out,
                 const struct csq_result *r, void *arg)
{
	(void)c, (void)arg;
	if (r->status != CSQ_OK)
		resp_error(out, "%s", csq_status_text(r->status));
	else
		resp_simple(out, "OK");
}

void
cmd_debug(struct client *c, const struct resp_request *req)
{
	struct csq_op op;
	unsigned long long ms;
	char *end;

	if (strcasecmp(req->argv[1], "clock") != 0 || req->argc != 3) {
		resp_error(client_output(c),
		           "ERR DEBUG takes CLOCK <ms> only (a test build's)");
		return;
	}
	errno = 0;
	ms = strtoull(req->argv[2], &end, 10);
	if (errno != 0 || end == req->argv[2] || *end != '\0' || ms == 0 ||
	    ms > (1ULL << 52)) {
		resp_error(client_output(c), "ERR value is not an integer or "
		                             "out of range");
		return;
	}
	/* A clock that went back would move waits and deadlines back. */
	if (ms < clock_ms) {
		resp_error(client_output(c), "ERR the test clock never goes "
		                             "back");
		return;
	}
	clock_ms = ms;
	/* The deadlines passed act now, in turn with the calls before, and
	 * their events come before the reply. */
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_EXPIRE;
	command_call_render(c, &op, debug_clock_done, NULL);
}

#endif
