/*
 * Scenario ping: PING round trips, one in flight on each of C connections,
 * for the duration. Run against redis-server it gives the yardstick of the
 * match latency target; against csqd, the floor of any csqd round trip.
 */
#include <stdio.h>

#include "bench.h"

static void
ping_gen(long i, struct bench_cmd *cmd, void *arg)
{
	(void)i;
	(void)arg;
	bench_cmd_set(cmd, 0, "PING");
}

int
bench_ping(const struct bench_opts *o)
{
	struct bench_samples s = {0};
	struct bench_run run;
	int rc = -1;

	bench_say("ping: %d clients for %.1f s", o->clients, o->duration);
	if (bench_drive_latency(o, o->clients, o->duration, 0, ping_gen, NULL,
	                        &s, &run) == -1)
		goto out;
	bench_say("ping: %zu round trips, p50 %.1f us, p99 %.1f us, "
	          "p99.9 %.1f us",
	          s.n, bench_samples_pct_us(&s, 50),
	          bench_samples_pct_us(&s, 99), bench_samples_pct_us(&s, 99.9));
	printf("result scenario=ping target=%s clients=%d samples=%zu "
	       "p50_us=%.1f p99_us=%.1f p999_us=%.1f errors=%ld\n",
	       o->label, o->clients, s.n, bench_samples_pct_us(&s, 50),
	       bench_samples_pct_us(&s, 99), bench_samples_pct_us(&s, 99.9),
	       run.errors);
	fflush(stdout);
	rc = 0;
out:
	bench_samples_free(&s);
	return rc;
}
