/* Operations' replies (op_reply.h). */
#include "op_reply.h"

#include <string.h>

static void
map(const struct op_reply *o, int64_t pairs)
{
	o->map(o->arg, pairs);
}

static void
arr(const struct op_reply *o, int64_t n)
{
	o->array(o->arg, n);
}

static void
str(const struct op_reply *o, const char *s)
{
	o->bulk(o->arg, s, strlen(s));
}

static void
num(const struct op_reply *o, int64_t v)
{
	o->integer(o->arg, v);
}

/* Why a servicer takes no new user (issue 38), as RESP writes it. */
static const char *
reply_paused_by(enum csq_reason why)
{
	return why != CSQ_REASON_NONE ? csq_reason_name(why) : "";
}

static void
reply_servicer(const struct op_reply *o, const struct csq_servicer_info *s)
{
	int paused = s->paused_by != CSQ_REASON_NONE,
	    resting = s->resting_ms > 0;

	map(o, 5 + paused + resting);
	str(o, "servicer");
	str(o, s->id);
	str(o, "status");
	str(o, s->status == CSQ_SERVICER_READY ? "ready" : "paused");
	str(o, "capacity");
	num(o, s->capacity);
	str(o, "active");
	num(o, s->active);
	str(o, "ttl");
	num(o, s->ttl_s);
	if (paused) {
		str(o, "paused_by");
		str(o, reply_paused_by(s->paused_by));
	}
	if (resting) {
		str(o, "resting_ms");
		num(o, (int64_t)s->resting_ms);
	}
}

/* A user's needs in force (section 3c), for one that has some. */
static void
reply_needs(const struct op_reply *o, const struct csq_user_info *u)
{
	if (u->needs[0] == '\0')
		return;
	str(o, "needs");
	str(o, u->needs);
}

/*
 * ENQUEUE's reply, or WHERE's with detail (tier, waited_ms, since_ms).
 * Waiting and offered, eta_ms after v1's fields (protocol-v2 section 6),
 * and, held for a preferred servicer, prefer and prefer_ms (section 5).
 */
static void
reply_user(const struct op_reply *o, const struct csq_user_info *u, int detail)
{
	int prefer = u->prefer[0] != '\0';
	int needs = u->needs[0] != '\0'; /* section 3c: only with needs */
	/* The next relax step, of a user with needs (an engine without
	 * skills leaves the field 0, and its users have none). */
	int relax = needs && u->relax_ms >= 0;

	switch (u->state) {
	case CSQ_USER_NONE:
		map(o, 1);
		str(o, "state");
		str(o, "none");
		return;
	case CSQ_USER_WAITING:
		map(o, (detail ? 6 : 4) + (prefer ? 2 : 0) + (needs ? 1 : 0) +
		           (relax ? 1 : 0));
		str(o, "state");
		str(o, "waiting");
		str(o, "queue");
		str(o, u->queue);
		str(o, "position");
		num(o, (int64_t)u->position);
		if (detail) {
			str(o, "tier");
			num(o, u->tier);
			str(o, "waited_ms");
			num(o, (int64_t)u->waited_ms);
		}
		str(o, "eta_ms");
		num(o, u->eta_ms);
		if (prefer) {
			str(o, "prefer");
			str(o, u->prefer);
			str(o, "prefer_ms");
			num(o, (int64_t)u->prefer_ms);
		}
		reply_needs(o, u);
		if (relax) { /* section 3c: the next step */
			str(o, "relax_ms");
			num(o, u->relax_ms);
		}
		return;
	case CSQ_USER_ASSIGNED:
		map(o, (detail ? 5 : 4) + (needs ? 1 : 0));
		str(o, "state");
		str(o, "assigned");
		str(o, "queue");
		str(o, u->queue);
		str(o, "room");
		str(o, u->room);
		str(o, "servicer");
		str(o, u->servicer);
		if (detail) {
			str(o, "since_ms");
			num(o, (int64_t)u->since_ms);
		}
		reply_needs(o, u);
		return;
	case CSQ_USER_OFFERED:
		map(o, (detail ? 8 : 7) + (needs ? 1 : 0));
		str(o, "state");
		str(o, "offered");
		str(o, "queue");
		str(o, u->queue);
		str(o, "tier");
		num(o, u->tier);
		str(o, "servicer");
		str(o, u->servicer);
		str(o, "room");
		str(o, u->room);
		str(o, "expires_in_ms");
		num(o, (int64_t)u->expires_in_ms);
		if (detail) {
			str(o, "waited_ms");
			num(o, (int64_t)u->waited_ms);
		}
		str(o, "eta_ms");
		num(o, u->eta_ms);
		reply_needs(o, u);
		return;
	}
}

/* QSTATS: one queue's line, servicers and numbers (section 6), then
 * the abandons by reason. */
static void
reply_qstats(const struct op_reply *o, const struct csq_queue_stats *q)
{
	const struct {
		const char *name;
		int64_t value;
	} f[] = {
	    {"waiting", (int64_t)q->waiting},
	    {"oldest_wait_ms", (int64_t)q->oldest_wait_ms},
	    {"eta_ms", q->eta_ms},
	    {"servicers", (int64_t)q->servicers},
	    {"free_rooms", (int64_t)q->free_rooms},
	    {"matched_total", (int64_t)q->matched_total},
	    {"abandoned_total", (int64_t)q->abandoned_total},
	    {"overflowed_total", (int64_t)q->overflowed_total},
	    {"avg_wait_ms", (int64_t)q->avg_wait_ms},
	    {"service_level", q->service_level_s},
	    {"service_level_pct", q->service_level_pct},
	    {"abandoned_leave_total", (int64_t)q->abandoned_leave},
	    {"abandoned_timeout_total", (int64_t)q->abandoned_timeout},
	};
	size_t i, n = sizeof(f) / sizeof(f[0]);
	int nobody = q->nobody_ms != CSQ_QSTATS_NO_NOBODY;

	map(o,
	    (int64_t)n + 1 + nobody + (q->ngroups > 0) + 2 * (q->hours != 0));
	str(o, "queue");
	str(o, q->queue);
	for (i = 0; i < n; i++) {
		str(o, f[i].name);
		num(o, f[i].value);
	}
	/* Section 3c: a queue with a nobody policy, its spell of nobody. */
	if (nobody) {
		str(o, "nobody_ms");
		num(o, q->nobody_ms);
	}
	if (q->hours) { /* section 3c: business hours */
		str(o, "open");
		num(o, q->open);
		str(o, "next_change_ms");
		num(o, (int64_t)q->next_change_ms);
	}
	if (q->ngroups == 0)
		return;
	/* Section 3c: users with needs waiting, by need-set. */
	str(o, "needs_waiting");
	arr(o, 2 * (int64_t)q->ngroups);
	for (i = 0; i < q->ngroups; i++) {
		str(o, q->groups[i].needs);
		num(o, (int64_t)q->groups[i].waiting);
	}
}

/*
 * A row of SERVICERS: v1's fields (id, status, capacity, active,
 * idle_ms), then the queues it serves, as an array (protocol-v2 section
 * 6), then routing's (sections 1, 2): OFFER, WRAPUP and the offers missed
 * in a row. RESP3 has arrays here too: the rows are positional.
 */
static void
reply_servicer_row(const struct op_reply *o, const struct csq_servicer_info *s)
{
	const char *q = s->queues, *comma;
	int64_t n = s->queues[0] != '\0';

	for (comma = q; (comma = strchr(comma, ',')) != NULL; comma++)
		n++;
	/* Section 3c: the skills of one that has some, a 10th; and a
	 * paused or resting one's why (issue 38), an 11th and a 12th, its
	 * 10th then "" when it has no skills. */
	int why = s->paused_by != CSQ_REASON_NONE || s->resting_ms > 0;

	arr(o, why ? 12 : s->skills[0] != '\0' ? 10 : 9);
	str(o, s->id);
	str(o, s->status == CSQ_SERVICER_READY ? "ready" : "paused");
	num(o, s->capacity);
	num(o, s->active);
	num(o, (int64_t)s->idle_ms);
	arr(o, n);
	while (n-- > 0) {
		comma = strchr(q, ',');
		o->bulk(o->arg, q,
		        comma != NULL ? (size_t)(comma - q) : strlen(q));
		q = comma != NULL ? comma + 1 : q;
	}
	num(o, s->offer_s);
	num(o, s->wrapup_s);
	num(o, s->missed);
	if (s->skills[0] != '\0' || why)
		str(o, s->skills);
	if (why) {
		str(o, reply_paused_by(s->paused_by));
		num(o, (int64_t)s->resting_ms);
	}
}

/* The names ROOMS gives the states of enum csq_room_state. */
const char *
op_reply_room_state(enum csq_room_state state)
{
	switch (state) {
	case CSQ_ROOM_OFFERED:
		return "offered";
	case CSQ_ROOM_ASSIGNED:
		return "assigned";
	case CSQ_ROOM_WRAPUP:
		return "wrapup";
	case CSQ_ROOM_FREE:
		break;
	}
	return "free";
}

/* A room of ROOMS: a flat field/value array (RESP3: a map). */
static void
reply_room(const struct op_reply *o, const struct csq_room_info *r)
{
	/* A free room that takes nobody says why (issue 38). */
	int paused =
	        r->state == CSQ_ROOM_FREE && r->paused_by != CSQ_REASON_NONE,
	    resting = r->state == CSQ_ROOM_FREE && r->resting_ms > 0;

	map(o, (r->needs[0] != '\0' ? 5 : 4) + paused + resting);
	str(o, "room");
	str(o, r->room);
	str(o, "state");
	str(o, op_reply_room_state(r->state));
	str(o, "user");
	str(o, r->user);
	str(o, "since_ms");
	num(o, (int64_t)r->since_ms);
	if (r->needs[0] != '\0') { /* section 3c */
		str(o, "needs");
		str(o, r->needs);
	}
	if (paused) {
		str(o, "paused_by");
		str(o, reply_paused_by(r->paused_by));
	}
	if (resting) {
		str(o, "resting_ms");
		num(o, (int64_t)r->resting_ms);
	}
}

void
op_reply_servicer_rows(const struct op_reply *o, const struct csq_result *r)
{
	size_t i;

	for (i = 0; i < r->nentries; i++)
		reply_servicer_row(o, &r->servicers[i]);
}

size_t
op_reply_stats(const struct csq_stats *st,
               struct op_reply_stat out[OP_REPLY_STATS_MAX])
{
	const struct op_reply_stat f[] = {
	    {"waiting", st->waiting},
	    {"servicers", st->servicers},
	    {"rooms_busy", st->rooms_busy},
	    {"rooms_free", st->rooms_free},
	    {"enqueued_total", st->enqueued_total},
	    {"matched_total", st->matched_total},
	    {"abandoned_total", st->abandoned_total},
	    {"requeued_total", st->requeued_total},
	    {"servicers_lost_total", st->servicers_lost_total},
	    {"offers_total", st->offers_total},
	    {"offers_declined_total", st->offers_declined_total},
	    {"offers_missed_total", st->offers_missed_total},
	    {"transferred_total", st->transferred_total},
	};
	size_t n = sizeof(f) / sizeof(f[0]);

	_Static_assert(sizeof(f) / sizeof(f[0]) <= OP_REPLY_STATS_MAX,
	               "OP_REPLY_STATS_MAX");
	memcpy(out, f, sizeof(f));
	return n;
}

static void
reply_stats(const struct op_reply *o, const struct csq_stats *st)
{
	struct op_reply_stat f[OP_REPLY_STATS_MAX];
	size_t i, n = op_reply_stats(st, f);

	map(o, (int64_t)n);
	for (i = 0; i < n; i++) {
		str(o, f[i].name);
		num(o, (int64_t)f[i].value);
	}
}

void
op_reply_write(const struct op_reply *o, enum csq_opcode code,
               const struct csq_result *r)
{
	const struct csq_op_def *d = csq_op_def(code);
	size_t i;

	switch (d != NULL ? d->reply : CSQ_REPLY_NONE) {
	case CSQ_REPLY_NONE: /* the engine's own operations: no reply */
		break;
	case CSQ_REPLY_OK:
		o->simple(o->arg, "OK");
		break;
	case CSQ_REPLY_N:
		num(o, r->n);
		break;
	case CSQ_REPLY_SERVICER:
		reply_servicer(o, &r->servicer);
		break;
	case CSQ_REPLY_USER:
		reply_user(o, &r->user, 0);
		break;
	case CSQ_REPLY_USER_DETAIL: /* WHERE's, and TRANSFER's new state */
		reply_user(o, &r->user, 1);
		break;
	case CSQ_REPLY_ENTRIES:
		arr(o, (int64_t)r->nentries);
		for (i = 0; i < r->nentries; i++) {
			arr(o, 3);
			str(o, r->entries[i].user);
			num(o, r->entries[i].tier);
			num(o, (int64_t)r->entries[i].waited_ms);
		}
		break;
	case CSQ_REPLY_SERVICERS:
		arr(o, (int64_t)r->nentries);
		op_reply_servicer_rows(o, r);
		break;
	case CSQ_REPLY_QUEUES:
		arr(o, (int64_t)r->nentries);
		for (i = 0; i < r->nentries; i++)
			str(o, r->queues[i].name);
		break;
	case CSQ_REPLY_ROOMS:
		arr(o, (int64_t)r->nentries);
		for (i = 0; i < r->nentries; i++)
			reply_room(o, &r->rooms[i]);
		break;
	case CSQ_REPLY_STATS:
		reply_stats(o, &r->stats);
		break;
	case CSQ_REPLY_QSTATS:
		reply_qstats(o, &r->qstats[0]);
		break;
	}
}
