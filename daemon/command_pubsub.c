/*
 * The pub/sub commands: each name given gets its own confirmation, with
 * the client's count of subscriptions after it, as in Redis.
 */
#include "command_pubsub.h"

#include <stdlib.h>

#include "auth.h"
#include "client.h"
#include "pubsub.h"
#include "resp.h"
#include "server.h"
#include "util.h"

static void
reply_subscription(struct client *c, const char *kind, const char *name,
                   size_t len)
{
	struct evbuffer *out = client_output(c);

	resp_push(out, c->proto, 3);
	resp_bulk_str(out, kind);
	if (name != NULL)
		resp_bulk(out, name, len);
	else
		resp_nil(out, c->proto);
	resp_integer(out, (int64_t)pubsub_count(&c->subs));
}

/*
 * Every event is matched against every pattern held (issue 37: one
 * connection with 120,000 patterns made an ENQUEUE and a LEAVE take
 * 232 ms): a connection holds max_client_patterns at most. The new ones
 * of a request are those the connection does not hold yet, each mention
 * counted; over the limit none is taken. 0, or -1 with the error.
 */
static int
patterns_fit(struct client *c, const struct resp_request *req)
{
	int64_t max = c->server->cfg.max_client_patterns;
	size_t more = 0;
	int i;

	for (i = 1; i < req->argc; i++)
		more += !pubsub_has_pattern(&c->subs, req->argv[i],
		                            req->argvlen[i]);
	if (more == 0 || c->subs.npatterns + more <= (uint64_t)max)
		return 0;
	resp_error(client_output(c),
	           "ERR too many patterns (at most %lld a connection)",
	           (long long)max);
	return -1;
}

/*
 * Names outside the role's channels (auth.h) are refused, and so are
 * names longer than max_channel_length, all of the request's
 * before any is taken: csq's channels are short (an id is 64 bytes at
 * most), and every event is matched against every pattern at a cost of
 * the pattern's length times the channel's, on the one thread that also
 * answers everyone else. 0, or -1 with the error replied.
 */
static int
names_fit(struct client *c, const struct resp_request *req, int pattern)
{
	int64_t max = c->server->cfg.max_channel_length;
	const char *what = pattern ? "pattern" : "channel name";
	int i;

	/* First the role's channels, as Redis checks its ACL before it
	 * runs a command (auth.h). */
	for (i = 1; i < req->argc; i++)
		if (!auth_may_subscribe(c, req->argv[i], req->argvlen[i],
		                        pattern)) {
			resp_error(client_output(c),
			           "NOPERM this user has no permissions to "
			           "access one of the channels used as "
			           "arguments");
			return -1;
		}
	for (i = 1; i < req->argc; i++)
		if (req->argvlen[i] > (size_t)max) {
			resp_error(client_output(c),
			           "ERR %s too long (at most %lld bytes)", what,
			           (long long)max);
			return -1;
		}
	return pattern ? patterns_fit(c, req) : 0;
}

void
cmd_subscribe(struct client *c, const struct resp_request *req)
{
	int i;

	if (names_fit(c, req, 0) != 0)
		return;
	for (i = 1; i < req->argc; i++) {
		pubsub_subscribe(c->server->pubsub, c, req->argv[i],
		                 req->argvlen[i]);
		reply_subscription(c, "subscribe", req->argv[i],
		                   req->argvlen[i]);
	}
}

void
cmd_psubscribe(struct client *c, const struct resp_request *req)
{
	int i;

	if (names_fit(c, req, 1) != 0)
		return;
	for (i = 1; i < req->argc; i++) {
		pubsub_psubscribe(c->server->pubsub, c, req->argv[i],
		                  req->argvlen[i]);
		reply_subscription(c, "psubscribe", req->argv[i],
		                   req->argvlen[i]);
	}
}

/* UNSUBSCRIBE (pattern 0) and PUNSUBSCRIBE (1): the names given, or
 * without any, every one the client has, oldest first. */
static void
unsubscribe(struct client *c, const struct resp_request *req, int pattern)
{
	int (*drop)(struct pubsub *, struct client *, const char *, size_t) =
	    pattern ? pubsub_punsubscribe : pubsub_unsubscribe;
	const char *kind = pattern ? "punsubscribe" : "unsubscribe";
	const char *name;
	char *copy;
	size_t len;
	int i;

	if (req->argc == 1 && pubsub_first(&c->subs, pattern, &len) == NULL)
		reply_subscription(c, kind, NULL, 0);
	while (req->argc == 1 &&
	       (name = pubsub_first(&c->subs, pattern, &len)) != NULL) {
		copy = csq_xstrndup(name, len);
		drop(c->server->pubsub, c, copy, len);
		reply_subscription(c, kind, copy, len);
		free(copy);
	}
	for (i = 1; i < req->argc; i++) {
		drop(c->server->pubsub, c, req->argv[i], req->argvlen[i]);
		reply_subscription(c, kind, req->argv[i], req->argvlen[i]);
	}
}

void
cmd_unsubscribe(struct client *c, const struct resp_request *req)
{
	unsubscribe(c, req, 0);
}

void
cmd_punsubscribe(struct client *c, const struct resp_request *req)
{
	unsubscribe(c, req, 1);
}
