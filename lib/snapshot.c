/* Snapshots of the state, and their restoration (journal compaction). */
#include "snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "orderkey.h"
#include "state.h"
#include "util.h"

struct snap_walk {
	csq_snap_fn *fn;
	void *arg;
	const struct csq *c;
};

/*
 * A deadline as the snapshot holds it: a cleared one keeps its old key in
 * its node, which is no part of the state and not written (0, 0), so that
 * one state always gives the same snapshot.
 */
static void
snap_deadline(const struct csq_deadline *d, uint64_t *at, uint64_t *tie)
{
	int running = csq_deadline_running(d);

	*at = running ? d->node.key : 0;
	*tie = running ? d->node.tie : 0;
}

static void
snap_room(struct snap_walk *w, const struct csq_servicer *s,
          const struct csq_room *r)
{
	struct csq_snap_item it;
	struct csq_snap_room *o = &it.u.room;

	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_ROOM;
	memcpy(o->servicer, s->id, s->idlen + 1);
	o->index = r->index;
	o->length_s = r->length_s;
	o->since_ms = r->since_ms;
	snap_deadline(&r->deadline, &o->deadline, &o->deadline_tie);
	w->fn(w->arg, &it);
}

static void
snap_servicer(void *arg, const char *key, size_t len, void *val)
{
	struct snap_walk *w = arg;
	const struct csq_servicer *s = val;
	struct csq_snap_item it;
	struct csq_snap_servicer *o = &it.u.servicer;
	uint32_t i;

	(void)key, (void)len;
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_SERVICER;
	memcpy(o->id, s->id, s->idlen + 1);
	o->status = s->status;
	o->capacity = s->capacity;
	o->ttl_s = s->ttl_s;
	o->nqueues = s->nqueues;
	for (i = 0; i < s->nqueues; i++)
		memcpy(o->queues[i], s->queues[i]->name,
		       s->queues[i]->namelen + 1);
	o->last_order = s->last_order;
	o->last_ms = s->last_ms;
	snap_deadline(&s->deadline, &o->deadline, &o->deadline_tie);
	o->offer_s = s->offer_s;
	o->wrapup_s = s->wrapup_s;
	o->missed = s->missed;
	o->handled = s->handled;
	o->handle_ms = s->handle_ms;
	o->has_retry = csq_deadline_running(&s->retry);
	o->retry_s = s->retry_s;
	snap_deadline(&s->retry, &o->retry, &o->retry_tie);
	csq_servicer_skills_text(s, o->skills);
	w->fn(w->arg, &it);
	for (i = 0; i < s->nrooms; i++)
		if (s->rooms[i] != NULL &&
		    s->rooms[i]->state == CSQ_ROOM_WRAPUP)
			snap_room(w, s, s->rooms[i]);
}

static void
snap_user(void *arg, const char *key, size_t len, void *val)
{
	struct snap_walk *w = arg;
	const struct csq_user *u = val;
	/* A waiting user's union holds its wait, not a room. */
	const struct csq_room *r =
	    u->state != CSQ_USER_WAITING ? u->room : NULL;
	struct csq_snap_item it;
	struct csq_snap_user *o = &it.u.user;

	(void)key, (void)len;
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_USER;
	memcpy(o->id, u->id, csq_user_idlen(u) + 1);
	memcpy(o->queue, u->queue->name, u->queue->namelen + 1);
	o->key = u->key;
	o->arrival_ms = u->arrival_ms;
	o->ttl_s = u->ttl_s;
	o->state = u->state;
	o->flags = u->flags;
	o->has_deadline = csq_deadline_running(&u->deadline);
	snap_deadline(&u->deadline, &o->deadline, &o->deadline_tie);
	strcpy(o->needs, csq_needset_text(w->c, u->needs));
	if (u->state == CSQ_USER_WAITING && u->wait != NULL)
		o->relax_step = u->wait->relax_step;
	if (r != NULL) {
		memcpy(o->servicer, r->servicer->id, r->servicer->idlen + 1);
		o->room = r->index;
		o->since_ms = r->since_ms;
		o->taken_ms = r->taken_ms;
	}
	if (u->state == CSQ_USER_OFFERED) {
		o->offer_s = r->length_s;
		snap_deadline(&r->deadline, &o->offer_deadline,
		              &o->offer_deadline_tie);
	}
	if (u->state == CSQ_USER_WAITING && u->wait != NULL) {
		o->has_wait = 1;
		o->joined_ms = u->wait->joined_ms;
		o->clock_kind = (uint32_t)csq_deadline_kind(&u->wait->clock);
		snap_deadline(&u->wait->clock, &o->clock, &o->clock_tie);
		if (u->wait->prefer != NULL) {
			memcpy(o->prefer, u->wait->prefer->id,
			       u->wait->prefer->idlen + 1);
			o->prefer_s = u->wait->prefer_s;
		}
	}
	w->fn(w->arg, &it);
}

/* Something counted or learned: the numbers go into the snapshot. */
static int
queue_has_numbers(const struct csq_queue *q)
{
	const struct csq_queue_counts *k = &q->counts;
	const struct csq_estimate *e = &q->est;
	uint32_t t;

	if (k->matched || k->abandoned_leave || k->abandoned_timeout ||
	    k->overflowed || k->ring_len || e->holds || e->wait_area_ms ||
	    e->abandons)
		return 1;
	if (q->nobody != NULL) /* its spell of nobody goes with it */
		return 1;
	for (t = 0; t < CSQ_TIERS; t++)
		if (e->arrivals[t])
			return 1;
	return 0;
}

/* Its business hours: its policy has them (a deadline, or closed). */
static int
queue_has_hours(const struct csq_queue *q)
{
	return q->policy != NULL && q->policy->hours.on;
}

static void
snap_queue(void *arg, const char *key, size_t len, void *val)
{
	struct snap_walk *w = arg;
	const struct csq_queue *q = val;
	const struct csq_queue_counts *k = &q->counts;
	const struct csq_estimate *e = &q->est;
	struct csq_snap_item it;
	struct csq_snap_queue *o = &it.u.queue;
	struct csq_snap_ring *r = &it.u.ring;
	uint32_t off;

	(void)key, (void)len;
	if (!queue_has_numbers(q) && !queue_has_hours(q))
		return;
	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_QUEUE;
	memcpy(o->name, q->name, q->namelen + 1);
	if (queue_has_hours(q)) { /* as it is, not as the policy says now */
		o->has_hours = 1;
		o->closed = q->closed;
		snap_deadline(&q->hours, &o->hours_at, &o->hours_tie);
	}
	o->matched = k->matched;
	o->abandoned_leave = k->abandoned_leave;
	o->abandoned_timeout = k->abandoned_timeout;
	o->overflowed = k->overflowed;
	o->wait_ms_sum = k->wait_ms_sum;
	o->ring_next = k->ring_next;
	o->hold_ms = e->hold_ms;
	o->holds = e->holds;
	o->wait_area_ms = e->wait_area_ms;
	o->abandons = e->abandons;
	memcpy(o->last_arrival_ms, e->last_arrival_ms,
	       sizeof(o->last_arrival_ms));
	memcpy(o->gap_ms, e->gap_ms, sizeof(o->gap_ms));
	memcpy(o->arrivals, e->arrivals, sizeof(o->arrivals));
	if (q->nobody != NULL) {
		o->has_nobody = 1;
		o->nobody_fired = q->nobody->fired;
		o->nobody_since = q->nobody->since;
		if (csq_deadline_running(&q->nobody->grace)) {
			o->nobody_grace = q->nobody->grace.node.key;
			o->nobody_grace_tie = q->nobody->grace.node.tie;
		}
	}
	w->fn(w->arg, &it);
	for (off = 0; off < k->ring_len; off += r->n) {
		memset(&it, 0, sizeof(it));
		it.kind = CSQ_SNAP_RING;
		memcpy(r->queue, q->name, q->namelen + 1);
		r->offset = off;
		r->n = k->ring_len - off < CSQ_SNAP_RING_CHUNK
		           ? k->ring_len - off
		           : CSQ_SNAP_RING_CHUNK;
		memcpy(r->v, k->ring + off, r->n * sizeof(*r->v));
		w->fn(w->arg, &it);
	}
}

void
csq_snapshot(const struct csq *c, csq_snap_fn *fn, void *arg)
{
	struct snap_walk w = {fn, arg, c};
	struct csq_snap_item it;

	memset(&it, 0, sizeof(it));
	it.kind = CSQ_SNAP_STATE;
	it.u.state.seq = c->seq;
	it.u.state.order = c->order;
	it.u.state.tie = c->tie;
	it.u.state.event_id = c->event_id;
	it.u.state.stats = c->stats;
	fn(arg, &it);
	csq_dict_each(c->servicers, snap_servicer, &w);
	csq_dict_each(c->users, snap_user, &w);
	csq_dict_each(c->queues, snap_queue, &w);
}

/*
 * The checks below refuse what csq_snapshot never writes, so that a
 * journal that says something else (its checksums keep out damage, not
 * records written by something else) is refused at start rather than
 * build a state whose invariants do not hold: counters behind what they
 * handed out, deadlines that disagree with TTLs, a queue served twice.
 */
static int
restore_servicer(struct csq *c, const struct csq_snap_servicer *o)
{
	size_t idlen = strlen(o->id);
	struct csq_skill_list skills;
	struct csq_queue *q;
	struct csq_servicer *s;
	uint32_t i, j;

	if (csq_skills_parse(o->skills, CSQ_SERVICER_SKILLS, &skills) != CSQ_OK)
		return -1;
	if (!csq_valid_id(o->id, idlen) ||
	    csq_dict_get(c->servicers, o->id, idlen) != NULL ||
	    o->capacity < 1 || o->capacity > CSQ_CAPACITY_MAX ||
	    o->nqueues < 1 || o->nqueues > CSQ_SERVICER_QUEUES ||
	    o->status > CSQ_SERVICER_PAUSED || o->ttl_s < 1 ||
	    o->ttl_s > CSQ_TTL_MAX || o->last_order > c->order ||
	    o->deadline_tie > c->tie || o->offer_s > CSQ_OFFER_MAX ||
	    o->wrapup_s > CSQ_WRAPUP_MAX || o->has_retry > 1 ||
	    (o->has_retry && (o->retry_s < 1 || o->retry_s > CSQ_RETRY_MAX ||
	                      o->retry_tie > c->tie)))
		return -1;
	for (i = 0; i < o->nqueues; i++) {
		if (!csq_valid_id(o->queues[i], strlen(o->queues[i])))
			return -1;
		for (j = 0; j < i; j++)
			if (strcmp(o->queues[j], o->queues[i]) == 0)
				return -1;
	}
	s = csq_xcalloc(1, sizeof(*s) + idlen + 1);
	s->idlen = idlen;
	memcpy(s->id, o->id, idlen);
	s->status = o->status;
	s->ttl_s = o->ttl_s;
	s->offer_s = o->offer_s;
	s->wrapup_s = o->wrapup_s;
	s->missed = o->missed;
	s->handled = o->handled;
	s->handle_ms = o->handle_ms;
	s->retry_s = o->retry_s;
	csq_servicer_set_capacity(s, o->capacity);
	for (i = 0; i < o->nqueues; i++) {
		q = csq_queue_get(c, o->queues[i], strlen(o->queues[i]), 1);
		csq_queue_ref(q);
		q->nservicers++;
		s->queues[i] = q;
		csq_heap_node_init(&s->avail[i].node);
		s->avail[i].servicer = s;
	}
	s->nqueues = o->nqueues;
	s->last_order = o->last_order;
	s->last_ms = o->last_ms;
	csq_deadline_init(&s->deadline, CSQ_DL_SERVICER);
	csq_heap_set(&c->deadlines, &s->deadline.node, o->deadline,
	             o->deadline_tie);
	csq_deadline_init(&s->retry, CSQ_DL_RETRY);
	if (o->has_retry)
		csq_heap_set(&c->deadlines, &s->retry.node, o->retry,
		             o->retry_tie);
	csq_dict_put(c->servicers, s->id, idlen, s);
	csq_nameset_add(c->servicer_ids, s->id, s);
	c->stats.servicers++;
	csq_servicer_set_skills(c, s, &skills);
	csq_servicer_account(c, s);
	return 0;
}

/* Room index of s, free, made to exist (above a lowered capacity too). */
static int
restore_room_slot(struct csq_servicer *s, uint32_t index)
{
	uint32_t i;

	if (index >= CSQ_CAPACITY_MAX ||
	    (index < s->nrooms && s->rooms[index] != NULL))
		return -1;
	if (index >= s->nrooms) {
		s->rooms =
		    csq_xrealloc(s->rooms, (index + 1) * sizeof(*s->rooms));
		for (i = s->nrooms; i <= index; i++)
			s->rooms[i] = NULL;
		s->nrooms = index + 1;
	}
	return 0;
}

/* A busy room of s back, with its deadline as it was. */
static struct csq_room *
restore_room_open(struct csq *c, struct csq_servicer *s, uint32_t index,
                  enum csq_room_state state, struct csq_user *u,
                  uint64_t since_ms, uint32_t length_s, uint64_t deadline,
                  uint64_t tie)
{
	struct csq_room *r;

	csq_servicer_unaccount(c, s);
	r = csq_room_open(s, index, state, u, since_ms);
	r->length_s = length_s;
	if (state != CSQ_ROOM_ASSIGNED)
		csq_heap_set(&c->deadlines, &r->deadline.node, deadline, tie);
	csq_servicer_account(c, s);
	return r;
}

static int
restore_wrapup(struct csq *c, const struct csq_snap_room *o)
{
	struct csq_servicer *s;

	s = csq_dict_get(c->servicers, o->servicer, strlen(o->servicer));
	if (s == NULL || o->length_s < 1 || o->length_s > CSQ_WRAPUP_MAX ||
	    o->deadline_tie > c->tie || restore_room_slot(s, o->index) != 0)
		return -1;
	restore_room_open(c, s, o->index, CSQ_ROOM_WRAPUP, NULL, o->since_ms,
	                  o->length_s, o->deadline, o->deadline_tie);
	return 0;
}

#define USER_FLAGS                                                             \
	(CSQ_USER_TRANSFERRED | CSQ_USER_OVERFLOWED | CSQ_USER_PREFERRING |    \
	 CSQ_USER_RELAXED)

/*
 * A waiting user's wait: a window for a servicer that serves its queue
 * (*pref), else its queue's clocks exactly when the queue has them, at a
 * time they could run to. 0 when it fits.
 */
static int
restore_wait_fits(struct csq *c, const struct csq_snap_user *o,
                  const struct csq_queue *q, struct csq_servicer **pref)
{
	struct csq_servicer *s;
	int i, relax;

	if (o->has_wait > 1 || (o->has_wait && o->clock_tie > c->tie))
		return -1;
	if (o->flags & CSQ_USER_PREFERRING) {
		s = csq_dict_get(c->servicers, o->prefer, strlen(o->prefer));
		if (!o->has_wait || o->clock_kind != CSQ_DL_PREFER ||
		    s == NULL || (i = csq_servicer_queue_index(s, q)) < 0 ||
		    o->prefer_s < 1 || o->prefer_s > CSQ_PREFER_MAX ||
		    (s->prefer[i] != NULL &&
		     csq_line_rank(s->prefer[i], o->key) != 0))
			return -1;
		*pref = s;
		return 0;
	}
	/* Relax steps to come, for a user with needs (section 3c). */
	relax = q->policy != NULL && o->needs[0] != '\0' &&
	        o->relax_step < q->policy->nrelax &&
	        !(!o->has_wait && (o->flags & CSQ_USER_RELAXED));
	if (!o->has_wait)
		return csq_policy_has_clocks(q) || relax ? -1 : 0;
	if (o->relax_step > CSQ_RELAX_STEPS ||
	    (!relax && !csq_policy_has_clocks(q)))
		return -1;
	if (o->prefer[0] != '\0' || o->prefer_s != 0 ||
	    (o->clock_kind != CSQ_DL_OVERFLOW &&
	     o->clock_kind != CSQ_DL_AGING && o->clock_kind != CSQ_DL_RELAX) ||
	    !csq_policy_clock_fits(q, o->joined_ms,
	                           (enum csq_deadline_kind)o->clock_kind,
	                           o->clock))
		return -1;
	return 0;
}

/* A waiting user (checked) into its line, or its servicer's. */
static void
restore_waiting(struct csq *c, struct csq_user *u,
                const struct csq_snap_user *o, struct csq_servicer *pref)
{
	struct csq_wait *w;

	c->stats.waiting++;
	if (pref != NULL)
		csq_prefer_insert(c, u, pref);
	else
		csq_needline_enter(c, u);
	if (!o->has_wait)
		return;
	w = csq_user_wait(u);
	w->joined_ms = o->joined_ms;
	w->prefer_s = o->prefer_s;
	w->relax_step = o->relax_step;
	w->clock.node.tag = o->clock_kind;
	csq_heap_set(&c->deadlines, &w->clock.node, o->clock, o->clock_tie);
}

static int
restore_user(struct csq *c, const struct csq_snap_user *o)
{
	size_t idlen = strlen(o->id);
	struct csq_servicer *s = NULL, *pref = NULL;
	struct csq_queue *q;
	struct csq_user *u;
	uint16_t needs;

	if (csq_needs_resolve(c, o->needs, &needs) != CSQ_OK)
		return -1;
	if (!csq_valid_id(o->id, idlen) ||
	    csq_dict_get(c->users, o->id, idlen) != NULL ||
	    !csq_valid_id(o->queue, strlen(o->queue)) ||
	    o->key >= CSQ_KEY_LIMIT || (o->key & CSQ_KEY_SEQ_MAX) == 0 ||
	    (o->key & CSQ_KEY_SEQ_MAX) > c->seq || o->ttl_s > CSQ_TTL_MAX ||
	    (o->flags & ~(uint32_t)USER_FLAGS) != 0)
		return -1;
	/* Waiting or offered, a user has a deadline exactly when it has a
	 * TTL; assigned, none. */
	if (o->state == CSQ_USER_ASSIGNED
	        ? o->has_deadline != 0
	        : (!o->has_deadline != !o->ttl_s || o->deadline_tie > c->tie))
		return -1;
	/* An offer runs out, within its length. */
	if (o->state == CSQ_USER_OFFERED &&
	    (o->offer_s < 1 || o->offer_s > CSQ_OFFER_MAX ||
	     o->offer_deadline_tie > c->tie))
		return -1;
	switch (o->state) {
	case CSQ_USER_WAITING:
		q = csq_queue_get(c, o->queue, strlen(o->queue), 1);
		if (csq_needline_has_key(q, o->key) ||
		    restore_wait_fits(c, o, q, &pref) != 0) {
			/* Made for nothing: a queue of no one goes. */
			if (q->refs == 0)
				csq_queue_unref(c, q);
			return -1;
		}
		break;
	case CSQ_USER_OFFERED:
	case CSQ_USER_ASSIGNED:
		s = csq_dict_get(c->servicers, o->servicer,
		                 strlen(o->servicer));
		if (s == NULL || restore_room_slot(s, o->room) != 0)
			return -1;
		/* A pause withdraws every offer. */
		if (o->state == CSQ_USER_OFFERED &&
		    s->status != CSQ_SERVICER_READY)
			return -1;
		if (o->has_wait || (o->flags & CSQ_USER_PREFERRING))
			return -1;
		break;
	default:
		return -1;
	}

	u = csq_xcalloc(1, sizeof(*u) + idlen + 1);
	memcpy(u->id, o->id, idlen);
	u->queue = csq_queue_get(c, o->queue, strlen(o->queue), 1);
	csq_queue_ref(u->queue);
	u->key = o->key;
	u->arrival_ms = o->arrival_ms;
	u->ttl_s = o->ttl_s;
	u->state = (uint8_t)o->state;
	u->flags = (uint8_t)o->flags;
	u->needs = needs;
	csq_needset_hold(c, needs);
	csq_deadline_init(&u->deadline, CSQ_DL_USER);
	u->room = NULL;
	csq_dict_add(c->users, u, idlen);
	if (o->has_deadline && o->state != CSQ_USER_ASSIGNED)
		csq_heap_set(&c->deadlines, &u->deadline.node, o->deadline,
		             o->deadline_tie);
	if (s == NULL) {
		restore_waiting(c, u, o, pref);
		return 0;
	}
	if (o->state == CSQ_USER_OFFERED)
		u->room = restore_room_open(
		    c, s, o->room, CSQ_ROOM_OFFERED, u, o->since_ms, o->offer_s,
		    o->offer_deadline, o->offer_deadline_tie);
	else
		u->room = restore_room_open(c, s, o->room, CSQ_ROOM_ASSIGNED, u,
		                            o->since_ms, 0, 0, 0);
	/* An accepted offer's room counts its hold from the offer (the
	 * estimator's, room.c), not from the assignment. */
	u->room->taken_ms = o->taken_ms;
	return 0;
}

/*
 * A queue's spell of nobody (section 3c), over what its policy's set
 * made of it when the policies came first: only what its policy and its
 * servicers (restored before) allow: a spell while nobody is there, a
 * grace only in one, not fired, when the users waiting are to go.
 */
static int
restore_nobody(struct csq *c, struct csq_queue *q,
               const struct csq_snap_queue *o)
{
	struct csq_nobody *d = q->nobody;

	if (!o->has_nobody)
		return 0; /* older, or no policy then: the set's state stays */
	if (d == NULL || o->nobody_fired > 1 ||
	    (o->nobody_since != 0) != csq_nobody_there(q) ||
	    (o->nobody_grace != 0 &&
	     (o->nobody_since == 0 || o->nobody_fired ||
	      q->policy->nobody.at_nobody == CSQ_NOBODY_KEEP ||
	      o->nobody_grace_tie > c->tie)) ||
	    (o->nobody_fired && o->nobody_since == 0))
		return -1;
	d->since = o->nobody_since;
	d->fired = (uint8_t)o->nobody_fired;
	csq_deadline_clear(c, &d->grace);
	if (o->nobody_grace != 0)
		csq_heap_set(&c->deadlines, &d->grace.node, o->nobody_grace,
		             o->nobody_grace_tie);
	return 0;
}

/*
 * A queue's business hours as they were (closed, the next change with its
 * tie), over what its policy, replayed before the items at the
 * snapshot's time, computed: a change due then and not yet acted on
 * stays due, and acts (with its events, its at_close) at the next pass,
 * as it would have in the state the snapshot was taken of.
 */
static int
restore_hours(struct csq *c, struct csq_queue *q,
              const struct csq_snap_queue *o)
{
	if (!o->has_hours)
		return 0;
	if (o->has_hours > 1 || o->closed > 1 || !queue_has_hours(q) ||
	    o->hours_tie > c->tie || (o->hours_tie == 0 && o->hours_at != 0))
		return -1;
	q->closed = (uint8_t)o->closed;
	if (o->hours_tie == 0)
		csq_deadline_clear(c, &q->hours);
	else
		csq_heap_set(&c->deadlines, &q->hours.node, o->hours_at,
		             o->hours_tie);
	return 0;
}

/* A queue's numbers, into a queue that exists (its users, servicers
 * or policy came before); its ring follows in RING items. */
static int
restore_queue(struct csq *c, const struct csq_snap_queue *o)
{
	struct csq_queue *q = csq_queue_get(c, o->name, strlen(o->name), 0);
	struct csq_queue_counts *k;
	struct csq_estimate *e;

	if (q == NULL || o->ring_next >= CSQ_OUTCOMES)
		return -1;
	k = &q->counts;
	e = &q->est;
	k->matched = o->matched;
	k->abandoned_leave = o->abandoned_leave;
	k->abandoned_timeout = o->abandoned_timeout;
	k->overflowed = o->overflowed;
	k->wait_ms_sum = o->wait_ms_sum;
	k->ring_next = o->ring_next;
	e->hold_ms = o->hold_ms;
	e->holds = o->holds;
	e->wait_area_ms = o->wait_area_ms;
	e->abandons = o->abandons;
	memcpy(e->last_arrival_ms, o->last_arrival_ms,
	       sizeof(e->last_arrival_ms));
	memcpy(e->gap_ms, o->gap_ms, sizeof(e->gap_ms));
	memcpy(e->arrivals, o->arrivals, sizeof(e->arrivals));
	if (restore_nobody(c, q, o) != 0)
		return -1;
	return restore_hours(c, q, o);
}

/* The next part of a queue's ring, in order. */
static int
restore_ring(struct csq *c, const struct csq_snap_ring *o)
{
	struct csq_queue *q = csq_queue_get(c, o->queue, strlen(o->queue), 0);
	struct csq_queue_counts *k;

	if (q == NULL)
		return -1;
	k = &q->counts;
	if (o->n < 1 || o->n > CSQ_SNAP_RING_CHUNK ||
	    o->offset != k->ring_len || o->offset + o->n > CSQ_OUTCOMES)
		return -1;
	if (k->ring == NULL)
		k->ring = csq_xmalloc(CSQ_OUTCOMES * sizeof(*k->ring));
	memcpy(k->ring + o->offset, o->v, o->n * sizeof(*k->ring));
	k->ring_len += o->n;
	csq_qstats_relevel(q);
	return 0;
}

int
csq_restore(struct csq *c, const struct csq_snap_item *it)
{
	const struct csq_stats *st;

	switch (it->kind) {
	case CSQ_SNAP_STATE:
		/* First, into an empty state: the counters bound the
		 * items that follow. */
		if (csq_dict_len(c->servicers) != 0 ||
		    csq_dict_len(c->users) != 0)
			return -1;
		st = &it->u.state.stats;
		c->seq = it->u.state.seq;
		c->order = it->u.state.order;
		c->tie = it->u.state.tie;
		c->event_id = it->u.state.event_id;
		/* The live counts come back with the items themselves. */
		c->stats.enqueued_total = st->enqueued_total;
		c->stats.matched_total = st->matched_total;
		c->stats.abandoned_total = st->abandoned_total;
		c->stats.requeued_total = st->requeued_total;
		c->stats.servicers_lost_total = st->servicers_lost_total;
		c->stats.offers_total = st->offers_total;
		c->stats.offers_declined_total = st->offers_declined_total;
		c->stats.offers_missed_total = st->offers_missed_total;
		c->stats.transferred_total = st->transferred_total;
		return 0;
	case CSQ_SNAP_SERVICER:
		return restore_servicer(c, &it->u.servicer);
	case CSQ_SNAP_ROOM:
		return restore_wrapup(c, &it->u.room);
	case CSQ_SNAP_USER:
		return restore_user(c, &it->u.user);
	case CSQ_SNAP_QUEUE:
		return restore_queue(c, &it->u.queue);
	case CSQ_SNAP_RING:
		return restore_ring(c, &it->u.ring);
	}
	return -1;
}

struct restore_end {
	int ok;
	uint64_t *keys; /* open addressing, 0 = empty (no key is 0) */
	size_t mask;
};

/* Every order key is handed out once: two users with one key would
 * share a place in a line once they meet in one (a move, a requeue). */
static void
end_user(void *arg, const char *key, size_t len, void *val)
{
	struct restore_end *r = arg;
	uint64_t k = ((const struct csq_user *)val)->key;
	size_t i;

	(void)key, (void)len;
	for (i = (size_t)((k * 0x9e3779b97f4a7c15ULL) >> 20) & r->mask;
	     r->keys[i] != 0; i = (i + 1) & r->mask)
		if (r->keys[i] == k) {
			r->ok = 0;
			return;
		}
	r->keys[i] = k;
}

static void
end_servicer(void *arg, const char *key, size_t len, void *val)
{
	struct restore_end *r = arg;
	const struct csq_servicer *s = val;
	uint32_t i;

	(void)key, (void)len;
	if (!csq_servicer_has_free(s))
		return;
	/* A queue closed by its business hours (its policy, restored
	 * before the items, says so at the snapshot's time) matches nobody:
	 * its users wait beside free rooms rightly. */
	for (i = 0; i < s->nqueues; i++)
		if (!csq_queue_closed(s->queues[i]) &&
		    (csq_needline_servable(s, s->queues[i]) ||
		     s->prefer[i] != NULL))
			r->ok = 0;
}

/* A ring whose RING items stopped short of where it was. */
static void
end_queue(void *arg, const char *key, size_t len, void *val)
{
	struct restore_end *r = arg;
	const struct csq_queue_counts *k =
	    &((const struct csq_queue *)val)->counts;

	(void)key, (void)len;
	if (k->ring_len < CSQ_OUTCOMES && k->ring_next != k->ring_len)
		r->ok = 0;
}

int
csq_restore_end(const struct csq *c)
{
	struct restore_end r = {1, NULL, 0};
	size_t size = 16;

	csq_dict_each(c->servicers, end_servicer, &r);
	csq_dict_each(c->queues, end_queue, &r);
	/* At most half full: a million users take 32 MB for a moment. */
	while (size < 2 * csq_dict_len(c->users))
		size *= 2;
	r.keys = csq_xcalloc(size, sizeof(*r.keys));
	r.mask = size - 1;
	if (r.ok)
		csq_dict_each(c->users, end_user, &r);
	free(r.keys);
	return r.ok ? 0 : -1;
}
