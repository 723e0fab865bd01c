/*
 * The server: sets up the event loop, the engine, pub/sub, the listeners,
 * the deadline timer and the signals, runs the loop, and tears it all down
 * in reverse.
 */
#include "server.h"

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "admin_page.h"
#include "engine_redis.h"
#include "event_record.h"
#include "http.h"
#include "journal.h"
#include "listener.h"
#include "log.h"
#include "loop.h"
#include "debug_clock.h"
#include "metrics.h"
#include "notify.h"
#include "pubsub.h"
#include "tls.h"
#include "util.h"
#include "webhook.h"

#define EVENT_JSON_MAX 4096
#define STOP_GRACE_S   5 /* longest wait for replies in flight at a stop */

uint64_t
server_now_ms(void)
{
	static uint64_t last;
	struct timespec ts;
	uint64_t now;

#ifdef CSQ_TEST_CLOCK
	/* A test's clock, once it set one (debug_clock.h). */
	if ((now = debug_clock_ms()) != 0)
		return now;
#endif
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	/* A clock stepped back must not move deadlines or waits back. */
	if (now < last)
		now = last;
	last = now;
	return now;
}

/*
 * A seed for the hash tables whose keys come from clients (ids, channels,
 * patterns). lib/dict.c's hash can be inverted: under a seed that is
 * known, a client can make any number of keys that fall in one chain.
 * 40,000 such user ids took 12 s to ENQUEUE, against 0.12 s for as many
 * others, and a journal full of them would take as long again at every
 * restart. Without getrandom, the clock and the pid.
 */
static uint64_t
server_random_seed(void)
{
	struct timespec ts;
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) ==
	    (ssize_t)sizeof(seed))
		return seed;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
	       ((uint64_t)getpid() << 16);
}

static uint64_t
server_clock(void *arg)
{
	(void)arg;
	return server_now_ms();
}

/*
 * The events worth an operator's line, at info, as fields: a servicer's
 * login, logout and loss (with how many users went back in line), each
 * user requeued, and with log.audit each match and release. An operation
 * publishes a servicer's requeued events right before its servicer_down,
 * so counting the run of requeued events of one servicer that ends at
 * its servicer_down gives that number. peer: the address of the client
 * whose command caused the event, when this daemon ran it and knows it.
 */
/* The message of an event's line (server_log_event). */
static const char *
server_log_message(const struct csq_event *ev)
{
	switch (ev->type) {
	case CSQ_EV_SERVICER_UP:
		return "servicer logged in";
	case CSQ_EV_SERVICER_DOWN:
		return ev->reason == CSQ_REASON_LOST ? "servicer lost"
		                                     : "servicer logged out";
	case CSQ_EV_REQUEUED:
		return "user requeued";
	case CSQ_EV_MATCHED:
		return "audit: matched";
	default:
		return "audit: released";
	}
}

static void
server_log_event(struct server *s, const struct csq_event *ev)
{
	static char requeuer[CSQ_ID_MAX + 1];
	static unsigned long long requeued;
	struct log_kv kv[9];
	size_t n = 0;

#define KV(x) (kv[n++] = (x))
	switch (ev->type) {
	case CSQ_EV_SERVICER_UP:
		KV(LOG_STR("servicer", ev->servicer));
		KV(LOG_NUM("capacity", ev->capacity));
		KV(LOG_STR("queues", ev->queues));
		break;
	case CSQ_EV_REQUEUED:
		if (strcmp(requeuer, ev->servicer) != 0) {
			snprintf(requeuer, sizeof(requeuer), "%s",
			         ev->servicer);
			requeued = 0;
		}
		requeued++;
		KV(LOG_STR("user", ev->user));
		KV(LOG_STR("queue", ev->queue));
		KV(LOG_NUM("tier", ev->tier));
		KV(LOG_NUM("position", ev->position));
		KV(LOG_STR("servicer", ev->servicer));
		KV(LOG_STR("room", ev->room));
		KV(LOG_STR("reason", csq_reason_name(ev->reason)));
		break;
	case CSQ_EV_SERVICER_DOWN:
		KV(LOG_STR("servicer", ev->servicer));
		KV(LOG_NUM("requeued",
		           strcmp(requeuer, ev->servicer) == 0 ? requeued : 0));
		requeuer[0] = '\0';
		requeued = 0;
		break;
	case CSQ_EV_MATCHED:
		if (!s->cfg.log_audit)
			return;
		KV(LOG_STR("user", ev->user));
		KV(LOG_STR("queue", ev->queue));
		KV(LOG_NUM("tier", ev->tier));
		KV(LOG_STR("servicer", ev->servicer));
		KV(LOG_STR("room", ev->room));
		KV(LOG_NUM("waited_ms", ev->waited_ms));
		break;
	case CSQ_EV_RELEASED:
		if (!s->cfg.log_audit)
			return;
		KV(LOG_STR("user", ev->user));
		KV(LOG_STR("queue", ev->queue));
		KV(LOG_STR("servicer", ev->servicer));
		KV(LOG_STR("room", ev->room));
		KV(LOG_STR("by", csq_reason_name(ev->reason)));
		break;
	default:
		return;
	}
	if (s->log_peer != NULL)
		KV(LOG_STR("peer", s->log_peer));
	KV(LOG_NUM("event_id", ev->id));
#undef KV
	log_kv(LOG_LVL_INFO, server_log_message(ev), kv, n);
}

/* Every event of the engine goes to the channels that want it, as the
 * line the record wrote when there is one: formatted once. */
static void
server_emit(void *arg, const struct csq_event *ev)
{
	struct server *s = arg;
	char json[EVENT_JSON_MAX];
	char channels[CSQ_EVENT_CHANNELS][CSQ_CHANNEL_MAX];
	const char *line = NULL, *msg = json;
	size_t linelen = 0;
	int n, len, i;

	if (s->record != NULL)
		line = event_record_event(s->record, ev, &linelen);
	metrics_event(s->metrics, ev);
	server_log_event(s, ev);
	http_event(s, ev);
	webhooks_event(s->webhooks, ev);
	/* Most events reach nobody: the JSON is built only for a listener. */
	n = csq_event_channels(ev, channels);
	for (i = 0; i < n; i++)
		if (pubsub_wanted(s->pubsub, channels[i], strlen(channels[i])))
			break;
	if (i == n)
		return;
	if (line != NULL && linelen < sizeof(json)) {
		msg = line;
		len = (int)linelen;
	} else
		len = csq_event_json(ev, json, sizeof(json));
	if (len < 0 || (size_t)len >= sizeof(json)) {
		log_warnx("event %s too long to publish",
		          csq_event_name(ev->type));
		return;
	}
	for (i = 0; i < n; i++)
		pubsub_publish(s->pubsub, channels[i], strlen(channels[i]), msg,
		               (size_t)len);
}

void
server_arm_deadline(struct server *s)
{
	uint64_t next = s->engine->ops->next_deadline(s->engine), now, delay;
	struct timeval tv;

	if (next == s->deadline_armed)
		return;
	s->deadline_armed = next;
	if (next == UINT64_MAX) {
		evtimer_del(s->deadline_ev);
		return;
	}
	now = server_now_ms();
	/* One millisecond late rather than early: early wakes do nothing. */
	delay = (next > now ? next - now : 0) + 1;
	tv.tv_sec = (time_t)(delay / 1000);
	tv.tv_usec = (suseconds_t)(delay % 1000) * 1000;
	evtimer_add(s->deadline_ev, &tv);
}

static void
server_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;

	(void)fd, (void)what;
	s->deadline_armed = UINT64_MAX;
	s->engine->ops->expire(s->engine);
	server_arm_deadline(s);
}

void
server_hold_output(struct server *s, struct client *c)
{
	if (c->held || c->state == CLIENT_DEAD ||
	    (!journal_uncommitted(s->journal) &&
	     !event_record_pending(s->record)))
		return;
	c->held = 1;
	client_ref(c);
	if (!c->local)
		bufferevent_disable(c->bev, EV_WRITE);
	if (s->nheld == s->capheld) {
		s->capheld = s->capheld ? s->capheld * 2 : 64;
		s->held = csq_xrealloc(s->held, s->capheld * sizeof(*s->held));
	}
	s->held[s->nheld++] = c;
}

/*
 * What held output waited for is done: it may leave. An active client's
 * goes out now (client_release_output), so that a hold costs no turn of
 * the loop and no epoll_ctl pair to switch EV_WRITE on and off (the
 * record of the day holds every reply that follows an event).
 */
static void
server_release(struct server *s)
{
	struct client *c;
	size_t i;

	for (i = 0; i < s->nheld; i++) {
		c = s->held[i];
		c->held = 0;
		if (c->local)
			client_local_release(c);
		else
			client_release_output(c);
		client_unref(c);
	}
	s->nheld = 0;
}

/* The journal is on disk, or the record written: once both are, what
 * waited for them leaves. */
static void
server_committed(void *arg)
{
	struct server *s = arg;

	if (!journal_uncommitted(s->journal) &&
	    !event_record_pending(s->record))
		server_release(s);
}

void
server_client_gone(struct server *s)
{
	if (s->stopping && TAILQ_EMPTY(&s->clients))
		event_base_loopexit(s->base, NULL);
}

static void
server_stop_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;

	(void)fd, (void)what;
	log_warnx("clients still connected after %d s; stopping anyway",
	          STOP_GRACE_S);
	event_base_loopexit(s->base, NULL);
}

/* SIGTERM, SIGINT: stop accepting, flush the replies in flight, exit. */
static void
server_stop_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *s = arg;
	struct timeval tv = {STOP_GRACE_S, 0};
	struct client *c, *next;

	(void)what;
	if (s->stopping) {
		event_base_loopbreak(s->base);
		return;
	}
	log_info("signal %d: stopping", (int)sig);
	notify_stopping();
	s->stopping = 1;
	listener_close_all(s);
	for (c = TAILQ_FIRST(&s->clients); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		client_close_after_reply(c);
	}
	evtimer_add(s->stop_ev, &tv);
	server_client_gone(s);
}

/* Appends ", name" to a list of keys in buf. */
static void
server_note_key(char *buf, size_t len, const char *name)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s", used > 0 ? ", " : "", name);
}

/* The limits on what a connection may cost (issue 37) that changed. */
static void
server_note_limits(const struct config *cur, const struct config *next,
                   char *buf, size_t len)
{
	static const struct {
		const char *name;
		size_t off;
	} keys[] = {
	    {"auth_timeout", offsetof(struct config, auth_timeout)},
	    {"max_unauth_output", offsetof(struct config, max_unauth_output)},
	    {"max_client_patterns",
	     offsetof(struct config, max_client_patterns)},
	    {"reserved_fds", offsetof(struct config, reserved_fds)},
	    {"http.max_connections",
	     offsetof(struct config, http_max_connections)},
	    {"http.request_timeout",
	     offsetof(struct config, http_request_timeout)},
	    {"http.cache_ms", offsetof(struct config, http_cache_ms)},
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (*(const int64_t *)((const char *)cur + keys[i].off) !=
		    *(const int64_t *)((const char *)next + keys[i].off))
			server_note_key(buf, len, keys[i].name);
}

/*
 * The queue policies of the configuration into the engine. A journal
 * that cannot write leaves the ones before in force: said. (The Redis
 * engine writes them to Redis, now and whenever its link comes up:
 * daemon/redis_policy.c.)
 */
static void
server_apply_policies(struct server *s, struct csq_engine *e)
{
	enum csq_status st;

	if (e->ops->set_policies == NULL)
		return;
	st = csq_engine_set_policies(e, s->cfg.policies,
	                             (size_t)s->cfg.npolicies);
	if (st != CSQ_OK)
		log_warnx("queues: the policies could not be applied (%s); "
		          "the ones before stay in force",
		          csq_status_text(st));
}

/*
 * What can change at run time changes; the rest waits for a restart, and
 * the log says which keys did which. Returns 0, or -1 when the file is
 * invalid and nothing changed.
 */
static int
server_reload(struct server *s)
{
	/* Large (a policy carries its zone): not on the stack; one reload
	 * at a time. */
	static struct config next;
	struct config *cur = &s->cfg;
	const struct csq_limits *a = &cur->limits, *b = &next.limits;
	char *report = NULL, changed[256] = "", later[256] = "";
	size_t reportlen = 0;
	FILE *err;
	int n;

	if (s->config_path == NULL) {
		log_info("SIGHUP: no configuration file, nothing to reload");
		return 0;
	}
	if ((err = open_memstream(&report, &reportlen)) == NULL)
		fatal("open_memstream");
	n = config_load(&next, s->config_path, err);
	fclose(err);
	if (n > 0) {
		log_lines(LOG_LVL_WARNING, report);
		log_warnx("reload of %s failed (%d error%s); keeping the "
		          "running configuration",
		          s->config_path, n, n == 1 ? "" : "s");
		free(report);
		return -1;
	}
	free(report);

	if (a->servicer_ttl_s != b->servicer_ttl_s)
		server_note_key(changed, sizeof(changed), "servicer_ttl");
	if (a->user_ttl_s != b->user_ttl_s)
		server_note_key(changed, sizeof(changed), "user_ttl");
	if (a->max_tier != b->max_tier)
		server_note_key(changed, sizeof(changed), "max_tier");
	if (a->max_queue_length != b->max_queue_length)
		server_note_key(changed, sizeof(changed), "max_queue_length");
	if (a->max_queues != b->max_queues)
		server_note_key(changed, sizeof(changed), "max_queues");
	if (a->offer_timeout_s != b->offer_timeout_s)
		server_note_key(changed, sizeof(changed), "offer_timeout");
	if (a->offer_max_missed != b->offer_max_missed)
		server_note_key(changed, sizeof(changed), "offer_max_missed");
	if (a->offer_retry_s != b->offer_retry_s)
		server_note_key(changed, sizeof(changed), "offer_retry");
	if (a->wrapup_s != b->wrapup_s)
		server_note_key(changed, sizeof(changed), "wrapup");
	if (a->strategy != b->strategy)
		server_note_key(changed, sizeof(changed), "strategy");
	if (cur->max_clients != next.max_clients)
		server_note_key(changed, sizeof(changed), "max_clients");
	if (cur->busy_poll_us != next.busy_poll_us)
		server_note_key(changed, sizeof(changed), "busy_poll_us");
	if (cur->max_output_memory != next.max_output_memory)
		server_note_key(changed, sizeof(changed), "max_output_memory");
	if (cur->max_input_memory != next.max_input_memory)
		server_note_key(changed, sizeof(changed), "max_input_memory");
	if (cur->max_channel_length != next.max_channel_length)
		server_note_key(changed, sizeof(changed), "max_channel_length");
	if (cur->max_multi_commands != next.max_multi_commands)
		server_note_key(changed, sizeof(changed), "max_multi_commands");
	if (cur->max_multi_memory != next.max_multi_memory)
		server_note_key(changed, sizeof(changed), "max_multi_memory");
	server_note_limits(cur, &next, changed, sizeof(changed));
	if (strcmp(cur->requirepass, next.requirepass) != 0)
		server_note_key(changed, sizeof(changed), "requirepass");
	if (cur->nusers != next.nusers ||
	    memcmp(cur->users, next.users,
	           (size_t)next.nusers * sizeof(next.users[0])) != 0)
		server_note_key(changed, sizeof(changed), "users");
	if (cur->log_level != next.log_level)
		server_note_key(changed, sizeof(changed), "log.level");
	if (cur->log_format != next.log_format)
		server_note_key(changed, sizeof(changed), "log.format");
	if (cur->log_audit != next.log_audit)
		server_note_key(changed, sizeof(changed), "log.audit");
	if (cur->npolicies != next.npolicies ||
	    memcmp(cur->policies, next.policies,
	           (size_t)next.npolicies * sizeof(next.policies[0])) != 0)
		server_note_key(changed, sizeof(changed), "queues");
	if (cur->metrics_max_queues != next.metrics_max_queues)
		server_note_key(changed, sizeof(changed), "metrics_max_queues");

	if (next.nlisten != cur->nlisten ||
	    memcmp(next.listen, cur->listen, sizeof(next.listen)) != 0)
		server_note_key(later, sizeof(later), "listen");
	if (strcmp(next.engine, cur->engine) != 0)
		server_note_key(later, sizeof(later), "engine");
	if (strcmp(next.journal, cur->journal) != 0 || next.fsync != cur->fsync)
		server_note_key(later, sizeof(later), "memory");
	if (strcmp(next.record_path, cur->record_path) != 0)
		server_note_key(later, sizeof(later), "record.path");
	if (next.record_fsync != cur->record_fsync ||
	    next.record_rotate_size != cur->record_rotate_size ||
	    next.record_rotate_daily != cur->record_rotate_daily ||
	    next.record_keep_days != cur->record_keep_days ||
	    strcmp(next.record_report, cur->record_report) != 0)
		server_note_key(changed, sizeof(changed), "record");
	if (strcmp(next.redis_host, cur->redis_host) != 0 ||
	    next.redis_port != cur->redis_port ||
	    strcmp(next.redis_password, cur->redis_password) != 0 ||
	    next.redis_db != cur->redis_db ||
	    strcmp(next.redis_prefix, cur->redis_prefix) != 0 ||
	    next.nsentinels != cur->nsentinels ||
	    memcmp(next.redis_sentinels, cur->redis_sentinels,
	           sizeof(next.redis_sentinels)) != 0 ||
	    strcmp(next.redis_master, cur->redis_master) != 0 ||
	    next.redis_wait_replicas != cur->redis_wait_replicas ||
	    next.redis_wait_timeout_ms != cur->redis_wait_timeout_ms)
		server_note_key(later, sizeof(later), "redis");
	if (strcmp(next.http_listen, cur->http_listen) != 0)
		server_note_key(later, sizeof(later), "http.listen");
	if (next.http_tls != cur->http_tls)
		server_note_key(later, sizeof(later), "http.tls");
	if (next.ntls_listen != cur->ntls_listen ||
	    memcmp(next.tls_listen, cur->tls_listen, sizeof(next.tls_listen)) !=
	        0)
		server_note_key(later, sizeof(later), "tls.listen");
	/* The certificate, key and CAs are read again whatever changed:
	 * a renewal rewrites the files under the same names. A failure
	 * keeps the running ones and fails nothing else. */
	if (s->tls != NULL && tls_reload(s->tls, &next) == 0) {
		server_note_key(changed, sizeof(changed), "tls");
		memcpy(cur->tls_cert, next.tls_cert, sizeof(cur->tls_cert));
		memcpy(cur->tls_key, next.tls_key, sizeof(cur->tls_key));
		memcpy(cur->tls_ca, next.tls_ca, sizeof(cur->tls_ca));
		cur->tls_verify_clients = next.tls_verify_clients;
	}
	if (next.http_event_history != cur->http_event_history)
		server_note_key(later, sizeof(later), "http.event_history");
	if (cur->http_max_event_streams != next.http_max_event_streams)
		server_note_key(changed, sizeof(changed),
		                "http.max_event_streams");
	if (cur->http_event_stream_buffer != next.http_event_stream_buffer)
		server_note_key(changed, sizeof(changed),
		                "http.event_stream_buffer");

	/*
	 * Only the keys that take effect now are copied: the rest of
	 * s->cfg must keep describing what runs (INFO, the engine's own
	 * copy of the redis settings).
	 */
	cur->limits = next.limits;
	cur->max_clients = next.max_clients;
	cur->busy_poll_us = next.busy_poll_us;
	cur->max_output_memory = next.max_output_memory;
	cur->max_input_memory = next.max_input_memory;
	cur->max_channel_length = next.max_channel_length;
	cur->max_multi_commands = next.max_multi_commands;
	cur->max_multi_memory = next.max_multi_memory;
	cur->auth_timeout = next.auth_timeout;
	cur->max_unauth_output = next.max_unauth_output;
	cur->max_client_patterns = next.max_client_patterns;
	cur->reserved_fds = next.reserved_fds;
	cur->http_max_connections = next.http_max_connections;
	cur->http_request_timeout = next.http_request_timeout;
	cur->http_cache_ms = next.http_cache_ms;
	cur->http_max_event_streams = next.http_max_event_streams;
	cur->http_event_stream_buffer = next.http_event_stream_buffer;
	cur->record_fsync = next.record_fsync;
	cur->record_rotate_size = next.record_rotate_size;
	cur->record_rotate_daily = next.record_rotate_daily;
	cur->record_keep_days = next.record_keep_days;
	memcpy(cur->record_report, next.record_report,
	       sizeof(cur->record_report));
	admin_page_set_report(cur->record_report);
	if (s->record != NULL)
		event_record_reconfigure(s->record, cur);
	/* A lower cap applies now, not at the next big client. */
	if (cur->max_output_memory > 0)
		event_active(s->weigh_ev, EV_TIMEOUT, 0);
	client_input_limit(s);
	memcpy(cur->requirepass, next.requirepass, sizeof(next.requirepass));
	/* Connections keep the role they have until they AUTH again. */
	cur->nusers = next.nusers;
	memcpy(cur->users, next.users, sizeof(next.users));
	s->engine->ops->set_limits(s->engine, &cur->limits);
	/* After the limits: the new policies are checked against them. */
	if (cur->npolicies != next.npolicies ||
	    memcmp(cur->policies, next.policies,
	           (size_t)next.npolicies * sizeof(next.policies[0])) != 0) {
		cur->npolicies = next.npolicies;
		memcpy(cur->policies, next.policies,
		       (size_t)next.npolicies * sizeof(next.policies[0]));
		server_apply_policies(s, s->engine);
	} else if (strcmp(cur->engine, "redis") == 0)
		/* Written again however the file changed: Redis may have
		 * lost them (a FLUSHALL, an older Redis restored), and a
		 * reload is how an operator puts them back (issue 37). */
		server_apply_policies(s, s->engine);
	cur->metrics_max_queues = next.metrics_max_queues;
	metrics_set_max_queues(s->metrics, (size_t)cur->metrics_max_queues);
	/* The reload's own lines show at the more verbose of the two log
	 * levels: a reload to "warning" still says it happened. */
	if (next.log_level < cur->log_level)
		log_set_level(next.log_level);
	if (cur->nwebhooks != next.nwebhooks ||
	    memcmp(cur->webhooks, next.webhooks,
	           (size_t)next.nwebhooks * sizeof(next.webhooks[0])) != 0) {
		/* Unchanged entries go on as they were (webhook.h). */
		cur->nwebhooks = next.nwebhooks;
		memcpy(cur->webhooks, next.webhooks,
		       (size_t)next.nwebhooks * sizeof(next.webhooks[0]));
		s->webhooks = webhooks_reload(s->webhooks, s->base, cur);
		metrics_set_webhooks(s->metrics, s->webhooks);
		server_note_key(changed, sizeof(changed), "webhooks");
	}
	if (later[0] != '\0')
		log_warnx("reload: %s changed; that takes effect at the next "
		          "start",
		          later);
	{
		struct log_kv kv[] = {
		    LOG_STR("path", s->config_path),
		    LOG_STR("changed",
		            changed[0] != '\0' ? changed : "nothing"),
		};

		log_kv(LOG_LVL_INFO, "configuration reloaded", kv, 2);
	}
	cur->log_level = next.log_level;
	log_set_level(cur->log_level);
	cur->log_format = next.log_format;
	log_set_format(cur->log_format);
	cur->log_audit = next.log_audit;
	return 0;
}

/* SIGHUP; the service manager sees the reload begin and end. */
static void
server_reload_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *s = arg;

	(void)sig, (void)what;
	notify_reloading();
	if (server_reload(s) == 0)
		notify_ready("serving (configuration reloaded)");
	else
		notify_ready("serving (reload failed: invalid configuration, "
		             "the running one kept)");
}

/* The Redis engine has emitted a reply's events: out now (client.h). */
static void
server_events_out(void *arg)
{
	client_flush_pushed(arg);
}

/* The Redis engine learned of a new earliest deadline on its own. */
static void
server_deadline_moved(void *arg)
{
	server_arm_deadline(arg);
}

static struct csq_engine *
server_engine(struct server *s)
{
	struct csq_engine *e;

	if (strcmp(s->cfg.engine, "memory") == 0) {
		e = csq_engine_memory_new(&s->cfg.limits, server_random_seed(),
		                          server_clock, s, server_emit, s);
		/* Durability asked for and not given is a reason not to
		 * start: the journal opens (and replays) or csqd stops. */
		if (s->cfg.journal[0] != '\0' &&
		    (s->journal = journal_open(s->base, s->cfg.journal,
		                               s->cfg.fsync, e)) == NULL) {
			e->ops->free(e);
			return NULL;
		}
		if (s->journal != NULL)
			journal_set_commit_cb(s->journal, server_committed, s);
		else
			/* One line, at start: a restart that empties every
			 * queue must not come as a surprise. */
			log_warnx("memory engine without a journal "
			          "(memory.journal is \"\"): a restart loses "
			          "every user, servicer and room; set "
			          "memory.journal to keep them");
		/* The replay applied the limits and policies of earlier
		 * reloads; the configuration of this start is the one that
		 * holds. */
		e->ops->set_limits(e, &s->cfg.limits);
		server_apply_policies(s, e);
		return e;
	}
	return engine_redis_new(s->base, &s->cfg, server_clock, s, server_emit,
	                        s, server_deadline_moved, server_events_out, s);
}

/*
 * An engine that connects in the background (Redis) gets a moment before
 * the listeners open, so that the first clients are not told TRYAGAIN
 * for no better reason than a start. Without it after ENGINE_WAIT_MS, csqd
 * serves anyway: commands get TRYAGAIN until the engine is up, and a
 * Redis that is down must not keep csqd from starting.
 */
#define ENGINE_WAIT_MS 3000

static void
server_wait_engine(struct server *s)
{
	struct timeval step = {0, 20000};
	uint64_t until = server_now_ms() + ENGINE_WAIT_MS;

	while (!s->engine->ops->up(s->engine) && !s->stopping &&
	       server_now_ms() < until) {
		event_base_loopexit(s->base, &step);
		event_base_dispatch(s->base);
	}
	if (!s->engine->ops->up(s->engine) && !s->stopping)
		log_warnx("engine %s is not up yet; serving anyway, state "
		          "commands answer TRYAGAIN until it is",
		          s->engine->ops->name);
}

int
server_run(const struct config *cfg, const char *config_path)
{
	struct server *s = csq_xcalloc(1, sizeof(*s));
	struct client *c;
	char ready[128];
	int status = 1;

	s->cfg = *cfg;
	s->config_path = config_path;
	s->started_ms = server_now_ms();
	s->deadline_armed = UINT64_MAX;
	TAILQ_INIT(&s->clients);
	TAILQ_INIT(&s->pushed);
	signal(SIGPIPE, SIG_IGN);
	/* A journal over the file size limit fails a write with EFBIG, which
	 * is answered as a full disk is (TRYAGAIN), not the end of csqd. */
	signal(SIGXFSZ, SIG_IGN);
	if ((s->base = event_base_new()) == NULL)
		fatalx("cannot create the event loop");
	s->pubsub = pubsub_new(server_random_seed());
	s->metrics = metrics_new(server_random_seed(),
	                         (size_t)s->cfg.metrics_max_queues);
	s->webhooks = webhooks_new(s->base, &s->cfg);
	metrics_set_webhooks(s->metrics, s->webhooks);
	s->deadline_ev = evtimer_new(s->base, server_deadline_cb, s);
	s->stop_ev = evtimer_new(s->base, server_stop_timeout_cb, s);
	s->trim_ev = evtimer_new(s->base, client_trim_cb, s);
	s->weigh_ev = evtimer_new(s->base, client_weigh_cb, s);
	s->sig_term = evsignal_new(s->base, SIGTERM, server_stop_cb, s);
	s->sig_int = evsignal_new(s->base, SIGINT, server_stop_cb, s);
	s->sig_hup = evsignal_new(s->base, SIGHUP, server_reload_cb, s);
	evsignal_add(s->sig_term, NULL);
	evsignal_add(s->sig_int, NULL);
	evsignal_add(s->sig_hup, NULL);

	admin_page_set_report(s->cfg.record_report);
	/* Before the engine, whose first events (the Redis engine's
	 * subscription) the record must not miss. */
	if (s->cfg.record_path[0] != '\0') {
		if ((s->record = event_record_open(s->base, &s->cfg)) == NULL)
			goto out;
		event_record_set_flush_cb(s->record, server_committed, s);
	}
	if ((s->engine = server_engine(s)) == NULL)
		goto out;
	server_wait_engine(s);
	if (s->stopping) {
		status = 0;
		goto out;
	}
	if ((s->cfg.ntls_listen > 0 || s->cfg.http_tls) &&
	    (s->tls = tls_new(&s->cfg)) == NULL) {
		/* The line before says why (tls_new logs it as a warning,
		 * which is what it is at a reload); at a start it stops
		 * csqd. */
		log_error("tls: cannot load the certificate, key or CA; not "
		          "starting: fix them or change tls.cert, tls.key, "
		          "tls.ca");
		goto out;
	}
	if (listener_open_all(s) != 0 || http_open(s) != 0)
		goto out;
	log_info("csqd %s ready, engine %s", CSQ_VERSION, s->engine->ops->name);
	notify_init(s->base);
	snprintf(ready, sizeof(ready), "serving on %d address%s, engine %s",
	         s->cfg.nlisten, s->cfg.nlisten == 1 ? "" : "es",
	         s->engine->ops->name);
	notify_ready(ready);
	server_arm_deadline(s);
	loop_run(s->base, &s->cfg.busy_poll_us);
	status = 0;
	log_info("stopped");
out:
	listener_close_all(s);
	http_close(s);
	notify_close();
	while ((c = TAILQ_FIRST(&s->clients)) != NULL)
		client_close(c, "server stopping");
	server_release(s);
	journal_close(s->journal);
	event_record_close(s->record);
	free(s->held);
	if (s->engine != NULL)
		s->engine->ops->free(s->engine);
	tls_free(s->tls);
	pubsub_free(s->pubsub);
	webhooks_free(s->webhooks);
	metrics_free(s->metrics);
	event_free(s->deadline_ev);
	event_free(s->stop_ev);
	event_free(s->trim_ev);
	event_free(s->weigh_ev);
	event_free(s->sig_term);
	event_free(s->sig_int);
	event_free(s->sig_hup);
	event_base_free(s->base);
	free(s);
	return status;
}
