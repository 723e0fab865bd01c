/*
 * Scenario storm: N servicers of capacity 1, each with a user in its room,
 * send one last HEARTBEAT with a short TTL and then fall silent together.
 * Measured: the time from the last of those heartbeats being answered until
 * every user is back in line, counted from the `requeued` events on the
 * `events` channel (one subscriber connection).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define STORM_SETUP_TTL "3600" /* nobody is lost during the setup */
#define STORM_WAIT_S    30     /* beyond the TTL, before giving up */

struct storm_gen {
	char sprefix[32];
	char uprefix[32];
	const char *ttl;
	int users;
};

static void
storm_gen(long i, struct bench_cmd *cmd, void *arg)
{
	struct storm_gen *g = arg;

	if (g->users) {
		bench_cmd_set(cmd, 0, "ENQUEUE");
		bench_cmd_set(cmd, 1, "%s%ld", g->uprefix, i);
		bench_cmd_set(cmd, 2, "TTL");
		bench_cmd_set(cmd, 3, "0");
		return;
	}
	bench_cmd_set(cmd, 0, "HEARTBEAT");
	bench_cmd_set(cmd, 1, "%s%ld", g->sprefix, i);
	bench_cmd_set(cmd, 2, "CAPACITY");
	bench_cmd_set(cmd, 3, "1");
	bench_cmd_set(cmd, 4, "TTL");
	bench_cmd_set(cmd, 5, "%s", g->ttl);
}

int
bench_storm(const struct bench_opts *o)
{
	struct storm_gen g;
	struct timeval tv = {o->ttl + STORM_WAIT_S, 0};
	redisContext *c, *sub;
	redisReply *r;
	long n = o->servicers, requeued = 0, errors = 0;
	long long busy, waiting, lost0, lost;
	uint64_t t_stop, t_first = 0, t_last = 0;
	static const char *const storm_keys[] = {"event", "servicer"};
	struct bench_span f[2];
	char ttl[16];
	double back_ms, spread_ms;

	snprintf(g.sprefix, sizeof(g.sprefix), "t%ld.%llu.s", (long)getpid(),
	         (unsigned long long)(bench_now_ns() % 1000000));
	snprintf(g.uprefix, sizeof(g.uprefix), "t%ld.%llu.u", (long)getpid(),
	         (unsigned long long)(bench_now_ns() % 1000000));
	c = bench_sync_connect(o);
	sub = bench_sync_connect(o);

	bench_say("storm: %ld servicers log in, %ld users fill their rooms", n,
	          n);
	g.ttl = STORM_SETUP_TTL;
	g.users = 0;
	errors += bench_sync_pipeline(c, 0, n, storm_gen, &g);
	g.users = 1;
	errors += bench_sync_pipeline(c, 0, n, storm_gen, &g);
	busy = bench_sync_stat(c, "rooms_busy");
	if (busy < n)
		bench_fatalx(
		    "storm: only %lld of %ld rooms busy; run against a "
		    "fresh csqd",
		    busy, n);
	lost0 = bench_sync_stat(c, "servicers_lost_total");

	if ((r = redisCommand(sub, "SUBSCRIBE events")) == NULL)
		bench_fatalx("storm: SUBSCRIBE: %s", sub->errstr);
	freeReplyObject(r);
	redisSetTimeout(sub, tv);

	snprintf(ttl, sizeof(ttl), "%d", o->ttl);
	g.ttl = ttl;
	g.users = 0;
	bench_say("storm: last heartbeats with TTL %s s, then silence", ttl);
	errors += bench_sync_pipeline(c, 0, n, storm_gen, &g);
	t_stop = bench_now_ns();

	while (requeued < n) {
		if (redisGetReply(sub, (void **)&r) != REDIS_OK)
			bench_fatalx(
			    "storm: %ld of %ld users back after %.1f s "
			    "(%s)",
			    requeued, n,
			    (double)(bench_now_ns() - t_stop) / BENCH_NS_PER_S,
			    sub->errstr);
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
		    r->element[2]->type == REDIS_REPLY_STRING) {
			/* Ours: users of our servicers, whoever they are. */
			if (bench_json_strings(r->element[2]->str,
			                       r->element[2]->len, storm_keys,
			                       2, f) == 2 &&
			    bench_span_is(f[0], "requeued") &&
			    f[1].len >= strlen(g.sprefix) &&
			    memcmp(f[1].p, g.sprefix, strlen(g.sprefix)) == 0) {
				t_last = bench_now_ns();
				if (requeued++ == 0)
					t_first = t_last;
			}
		}
		freeReplyObject(r);
	}
	back_ms = (double)(t_last - t_stop) / 1e6;
	spread_ms = (double)(t_last - t_first) / 1e6;
	waiting = bench_sync_stat(c, "waiting");
	lost = bench_sync_stat(c, "servicers_lost_total");
	if (waiting < n || lost - lost0 < n)
		bench_say("storm: warning: waiting %lld, servicers lost %lld; "
		          "expected %ld each",
		          waiting, lost - lost0, n);
	bench_say("storm: all %ld users back in line %.1f ms after the last "
	          "heartbeat (%.1f ms past the TTL); requeues spread over "
	          "%.1f ms",
	          n, back_ms, back_ms - o->ttl * 1000.0, spread_ms);
	printf("result scenario=storm target=%s servicers=%ld ttl_s=%d "
	       "requeued=%ld back_in_line_ms=%.1f after_ttl_ms=%.1f "
	       "spread_ms=%.1f waiting=%lld errors=%ld\n",
	       o->label, n, o->ttl, requeued, back_ms,
	       back_ms - o->ttl * 1000.0, spread_ms, waiting, errors);
	fflush(stdout);
	redisFree(sub);
	redisFree(c);
	return 0;
}
