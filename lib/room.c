/*
 * Rooms: a servicer's rooms array is S2R, a busy room's user is R2U, and
 * the user's room pointer is U2R. A room is in one state at a time: free
 * (no struct csq_room, its slot NULL), offered (a user to accept or
 * decline, offer.c), assigned (a conversation) or in wrap-up (no user,
 * until READY or its deadline). This file holds what rooms are, the end of
 * a conversation (RELEASE, LEAVE, TRANSFER) and the wrap-up after it.
 */
#include "state.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* A room exists below the capacity, or above it while still busy. */
int
csq_room_exists(const struct csq_servicer *s, uint32_t index)
{
	if (index < s->capacity)
		return 1;
	return index < s->nrooms && s->rooms[index] != NULL;
}

uint32_t
csq_room_free_index(const struct csq_servicer *s)
{
	uint32_t i;

	for (i = 0; i < s->capacity; i++)
		if (s->rooms[i] == NULL)
			return i;
	abort(); /* the caller saw a free room */
}

void
csq_room_name(const struct csq_servicer *s, uint32_t index,
              char out[CSQ_ROOM_MAX + 1])
{
	/* As snprintf("%s/%u") would write it, cut to CSQ_ROOM_MAX, without
	 * its cost: a name is made for each event that names a room. */
	char digits[10];
	size_t n = s->idlen, d = 0;

	memcpy(out, s->id, n);
	out[n++] = '/';
	do
		digits[d++] = (char)('0' + index % 10);
	while ((index /= 10) != 0);
	while (d > 0 && n < CSQ_ROOM_MAX)
		out[n++] = digits[--d];
	out[n] = '\0';
}

enum csq_status
csq_room_lookup(const struct csq *c, const char *room, struct csq_servicer **s,
                uint32_t *idx)
{
	char sid[CSQ_ID_MAX + 1];

	if (room == NULL || csq_parse_room(room, strlen(room), sid, idx) != 0)
		return CSQ_EROOM;
	if ((*s = csq_servicer_get(c, sid)) == NULL ||
	    !csq_room_exists(*s, *idx))
		return CSQ_ENOTFOUND;
	return CSQ_OK;
}

/*
 * Room index of s becomes busy in state st, holding u (NULL in wrap-up).
 * Between csq_servicer_unaccount and csq_servicer_account: the busy count
 * changes.
 */
struct csq_room *
csq_room_open(struct csq_servicer *s, uint32_t index, enum csq_room_state st,
              struct csq_user *u, uint64_t now)
{
	struct csq_room *r = csq_xmalloc(sizeof(*r));

	r->servicer = s;
	r->user = u;
	r->since_ms = now;
	r->taken_ms = now;
	csq_deadline_init(&r->deadline,
	                  st == CSQ_ROOM_WRAPUP ? CSQ_DL_WRAPUP : CSQ_DL_OFFER);
	r->length_s = 0;
	r->index = index;
	r->state = st;
	s->rooms[index] = r;
	s->active++;
	return r;
}

/* Keeps nrooms = max(capacity, highest busy room + 1). */
void
csq_room_trim(struct csq_servicer *s)
{
	while (s->nrooms > s->capacity && s->rooms[s->nrooms - 1] == NULL)
		s->nrooms--;
}

/*
 * r becomes free: out of the map, its deadline cleared, freed; a room at
 * or above the capacity ceases to exist. Its user, if any, is the
 * caller's to place. Between unaccount and account, as csq_room_open.
 */
void
csq_room_close(struct csq *c, struct csq_room *r)
{
	struct csq_servicer *s = r->servicer;

	csq_deadline_clear(c, &r->deadline);
	s->rooms[r->index] = NULL;
	s->active--;
	csq_room_trim(s);
	free(r);
}

void
csq_room_return(struct csq *c, struct csq_room *r, uint64_t now,
                enum csq_event_type type, enum csq_reason reason,
                struct csq_settle *st)
{
	struct csq_user *u = r->user;
	struct csq_servicer *s = r->servicer;
	struct csq_event ev;

	csq_event_begin(&ev, type, now);
	csq_event_room(&ev, r);
	/* declined: when its servicer's retry window ends (0: none), so that
	 * a client knows how long it rests without asking. */
	if (type == CSQ_EV_DECLINED && csq_deadline_running(&s->retry))
		ev.until_ms = s->retry.node.key;
	u->room = NULL;
	csq_room_close(c, r);
	ev.position = csq_user_requeue(c, u, now);
	csq_event_user(&ev, u);
	ev.reason = reason;
	if (type == CSQ_EV_REQUEUED)
		c->stats.requeued_total++;
	csq_emit(c, &ev);
	csq_settle_back(st, u);
}

/* Starts r's deadline: its whole length is kept for a rearm. */
static void
room_deadline(struct csq *c, struct csq_room *r, enum csq_deadline_kind kind,
              uint32_t length_s, uint64_t now)
{
	csq_deadline_init(&r->deadline, kind);
	r->length_s = length_s;
	csq_deadline_set(c, &r->deadline, now + csq_ms(length_s));
}

void
csq_room_end(struct csq *c, struct csq_room *r, uint64_t now,
             enum csq_reason by, struct csq_settle *st)
{
	struct csq_servicer *s = r->servicer;
	struct csq_user *u = r->user;
	struct csq_event ev;
	int wrapup = s->wrapup_s > 0;

	csq_event_begin(&ev, CSQ_EV_RELEASED, now);
	csq_event_user(&ev, u);
	csq_event_room(&ev, r);
	ev.reason = by;
	/* How long its user held the room: offer, conversation, wrap-up. */
	csq_estimate_hold(&u->queue->est,
	                  (now > r->taken_ms ? now - r->taken_ms : 0) +
	                      csq_ms(s->wrapup_s));
	s->handled++;
	s->handle_ms += now > r->taken_ms ? now - r->taken_ms : 0;
	u->room = NULL;
	csq_servicer_unaccount(c, s);
	if (wrapup) {
		r->user = NULL;
		r->state = CSQ_ROOM_WRAPUP;
		r->since_ms = now;
		room_deadline(c, r, CSQ_DL_WRAPUP, s->wrapup_s, now);
	} else
		csq_room_close(c, r);
	csq_servicer_account(c, s);
	csq_emit(c, &ev);
	if (wrapup) {
		csq_event_begin(&ev, CSQ_EV_WRAPUP, now);
		csq_event_room(&ev, r);
		ev.until_ms = r->deadline.node.key;
		csq_emit(c, &ev);
	} else
		csq_settle_refill(st, s);
}

void
csq_room_ready(struct csq *c, struct csq_room *r, uint64_t now,
               struct csq_settle *st)
{
	struct csq_servicer *s = r->servicer;
	struct csq_event ev;

	csq_event_begin(&ev, CSQ_EV_READY, now);
	csq_event_room(&ev, r);
	csq_servicer_unaccount(c, s);
	csq_room_close(c, r);
	csq_servicer_account(c, s);
	csq_emit(c, &ev);
	csq_settle_refill(st, s);
}

struct csq_room *
csq_room_find(const struct csq *c, const char *room, enum csq_room_state state,
              enum csq_status *status)
{
	struct csq_servicer *s;
	struct csq_room *r;
	uint32_t idx;

	if ((*status = csq_room_lookup(c, room, &s, &idx)) != CSQ_OK)
		return NULL;
	if ((r = s->rooms[idx]) == NULL || r->state != state)
		return NULL;
	return r;
}

struct csq_room *
csq_room_take(struct csq *c, struct csq_user *u, struct csq_servicer *s,
              uint32_t index, enum csq_room_state state, uint64_t now)
{
	struct csq_room *r;

	/* A window ends silently when its user is offered or assigned. */
	csq_user_leave_line(c, u);
	c->stats.waiting--;
	csq_servicer_unaccount(c, s);
	r = csq_room_open(s, index, state, u, now);
	u->state =
	    state == CSQ_ROOM_OFFERED ? CSQ_USER_OFFERED : CSQ_USER_ASSIGNED;
	u->room = r;
	s->last_order = ++c->order;
	s->last_ms = now;
	csq_servicer_account(c, s);
	return r;
}

enum csq_status
csq_release(struct csq *c, uint64_t now, const char *room, int *ended)
{
	char sid[CSQ_ID_MAX + 1];
	uint32_t idx;

	*ended = 0;
	if (room == NULL || csq_parse_room(room, strlen(room), sid, &idx) != 0)
		return CSQ_EROOM;
	return csq_release_at(c, now, sid, strlen(sid), idx, ended);
}

/* As csq_room_lookup and csq_room_find, from the room's parse. */
enum csq_status
csq_release_at(struct csq *c, uint64_t now, const char *sid, size_t sidlen,
               uint32_t index, int *ended)
{
	struct csq_servicer *s = csq_dict_get(c->servicers, sid, sidlen);
	struct csq_settle st;
	struct csq_room *r;
	struct csq_user *u;

	*ended = 0;
	if (s == NULL || !csq_room_exists(s, index))
		return CSQ_ENOTFOUND;
	/* An offer stands, a wrap-up runs on: neither is a conversation. */
	if ((r = s->rooms[index]) == NULL || r->state != CSQ_ROOM_ASSIGNED)
		return CSQ_OK;
	memset(&st, 0, sizeof(st));
	u = r->user;
	csq_room_end(c, r, now, CSQ_REASON_BY_SERVICER, &st);
	csq_user_free(c, u);
	csq_settle(c, &st, now);
	*ended = 1;
	return CSQ_OK;
}

enum csq_status
csq_ready(struct csq *c, uint64_t now, const char *room, int *done)
{
	struct csq_settle st;
	struct csq_room *r;
	enum csq_status status;

	*done = 0;
	if ((r = csq_room_find(c, room, CSQ_ROOM_WRAPUP, &status)) == NULL)
		return status;
	memset(&st, 0, sizeof(st));
	csq_room_ready(c, r, now, &st);
	csq_settle(c, &st, now);
	*done = 1;
	return CSQ_OK;
}
