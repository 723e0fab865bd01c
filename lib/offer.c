/*
 * Offers: with OFFER T > 0, a servicer's free room is offered to the user
 * matching picked, and the user is its only once the servicer accepts.
 * While offered, a user is out of its line but keeps its order key and its
 * TTL, and the room is busy (reserved). ACCEPT makes it a conversation;
 * DECLINE, or T running out, puts the user back at its old place and
 * keeps the servicer from new users for offer_retry seconds; offer_max_missed
 * offers run out in a row pause it. PAUSE, LOGOUT and loss withdraw offers.
 */
#include "state.h"

#include <string.h>

void
csq_offer(struct csq *c, struct csq_user *u, struct csq_servicer *s,
          uint32_t index, const struct csq_queue *from, enum csq_reason why,
          uint64_t now)
{
	struct csq_event ev;
	struct csq_room *r;

	/* For longest_idle, a servicer's last new user is its last offer:
	 * csq_room_take gives s its order. The user keeps its TTL. */
	r = csq_room_take(c, u, s, index, CSQ_ROOM_OFFERED, now);
	r->length_s = s->offer_s;
	csq_deadline_set(c, &r->deadline, now + csq_ms(s->offer_s));
	c->stats.offers_total++;

	csq_event_begin(&ev, CSQ_EV_OFFERED, now);
	csq_event_user(&ev, u);
	csq_event_needs(c, &ev, u);
	csq_event_room(&ev, r);
	ev.expires_ms = r->deadline.node.key;
	if (from != NULL)
		memcpy(ev.from_queue, from->name, from->namelen + 1);
	ev.reason = why;
	csq_emit(c, &ev);
}

enum csq_status
csq_accept(struct csq *c, uint64_t now, const char *room, int *done)
{
	struct csq_event ev;
	struct csq_room *r;
	struct csq_user *u;
	enum csq_status status;

	*done = 0;
	if ((r = csq_room_find(c, room, CSQ_ROOM_OFFERED, &status)) == NULL)
		return status;
	*done = 1;
	u = r->user;
	/* An assigned user has no TTL, and its room no deadline. */
	csq_deadline_clear(c, &r->deadline);
	csq_deadline_clear(c, &u->deadline);
	csq_event_begin(&ev, CSQ_EV_MATCHED, now);
	ev.offered_ms = now > r->since_ms ? now - r->since_ms : 0;
	ev.has_offered_ms = 1;
	r->state = CSQ_ROOM_ASSIGNED;
	r->since_ms = now;
	r->length_s = 0;
	u->state = CSQ_USER_ASSIGNED;
	r->servicer->missed = 0;
	c->stats.matched_total++;
	csq_qstats_matched(u->queue,
	                   now > u->arrival_ms ? now - u->arrival_ms : 0);
	csq_event_user(&ev, u);
	csq_event_needs(c, &ev, u);
	csq_event_room(&ev, r);
	ev.waited_ms = now > u->arrival_ms ? now - u->arrival_ms : 0;
	csq_emit(c, &ev);
	return CSQ_OK;
}

/* s takes no new user for offer_retry seconds (0: none, at once). */
static void
offer_retry_start(struct csq *c, struct csq_servicer *s, uint64_t now)
{
	if (c->limits.offer_retry_s == 0)
		return;
	s->retry_s = c->limits.offer_retry_s;
	csq_deadline_set(c, &s->retry, now + csq_ms(s->retry_s));
}

/*
 * The offer in r ends without a conversation: declined by the servicer
 * or by timeout. The user goes back to its old place and is offered to
 * the next free servicer at once (st); r's servicer starts its retry
 * window and is refilled when it ends (or now, without one).
 */
static void
offer_decline(struct csq *c, struct csq_room *r, uint64_t now,
              enum csq_reason by, struct csq_settle *st)
{
	struct csq_servicer *s = r->servicer;

	csq_servicer_unaccount(c, s);
	/* Before the event, which says when the window ends. */
	offer_retry_start(c, s, now);
	csq_room_return(c, r, now, CSQ_EV_DECLINED, by, st);
	csq_servicer_account(c, s);
	csq_settle_refill(st, s);
}

enum csq_status
csq_decline(struct csq *c, uint64_t now, const char *room, int *done)
{
	struct csq_settle st;
	struct csq_room *r;
	enum csq_status status;

	*done = 0;
	if ((r = csq_room_find(c, room, CSQ_ROOM_OFFERED, &status)) == NULL)
		return status;
	*done = 1;
	memset(&st, 0, sizeof(st));
	c->stats.offers_declined_total++;
	offer_decline(c, r, now, CSQ_REASON_BY_SERVICER, &st);
	csq_settle(c, &st, now);
	return CSQ_OK;
}

void
csq_offer_expire(struct csq *c, struct csq_room *r, uint64_t now,
                 struct csq_settle *st)
{
	struct csq_servicer *s = r->servicer;

	c->stats.offers_missed_total++;
	s->missed++;
	offer_decline(c, r, now, CSQ_REASON_TIMEOUT, st);
	if (c->limits.offer_max_missed > 0 &&
	    s->missed >= c->limits.offer_max_missed &&
	    s->status == CSQ_SERVICER_READY)
		csq_servicer_pause(c, s, now, CSQ_REASON_MISSED_OFFERS, st);
}

void
csq_offer_withdraw_all(struct csq *c, struct csq_servicer *s, uint64_t now,
                       enum csq_reason reason, struct csq_settle *st)
{
	uint32_t i;

	csq_servicer_unaccount(c, s);
	for (i = 0; i < s->nrooms; i++)
		if (s->rooms[i] != NULL &&
		    s->rooms[i]->state == CSQ_ROOM_OFFERED)
			csq_room_return(c, s->rooms[i], now, CSQ_EV_REQUEUED,
			                reason, st);
	csq_servicer_account(c, s);
}

void
csq_offer_retry_end(struct csq *c, struct csq_servicer *s,
                    struct csq_settle *st)
{
	csq_servicer_unaccount(c, s);
	csq_deadline_clear(c, &s->retry);
	csq_servicer_account(c, s);
	csq_settle_refill(st, s);
}
