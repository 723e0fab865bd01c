/*
 * The matcher: who gets which room. It runs only when something happened
 * that can make a match possible: a user starts waiting (look for a free
 * room in its queue), or a servicer gains a free room (login, resume,
 * capacity raised, queues changed, release, leave, a wrap-up or a retry
 * window ended). Neither direction scans servicers: each queue keeps a
 * heap of the ready servicers with a free room that serve it, ordered by
 * the strategy (servicer.c). A match is an offer when the servicer takes
 * offers (offer.c), else an assignment.
 */
#include "state.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void
csq_assign(struct csq *c, struct csq_user *u, struct csq_servicer *s,
           uint32_t index, const struct csq_queue *from, enum csq_reason why,
           uint64_t now)
{
	struct csq_event ev;
	struct csq_room *r;

	r = csq_room_take(c, u, s, index, CSQ_ROOM_ASSIGNED, now);
	csq_deadline_clear(c, &u->deadline); /* assigned: no TTL */
	c->stats.matched_total++;
	csq_qstats_matched(u->queue,
	                   now > u->arrival_ms ? now - u->arrival_ms : 0);

	csq_event_begin(&ev, CSQ_EV_MATCHED, now);
	csq_event_user(&ev, u);
	csq_event_needs(c, &ev, u);
	csq_event_room(&ev, r);
	ev.waited_ms = now > u->arrival_ms ? now - u->arrival_ms : 0;
	if (from != NULL)
		memcpy(ev.from_queue, from->name, from->namelen + 1);
	ev.reason = why;
	csq_emit(c, &ev);
}

/* Waiting u takes s's lowest free room: offered or assigned. */
static void
matcher_place(struct csq *c, struct csq_user *u, struct csq_servicer *s,
              const struct csq_queue *from, enum csq_reason why, uint64_t now)
{
	uint32_t index = csq_room_free_index(s);

	if (s->offer_s > 0)
		csq_offer(c, u, s, index, from, why, now);
	else
		csq_assign(c, u, s, index, from, why, now);
}

/* The servicer the strategy gives q's next user, or NULL. */
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
 * placed. A user not at the head of its line is never given a room here
 * while a better user waits: a free room beside waiting users cannot exist
 * (csq_settle keeps it so for users put back). A user held for a
 * preferred servicer takes a free room of that servicer only.
 */
int
csq_match_user(struct csq *c, struct csq_user *u, const struct csq_queue *from,
               enum csq_reason why, uint64_t now)
{
	struct csq_servicer *s;

	if (csq_queue_closed(u->queue)) /* business hours: nobody now */
		return 0;
	if (u->flags & CSQ_USER_PREFERRING)
		s = csq_servicer_has_free(u->wait->prefer) ? u->wait->prefer
		                                           : NULL;
	else if (u->needs != 0)
		s = csq_needline_best_servicer(
		    csq_needline_find(c, u->queue, u->needs));
	else
		s = matcher_best_servicer(u->queue);
	if (s == NULL)
		return 0;
	matcher_place(c, u, s, from, why, now);
	return 1;
}

/* The head of l if it comes before best. */
static struct csq_user *
matcher_better(const struct csq_line *l, struct csq_user *best)
{
	struct csq_line_node *head;

	if (l == NULL || (head = csq_line_first(l)) == NULL)
		return best;
	if (best == NULL || csq_line_node_key(head) < best->key)
		return csq_line_node_value(head);
	return best;
}

/* The best waiting user across the queues s serves and the users who
 * wait for s alone, or NULL. */
static struct csq_user *
matcher_best_user(struct csq_servicer *s)
{
	const struct csq_takes *t;
	struct csq_user *best = NULL;
	uint32_t i, j;

	for (i = 0; i < s->nqueues; i++) {
		if (csq_queue_closed(s->queues[i]))
			continue; /* business hours: nobody of it now */
		best = matcher_better(s->queues[i]->line, best);
		best = matcher_better(s->prefer[i], best);
		if (s->nskills == 0)
			continue;
		/* The heads of the need-lines it may take, and no other
		 * (needline.c, csq_needline_takes). */
		t = csq_needline_takes(s, i);
		for (j = 0; j < t->n; j++)
			best = matcher_better(t->v[j]->line, best);
	}
	return best;
}

/* s may have free rooms: fill them with the best users it serves. */
void
csq_match_servicer(struct csq *c, struct csq_servicer *s, uint64_t now)
{
	struct csq_user *u;

	while (csq_servicer_has_free(s) && (u = matcher_best_user(s)) != NULL)
		matcher_place(c, u, s, NULL, CSQ_REASON_NONE, now);
}

/* The users put back so far, inline or allocated. */
static struct csq_user **
settle_backs(struct csq_settle *st)
{
	return st->back.v != NULL ? st->back.v : st->back_in;
}

/* The ids of the servicers to refill so far, inline or allocated. */
static char (*settle_refills(struct csq_settle *st))[CSQ_ID_MAX + 1]
{
	return st->refill != NULL ? st->refill : st->refill_in;
}

void
csq_settle_back(struct csq_settle *st, struct csq_user *u)
{
	struct csq_users *b = &st->back;

	/* Doubled: a storm of 10,000 servicers lost in one pass must not
	 * copy the array 10,000 times. */
	if (b->v == NULL && b->n == CSQ_SETTLE_IN) {
		b->cap = 2 * CSQ_SETTLE_IN;
		b->v = csq_xmalloc(b->cap * sizeof(*b->v));
		memcpy(b->v, st->back_in, sizeof(st->back_in));
	} else if (b->v != NULL && b->n == b->cap) {
		b->cap *= 2;
		b->v = csq_xrealloc(b->v, b->cap * sizeof(*b->v));
	}
	settle_backs(st)[b->n++] = u;
}

void
csq_settle_refill(struct csq_settle *st, const struct csq_servicer *s)
{
	if (st->refill == NULL && st->nrefill == CSQ_SETTLE_IN) {
		st->caprefill = 2 * CSQ_SETTLE_IN;
		st->refill = csq_xmalloc(st->caprefill * sizeof(*st->refill));
		memcpy(st->refill, st->refill_in, sizeof(st->refill_in));
	} else if (st->refill != NULL && st->nrefill == st->caprefill) {
		st->caprefill *= 2;
		st->refill = csq_xrealloc(st->refill,
		                          st->caprefill * sizeof(*st->refill));
	}
	memcpy(settle_refills(st)[st->nrefill++], s->id, s->idlen + 1);
}

static int
user_key_cmp(const void *a, const void *b)
{
	const struct csq_user *ua = *(struct csq_user *const *)a;
	const struct csq_user *ub = *(struct csq_user *const *)b;

	return ua->key < ub->key ? -1 : ua->key > ub->key;
}

/* A preferring user's line is its prefer line. */
static int
heads_its_line(struct csq *c, const struct csq_user *u)
{
	struct csq_line_node *head;

	if (u->flags & CSQ_USER_PREFERRING)
		return csq_prefer_position(u) == 1;
	head = csq_line_first(csq_needline_of(c, (struct csq_user *)u, 0));
	return head != NULL && csq_line_node_value(head) == u;
}

/*
 * The users put back go first, best first, each only while it heads its
 * line: it then takes the room the strategy gives its queue (a declined
 * user goes to the next free servicer, a transferred one is placed
 * before the room it left is refilled). One that does not head its line
 * waits: a better user of its queue waited already, so no room of that
 * queue was free before the operation, and any that it freed are in the
 * refill list, whose servicers then take the best heads of their queues.
 */
void
csq_settle(struct csq *c, struct csq_settle *st, uint64_t now)
{
	struct csq_servicer *s;
	struct csq_user *u;
	size_t i;
	struct csq_user **back = settle_backs(st);
	char(*refill)[CSQ_ID_MAX + 1] = settle_refills(st);

	if (st->back.n > 1)
		qsort(back, st->back.n, sizeof(*back), user_key_cmp);
	for (i = 0; i < st->back.n; i++) {
		u = back[i];
		if (u->state == CSQ_USER_WAITING && heads_its_line(c, u))
			csq_match_user(c, u, NULL, CSQ_REASON_NONE, now);
	}
	for (i = 0; i < st->nrefill; i++)
		if ((s = csq_servicer_get(c, refill[i])) != NULL)
			csq_match_servicer(c, s, now);
	free(st->back.v);
	free(st->refill);
	/* Empty again; the inline arrays' bytes are not read past n. */
	st->back.v = NULL;
	st->back.n = st->back.cap = 0;
	st->refill = NULL;
	st->nrefill = st->caprefill = 0;
	/* Servicers came or went: spells of nobody begin or end. */
	csq_nobody_settle(c, now);
}
