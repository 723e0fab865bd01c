/*
 * The deadlines of every state (TTLs, offers, wrap-ups, retry windows,
 * overflow, aging, preference windows) act on the master, by one timer
 * for the earliest of them all, whether csqd is connected or not. A
 * replica arms none: it applies the master's expiries as they come
 * (CSQ.APPLY), and arms the timer when it is promoted. Each expiry is
 * replicated like any change, with its time, so it happens once.
 */
#include "module_state.h"

static RedisModuleTimerID timer_id;
static int timer_armed;
static uint64_t timer_due;

static void timer_fired(RedisModuleCtx *, void *);

/* The earliest deadline of every state, UINT64_MAX for none. */
static uint64_t
earliest(void)
{
	struct module_state *st;
	uint64_t due = UINT64_MAX, d;

	LIST_FOREACH(st, &module_states, link)
		if (st->key != NULL &&
		    (d = csq_next_deadline(
		         csq_engine_memory_state(st->engine))) < due)
			due = d;
	return due;
}

void
module_timer_update(RedisModuleCtx *ctx)
{
	uint64_t due = UINT64_MAX, now;
	int flags = RM_GetContextFlags(ctx);

	if (!module_debug_clock && (flags & RM_CTX_FLAGS_MASTER) &&
	    !(flags & RM_CTX_FLAGS_LOADING))
		due = earliest();
	if (timer_armed && due == timer_due)
		return;
	if (timer_armed) {
		RM_StopTimer(ctx, timer_id, NULL);
		timer_armed = 0;
	}
	if (due == UINT64_MAX)
		return;
	now = (uint64_t)RM_Milliseconds();
	timer_id = RM_CreateTimer(ctx, due > now ? (long long)(due - now) : 0,
	                          timer_fired, NULL);
	timer_due = due;
	timer_armed = 1;
}

static void
timer_fired(RedisModuleCtx *ctx, void *data)
{
	struct module_state *st, *next;
	uint64_t now = (uint64_t)RM_Milliseconds();

	(void)data;
	timer_armed = 0;
	if (RM_GetContextFlags(ctx) & RM_CTX_FLAGS_MASTER) {
		for (st = LIST_FIRST(&module_states); st != NULL; st = next) {
			next = LIST_NEXT(st, link);
			if (st->key == NULL ||
			    csq_next_deadline(
			        csq_engine_memory_state(st->engine)) > now)
				continue;
			RM_SelectDb(ctx, st->db);
			module_state_begin(st, ctx, now);
			st->engine->ops->expire(st->engine);
			module_state_end(st, NULL);
		}
	}
	module_timer_update(ctx);
}
