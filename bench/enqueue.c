/*
 * Scenario enqueue: ENQUEUE throughput of fresh users (unique ids, TTL 0,
 * so none expires during the run) at C clients and pipeline depth P.
 * Scenario zadd: the same driver sending ZADD of fresh members to one
 * sorted set, redis-server's side of the comparison, measured with the
 * same client as csqd's.
 */
#include <stdio.h>
#include <unistd.h>

#include "bench.h"

struct enqueue_gen {
	char prefix[32];
};

static void
enqueue_gen(long i, struct bench_cmd *cmd, void *arg)
{
	struct enqueue_gen *g = arg;

	bench_cmd_set(cmd, 0, "ENQUEUE");
	bench_cmd_set(cmd, 1, "%s%ld", g->prefix, i);
	bench_cmd_set(cmd, 2, "TTL");
	bench_cmd_set(cmd, 3, "0");
}

static void
zadd_gen(long i, struct bench_cmd *cmd, void *arg)
{
	struct enqueue_gen *g = arg;

	bench_cmd_set(cmd, 0, "ZADD");
	bench_cmd_set(cmd, 1, "%sq", g->prefix);
	bench_cmd_set(cmd, 2, "%ld", i);
	bench_cmd_set(cmd, 3, "%s%ld", g->prefix, i);
}

static int
rate_run(const struct bench_opts *o, const char *scenario, const char *cmd,
         void (*gen)(long, struct bench_cmd *, void *))
{
	struct enqueue_gen g;
	struct bench_run run;

	snprintf(g.prefix, sizeof(g.prefix), "e%ld.%llu.", (long)getpid(),
	         (unsigned long long)(bench_now_ns() % 1000000));
	bench_say("%s: %ld %s, %d clients, pipeline %d", scenario, o->requests,
	          cmd, o->clients, o->pipeline);
	if (bench_drive_rate(o, o->clients, o->pipeline, o->requests, gen, &g,
	                     &run) == -1)
		return -1;
	bench_say("%s: %.0f ops/s (%ld in %.2f s, %ld errors)", scenario,
	          run.ops_per_sec, run.ops, run.seconds, run.errors);
	printf("result scenario=%s target=%s clients=%d pipeline=%d "
	       "requests=%ld ops_per_sec=%.0f errors=%ld\n",
	       scenario, o->label, o->clients, o->pipeline, run.ops,
	       run.ops_per_sec, run.errors);
	fflush(stdout);
	return 0;
}

int
bench_enqueue(const struct bench_opts *o)
{
	return rate_run(o, "enqueue", "ENQUEUE", enqueue_gen);
}

int
bench_zadd(const struct bench_opts *o)
{
	return rate_run(o, "zadd", "ZADD", zadd_gen);
}
