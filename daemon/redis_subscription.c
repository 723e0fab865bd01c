/*
 * The Redis engine's events. They come on the subscription, in the order
 * the calls ran, whichever daemon made them; a call's reply carries its
 * own, which go out at once when every earlier event has been seen (with
 * one daemon, always), a hop sooner than their PUBLISH, and their copy on
 * the subscription (the echo) is then skipped.
 */
#include "redis_engine.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define WENT_BACK_LOG_MS 10000 /* at most one "went back" line in 10 s */

/* How many events a message of batch.lua holds: a header line, then an
 * event a line ('' holds none). */
static uint64_t
msg_events(const char *msg, size_t len)
{
	const char *p, *end = msg + len;
	uint64_t n = 0;

	for (p = msg;
	     p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
		n++;
	return n;
}

/*
 * Every reply waits for the events before it, its own or, when it has
 * none, every one published until its call ran (batch.lua), so that a
 * reply that reads what another daemon's call changed never reaches its
 * client before that change's event reaches this daemon's subscribers.
 * The events published before a subscription began will never come: the
 * first reply to a call made under a new subscription says how far they
 * went (all but its own events), and those count as seen. Events
 * published between the subscription's start and that call may still be
 * on their way then; a reply waiting for one of them in that moment goes
 * without it.
 */
void
redis_subscription_sync(struct redis_engine *r, const struct redis_batch *b,
                        const redisReply *msg, uint64_t last)
{
	uint64_t n;

	/* (A batch made with no subscription has sub_gen 0, which matches
	 * only while none was ever confirmed, and then synced_gen too.) */
	if (b->sub_gen != r->sub_gen || r->synced_gen == r->sub_gen)
		return;
	r->synced_gen = r->sub_gen;
	n = msg_events(msg->str, msg->len);
	if (last >= n && last - n > r->seen_event)
		r->seen_event = last - n;
}

static void
sub_event(struct redis_engine *r, const char *json, size_t len, uint64_t ts_ms)
{
	struct csq_event ev;
	uint64_t id;

	if (csq_event_parse(json, len, &ev, &id) != 0) {
		log_warnx("engine redis: an event that is not csq's on %s",
		          r->channel);
		return;
	}
	ev.ts_ms = ts_ms;
	if (r->emit != NULL)
		r->emit(r->emit_arg, &ev);
}

/*
 * A message holds the events of one script call: a line with the last
 * event's id and the time (batch.lua), then the events, one a line.
 * Returns where the events start, with the first line's numbers in *last
 * and *ts_ms, or NULL when the first line is not exactly "<digits>
 * <digits>".
 */
static const char *
msg_head(const char *msg, size_t len, uint64_t *last, uint64_t *ts_ms)
{
	const char *nl = memchr(msg, '\n', len);
	char *p = NULL;

	errno = 0;
	if (nl == NULL || !isdigit((unsigned char)msg[0]))
		return NULL;
	*last = strtoull(msg, &p, 10);
	if (*p != ' ' || !isdigit((unsigned char)p[1]))
		return NULL;
	*ts_ms = strtoull(p + 1, &p, 10);
	if (p != nl || errno != 0)
		return NULL;
	return nl + 1;
}

static void
msg_emit(struct redis_engine *r, const char *msg, const char *end,
         uint64_t ts_ms)
{
	const char *nl;

	for (; msg < end; msg = nl + 1) {
		nl = memchr(msg, '\n', (size_t)(end - msg));
		if (nl == NULL)
			nl = end;
		sub_event(r, msg, (size_t)(nl - msg), ts_ms);
	}
}

/*
 * The ids of the events on the subscription went back from sub_last to
 * last: Redis's state is an older one (Redis restarted without its data, a
 * FLUSHALL, a failover to a replica that was behind) or another deployment
 * publishes on the channel (another database, same prefix). The users and
 * servicers of the lost state are gone, and nothing else would say so.
 * What this daemon knew of the ids is dropped, so that replies wait for
 * their events again; one line per 10 s at most, which counts the others.
 */
static void
went_back(struct redis_engine *r, uint64_t last)
{
	uint64_t now = redis_mono_ms();

	r->seen_event = last;
	r->echo_n = 0;
	if (r->went_back_logged_ms != 0 &&
	    now - r->went_back_logged_ms < WENT_BACK_LOG_MS) {
		r->went_back_unlogged++;
		return;
	}
	log_warnx("engine redis: event ids on %s went back from %llu to %llu: "
	          "Redis lost csq's state (a restart without persistence, a "
	          "FLUSHALL, a failover to a replica behind), or another "
	          "deployment publishes there (same prefix, other database)%s",
	          r->channel, (unsigned long long)r->sub_last,
	          (unsigned long long)last,
	          r->went_back_unlogged > 0 ? "; again since the last line"
	                                    : "");
	r->went_back_logged_ms = now;
	r->went_back_unlogged = 0;
}

/* A message on the subscription, unless it echoes one taken from a reply;
 * one taken from a reply and older than this one was published while the
 * subscription was away, and will not come. */
static void
sub_events(struct redis_engine *r, const char *msg, size_t len)
{
	const char *body;
	uint64_t last, ts_ms;
	int echo = 0;

	if ((body = msg_head(msg, len, &last, &ts_ms)) == NULL) {
		log_warnx("engine redis: a message that is not csq's on %s",
		          r->channel);
		return;
	}
	if (last <= r->sub_last)
		went_back(r, last);
	r->sub_last = last;
	while (r->echo_n > 0 && r->echo[r->echo_head] <= last) {
		echo = r->echo[r->echo_head] == last;
		r->echo_head = (r->echo_head + 1) % ECHO_MAX;
		r->echo_n--;
	}
	if (!echo)
		msg_emit(r, body, msg + len, ts_ms);
	if (last > r->seen_event)
		r->seen_event = last;
}

/*
 * The events of a call this daemon made, from its reply (m, '' when it
 * has none): emitted now when every event before them has been seen, and
 * then skipped when their PUBLISH comes; otherwise left to it. Only while
 * subscribed: an echo never comes to a daemon that is not.
 */
void
redis_subscription_reply(struct redis_engine *r, const redisReply *m)
{
	const char *body, *end = m->str + m->len;
	uint64_t last, ts_ms, n;

	if (m->len == 0 || !r->sub.ready || r->echo_n == ECHO_MAX ||
	    (body = msg_head(m->str, m->len, &last, &ts_ms)) == NULL)
		return;
	n = msg_events(m->str, m->len);
	if (last < n || last - n != r->seen_event)
		return;
	msg_emit(r, body, end, ts_ms);
	r->seen_event = last;
	r->echo[(r->echo_head + r->echo_n++) % ECHO_MAX] = last;
}

void
redis_subscription_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct redis_conn *c = ac->data;
	redisReply *reply = reply_, *kind, *body;

	(void)priv;
	if (c == NULL || reply == NULL)
		return;
	if (reply->type == REDIS_REPLY_ERROR) {
		redis_conn_error(ac, reply, "SUBSCRIBE");
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
	    (kind = reply->element[0])->type != REDIS_REPLY_STRING)
		return;
	body = reply->element[2];
	if (strcmp(kind->str, "subscribe") == 0) {
		/* Nothing published before this is coming. */
		c->r->echo_n = 0;
		c->r->sub_gen++;
		redis_conn_ready(c);
		/* Events missed while away are gone: nothing waits for them. */
		redis_call_flush(c->r, 1);
		return;
	}
	if (strcmp(kind->str, "message") == 0 &&
	    body->type == REDIS_REPLY_STRING) {
		sub_events(c->r, body->str, body->len);
		redis_call_flush(c->r, 0);
	}
}
