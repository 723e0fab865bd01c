/*
 * The event loop's outer turn (loop.c): libevent's loop, except that after
 * a piece of work csqd keeps polling for a moment before it goes to sleep.
 */
#ifndef CSQD_LOOP_H
#define CSQD_LOOP_H

#include <stdint.h>

#include <event2/event.h>

/*
 * Counts the callbacks that took in work from a socket (a client's
 * request, a Redis reply): how the loop tells a turn that found work from
 * an empty one.
 */
extern uint64_t loop_work;

static inline void
loop_did_work(void)
{
	loop_work++;
}

/* CLOCK_MONOTONIC in microseconds. */
uint64_t loop_now_us(void);

/*
 * Runs base until event_base_loopexit or event_base_loopbreak, as
 * event_base_dispatch does. When *busy_poll_us is above 0, a turn that
 * took in work is not followed by a sleep at once: the loop polls (epoll_wait
 * with no timeout, yielding the CPU to any other runnable process between
 * polls) until *busy_poll_us microseconds have passed since the last work,
 * and only then sleeps until something is ready. *busy_poll_us is read at
 * every sleep, so a reload takes effect at once. Returns what
 * event_base_loop returned last: 0, 1 (nothing left to wait for) or -1.
 */
int loop_run(struct event_base *, const int64_t *busy_poll_us);

#endif
