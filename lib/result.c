/* Results as bytes (result.h). */
#include "result.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The last status there is (csq.h): a result of another is no result. */
#define CSQ_STATUS_LAST CSQ_ECLOSED

/* The fewest bytes an array's entry takes: a count beyond what the bytes
 * left could hold is refused before anything is allocated. */
#define MIN_ENTRY 4

/* Why a servicer is paused: none, by hand, or after missed offers. */
static enum csq_reason
get_paused_by(struct csq_rbuf *r)
{
	enum csq_reason why = (enum csq_reason)csq_get_uint(r, 1);

	if (why != CSQ_REASON_NONE && why != CSQ_REASON_PAUSE &&
	    why != CSQ_REASON_MISSED_OFFERS)
		r->bad = 1;
	return why;
}

static void
put_servicer(struct csq_wbuf *w, const struct csq_servicer_info *s)
{
	csq_put_str(w, s->id);
	csq_put_uint(w, (uint64_t)s->status, 1);
	csq_put_uint(w, s->capacity, 4);
	csq_put_uint(w, s->active, 4);
	csq_put_uint(w, s->ttl_s, 4);
	csq_put_uint(w, s->idle_ms, 8);
	csq_put_uint(w, s->offer_s, 4);
	csq_put_uint(w, s->wrapup_s, 4);
	csq_put_uint(w, s->missed, 4);
	csq_put_uint(w, (uint64_t)s->paused_by, 1);
	csq_put_uint(w, s->resting_ms, 8);
	csq_put_uint(w, s->handled_total, 8);
	csq_put_uint(w, s->handle_ms_total, 8);
	csq_put_str(w, s->queues);
	csq_put_str(w, s->skills);
}

static void
get_servicer(struct csq_rbuf *r, struct csq_servicer_info *s)
{
	csq_get_str(r, s->id, sizeof(s->id));
	s->status = (enum csq_servicer_status)csq_get_uint(r, 1);
	if (s->status > CSQ_SERVICER_PAUSED)
		r->bad = 1;
	s->capacity = (uint32_t)csq_get_uint(r, 4);
	s->active = (uint32_t)csq_get_uint(r, 4);
	s->ttl_s = (uint32_t)csq_get_uint(r, 4);
	s->idle_ms = csq_get_uint(r, 8);
	s->offer_s = (uint32_t)csq_get_uint(r, 4);
	s->wrapup_s = (uint32_t)csq_get_uint(r, 4);
	s->missed = (uint32_t)csq_get_uint(r, 4);
	s->paused_by = get_paused_by(r);
	s->resting_ms = csq_get_uint(r, 8);
	s->handled_total = csq_get_uint(r, 8);
	s->handle_ms_total = csq_get_uint(r, 8);
	csq_get_str(r, s->queues, sizeof(s->queues));
	csq_get_str(r, s->skills, sizeof(s->skills));
}

static void
put_user(struct csq_wbuf *w, const struct csq_user_info *u)
{
	csq_put_uint(w, (uint64_t)u->state, 1);
	csq_put_str(w, u->queue);
	csq_put_uint(w, u->position, 8);
	csq_put_uint(w, u->tier, 4);
	csq_put_uint(w, u->waited_ms, 8);
	csq_put_str(w, u->room);
	csq_put_str(w, u->servicer);
	csq_put_uint(w, u->since_ms, 8);
	csq_put_uint(w, u->expires_in_ms, 8);
	csq_put_str(w, u->prefer);
	csq_put_uint(w, u->prefer_ms, 8);
	csq_put_uint(w, (uint64_t)u->eta_ms, 8);
	csq_put_str(w, u->needs);
	csq_put_uint(w, (uint64_t)u->relax_ms, 8);
}

static void
get_user(struct csq_rbuf *r, struct csq_user_info *u)
{
	u->state = (enum csq_user_state)csq_get_uint(r, 1);
	if (u->state > CSQ_USER_OFFERED)
		r->bad = 1;
	csq_get_str(r, u->queue, sizeof(u->queue));
	u->position = csq_get_uint(r, 8);
	u->tier = (uint32_t)csq_get_uint(r, 4);
	u->waited_ms = csq_get_uint(r, 8);
	csq_get_str(r, u->room, sizeof(u->room));
	csq_get_str(r, u->servicer, sizeof(u->servicer));
	u->since_ms = csq_get_uint(r, 8);
	u->expires_in_ms = csq_get_uint(r, 8);
	csq_get_str(r, u->prefer, sizeof(u->prefer));
	u->prefer_ms = csq_get_uint(r, 8);
	u->eta_ms = (int64_t)csq_get_uint(r, 8);
	csq_get_str(r, u->needs, sizeof(u->needs));
	u->relax_ms = (int64_t)csq_get_uint(r, 8);
}

/* The counters of STATS, in the order of struct csq_stats. */
static uint64_t *
stats_field(struct csq_stats *st, size_t i)
{
	uint64_t *f[] = {
	    &st->waiting,
	    &st->servicers,
	    &st->rooms_busy,
	    &st->rooms_free,
	    &st->enqueued_total,
	    &st->matched_total,
	    &st->abandoned_total,
	    &st->requeued_total,
	    &st->servicers_lost_total,
	    &st->offers_total,
	    &st->offers_declined_total,
	    &st->offers_missed_total,
	    &st->transferred_total,
	};

	return i < sizeof(f) / sizeof(f[0]) ? f[i] : NULL;
}

static void
put_entry(struct csq_wbuf *w, const struct csq_queue_entry *e)
{
	csq_put_str(w, e->user);
	csq_put_uint(w, e->tier, 4);
	csq_put_uint(w, e->waited_ms, 8);
	csq_put_str(w, e->needs);
}

static void
get_entry(struct csq_rbuf *r, struct csq_queue_entry *e)
{
	csq_get_str(r, e->user, sizeof(e->user));
	e->tier = (uint32_t)csq_get_uint(r, 4);
	e->waited_ms = csq_get_uint(r, 8);
	csq_get_str(r, e->needs, sizeof(e->needs));
}

static void
put_queue(struct csq_wbuf *w, const struct csq_queue_info *q)
{
	csq_put_str(w, q->name);
	csq_put_uint(w, q->waiting, 8);
	csq_put_uint(w, q->preferring, 8);
	csq_put_uint(w, q->oldest_wait_ms, 8);
	csq_put_str(w, q->oldest_user);
}

static void
get_queue(struct csq_rbuf *r, struct csq_queue_info *q)
{
	csq_get_str(r, q->name, sizeof(q->name));
	q->waiting = csq_get_uint(r, 8);
	q->preferring = csq_get_uint(r, 8);
	q->oldest_wait_ms = csq_get_uint(r, 8);
	csq_get_str(r, q->oldest_user, sizeof(q->oldest_user));
}

static void
put_room(struct csq_wbuf *w, const struct csq_room_info *m)
{
	csq_put_str(w, m->room);
	csq_put_uint(w, (uint64_t)m->state, 1);
	csq_put_str(w, m->user);
	csq_put_uint(w, m->since_ms, 8);
	csq_put_str(w, m->needs);
	csq_put_uint(w, (uint64_t)m->paused_by, 1);
	csq_put_uint(w, m->resting_ms, 8);
}

static void
get_room(struct csq_rbuf *r, struct csq_room_info *m)
{
	csq_get_str(r, m->room, sizeof(m->room));
	m->state = (enum csq_room_state)csq_get_uint(r, 1);
	if (m->state > CSQ_ROOM_WRAPUP)
		r->bad = 1;
	csq_get_str(r, m->user, sizeof(m->user));
	m->since_ms = csq_get_uint(r, 8);
	csq_get_str(r, m->needs, sizeof(m->needs));
	m->paused_by = get_paused_by(r);
	m->resting_ms = csq_get_uint(r, 8);
}

static void
put_qstats(struct csq_wbuf *w, const struct csq_queue_stats *q)
{
	uint32_t i;

	csq_put_str(w, q->queue);
	csq_put_uint(w, q->waiting, 8);
	csq_put_uint(w, q->oldest_wait_ms, 8);
	csq_put_uint(w, (uint64_t)q->eta_ms, 8);
	csq_put_uint(w, q->servicers, 8);
	csq_put_uint(w, q->free_rooms, 8);
	csq_put_uint(w, q->matched_total, 8);
	csq_put_uint(w, q->abandoned_total, 8);
	csq_put_uint(w, q->abandoned_leave, 8);
	csq_put_uint(w, q->abandoned_timeout, 8);
	csq_put_uint(w, q->overflowed_total, 8);
	csq_put_uint(w, q->wait_ms_sum, 8);
	csq_put_uint(w, q->avg_wait_ms, 8);
	csq_put_uint(w, q->service_level_s, 4);
	csq_put_uint(w, (uint32_t)q->service_level_pct, 4);
	csq_put_uint(w, q->outcomes, 4);
	csq_put_uint(w, q->outcomes_within, 4);
	csq_put_uint(w, (uint64_t)q->nobody_ms, 8);
	csq_put_uint(w, q->ngroups, 1);
	for (i = 0; i < q->ngroups && i < CSQ_QSTATS_GROUPS; i++) {
		csq_put_str(w, q->groups[i].needs);
		csq_put_uint(w, q->groups[i].waiting, 8);
	}
	csq_put_uint(w, (uint64_t)(q->hours | q->open << 1), 1);
	csq_put_uint(w, q->next_change_ms, 8);
}

static void
get_qstats(struct csq_rbuf *r, struct csq_queue_stats *q)
{
	uint32_t i;

	csq_get_str(r, q->queue, sizeof(q->queue));
	q->waiting = csq_get_uint(r, 8);
	q->oldest_wait_ms = csq_get_uint(r, 8);
	q->eta_ms = (int64_t)csq_get_uint(r, 8);
	q->servicers = csq_get_uint(r, 8);
	q->free_rooms = csq_get_uint(r, 8);
	q->matched_total = csq_get_uint(r, 8);
	q->abandoned_total = csq_get_uint(r, 8);
	q->abandoned_leave = csq_get_uint(r, 8);
	q->abandoned_timeout = csq_get_uint(r, 8);
	q->overflowed_total = csq_get_uint(r, 8);
	q->wait_ms_sum = csq_get_uint(r, 8);
	q->avg_wait_ms = csq_get_uint(r, 8);
	q->service_level_s = (uint32_t)csq_get_uint(r, 4);
	q->service_level_pct = (int32_t)(uint32_t)csq_get_uint(r, 4);
	q->outcomes = (uint32_t)csq_get_uint(r, 4);
	q->outcomes_within = (uint32_t)csq_get_uint(r, 4);
	q->nobody_ms = (int64_t)csq_get_uint(r, 8);
	q->ngroups = (uint32_t)csq_get_uint(r, 1);
	if (q->ngroups > CSQ_QSTATS_GROUPS)
		r->bad = 1;
	for (i = 0; i < q->ngroups && !r->bad; i++) {
		csq_get_str(r, q->groups[i].needs, sizeof(q->groups[i].needs));
		q->groups[i].waiting = csq_get_uint(r, 8);
	}
	i = (uint32_t)csq_get_uint(r, 1); /* business hours */
	if (i > 3)
		r->bad = 1;
	q->hours = i & 1;
	q->open = (i >> 1) & 1;
	q->next_change_ms = csq_get_uint(r, 8);
}

/* The shape of a result of code (the table's reply column, op.h). */
static enum csq_reply
reply_of(enum csq_opcode code)
{
	const struct csq_op_def *d = csq_op_def(code);

	return d != NULL ? d->reply : CSQ_REPLY_NONE;
}

/* The array a result of that shape carries: its entries' size, 0 for
 * none. */
static size_t
array_entry_size(enum csq_reply shape)
{
	switch (shape) {
	case CSQ_REPLY_ENTRIES:
		return sizeof(struct csq_queue_entry);
	case CSQ_REPLY_SERVICERS:
		return sizeof(struct csq_servicer_info);
	case CSQ_REPLY_QUEUES:
		return sizeof(struct csq_queue_info);
	case CSQ_REPLY_ROOMS:
		return sizeof(struct csq_room_info);
	case CSQ_REPLY_QSTATS:
		return sizeof(struct csq_queue_stats);
	default:
		return 0;
	}
}

/* QUEUES, QSTATS, SERVICERS, ROOMS: the array is a slice, and the next
 * one's cursor follows it. */
static int
has_next(enum csq_reply shape)
{
	return shape == CSQ_REPLY_QUEUES || shape == CSQ_REPLY_QSTATS ||
	       shape == CSQ_REPLY_SERVICERS || shape == CSQ_REPLY_ROOMS;
}

void
csq_result_encode(enum csq_opcode code, const struct csq_result *res,
                  struct csq_wbuf *w)
{
	enum csq_reply shape = reply_of(code);
	struct csq_stats st;
	size_t i;

	csq_put_uint(w, (uint64_t)res->status, 1);
	csq_put_uint(w, (uint64_t)res->n, 8);
	csq_put_uint(w, res->event_id, 8);
	if (res->status != CSQ_OK)
		return;
	switch (shape) {
	case CSQ_REPLY_SERVICER:
		put_servicer(w, &res->servicer);
		return;
	case CSQ_REPLY_USER:
	case CSQ_REPLY_USER_DETAIL:
		put_user(w, &res->user);
		return;
	case CSQ_REPLY_STATS:
		st = res->stats;
		for (i = 0; stats_field(&st, i) != NULL; i++)
			csq_put_uint(w, *stats_field(&st, i), 8);
		return;
	default:
		break;
	}
	if (array_entry_size(shape) == 0)
		return;
	csq_put_uint(w, res->nentries, 4);
	for (i = 0; i < res->nentries; i++) {
		switch (shape) {
		case CSQ_REPLY_ENTRIES:
			put_entry(w, &res->entries[i]);
			break;
		case CSQ_REPLY_SERVICERS:
			put_servicer(w, &res->servicers[i]);
			break;
		case CSQ_REPLY_QUEUES:
			put_queue(w, &res->queues[i]);
			break;
		case CSQ_REPLY_ROOMS:
			put_room(w, &res->rooms[i]);
			break;
		default:
			put_qstats(w, &res->qstats[i]);
			break;
		}
	}
	/* Where the next slice goes on ("": none). */
	if (has_next(shape))
		csq_put_str(w, res->next != NULL ? res->next : "");
}

/* The array of a result: its count, then each entry into one allocation. */
static int
get_array(enum csq_reply shape, struct csq_rbuf *r, struct csq_result *res,
          void **owned)
{
	size_t n = (size_t)csq_get_uint(r, 4), size = array_entry_size(shape),
	       i;
	char *v;

	if (r->bad || n > r->left / MIN_ENTRY)
		return -1;
	/* One entry more: a slice's cursor is kept there. */
	v = csq_xcalloc(n + 1, size);
	for (i = 0; i < n && !r->bad; i++) {
		switch (shape) {
		case CSQ_REPLY_ENTRIES:
			get_entry(r, (struct csq_queue_entry *)v + i);
			break;
		case CSQ_REPLY_SERVICERS:
			get_servicer(r, (struct csq_servicer_info *)v + i);
			break;
		case CSQ_REPLY_QUEUES:
			get_queue(r, (struct csq_queue_info *)v + i);
			break;
		case CSQ_REPLY_ROOMS:
			get_room(r, (struct csq_room_info *)v + i);
			break;
		default:
			get_qstats(r, (struct csq_queue_stats *)v + i);
			break;
		}
	}
	if (!r->bad && has_next(shape)) {
		csq_get_str(r, v + n * size, CSQ_ID_MAX + 1);
		res->next = v[n * size] != '\0' ? v + n * size : NULL;
	}
	if (r->bad) {
		free(v);
		return -1;
	}
	res->nentries = n;
	res->entries = (const struct csq_queue_entry *)(void *)v;
	res->servicers = (const struct csq_servicer_info *)(void *)v;
	res->queues = (const struct csq_queue_info *)(void *)v;
	res->rooms = (const struct csq_room_info *)(void *)v;
	res->qstats = (const struct csq_queue_stats *)(void *)v;
	*owned = v;
	return 0;
}

/*
 * The result zeroed before an answer fills it, but for its servicer
 * (3,400 of its 4,232 bytes), which only a SERVICER answer (HEARTBEAT's)
 * fills and reads (daemon/op_reply.c). Both engines clear by it: the
 * memory engine before an operation, csqd's Redis engine before it
 * decodes csq.so's answer, so that both hand the reply the same fields
 * (docs/benchmarks.md, issue 34: a CSQ.ENQUEUE and a decoded RELEASE no
 * longer zero 3,400 bytes they never read).
 */
_Static_assert(offsetof(struct csq_result, user) ==
                   offsetof(struct csq_result, servicer) +
                       sizeof(((struct csq_result *)0)->servicer),
               "nothing lies between the servicer and the user");
void
csq_result_clear(struct csq_result *r, enum csq_opcode code)
{
	const struct csq_op_def *d = csq_op_def(code);

	if (d == NULL || d->reply == CSQ_REPLY_SERVICER) {
		memset(r, 0, sizeof(*r));
		return;
	}
	memset(r, 0, offsetof(struct csq_result, servicer));
	memset(&r->user, 0, sizeof(*r) - offsetof(struct csq_result, user));
}

int
csq_result_decode(enum csq_opcode code, const uint8_t *p, size_t len,
                  struct csq_result *res, void **owned)
{
	enum csq_reply shape = reply_of(code);
	struct csq_rbuf r = {p, len, 0};
	uint64_t status;
	size_t i;

	csq_result_clear(res, code);
	*owned = NULL;
	status = csq_get_uint(&r, 1);
	res->n = (int64_t)csq_get_uint(&r, 8);
	res->event_id = csq_get_uint(&r, 8);
	if (r.bad || status > CSQ_STATUS_LAST)
		return -1;
	res->status = (enum csq_status)status;
	if (res->status == CSQ_OK) {
		switch (shape) {
		case CSQ_REPLY_SERVICER:
			get_servicer(&r, &res->servicer);
			break;
		case CSQ_REPLY_USER:
		case CSQ_REPLY_USER_DETAIL:
			get_user(&r, &res->user);
			break;
		case CSQ_REPLY_STATS:
			for (i = 0; stats_field(&res->stats, i) != NULL; i++)
				*stats_field(&res->stats, i) =
				    csq_get_uint(&r, 8);
			break;
		default:
			if (array_entry_size(shape) != 0 &&
			    get_array(shape, &r, res, owned) != 0)
				return -1;
			break;
		}
	}
	if (r.bad || r.left != 0) {
		free(*owned);
		*owned = NULL;
		return -1;
	}
	return 0;
}
