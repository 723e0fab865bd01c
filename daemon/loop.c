/*
 * Polling before sleeping (docs/design.md, "The event loop polls before
 * it sleeps").
 *
 * A process asleep in epoll_wait is woken by the kernel when a request
 * arrives, and the sender pays for the wakeup: on a virtual machine, an
 * interrupt to a halted vCPU, which costs more than csqd's whole work for
 * an ENQUEUE. Under load the next request is usually a few microseconds
 * away, so csqd asks epoll again, with no timeout, until busy_poll_us
 * have passed without work, and only then sleeps. An idle csqd sleeps
 * as before. Between polls it calls sched_yield, so that the poll takes
 * only CPU time that no other process on its CPU wants: with the Redis
 * engine, redis-server and the clients may share csqd's CPUs.
 */
#include "loop.h"

#include <sched.h>
#include <time.h>

uint64_t loop_work;

uint64_t
loop_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The loop was told to stop, or has nothing left to wait for. */
static int
loop_done(struct event_base *base, int r)
{
	return r != 0 || event_base_got_exit(base) ||
	       event_base_got_break(base);
}

int
loop_run(struct event_base *base, const int64_t *busy_poll_us)
{
	uint64_t seen, idle_since;
	int r;

	for (;;) {
		/* Sleeps until something is ready; runs it. */
		seen = loop_work;
		r = event_base_loop(base, EVLOOP_ONCE);
		if (loop_done(base, r))
			return r;
		/* A timer or a signal brought no work: no poll after it. */
		if (loop_work == seen)
			continue;
		seen = loop_work;
		idle_since = loop_now_us();
		while (*busy_poll_us > 0) {
			r = event_base_loop(base, EVLOOP_NONBLOCK);
			if (loop_done(base, r))
				return r;
			if (loop_work != seen) {
				seen = loop_work;
				idle_since = loop_now_us();
			} else if (loop_now_us() - idle_since >=
			           (uint64_t)*busy_poll_us)
				break;
			else
				sched_yield();
		}
	}
}
