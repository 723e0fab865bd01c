/*
 * TRANSFER: a servicer hands its conversation on to a queue. The room is
 * released as by RELEASE (wrap-up included), and the user goes into the
 * queue with its order key: its tier and original arrival, so that it is
 * served before everyone who arrived after it. With PREFER, it waits for
 * the servicer named (prefer.c) when that one is logged in and serves the
 * queue: a hand-over to a named colleague.
 */
#include "state.h"

#include <string.h>

enum csq_status
csq_transfer(struct csq *c, uint64_t now, const struct csq_transfer_args *a,
             struct csq_user_info *out)
{
	char sid[CSQ_ID_MAX + 1];
	struct csq_settle st;
	struct csq_queue *from, *to;
	struct csq_servicer *want;
	struct csq_room *r;
	struct csq_user *u;
	struct csq_event ev;
	enum csq_status status;
	size_t qlen;
	uint32_t idx;
	uint16_t needs = 0;

	if (a->room == NULL ||
	    csq_parse_room(a->room, strlen(a->room), sid, &idx) != 0)
		return CSQ_EROOM;
	qlen = a->queue != NULL ? strnlen(a->queue, CSQ_ID_MAX + 1) : 0;
	if (!csq_valid_id(a->queue, qlen))
		return CSQ_EQUEUE;
	if ((status = csq_prefer_check(&a->prefer)) != CSQ_OK)
		return status;
	if (a->has_needs &&
	    (status = csq_needs_resolve(c, a->needs, &needs)) != CSQ_OK)
		return status;
	if ((r = csq_room_find(c, a->room, CSQ_ROOM_ASSIGNED, &status)) == NULL)
		return status != CSQ_OK ? status : CSQ_ENOCONV;

	if ((to = csq_queue_open(c, a->queue, qlen)) == NULL)
		return CSQ_EQUEUES;
	u = r->user;
	from = u->queue;
	/* Business hours, then nobody there (section 3c): into it as an
	 * arrival would go (a queue that refuses has a policy: it exists,
	 * nothing to drop). */
	if (to != from &&
	    (status = csq_hours_route(c, &to, &out->opens_ms)) != CSQ_OK)
		return status;
	if (to != from && (status = csq_nobody_route(c, &to)) != CSQ_OK)
		return status;
	memset(&st, 0, sizeof(st));
	csq_event_begin(&ev, CSQ_EV_TRANSFERRED, now);
	csq_event_room(&ev, r);
	csq_room_end(c, r, now, CSQ_REASON_BY_TRANSFER, &st);
	if (to != from) {
		csq_queue_ref(to);
		u->queue = to;
	}
	if (a->has_needs) { /* in no line: the new ones for the new line */
		csq_needset_hold(c, needs);
		csq_needset_release(c, u->needs);
		u->needs = needs;
	}
	/* The agent's choice: a later ENQUEUE does not move it back. */
	u->flags |= CSQ_USER_TRANSFERRED;
	/* Its length limit is not for a user already in the system. */
	csq_estimate_arrival(&to->est, csq_user_tier(u), now);
	ev.position = csq_user_requeue(c, u, now);
	if ((want = csq_prefer_target(c, &a->prefer, to, u->needs)) != NULL) {
		csq_user_leave_line(c, u);
		ev.position = csq_prefer_insert(c, u, want);
		csq_prefer_window(c, u, a->prefer.seconds, now);
	}
	c->stats.transferred_total++;
	csq_event_user(&ev, u);
	csq_event_needs(c, &ev, u);
	csq_event_prefer(&ev, u, now);
	memcpy(ev.from_queue, from->name, from->namelen + 1);
	csq_emit(c, &ev);
	if (to != from)
		csq_queue_unref(c, from);
	csq_settle_back(&st, u);
	csq_settle(c, &st, now);
	csq_user_info_at(c, u, now, 0, out);
	return CSQ_OK;
}
