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
	uint64_t waiting, assigned, busy, free, servicers;
	uint64_t timed; /* waiting users with a TTL */
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

static void
check_user(void *arg, const char *key, size_t len, void *val)
{
	struct check *k = arg;
	const struct csq_user *u = val;
	struct csq_line_node *node;
	uint64_t rank;

	if (len != csq_user_idlen(u) || memcmp(key, u->id, len) != 0)
		check_fail(k, "user %s filed under another id", u->id);
	if (csq_dict_get(k->c->queues, u->queue->name, u->queue->namelen) !=
	    u->queue)
		check_fail(k, "user %s in an unknown queue", u->id);
	if (u->key >= CSQ_KEY_LIMIT)
		check_fail(k, "user %s key out of range", u->id);
	switch (u->state) {
	case CSQ_USER_WAITING:
		k->waiting++;
		k->timed += u->ttl_s > 0;
		rank = csq_line_rank(u->queue->line, u->key);
		node = rank ? csq_line_nth(u->queue->line, rank - 1) : NULL;
		if (node == NULL || csq_line_node_value(node) != u)
			check_fail(k, "waiting user %s not in its line", u->id);
		if (csq_heap_contains(&u->deadline.node) != (u->ttl_s > 0))
			check_fail(k, "waiting user %s deadline wrong", u->id);
		break;
	case CSQ_USER_ASSIGNED:
		k->assigned++;
		if (csq_line_rank(u->queue->line, u->key) != 0)
			check_fail(k, "assigned user %s still in line", u->id);
		if (u->servicer == NULL || u->room >= u->servicer->nrooms ||
		    u->servicer->rooms[u->room] != u)
			check_fail(k, "U2R of %s disagrees with R2U", u->id);
		break;
	default:
		check_fail(k, "user %s in state %d", u->id, (int)u->state);
	}
}

static void
check_servicer(void *arg, const char *key, size_t len, void *val)
{
	struct check *k = arg;
	const struct csq_servicer *s = val;
	const struct csq_user *u;
	uint32_t i, j, active = 0, top = 0;
	int has_free;

	k->servicers++;
	if (len != s->idlen || memcmp(key, s->id, len) != 0)
		check_fail(k, "servicer %s filed under another id", s->id);
	for (i = 0; i < s->nrooms; i++) {
		if ((u = s->rooms[i]) == NULL)
			continue;
		active++;
		top = i + 1;
		if (u->state != CSQ_USER_ASSIGNED || u->servicer != s ||
		    u->room != i)
			check_fail(k, "R2U %s/%u disagrees with U2R", s->id, i);
		if (csq_dict_get(k->c->users, u->id, csq_user_idlen(u)) != u)
			check_fail(k, "room %s/%u holds an unknown user", s->id,
			           i);
	}
	if (active != s->active)
		check_fail(k, "servicer %s active %u, rooms say %u", s->id,
		           s->active, active);
	if (s->nrooms != (top > s->capacity ? top : s->capacity))
		check_fail(k, "servicer %s has %u rooms", s->id, s->nrooms);
	if (!csq_heap_contains(&s->deadline.node))
		check_fail(k, "servicer %s has no deadline", s->id);
	k->busy += s->active;
	has_free = csq_servicer_has_free(s);
	if (has_free)
		k->free += s->capacity - s->active;
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
	if (k.assigned != k.busy || k.busy != c->stats.rooms_busy)
		check_fail(&k,
		           "busy rooms %" PRIu64 ", assigned users %" PRIu64
		           ", counter %" PRIu64,
		           k.busy, k.assigned, c->stats.rooms_busy);
	if (k.free != c->stats.rooms_free)
		check_fail(&k, "free rooms %" PRIu64 ", counter %" PRIu64,
		           k.free, c->stats.rooms_free);
	if (k.servicers != c->stats.servicers)
		check_fail(&k, "servicers %" PRIu64 ", counter %" PRIu64,
		           k.servicers, c->stats.servicers);
	if (csq_dict_len(c->users) != k.waiting + k.assigned)
		check_fail(&k, "users dict holds %zu, placed %" PRIu64,
		           csq_dict_len(c->users), k.waiting + k.assigned);
	if (c->deadlines.len != k.servicers + k.timed)
		check_fail(&k, "%zu deadlines, expected %" PRIu64,
		           c->deadlines.len, k.servicers + k.timed);
	return k.failed ? -1 : 0;
}
