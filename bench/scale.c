/*
 * Scenario scale: the line is preloaded, depth after depth, with waiting
 * users (pipelined ENQUEUE); at each depth, the ENQUEUE throughput of new
 * users, the LEAVE throughput of those same users (so the depth is back where
 * it was), the WHERE latency of random preloaded users, and, given csqd's pid,
 * its resident memory per waiting user (VmRSS before any preload and after
 * the preload of each depth).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define SCALE_DEPTHS_MAX 16
#define SCALE_QUEUE      "default"

struct scale_gen {
	char prefix[BENCH_WORD_MAX / 2];
	const char *verb;
	long range; /* WHERE: ids drawn from 0..range-1 */
	uint64_t rng;
};

static void
scale_gen(long i, struct bench_cmd *cmd, void *arg)
{
	struct scale_gen *g = arg;

	bench_cmd_set(cmd, 0, "%s", g->verb);
	bench_cmd_set(cmd, 1, "%s%ld", g->prefix, i);
	if (strcmp(g->verb, "ENQUEUE") == 0) {
		bench_cmd_set(cmd, 2, "TTL");
		bench_cmd_set(cmd, 3, "0");
	}
}

/* WHERE of a random preloaded user (xorshift64: cheap and good enough). */
static void
scale_where_gen(long i, struct bench_cmd *cmd, void *arg)
{
	struct scale_gen *g = arg;
	long n = 0;

	(void)i;
	if (g->range > 0) {
		g->rng ^= g->rng << 13;
		g->rng ^= g->rng >> 7;
		g->rng ^= g->rng << 17;
		n = (long)(g->rng % (uint64_t)g->range);
	}
	bench_cmd_set(cmd, 0, "WHERE");
	bench_cmd_set(cmd, 1, "%s%ld", g->prefix, n);
}

static int
scale_parse_depths(const char *s, long *depths)
{
	char *end;
	int n = 0;

	while (*s != '\0') {
		if (n == SCALE_DEPTHS_MAX)
			bench_fatalx("more than %d depths", SCALE_DEPTHS_MAX);
		depths[n] = strtol(s, &end, 10);
		if (end == s || depths[n] < 0 ||
		    (n > 0 && depths[n] < depths[n - 1]))
			bench_fatalx("bad --depths: want ascending numbers, "
			             "e.g. 0,1000,100000,1000000");
		n++;
		s = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end != '\0')
			bench_fatalx("bad --depths near \"%s\"", end);
	}
	return n;
}

int
bench_scale(const struct bench_opts *o)
{
	struct scale_gen pre = {0}, add = {0}, where = {0};
	struct bench_samples s = {0};
	struct bench_run enq, leave, wrun;
	long depths[SCALE_DEPTHS_MAX], have = 0, rss0, rss, errors;
	long long qlen0, qlen;
	double per_user;
	redisContext *c;
	uint64_t t;
	int i, n;

	n = scale_parse_depths(o->depths, depths);
	c = bench_sync_connect(o);
	qlen0 = bench_sync_int(c, "QLEN", SCALE_QUEUE);
	if (qlen0 != 0)
		bench_say("scale: warning: the line already holds %lld users; "
		          "run against a fresh csqd",
		          qlen0);
	rss0 = bench_vmrss_kb(o->pid);
	snprintf(pre.prefix, sizeof(pre.prefix), "p%ld.%llu.", (long)getpid(),
	         (unsigned long long)(bench_now_ns() % 1000000));
	pre.verb = "ENQUEUE";

	for (i = 0; i < n; i++) {
		if (depths[i] > have) {
			bench_say("scale: preloading %ld waiting users",
			          depths[i] - have);
			t = bench_now_ns();
			errors = bench_sync_pipeline(c, have, depths[i],
			                             scale_gen, &pre);
			if (errors > 0)
				bench_fatalx("scale: %ld preload errors",
				             errors);
			bench_say("scale: preloaded in %.2f s",
			          (double)(bench_now_ns() - t) /
			              BENCH_NS_PER_S);
			have = depths[i];
		}
		qlen = bench_sync_int(c, "QLEN", SCALE_QUEUE);
		rss = bench_vmrss_kb(o->pid);
		per_user = -1;
		if (rss0 > 0 && rss > 0 && qlen > qlen0)
			per_user = (double)(rss - rss0) * 1024.0 /
			           (double)(qlen - qlen0);

		snprintf(add.prefix, sizeof(add.prefix), "%.20sn%ld.",
		         pre.prefix, depths[i]);
		add.verb = "ENQUEUE";
		bench_say("scale: depth %ld: %ld ENQUEUE", depths[i],
		          o->requests);
		if (bench_drive_rate(o, o->clients, o->pipeline, o->requests,
		                     scale_gen, &add, &enq) == -1)
			goto fail;
		add.verb = "LEAVE";
		bench_say("scale: depth %ld: %ld LEAVE", depths[i],
		          o->requests);
		if (bench_drive_rate(o, o->clients, o->pipeline, o->requests,
		                     scale_gen, &add, &leave) == -1)
			goto fail;
		memcpy(where.prefix, pre.prefix, sizeof(where.prefix));
		where.range = have;
		where.rng = 0x9e3779b97f4a7c15ULL + (uint64_t)i;
		bench_say("scale: depth %ld: %ld WHERE round trips", depths[i],
		          o->where);
		if (bench_drive_latency(o, 1, 0, o->where, scale_where_gen,
		                        &where, &s, &wrun) == -1)
			goto fail;

		bench_say("scale: depth %ld: ENQUEUE %.0f/s, LEAVE %.0f/s, "
		          "WHERE p50 %.1f us p99 %.1f us, %.0f bytes/user",
		          depths[i], enq.ops_per_sec, leave.ops_per_sec,
		          bench_samples_pct_us(&s, 50),
		          bench_samples_pct_us(&s, 99), per_user);
		printf("result scenario=scale target=%s depth=%ld qlen=%lld "
		       "clients=%d pipeline=%d requests=%ld "
		       "enqueue_ops_per_sec=%.0f leave_ops_per_sec=%.0f "
		       "where_p50_us=%.1f where_p99_us=%.1f rss_kb=%ld "
		       "bytes_per_user=%.0f errors=%ld\n",
		       o->label, depths[i], qlen, o->clients, o->pipeline,
		       o->requests, enq.ops_per_sec, leave.ops_per_sec,
		       bench_samples_pct_us(&s, 50),
		       bench_samples_pct_us(&s, 99), rss, per_user,
		       enq.errors + leave.errors + wrun.errors);
		fflush(stdout);
		bench_samples_free(&s);
	}
	redisFree(c);
	return 0;
fail:
	bench_samples_free(&s);
	redisFree(c);
	return -1;
}
