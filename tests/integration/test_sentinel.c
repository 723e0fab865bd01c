/*
 * The Redis engine behind Sentinel (protocol-v2 section 12): a master, a
 * replica and a Sentinel (redis-sentinel), each started here on a free
 * port; csqd given only the Sentinel and the master's name. It finds the
 * master, follows a failover forced with SENTINEL FAILOVER while a client
 * enqueues as fast as it is answered, answers TRYAGAIN meanwhile, and
 * with redis.wait_replicas = 1 loses not one acknowledged ENQUEUE. With 0
 * the run prints how many it lost (acknowledged by the old master after
 * the replica was promoted: Redis's asynchronous replication allows it).
 * Master and replica both load csq.so, with Redis's own clock as in
 * production: the state replicates as the module's records, and the
 * promoted replica takes the deadlines over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MASTER    "csqmaster"
#define PREFIX    "sentinel"
#define BEFORE    300   /* acknowledged ENQUEUEs before the failover */
#define AFTER     300   /* and after csqd follows it */
#define USERS_MAX 20000 /* the most a run enqueues */
/* csqd serves at the new master, which has its replica again (the old
 * master, demoted and synced: with wait_replicas = 1 nothing is
 * acknowledged until then), by then. */
#define FOLLOW_MS 60000
#define READY_MS  15000 /* the replica syncs; the Sentinel sees it */
#define POLL_MS   50

struct trio {
	struct redisd *master, *replica, *sentinel;
	struct csqd *d;
};

/* The value of field in an INFO section's text, or "" (into out). */
static void
info_value(const char *info, const char *field, char *out, size_t cap)
{
	const char *p = strstr(info, field);
	size_t n = 0;

	out[0] = '\0';
	if (p == NULL || p[strlen(field)] != ':')
		return;
	p += strlen(field) + 1;
	while (p[n] != '\r' && p[n] != '\n' && p[n] != '\0' && n + 1 < cap)
		n++;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* Waits until what() says yes, or fails with text after READY_MS. */
static void
wait_until(int (*what)(struct trio *), struct trio *t, const char *text)
{
	int64_t until = now_ms() + READY_MS;

	while (!what(t)) {
		if (now_ms() > until)
			fail_msg("not within %d ms: %s", READY_MS, text);
		sleep_ms(POLL_MS);
	}
}

static int
replica_synced(struct trio *t)
{
	redisContext *c = redisd_connect(t->replica);
	redisReply *r = CMD(c, "INFO replication");
	char v[32];

	info_value(r->str, "master_link_status", v, sizeof(v));
	freeReplyObject(r);
	redisFree(c);
	return strcmp(v, "up") == 0;
}

/* CSQ.DIGEST of the state on r, into out ("" when r has none). */
static void
state_digest(struct redisd *r, char *out, size_t cap)
{
	redisContext *c = redisd_connect(r);
	redisReply *rep = CMD(c, "CSQ.DIGEST {" PREFIX "}:state");

	snprintf(out, cap, "%s",
	         rep->type == REDIS_REPLY_STATUS ? rep->str : "");
	freeReplyObject(rep);
	redisFree(c);
}

/* Master and replica (after a failover: the other way round) hold the
 * same state, byte for byte (the module's digest). */
static int
digests_equal(struct trio *t)
{
	char a[128], b[128];

	state_digest(t->replica, a, sizeof(a));
	state_digest(t->master, b, sizeof(b));
	return a[0] != '\0' && strcmp(a, b) == 0;
}

/* The field of a SENTINEL REPLICAS entry (name, value, ...), or "". */
static const char *
entry_field(const redisReply *e, const char *name)
{
	size_t i;

	for (i = 0; e->type == REDIS_REPLY_ARRAY && i + 1 < e->elements; i += 2)
		if (e->element[i]->type == REDIS_REPLY_STRING &&
		    e->element[i + 1]->type == REDIS_REPLY_STRING &&
		    strcmp(e->element[i]->str, name) == 0)
			return e->element[i + 1]->str;
	return "";
}

/* The Sentinel knows the replica (it learns it from the master's INFO),
 * has asked it for its own INFO and found it linked to the master: a
 * candidate for SENTINEL FAILOVER (else -NOGOODSLAVE). */
static int
sentinel_sees_replica(struct trio *t)
{
	redisContext *c = redisd_connect(t->sentinel);
	redisReply *r = CMD(c, "SENTINEL REPLICAS %s", MASTER);
	int ok =
	    r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	    strcmp(entry_field(r->element[0], "flags"), "slave") == 0 &&
	    strcmp(entry_field(r->element[0], "master-link-status"), "ok") == 0;

	freeReplyObject(r);
	redisFree(c);
	return ok;
}

static void
trio_start(struct trio *t, int wait_replicas)
{
	char conf[512];
	redisContext *c;
	redisReply *r;

	memset(t, 0, sizeof(*t));
	t->master = redisd_start(REDISD_MODULE_CLOCK);
	t->replica = redisd_start(REDISD_MODULE_CLOCK);
	c = redisd_connect(t->replica);
	r = CMD(c, "REPLICAOF 127.0.0.1 %d", t->master->port);
	assert_reply_status(r, "OK");
	freeReplyObject(r);
	redisFree(c);
	wait_until(replica_synced, t, "the replica syncs");
	t->sentinel = redisd_start_sentinel(t->master->port, MASTER);
	wait_until(sentinel_sees_replica, t, "the Sentinel sees the replica");
	snprintf(conf, sizeof(conf),
	         "redis: { sentinels = [ \"127.0.0.1:%d\" ]; master = \"%s\"; "
	         "prefix = \"%s\"; wait_replicas = %d; };",
	         t->sentinel->port, MASTER, PREFIX, wait_replicas);
	t->d = csqd_start_redis_conf(conf, "user_ttl = 0;");
	csqd_wait_engine(t->d);
}

static void
trio_stop(struct trio *t)
{
	assert_int_equal(csqd_stop(t->d), 0);
	redisd_free(t->sentinel);
	redisd_free(t->replica);
	redisd_free(t->master);
}

/* csqd asked the Sentinel and went to the master it named. */
static void
finds_the_master(void **state)
{
	struct trio t;
	char want[96];
	redisContext *c;
	redisReply *r;

	(void)state;
	trio_start(&t, 0);
	snprintf(want, sizeof(want), "%s is at 127.0.0.1:%d", MASTER,
	         t.master->port);
	csqd_wait_log(t.d, want);
	c = csqd_connect(t.d);
	r = CMD(c, "ENQUEUE someone");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	redisFree(c);
	/* The user is in the master's state, and so in the replica's. */
	c = redisd_connect(t.master);
	r = CMD(c, "EXISTS {" PREFIX "}:state");
	assert_reply_integer(r, 1);
	freeReplyObject(r);
	redisFree(c);
	wait_until(digests_equal, &t, "the replica's state is the master's");
	trio_stop(&t);
}

/*
 * Two sentinels, the first of which monitors the master under another
 * name: csqd says so, asks the second, and serves at the master; a master
 * name that no sentinel knows leaves it answering TRYAGAIN.
 */
static void
asks_the_next_sentinel(void **state)
{
	struct redisd *m = redisd_start(0);
	struct redisd *other = redisd_start_sentinel(m->port, "another");
	struct redisd *ours = redisd_start_sentinel(m->port, MASTER);
	struct csqd *d;
	char conf[512], want[96];
	redisContext *c;
	redisReply *r;

	(void)state;
	snprintf(conf, sizeof(conf),
	         "redis: { sentinels = [ \"127.0.0.1:%d\", \"127.0.0.1:%d\" ]; "
	         "master = \"%s\"; prefix = \"%s\"; };",
	         other->port, ours->port, MASTER, PREFIX);
	d = csqd_start_redis_conf(conf, "");
	csqd_wait_engine(d);
	snprintf(want, sizeof(want), "sentinel at 127.0.0.1:%d knows no master",
	         other->port);
	csqd_wait_log(d, want);
	snprintf(want, sizeof(want), "%s is at 127.0.0.1:%d", MASTER, m->port);
	csqd_wait_log(d, want);
	assert_int_equal(csqd_stop(d), 0);

	snprintf(conf, sizeof(conf),
	         "redis: { sentinels = [ \"127.0.0.1:%d\" ]; "
	         "master = \"nobody\"; prefix = \"%s\"; };",
	         other->port, PREFIX);
	d = csqd_start_redis_conf(conf, "");
	csqd_wait_log(d, "knows no master nobody");
	c = csqd_connect(d);
	r = CMD(c, "ENQUEUE someone");
	assert_reply_error(r,
	                   "TRYAGAIN engine unavailable, nothing was changed");
	freeReplyObject(r);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	redisd_free(ours);
	redisd_free(other);
	redisd_free(m);
}

/* 1 when the server on port answers ROLE with "master". */
static int
is_master(struct redisd *s)
{
	redisContext *c = redisd_connect(s);
	redisReply *r = redisCommand(c, "ROLE");
	int yes = r != NULL && r->type == REDIS_REPLY_ARRAY &&
	          r->elements > 0 &&
	          r->element[0]->type == REDIS_REPLY_STRING &&
	          strcmp(r->element[0]->str, "master") == 0;

	if (r != NULL)
		freeReplyObject(r);
	redisFree(c);
	return yes;
}

/*
 * Enqueues u0, u1, ... one at a time as fast as csqd answers, forces a
 * failover after BEFORE acknowledged ones and goes on until csqd has
 * acknowledged AFTER more at the new master. Then asks csqd, now on the
 * new master, where each acknowledged user is: returns how many it lost.
 * tryagain gets the TRYAGAIN answers (nothing done, or may have been).
 */
static int
failover_under_load(struct trio *t, int *tryagain)
{
	static unsigned char acked[USERS_MAX];
	redisContext *c = csqd_connect(t->d), *s;
	redisReply *r;
	int i, n = 0, ok = 0, after = -1, lost = 0;
	int64_t failover_at = 0;
	char want[96];

	memset(acked, 0, sizeof(acked));
	*tryagain = 0;
	snprintf(want, sizeof(want), "moved from 127.0.0.1:%d",
	         t->master->port);
	for (n = 0; n < USERS_MAX; n++) {
		r = CMD(c, "ENQUEUE u%d", n);
		if (r->type == REDIS_REPLY_ERROR) {
			if (strncmp(r->str, "TRYAGAIN", 8) != 0)
				fail_msg("ENQUEUE u%d: %s", n, r->str);
			(*tryagain)++;
		} else {
			assert_string_equal(FIELD_STR(r, "state"), "waiting");
			acked[n] = 1;
			ok++;
		}
		freeReplyObject(r);
		if (ok == BEFORE && failover_at == 0) {
			s = redisd_connect(t->sentinel);
			r = CMD(s, "SENTINEL FAILOVER %s", MASTER);
			assert_reply_status(r, "OK");
			freeReplyObject(r);
			redisFree(s);
			failover_at = now_ms();
		}
		if (failover_at != 0 && after < 0 &&
		    file_contains(t->d->log_path, want) &&
		    is_master(t->replica))
			after = ok;
		if (after >= 0 && ok >= after + AFTER)
			break;
		if (failover_at != 0 && now_ms() - failover_at > FOLLOW_MS)
			fail_msg("csqd did not follow the failover in %d ms "
			         "(%d acknowledged, %d TRYAGAIN)",
			         FOLLOW_MS, ok, *tryagain);
	}
	assert_true(n < USERS_MAX);
	print_message("failover: %d ENQUEUEs acknowledged, %d TRYAGAIN, "
	              "followed after %lld ms\n",
	              ok, *tryagain, (long long)(now_ms() - failover_at));
	for (i = 0; i <= n; i++) {
		if (!acked[i])
			continue;
		r = CMD(c, "WHERE u%d", i);
		if (strcmp(FIELD_STR(r, "state"), "waiting") != 0)
			lost++;
		freeReplyObject(r);
	}
	redisFree(c);
	return lost;
}

/* WAIT 1 after each write: every acknowledged change is on the replica
 * that becomes the master. */
static void
failover_keeps_acknowledged(void **state)
{
	struct trio t;
	int lost, tryagain;

	(void)state;
	trio_start(&t, 1);
	lost = failover_under_load(&t, &tryagain);
	print_message("wait_replicas = 1: %d acknowledged ENQUEUEs lost\n",
	              lost);
	assert_int_equal(lost, 0);
	/* The failover was seen: commands were told to try again. */
	assert_true(tryagain > 0);
	wait_until(digests_equal, &t,
	           "the demoted master's state is the "
	           "new master's (CSQ.DIGEST)");
	trio_stop(&t);
}

/* Without WAIT csqd follows all the same; what the old master
 * acknowledged after the promotion may be gone (printed, not judged:
 * how much depends on how fast the Sentinel demotes it). */
static void
failover_without_wait(void **state)
{
	struct trio t;
	int lost, tryagain;

	(void)state;
	trio_start(&t, 0);
	lost = failover_under_load(&t, &tryagain);
	print_message("wait_replicas = 0: %d acknowledged ENQUEUEs lost\n",
	              lost);
	trio_stop(&t);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(finds_the_master),
	    cmocka_unit_test(asks_the_next_sentinel),
	    cmocka_unit_test(failover_keeps_acknowledged),
	    cmocka_unit_test(failover_without_wait),
	};

	if (redisd_binary() == NULL) {
		fprintf(stderr, "%s: no redis-server: skipping\n", argv[0]);
		return 77;
	}
	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("sentinel", tests, NULL, NULL);
}
