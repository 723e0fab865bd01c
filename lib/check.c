/*
 * csq_check: every invariant of the state, verified from scratch. Tests call
 * it after each operation; it is O(n log n) and never used on a hot path.
 */
#include "orderkey.h"
#include "state.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct check {
	const struct csq *c;
	char *buf;
	size_t len;
	int failed;
	uint64_t waiting, offered, assigned, busy, free, servicers;
	uint64_t timed; /* waiting and offered users with a TTL */
	uint64_t offers, wrapups, retries; /* room and window deadlines */
	uint64_t clocks;     /* users' overflow, aging and window deadlines */
	uint64_t graces;     /* queues' nobody graces */
	uint64_t preferring; /* users in servicers' prefer lines */
	uint64_t hours;      /* queues' business hours deadlines */
};

static void check_fail(struct check *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
check_fail(struct check *k, const char *fmt, ...)
{
	va_list ap;

	if (k->failed++)
		return; /* keep the first */
	va_start(ap, fmt);
	if (k->len > 0)
		vsnprintf(k->buf, k->len, fmt, ap);
	va_end(ap);
}

static int
serves(const struct csq_servicer *s, const struct csq_queue *q)
{
	uint32_t i;

	for (i = 0; i < s->nqueues; i++)
		if (s->queues[i] == q)
			return 1;
	return 0;
}

/* The deadline d runs with kind, or does not run at all (kind < 0). */
static int
deadline_is(const struct csq_deadline *d, int kind)
{
	if (kind < 0)
		return !csq_deadline_running(d);
	return csq_deadline_running(d) && (int)csq_deadline_kind(d) == kind;
}

/* u is in room r, both in state state, and the maps agree. */
static int
user_in_room(const struct csq_user *u, enum csq_room_state state)
{
	const struct csq_room *r = u->room;

	return r != NULL && r->state == state && r->user == u &&
	       r->index < r->servicer->nrooms &&
	       r->servicer->rooms[r->index] == r;
}

/*
 * The queue's clocks of a user in line: a deadline of the kind its queue's
 * policy calls for next, measured from when it joined its line.
 */
static void
check_clocks(struct check *k, const struct csq_user *u)
{
	const struct csq_wait *w = u->wait;
	const struct csq_deadline *d;

	if (w == NULL) {
		if (csq_policy_user_clocks(u))
			check_fail(k, "user %s in line without its clocks",
			           u->id);
		return;
	}
	if (w->relax_step > CSQ_RELAX_STEPS)
		check_fail(k, "user %s past every relax step", u->id);
	d = &w->clock;
	if (w->user != u || w->prefer != NULL || !csq_deadline_running(d)) {
		check_fail(k, "user %s in line with a wrong wait", u->id);
		return;
	}
	k->clocks++;
	if (!csq_policy_clock_fits(u->queue, w->joined_ms, csq_deadline_kind(d),
	                           d->node.key))
		check_fail(k, "user %s has a clock of kind %d at %llu", u->id,
		           (int)csq_deadline_kind(d),
		           (unsigned long long)d->node.key);
}

/* A user who waits for one servicer: in its prefer line, no other. */
static void
check_preferring(struct check *k, const struct csq_user *u, uint64_t rank)
{
	const struct csq_wait *w = u->wait;
	const struct csq_servicer *s = w != NULL ? w->prefer : NULL;
	int i;

	k->preferring++;
	if (rank != 0)
		check_fail(k, "preferring user %s in its queue's line", u->id);
	if (s == NULL || csq_dict_get(k->c->servicers, s->id, s->idlen) != s) {
		check_fail(k, "preferring user %s without servicer", u->id);
		return;
	}
	i = csq_servicer_queue_index(s, u->queue);
	if (i < 0 || s->prefer[i] == NULL ||
	    csq_line_rank(s->prefer[i], u->key) == 0)
		check_fail(k, "preferring user %s not in %s's line", u->id,
		           s->id);
	if (w->user != u || !deadline_is(&w->clock, CSQ_DL_PREFER) ||
	    w->prefer_s < 1 || w->prefer_s > CSQ_PREFER_MAX)
		check_fail(k, "preferring user %s window wrong", u->id);
	else
		k->clocks++;
}

static void
check_user(void *arg, const char *key, size_t len, void *val)
{
	struct check *k = arg;
	const struct csq_user *u = val;
	struct csq_line_node *node;
	struct csq_needline *nl;
	struct csq_line *line;
	uint64_t rank;
	int ttl = u->ttl_s > 0 ? CSQ_DL_USER : -1;

	if (len != csq_user_idlen(u) || memcmp(key, u->id, len) != 0)
		check_fail(k, "user %s filed under another id", u->id);
	if (csq_dict_get(k->c->queues, u->queue->name, u->queue->namelen) !=
	    u->queue)
		check_fail(k, "user %s in an unknown queue", u->id);
	if (u->key >= CSQ_KEY_LIMIT)
		check_fail(k, "user %s key out of range", u->id);
	nl = u->needs != 0 && k->c->needsets[u->needs] != NULL
	         ? csq_needline_find(k->c, u->queue, u->needs)
	         : NULL;
	line = u->needs == 0 ? u->queue->line : nl != NULL ? nl->line : NULL;
	rank = line != NULL ? csq_line_rank(line, u->key) : 0;
	if (u->needs != 0 && (k->c->needsets[u->needs] == NULL ||
	                      k->c->needsets[u->needs]->refs == 0))
		check_fail(k, "user %s holds a need-set not held", u->id);
	switch (u->state) {
	case CSQ_USER_WAITING:
		k->waiting++;
		k->timed += u->ttl_s > 0;
		if (!deadline_is(&u->deadline, ttl))
			check_fail(k, "waiting user %s deadline wrong", u->id);
		if (u->flags & CSQ_USER_PREFERRING) {
			check_preferring(k, u, rank);
			break;
		}
		node = rank ? csq_line_nth(line, rank - 1) : NULL;
		if (node == NULL || csq_line_node_value(node) != u)
			check_fail(k, "waiting user %s not in its line", u->id);
		check_clocks(k, u);
		break;
	case CSQ_USER_OFFERED:
		k->offered++;
		if (u->flags & CSQ_USER_PREFERRING)
			check_fail(k, "offered user %s preferring", u->id);
		k->timed += u->ttl_s > 0;
		if (rank != 0)
			check_fail(k, "offered user %s still in line", u->id);
		if (!deadline_is(&u->deadline, ttl))
			check_fail(k, "offered user %s TTL wrong", u->id);
		if (!user_in_room(u, CSQ_ROOM_OFFERED))
			check_fail(k, "U2R of offered %s disagrees", u->id);
		break;
	case CSQ_USER_ASSIGNED:
		k->assigned++;
		if (u->flags & CSQ_USER_PREFERRING)
			check_fail(k, "assigned user %s preferring", u->id);
		if (rank != 0)
			check_fail(k, "assigned user %s still in line", u->id);
		if (!deadline_is(&u->deadline, -1))
			check_fail(k, "assigned user %s has a TTL", u->id);
		if (!user_in_room(u, CSQ_ROOM_ASSIGNED))
			check_fail(k, "U2R of %s disagrees with R2U", u->id);
		break;
	default:
		check_fail(k, "user %s in state %d", u->id, (int)u->state);
	}
}

/* Room i of s: one state, the maps and the deadline of that state. */
static void
check_room(struct check *k, const struct csq_servicer *s, uint32_t i)
{
	const struct csq_room *r = s->rooms[i];
	const struct csq_user *u = r->user;
	int ok;

	if (r->servicer != s || r->index != i)
		check_fail(k, "room %s/%u filed elsewhere", s->id, i);
	switch (r->state) {
	case CSQ_ROOM_OFFERED:
		k->offers++;
		ok = u != NULL && u->state == CSQ_USER_OFFERED &&
		     deadline_is(&r->deadline, CSQ_DL_OFFER);
		break;
	case CSQ_ROOM_ASSIGNED:
		ok = u != NULL && u->state == CSQ_USER_ASSIGNED &&
		     deadline_is(&r->deadline, -1);
		break;
	case CSQ_ROOM_WRAPUP:
		k->wrapups++;
		ok = u == NULL && deadline_is(&r->deadline, CSQ_DL_WRAPUP);
		break;
	default:
		ok = 0;
	}
	if (!ok)
		check_fail(k, "room %s/%u in state %d disagrees", s->id, i,
		           (int)r->state);
	if (u != NULL && (u->room != r || csq_dict_get(k->c->users, u->id,
	                                               csq_user_idlen(u)) != u))
		check_fail(k, "R2U %s/%u disagrees with U2R", s->id, i);
}

/* s's prefer line of queues[i]: its users wait for s, in that queue. */
static void
check_prefer_line(struct check *k, const struct csq_servicer *s, uint32_t i,
                  int has_free)
{
	const struct csq_line *l = s->prefer[i];
	struct csq_line_node *node;
	const struct csq_user *u;

	if (l == NULL)
		return;
	if (csq_line_len(l) == 0 || csq_line_check(l) != 0)
		check_fail(k, "prefer line of %s is inconsistent", s->id);
	/* Business hours: nobody of a closed queue is matched. */
	if (has_free && !csq_queue_closed(s->queues[i]))
		check_fail(k, "free room of %s beside users who prefer it",
		           s->id);
	for (node = csq_line_first(l); node != NULL;
	     node = csq_line_next(node)) {
		u = csq_line_node_value(node);
		if (u->state != CSQ_USER_WAITING ||
		    !(u->flags & CSQ_USER_PREFERRING) || u->wait->prefer != s ||
		    u->queue != s->queues[i] ||
		    csq_line_node_key(node) != u->key)
			check_fail(k, "prefer line of %s holds %s", s->id,
			           u->id);
	}
}

/* s's list of the need-lines of q = queues[i] it may take, while it
 * claims to be q's of now: those it satisfies, each once. */
static void
check_takes(struct check *k, const struct csq_servicer *s,
            const struct csq_queue *q, uint32_t i)
{
	const struct csq_takes *t = s->takes != NULL ? &s->takes[i] : NULL;
	uint32_t j, m, in;

	if (t == NULL || t->queue != q || t->gen != q->nls_gen)
		return;
	if (s->nskills == 0)
		check_fail(k, "servicer %s without skills keeps takes", s->id);
	for (j = 0, in = 0; j < q->nnls; j++) {
		for (m = 0; m < t->n && t->v[m] != q->nls[j]; m++)
			;
		if ((m < t->n) != csq_skills_satisfy(s, q->nls[j]->set, NULL))
			check_fail(k, "servicer %s's takes of %s wrong at %s",
			           s->id, q->name, q->nls[j]->set->text);
		in += m < t->n;
	}
	if (in != t->n)
		check_fail(k, "servicer %s's takes of %s: %u, %u known", s->id,
		           q->name, t->n, in);
}

/* s is in the avail heap of each need-line of q that it satisfies
 * while it has a free room, keyed as csq_navail_key says; else in none. */
static void
check_needlines(struct check *k, const struct csq_servicer *s,
                const struct csq_queue *q, uint32_t i, int has_free)
{
	const struct csq_needline *nl;
	uint64_t akey, atie;
	uint32_t j, m, in;

	for (j = 0; j < q->nnls; j++) {
		nl = q->nls[j];
		for (m = 0, in = 0; m < s->nnav; m++)
			if (s->nav[m]->nl == nl &&
			    csq_heap_contains(&s->nav[m]->node)) {
				in++;
				csq_navail_key(k->c, s, nl, &akey, &atie);
				if (s->nav[m]->node.key != akey ||
				    s->nav[m]->node.tie != atie)
					check_fail(k,
					           "servicer %s keyed wrong "
					           "in a need-line of %s",
					           s->id, q->name);
			}
		if (in != (uint32_t)(has_free &&
		                     csq_skills_satisfy(s, nl->set, NULL)))
			check_fail(k,
			           "servicer %s in %u heaps of need-line %s "
			           "of %s",
			           s->id, in, nl->set->text, q->name);
	}
	check_takes(k, s, q, i);
}

static void
check_servicer(void *arg, const char *key, size_t len, void *val)
{
	struct check *k = arg;
	const struct csq_servicer *s = val;
	uint32_t i, j, active = 0, top = 0;
	uint64_t akey, atie;
	int has_free;

	k->servicers++;
	if (len != s->idlen || memcmp(key, s->id, len) != 0)
		check_fail(k, "servicer %s filed under another id", s->id);
	for (i = 0; i < s->nrooms; i++) {
		if (s->rooms[i] == NULL)
			continue;
		active++;
		top = i + 1;
		check_room(k, s, i);
	}
	if (active != s->active)
		check_fail(k, "servicer %s active %u, rooms say %u", s->id,
		           s->active, active);
	if (s->nrooms != (top > s->capacity ? top : s->capacity))
		check_fail(k, "servicer %s has %u rooms", s->id, s->nrooms);
	if (!deadline_is(&s->deadline, CSQ_DL_SERVICER))
		check_fail(k, "servicer %s has no deadline", s->id);
	if (csq_deadline_running(&s->retry)) {
		k->retries++;
		if (!deadline_is(&s->retry, CSQ_DL_RETRY))
			check_fail(k, "servicer %s retry wrong", s->id);
	}
	if (s->offer_s > CSQ_OFFER_MAX || s->wrapup_s > CSQ_WRAPUP_MAX)
		check_fail(k, "servicer %s offer or wrap-up out of range",
		           s->id);
	k->busy += s->active;
	if (s->status == CSQ_SERVICER_READY)
		k->free += csq_servicer_free_count(s);
	has_free = csq_servicer_has_free(s);
	if (s->nqueues < 1 || s->nqueues > CSQ_SERVICER_QUEUES)
		check_fail(k, "servicer %s serves %u queues", s->id,
		           s->nqueues);
	for (i = 0; i < s->nqueues; i++) {
		for (j = 0; j < i; j++)
			if (s->queues[j] == s->queues[i])
				check_fail(k, "servicer %s serves %s twice",
				           s->id, s->queues[i]->name);
		if (csq_heap_contains(&s->avail[i].node) != has_free)
			check_fail(k, "servicer %s avail in %s wrong", s->id,
			           s->queues[i]->name);
		csq_avail_key(k->c, s, s->queues[i], &akey, &atie);
		if (has_free && (s->avail[i].node.key != akey ||
		                 s->avail[i].node.tie != atie))
			check_fail(k, "servicer %s keyed wrong in %s", s->id,
			           s->queues[i]->name);
		/* A room in a retry window may sit beside them: it takes
		 * no one until the window ends. */
		if (has_free && !csq_queue_closed(s->queues[i]) &&
		    csq_needline_servable(s, s->queues[i]))
			check_fail(k,
			           "free room of %s beside waiting users of %s",
			           s->id, s->queues[i]->name);
		check_prefer_line(k, s, i, has_free);
		check_needlines(k, s, s->queues[i], i, has_free);
	}
	for (; i < CSQ_SERVICER_QUEUES; i++)
		if (s->prefer[i] != NULL)
			check_fail(k, "servicer %s has a stray prefer line",
			           s->id);
}

struct queue_refs {
	const struct csq *c;
	const struct csq_queue *q;
	uint64_t refs;
	uint64_t servicers, rooms_ready, rooms_free, preferring;
};

static void
count_user_refs(void *arg, const char *key, size_t len, void *val)
{
	struct queue_refs *r = arg;

	(void)key, (void)len;
	r->refs += ((const struct csq_user *)val)->queue == r->q;
}

static void
count_servicer_refs(void *arg, const char *key, size_t len, void *val)
{
	struct queue_refs *r = arg;
	const struct csq_servicer *s = val;
	uint32_t free =
	    csq_servicer_has_free(s) ? csq_servicer_free_count(s) : 0;

	(void)key, (void)len;
	if (!serves(s, r->q))
		return;
	r->refs++;
	r->servicers++;
	r->rooms_ready += s->status == CSQ_SERVICER_READY ? s->capacity : 0;
	r->rooms_free += free;
}

static void
count_preferring(void *arg, const char *key, size_t len, void *val)
{
	struct queue_refs *r = arg;
	const struct csq_user *u = val;

	(void)key, (void)len;
	r->preferring += u->queue == r->q && (u->flags & CSQ_USER_PREFERRING);
}

/* The ring's share counted again against its level. */
static void
check_counts(struct check *k, const struct csq_queue *q)
{
	const struct csq_queue_counts *n = &q->counts;
	uint32_t i, within = 0;

	if (n->ring_len > CSQ_OUTCOMES || (n->ring == NULL && n->ring_len) ||
	    n->ring_next >= CSQ_OUTCOMES)
		check_fail(k, "queue %s outcome ring wrong", q->name);
	for (i = 0; i < n->ring_len && n->ring != NULL; i++)
		within += n->ring[i] != CSQ_OUTCOME_ABANDONED &&
		          (uint64_t)n->ring[i] <= csq_ms(n->within_s);
	if (within != n->within ||
	    (n->ring != NULL && n->within_s != csq_queue_service_level(q)))
		check_fail(k, "queue %s counts %u within, ring says %u",
		           q->name, n->within, within);
}

/*
 * A queue's nobody state (section 3c) is what its policy and counters
 * say, once the operation settled: a spell exactly while nobody is
 * there, a grace only in one not fired, and none with at_nobody keep.
 */
static void
check_nobody(struct check *k, const struct csq_queue *q)
{
	const struct csq_nobody *d = q->nobody;
	int running;

	if ((d != NULL) != (q->policy != NULL && q->policy->nobody.on)) {
		check_fail(k,
		           "queue %s: nobody state without its policy, or "
		           "the reverse",
		           q->name);
		return;
	}
	if (d == NULL)
		return;
	running = csq_deadline_running(&d->grace);
	k->graces += running;
	if (d->queue != q || (d->since != 0) != csq_nobody_there(q) ||
	    (running && (!deadline_is(&d->grace, CSQ_DL_NOBODY) || d->fired ||
	                 d->since == 0 ||
	                 q->policy->nobody.at_nobody == CSQ_NOBODY_KEEP)) ||
	    (!running && d->since != 0 && !d->fired &&
	     q->policy->nobody.at_nobody != CSQ_NOBODY_KEEP))
		check_fail(k,
		           "queue %s: nobody since %" PRIu64
		           ", fired %u, grace %s, nobody there %d",
		           q->name, d->since, d->fired,
		           running ? "running" : "not running",
		           csq_nobody_there(q));
}

static void
check_queue(void *arg, const char *key, size_t len, void *val)
{
	struct check *k = arg;
	const struct csq_queue *q = val;
	struct queue_refs r;
	struct csq_line *l;
	uint64_t inneeds = 0;
	uint32_t i;

	memset(&r, 0, sizeof(r));
	r.c = k->c;
	r.q = q;
	if (len != q->namelen || memcmp(key, q->name, len) != 0)
		check_fail(k, "queue %s filed under another name", q->name);
	if (q->policy != csq_policy_find(k->c, q->name, q->namelen))
		check_fail(k, "queue %s has another's policy", q->name);
	r.refs += q->policy != NULL;
	csq_dict_each(k->c->users, count_preferring, &r);
	if (r.preferring != q->preferring)
		check_fail(
		    k, "queue %s has %" PRIu64 " preferring, counted %" PRIu64,
		    q->name, q->preferring, r.preferring);
	check_counts(k, q);
	/* Business hours: a deadline, and closed, only with hours. */
	k->hours += csq_deadline_running(&q->hours);
	if ((csq_deadline_running(&q->hours) || q->closed) &&
	    (q->policy == NULL || !q->policy->hours.on))
		check_fail(k, "queue %s has hours without a policy of them",
		           q->name);
	if (!deadline_is(&q->hours, CSQ_DL_HOURS) &&
	    !deadline_is(&q->hours, -1))
		check_fail(k, "queue %s hours deadline of another kind",
		           q->name);
	for (i = 0; i < q->nnls; i++) {
		inneeds += csq_line_len(q->nls[i]->line);
		if (q->nls[i]->queue != q || q->nls[i]->slot != i ||
		    k->c->needsets[q->nls[i]->set->index] != q->nls[i]->set)
			check_fail(k, "need-line %u of %s misfiled", i,
			           q->name);
	}
	if (inneeds != q->needs_waiting)
		check_fail(
		    k, "queue %s counts %" PRIu64 " with needs, lines %" PRIu64,
		    q->name, q->needs_waiting, inneeds);
	if (q->needy != NULL && csq_line_len(q->needy) != inneeds)
		check_fail(k, "queue %s's line of users with needs is off",
		           q->name);
	for (i = 0; i < q->nnls; i++)
		if (csq_line_check(q->nls[i]->line) != 0)
			check_fail(k, "need-line %u of %s is inconsistent", i,
			           q->name);
	for (i = 0; (l = csq_needline_line(q, i)) != NULL; i++)
		if (csq_line_check(l) != 0)
			check_fail(k, "line %u of %s is inconsistent", i,
			           q->name);
	csq_dict_each(k->c->users, count_user_refs, &r);
	csq_dict_each(k->c->servicers, count_servicer_refs, &r);
	if (strcmp(q->name, CSQ_DEFAULT_QUEUE) == 0)
		r.refs++;
	if (r.refs != q->refs || r.refs == 0)
		check_fail(k, "queue %s has %" PRIu64 " refs, counted %" PRIu64,
		           q->name, q->refs, r.refs);
	if (r.servicers != q->nservicers || r.rooms_ready != q->rooms_ready ||
	    r.rooms_free != q->rooms_free)
		check_fail(k,
		           "queue %s servicers %" PRIu64 "/%" PRIu64
		           ", ready rooms %" PRIu64 "/%" PRIu64
		           ", free %" PRIu64 "/%" PRIu64,
		           q->name, q->nservicers, r.servicers, q->rooms_ready,
		           r.rooms_ready, q->rooms_free, r.rooms_free);
	check_nobody(k, q);
}

int
csq_check(const struct csq *c, char *buf, size_t len)
{
	struct check k;

	memset(&k, 0, sizeof(k));
	k.c = c;
	k.buf = buf;
	k.len = len;
	csq_dict_each(c->users, check_user, &k);
	csq_dict_each(c->servicers, check_servicer, &k);
	csq_dict_each(c->queues, check_queue, &k);
	if (k.waiting != c->stats.waiting)
		check_fail(&k, "waiting %" PRIu64 ", counted %" PRIu64,
		           c->stats.waiting, k.waiting);
	if (k.assigned + k.offered + k.wrapups != k.busy ||
	    k.busy != c->stats.rooms_busy || k.offers != k.offered)
		check_fail(&k,
		           "busy rooms %" PRIu64 ", assigned users %" PRIu64
		           ", offered %" PRIu64 ", wrap-ups %" PRIu64
		           ", counter %" PRIu64,
		           k.busy, k.assigned, k.offered, k.wrapups,
		           c->stats.rooms_busy);
	if (k.free != c->stats.rooms_free)
		check_fail(&k, "free rooms %" PRIu64 ", counter %" PRIu64,
		           k.free, c->stats.rooms_free);
	if (k.servicers != c->stats.servicers)
		check_fail(&k, "servicers %" PRIu64 ", counter %" PRIu64,
		           k.servicers, c->stats.servicers);
	/* The views' set of ids (issue 37): every servicer, in order. */
	if (csq_nameset_len(c->servicer_ids) != csq_dict_len(c->servicers) ||
	    csq_nameset_check(c->servicer_ids) != 0)
		check_fail(&k, "servicer ids set holds %zu, servicers %zu",
		           csq_nameset_len(c->servicer_ids),
		           csq_dict_len(c->servicers));
	if (csq_dict_len(c->users) != k.waiting + k.offered + k.assigned)
		check_fail(&k, "users dict holds %zu, placed %" PRIu64,
		           csq_dict_len(c->users),
		           k.waiting + k.offered + k.assigned);
	if (c->deadlines.len != k.servicers + k.timed + k.offers + k.wrapups +
	                            k.retries + k.clocks + k.graces + k.hours)
		check_fail(&k, "%zu deadlines, expected %" PRIu64,
		           c->deadlines.len,
		           k.servicers + k.timed + k.offers + k.wrapups +
		               k.retries + k.clocks + k.graces + k.hours);
	return k.failed ? -1 : 0;
}
