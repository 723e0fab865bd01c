/*
 * The matcher: who gets which room. It runs only when something happened
 * that can make a match possible: a user starts waiting (look for a free
 * room in its queue), or a servicer gains a free room (login, resume,
 * capacity raised, queues changed, release, leave). Neither direction scans
 * servicers: each queue keeps a heap of the ready servicers with a free room
 * that serve it, ordered by their last login or assignment.
 */
#include "state.h"

#include <stdio.h>
#include <string.h>

/*
 * Puts waiting user u into room of s. from: the queue u moved from in the
 * same operation, which is told too (its line lost u), else NULL.
 */
void
csq_assign(struct csq *c, struct csq_user *u, struct csq_servicer *s,
           uint32_t room, const struct csq_queue *from, uint64_t now)
{
	struct csq_event ev;

	if (u->state == CSQ_USER_WAITING) {
		csq_line_remove(u->queue->line, u->key);
		csq_deadline_clear(c, &u->deadline);
		c->stats.waiting--;
	}
	csq_servicer_unaccount(c, s);
	u->state = CSQ_USER_ASSIGNED;
	u->servicer = s;
	u->room = room;
	u->assigned_ms = now;
	s->rooms[room] = u;
	s->active++;
	s->last_order = ++c->order;
	s->last_ms = now;
	csq_servicer_account(c, s);
	c->stats.matched_total++;

	csq_event_begin(&ev, CSQ_EV_MATCHED, now);
	csq_event_user(&ev, u);
	snprintf(ev.servicer, sizeof(ev.servicer), "%s", s->id);
	csq_room_name(s, room, ev.room);
	ev.waited_ms = now > u->arrival_ms ? now - u->arrival_ms : 0;
	if (from != NULL)
		memcpy(ev.from_queue, from->name, from->namelen + 1);
	csq_emit(c, &ev);
}

/* The ready servicer with a free room serving q that waited longest. */
static struct csq_servicer *
matcher_best_servicer(const struct csq_queue *q)
{
	struct csq_heap_node *top = csq_heap_top(&q->avail);

	if (top == NULL)
		return NULL;
	return csq_container_of(top, struct csq_avail, node)->servicer;
}

/*
 * A user has started waiting (or came back) in its queue: if a servicer
 * serving that queue has a free room, the user takes it. Returns 1 when
 * matched. A user not at the head of its line is never offered a room here
 * while a better user waits: a free room beside waiting users cannot exist.
 */
int
csq_match_user(struct csq *c, struct csq_user *u, const struct csq_queue *from,
               uint64_t now)
{
	struct csq_servicer *s = matcher_best_servicer(u->queue);

	if (s == NULL)
		return 0;
	csq_assign(c, u, s, csq_servicer_free_room(s), from, now);
	return 1;
}

/* The best waiting user across the queues s serves, or NULL. */
static struct csq_user *
matcher_best_user(const struct csq_servicer *s)
{
	struct csq_line_node *head;
	struct csq_user *best = NULL;
	uint64_t key;
	uint32_t i;

	for (i = 0; i < s->nqueues; i++) {
		if ((head = csq_line_first(s->queues[i]->line)) == NULL)
			continue;
		key = csq_line_node_key(head);
		if (best == NULL || key < best->key)
			best = csq_line_node_value(head);
	}
	return best;
}

/* s may have free rooms: fill them with the best users it serves. */
void
csq_match_servicer(struct csq *c, struct csq_servicer *s, uint64_t now)
{
	struct csq_user *u;

	while (csq_servicer_has_free(s) && (u = matcher_best_user(s)) != NULL)
		csq_assign(c, u, s, csq_servicer_free_room(s), NULL, now);
}
