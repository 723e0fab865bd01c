/*
 * The Redis engine: the interface of engine.h over Redis (its parts are
 * listed in redis_engine.h). Every operation is checked here as the memory
 * engine checks it, then goes to Redis as a call of csq.so; a tick
 * once a second checks Redis's health and learns the earliest deadline,
 * which another daemon may have set, and the reaper acts on deadlines
 * passed.
 */
#include "engine_redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "redis_engine.h"
#include "util.h"

#define TICK_MS         1000 /* health check and earliest deadline */
#define HEALTH_TIMEOUT  5000 /* ms without an answer: the link is dead */
#define EXPIRE_RETRY_MS 1000 /* a reap that failed waits this long */

static void peek_send(struct redis_engine *);

static struct redis_engine *
redis_engine(struct csq_engine *e)
{
	return (struct redis_engine *)e;
}

/* Up when both connections are; said once per change. */
void
redis_engine_update_up(struct redis_engine *r)
{
	int up = r->cmd.ready && r->sub.ready;

	if (up == r->up)
		return;
	r->up = up;
	/* First the queue policies, which the calls after need. */
	if (up)
		redis_policy_send(r);
	/* At once: the earliest deadline, which others may have set. */
	if (up && r->peek_sent_us == 0)
		peek_send(r);
	{
		struct log_kv kv[] = {
		    LOG_STR("addr", r->addr),
		    LOG_STR("calls", "MODULE"),
		};

		if (up)
			log_kv(LOG_LVL_INFO, "engine redis: up", kv, 2);
		else
			log_kv(LOG_LVL_WARNING,
			       "engine redis: down; commands answer TRYAGAIN "
			       "until it is back",
			       kv, 1);
	}
}

static void
redis_call(struct csq_engine *e, const struct csq_op *op, csq_engine_cb *cb,
           void *arg)
{
	struct redis_engine *r = redis_engine(e);
	struct csq_result res;
	struct redis_call *k;
	enum csq_status status;

	/* Bad input is refused here as the memory engine refuses it, and
	 * an unreachable Redis gets TRYAGAIN at once: nothing half done.
	 * At once, unless earlier calls are still to answer: then in turn.
	 * (The 4 KiB result is zeroed on this path only: its memset was
	 * 1,100 of the 3,400 instructions a match redis_call took,
	 * docs/benchmarks.md, "csqd's CPU a match on the Redis engine".) */
	if ((status = csq_op_validate(op, &r->limits)) != CSQ_OK ||
	    (status = r->up ? CSQ_OK : CSQ_ETRYAGAIN) != CSQ_OK ||
	    redis_call_build(r, op, cb, arg, &k) != 0) {
		memset(&res, 0, sizeof(res));
		res.status = status == CSQ_OK ? CSQ_ERANGE : status;
		if (TAILQ_EMPTY(&r->order)) {
			cb(arg, &res);
			return;
		}
		k = redis_call_new(r, op->code, cb, arg);
		k->res = res;
		TAILQ_INSERT_TAIL(&r->order, k, order);
		redis_call_ready(k, 0);
		return;
	}
	redis_call_send(r, k);
}

static uint64_t
redis_next_deadline(struct csq_engine *e)
{
	struct redis_engine *r = redis_engine(e);
	int64_t local;

	if (r->freeing || !r->up || r->reaping || r->next_redis < 0)
		return UINT64_MAX;
	local = r->next_redis - r->skew_ms;
	return local < 0 ? 0 : (uint64_t)local;
}

static void
deadline_moved(struct redis_engine *r)
{
	if (!r->freeing && r->deadline_changed != NULL)
		r->deadline_changed(r->deadline_arg);
}

static void
expire_done(void *arg, const struct csq_result *res)
{
	struct redis_engine *r = arg;

	r->reaping = 0;
	/* A reap that failed (a key of csq's with the wrong type, say)
	 * leaves its deadline past, and would go again at once, hundreds of
	 * times a second: it waits. The health check, once a second, says
	 * the earliest deadline again. */
	if (res->status != CSQ_OK)
		r->next_redis = (int64_t)r->clock(r->clock_arg) + r->skew_ms +
		                EXPIRE_RETRY_MS;
	deadline_moved(r);
}

static void
redis_expire(struct csq_engine *e)
{
	struct redis_engine *r = redis_engine(e);
	struct csq_op op;

	if (!r->up || r->reaping)
		return;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_EXPIRE;
	r->reaping = 1;
	redis_call(e, &op, expire_done, r);
}

/* The tick: a health check that also learns the earliest deadline, which
 * another daemon may have set. */
static void
peek_done(void *arg, const struct csq_result *res)
{
	struct redis_engine *r = arg;

	if (res->status == CSQ_OK && r->peek_sent_us != 0)
		r->rtt_us = (int64_t)(metrics_now_us() - r->peek_sent_us);
	r->peek_sent_us = 0;
	/* Connected, but every call refused (an ACL that does not cover
	 * csq's keys, a key of csq's with the wrong type): /healthz and
	 * csq_engine_up say down until a health check is answered. A call
	 * lost with a dropped link is the link's business: the first health
	 * check after the link is back, sent at once, clears it. */
	if (res->status != CSQ_OK && r->up && !r->peek_refused) {
		r->peek_refused = 1;
		log_warnx("engine redis: the health check got %s; reporting "
		          "the engine down (see Redis's error above)",
		          csq_status_text(res->status));
	} else if (res->status == CSQ_OK && r->peek_refused) {
		r->peek_refused = 0;
		log_info("engine redis: the health check is answered again");
	}
	deadline_moved(r);
}

/* The limits sent alone have their answer. */
static void
limits_done(void *arg, const struct csq_result *res)
{
	(void)res;
	((struct redis_engine *)arg)->limits_out = 0;
}

/* Limits that no CSQ.CALL has applied yet (a reload, while only reads
 * came): sent alone, so that the module's deadlines act under them
 * within a tick, as when the health check carried them. */
static void
limits_send(struct redis_engine *r)
{
	struct redis_call *k;

	if (r->limits_out || r->limits_applied >= r->limits_gen)
		return;
	k = redis_call_new(r, CSQ_OP_LIMITS, limits_done, r);
	k->limits_only = 1;
	r->limits_out = 1;
	redis_call_send(r, k);
}

static void
peek_send(struct redis_engine *r)
{
	r->peek_sent_us = metrics_now_us();
	redis_call_send(r, redis_call_new(r, CSQ_OP_LIMITS, peek_done, r));
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct redis_engine *r = arg;

	(void)fd, (void)what;
	redis_call_flush(r, 0);
	redis_reply_log_flush(r);
	if (!r->up)
		return;
	limits_send(r);
	if (r->peek_sent_us == 0)
		peek_send(r);
	else if (metrics_now_us() - r->peek_sent_us >
	         (uint64_t)HEALTH_TIMEOUT * 1000)
		redis_conn_drop(&r->cmd, "no answer to the health check");
}

static void
redis_set_limits(struct csq_engine *e, const struct csq_limits *limits)
{
	redis_engine(e)->limits = *limits;
	redis_engine(e)->limits_gen++;
}

static enum csq_status
redis_set_policies(struct csq_engine *e, const struct csq_policy *v, size_t n)
{
	return redis_policy_set(redis_engine(e), v, n);
}

static int
redis_up(struct csq_engine *e)
{
	struct redis_engine *r = redis_engine(e);

	return r->up && !r->peek_refused;
}

static void
redis_free(struct csq_engine *e)
{
	struct redis_engine *r = redis_engine(e);

	r->freeing = 1;
	redis_batch_fail_pending(r);
	redis_call_flush(r, 1);
	redis_conn_close(&r->cmd);
	redis_conn_close(&r->sub);
	redis_conn_close(&r->sen);
	redis_call_flush(r, 1);
	event_free(r->tick);
	event_free(r->flush);
	redis_call_spare_free(r);
	redis_reply_spares_free();
	free(r->cmdbuf);
	free(r->policies);
	free(r);
}

static int64_t
redis_rtt_us(struct csq_engine *e)
{
	struct redis_engine *r = redis_engine(e);

	return r->up ? r->rtt_us : -1;
}

static void
redis_group_begin(struct csq_engine *e)
{
	redis_call_group_begin(redis_engine(e));
}

static void
redis_group_end(struct csq_engine *e)
{
	redis_call_group_end(redis_engine(e));
}

static uint64_t
redis_last_event_id(struct csq_engine *e)
{
	return redis_engine(e)->seen_event;
}

static const struct csq_engine_ops redis_ops = {
    .name = "redis",
    .call = redis_call,
    .next_deadline = redis_next_deadline,
    .expire = redis_expire,
    .set_limits = redis_set_limits,
    .set_policies = redis_set_policies,
    .up = redis_up,
    .rtt_us = redis_rtt_us,
    .last_event_id = redis_last_event_id,
    .group_begin = redis_group_begin,
    .group_end = redis_group_end,
    .free = redis_free,
};

/* With redis.sentinels: where to ask, and for which master. The server's
 * address is the sentinels' answer, not redis.host's. */
static void
engine_sentinels(struct redis_engine *r, const struct config *cfg)
{
	int i;

	for (i = 0; i < cfg->nsentinels; i++)
		if (config_parse_addr(cfg->redis_sentinels[i],
		                      &r->sentinels[r->nsentinels]) == 0)
			r->nsentinels++;
	if (r->nsentinels == 0)
		return;
	snprintf(r->master, sizeof(r->master), "%s", cfg->redis_master);
	r->is_unix = 0;
	snprintf(r->addr, sizeof(r->addr), "%s (from the sentinels)",
	         r->master);
}

struct csq_engine *
engine_redis_new(struct event_base *evb, const struct config *cfg,
                 csq_clock_fn *clock, void *clock_arg, csq_emit_fn *emit,
                 void *emit_arg, void (*deadline_changed)(void *),
                 void (*events_out)(void *), void *arg)
{
	struct redis_engine *r = csq_xcalloc(1, sizeof(*r));
	struct timeval tv = {TICK_MS / 1000, (TICK_MS % 1000) * 1000};
	const char *host = cfg->redis_host;

	r->base.ops = &redis_ops;
	r->evb = evb;
	if (strncmp(host, "unix:", 5) == 0)
		host += 5;
	r->is_unix = host[0] == '/';
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->port = (int)cfg->redis_port;
	if (r->is_unix)
		snprintf(r->addr, sizeof(r->addr), "%s", r->host);
	else
		snprintf(r->addr, sizeof(r->addr), "%s:%d", r->host, r->port);
	snprintf(r->password, sizeof(r->password), "%s", cfg->redis_password);
	r->db = cfg->redis_db;
	snprintf(r->channel, sizeof(r->channel), "{%s}:events",
	         cfg->redis_prefix);
	snprintf(r->state_key, sizeof(r->state_key), "{%s}:state",
	         cfg->redis_prefix);
	engine_sentinels(r, cfg);
	r->wait_replicas = cfg->redis_wait_replicas;
	r->wait_timeout_ms = cfg->redis_wait_timeout_ms;
	r->limits = cfg->limits;
	r->limits_gen = 1;
	redis_policy_init(r, cfg->policies, (size_t)cfg->npolicies);
	r->clock = clock;
	r->clock_arg = clock_arg;
	r->emit = emit;
	r->emit_arg = emit_arg;
	r->deadline_changed = deadline_changed;
	r->events_out = events_out;
	r->deadline_arg = arg;
	r->next_redis = -1;
	r->rtt_us = -1;
	TAILQ_INIT(&r->pending);
	TAILQ_INIT(&r->grouped);
	TAILQ_INIT(&r->order);
	TAILQ_INIT(&r->spare);
	r->flush = event_new(evb, -1, 0, redis_batch_flush_cb, r);
	redis_conn_init(r, &r->cmd, "commands");
	redis_conn_init(r, &r->sub, "events");
	redis_conn_init(r, &r->sen, "sentinel");
	r->tick = event_new(evb, -1, EV_PERSIST, tick_cb, r);
	evtimer_add(r->tick, &tv);
	if (r->nsentinels > 0)
		redis_conn_start(&r->sen); /* which starts the other two */
	redis_conn_start(&r->cmd);
	redis_conn_start(&r->sub);
	return &r->base;
}
