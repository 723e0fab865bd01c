/*
 * The Redis engine: the state lives in Redis, so that several csqd daemons
 * serve the same queues. redis-server runs every operation with libcsq
 * itself (csq.so, daemon/module/), atomic across daemons; the events the
 * module publishes come back on a second connection and go to this
 * daemon's subscribers.
 */
#ifndef CSQD_ENGINE_REDIS_H
#define CSQD_ENGINE_REDIS_H

#include <stdint.h>

#include "config.h"
#include "engine.h"

struct event_base;

/*
 * Connects in the background (the engine answers TRYAGAIN until Redis
 * does). clock gives the time of this daemon's deadlines (Redis keeps its
 * own; the engine converts); events come out through emit;
 * deadline_changed is called when the earliest deadline may have moved
 * outside a command's reply; events_out after the events that one reply
 * or message from Redis carried have all been emitted, so that the
 * daemon writes them at once, before it reads anything else.
 */
struct csq_engine *engine_redis_new(struct event_base *, const struct config *,
                                    csq_clock_fn *clock, void *clock_arg,
                                    csq_emit_fn *emit, void *emit_arg,
                                    void (*deadline_changed)(void *),
                                    void (*events_out)(void *), void *arg);

#endif
