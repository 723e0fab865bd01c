/*
 * The Redis engine behind Sentinel (redis.sentinels, redis.master). A third
 * connection goes to one of the sentinels, in turn: it asks for the
 * master's address (SENTINEL get-master-addr-by-name), which starts the
 * data connections there, then subscribes to +switch-master, which moves
 * them to the new master when a failover ends. The data connections check
 * with ROLE that they reached the master; a server that is not (the
 * sentinels' answer was stale) or that answers a call READONLY (it was
 * demoted under csqd) sends the question to the sentinels again. Until the
 * data connections are up at the master, commands answer TRYAGAIN.
 */
#include "redis_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

void
redis_sentinel_address(struct redis_conn *c, char *host, size_t cap, int *port)
{
	struct redis_engine *r = c->r;
	const struct config_addr *a =
	    &r->sentinels[c->attempt++ % (unsigned)r->nsentinels];

	snprintf(host, cap, "%s", a->host);
	*port = a->port;
}

/* The master is at ip:port: the data connections go there, at once. */
static void
sentinel_master(struct redis_engine *r, const char *ip, size_t iplen,
                long long port)
{
	char host[CONFIG_STR_MAX];

	if (iplen == 0 || iplen >= sizeof(host) || port < 1 ||
	    port > CONFIG_PORT_MAX) {
		log_warnx("engine redis: sentinel: an address for %s that is "
		          "not one",
		          r->master);
		return;
	}
	memcpy(host, ip, iplen);
	host[iplen] = '\0';
	if (!r->have_master || strcmp(host, r->host) != 0 || port != r->port) {
		if (r->have_master)
			log_info("engine redis: %s moved from %s to %s:%lld",
			         r->master, r->addr, host, port);
		else
			log_info("engine redis: %s is at %s:%lld", r->master,
			         host, port);
		snprintf(r->host, sizeof(r->host), "%s", host);
		r->port = (int)port;
		snprintf(r->addr, sizeof(r->addr), "%s:%d (%s)", r->host,
		         r->port, r->master);
		r->have_master = 1;
		/* Calls in flight at the old master get UNSURE, as for any
		 * link that goes; those not sent TRYAGAIN. */
		redis_conn_drop(&r->cmd, "the master moved");
		redis_conn_drop(&r->sub, "the master moved");
	}
	redis_conn_now(&r->cmd);
	redis_conn_now(&r->sub);
}

static void
sentinel_addr_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct redis_conn *c = ac->data;
	redisReply *reply = reply_;
	const redisReply *ip, *port;
	char why[2 * CONFIG_STR_MAX];

	(void)priv;
	if (redis_conn_error(ac, reply, "SENTINEL get-master-addr-by-name"))
		return;
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    (ip = reply->element[0])->type != REDIS_REPLY_STRING ||
	    (port = reply->element[1])->type != REDIS_REPLY_STRING) {
		/* A nil: this sentinel does not monitor that name. Said once
		 * while it lasts, as any failed attempt; the next sentinel is
		 * asked. */
		snprintf(why, sizeof(why),
		         "sentinel at %s:%d knows no master %s",
		         ac->c.tcp.host != NULL ? ac->c.tcp.host : "?",
		         ac->c.tcp.port, c->r->master);
		redis_conn_failed(c, why);
		redisAsyncDisconnect(ac);
		return;
	}
	sentinel_master(c->r, ip->str, ip->len, strtoll(port->str, NULL, 10));
}

/*
 * +switch-master's message: "<name> <old ip> <old port> <new ip> <new
 * port>". Another name's is another master's failover.
 */
static void
sentinel_switch(struct redis_engine *r, const char *msg, size_t len)
{
	char name[CONFIG_STR_MAX], oldip[CONFIG_STR_MAX], ip[CONFIG_STR_MAX];
	char text[4 * CONFIG_STR_MAX];
	long long oldport, port;

	if (len >= sizeof(text))
		return;
	memcpy(text, msg, len);
	text[len] = '\0';
	if (sscanf(text, "%255s %255s %lld %255s %lld", name, oldip, &oldport,
	           ip, &port) != 5 ||
	    strcmp(name, r->master) != 0)
		return;
	sentinel_master(r, ip, strlen(ip), port);
}

static void
sentinel_message_cb(redisAsyncContext *ac, void *reply_, void *priv)
{
	struct redis_conn *c = ac->data;
	redisReply *reply = reply_, *kind;

	(void)priv;
	if (redis_conn_error(ac, reply, "SUBSCRIBE +switch-master"))
		return;
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
	    (kind = reply->element[0])->type != REDIS_REPLY_STRING)
		return;
	if (strcmp(kind->str, "subscribe") == 0)
		redis_conn_ready(c);
	else if (strcmp(kind->str, "message") == 0 &&
	         reply->element[2]->type == REDIS_REPLY_STRING)
		sentinel_switch(c->r, reply->element[2]->str,
		                reply->element[2]->len);
}

void
redis_sentinel_handshake(struct redis_conn *c)
{
	/* Asked first, subscribed second: a failover that ends between the
	 * two is caught by ROLE or READONLY, which ask again. */
	redisAsyncCommand(c->ac, sentinel_addr_cb, NULL,
	                  "SENTINEL get-master-addr-by-name %s", c->r->master);
	redisAsyncCommand(c->ac, sentinel_message_cb, NULL,
	                  "SUBSCRIBE +switch-master");
}

void
redis_sentinel_ask(struct redis_engine *r, const char *why)
{
	if (r->nsentinels == 0 || r->freeing)
		return;
	/* A connection on its way asks when it is there. */
	if (r->sen.ready) {
		log_info("engine redis: %s; asking the sentinels again", why);
		redis_conn_drop(&r->sen, why);
	}
}
