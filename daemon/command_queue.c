/*
 * The queue's commands. Each checks its arguments, turns the request into
 * a struct csq_op and hands it to the engine; the reply is written when
 * the engine answers, inside csq_engine_call (the memory engine) or later
 * (the Redis engine).
 */
#include "command_queue.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "client.h"
#include "command_arg.h"
#include "engine.h"
#include "log.h"
#include "metrics.h"
#include "multi.h"
#include "resp.h"
#include "server.h"
#include "util.h"

#define QUEUE_LIST_MAX    (CSQ_SERVICER_QUEUES * (CSQ_ID_MAX + 1))
#define FULL_LOG_QUEUES   64    /* queues whose last "full" line is kept */
#define QUEUES_SLICE      1000  /* QUEUES: queues per turn of the loop */
#define FULL_LOG_EVERY_MS 60000 /* at most one "full" line per queue */

/* Why a servicer takes no new user (issue 38), as RESP writes it. */
static const char *
reply_paused_by(enum csq_reason why)
{
	return why != CSQ_REASON_NONE ? csq_reason_name(why) : "";
}

static void
reply_servicer(struct evbuffer *out, int proto,
               const struct csq_servicer_info *s)
{
	int paused = s->paused_by != CSQ_REASON_NONE,
	    resting = s->resting_ms > 0;

	resp_map(out, proto, 5 + paused + resting);
	resp_bulk_str(out, "servicer");
	resp_bulk_str(out, s->id);
	resp_bulk_str(out, "status");
	resp_bulk_str(out,
	              s->status == CSQ_SERVICER_READY ? "ready" : "paused");
	resp_bulk_str(out, "capacity");
	resp_integer(out, s->capacity);
	resp_bulk_str(out, "active");
	resp_integer(out, s->active);
	resp_bulk_str(out, "ttl");
	resp_integer(out, s->ttl_s);
	if (paused) {
		resp_bulk_str(out, "paused_by");
		resp_bulk_str(out, reply_paused_by(s->paused_by));
	}
	if (resting) {
		resp_bulk_str(out, "resting_ms");
		resp_integer(out, (int64_t)s->resting_ms);
	}
}

/* A user's needs in force (section 3c), for one that has some. */
static void
reply_needs(struct evbuffer *out, const struct csq_user_info *u)
{
	if (u->needs[0] == '\0')
		return;
	resp_bulk_str(out, "needs");
	resp_bulk_str(out, u->needs);
}

/*
 * ENQUEUE's reply, or WHERE's with detail (tier, waited_ms, since_ms).
 * Waiting and offered, eta_ms after v1's fields (protocol-v2 section 6),
 * and, held for a preferred servicer, prefer and prefer_ms (section 5).
 */
static void
reply_user(struct evbuffer *out, int proto, const struct csq_user_info *u,
           int detail)
{
	int prefer = u->prefer[0] != '\0';
	int needs = u->needs[0] != '\0'; /* section 3c: only with needs */
	/* The next relax step, of a user with needs (an engine without
	 * skills leaves the field 0, and its users have none). */
	int relax = needs && u->relax_ms >= 0;

	switch (u->state) {
	case CSQ_USER_NONE:
		resp_map(out, proto, 1);
		resp_bulk_str(out, "state");
		resp_bulk_str(out, "none");
		return;
	case CSQ_USER_WAITING:
		resp_map(out, proto,
		         (detail ? 6 : 4) + (prefer ? 2 : 0) + (needs ? 1 : 0) +
		             (relax ? 1 : 0));
		resp_bulk_str(out, "state");
		resp_bulk_str(out, "waiting");
		resp_bulk_str(out, "queue");
		resp_bulk_str(out, u->queue);
		resp_bulk_str(out, "position");
		resp_integer(out, (int64_t)u->position);
		if (detail) {
			resp_bulk_str(out, "tier");
			resp_integer(out, u->tier);
			resp_bulk_str(out, "waited_ms");
			resp_integer(out, (int64_t)u->waited_ms);
		}
		resp_bulk_str(out, "eta_ms");
		resp_integer(out, u->eta_ms);
		if (prefer) {
			resp_bulk_str(out, "prefer");
			resp_bulk_str(out, u->prefer);
			resp_bulk_str(out, "prefer_ms");
			resp_integer(out, (int64_t)u->prefer_ms);
		}
		reply_needs(out, u);
		if (relax) { /* section 3c: the next step */
			resp_bulk_str(out, "relax_ms");
			resp_integer(out, u->relax_ms);
		}
		return;
	case CSQ_USER_ASSIGNED:
		resp_map(out, proto, (detail ? 5 : 4) + (needs ? 1 : 0));
		resp_bulk_str(out, "state");
		resp_bulk_str(out, "assigned");
		resp_bulk_str(out, "queue");
		resp_bulk_str(out, u->queue);
		resp_bulk_str(out, "room");
		resp_bulk_str(out, u->room);
		resp_bulk_str(out, "servicer");
		resp_bulk_str(out, u->servicer);
		if (detail) {
			resp_bulk_str(out, "since_ms");
			resp_integer(out, (int64_t)u->since_ms);
		}
		reply_needs(out, u);
		return;
	case CSQ_USER_OFFERED:
		resp_map(out, proto, (detail ? 8 : 7) + (needs ? 1 : 0));
		resp_bulk_str(out, "state");
		resp_bulk_str(out, "offered");
		resp_bulk_str(out, "queue");
		resp_bulk_str(out, u->queue);
		resp_bulk_str(out, "tier");
		resp_integer(out, u->tier);
		resp_bulk_str(out, "servicer");
		resp_bulk_str(out, u->servicer);
		resp_bulk_str(out, "room");
		resp_bulk_str(out, u->room);
		resp_bulk_str(out, "expires_in_ms");
		resp_integer(out, (int64_t)u->expires_in_ms);
		if (detail) {
			resp_bulk_str(out, "waited_ms");
			resp_integer(out, (int64_t)u->waited_ms);
		}
		resp_bulk_str(out, "eta_ms");
		resp_integer(out, u->eta_ms);
		reply_needs(out, u);
		return;
	}
}

/* QSTATS: one queue's line, servicers and numbers (section 6), then
 * the abandons by reason. */
static void
reply_qstats(struct evbuffer *out, int proto, const struct csq_queue_stats *q)
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

	resp_map(out, proto,
	         (int64_t)n + 1 + nobody + (q->ngroups > 0) +
	             2 * (q->hours != 0));
	resp_bulk_str(out, "queue");
	resp_bulk_str(out, q->queue);
	for (i = 0; i < n; i++) {
		resp_bulk_str(out, f[i].name);
		resp_integer(out, f[i].value);
	}
	/* Section 3c: a queue with a nobody policy, its spell of nobody. */
	if (nobody) {
		resp_bulk_str(out, "nobody_ms");
		resp_integer(out, q->nobody_ms);
	}
	if (q->hours) { /* section 3c: business hours */
		resp_bulk_str(out, "open");
		resp_integer(out, q->open);
		resp_bulk_str(out, "next_change_ms");
		resp_integer(out, (int64_t)q->next_change_ms);
	}
	if (q->ngroups == 0)
		return;
	/* Section 3c: users with needs waiting, by need-set. */
	resp_bulk_str(out, "needs_waiting");
	resp_array(out, 2 * (int64_t)q->ngroups);
	for (i = 0; i < q->ngroups; i++) {
		resp_bulk_str(out, q->groups[i].needs);
		resp_integer(out, (int64_t)q->groups[i].waiting);
	}
}

/*
 * A row of SERVICERS: v1's fields (id, status, capacity, active,
 * idle_ms), then the queues it serves, as an array (protocol-v2 section
 * 6), then routing's (sections 1, 2): OFFER, WRAPUP and the offers missed
 * in a row. RESP3 has arrays here too: the rows are positional.
 */
static void
reply_servicer_row(struct evbuffer *out, const struct csq_servicer_info *s)
{
	const char *q = s->queues, *comma;
	int64_t n = s->queues[0] != '\0';

	for (comma = q; (comma = strchr(comma, ',')) != NULL; comma++)
		n++;
	/* Section 3c: the skills of one that has some, a 10th; and a
	 * paused or resting one's why (issue 38), an 11th and a 12th, its
	 * 10th then "" when it has no skills. */
	int why = s->paused_by != CSQ_REASON_NONE || s->resting_ms > 0;

	resp_array(out, why ? 12 : s->skills[0] != '\0' ? 10 : 9);
	resp_bulk_str(out, s->id);
	resp_bulk_str(out,
	              s->status == CSQ_SERVICER_READY ? "ready" : "paused");
	resp_integer(out, s->capacity);
	resp_integer(out, s->active);
	resp_integer(out, (int64_t)s->idle_ms);
	resp_array(out, n);
	while (n-- > 0) {
		comma = strchr(q, ',');
		resp_bulk(out, q,
		          comma != NULL ? (size_t)(comma - q) : strlen(q));
		q = comma != NULL ? comma + 1 : q;
	}
	resp_integer(out, s->offer_s);
	resp_integer(out, s->wrapup_s);
	resp_integer(out, s->missed);
	if (s->skills[0] != '\0' || why)
		resp_bulk_str(out, s->skills);
	if (why) {
		resp_bulk_str(out, reply_paused_by(s->paused_by));
		resp_integer(out, (int64_t)s->resting_ms);
	}
}

/* The names ROOMS gives the states of enum csq_room_state. */
const char *
command_room_state(enum csq_room_state state)
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
reply_room(struct evbuffer *out, int proto, const struct csq_room_info *r)
{
	/* A free room that takes nobody says why (issue 38). */
	int paused =
	        r->state == CSQ_ROOM_FREE && r->paused_by != CSQ_REASON_NONE,
	    resting = r->state == CSQ_ROOM_FREE && r->resting_ms > 0;

	resp_map(out, proto, (r->needs[0] != '\0' ? 5 : 4) + paused + resting);
	resp_bulk_str(out, "room");
	resp_bulk_str(out, r->room);
	resp_bulk_str(out, "state");
	resp_bulk_str(out, command_room_state(r->state));
	resp_bulk_str(out, "user");
	resp_bulk_str(out, r->user);
	resp_bulk_str(out, "since_ms");
	resp_integer(out, (int64_t)r->since_ms);
	if (r->needs[0] != '\0') { /* section 3c */
		resp_bulk_str(out, "needs");
		resp_bulk_str(out, r->needs);
	}
	if (paused) {
		resp_bulk_str(out, "paused_by");
		resp_bulk_str(out, reply_paused_by(r->paused_by));
	}
	if (resting) {
		resp_bulk_str(out, "resting_ms");
		resp_integer(out, (int64_t)r->resting_ms);
	}
}

size_t
command_stats(const struct csq_stats *st,
              struct command_stat out[COMMAND_STATS_MAX])
{
	const struct command_stat f[] = {
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

	_Static_assert(sizeof(f) / sizeof(f[0]) <= COMMAND_STATS_MAX,
	               "COMMAND_STATS_MAX");
	memcpy(out, f, sizeof(f));
	return n;
}

static void
reply_stats(struct evbuffer *out, int proto, const struct csq_stats *st)
{
	struct command_stat f[COMMAND_STATS_MAX];
	size_t i, n = command_stats(st, f);

	resp_map(out, proto, (int64_t)n);
	for (i = 0; i < n; i++) {
		resp_bulk_str(out, f[i].name);
		resp_integer(out, (int64_t)f[i].value);
	}
}

/*
 * An engine call of a client's. The engine may answer inside
 * csq_engine_call (the memory engine) or later (the Redis engine); a later
 * answer writes into the client's slot for it, so that replies stay in
 * request order, and is measured when it comes.
 */
struct command_call {
	struct client *c;
	enum csq_opcode code;
	int answered;               /* inside csq_engine_call */
	int later;                  /* csq_engine_call returned unanswered */
	struct client_slot *slot;   /* later: where the reply goes */
	struct multi_exec *exec;    /* the EXEC it is part of, or NULL */
	command_render_fn *render;  /* writes the reply itself, or NULL */
	void *render_arg;           /* render's, freed after it */
	struct evbuffer *buf;       /* later, of an EXEC: its reply's place */
	uint64_t start_us;          /* later: when the command came */
	const char *name;           /* later: the command, for its metrics */
	char queue[CSQ_ID_MAX + 1]; /* ENQUEUE: for a -FULL's warning */
};

/* The command running now: its start and name, for an answer that comes
 * later; and whether it left a call in flight (then it is measured when
 * the answer comes, not when it returns). While a command is checked for
 * MULTI's queue, its call is not made; while EXEC runs a block, calls are
 * part of it. */
static struct {
	const char *name;
	uint64_t start_us;
	int later;
	int checking;            /* only check the arguments */
	int checked;             /* the handler got as far as its call */
	struct multi_exec *exec; /* the block being run, or NULL */
} command_running;

static void command_log_full(struct server *, const char *queue);

/* ENQUEUE or TRANSFER into a closed queue that refuses (section 3c):
 * when it opens, as ISO 8601 in UTC and epoch ms. */
static void
reply_closed(struct evbuffer *out, int64_t opens_ms)
{
	char iso[32];
	time_t t = (time_t)(opens_ms / 1000);
	struct tm tm;

	if (opens_ms <= 0 || gmtime_r(&t, &tm) == NULL) {
		resp_error(out, "%s; no opening time is ahead",
		           csq_status_text(CSQ_ECLOSED));
		return;
	}
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	resp_error(out, "%s; it opens at %s (%" PRId64 ")",
	           csq_status_text(CSQ_ECLOSED), iso, opens_ms);
}

static void
command_result(void *arg, const struct csq_result *r)
{
	struct command_call *call = arg;
	struct client *c = call->c;
	struct multi_exec *x = call->exec;
	/* A rendered reply (INFO) answers whatever the engine said. */
	enum csq_status status = call->render != NULL ? CSQ_OK : r->status;
	struct evbuffer *out;
	size_t i;

	if (r->status == CSQ_EFULL && call->code == CSQ_OP_ENQUEUE)
		command_log_full(c->server, call->queue);
	if (c->state == CLIENT_DEAD)
		goto done;
	if (call->later && x != NULL)
		c->cur = call->buf;
	else if (call->later)
		client_slot_write(c, call->slot);
	out = client_output(c);
	if (call->render != NULL) {
		call->render(c, out, r, call->render_arg);
		server_hold_output(c->server, c);
		goto done;
	}
	if (r->status == CSQ_ECLOSED) {
		reply_closed(out, r->n);
		goto done;
	}
	if (r->status != CSQ_OK) {
		resp_error(out, "%s", csq_status_text(r->status));
		goto done;
	}
	switch (call->code) {
	case CSQ_OP_HEARTBEAT:
		reply_servicer(out, c->proto, &r->servicer);
		break;
	case CSQ_OP_PAUSE:
	case CSQ_OP_RESUME:
		resp_simple(out, "OK");
		break;
	case CSQ_OP_LOGOUT:
	case CSQ_OP_RELEASE:
	case CSQ_OP_ACCEPT:
	case CSQ_OP_DECLINE:
	case CSQ_OP_READY:
	case CSQ_OP_TOUCH:
	case CSQ_OP_LEAVE:
	case CSQ_OP_QLEN:
		resp_integer(out, r->n);
		break;
	case CSQ_OP_ENQUEUE:
		reply_user(out, c->proto, &r->user, 0);
		break;
	case CSQ_OP_WHERE:
	case CSQ_OP_TRANSFER: /* the user's new state, as WHERE's */
		reply_user(out, c->proto, &r->user, 1);
		break;
	case CSQ_OP_QUEUE:
		resp_array(out, (int64_t)r->nentries);
		for (i = 0; i < r->nentries; i++) {
			resp_array(out, 3);
			resp_bulk_str(out, r->entries[i].user);
			resp_integer(out, r->entries[i].tier);
			resp_integer(out, (int64_t)r->entries[i].waited_ms);
		}
		break;
	case CSQ_OP_SERVICERS:
		resp_array(out, (int64_t)r->nentries);
		for (i = 0; i < r->nentries; i++)
			reply_servicer_row(out, &r->servicers[i]);
		break;
	case CSQ_OP_QUEUES:
		resp_array(out, (int64_t)r->nentries);
		for (i = 0; i < r->nentries; i++)
			resp_bulk_str(out, r->queues[i].name);
		break;
	case CSQ_OP_ROOMS:
		resp_array(out, (int64_t)r->nentries);
		for (i = 0; i < r->nentries; i++)
			reply_room(out, c->proto, &r->rooms[i]);
		break;
	case CSQ_OP_STATS:
		reply_stats(out, c->proto, &r->stats);
		break;
	case CSQ_OP_QSTATS:
		reply_qstats(out, c->proto, &r->qstats[0]);
		break;
	case CSQ_OP_EXPIRE:
	case CSQ_OP_LIMITS:
	case CSQ_OP_REARM:
	case CSQ_OP_POLICY:
		break; /* the engine's own, never a client's */
	}
	server_hold_output(c->server, c);
done:
	free(call->render_arg);
	server_arm_deadline(c->server);
	if (call->later) {
		if (x != NULL)
			c->cur = c->out;
		else
			client_slot_done(c, call->slot);
		if (status != CSQ_OK)
			c->server->stats.errors_total++;
		metrics_command(c->server->metrics, call->name,
		                metrics_now_us() - call->start_us,
		                status != CSQ_OK);
		free(call);
	} else {
		call->answered = 1; /* command_call_queue frees it */
	}
	if (x != NULL)
		multi_exec_answered(x, status);
	client_resume(c);
	client_unref(c);
}

/*
 * QUEUES of every queue, in slices (issue 37): QUEUES_SLICE queues a turn
 * of the loop from a cursor (the last name of the slice before), other
 * clients served between two, and one answer with them all at the end,
 * as one engine call would give (the reply still comes in order: a call
 * answered later has its slot). The same consistency as a snapshot's
 * (protocol.md 11a); a single slice is one state, as before.
 */
static void op_init(struct csq_op *, enum csq_opcode, const char *id);

struct queues_walk {
	struct csq_engine *e;
	struct event *turn;
	csq_engine_cb *cb;
	void *arg;
	struct csq_queue_info *v;
	size_t n, cap;
	char after[CSQ_ID_MAX + 1];
};

static void queues_walk_step(struct queues_walk *);

static void
queues_walk_turn(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	queues_walk_step(arg);
}

static void
queues_walk_result(void *arg, const struct csq_result *r)
{
	static const struct timeval now = {0, 0};
	struct queues_walk *w = arg;
	struct csq_result all;

	if (r->status == CSQ_OK && r->nentries > 0) {
		if (w->n + r->nentries > w->cap) {
			w->cap = 2 * (w->n + r->nentries);
			w->v = csq_xrealloc(w->v, w->cap * sizeof(*w->v));
		}
		memcpy(w->v + w->n, r->queues, r->nentries * sizeof(*w->v));
		w->n += r->nentries;
	}
	if (r->status == CSQ_OK && r->next != NULL) {
		snprintf(w->after, sizeof(w->after), "%s", r->next);
		evtimer_add(w->turn, &now);
		return;
	}
	all = *r;
	all.queues = w->v;
	all.nentries = r->status == CSQ_OK ? w->n : 0;
	all.next = NULL;
	w->cb(w->arg, &all);
	event_free(w->turn);
	free(w->v);
	free(w);
}

static void
queues_walk_step(struct queues_walk *w)
{
	struct csq_op op;

	op_init(&op, CSQ_OP_QUEUES, NULL);
	op.after = w->after;
	op.count = QUEUES_SLICE;
	csq_engine_call(w->e, &op, queues_walk_result, w);
}

static void
queues_walk(struct server *s, csq_engine_cb *cb, void *arg)
{
	struct queues_walk *w = csq_xcalloc(1, sizeof(*w));

	w->e = s->engine;
	w->turn = evtimer_new(s->base, queues_walk_turn, w);
	w->cb = cb;
	w->arg = arg;
	queues_walk_step(w);
}

/*
 * Hands op to the engine; the reply is written when it answers. queue:
 * for ENQUEUE, the queue it names (or default), else NULL.
 */
static void
command_call_queue(struct client *c, const struct csq_op *op, const char *queue,
                   command_render_fn *render, void *render_arg)
{
	struct command_call *call;

	if (command_running.checking) {
		command_running.checked = 1;
		free(render_arg);
		return;
	}
	call = csq_xmalloc(sizeof(*call));
	call->c = c;
	call->code = op->code;
	call->answered = 0;
	call->later = 0;
	call->exec = command_running.exec;
	call->buf = client_output(c);
	call->render = render;
	call->render_arg = render_arg;
	if (queue != NULL)
		memcpy(call->queue, queue, strlen(queue) + 1);
	if (call->exec != NULL)
		multi_exec_called(call->exec);
	client_ref(c);
	c->inflight++;
	/* Inside MULTI, one state: the block runs in one go. */
	if (op->code == CSQ_OP_QUEUES && op->id == NULL && call->exec == NULL)
		queues_walk(c->server, command_result, call);
	else
		csq_engine_call(c->server->engine, op, command_result, call);
	if (call->answered) {
		free(call);
		return;
	}
	call->later = 1;
	if (call->exec == NULL)
		call->slot = client_slot_claim(c);
	call->start_us = command_running.start_us;
	call->name = command_running.name;
	command_running.later = 1;
}

static void
command_call(struct client *c, const struct csq_op *op)
{
	command_call_queue(c, op, NULL, NULL, NULL);
}

void
command_call_render(struct client *c, const struct csq_op *op,
                    command_render_fn *render, void *arg)
{
	command_call_queue(c, op, NULL, render, arg);
}

/*
 * A full queue is worth one warning, not one per refused user: at most one
 * line per queue per FULL_LOG_EVERY_MS. The table of last lines is small
 * and fixed; with more queues full at once than it holds, the oldest entry
 * gives way (and its queue may be logged again sooner).
 */
static void
command_log_full(struct server *s, const char *queue)
{
	static struct {
		char queue[CSQ_ID_MAX + 1];
		uint64_t at_ms;
	} logged[FULL_LOG_QUEUES];
	uint64_t now = server_now_ms();
	size_t i, slot = 0;

	for (i = 0; i < FULL_LOG_QUEUES; i++) {
		if (strcmp(logged[i].queue, queue) == 0) {
			if (now - logged[i].at_ms < FULL_LOG_EVERY_MS)
				return;
			slot = i;
			break;
		}
		if (logged[i].at_ms < logged[slot].at_ms)
			slot = i;
	}
	snprintf(logged[slot].queue, sizeof(logged[slot].queue), "%s", queue);
	logged[slot].at_ms = now;
	{
		/* The limit in force: the queue's policy's max_length when
		 * it has one (protocol-v2 section 4), else the global one. */
		struct log_kv kv[] = {
		    LOG_STR("queue", queue),
		    LOG_NUM("max_queue_length", s->cfg.limits.max_queue_length),
		};
		int p;

		for (p = 0; p < s->cfg.npolicies; p++)
			if (strcmp(s->cfg.policies[p].name, queue) == 0 &&
			    s->cfg.policies[p].has_max_length) {
				kv[1] = LOG_NUM("max_length",
				                s->cfg.policies[p].max_length);
				break;
			}
		log_kv(LOG_LVL_WARNING, "queue full", kv, 2);
	}
}

static void
op_init(struct csq_op *op, enum csq_opcode code, const char *id)
{
	memset(op, 0, sizeof(*op));
	op->code = code;
	op->id = id;
	op->ttl_s = -1;
}

/* Whether the first n of queues hold the id s (len bytes). */
static int
queue_listed(const char *const *queues, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(queues[i]) == len && memcmp(queues[i], s, len) == 0)
			return 1;
	return 0;
}

/*
 * QUEUES q1,q2,...: 1..32 distinct valid ids, a repeated one skipped (so
 * that "a,b,a" is "a,b" and counts 2). buf receives the ids NUL-separated;
 * queues[] points into it.
 */
static int
parse_queues(struct client *c, const char *s, size_t len,
             char buf[QUEUE_LIST_MAX], struct csq_heartbeat_args *hb)
{
	size_t start = 0, end, n = 0, off = 0;

	for (;;) {
		for (end = start; end < len && s[end] != ','; end++)
			;
		if (!csq_valid_id(s + start, end - start)) {
			resp_error(client_output(c), "%s",
			           csq_status_text(CSQ_EQUEUE));
			return -1;
		}
		if (queue_listed(hb->queues, n, s + start, end - start))
			goto next;
		if (n == CSQ_SERVICER_QUEUES) {
			resp_error(client_output(c),
			           "ERR too many queues (at most %d)",
			           CSQ_SERVICER_QUEUES);
			return -1;
		}
		memcpy(buf + off, s + start, end - start);
		buf[off + end - start] = '\0';
		hb->queues[n++] = buf + off;
		off += end - start + 1;
	next:
		if (end == len)
			break;
		start = end + 1;
	}
	hb->nqueues = n;
	hb->has_queues = 1;
	return 0;
}

/*
 * Options: "NAME value" pairs after the first arguments, names
 * case-insensitive, in any order, the last of a repeated name winning (as
 * Redis's SET does with EX). An integer option is checked against its
 * range; an id option against the id alphabet.
 */
/* OPT_PREFER takes two values: a servicer and seconds (1..max). */
/* OPT_SKILLS: a skill list (section 3c) of at most max entries. */
enum opt_kind { OPT_INT, OPT_ID, OPT_LIST, OPT_PREFER, OPT_SKILLS };

struct opt {
	const char *name;
	enum opt_kind kind;
	int64_t min, max;        /* OPT_INT */
	enum csq_status invalid; /* OPT_ID */
	int arg;                 /* index of its value; 0 when absent */
	int64_t num;
};

/* A skill list within max entries (a NUL inside is no list); replies
 * invalid skill list otherwise. */
static int
skills_arg(struct client *c, const struct resp_request *req, int i,
           uint32_t max)
{
	struct csq_skill_list l;

	if (strlen(req->argv[i]) != req->argvlen[i] ||
	    csq_skills_parse(req->argv[i], max, &l) != CSQ_OK) {
		resp_error(client_output(c), "%s", csq_status_text(CSQ_ESKILL));
		return -1;
	}
	return 0;
}

/* Replies the error and returns -1 when an option is bad. */
static int
parse_options(struct client *c, const struct resp_request *req, int first,
              struct opt *opts, size_t nopts)
{
	size_t k;
	int i, nvals;

	for (i = first; i < req->argc; i += 1 + nvals) {
		for (k = 0; k < nopts && !command_arg_is(req, i, opts[k].name);
		     k++)
			;
		nvals = k < nopts && opts[k].kind == OPT_PREFER ? 2 : 1;
		if (k == nopts || i + nvals >= req->argc) {
			resp_error(client_output(c), ERR_SYNTAX);
			return -1;
		}
		opts[k].arg = i + 1;
	}
	for (k = 0; k < nopts; k++) {
		if (opts[k].arg == 0)
			continue;
		if (opts[k].kind == OPT_INT &&
		    command_arg_int(c, req, opts[k].arg, opts[k].min,
		                    opts[k].max, &opts[k].num))
			return -1;
		if (opts[k].kind == OPT_ID &&
		    command_arg_id(c, req, opts[k].arg, opts[k].invalid))
			return -1;
		if (opts[k].kind == OPT_PREFER &&
		    (command_arg_id(c, req, opts[k].arg, CSQ_ESERVICER) ||
		     command_arg_int(c, req, opts[k].arg + 1, opts[k].min,
		                     opts[k].max, &opts[k].num)))
			return -1;
		if (opts[k].kind == OPT_SKILLS &&
		    skills_arg(c, req, opts[k].arg, (uint32_t)opts[k].max))
			return -1;
	}
	return 0;
}

/* PREFER <servicer> <seconds>, when given, into p. */
static void
prefer_option(const struct resp_request *req, const struct opt *o,
              struct csq_prefer_args *p)
{
	memset(p, 0, sizeof(*p));
	if (o->arg == 0)
		return;
	p->has_prefer = 1;
	p->servicer = req->argv[o->arg];
	p->seconds = (uint32_t)o->num;
}

void
cmd_heartbeat(struct client *c, const struct resp_request *req)
{
	struct opt opts[] = {
	    {"capacity", OPT_INT, 1, CSQ_CAPACITY_MAX, CSQ_OK, 0, 0},
	    {"queues", OPT_LIST, 0, 0, CSQ_OK, 0, 0},
	    {"ttl", OPT_INT, 1, CSQ_TTL_MAX, CSQ_OK, 0, 0},
	    {"offer", OPT_INT, 0, CSQ_OFFER_MAX, CSQ_OK, 0, 0},
	    {"wrapup", OPT_INT, 0, CSQ_WRAPUP_MAX, CSQ_OK, 0, 0},
	    {"skills", OPT_SKILLS, 0, CSQ_SERVICER_SKILLS, CSQ_OK, 0, 0},
	};
	char queues[QUEUE_LIST_MAX];
	struct csq_op op;
	struct csq_heartbeat_args *hb = &op.heartbeat;

	if (command_arg_id(c, req, 1, CSQ_ESERVICER) ||
	    parse_options(c, req, 2, opts, sizeof(opts) / sizeof(opts[0])))
		return;
	op_init(&op, CSQ_OP_HEARTBEAT, req->argv[1]);
	hb->servicer = req->argv[1];
	hb->has_capacity = opts[0].arg != 0;
	hb->capacity = (uint32_t)opts[0].num;
	if (opts[1].arg && parse_queues(c, req->argv[opts[1].arg],
	                                req->argvlen[opts[1].arg], queues, hb))
		return;
	hb->has_ttl = opts[2].arg != 0;
	hb->ttl_s = (uint32_t)opts[2].num;
	hb->has_offer = opts[3].arg != 0;
	hb->offer_s = (uint32_t)opts[3].num;
	hb->has_wrapup = opts[4].arg != 0;
	hb->wrapup_s = (uint32_t)opts[4].num;
	hb->has_skills = opts[5].arg != 0;
	hb->skills = opts[5].arg ? req->argv[opts[5].arg] : NULL;
	command_call(c, &op);
}

/* PAUSE, RESUME, LOGOUT: one servicer id. */
static void
servicer_command(struct client *c, const struct resp_request *req,
                 enum csq_opcode code)
{
	struct csq_op op;

	if (command_arg_id(c, req, 1, CSQ_ESERVICER))
		return;
	op_init(&op, code, req->argv[1]);
	command_call(c, &op);
}

void
cmd_pause(struct client *c, const struct resp_request *req)
{
	servicer_command(c, req, CSQ_OP_PAUSE);
}

void
cmd_resume(struct client *c, const struct resp_request *req)
{
	servicer_command(c, req, CSQ_OP_RESUME);
}

void
cmd_logout(struct client *c, const struct resp_request *req)
{
	servicer_command(c, req, CSQ_OP_LOGOUT);
}

/*
 * Room argument i: a malformed one is an error; so is, after the checks
 * that come between (the queue of argument queue, else 0), an index no
 * servicer has, answered here so that the engine (and the journal, whose
 * records hold CSQ_ROOM_MAX bytes of room id) only sees indexes of at most
 * three digits. Replies the error and returns -1.
 */
static int
room_arg(struct client *c, const struct resp_request *req, int i, int queue)
{
	char sid[CSQ_ID_MAX + 1];
	uint32_t idx;

	if (csq_parse_room(req->argv[i], req->argvlen[i], sid, &idx) != 0) {
		resp_error(client_output(c), "%s", csq_status_text(CSQ_EROOM));
		return -1;
	}
	if (queue > 0 && command_arg_id(c, req, queue, CSQ_EQUEUE))
		return -1;
	if (idx >= CSQ_CAPACITY_MAX) {
		resp_error(client_output(c), "%s",
		           csq_status_text(CSQ_ENOTFOUND));
		return -1;
	}
	return 0;
}

/* RELEASE, ACCEPT, DECLINE, READY: one room. */
static void
room_command(struct client *c, const struct resp_request *req,
             enum csq_opcode code)
{
	struct csq_op op;

	if (room_arg(c, req, 1, 0))
		return;
	op_init(&op, code, req->argv[1]);
	command_call(c, &op);
}

void
cmd_release(struct client *c, const struct resp_request *req)
{
	room_command(c, req, CSQ_OP_RELEASE);
}

void
cmd_accept(struct client *c, const struct resp_request *req)
{
	room_command(c, req, CSQ_OP_ACCEPT);
}

void
cmd_decline(struct client *c, const struct resp_request *req)
{
	room_command(c, req, CSQ_OP_DECLINE);
}

void
cmd_ready(struct client *c, const struct resp_request *req)
{
	room_command(c, req, CSQ_OP_READY);
}

/*
 * TRANSFER room queue [PREFER servicer seconds]: the preference window
 * opens in the target queue as ENQUEUE's does (protocol-v2 sections 1a
 * and 5).
 */
void
cmd_transfer(struct client *c, const struct resp_request *req)
{
	struct opt opts[] = {
	    {"prefer", OPT_PREFER, 1, CSQ_PREFER_MAX, CSQ_OK, 0, 0},
	    {"needs", OPT_SKILLS, 0, CSQ_USER_NEEDS, CSQ_OK, 0, 0},
	};
	struct csq_op op;

	/* The options first, as before PREFER any word after the queue
	 * was: then the room's form and the queue's. */
	if (parse_options(c, req, 3, opts, 2) || room_arg(c, req, 1, 2))
		return;
	op_init(&op, CSQ_OP_TRANSFER, req->argv[1]);
	op.transfer.room = req->argv[1];
	op.transfer.queue = req->argv[2];
	prefer_option(req, &opts[0], &op.transfer.prefer);
	op.transfer.has_needs = opts[1].arg != 0;
	op.transfer.needs = opts[1].arg ? req->argv[opts[1].arg] : NULL;
	command_call(c, &op);
}

void
cmd_enqueue(struct client *c, const struct resp_request *req)
{
	struct opt opts[] = {
	    {"queue", OPT_ID, 0, 0, CSQ_EQUEUE, 0, 0},
	    {"tier", OPT_INT, 0, c->server->cfg.limits.max_tier, CSQ_OK, 0, 0},
	    {"ttl", OPT_INT, 0, CSQ_TTL_MAX, CSQ_OK, 0, 0},
	    {"prefer", OPT_PREFER, 1, CSQ_PREFER_MAX, CSQ_OK, 0, 0},
	    {"needs", OPT_SKILLS, 0, CSQ_USER_NEEDS, CSQ_OK, 0, 0},
	};
	struct csq_op op;
	struct csq_enqueue_args *a = &op.enqueue;

	if (command_arg_id(c, req, 1, CSQ_EUSER) ||
	    parse_options(c, req, 2, opts, sizeof(opts) / sizeof(opts[0])))
		return;
	op_init(&op, CSQ_OP_ENQUEUE, req->argv[1]);
	a->user = req->argv[1];
	a->has_queue = opts[0].arg != 0;
	a->queue = opts[0].arg ? req->argv[opts[0].arg] : NULL;
	a->has_tier = opts[1].arg != 0;
	a->tier = (uint32_t)opts[1].num;
	a->has_ttl = opts[2].arg != 0;
	a->ttl_s = (uint32_t)opts[2].num;
	prefer_option(req, &opts[3], &a->prefer);
	a->has_needs = opts[4].arg != 0;
	a->needs = opts[4].arg ? req->argv[opts[4].arg] : NULL;
	/* The queue, for a -FULL's warning: only a new user without QUEUE
	 * can find "default" full; one already waiting stays where it is. */
	command_call_queue(c, &op, a->has_queue ? a->queue : CSQ_DEFAULT_QUEUE,
	                   NULL, NULL);
}

void
cmd_touch(struct client *c, const struct resp_request *req)
{
	struct opt ttl = {"ttl", OPT_INT, 0, CSQ_TTL_MAX, CSQ_OK, 0, 0};
	struct csq_op op;

	if (command_arg_id(c, req, 1, CSQ_EUSER) ||
	    parse_options(c, req, 2, &ttl, 1))
		return;
	op_init(&op, CSQ_OP_TOUCH, req->argv[1]);
	if (ttl.arg)
		op.ttl_s = ttl.num;
	command_call(c, &op);
}

static void
user_command(struct client *c, const struct resp_request *req,
             enum csq_opcode code)
{
	struct csq_op op;

	if (command_arg_id(c, req, 1, CSQ_EUSER))
		return;
	op_init(&op, code, req->argv[1]);
	command_call(c, &op);
}

void
cmd_leave(struct client *c, const struct resp_request *req)
{
	user_command(c, req, CSQ_OP_LEAVE);
}

void
cmd_where(struct client *c, const struct resp_request *req)
{
	user_command(c, req, CSQ_OP_WHERE);
}

void
cmd_queue(struct client *c, const struct resp_request *req)
{
	struct csq_op op;
	int64_t v;

	if (req->argc > 4) {
		command_arg_arity_error(client_output(c), "queue");
		return;
	}
	if (command_arg_id(c, req, 1, CSQ_EQUEUE))
		return;
	op_init(&op, CSQ_OP_QUEUE, req->argv[1]);
	op.count = CSQ_RANGE_COUNT_DEF;
	if (req->argc > 2) {
		if (command_arg_int(c, req, 2, 0, INT64_MAX, &v))
			return;
		op.offset = (uint64_t)v;
	}
	if (req->argc > 3) {
		if (command_arg_int(c, req, 3, 0, CSQ_RANGE_COUNT_MAX, &v))
			return;
		op.count = (uint32_t)v;
	}
	command_call(c, &op);
}

void
cmd_qlen(struct client *c, const struct resp_request *req)
{
	struct csq_op op;

	if (command_arg_id(c, req, 1, CSQ_EQUEUE))
		return;
	op_init(&op, CSQ_OP_QLEN, req->argv[1]);
	command_call(c, &op);
}

void
cmd_servicers(struct client *c, const struct resp_request *req)
{
	struct csq_op op;

	(void)req;
	op_init(&op, CSQ_OP_SERVICERS, NULL);
	command_call(c, &op);
}

void
cmd_queues(struct client *c, const struct resp_request *req)
{
	struct csq_op op;

	(void)req;
	op_init(&op, CSQ_OP_QUEUES, NULL);
	command_call(c, &op);
}

void
cmd_rooms(struct client *c, const struct resp_request *req)
{
	struct csq_op op;

	if (command_arg_id(c, req, 1, CSQ_ESERVICER))
		return;
	op_init(&op, CSQ_OP_ROOMS, req->argv[1]);
	command_call(c, &op);
}

void
cmd_qstats(struct client *c, const struct resp_request *req)
{
	struct csq_op op;

	if (command_arg_id(c, req, 1, CSQ_EQUEUE))
		return;
	op_init(&op, CSQ_OP_QSTATS, req->argv[1]);
	command_call(c, &op);
}

void
cmd_stats(struct client *c, const struct resp_request *req)
{
	struct csq_op op;

	(void)req;
	op_init(&op, CSQ_OP_STATS, NULL);
	command_call(c, &op);
}

void
command_queue_begin(const char *name, uint64_t start_us)
{
	command_running.name = name;
	command_running.start_us = start_us;
	command_running.later = 0;
}

int
command_queue_later(void)
{
	return command_running.later;
}

void
command_queue_check(int on)
{
	command_running.checking = on;
	command_running.checked = 0;
}

int
command_queue_checked(void)
{
	return command_running.checked;
}

void
command_queue_exec(struct multi_exec *x)
{
	command_running.exec = x;
}
