/*
 * Deadlines: every timer of the state in one min-heap, each node embedded
 * in what it belongs to (a user's TTL, a servicer's TTL and retry window,
 * a room's offer or wrap-up), its kind in the node's tag. The daemon arms
 * one timer for the earliest; csq_expire acts on all that have passed.
 */
#include "state.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define MS_PER_S 1000

uint64_t
csq_ms(uint32_t seconds)
{
	return (uint64_t)seconds * MS_PER_S;
}

void
csq_deadline_init(struct csq_deadline *d, enum csq_deadline_kind kind)
{
	csq_heap_node_init(&d->node);
	d->node.tag = (uint32_t)kind;
}

enum csq_deadline_kind
csq_deadline_kind(const struct csq_deadline *d)
{
	return (enum csq_deadline_kind)d->node.tag;
}

int
csq_deadline_running(const struct csq_deadline *d)
{
	return csq_heap_contains(&d->node);
}

void
csq_deadline_set(struct csq *c, struct csq_deadline *d, uint64_t at_ms)
{
	csq_heap_set(&c->deadlines, &d->node, at_ms, ++c->tie);
}

void
csq_deadline_clear(struct csq *c, struct csq_deadline *d)
{
	if (csq_heap_contains(&d->node))
		csq_heap_remove(&c->deadlines, &d->node);
}

uint64_t
csq_next_deadline(const struct csq *c)
{
	struct csq_heap_node *top = csq_heap_top(&c->deadlines);

	return top != NULL ? top->key : UINT64_MAX;
}

/*
 * A deadline that has passed, by what it names rather than where it is:
 * acting on one may end what another belongs to (a user who times out
 * takes its offer with it; a lost servicer its wrap-ups), so each is
 * found again, by name, when its turn comes, and passed over if it no
 * longer runs. Nothing a pass does sets a deadline that is due already
 * (every length is at least a second, or none is set), so "still running
 * and due" is exactly "due and not ended by an earlier one".
 */
struct due {
	enum csq_deadline_kind kind;
	uint64_t at;
	char name[CSQ_ROOM_MAX + 1]; /* user, servicer or room id */
};

struct due_list {
	struct due *v;
	size_t n, cap;
};

static void
due_collect(void *arg, struct csq_heap_node *node)
{
	struct due_list *l = arg;
	struct csq_deadline *d =
	    csq_container_of(node, struct csq_deadline, node);
	const struct csq_user *u;
	const struct csq_servicer *s;
	const struct csq_room *r;
	const struct csq_queue *q;
	struct due *e;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = csq_xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	e = &l->v[l->n++];
	e->kind = csq_deadline_kind(d);
	e->at = node->key;
	switch (e->kind) {
	case CSQ_DL_USER:
		u = csq_container_of(d, struct csq_user, deadline);
		memcpy(e->name, u->id, csq_user_idlen(u) + 1);
		break;
	case CSQ_DL_OVERFLOW:
	case CSQ_DL_AGING:
	case CSQ_DL_PREFER:
	case CSQ_DL_RELAX:
		u = csq_container_of(d, struct csq_wait, clock)->user;
		memcpy(e->name, u->id, csq_user_idlen(u) + 1);
		break;
	case CSQ_DL_SERVICER:
		s = csq_container_of(d, struct csq_servicer, deadline);
		memcpy(e->name, s->id, s->idlen + 1);
		break;
	case CSQ_DL_RETRY:
		s = csq_container_of(d, struct csq_servicer, retry);
		memcpy(e->name, s->id, s->idlen + 1);
		break;
	case CSQ_DL_OFFER:
	case CSQ_DL_WRAPUP:
		r = csq_container_of(d, struct csq_room, deadline);
		csq_room_name(r->servicer, r->index, e->name);
		break;
	case CSQ_DL_NOBODY:
		q = csq_container_of(d, struct csq_nobody, grace)->queue;
		memcpy(e->name, q->name, q->namelen + 1);
		break;
	case CSQ_DL_HOURS:
		q = csq_container_of(d, struct csq_queue, hours);
		memcpy(e->name, q->name, q->namelen + 1);
		break;
	case CSQ_DL_KINDS:
		abort();
	}
}

/* The kinds acted on after the others have settled, one by one. */
static int
due_late(enum csq_deadline_kind kind)
{
	return kind >= CSQ_DL_OVERFLOW;
}

/*
 * The kinds that end things by kind (the enum's order), then by
 * deadline, then by name; then the late kinds by deadline, then kind,
 * then name: they happen in the order they came due.
 */
static int
due_cmp(const void *a, const void *b)
{
	const struct due *x = a, *y = b;

	if (due_late(x->kind) != due_late(y->kind))
		return due_late(x->kind) ? 1 : -1;
	if (due_late(x->kind) && x->at != y->at)
		return x->at < y->at ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The deadline e names, if it is still running and due at now. */
static struct csq_deadline *
due_find(const struct csq *c, const struct due *e, uint64_t now)
{
	struct csq_deadline *d = NULL;
	struct csq_servicer *s;
	struct csq_queue *q;
	struct csq_user *u;
	struct csq_room *r;
	uint32_t idx;

	switch (e->kind) {
	case CSQ_DL_USER:
		u = csq_dict_get(c->users, e->name, strlen(e->name));
		d = u != NULL ? &u->deadline : NULL;
		break;
	case CSQ_DL_OVERFLOW:
	case CSQ_DL_AGING:
	case CSQ_DL_PREFER:
	case CSQ_DL_RELAX:
		u = csq_dict_get(c->users, e->name, strlen(e->name));
		d = u != NULL && u->state == CSQ_USER_WAITING && u->wait != NULL
		        ? &u->wait->clock
		        : NULL;
		break;
	case CSQ_DL_SERVICER:
	case CSQ_DL_RETRY:
		s = csq_servicer_get(c, e->name);
		if (s != NULL)
			d = e->kind == CSQ_DL_SERVICER ? &s->deadline
			                               : &s->retry;
		break;
	case CSQ_DL_OFFER:
	case CSQ_DL_WRAPUP:
		if (csq_room_lookup(c, e->name, &s, &idx) == CSQ_OK &&
		    idx < s->nrooms && (r = s->rooms[idx]) != NULL)
			d = &r->deadline;
		break;
	case CSQ_DL_NOBODY:
		q = csq_dict_get(c->queues, e->name, strlen(e->name));
		d = q != NULL && q->nobody != NULL ? &q->nobody->grace : NULL;
		break;
	case CSQ_DL_HOURS:
		q = csq_dict_get(c->queues, e->name, strlen(e->name));
		d = q != NULL ? &q->hours : NULL;
		break;
	case CSQ_DL_KINDS:
		break;
	}
	if (d == NULL || !csq_deadline_running(d) ||
	    csq_deadline_kind(d) != e->kind || d->node.key > now)
		return NULL;
	return d;
}

static void
due_act(struct csq *c, struct csq_deadline *d, uint64_t now,
        struct csq_settle *st)
{
	switch (csq_deadline_kind(d)) {
	case CSQ_DL_USER:
		csq_user_abandon(c,
		                 csq_container_of(d, struct csq_user, deadline),
		                 now, CSQ_REASON_TIMEOUT, st);
		break;
	case CSQ_DL_OFFER:
		csq_offer_expire(
		    c, csq_container_of(d, struct csq_room, deadline), now, st);
		break;
	case CSQ_DL_SERVICER:
		csq_servicer_drop(
		    c, csq_container_of(d, struct csq_servicer, deadline), now,
		    CSQ_REASON_LOST, st);
		break;
	case CSQ_DL_WRAPUP:
		csq_room_ready(
		    c, csq_container_of(d, struct csq_room, deadline), now, st);
		break;
	case CSQ_DL_RETRY:
		csq_offer_retry_end(
		    c, csq_container_of(d, struct csq_servicer, retry), st);
		break;
	case CSQ_DL_OVERFLOW:
	case CSQ_DL_AGING:
	case CSQ_DL_RELAX:
		csq_policy_act(
		    c, csq_container_of(d, struct csq_wait, clock)->user, now);
		break;
	case CSQ_DL_PREFER:
		csq_prefer_expire(
		    c, csq_container_of(d, struct csq_wait, clock)->user, now);
		break;
	case CSQ_DL_NOBODY:
		csq_nobody_act(c, csq_container_of(d, struct csq_nobody, grace),
		               now);
		break;
	case CSQ_DL_HOURS:
		csq_hours_apply(c, csq_container_of(d, struct csq_queue, hours),
		                now);
		break;
	case CSQ_DL_KINDS:
		abort();
	}
}

/*
 * Acts on every deadline that has passed, kind by kind: the users who time
 * out (waiting or offered), the offers that run out, the servicers that
 * are lost, the wrap-ups that end, the retry windows that end; within a
 * kind by deadline, then by name, so that deadlines that fall in the same
 * millisecond act in the same order on both engines and on a replay. Only
 * then does anything get matched (csq_settle): a user must not go into a
 * room of a servicer whose own deadline has passed too, only because its
 * turn came later in the pass (one lost servicer's user matched into
 * another that is lost the next moment, counted as matched and requeued
 * twice). Users go first so that a requeued user's position does not
 * count a user who has already timed out.
 *
 * Then the late kinds, which move a waiting user (an overflow, an aging
 * step, a preference window's end, a nobody's grace): each acts, and matches,
 * as an operation of its own would, in deadline order. They come after the
 * settling so that every free room they may meet is one that nobody
 * better waits for: an overflowed user takes a free room of its new
 * queue at once, with matched (from_queue) instead of overflowed.
 */
void
csq_expire(struct csq *c, uint64_t now)
{
	struct csq_settle st;
	struct due_list l = {NULL, 0, 0};
	struct csq_deadline *d;
	size_t i;

	csq_heap_each_upto(&c->deadlines, now, due_collect, &l);
	if (l.n == 0)
		return;
	memset(&st, 0, sizeof(st));
	qsort(l.v, l.n, sizeof(*l.v), due_cmp);
	for (i = 0; i < l.n && !due_late(l.v[i].kind); i++)
		if ((d = due_find(c, &l.v[i], now)) != NULL)
			due_act(c, d, now, &st);
	csq_settle(c, &st, now);
	for (; i < l.n; i++)
		if ((d = due_find(c, &l.v[i], now)) != NULL)
			due_act(c, d, now, &st);
	free(l.v);
	csq_nobody_settle(c, now);
}

/*
 * The rearm walks the tables in an order of their own, not the tables':
 * a deadline's tie comes from the order it is set in, and a snapshot
 * holds the ties, so an order that came from the hash seed would let a
 * replay of the journal, under another seed, hold another state than the
 * run it replays. So waiting users go queue by queue in the order of the
 * queues' names, each line from its head, then servicers by id, each with
 * its retry window and its rooms in order (an offered user's TTL with its
 * room). The lines are walked, not sorted: a sort of a million users by
 * key added 0.6 to 1.0 s to a restart (of 3.6 to 4.1 s).
 */
struct collect_walk {
	void **all;
	size_t n;
};

static void
collect_one(void *arg, const char *key, size_t len, void *val)
{
	struct collect_walk *w = arg;

	(void)key, (void)len;
	w->all[w->n++] = val;
}

/* The values of d, sorted with cmp (which compares pointers to them). */
static void **
sorted_values(const struct csq_dict *d, int (*cmp)(const void *, const void *),
              size_t *n)
{
	struct collect_walk w = {NULL, 0};

	w.all = csq_xmalloc((csq_dict_len(d) + 1) * sizeof(*w.all));
	csq_dict_each(d, collect_one, &w);
	qsort(w.all, w.n, sizeof(*w.all), cmp);
	*n = w.n;
	return w.all;
}

static int
queue_name_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct csq_queue *const *)a)->name,
	              (*(const struct csq_queue *const *)b)->name);
}

static int
servicer_id_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct csq_servicer *const *)a)->id,
	              (*(const struct csq_servicer *const *)b)->id);
}

/* The users who wait for s alone: their TTLs, and their windows anew. */
static void
rearm_preferring(struct csq *c, struct csq_line *l, uint64_t now)
{
	struct csq_line_node *node;
	struct csq_user *u;

	for (node = l != NULL ? csq_line_first(l) : NULL; node != NULL;
	     node = csq_line_next(node)) {
		u = csq_line_node_value(node);
		csq_user_deadline(c, u, now);
		csq_prefer_window(c, u, u->wait->prefer_s, now);
	}
}

static void
rearm_servicer(struct csq *c, struct csq_servicer *s, uint64_t now)
{
	struct csq_room *r;
	uint32_t i;

	csq_deadline_set(c, &s->deadline, now + csq_ms(s->ttl_s));
	for (i = 0; i < s->nqueues; i++)
		rearm_preferring(c, s->prefer[i], now);
	if (csq_deadline_running(&s->retry))
		csq_deadline_set(c, &s->retry, now + csq_ms(s->retry_s));
	for (i = 0; i < s->nrooms; i++) {
		if ((r = s->rooms[i]) == NULL)
			continue;
		if (r->state == CSQ_ROOM_OFFERED)
			csq_user_deadline(c, r->user, now);
		if (csq_deadline_running(&r->deadline))
			csq_deadline_set(c, &r->deadline,
			                 now + csq_ms(r->length_s));
	}
}

void
csq_rearm_deadlines(struct csq *c, uint64_t now)
{
	struct csq_line_node *node;
	struct csq_queue *q;
	struct csq_line *l;
	void **all;
	size_t i, n;
	uint32_t j;

	all = sorted_values(c->queues, queue_name_cmp, &n);
	for (i = 0; i < n; i++) {
		q = all[i];
		/* Its spell of nobody too, from now. */
		csq_nobody_rearm(c, q, now);
		for (j = 0; (l = csq_needline_line(q, j)) != NULL; j++)
			for (node = csq_line_first(l); node != NULL;
			     node = csq_line_next(node)) {
				csq_user_deadline(c, csq_line_node_value(node),
				                  now);
				/* The queue's clocks too, as if it joined
				 * now. */
				csq_policy_start(c, csq_line_node_value(node),
				                 now);
			}
	}
	free(all);
	all = sorted_values(c->servicers, servicer_id_cmp, &n);
	for (i = 0; i < n; i++)
		rearm_servicer(c, all[i], now);
	free(all);
}
