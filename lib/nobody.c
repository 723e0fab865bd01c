/*
 * Nobody there (section 3c; Asterisk's joinempty and leavewhenempty): a
 * queue's policy says what happens while no servicer serving it is
 * logged in (or, counts = ready, none is ready). An arrival waits, is
 * refused or goes to a fallback queue (csq_nobody_route); the users
 * waiting when nobody has been there for the grace time stay, move to
 * another queue or leave, one event each (csq_nobody_act).
 *
 * No rule here scans: "nobody there" is read off the queue's counters
 * that csq_servicer_account keeps (servicers serving it, the capacity
 * of the ready ones); a queue whose counters an operation changed is
 * touched (c->nobody_dirty) and looked at again once, when the
 * operation settles, where a spell of nobody begins (the grace armed,
 * one deadline per queue, in the one heap) or ends (cleared). The
 * grace's end walks the queue's line once, to move or release each.
 */
#include "state.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static int
nobody_queue_ok(const char *s, size_t cap, const char *self)
{
	size_t len = strnlen(s, cap);

	return len < cap && csq_valid_id(s, len) && strcmp(s, self) != 0;
}

/* The index in v of queue name, n when none (a walk: for the check). */
static size_t
nobody_index(const struct csq_policy *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return i;
	return n;
}

enum csq_policy_error
csq_nobody_check(const struct csq_policy *v, size_t n, size_t i)
{
	const struct csq_nobody_policy *b = &v[i].nobody;
	size_t j = i, steps;

	if (!b->on) {
		/* Off: nothing else may be set (a record says so too). */
		if (b->counts || b->when_nobody || b->at_nobody || b->grace_s ||
		    b->fallback[0] || b->move_to[0])
			return CSQ_POLICY_NOBODY;
		return CSQ_POLICY_OK;
	}
	if (b->on != 1 || b->counts > CSQ_NOBODY_READY ||
	    b->when_nobody > CSQ_NOBODY_FALLBACK ||
	    b->at_nobody > CSQ_NOBODY_RELEASE ||
	    b->grace_s > CSQ_POLICY_SECONDS_MAX ||
	    (b->at_nobody != CSQ_NOBODY_KEEP) != (b->grace_s > 0))
		return CSQ_POLICY_NOBODY;
	if (b->when_nobody == CSQ_NOBODY_FALLBACK
	        ? !nobody_queue_ok(b->fallback, sizeof(b->fallback), v[i].name)
	        : b->fallback[0] != '\0')
		return CSQ_POLICY_NOBODY;
	if (b->at_nobody == CSQ_NOBODY_MOVE
	        ? !nobody_queue_ok(b->move_to, sizeof(b->move_to), v[i].name)
	        : b->move_to[0] != '\0')
		return CSQ_POLICY_NOBODY;
	/* A chain of fallbacks that comes back to this queue. */
	for (steps = 0; steps < n; steps++) {
		b = &v[j].nobody;
		if (!b->on || b->when_nobody != CSQ_NOBODY_FALLBACK)
			return CSQ_POLICY_OK;
		j = nobody_index(v, n, b->fallback);
		if (j == n)
			return CSQ_POLICY_OK;
		if (j == i)
			return CSQ_POLICY_NOBODY_CYCLE;
	}
	return CSQ_POLICY_OK; /* a cycle further on: reported at its own */
}

static uint32_t
nobody_counts(const struct csq_queue *q)
{
	return q->policy != NULL && q->policy->nobody.on
	           ? q->policy->nobody.counts
	           : CSQ_NOBODY_LOGGED_IN;
}

int
csq_nobody_there(const struct csq_queue *q)
{
	/* A capacity is at least 1: a ready servicer has ready rooms. */
	if (nobody_counts(q) == CSQ_NOBODY_READY)
		return q->rooms_ready == 0;
	return q->nservicers == 0;
}

void
csq_nobody_touch(struct csq *c, struct csq_queue *q)
{
	struct csq_nobody *d = q->nobody;

	if (d == NULL || d->dirty)
		return;
	if (c->nnobody_dirty == c->capnobody_dirty) {
		c->capnobody_dirty =
		    c->capnobody_dirty ? c->capnobody_dirty * 2 : 8;
		c->nobody_dirty =
		    csq_xrealloc(c->nobody_dirty,
		                 c->capnobody_dirty * sizeof(*c->nobody_dirty));
	}
	c->nobody_dirty[c->nnobody_dirty++] = d;
	d->dirty = 1;
}

/* The grace of d's spell, from since, while its users are still to go. */
static void
nobody_arm(struct csq *c, struct csq_nobody *d)
{
	const struct csq_nobody_policy *b = &d->queue->policy->nobody;

	if (d->since == 0 || d->fired || b->at_nobody == CSQ_NOBODY_KEEP)
		csq_deadline_clear(c, &d->grace);
	else
		csq_deadline_set(c, &d->grace, d->since + csq_ms(b->grace_s));
}

/* A spell of nobody begins (at now) or ends, as the counters say. */
static void
nobody_update(struct csq *c, struct csq_nobody *d, uint64_t now)
{
	int there = csq_nobody_there(d->queue);

	if (there == (d->since != 0))
		return;
	d->since = there ? now : 0;
	d->fired = 0;
	nobody_arm(c, d);
}

void
csq_nobody_settle(struct csq *c, uint64_t now)
{
	size_t i;

	for (i = 0; i < c->nnobody_dirty; i++) {
		c->nobody_dirty[i]->dirty = 0;
		nobody_update(c, c->nobody_dirty[i], now);
	}
	c->nnobody_dirty = 0;
}

void
csq_nobody_free(struct csq *c, struct csq_queue *q)
{
	struct csq_nobody *d = q->nobody;
	size_t i;

	if (d == NULL)
		return;
	csq_deadline_clear(c, &d->grace);
	if (d->dirty)
		for (i = 0; i < c->nnobody_dirty; i++)
			if (c->nobody_dirty[i] == d) {
				c->nobody_dirty[i] =
				    c->nobody_dirty[--c->nnobody_dirty];
				break;
			}
	free(d);
	q->nobody = NULL;
}

/*
 * q's policy (set already) is new: a queue that gets a nobody policy
 * measures its spell of nobody from now (it had no clock to measure
 * from); one that keeps it keeps its spell, with the new grace measured
 * from its start (a grace already past acts in the reload: the users
 * waiting go at once); a spell whose users went stays done.
 */
void
csq_nobody_policy(struct csq *c, struct csq_queue *q, uint64_t now)
{
	struct csq_nobody *d = q->nobody;

	if (q->policy == NULL || !q->policy->nobody.on) {
		csq_nobody_free(c, q);
		return;
	}
	if (d == NULL) {
		d = q->nobody = csq_xcalloc(1, sizeof(*d));
		d->queue = q;
		csq_deadline_init(&d->grace, CSQ_DL_NOBODY);
	}
	if (!csq_nobody_there(q)) {
		d->since = 0;
		d->fired = 0;
	} else if (d->since == 0)
		d->since = now;
	nobody_arm(c, d);
}

void
csq_nobody_rearm(struct csq *c, struct csq_queue *q, uint64_t now)
{
	struct csq_nobody *d = q->nobody;

	if (d == NULL)
		return;
	d->since = csq_nobody_there(q) ? now : 0;
	d->fired = 0;
	nobody_arm(c, d);
}

enum csq_status
csq_nobody_route(struct csq *c, struct csq_queue **q)
{
	const struct csq_nobody_policy *b;
	size_t steps;

	/* Cycles are refused with the policies: the bound is a guard. */
	for (steps = 0; steps <= c->npolicies; steps++) {
		if ((*q)->policy == NULL || !(*q)->policy->nobody.on ||
		    !csq_nobody_there(*q))
			return CSQ_OK;
		b = &(*q)->policy->nobody;
		if (b->when_nobody == CSQ_NOBODY_REFUSE)
			return CSQ_ENOBODY;
		if (b->when_nobody != CSQ_NOBODY_FALLBACK)
			return CSQ_OK;
		*q = csq_queue_get(c, b->fallback, strlen(b->fallback), 1);
	}
	return CSQ_OK;
}

static int
nobody_key_cmp(const void *a, const void *b)
{
	const struct csq_user *x = *(struct csq_user *const *)a;
	const struct csq_user *y = *(struct csq_user *const *)b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/* The users of q's line (with needs or without), in service order. */
static struct csq_user **
nobody_waiting(const struct csq_queue *q, size_t *n)
{
	struct csq_line *lines[2] = {q->line, q->needy};
	struct csq_line_node *node;
	struct csq_user **v;
	size_t k = 0, cap = csq_needline_count(q);
	int i;

	v = csq_xmalloc((cap + 1) * sizeof(*v));
	for (i = 0; i < 2; i++)
		for (node = lines[i] != NULL ? csq_line_first(lines[i]) : NULL;
		     node != NULL && k < cap; node = csq_line_next(node))
			v[k++] = csq_line_node_value(node);
	qsort(v, k, sizeof(*v), nobody_key_cmp);
	*n = k;
	return v;
}

/*
 * The grace ran out with nobody still there: every user waiting in the
 * queue's line, best first, moves to move_to (as an overflow: matched
 * there if a room is free, else overflowed, reason nobody) or leaves
 * (left, reason nobody). Users held for a preferred servicer wait for
 * it: it is logged in. Once per spell: those who come later wait.
 */
void
csq_nobody_act(struct csq *c, struct csq_nobody *d, uint64_t now)
{
	struct csq_queue *q = d->queue;
	const struct csq_nobody_policy *b = &q->policy->nobody;
	struct csq_settle st;
	struct csq_user **v;
	size_t i, n;

	csq_deadline_clear(c, &d->grace);
	d->fired = 1;
	memset(&st, 0, sizeof(st));
	v = nobody_waiting(q, &n);
	for (i = 0; i < n; i++) {
		if (b->at_nobody == CSQ_NOBODY_MOVE)
			csq_policy_move(c, v[i], b->move_to, CSQ_REASON_NOBODY,
			                now);
		else
			csq_user_abandon(c, v[i], now, CSQ_REASON_NOBODY, &st);
	}
	free(v);
	csq_settle(c, &st, now);
}
