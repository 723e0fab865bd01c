/*
 * The wait estimate (eta_ms, protocol-v2 section 6): how long until a
 * waiting user is matched. docs/design.md ("The wait estimate") has the
 * reasoning and bench/eta.c the measurement; in short:
 *
 *   rooms   the capacity of the ready servicers serving the queue, now
 *   hold    how long a user of the queue holds a room (offer, conversation
 *           and wrap-up), a moving mean over the last conversations
 *   p       the user's place: the users of its tier or above before it
 *
 * With every room busy, rooms free one every hold / rooms on average,
 * whatever the shape of the conversations' lengths, and each free room
 * takes the head of the line: the p-th is free after about
 * p * hold / rooms. Users of a higher tier who arrive meanwhile go before
 * it: at a rate lambda (the moving mean of their arrivals) they add
 * lambda * hold / rooms of a position per position served, so the wait
 * is p * hold / rooms / (1 - lambda * hold / rooms).
 *
 * What it learns is integers, updated in O(1) where it happens (a
 * conversation ends, a user arrives), so that a replay of the journal
 * learns the same; a question costs O(tiers) besides the user's rank.
 */
#include "state.h"

#include <math.h>

#define EST_WINDOW  128 /* samples in a moving mean */
#define EST_RHO_MAX 0.9 /* the share of service higher tiers may take */
#define EST_ETA_MAX ((int64_t)CSQ_TTL_MAX * 1000 * 10) /* ms, a cap */
#define EST_ONE     1024 /* an abandon, in its moving sum */

static uint64_t
moving_mean(uint64_t mean, uint64_t sample, uint64_t n)
{
	if (sample >= mean)
		return mean + (sample - mean) / n;
	return mean - (mean - sample) / n;
}

void
csq_estimate_hold(struct csq_estimate *e, uint64_t ms)
{
	e->holds++;
	e->hold_ms = moving_mean(e->hold_ms, ms,
	                         e->holds < EST_WINDOW ? e->holds : EST_WINDOW);
}

void
csq_estimate_arrival(struct csq_estimate *e, uint32_t tier, uint64_t now)
{
	uint64_t gap;

	if (tier >= CSQ_TIERS)
		return;
	if (e->arrivals[tier] > 0) {
		gap = now > e->last_arrival_ms[tier]
		          ? now - e->last_arrival_ms[tier]
		          : 0;
		e->gap_ms[tier] = moving_mean(e->gap_ms[tier], gap,
		                              e->arrivals[tier] < EST_WINDOW
		                                  ? e->arrivals[tier]
		                                  : EST_WINDOW);
	}
	if (e->arrivals[tier] < EST_WINDOW)
		e->arrivals[tier]++;
	e->last_arrival_ms[tier] = now;
}

/*
 * Arrivals per ms of users above tier: each tier's mean gap, or the time
 * since its last arrival when that is longer (a tier that stopped
 * arriving fades out).
 */
static double
estimate_rate_above(const struct csq_estimate *e, uint32_t tier, uint64_t now)
{
	double rate = 0;
	uint64_t gap, since;
	uint32_t t;

	for (t = tier + 1; t < CSQ_TIERS; t++) {
		if (e->arrivals[t] < 2)
			continue;
		gap = e->gap_ms[t];
		since = now > e->last_arrival_ms[t]
		            ? now - e->last_arrival_ms[t]
		            : 0;
		if (since > gap)
			gap = since;
		if (gap > 0)
			rate += 1.0 / (double)gap;
	}
	return rate;
}

void
csq_estimate_outcome(struct csq_estimate *e, uint64_t waited_ms, int abandoned)
{
	if (waited_ms == 0 && !abandoned)
		return; /* matched at once: no wait to learn from */
	e->wait_area_ms -= e->wait_area_ms / EST_WINDOW;
	e->wait_area_ms += waited_ms;
	e->abandons -= e->abandons / EST_WINDOW;
	e->abandons += abandoned ? EST_ONE : 0;
}

/*
 * The estimate for the pos-th user of tier in q's line; -1: none. The
 * line before it drains at mu (rooms freeing, less what higher tiers
 * take) and by those who give up, theta per waiting user: the
 * pos - 1 before it are gone after ln(1 + theta (pos - 1) / mu) / theta,
 * and one more room frees for it after 1 / mu.
 */
int64_t
csq_estimate_line(const struct csq_queue *q, uint64_t pos, uint32_t tier,
                  uint64_t now)
{
	const struct csq_estimate *e = &q->est;
	double mu, full, theta = 0, ahead, eta;

	/* Closed by its business hours: its free rooms take nobody, and
	 * the estimate knows nothing of when it opens (protocol.md 3c). */
	if (csq_queue_closed(q))
		return -1;
	if (q->rooms_free > 0)
		return 0;
	if (q->rooms_ready == 0 || e->holds == 0 || e->hold_ms == 0)
		return -1;
	full = (double)q->rooms_ready / (double)e->hold_ms;
	mu = full - estimate_rate_above(e, tier, now);
	if (mu < (1 - EST_RHO_MAX) * full)
		mu = (1 - EST_RHO_MAX) * full;
	if (e->wait_area_ms > 0)
		theta = (double)e->abandons / EST_ONE / (double)e->wait_area_ms;
	ahead = pos > 0 ? (double)(pos - 1) : 0;
	eta = theta > 0 ? log1p(theta * ahead / mu) / theta : ahead / mu;
	eta += 1 / mu;
	return eta < (double)EST_ETA_MAX ? (int64_t)llround(eta) : EST_ETA_MAX;
}

int64_t
csq_estimate_new_arrival(const struct csq *c, const struct csq_queue *q,
                         uint64_t now)
{
	(void)c;
	return csq_estimate_line(q, csq_needline_count(q) + 1, 0, now);
}

/*
 * A user held for servicer s: s's rooms alone serve it, one every
 * hold / capacity; were the window to close first, it would wait in its
 * queue's line, at worst at its end.
 */
static int64_t
estimate_preferring(const struct csq_user *u, uint64_t now)
{
	const struct csq_servicer *s = u->wait->prefer;
	const struct csq_queue *q = u->queue;
	int64_t own = -1, line;
	uint64_t left;

	if (s->status == CSQ_SERVICER_READY && q->est.holds > 0)
		own = (int64_t)(csq_prefer_position(u) * q->est.hold_ms /
		                s->capacity);
	left =
	    u->wait->clock.node.key > now ? u->wait->clock.node.key - now : 0;
	line = csq_estimate_line(q, csq_needline_count(q) + 1, csq_user_tier(u),
	                         now);
	if (line >= 0) {
		line += (int64_t)left;
		if (own < 0 || line < own)
			own = line;
	}
	return own;
}

int64_t
csq_estimate_user(const struct csq_user *u, uint64_t pos, uint64_t now)
{
	if (u->state == CSQ_USER_OFFERED)
		return 0;
	if (u->state != CSQ_USER_WAITING)
		return -1;
	if (csq_queue_closed(u->queue))
		return -1;
	if (u->flags & CSQ_USER_PREFERRING)
		return estimate_preferring(u, now);
	/* A user with needs waiting beside free rooms: none of them may
	 * take it (matching is on events: it would be in one), so 0 would
	 * be false, and the queue's rate is that of rooms it may never get
	 * (protocol.md 3c). */
	if (u->needs != 0 && u->queue->rooms_free > 0)
		return -1;
	return csq_estimate_line(u->queue, pos, csq_user_tier(u), now);
}
