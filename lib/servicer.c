/*
 * Servicers: their place in the counters and in the avail heaps that let
 * the matcher find a free room without scanning servicers, the strategy
 * that orders those heaps, and the ways a servicer stops taking users
 * (pause, logout, loss).
 */
#include "state.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Rooms that may take a new user: none while busy rooms >= capacity. */
uint32_t
csq_servicer_free_count(const struct csq_servicer *s)
{
	return s->active < s->capacity ? s->capacity - s->active : 0;
}

int
csq_servicer_has_free(const struct csq_servicer *s)
{
	return s->status == CSQ_SERVICER_READY &&
	       csq_servicer_free_count(s) > 0 &&
	       !csq_deadline_running(&s->retry);
}

/* The strategy of arrivals in q: its policy's, else the global one. */
static enum csq_strategy
queue_strategy(const struct csq *c, const struct csq_queue *q)
{
	if (q->policy != NULL && q->policy->has_strategy)
		return q->policy->strategy;
	return c->limits.strategy;
}

/*
 * A servicer's key in the avail heap of q; the top (smallest (key, tie))
 * gets the next user of q. longest_idle: the order of its login or last
 * new user, which no two servicers share. least_busy: its busy rooms
 * (offered + assigned + wrap-up), ties by that same order.
 */
void
csq_avail_key(const struct csq *c, const struct csq_servicer *s,
              const struct csq_queue *q, uint64_t *key, uint64_t *tie)
{
	switch (queue_strategy(c, q)) {
	case CSQ_STRATEGY_LEAST_BUSY:
		*key = s->active;
		*tie = s->last_order;
		return;
	case CSQ_STRATEGY_LONGEST_IDLE:
		break;
	}
	*key = s->last_order;
	*tie = 0;
}

/* Takes s out of the counters and the avail heaps before a change. */
void
csq_servicer_unaccount(struct csq *c, struct csq_servicer *s)
{
	uint32_t i;

	uint32_t ready = s->status == CSQ_SERVICER_READY ? s->capacity : 0;
	uint32_t free =
	    csq_servicer_has_free(s) ? csq_servicer_free_count(s) : 0;

	c->stats.rooms_busy -= s->active;
	if (s->status == CSQ_SERVICER_READY)
		c->stats.rooms_free -= csq_servicer_free_count(s);
	for (i = 0; i < s->nqueues; i++) {
		s->queues[i]->rooms_ready -= ready;
		s->queues[i]->rooms_free -= free;
		csq_nobody_touch(c, s->queues[i]);
		if (csq_heap_contains(&s->avail[i].node))
			csq_heap_remove(&s->queues[i]->avail,
			                &s->avail[i].node);
	}
	csq_navail_unaccount(s);
}

/*
 * Puts s back into the counters and heaps after a change: O(k log n) for
 * k queues served and n servicers in each, whatever changed (for
 * least_busy, every change of the busy count is one).
 */
void
csq_servicer_account(struct csq *c, struct csq_servicer *s)
{
	uint32_t ready = s->status == CSQ_SERVICER_READY ? s->capacity : 0;
	uint32_t free =
	    csq_servicer_has_free(s) ? csq_servicer_free_count(s) : 0;
	uint64_t key, tie;
	uint32_t i;

	c->stats.rooms_busy += s->active;
	if (s->status == CSQ_SERVICER_READY)
		c->stats.rooms_free += csq_servicer_free_count(s);
	for (i = 0; i < s->nqueues; i++) {
		s->queues[i]->rooms_ready += ready;
		s->queues[i]->rooms_free += free;
		csq_nobody_touch(c, s->queues[i]);
	}
	if (!csq_servicer_has_free(s))
		return;
	for (i = 0; i < s->nqueues; i++) {
		s->avail[i].servicer = s;
		csq_avail_key(c, s, s->queues[i], &key, &tie);
		csq_heap_set(&s->queues[i]->avail, &s->avail[i].node, key, tie);
	}
	csq_navail_account(c, s);
}

static void
rekey_one(void *arg, const char *key, size_t len, void *val)
{
	(void)key, (void)len;
	csq_servicer_unaccount(arg, val);
	csq_servicer_account(arg, val);
}

void
csq_servicers_rekey(struct csq *c)
{
	csq_dict_each(c->servicers, rekey_one, c);
}

struct csq_servicer *
csq_servicer_get(const struct csq *c, const char *sid)
{
	return csq_dict_get(c->servicers, sid, strlen(sid));
}

void
csq_servicer_set_capacity(struct csq_servicer *s, uint32_t capacity)
{
	uint32_t i;

	if (capacity > s->nrooms) {
		s->rooms = csq_xrealloc(s->rooms, capacity * sizeof(*s->rooms));
		for (i = s->nrooms; i < capacity; i++)
			s->rooms[i] = NULL;
		s->nrooms = capacity;
	}
	s->capacity = capacity;
	csq_room_trim(s);
}

/*
 * Removes s: every user in its rooms, offered or assigned, goes back in
 * line at its old place (requeued; csq_user_requeue), its wrap-ups end
 * without an event, the users who waited for it alone join their lines
 * (prefer_ended, reason logout or lost), then servicer_down. The users
 * put back go to st, to be matched once the operation's changes are all
 * made. Returns how many were requeued.
 */
uint64_t
csq_servicer_drop(struct csq *c, struct csq_servicer *s, uint64_t now,
                  enum csq_reason reason, struct csq_settle *st)
{
	struct csq_room *r;
	struct csq_event ev;
	uint64_t n = 0;
	uint32_t i;

	csq_servicer_unaccount(c, s);
	for (i = 0; i < s->nrooms; i++) {
		if ((r = s->rooms[i]) == NULL)
			continue;
		if (r->state == CSQ_ROOM_WRAPUP)
			csq_room_close(c, r);
		else {
			csq_room_return(c, r, now, CSQ_EV_REQUEUED, reason, st);
			n++;
		}
	}
	/* The users who waited for it alone join their lines. */
	csq_prefer_servicer_gone(c, s, reason, now, st);
	csq_deadline_clear(c, &s->deadline);
	csq_deadline_clear(c, &s->retry);
	csq_dict_del(c->servicers, s->id, s->idlen);
	csq_nameset_del(c->servicer_ids, s->id);
	c->stats.servicers--;
	if (reason == CSQ_REASON_LOST)
		c->stats.servicers_lost_total++;
	for (i = 0; i < s->nqueues; i++) {
		s->queues[i]->nservicers--;
		csq_line_free(s->prefer[i]);
		csq_queue_unref(c, s->queues[i]);
	}
	csq_event_begin(&ev, CSQ_EV_SERVICER_DOWN, now);
	memcpy(ev.servicer, s->id, s->idlen + 1);
	ev.reason = reason;
	csq_emit(c, &ev);
	csq_servicer_skills_free(c, s);
	csq_servicer_sat_free(s);
	csq_navail_free(s);
	free(s->rooms);
	free(s);
	return n;
}

uint64_t
csq_servicer_remove(struct csq *c, struct csq_servicer *s, uint64_t now,
                    enum csq_reason reason)
{
	struct csq_settle st;
	uint64_t n;

	memset(&st, 0, sizeof(st));
	n = csq_servicer_drop(c, s, now, reason, &st);
	csq_settle(c, &st, now);
	return n;
}

/*
 * s stops taking users: its offers go back in line (requeued, reason
 * pause, whatever paused it), then servicer_paused with why. Its
 * conversations and wrap-ups go on.
 */
void
csq_servicer_pause(struct csq *c, struct csq_servicer *s, uint64_t now,
                   enum csq_reason why, struct csq_settle *st)
{
	struct csq_event ev;

	csq_offer_withdraw_all(c, s, now, CSQ_REASON_PAUSE, st);
	csq_servicer_unaccount(c, s);
	s->status = CSQ_SERVICER_PAUSED;
	csq_servicer_account(c, s);
	csq_event_begin(&ev, CSQ_EV_SERVICER_PAUSED, now);
	memcpy(ev.servicer, s->id, s->idlen + 1);
	ev.reason = why;
	csq_emit(c, &ev);
}

/*
 * Why s is paused. The state keeps no reason: a servicer pauses itself
 * after offer_max_missed offers run out in a row, and only an ACCEPT or
 * a RESUME sets the count back, neither of which a paused servicer gets
 * without resuming; so a paused servicer with that many missed was
 * paused for them, and one with fewer by hand (a limit lowered by a
 * reload since may tell a PAUSE for the misses: the count is still
 * true).
 */
enum csq_reason
csq_servicer_paused_by(const struct csq *c, const struct csq_servicer *s)
{
	if (s->status != CSQ_SERVICER_PAUSED)
		return CSQ_REASON_NONE;
	return c->limits.offer_max_missed > 0 &&
	               s->missed >= c->limits.offer_max_missed
	           ? CSQ_REASON_MISSED_OFFERS
	           : CSQ_REASON_PAUSE;
}

uint64_t
csq_servicer_resting_ms(const struct csq_servicer *s, uint64_t now)
{
	return csq_deadline_running(&s->retry) && s->retry.node.key > now
	           ? s->retry.node.key - now
	           : 0;
}
