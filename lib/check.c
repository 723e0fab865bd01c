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

static void
check_user(void *arg, const char *key, size_t len, void *val)
{
	struct check *k = arg;
	const struct csq_user *u = val;
	struct csq_line_node *node;
	uint64_t rank;
	int ttl = u->ttl_s > 0 ? CSQ_DL_USER : -1;

	if (len != csq_user_idlen(u) || memcmp(key, u->id, len) != 0)
		check_fail(k, "user %s filed under another id", u->id);
	if (csq_dict_get(k->c->queues, u->queue->name, u->queue->namelen) !=
	    u->queue)
		check_fail(k, "user %s in an unknown queue", u->id);
	if (u->key >= CSQ_KEY_LIMIT)
		check_fail(k, "user %s key out of range", u->id);
	rank = csq_line_rank(u->queue->line, u->key);
	switch (u->state) {
	case CSQ_USER_WAITING:
		k->waiting++;
		k->timed += u->ttl_s > 0;
		node = rank ? csq_line_nth(u->queue->line, rank - 1) : NULL;
		if (node == NULL || csq_line_node_value(node) != u)
			check_fail(k, "waiting user %s not in its line", u->id);
		if (!deadline_is(&u->deadline, ttl))
			check_fail(k, "waiting user %s deadline wrong", u->id);
		if (u->room != NULL)
			check_fail(k, "waiting user %s has a room", u->id);
		break;
	case CSQ_USER_OFFERED:
		k->offered++;
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
		if (has_free && csq_line_len(s->queues[i]->line) > 0)
			check_fail(k,
			           "free room of %s beside waiting users of %s",
			           s->id, s->queues[i]->name);
	}
}

struct queue_refs {
	const struct csq *c;
	const struct csq_queue *q;
	uint64_t refs;
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

	(void)key, (void)len;
	r->refs += serves(val, r->q);
}

static void
check_queue(void *arg, const char *key, size_t len, void *val)
{
	struct check *k = arg;
	const struct csq_queue *q = val;
	struct queue_refs r = {k->c, q, 0};

	if (len != q->namelen || memcmp(key, q->name, len) != 0)
		check_fail(k, "queue %s filed under another name", q->name);
	if (csq_line_check(q->line) != 0)
		check_fail(k, "line of %s is inconsistent", q->name);
	csq_dict_each(k->c->users, count_user_refs, &r);
	csq_dict_each(k->c->servicers, count_servicer_refs, &r);
	if (strcmp(q->name, CSQ_DEFAULT_QUEUE) == 0)
		r.refs++;
	if (r.refs != q->refs || r.refs == 0)
		check_fail(k, "queue %s has %" PRIu64 " refs, counted %" PRIu64,
		           q->name, q->refs, r.refs);
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
	if (csq_dict_len(c->users) != k.waiting + k.offered + k.assigned)
		check_fail(&k, "users dict holds %zu, placed %" PRIu64,
		           csq_dict_len(c->users),
		           k.waiting + k.offered + k.assigned);
	if (c->deadlines.len !=
	    k.servicers + k.timed + k.offers + k.wrapups + k.retries)
		check_fail(
		    &k, "%zu deadlines, expected %" PRIu64, c->deadlines.len,
		    k.servicers + k.timed + k.offers + k.wrapups + k.retries);
	return k.failed ? -1 : 0;
}
