/*
 * Servicers and their rooms: the S2R map (a servicer's rooms array) and R2U
 * (each slot's user), kept in step with the counters and with the avail
 * heaps that let the matcher find a free room without scanning servicers.
 */
#include "state.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rooms that may take a new user: none while busy rooms >= capacity. */
static uint32_t
servicer_free_count(const struct csq_servicer *s)
{
	return s->active < s->capacity ? s->capacity - s->active : 0;
}

int
csq_servicer_has_free(const struct csq_servicer *s)
{
	return s->status == CSQ_SERVICER_READY && servicer_free_count(s) > 0;
}

/* Takes s out of the counters and the avail heaps before a change. */
void
csq_servicer_unaccount(struct csq *c, struct csq_servicer *s)
{
	uint32_t i;

	c->stats.rooms_busy -= s->active;
	if (s->status == CSQ_SERVICER_READY)
		c->stats.rooms_free -= servicer_free_count(s);
	for (i = 0; i < s->nqueues; i++)
		if (csq_heap_contains(&s->avail[i].node))
			csq_heap_remove(&s->queues[i]->avail,
			                &s->avail[i].node);
}

/* Puts s back into the counters and heaps after a change. */
void
csq_servicer_account(struct csq *c, struct csq_servicer *s)
{
	uint32_t i;

	c->stats.rooms_busy += s->active;
	if (s->status == CSQ_SERVICER_READY)
		c->stats.rooms_free += servicer_free_count(s);
	if (!csq_servicer_has_free(s))
		return;
	for (i = 0; i < s->nqueues; i++) {
		s->avail[i].servicer = s;
		csq_heap_set(&s->queues[i]->avail, &s->avail[i].node,
		             s->last_order, 0);
	}
}

/* The lowest free room below the capacity; only when has_free. */
uint32_t
csq_servicer_free_room(const struct csq_servicer *s)
{
	uint32_t i;

	for (i = 0; i < s->capacity; i++)
		if (s->rooms[i] == NULL)
			return i;
	abort(); /* has_free promised one */
}

/* A room exists below the capacity, or above it while still busy. */
int
csq_servicer_room_exists(const struct csq_servicer *s, uint32_t index)
{
	if (index < s->capacity)
		return 1;
	return index < s->nrooms && s->rooms[index] != NULL;
}

/* Keeps nrooms = max(capacity, highest busy room + 1). */
void
csq_servicer_trim(struct csq_servicer *s)
{
	while (s->nrooms > s->capacity && s->rooms[s->nrooms - 1] == NULL)
		s->nrooms--;
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
	csq_servicer_trim(s);
}

void
csq_room_name(const struct csq_servicer *s, uint32_t index,
              char out[CSQ_ROOM_MAX + 1])
{
	snprintf(out, CSQ_ROOM_MAX + 1, "%s/%u", s->id, index);
}

static int
user_key_cmp(const void *a, const void *b)
{
	const struct csq_user *ua = *(struct csq_user *const *)a;
	const struct csq_user *ub = *(struct csq_user *const *)b;

	return ua->key < ub->key ? -1 : ua->key > ub->key;
}

/*
 * Removes s: every user in its rooms goes back in line at its old place
 * (same key, so same tier and arrival; the queue's length limit does not
 * apply; the TTL restarts), then servicer_down. The requeued users are
 * appended to back (its room for s->active more is made here) for the
 * caller to match (csq_rematch). Returns how many requeued.
 */
uint64_t
csq_servicer_drop(struct csq *c, struct csq_servicer *s, uint64_t now,
                  enum csq_reason reason, struct csq_users *back)
{
	struct csq_user *u;
	struct csq_event ev;
	uint64_t n = 0, i;
	uint32_t r;

	csq_servicer_unaccount(c, s);
	/* Doubled, not grown by each servicer's share: a storm of 10,000
	 * lost in one pass would copy the array 10,000 times. */
	if (back->n + s->active >= back->cap) {
		while (back->n + s->active >= back->cap)
			back->cap = back->cap ? back->cap * 2 : 16;
		back->v = csq_xrealloc(back->v, back->cap * sizeof(*back->v));
	}
	for (r = 0; r < s->nrooms; r++) {
		if ((u = s->rooms[r]) == NULL)
			continue;
		s->rooms[r] = NULL;
		csq_user_set_waiting(u);
		csq_line_insert(u->queue->line, u->key, u);
		c->stats.waiting++;
		c->stats.requeued_total++;
		if (u->ttl_s > 0)
			csq_deadline_set(c, &u->deadline,
			                 now + (uint64_t)u->ttl_s * 1000);
		csq_event_begin(&ev, CSQ_EV_REQUEUED, now);
		csq_event_user(&ev, u);
		ev.position = csq_user_position(u);
		snprintf(ev.servicer, sizeof(ev.servicer), "%s", s->id);
		csq_room_name(s, r, ev.room);
		ev.reason = reason;
		csq_emit(c, &ev);
		back->v[back->n++] = u;
		n++;
	}
	s->active = 0;

	csq_deadline_clear(c, &s->deadline);
	csq_dict_del(c->servicers, s->id, s->idlen);
	c->stats.servicers--;
	if (reason == CSQ_REASON_LOST)
		c->stats.servicers_lost_total++;
	for (i = 0; i < s->nqueues; i++)
		csq_queue_unref(c, s->queues[i]);
	csq_event_begin(&ev, CSQ_EV_SERVICER_DOWN, now);
	snprintf(ev.servicer, sizeof(ev.servicer), "%s", s->id);
	ev.reason = reason;
	csq_emit(c, &ev);
	free(s->rooms);
	free(s);
	return n;
}

/* Matches the requeued users of back best first, wherever a room is free
 * (a user matched or gone since is skipped), and empties back. */
void
csq_rematch(struct csq *c, struct csq_users *back, uint64_t now)
{
	size_t i;

	if (back->n > 1)
		qsort(back->v, back->n, sizeof(*back->v), user_key_cmp);
	for (i = 0; i < back->n; i++)
		if (back->v[i]->state == CSQ_USER_WAITING)
			csq_match_user(c, back->v[i], NULL, now);
	free(back->v);
	back->v = NULL;
	back->n = back->cap = 0;
}

/* Removes s (csq_servicer_drop), then matches its users. */
uint64_t
csq_servicer_remove(struct csq *c, struct csq_servicer *s, uint64_t now,
                    enum csq_reason reason)
{
	struct csq_users back = {NULL, 0, 0};
	uint64_t n = csq_servicer_drop(c, s, now, reason, &back);

	csq_rematch(c, &back, now);
	return n;
}
