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
#include <sys/queue.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "client.h"
#include "command_arg.h"
#include "engine.h"
#include "log.h"
#include "metrics.h"
#include "multi.h"
#include "op_args.h"
#include "op_reply.h"
#include "resp.h"
#include "server.h"
#include "util.h"

#define FULL_LOG_QUEUES 64   /* queues whose last "full" line is kept */
#define QUEUES_SLICE    1000 /* QUEUES: queues per slice */
#define SERVICERS_SLICE 1000 /* SERVICERS: servicers per slice */
/* A QUEUES or SERVICERS of more than one slice leaves megabytes free in
 * the heap (a slice of servicers as libcsq gives them: about 4 MB), which
 * glibc keeps: the heap is trimmed once such replies have stopped for
 * this long, as after the HTTP views' large answers (http_cache.c). */
#define VIEW_TRIM_MS      2000
#define FULL_LOG_EVERY_MS 60000 /* at most one "full" line per queue */

/* The replies' sink of a client: RESP into its buffer (op_reply.h), in
 * one piece (resp_buf). */
struct resp_sink {
	struct resp_buf b;
	int proto;
};

static void
sink_map(void *arg, int64_t pairs)
{
	struct resp_sink *k = arg;

	resp_buf_map(&k->b, k->proto, pairs);
}

static void
sink_array(void *arg, int64_t n)
{
	resp_buf_array(&((struct resp_sink *)arg)->b, n);
}

static void
sink_bulk(void *arg, const char *s, size_t len)
{
	resp_buf_bulk(&((struct resp_sink *)arg)->b, s, len);
}

static void
sink_integer(void *arg, int64_t v)
{
	resp_buf_integer(&((struct resp_sink *)arg)->b, v);
}

static void
sink_simple(void *arg, const char *s)
{
	resp_buf_simple(&((struct resp_sink *)arg)->b, s);
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
	{
		struct resp_sink k;
		const struct op_reply o = {&k,           sink_map,
		                           sink_array,   sink_bulk,
		                           sink_integer, sink_simple};

		resp_buf_init(&k.b, out);
		k.proto = c->proto;
		op_reply_write(&o, call->code, r);
		resp_buf_flush(&k.b);
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

static void op_init(struct csq_op *, enum csq_opcode, const char *id);

/*
 * QUEUES and SERVICERS in slices (issue 37): a slice is QUEUES_SLICE
 * queues or SERVICERS_SLICE servicers from a cursor (the last name or id
 * of the slice before; libcsq keeps both in ordered sets, so no sort).
 * Each slice's rows are written as it comes, into the reply's body,
 * which counts against max_output_memory as the client's output; the
 * array's length, known once the last slice has come, goes before it,
 * and the reply comes in its turn among the connection's replies. The
 * walks of every client, QUEUES and SERVICERS alike, take turns, one
 * slice at a time in all, the next at the loop's turn after the answer
 * (the memory engine makes it in that turn; csq.so in one call of its
 * own, redis_batch.c, and csqd reads and writes one slice's answer a
 * turn), so that another client waits for one slice at most, however
 * many ask. Each row is as of its own slice (protocol.md, QUEUES and
 * SERVICERS; the same promise as a snapshot's, 11a).
 */
struct view_walk {
	TAILQ_ENTRY(view_walk) entry;
	struct command_call *call;
	enum csq_opcode code;  /* CSQ_OP_QUEUES or CSQ_OP_SERVICERS */
	struct evbuffer *body; /* the rows so far */
	int64_t n;             /* and how many */
	int slices;            /* asked so far */
	char after[CSQ_ID_MAX + 1];
};

static struct {
	TAILQ_HEAD(, view_walk) ready; /* each waits for its turn */
	struct event *turn;
	int asking; /* a slice's call is not answered yet */
} view_walks = {TAILQ_HEAD_INITIALIZER(view_walks.ready), NULL, 0};

/* The next turn, unless a slice is being made or none is waiting. */
static void
view_walk_arm(void)
{
	static const struct timeval now = {0, 0};

	if (!view_walks.asking && !TAILQ_EMPTY(&view_walks.ready) &&
	    !evtimer_pending(view_walks.turn, NULL))
		evtimer_add(view_walks.turn, &now);
}

static void view_walk_result(void *, const struct csq_result *);

/* The walk's last answer: the array, or the error that ended it. */
static void
view_walk_render(struct client *c, struct evbuffer *out,
                 const struct csq_result *r, void *arg)
{
	struct view_walk *w = arg;

	(void)c, (void)r;
	resp_array(out, w->n);
	evbuffer_add_buffer(out, w->body);
	evbuffer_free(w->body);
}

static void
view_walk_end(struct view_walk *w, const struct csq_result *r)
{
	struct command_call *call = w->call;
	struct client *c = call->c;
	struct timeval trim = {VIEW_TRIM_MS / 1000,
	                       (VIEW_TRIM_MS % 1000) * 1000};

	client_output_making(c, 0);
	if (w->slices > 1 && c->server->trim_ev != NULL)
		evtimer_add(c->server->trim_ev, &trim); /* again, if it was */
	if (r->status != CSQ_OK || c->state == CLIENT_DEAD ||
	    c->killed != NULL) {
		evbuffer_free(w->body);
		free(w);
		command_result(call, r);
		return;
	}
	call->render = view_walk_render;
	call->render_arg = w; /* freed after the render */
	command_result(call, r);
}

/* The next walk's slice: one a turn. */
static void
view_walk_turn(evutil_socket_t fd, short what, void *arg)
{
	struct view_walk *w = TAILQ_FIRST(&view_walks.ready);
	struct client *c;
	struct csq_result gone;
	struct csq_op op;

	(void)fd, (void)what, (void)arg;
	if (w == NULL || view_walks.asking)
		return;
	TAILQ_REMOVE(&view_walks.ready, w, entry);
	c = w->call->c;
	if (c->state == CLIENT_DEAD || c->killed != NULL) {
		/* Nobody to answer: no more slices. */
		memset(&gone, 0, sizeof(gone));
		gone.status = CSQ_ETRYAGAIN;
		view_walk_end(w, &gone);
		view_walk_arm();
		return;
	}
	op_init(&op, w->code, NULL);
	op.after = w->after;
	op.count = w->code == CSQ_OP_QUEUES ? QUEUES_SLICE : SERVICERS_SLICE;
	view_walks.asking = 1;
	w->slices++;
	csq_engine_call(c->server->engine, &op, view_walk_result, w);
}

/* w's turn comes after every walk waiting now. */
static void
view_walk_queue(struct view_walk *w)
{
	TAILQ_INSERT_TAIL(&view_walks.ready, w, entry);
	if (view_walks.turn == NULL)
		view_walks.turn =
		    evtimer_new(w->call->c->server->base, view_walk_turn, NULL);
	view_walk_arm();
}

static void
view_walk_result(void *arg, const struct csq_result *r)
{
	struct view_walk *w = arg;
	struct client *c = w->call->c;

	view_walks.asking = 0;
	if (r->status == CSQ_OK && r->nentries > 0) {
		struct resp_sink k;
		size_t i;

		resp_buf_init(&k.b, w->body);
		k.proto = c->proto;

		if (w->code == CSQ_OP_QUEUES)
			for (i = 0; i < r->nentries; i++)
				resp_bulk(w->body, r->queues[i].name,
				          strlen(r->queues[i].name));
		else {
			const struct op_reply o = {&k,           sink_map,
			                           sink_array,   sink_bulk,
			                           sink_integer, sink_simple};

			op_reply_servicer_rows(&o, r);
			resp_buf_flush(&k.b);
		}
		w->n += (int64_t)r->nentries;
		client_output_making(c, evbuffer_get_length(w->body));
	}
	if (r->status == CSQ_OK && r->next != NULL) {
		snprintf(w->after, sizeof(w->after), "%s", r->next);
		view_walk_queue(w);
		return;
	}
	view_walk_end(w, r);
	view_walk_arm();
}

static void
view_walk(struct command_call *call, enum csq_opcode code)
{
	struct view_walk *w = csq_xcalloc(1, sizeof(*w));

	w->call = call;
	w->code = code;
	if ((w->body = evbuffer_new()) == NULL)
		fatalx("out of memory");
	view_walk_queue(w);
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
	if (((op->code == CSQ_OP_QUEUES && op->id == NULL) ||
	     op->code == CSQ_OP_SERVICERS) &&
	    call->exec == NULL)
		view_walk(call, op->code);
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

void
command_queue_op(struct client *c, const struct resp_request *req,
                 enum csq_opcode code)
{
	struct op_args_buf buf;
	struct csq_op op;
	const char *err;

	err =
	    op_args_parse(code, req, c->server->cfg.limits.max_tier, &op, &buf);
	if (err != NULL) {
		resp_error(client_output(c), "%s", err);
		return;
	}
	/* ENQUEUE's queue, for a -FULL's warning: only a new user without
	 * QUEUE can find "default" full; one already waiting stays where it
	 * is. */
	command_call_queue(c, &op,
	                   code != CSQ_OP_ENQUEUE ? NULL
	                   : op.enqueue.has_queue ? op.enqueue.queue
	                                          : CSQ_DEFAULT_QUEUE,
	                   NULL, NULL);
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
