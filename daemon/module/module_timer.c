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
/* The states that have a key and a deadline, by their earliest: a write
 * moves its own state, never walks the others. */
static struct csq_heap dues;

static void timer_fired(RedisModuleCtx *, void *);

void
module_timer_note(struct module_state *st)
{
	uint64_t d = UINT64_MAX;

	if (st->key != NULL)
		d = csq_next_deadline(csq_engine_memory_state(st->engine));
	if (d != UINT64_MAX)
		csq_heap_set(&dues, &st->due, d, st->serial);
	else if (csq_heap_contains(&st->due))
		csq_heap_remove(&dues, &st->due);
}

void
module_timer_forget(struct module_state *st)
{
	if (csq_heap_contains(&st->due))
		csq_heap_remove(&dues, &st->due);
}

/* The earliest deadline of every state, UINT64_MAX for none. */
static uint64_t
earliest(void)
{
	struct csq_heap_node *n = csq_heap_top(&dues);

	return n != NULL ? n->key : UINT64_MAX;
}

/*
 * Arms the timer for the earliest deadline, on a master that is not
 * loading, or stops it. With no timer armed and no state with a deadline
 * there is nothing to do whatever the context's flags say, so they are
 * not asked for: a text command with no deadline (CSQ.ENQUEUE ... TTL 0)
 * paid 160 instructions here on every call, 131 of them Redis's
 * RM_GetContextFlags; now 20 (callgrind, docs/benchmarks.md).
 */
void
module_timer_update(RedisModuleCtx *ctx)
{
	uint64_t due = UINT64_MAX, now;
	int flags;

	if (!timer_armed && csq_heap_top(&dues) == NULL)
		return;
	flags = RM_GetContextFlags(ctx);
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

struct due_list {
	struct module_state **st;
	size_t len, cap;
};

static void
due_add(void *arg, struct csq_heap_node *n)
{
	struct due_list *l = arg;

	if (l->len == l->cap) {
		l->cap = l->cap > 0 ? l->cap * 2 : 8;
		l->st = RM_Realloc(l->st, l->cap * sizeof(*l->st));
	}
	l->st[l->len++] = csq_container_of(n, struct module_state, due);
}

/* The states due now, and only they, each once: taken from the heap
 * first, since each one's run moves it there. */
static void
timer_fired(RedisModuleCtx *ctx, void *data)
{
	struct due_list due = {0};
	struct module_state *st;
	uint64_t now = (uint64_t)RM_Milliseconds();
	size_t i;

	(void)data;
	timer_armed = 0;
	if (RM_GetContextFlags(ctx) & RM_CTX_FLAGS_MASTER) {
		csq_heap_each_upto(&dues, now, due_add, &due);
		for (i = 0; i < due.len; i++) {
			st = due.st[i];
			RM_SelectDb(ctx, st->db);
			module_state_begin(st, ctx, now);
			st->engine->ops->expire(st->engine);
			module_state_end(st, NULL);
		}
		RM_Free(due.st);
	}
	module_timer_update(ctx);
}
