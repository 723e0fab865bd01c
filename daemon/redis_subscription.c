/*
 * The Redis engine's events. They come on the subscription, in the order
 * the calls ran, whichever daemon made them; a call's reply carries its
 * own, which go out at once when every earlier event has been seen (with
 * one daemon, always), a hop sooner than their PUBLISH, and their copy on
 * the subscription (the echo) is then skipped.
 */
#include "redis_engine.h"

#include <string.h>

#include "event_fact.h"
#include "log.h"
#include "msgpack.h"

#define WENT_BACK_LOG_MS    10000 /* at most one "went back" line in 10 s */
#define WENT_BACK_POLICY_MS 1000  /* the policies written again at most */

/*
 * A message holds the events of one CSQ.CALL (csq.so publishes them), as
 * MessagePack: the last event's id, the time, then an array of the events,
 * each an array of its kind and its fields (event_fact.h). The events' ids
 * are those up to the last, in order.
 */
struct redis_msg {
	uint64_t last, ts_ms;
	uint32_t n;           /* events */
	struct msgpack_in in; /* at the first event */
};

/* 0 with m's head read, or -1 for a message that is not csq.so's. */
static int
msg_open(struct redis_msg *m, const char *msg, size_t len)
{
	int64_t last, ts;

	msgpack_init(&m->in, msg, len);
	if (msgpack_int(&m->in, &last) != 0 || msgpack_int(&m->in, &ts) != 0 ||
	    msgpack_array(&m->in, &m->n) != 0 || last < 0 || ts < 0 ||
	    (uint64_t)last < m->n)
		return -1;
	m->last = (uint64_t)last;
	m->ts_ms = (uint64_t)ts;
	return 0;
}

/*
 * Every reply waits for the events before it, its own or, when it has
 * none, every one published until its call ran, so that a
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
	struct redis_msg m;
	uint64_t n = 0;

	/* (A batch made with no subscription has sub_gen 0, which matches
	 * only while none was ever confirmed, and then synced_gen too.) */
	if (b->sub_gen != r->sub_gen || r->synced_gen == r->sub_gen)
		return;
	r->synced_gen = r->sub_gen;
	if (msg->len > 0 && msg_open(&m, msg->str, msg->len) == 0)
		n = m.n;
	if (last >= n && last - n > r->seen_event)
		r->seen_event = last - n;
}

/* One event of m, the index-th: decoded and emitted, or skipped with a
 * line when it is not one this daemon knows. -1 when the message itself
 * is broken there (what follows cannot be read). */
static int
msg_event(struct redis_engine *r, struct redis_msg *m, uint32_t index)
{
	struct csq_fact_value v[CSQ_FACT_FIELDS_MAX], past;
	struct csq_event ev;
	const char *kind;
	size_t klen, i;
	uint32_t n;

	if (msgpack_array(&m->in, &n) != 0 || n < 1 ||
	    msgpack_str(&m->in, &kind, &klen) != 0)
		return -1;
	/* Fields past the most a kind has are a newer module's: read past. */
	for (i = 0; i + 1 < n; i++)
		if (msgpack_fact_value(
		        &m->in, i < CSQ_FACT_FIELDS_MAX ? &v[i] : &past) != 0)
			return -1;
	if (csq_event_from_fact(&ev, kind, klen, v,
	                        n - 1 < CSQ_FACT_FIELDS_MAX
	                            ? n - 1
	                            : CSQ_FACT_FIELDS_MAX) != 0) {
		log_warnx("engine redis: an event that is not csq's on %s: "
		          "%.*s",
		          r->channel, (int)(klen < 32 ? klen : 32), kind);
		return 0;
	}
	ev.id = m->last - m->n + 1 + index;
	ev.ts_ms = m->ts_ms;
	if (r->emit != NULL)
		r->emit(r->emit_arg, &ev);
	return 0;
}

static void
msg_emit(struct redis_engine *r, struct redis_msg *m)
{
	uint32_t i;

	for (i = 0; i < m->n; i++)
		if (msg_event(r, m, i) != 0) {
			log_warnx("engine redis: a message cut short on %s",
			          r->channel);
			return;
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
	/* The queue policies went with the state (issue 37: after a
	 * FLUSHALL csqd went on without them until its link came up
	 * again): written again, at most once a second, for two
	 * deployments on one channel make the ids go back at every
	 * message. */
	if (r->up && (r->policy_rewritten_ms == 0 ||
	              now - r->policy_rewritten_ms >= WENT_BACK_POLICY_MS)) {
		r->policy_rewritten_ms = now;
		redis_policy_send(r);
	}
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
	struct redis_msg m;
	uint64_t last;
	int echo = 0;

	if (msg_open(&m, msg, len) != 0) {
		log_warnx("engine redis: a message that is not csq's on %s",
		          r->channel);
		return;
	}
	last = m.last;
	/* The last message again: a replica promoted by a failover delivers
	 * the PUBLISH it replicated from the old master, from which this
	 * daemon had it already. Its events went out once. */
	if (last == r->sub_last)
		return;
	if (last < r->sub_last)
		went_back(r, last);
	r->sub_last = last;
	while (r->echo_n > 0 && r->echo[r->echo_head] <= last) {
		echo = r->echo[r->echo_head] == last;
		r->echo_head = (r->echo_head + 1) % ECHO_MAX;
		r->echo_n--;
	}
	if (!echo)
		msg_emit(r, &m);
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
	struct redis_msg msg;

	if (m->len == 0 || !r->sub.ready || r->echo_n == ECHO_MAX ||
	    msg_open(&msg, m->str, m->len) != 0 ||
	    msg.last - msg.n != r->seen_event)
		return;
	msg_emit(r, &msg);
	r->seen_event = msg.last;
	r->echo[(r->echo_head + r->echo_n++) % ECHO_MAX] = msg.last;
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
		redis_events_out(c->r);
		redis_call_flush(c->r, 0);
	}
}
