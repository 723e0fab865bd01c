/*
 * A snapshot of the whole state of libcsq as a sequence of items, and its
 * restoration into an empty state: the journal's compaction writes one,
 * and replays it before the records that follow it. Restoring gives back
 * exactly the same state: keys, arrival times, deadlines with their
 * tie-breakers, the servicers' assignment order, the counters.
 */
#ifndef CSQ_SNAPSHOT_H
#define CSQ_SNAPSHOT_H

#include "csq.h"

/* Never renumbered: a journal's record codes are 0x80 + these. */
enum csq_snap_kind {
	CSQ_SNAP_STATE,
	CSQ_SNAP_SERVICER,
	CSQ_SNAP_USER,
	CSQ_SNAP_ROOM,  /* a room in wrap-up (offered and assigned rooms come
	                   with their users) */
	CSQ_SNAP_QUEUE, /* a queue's numbers and what its estimate learned */
	CSQ_SNAP_RING,  /* a part of a queue's ring of outcomes, after it */
};

#define CSQ_SNAP_RING_CHUNK 500 /* outcomes in one RING item */

struct csq_snap_state {
	uint64_t seq, order, tie;
	uint64_t event_id;
	struct csq_stats stats; /* the *_total counters are taken from here */
};

struct csq_snap_servicer {
	char id[CSQ_ID_MAX + 1];
	uint32_t status, capacity, ttl_s, nqueues;
	char queues[CSQ_SERVICER_QUEUES][CSQ_ID_MAX + 1];
	uint64_t last_order, last_ms;
	uint64_t deadline, deadline_tie;
	uint32_t offer_s, wrapup_s, missed;
	uint32_t has_retry, retry_s; /* a retry window running */
	uint64_t retry, retry_tie;
	char skills[CSQ_SKILLS_TEXT_MAX]; /* canonical; "" none */
	uint64_t handled, handle_ms;      /* its counters (issue 38) */
};

struct csq_snap_room {
	char servicer[CSQ_ID_MAX + 1];
	uint32_t index, length_s;
	uint64_t since_ms;
	uint64_t deadline, deadline_tie;
};

struct csq_snap_user {
	char id[CSQ_ID_MAX + 1];
	char queue[CSQ_ID_MAX + 1];
	uint64_t key, arrival_ms;
	uint32_t ttl_s, state, flags;
	uint32_t has_deadline; /* waiting, offered: the TTL */
	uint64_t deadline, deadline_tie;
	char servicer[CSQ_ID_MAX + 1]; /* offered, assigned */
	uint32_t room;
	uint64_t since_ms; /* the offer's or the assignment's time */
	uint64_t taken_ms; /* the room's first taking (an accepted offer's) */
	char needs[CSQ_NEEDS_TEXT_MAX]; /* canonical; "" none */
	uint32_t relax_step;            /* has_wait: relax steps passed */
	uint32_t offer_s; /* offered: the offer's length and deadline */
	uint64_t offer_deadline, offer_deadline_tie;
	/* waiting with a queue's clocks or a preference window */
	uint32_t has_wait, clock_kind, prefer_s;
	uint64_t joined_ms, clock, clock_tie;
	char prefer[CSQ_ID_MAX + 1]; /* preferring: the servicer */
};

/* A queue's numbers (qstats.c) and its estimate's (estimate.c). */
struct csq_snap_queue {
	char name[CSQ_ID_MAX + 1];
	uint64_t matched, abandoned_leave, abandoned_timeout, overflowed;
	uint64_t wait_ms_sum;
	uint32_t ring_next; /* its outcomes follow in RING items */
	uint64_t hold_ms, holds, wait_area_ms, abandons;
	uint64_t last_arrival_ms[CSQ_TIER_LIMIT + 1];
	uint64_t gap_ms[CSQ_TIER_LIMIT + 1];
	uint32_t arrivals[CSQ_TIER_LIMIT + 1];
	/* Its nobody policy's state (section 3c), has_nobody: the spell's
	 * start (0: somebody there), its grace (0: not running), fired. */
	uint32_t has_nobody, nobody_fired;
	uint64_t nobody_since, nobody_grace, nobody_grace_tie;
	/* Business hours (protocol.md 3c): has_hours 1 for a queue whose
	 * policy has them; then closed, and its next change's deadline
	 * (hours_tie 0: none ahead). */
	uint32_t has_hours, closed;
	uint64_t hours_at, hours_tie;
};

/* Outcomes offset .. offset + n - 1 of a queue's ring. */
struct csq_snap_ring {
	char queue[CSQ_ID_MAX + 1];
	uint32_t offset, n;
	uint32_t v[CSQ_SNAP_RING_CHUNK];
};

struct csq_snap_item {
	enum csq_snap_kind kind;
	union {
		struct csq_snap_state state;
		struct csq_snap_servicer servicer;
		struct csq_snap_room room;
		struct csq_snap_user user;
		struct csq_snap_queue queue;
		struct csq_snap_ring ring;
	} u;
};

typedef void csq_snap_fn(void *arg, const struct csq_snap_item *);

/* Calls fn for the state, then every servicer with its rooms in wrap-up,
 * then every user, then the numbers of every queue that has some. (The
 * policies are no part of it: the journal writes them before, as it
 * writes the limits.) */
void csq_snapshot(const struct csq *, csq_snap_fn *fn, void *arg);
/*
 * Restores one item into a state that started empty, items in snapshot
 * order. -1 when the item does not fit (an unknown servicer, a busy room).
 */
int csq_restore(struct csq *, const struct csq_snap_item *);
/*
 * After the last item: -1 when the items, each of which fitted, do not
 * make a state together (a free room of a ready servicer beside a user
 * waiting in a queue it serves, or waiting for it: the match that never
 * happened; two users with one order key; a queue's ring of outcomes
 * that its RING items did not complete).
 */
int csq_restore_end(const struct csq *);

#endif
