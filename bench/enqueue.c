/*
 * Scenario enqueue: ENQUEUE throughput of fresh users (unique ids, TTL 0,
 * so none expires during the run) at C clients and pipeline depth P.
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

int
bench_enqueue(const struct bench_opts *o)
{
	struct enqueue_gen g;
	struct bench_run run;

	snprintf(g.prefix, sizeof(g.prefix), "e%ld.%llu.", (long)getpid(),
	         (unsigned long long)(bench_now_ns() % 1000000));
	bench_say("enqueue: %ld ENQUEUE, %d clients, pipeline %d", o->requests,
	          o->clients, o->pipeline);
	if (bench_drive_rate(o, o->clients, o->pipeline, o->requests,
	                     enqueue_gen, &g, &run) == -1)
		return -1;
	bench_say("enqueue: %.0f ops/s (%ld in %.2f s, %ld errors)",
	          run.ops_per_sec, run.ops, run.seconds, run.errors);
	printf("result scenario=enqueue target=%s clients=%d pipeline=%d "
	       "requests=%ld ops_per_sec=%.0f errors=%ld\n",
	       o->label, o->clients, o->pipeline, run.ops, run.ops_per_sec,
	       run.errors);
	fflush(stdout);
	return 0;
}
