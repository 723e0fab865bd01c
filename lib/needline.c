/*
 * A queue's lines by need-set (docs/design.md, "Skills"). The users of a
 * queue without needs wait in q->line, as before skills; those with
 * needs wait in the queue's need-line of their need-set. Every line is
 * ordered by the order key, so the queue's order is the lines merged:
 * a user's position counts the users before its key in every line, and
 * QUEUE's page walks them merged.
 *
 * Each need-line keeps, beside its users, a heap of the free servicers
 * of the queue that satisfy its need-set: the best eligible servicer of
 * an arrival is its top. A servicer's places in those heaps are taken
 * and given back by csq_servicer_account / _unaccount, with its place in
 * q->avail: a servicer without skills has none and pays nothing.
 */
#include "state.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* The levels' sum, turned so that the highest sorts first. */
#define LEVEL_SUM_MAX (CSQ_USER_NEEDS * CSQ_SKILL_LEVEL_MAX)

/*
 * q's need-line of need-set set, by the set's own list of need-lines
 * (one per queue that has users or free servicers of it): as long as
 * the queues that share the need-set, not the need-sets of the queue
 * (up to 256: a walk of q->nls was 180 instructions of an ENQUEUE with
 * NEEDS, docs/benchmarks.md).
 */
struct csq_needline *
csq_needline_find(const struct csq *c, const struct csq_queue *q, uint16_t set)
{
	struct csq_needline *nl;

	for (nl = c->needsets[set]->lines; nl != NULL; nl = nl->next_in_set)
		if (nl->queue == q)
			return nl;
	return NULL;
}

void
csq_navail_key(const struct csq *c, const struct csq_servicer *s,
               const struct csq_needline *nl, uint64_t *key, uint64_t *tie)
{
	const struct csq_policy *p = nl->queue->policy;
	uint32_t sum = 0;

	csq_avail_key(c, s, nl->queue, key, tie);
	if (p == NULL || p->skill_order != CSQ_SKILL_ORDER_LEVEL)
		return;
	csq_skills_satisfy(s, nl->set, &sum);
	if (*tie == 0) { /* longest_idle: the order is the key */
		*tie = *key;
		*key = LEVEL_SUM_MAX - sum;
	} else /* least_busy: busy rooms (<= 1000) under the levels */
		*key = (uint64_t)(LEVEL_SUM_MAX - sum) << 32 | *key;
}

static void needline_takes_free(struct csq_servicer *);

/* One more place of s's, for nl's heap. */
static struct csq_navail *
navail_take(struct csq_servicer *s, struct csq_needline *nl)
{
	struct csq_navail *n;

	if (s->nnav == s->capnav) {
		s->capnav = s->capnav ? s->capnav * 2 : 4;
		s->nav = csq_xrealloc(s->nav, s->capnav * sizeof(*s->nav));
		memset(s->nav + s->nnav, 0,
		       (s->capnav - s->nnav) * sizeof(*s->nav));
	}
	if (s->nav[s->nnav] == NULL) {
		s->nav[s->nnav] = csq_xmalloc(sizeof(*n));
		csq_heap_node_init(&s->nav[s->nnav]->node);
	}
	n = s->nav[s->nnav++];
	n->servicer = s;
	n->nl = nl;
	return n;
}

static void
navail_place(struct csq *c, struct csq_servicer *s, struct csq_needline *nl)
{
	struct csq_navail *n;
	uint64_t key, tie;

	if (!csq_may_take(s, nl->set))
		return;
	n = navail_take(s, nl);
	csq_navail_key(c, s, nl, &key, &tie);
	csq_heap_set(&nl->avail, &n->node, key, tie);
}

void
csq_navail_free(struct csq_servicer *s)
{
	uint32_t i;

	for (i = 0; i < s->capnav; i++)
		free(s->nav[i]);
	free(s->nav);
	s->nav = NULL;
	s->nnav = s->capnav = 0;
	needline_takes_free(s);
}

void
csq_navail_unaccount(struct csq_servicer *s)
{
	uint32_t i;

	for (i = 0; i < s->nnav; i++)
		if (csq_heap_contains(&s->nav[i]->node))
			csq_heap_remove(&s->nav[i]->nl->avail,
			                &s->nav[i]->node);
	s->nnav = 0;
}

/*
 * The need-lines of s->queues[i] that s may take, kept per servicer and
 * queue (struct csq_takes): a room set free and the match after it read
 * these, a few, and not each of the queue's need-lines (50 in the bench
 * of docs/benchmarks.md, up to 256): asking each was most of what a
 * match with skills ran more than one without. The list is made
 * again from the queue's need-lines (and s->sat) at its first use after
 * one of them was made or freed (the queue's nls_gen) or s's skills
 * changed: once per servicer and change, never per match.
 */
const struct csq_takes *
csq_needline_takes(struct csq_servicer *s, uint32_t i)
{
	const struct csq_queue *q = s->queues[i];
	struct csq_takes *t;
	uint32_t j;

	if (s->takes == NULL)
		s->takes = csq_xcalloc(CSQ_SERVICER_QUEUES, sizeof(*s->takes));
	t = &s->takes[i];
	if (t->queue == q && t->gen == q->nls_gen)
		return t;
	t->queue = q;
	t->gen = q->nls_gen;
	t->n = 0;
	for (j = 0; j < q->nnls; j++) {
		if (!csq_may_take(s, q->nls[j]->set))
			continue;
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 4;
			t->v = csq_xrealloc(t->v, t->cap * sizeof(*t->v));
		}
		t->v[t->n++] = q->nls[j];
	}
	return t;
}

void
csq_needline_takes_forget(struct csq_servicer *s)
{
	uint32_t i;

	for (i = 0; s->takes != NULL && i < CSQ_SERVICER_QUEUES; i++)
		s->takes[i].gen = 0; /* no queue's nls_gen */
}

static void
needline_takes_free(struct csq_servicer *s)
{
	uint32_t i;

	for (i = 0; s->takes != NULL && i < CSQ_SERVICER_QUEUES; i++)
		free(s->takes[i].v);
	free(s->takes);
	s->takes = NULL;
}

/* A need-line of q was made or freed: the lists of it are to make again. */
static void
needline_changed(struct csq *c, struct csq_queue *q)
{
	q->nls_gen = ++c->nls_gen;
}

/* s has a free room: into the heaps of the need-lines it satisfies. */
void
csq_navail_account(struct csq *c, struct csq_servicer *s)
{
	const struct csq_takes *t;
	struct csq_navail *n;
	uint64_t key, tie;
	uint32_t i, j;

	if (s->nskills == 0)
		return;
	for (i = 0; i < s->nqueues; i++) {
		t = csq_needline_takes(s, i);
		for (j = 0; j < t->n; j++) {
			n = navail_take(s, t->v[j]);
			csq_navail_key(c, s, t->v[j], &key, &tie);
			csq_heap_set(&t->v[j]->avail, &n->node, key, tie);
		}
	}
}

struct csq_servicer *
csq_needline_best_servicer(const struct csq_needline *nl)
{
	struct csq_heap_node *top =
	    nl != NULL ? csq_heap_top(&nl->avail) : NULL;

	if (top == NULL)
		return NULL;
	return csq_container_of(top, struct csq_navail, node)->servicer;
}

/*
 * A new need-line of set in q, filled with the free servicers of q that
 * satisfy it: one pass over q's free servicers, once while the need-set
 * lives (it is kept even when no user holds it, until its slot is
 * wanted).
 */
static struct csq_needline *
needline_new(struct csq *c, struct csq_queue *q, struct csq_needset *set)
{
	struct csq_needline *nl = csq_xcalloc(1, sizeof(*nl));
	struct csq_servicer *s;
	size_t i;

	nl->queue = q;
	nl->set = set;
	nl->line = csq_line_new(c->seed ^ set->index);
	csq_heap_init(&nl->avail);
	nl->next_in_set = set->lines;
	set->lines = nl;
	if (q->nnls == q->capnls) {
		q->capnls = q->capnls ? q->capnls * 2 : 4;
		q->nls = csq_xrealloc(q->nls, q->capnls * sizeof(*q->nls));
	}
	nl->slot = q->nnls;
	q->nls[q->nnls++] = nl;
	needline_changed(c, q);
	for (i = 0; i < q->avail.len; i++) {
		s = csq_container_of(q->avail.nodes[i], struct csq_avail, node)
		        ->servicer;
		if (s->nskills > 0)
			navail_place(c, s, nl);
	}
	return nl;
}

/* nl goes (its queue goes, or its need-set's slot is wanted): it holds
 * no user; the servicers' places in its heap are let go. */
void
csq_needline_free(struct csq *c, struct csq_needline *nl)
{
	struct csq_needline **pp;
	struct csq_queue *q = nl->queue;
	struct csq_heap_node *top;

	needline_changed(c, q);
	while ((top = csq_heap_top(&nl->avail)) != NULL)
		csq_heap_remove(&nl->avail, top);
	csq_heap_free(&nl->avail);
	csq_line_free(nl->line);
	for (pp = &nl->set->lines; *pp != nl; pp = &(*pp)->next_in_set)
		;
	*pp = nl->next_in_set;
	q->nls[nl->slot] = q->nls[--q->nnls];
	q->nls[nl->slot]->slot = nl->slot;
	free(nl);
}

void
csq_needline_free_queue(struct csq *c, struct csq_queue *q)
{
	while (q->nnls > 0)
		csq_needline_free(c, q->nls[q->nnls - 1]);
	csq_line_free(q->needy);
	q->needy = NULL;
	free(q->nls);
	q->nls = NULL;
	q->capnls = 0;
}

struct csq_line *
csq_needline_of(struct csq *c, struct csq_user *u, int create)
{
	struct csq_needline *nl;

	if (u->needs == 0)
		return u->queue->line;
	if ((nl = csq_needline_find(c, u->queue, u->needs)) == NULL) {
		if (!create)
			return NULL;
		nl = needline_new(c, u->queue, c->needsets[u->needs]);
	}
	return nl->line;
}

/*
 * A user's position: its rank among the users without needs (q->line)
 * or with needs (q->needy), plus the users before its key in the other
 * of the two: two descents, however many need-lines.
 */
static uint64_t
position_of(const struct csq_queue *q, const struct csq_user *u, uint64_t rank)
{
	if (u->needs != 0)
		return rank + csq_line_count_below(q->line, u->key);
	return q->needy != NULL ? rank + csq_line_count_below(q->needy, u->key)
	                        : rank;
}

uint64_t
csq_needline_enter(struct csq *c, struct csq_user *u)
{
	struct csq_queue *q = u->queue;
	struct csq_line *l = csq_needline_of(c, u, 1);

	if (u->needs == 0)
		return position_of(q, u, csq_line_insert_rank(l, u->key, u));
	if (q->needy == NULL)
		q->needy =
		    csq_line_new_borrowing(c->seed ^ UINT64_C(0x5bd1e995));
	q->needs_waiting++;
	/* One allocation for both nodes: q->needy's lives in the
	 * need-line's, so it leaves q->needy first (below). */
	return position_of(q, u, csq_line_insert_pair(l, q->needy, u->key, u));
}

void
csq_needline_leave(struct csq *c, struct csq_user *u)
{
	if (u->needs != 0) {
		csq_line_remove(u->queue->needy, u->key);
		u->queue->needs_waiting--;
	}
	csq_line_remove(csq_needline_of(c, u, 0), u->key);
}

uint64_t
csq_needline_position(const struct csq_user *u)
{
	const struct csq_queue *q = u->queue;
	struct csq_line *l = u->needs != 0 ? q->needy : q->line;
	uint64_t rank = l != NULL ? csq_line_rank(l, u->key) : 0;

	return rank != 0 ? position_of(q, u, rank) : 0;
}

int
csq_needline_servable(const struct csq_servicer *s, const struct csq_queue *q)
{
	uint32_t j;

	if (csq_line_len(q->line) > 0)
		return 1;
	for (j = 0; s->nskills > 0 && j < q->nnls; j++)
		if (csq_line_len(q->nls[j]->line) > 0 &&
		    csq_may_take(s, q->nls[j]->set))
			return 1;
	return 0;
}

int
csq_needline_has_key(const struct csq_queue *q, uint64_t key)
{
	struct csq_line *l;
	uint32_t i;

	for (i = 0; (l = csq_needline_line(q, i)) != NULL; i++)
		if (csq_line_rank(l, key) != 0)
			return 1;
	return 0;
}

uint64_t
csq_needline_count(const struct csq_queue *q)
{
	return csq_line_len(q->line) + q->needs_waiting;
}

struct csq_line *
csq_needline_line(const struct csq_queue *q, uint32_t i)
{
	if (i == 0)
		return q->line;
	return i == 1 ? q->needy : NULL;
}

/* Keys at or below key, in every line of q. */
static uint64_t
count_upto(const struct csq_queue *q, uint64_t key)
{
	struct csq_line *l;
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; (l = csq_needline_line(q, i)) != NULL; i++)
		n += csq_line_count_below(l, key + 1);
	return n;
}

/*
 * The page from offset: the key of the user at offset is the least key
 * with more than offset keys at or below it in q->line and q->needy (a
 * search over the keys, O(64 log n)); from there the two merged.
 */
void
csq_needline_range(const struct csq_queue *q, uint64_t offset, uint32_t count,
                   void (*fn)(void *, const struct csq_user *), void *arg)
{
	struct csq_line_node *cur[2];
	struct csq_line_node *node;
	uint64_t lo = 0, hi = UINT64_MAX >> 1, mid;
	uint32_t i, nl = 2, best;

	if (q->needy == NULL || csq_line_len(q->needy) == 0) {
		for (node = csq_line_nth(q->line, offset);
		     node != NULL && count > 0; node = csq_line_next(node)) {
			fn(arg, csq_line_node_value(node));
			count--;
		}
		return;
	}
	if (offset >= csq_needline_count(q) || count == 0)
		return;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (count_upto(q, mid) > offset)
			hi = mid;
		else
			lo = mid + 1;
	}
	for (i = 0; i < nl; i++)
		cur[i] = csq_line_seek(csq_needline_line(q, i), lo);
	while (count > 0) {
		best = nl;
		for (i = 0; i < nl; i++)
			if (cur[i] != NULL &&
			    (best == nl || csq_line_node_key(cur[i]) <
			                       csq_line_node_key(cur[best])))
				best = i;
		if (best == nl)
			break;
		fn(arg, csq_line_node_value(cur[best]));
		cur[best] = csq_line_next(cur[best]);
		count--;
	}
}
