/*
 * Commands. The dispatcher checks, in Redis's order, authentication, the
 * name, the arity and the subscribe-mode context; handlers check their
 * arguments completely before anything changes, so that every bad request
 * gets one clear error and changes nothing.
 */
#include "command.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "client.h"
#include "engine.h"
#include "log.h"
#include "metrics.h"
#include "pubsub.h"
#include "resp.h"
#include "server.h"
#include "util.h"

#define CMD_NOAUTH  0x1 /* allowed before AUTH */
#define CMD_PUBSUB  0x2 /* allowed in RESP2's subscribe mode */
#define CMD_ENGINE  0x4 /* answered by the engine, in turn: may pipeline */
#define CMD_SUBCMDS 0x8 /* a container: argv[1] names a subcommand */

#define NAME_ECHO_MAX    128 /* bytes of an unknown command echoed back */
#define CLIENT_NAME_MAX  256
#define INFO_MAX         2048
#define INT64_DIGITS_MAX 20
#define QUEUE_LIST_MAX   (CSQ_SERVICER_QUEUES * (CSQ_ID_MAX + 1))

#define FULL_LOG_QUEUES   64    /* queues whose last "full" line is kept */
#define FULL_LOG_EVERY_MS 60000 /* at most one "full" line per queue */

#define ERR_SYNTAX "ERR syntax error"
#define ERR_RANGE  "ERR value is not an integer or out of range"
/* The Redis whose commands csqd answers like, for clients that look
 * (INFO's redis_version, HELLO's version). */
#define CSQ_REDIS_VERSION "7.0.0"

typedef void command_proc(struct client *, const struct resp_request *);

struct command {
	const char *name; /* lower case, as errors quote it */
	int arity;        /* > 0: exactly; < 0: at least -arity */
	int flags;
	command_proc *proc;
};

/* Argument helpers. */

/* Redis's arity error, for too few arguments, or for more than a
 * command's positional ones when it has no options beside (as LRANGE). */
static void
reply_arity(struct evbuffer *out, const char *name)
{
	resp_error(out, "ERR wrong number of arguments for '%s' command", name);
}

/* argc against an arity in Redis's way: n exactly, or -n at least. */
static int
arity_ok(int arity, int argc)
{
	return arity > 0 ? argc == arity : argc >= -arity;
}

/* How much of argument i an error quotes back: at most NAME_ECHO_MAX. */
static int
echo_len(const struct resp_request *req, int i)
{
	return (int)(req->argvlen[i] > NAME_ECHO_MAX ? NAME_ECHO_MAX
	                                             : req->argvlen[i]);
}

static int
arg_is(const struct resp_request *req, int i, const char *word)
{
	return req->argvlen[i] == strlen(word) &&
	       strncasecmp(req->argv[i], word, req->argvlen[i]) == 0;
}

/* Strict decimal as Redis parses it: no sign but '-', no leading zero. */
static int
parse_int(const char *s, size_t len, int64_t *out)
{
	uint64_t v = 0, limit;
	size_t i = 0;
	int neg = 0;

	if (len == 0 || len > INT64_DIGITS_MAX)
		return -1;
	if (s[0] == '-') {
		neg = 1;
		if (++i == len)
			return -1;
	}
	if (s[i] == '0' && (len - i > 1 || neg))
		return -1;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (limit - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* An integer argument within [min, max]; replies the error otherwise. */
static int
arg_int(struct client *c, const struct resp_request *req, int i, int64_t min,
        int64_t max, int64_t *out)
{
	if (parse_int(req->argv[i], req->argvlen[i], out) != 0 || *out < min ||
	    *out > max) {
		resp_error(client_output(c), ERR_RANGE);
		return -1;
	}
	return 0;
}

static int
arg_id(struct client *c, const struct resp_request *req, int i,
       enum csq_status invalid)
{
	if (csq_valid_id(req->argv[i], req->argvlen[i]))
		return 0;
	resp_error(client_output(c), "%s", csq_status_text(invalid));
	return -1;
}

/* Engine calls and their replies. */

static void
reply_servicer(struct evbuffer *out, int proto,
               const struct csq_servicer_info *s)
{
	resp_map(out, proto, 5);
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
}

/* ENQUEUE's reply, or WHERE's with detail (tier, waited_ms, since_ms). */
static void
reply_user(struct evbuffer *out, int proto, const struct csq_user_info *u,
           int detail)
{
	switch (u->state) {
	case CSQ_USER_NONE:
		resp_map(out, proto, 1);
		resp_bulk_str(out, "state");
		resp_bulk_str(out, "none");
		return;
	case CSQ_USER_WAITING:
		resp_map(out, proto, detail ? 5 : 3);
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
		return;
	case CSQ_USER_ASSIGNED:
		resp_map(out, proto, detail ? 5 : 4);
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
		return;
	}
}

static void
reply_stats(struct evbuffer *out, int proto, const struct csq_stats *st)
{
	const struct {
		const char *name;
		uint64_t value;
	} f[] = {
	    {"waiting", st->waiting},
	    {"servicers", st->servicers},
	    {"rooms_busy", st->rooms_busy},
	    {"rooms_free", st->rooms_free},
	    {"enqueued_total", st->enqueued_total},
	    {"matched_total", st->matched_total},
	    {"abandoned_total", st->abandoned_total},
	    {"requeued_total", st->requeued_total},
	    {"servicers_lost_total", st->servicers_lost_total},
	};
	size_t i, n = sizeof(f) / sizeof(f[0]);

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
	uint64_t start_us;          /* later: when the command came */
	const char *name;           /* later: the command, for its metrics */
	char queue[CSQ_ID_MAX + 1]; /* ENQUEUE: for a -FULL's warning */
};

/* The command running now: its start and name, for an answer that comes
 * later; and whether it left a call in flight (then it is measured when
 * the answer comes, not when it returns). */
static struct {
	const char *name;
	uint64_t start_us;
	int later;
} command_running;

static void command_log_full(struct server *, const char *queue);

static void
command_result(void *arg, const struct csq_result *r)
{
	struct command_call *call = arg;
	struct client *c = call->c;
	struct evbuffer *out;
	size_t i;

	if (r->status == CSQ_EFULL && call->code == CSQ_OP_ENQUEUE)
		command_log_full(c->server, call->queue);
	if (c->state == CLIENT_DEAD)
		goto done;
	if (call->later)
		client_slot_write(c, call->slot);
	out = client_output(c);
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
	case CSQ_OP_TOUCH:
	case CSQ_OP_LEAVE:
	case CSQ_OP_QLEN:
		resp_integer(out, r->n);
		break;
	case CSQ_OP_ENQUEUE:
		reply_user(out, c->proto, &r->user, 0);
		break;
	case CSQ_OP_WHERE:
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
		for (i = 0; i < r->nentries; i++) {
			const struct csq_servicer_info *s = &r->servicers[i];

			resp_array(out, 5);
			resp_bulk_str(out, s->id);
			resp_bulk_str(out, s->status == CSQ_SERVICER_READY
			                       ? "ready"
			                       : "paused");
			resp_integer(out, s->capacity);
			resp_integer(out, s->active);
			resp_integer(out, (int64_t)s->idle_ms);
		}
		break;
	case CSQ_OP_STATS:
		reply_stats(out, c->proto, &r->stats);
		break;
	case CSQ_OP_EXPIRE:
	case CSQ_OP_LIMITS:
	case CSQ_OP_REARM:
		break; /* the engine's own, never a client's */
	}
	server_hold_output(c->server, c);
done:
	server_arm_deadline(c->server);
	if (call->later) {
		client_slot_done(c, call->slot);
		if (r->status != CSQ_OK)
			c->server->stats.errors_total++;
		metrics_command(c->server->metrics, call->name,
		                metrics_now_us() - call->start_us,
		                r->status != CSQ_OK);
		free(call);
	} else {
		call->answered = 1; /* command_call_queue frees it */
	}
	client_resume(c);
	client_unref(c);
}

/*
 * Hands op to the engine; the reply is written when it answers. queue:
 * for ENQUEUE, the queue it names (or default), else NULL.
 */
static void
command_call_queue(struct client *c, const struct csq_op *op, const char *queue)
{
	struct command_call *call = csq_xmalloc(sizeof(*call));

	call->c = c;
	call->code = op->code;
	call->answered = 0;
	call->later = 0;
	if (queue != NULL)
		memcpy(call->queue, queue, strlen(queue) + 1);
	client_ref(c);
	c->inflight++;
	csq_engine_call(c->server->engine, op, command_result, call);
	if (call->answered) {
		free(call);
		return;
	}
	call->later = 1;
	call->slot = client_slot_claim(c);
	call->start_us = command_running.start_us;
	call->name = command_running.name;
	command_running.later = 1;
}

static void
command_call(struct client *c, const struct csq_op *op)
{
	command_call_queue(c, op, NULL);
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
	log_warnx("queue %s full (%llu waiting)", queue,
	          (unsigned long long)s->cfg.limits.max_queue_length);
}

static void
op_init(struct csq_op *op, enum csq_opcode code, const char *id)
{
	memset(op, 0, sizeof(*op));
	op->code = code;
	op->id = id;
	op->ttl_s = -1;
}

/* Servicers. */

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
enum opt_kind { OPT_INT, OPT_ID, OPT_LIST };

struct opt {
	const char *name;
	enum opt_kind kind;
	int64_t min, max;        /* OPT_INT */
	enum csq_status invalid; /* OPT_ID */
	int arg;                 /* index of its value; 0 when absent */
	int64_t num;
};

/* Replies the error and returns -1 when an option is bad. */
static int
parse_options(struct client *c, const struct resp_request *req, int first,
              struct opt *opts, size_t nopts)
{
	size_t k;
	int i;

	for (i = first; i < req->argc; i += 2) {
		for (k = 0; k < nopts && !arg_is(req, i, opts[k].name); k++)
			;
		if (k == nopts || i + 1 == req->argc) {
			resp_error(client_output(c), ERR_SYNTAX);
			return -1;
		}
		opts[k].arg = i + 1;
	}
	for (k = 0; k < nopts; k++) {
		if (opts[k].arg == 0)
			continue;
		if (opts[k].kind == OPT_INT &&
		    arg_int(c, req, opts[k].arg, opts[k].min, opts[k].max,
		            &opts[k].num))
			return -1;
		if (opts[k].kind == OPT_ID &&
		    arg_id(c, req, opts[k].arg, opts[k].invalid))
			return -1;
	}
	return 0;
}

static void
cmd_heartbeat(struct client *c, const struct resp_request *req)
{
	struct opt opts[] = {
	    {"capacity", OPT_INT, 1, CSQ_CAPACITY_MAX, CSQ_OK, 0, 0},
	    {"queues", OPT_LIST, 0, 0, CSQ_OK, 0, 0},
	    {"ttl", OPT_INT, 1, CSQ_TTL_MAX, CSQ_OK, 0, 0},
	};
	char queues[QUEUE_LIST_MAX];
	struct csq_op op;
	struct csq_heartbeat_args *hb = &op.heartbeat;

	if (arg_id(c, req, 1, CSQ_ESERVICER) ||
	    parse_options(c, req, 2, opts, 3))
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
	command_call(c, &op);
}

/* PAUSE, RESUME, LOGOUT: one servicer id. */
static void
servicer_command(struct client *c, const struct resp_request *req,
                 enum csq_opcode code)
{
	struct csq_op op;

	if (arg_id(c, req, 1, CSQ_ESERVICER))
		return;
	op_init(&op, code, req->argv[1]);
	command_call(c, &op);
}

static void
cmd_pause(struct client *c, const struct resp_request *req)
{
	servicer_command(c, req, CSQ_OP_PAUSE);
}

static void
cmd_resume(struct client *c, const struct resp_request *req)
{
	servicer_command(c, req, CSQ_OP_RESUME);
}

static void
cmd_logout(struct client *c, const struct resp_request *req)
{
	servicer_command(c, req, CSQ_OP_LOGOUT);
}

static void
cmd_release(struct client *c, const struct resp_request *req)
{
	char sid[CSQ_ID_MAX + 1];
	struct csq_op op;
	uint32_t idx;

	if (csq_parse_room(req->argv[1], req->argvlen[1], sid, &idx) != 0) {
		resp_error(client_output(c), "%s", csq_status_text(CSQ_EROOM));
		return;
	}
	/* No servicer has such a room: answered here, so that the engine
	 * (and the journal, whose records hold CSQ_ROOM_MAX bytes of room id)
	 * only sees indexes of at most three digits. */
	if (idx >= CSQ_CAPACITY_MAX) {
		resp_error(client_output(c), "%s",
		           csq_status_text(CSQ_ENOTFOUND));
		return;
	}
	op_init(&op, CSQ_OP_RELEASE, req->argv[1]);
	command_call(c, &op);
}

/* Users. */

static void
cmd_enqueue(struct client *c, const struct resp_request *req)
{
	struct opt opts[] = {
	    {"queue", OPT_ID, 0, 0, CSQ_EQUEUE, 0, 0},
	    {"tier", OPT_INT, 0, c->server->cfg.limits.max_tier, CSQ_OK, 0, 0},
	    {"ttl", OPT_INT, 0, CSQ_TTL_MAX, CSQ_OK, 0, 0},
	};
	struct csq_op op;
	struct csq_enqueue_args *a = &op.enqueue;

	if (arg_id(c, req, 1, CSQ_EUSER) || parse_options(c, req, 2, opts, 3))
		return;
	op_init(&op, CSQ_OP_ENQUEUE, req->argv[1]);
	a->user = req->argv[1];
	a->has_queue = opts[0].arg != 0;
	a->queue = opts[0].arg ? req->argv[opts[0].arg] : NULL;
	a->has_tier = opts[1].arg != 0;
	a->tier = (uint32_t)opts[1].num;
	a->has_ttl = opts[2].arg != 0;
	a->ttl_s = (uint32_t)opts[2].num;
	/* The queue, for a -FULL's warning: only a new user without QUEUE
	 * can find "default" full; one already waiting stays where it is. */
	command_call_queue(c, &op, a->has_queue ? a->queue : CSQ_DEFAULT_QUEUE);
}

static void
cmd_touch(struct client *c, const struct resp_request *req)
{
	struct opt ttl = {"ttl", OPT_INT, 0, CSQ_TTL_MAX, CSQ_OK, 0, 0};
	struct csq_op op;

	if (arg_id(c, req, 1, CSQ_EUSER) || parse_options(c, req, 2, &ttl, 1))
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

	if (arg_id(c, req, 1, CSQ_EUSER))
		return;
	op_init(&op, code, req->argv[1]);
	command_call(c, &op);
}

static void
cmd_leave(struct client *c, const struct resp_request *req)
{
	user_command(c, req, CSQ_OP_LEAVE);
}

static void
cmd_where(struct client *c, const struct resp_request *req)
{
	user_command(c, req, CSQ_OP_WHERE);
}

/* Admin. */

static void
cmd_queue(struct client *c, const struct resp_request *req)
{
	struct csq_op op;
	int64_t v;

	if (req->argc > 4) {
		reply_arity(client_output(c), "queue");
		return;
	}
	if (arg_id(c, req, 1, CSQ_EQUEUE))
		return;
	op_init(&op, CSQ_OP_QUEUE, req->argv[1]);
	op.count = CSQ_RANGE_COUNT_DEF;
	if (req->argc > 2) {
		if (arg_int(c, req, 2, 0, INT64_MAX, &v))
			return;
		op.offset = (uint64_t)v;
	}
	if (req->argc > 3) {
		if (arg_int(c, req, 3, 0, CSQ_RANGE_COUNT_MAX, &v))
			return;
		op.count = (uint32_t)v;
	}
	command_call(c, &op);
}

static void
cmd_qlen(struct client *c, const struct resp_request *req)
{
	struct csq_op op;

	if (arg_id(c, req, 1, CSQ_EQUEUE))
		return;
	op_init(&op, CSQ_OP_QLEN, req->argv[1]);
	command_call(c, &op);
}

static void
cmd_servicers(struct client *c, const struct resp_request *req)
{
	struct csq_op op;

	(void)req;
	op_init(&op, CSQ_OP_SERVICERS, NULL);
	command_call(c, &op);
}

static void
cmd_stats(struct client *c, const struct resp_request *req)
{
	struct csq_op op;

	(void)req;
	op_init(&op, CSQ_OP_STATS, NULL);
	command_call(c, &op);
}

/* Connection and Redis-client compatibility. */

static void
cmd_ping(struct client *c, const struct resp_request *req)
{
	struct evbuffer *out = client_output(c);

	if (req->argc > 2) {
		reply_arity(out, "ping");
		return;
	}
	if (client_subscribed(c) && c->proto == 2) {
		resp_array(out, 2);
		resp_bulk_str(out, "pong");
		resp_bulk(out, req->argc == 2 ? req->argv[1] : "",
		          req->argc == 2 ? req->argvlen[1] : 0);
	} else if (req->argc == 2)
		resp_bulk(out, req->argv[1], req->argvlen[1]);
	else
		resp_simple(out, "PONG");
}

/* ECHO message, as Redis: the message back as a bulk string. */
static void
cmd_echo(struct client *c, const struct resp_request *req)
{
	resp_bulk(client_output(c), req->argv[1], req->argvlen[1]);
}

static void
cmd_quit(struct client *c, const struct resp_request *req)
{
	(void)req;
	resp_simple(client_output(c), "OK");
	client_close_after_reply(c);
}

/* Compares without an early exit, so timing tells nothing. */
static int
secret_equal(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b), i;
	unsigned char diff = alen != blen;

	for (i = 0; i < alen; i++)
		diff |= (unsigned char)a[i] ^ (unsigned char)b[i % (blen + 1)];
	return diff == 0;
}

/* AUTH's and HELLO's: argument user (0: none, the default user) and
 * argument pass; 0 and authenticated, or -1 with the error replied. */
static int
auth_user(struct client *c, const struct resp_request *req, int user, int pass)
{
	const char *want = c->server->cfg.requirepass;

	if ((user != 0 && !arg_is(req, user, "default")) ||
	    (want[0] != '\0' &&
	     !secret_equal(req->argv[pass], req->argvlen[pass], want))) {
		resp_error(client_output(c),
		           "WRONGPASS invalid username-password pair");
		return -1;
	}
	c->authed = 1;
	return 0;
}

static void
cmd_auth(struct client *c, const struct resp_request *req)
{
	const char *pass = c->server->cfg.requirepass;
	struct evbuffer *out = client_output(c);
	int p = req->argc - 1;

	if (req->argc > 3) {
		resp_error(out, ERR_SYNTAX);
		return;
	}
	/* As Redis 6+: without a password, the default user takes any,
	 * and only the old one-argument form is told it is useless. */
	if (pass[0] == '\0' && req->argc == 2) {
		resp_error(out, "ERR AUTH <password> called without any "
		                "password configured for the default user. "
		                "Are you sure your configuration is correct?");
		return;
	}
	if (auth_user(c, req, req->argc == 3 ? 1 : 0, p) == 0)
		resp_simple(out, "OK");
}

static void
cmd_select(struct client *c, const struct resp_request *req)
{
	int64_t db;

	if (parse_int(req->argv[1], req->argvlen[1], &db) != 0)
		resp_error(client_output(c), ERR_RANGE);
	else if (db != 0)
		resp_error(client_output(c), "ERR DB index is out of range");
	else
		resp_simple(client_output(c), "OK");
}

/* No command table to give: COMMAND is empty, and COUNT says so. */
static void
cmd_command(struct client *c, const struct resp_request *req)
{
	if (arg_is(req, 1, "count"))
		resp_integer(client_output(c), 0);
	else
		resp_array(client_output(c), 0);
}

/* CLIENT SETNAME's and HELLO's: 0, or -1 with the error replied. */
static int
client_setname(struct client *c, const char *name, size_t len)
{
	size_t i = 0;

	if (len <= CLIENT_NAME_MAX)
		while (i < len && name[i] > ' ' && name[i] <= '~')
			i++;
	if (i < len || len > CLIENT_NAME_MAX) {
		resp_error(client_output(c),
		           "ERR Client names cannot contain spaces, newlines "
		           "or special characters.");
		return -1;
	}
	free(c->name);
	c->name = len ? csq_xstrndup(name, len) : NULL;
	return 0;
}

/*
 * HELLO [protover [AUTH user password] [SETNAME name]], as in Redis 6 and
 * later: the options are checked first, then the password, then the
 * name; only then does the protocol change, and the reply, a map in
 * RESP3, says what the connection has become. Without a protover it
 * changes nothing. RESP3 changes only how replies are framed
 * (resp_map, resp_push, resp_nil) and lifts subscribe mode's limits.
 */
static void
cmd_hello(struct client *c, const struct resp_request *req)
{
	struct evbuffer *out = client_output(c);
	int64_t ver = 0;
	int i, user = 0, name = 0;

	if (req->argc >= 2) {
		if (parse_int(req->argv[1], req->argvlen[1], &ver) != 0) {
			resp_error(out,
			           "ERR Protocol version is not an integer "
			           "or out of range");
			return;
		}
		if (ver < 2 || ver > 3) {
			resp_error(out, "NOPROTO unsupported protocol version");
			return;
		}
	}
	for (i = 2; i < req->argc; i++) {
		if (arg_is(req, i, "auth") && req->argc - i > 2) {
			user = i + 1;
			i += 2;
		} else if (arg_is(req, i, "setname") && req->argc - i > 1) {
			name = ++i;
		} else {
			resp_error(out,
			           "ERR Syntax error in HELLO option '%.*s'",
			           echo_len(req, i), req->argv[i]);
			return;
		}
	}
	if (user != 0 && auth_user(c, req, user, user + 1) != 0)
		return;
	if (!c->authed) {
		resp_error(
		    out, "NOAUTH HELLO must be called with the client already "
		         "authenticated, otherwise the HELLO <proto> AUTH "
		         "<user> <pass> option can be used to authenticate the "
		         "client and select the RESP protocol version at the "
		         "same time");
		return;
	}
	if (name != 0 &&
	    client_setname(c, req->argv[name], req->argvlen[name]) != 0)
		return;
	if (ver != 0)
		c->proto = (int)ver;
	resp_map(out, c->proto, 7);
	resp_bulk_str(out, "server");
	resp_bulk_str(out, "csq");
	resp_bulk_str(out, "version");
	resp_bulk_str(out, CSQ_REDIS_VERSION);
	resp_bulk_str(out, "proto");
	resp_integer(out, c->proto);
	resp_bulk_str(out, "id");
	resp_integer(out, (int64_t)c->id);
	resp_bulk_str(out, "mode");
	resp_bulk_str(out, "standalone");
	resp_bulk_str(out, "role");
	resp_bulk_str(out, "master");
	resp_bulk_str(out, "modules");
	resp_array(out, 0);
}

static void
cmd_client(struct client *c, const struct resp_request *req)
{
	struct evbuffer *out = client_output(c);

	/* The dispatcher has checked the subcommand and its arguments. */
	if (arg_is(req, 1, "id"))
		resp_integer(out, (int64_t)c->id);
	else if (arg_is(req, 1, "getname")) {
		if (c->name != NULL)
			resp_bulk_str(out, c->name);
		else
			resp_nil(out, c->proto);
	} else if (arg_is(req, 1, "setname")) {
		if (client_setname(c, req->argv[2], req->argvlen[2]) == 0)
			resp_simple(out, "OK");
	} else /* setinfo: accepted and not kept */
		resp_simple(out, "OK");
}

static void
cmd_info(struct client *c, const struct resp_request *req)
{
	struct server *s = c->server;
	char buf[INFO_MAX];
	int n;

	(void)req;
	n = snprintf(
	    buf, sizeof(buf),
	    "# Server\r\n"
	    "csq_version:%s\r\n"
	    "redis_version:" CSQ_REDIS_VERSION "\r\n"
	    "redis_mode:standalone\r\n"
	    "engine:%s\r\n"
	    "process_id:%ld\r\n"
	    "uptime_in_seconds:%llu\r\n"
	    "\r\n# Clients\r\n"
	    "connected_clients:%llu\r\n"
	    "maxclients:%lld\r\n"
	    "\r\n# Persistence\r\n"
	    "loading:0\r\n"
	    "\r\n# Stats\r\n"
	    "total_connections_received:%llu\r\n"
	    "rejected_connections:%llu\r\n"
	    "total_commands_processed:%llu\r\n"
	    "total_error_replies:%llu\r\n"
	    "client_output_buffer_limit_disconnections:%llu\r\n",
	    CSQ_VERSION, s->engine->ops->name, (long)getpid(),
	    (unsigned long long)((server_now_ms() - s->started_ms) / 1000),
	    (unsigned long long)s->nclients, (long long)s->cfg.max_clients,
	    (unsigned long long)s->stats.connections_total,
	    (unsigned long long)s->stats.rejected_total,
	    (unsigned long long)s->stats.commands_total,
	    (unsigned long long)s->stats.errors_total,
	    (unsigned long long)s->stats.output_closed_total);
	resp_verbatim(client_output(c), c->proto, buf,
	              (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Pub/sub. */

static void
reply_subscription(struct client *c, const char *kind, const char *name,
                   size_t len)
{
	struct evbuffer *out = client_output(c);

	resp_push(out, c->proto, 3);
	resp_bulk_str(out, kind);
	if (name != NULL)
		resp_bulk(out, name, len);
	else
		resp_nil(out, c->proto);
	resp_integer(out, (int64_t)pubsub_count(&c->subs));
}

static void
cmd_subscribe(struct client *c, const struct resp_request *req)
{
	int i;

	for (i = 1; i < req->argc; i++) {
		pubsub_subscribe(c->server->pubsub, c, req->argv[i],
		                 req->argvlen[i]);
		reply_subscription(c, "subscribe", req->argv[i],
		                   req->argvlen[i]);
	}
}

static void
cmd_psubscribe(struct client *c, const struct resp_request *req)
{
	int i;

	for (i = 1; i < req->argc; i++) {
		pubsub_psubscribe(c->server->pubsub, c, req->argv[i],
		                  req->argvlen[i]);
		reply_subscription(c, "psubscribe", req->argv[i],
		                   req->argvlen[i]);
	}
}

/* UNSUBSCRIBE (pattern 0) and PUNSUBSCRIBE (1): the names given, or
 * without any, every one the client has, oldest first. */
static void
unsubscribe(struct client *c, const struct resp_request *req, int pattern)
{
	int (*drop)(struct pubsub *, struct client *, const char *, size_t) =
	    pattern ? pubsub_punsubscribe : pubsub_unsubscribe;
	const char *kind = pattern ? "punsubscribe" : "unsubscribe";
	const char *name;
	char *copy;
	size_t len;
	int i;

	if (req->argc == 1 && pubsub_first(&c->subs, pattern, &len) == NULL)
		reply_subscription(c, kind, NULL, 0);
	while (req->argc == 1 &&
	       (name = pubsub_first(&c->subs, pattern, &len)) != NULL) {
		copy = csq_xstrndup(name, len);
		drop(c->server->pubsub, c, copy, len);
		reply_subscription(c, kind, copy, len);
		free(copy);
	}
	for (i = 1; i < req->argc; i++) {
		drop(c->server->pubsub, c, req->argv[i], req->argvlen[i]);
		reply_subscription(c, kind, req->argv[i], req->argvlen[i]);
	}
}

static void
cmd_unsubscribe(struct client *c, const struct resp_request *req)
{
	unsubscribe(c, req, 0);
}

static void
cmd_punsubscribe(struct client *c, const struct resp_request *req)
{
	unsubscribe(c, req, 1);
}

/* RESET, as Redis: the connection as if new (subscriptions, name, AUTH). */
static void
cmd_reset(struct client *c, const struct resp_request *req)
{
	(void)req;
	pubsub_forget(c->server->pubsub, c);
	free(c->name);
	c->name = NULL;
	c->authed = c->server->cfg.requirepass[0] == '\0';
	c->proto = 2;
	resp_simple(client_output(c), "RESET");
}

static const struct command commands[] = {
    {"heartbeat", -2, CMD_ENGINE, cmd_heartbeat},
    {"enqueue", -2, CMD_ENGINE, cmd_enqueue},
    {"release", 2, CMD_ENGINE, cmd_release},
    {"where", 2, CMD_ENGINE, cmd_where},
    {"touch", -2, CMD_ENGINE, cmd_touch},
    {"leave", 2, CMD_ENGINE, cmd_leave},
    {"pause", 2, CMD_ENGINE, cmd_pause},
    {"resume", 2, CMD_ENGINE, cmd_resume},
    {"logout", 2, CMD_ENGINE, cmd_logout},
    {"queue", -2, CMD_ENGINE, cmd_queue},
    {"qlen", 2, CMD_ENGINE, cmd_qlen},
    {"servicers", 1, CMD_ENGINE, cmd_servicers},
    {"stats", 1, CMD_ENGINE, cmd_stats},
    {"ping", -1, CMD_PUBSUB, cmd_ping},
    {"echo", 2, 0, cmd_echo},
    {"quit", -1, CMD_NOAUTH | CMD_PUBSUB, cmd_quit},
    {"reset", 1, CMD_PUBSUB, cmd_reset},
    {"auth", -2, CMD_NOAUTH, cmd_auth},
    {"subscribe", -2, CMD_PUBSUB, cmd_subscribe},
    {"unsubscribe", -1, CMD_PUBSUB, cmd_unsubscribe},
    {"psubscribe", -2, CMD_PUBSUB, cmd_psubscribe},
    {"punsubscribe", -1, CMD_PUBSUB, cmd_punsubscribe},
    {"info", -1, 0, cmd_info},
    {"client", -2, CMD_SUBCMDS, cmd_client},
    {"select", 2, 0, cmd_select},
    {"command", -1, CMD_SUBCMDS, cmd_command},
    {"hello", -1, CMD_NOAUTH, cmd_hello},
};

/*
 * The subcommands of CLIENT and COMMAND that csqd answers, with Redis's
 * arity (the container's name counted). The dispatcher checks them as
 * Redis 7 does, before subscribe mode's limit, and names one as Redis
 * does in its errors: 'client|setname'.
 */
static const struct subcommand {
	const char *container;
	const char *name;
	int arity;
} subcommands[] = {
    {"client", "id", 2},        {"client", "getname", 2},
    {"client", "setname", 3},   {"client", "setinfo", 4},
    {"command", "count", 2},    {"command", "docs", -2},
    {"command", "info", -2},    {"command", "list", -2},
    {"command", "getkeys", -3}, {"command", "getkeysandflags", -3},
    {"command", "help", 2},
};

/* Redis's text for a subcommand it does not know: "Try CLIENT HELP." */
static void
reply_unknown_subcommand(struct evbuffer *out, const struct command *cmd,
                         const struct resp_request *req)
{
	char upper[16];
	size_t i;

	for (i = 0; cmd->name[i] != '\0' && i < sizeof(upper) - 1; i++)
		upper[i] = (char)toupper((unsigned char)cmd->name[i]);
	upper[i] = '\0';
	resp_error(out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
	           echo_len(req, 1), req->argv[1], upper);
}

static const struct subcommand *
subcommand_lookup(const struct command *cmd, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (strcmp(subcommands[i].container, cmd->name) == 0 &&
		    strlen(subcommands[i].name) == len &&
		    strncasecmp(subcommands[i].name, name, len) == 0)
			return &subcommands[i];
	return NULL;
}

/*
 * Metrics of one command: its time from dispatch to reply, and whether
 * the reply written since `before` is an error. (An engine call answered
 * later is measured when its answer comes, in command_result.)
 */
static void
command_measure(struct client *c, const char *name, uint64_t start,
                size_t before)
{
	struct evbuffer_ptr pos;
	struct evbuffer_iovec v;
	struct evbuffer *out;
	int error = 0;

	if (c->state != CLIENT_DEAD && c->bev != NULL) {
		out = client_output(c);
		/* Peeked, not copied out: a bufferevent's output buffer is
		 * frozen at its start, and copyout refuses such a buffer. */
		if (evbuffer_get_length(out) > before &&
		    evbuffer_ptr_set(out, &pos, before, EVBUFFER_PTR_SET) ==
		        0 &&
		    evbuffer_peek(out, 1, &pos, &v, 1) >= 1 && v.iov_len >= 1)
			error = *(const char *)v.iov_base == '-';
	}
	/* INFO's total_error_replies counts what /metrics does: every
	 * error reply, as Redis's does. */
	if (error)
		c->server->stats.errors_total++;
	metrics_command(c->server->metrics, name, metrics_now_us() - start,
	                error);
}

static const struct command *
command_lookup(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strlen(commands[i].name) == len &&
		    strncasecmp(commands[i].name, name, len) == 0)
			return &commands[i];
	return NULL;
}

int
command_pipelines(const struct resp_request *req)
{
	const struct command *cmd =
	    command_lookup(req->argv[0], req->argvlen[0]);

	return cmd != NULL && (cmd->flags & CMD_ENGINE);
}

void
command_dispatch(struct client *c, const struct resp_request *req)
{
	struct evbuffer *out = client_output(c);
	const struct command *cmd;
	const struct subcommand *sub;
	const char *name;
	char fullname[64];
	size_t before = evbuffer_get_length(out);
	uint64_t start = metrics_now_us();

	c->server->stats.commands_total++;
	cmd = command_lookup(req->argv[0], req->argvlen[0]);
	/* As Redis: a connection opened while a password was required and
	 * never authenticated needs none once a reload removes it. */
	if (!c->authed && c->server->cfg.requirepass[0] != '\0' &&
	    (cmd == NULL || !(cmd->flags & CMD_NOAUTH))) {
		resp_error(out, "NOAUTH Authentication required.");
		goto error;
	}
	if (cmd == NULL) {
		resp_error(out, "ERR unknown command '%.*s'", echo_len(req, 0),
		           req->argv[0]);
		goto error;
	}
	if (!arity_ok(cmd->arity, req->argc)) {
		reply_arity(out, cmd->name);
		goto error;
	}
	name = cmd->name;
	if ((cmd->flags & CMD_SUBCMDS) && req->argc >= 2) {
		sub = subcommand_lookup(cmd, req->argv[1], req->argvlen[1]);
		if (sub == NULL) {
			reply_unknown_subcommand(out, cmd, req);
			goto error;
		}
		snprintf(fullname, sizeof(fullname), "%s|%s", cmd->name,
		         sub->name);
		name = fullname;
		if (!arity_ok(sub->arity, req->argc)) {
			reply_arity(out, fullname);
			goto error;
		}
	}
	if (client_subscribed(c) && c->proto == 2 &&
	    !(cmd->flags & CMD_PUBSUB)) {
		resp_error(
		    out,
		    "ERR Can't execute '%s': only (P|S)SUBSCRIBE / "
		    "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
		    "this context",
		    name);
		goto error;
	}
	command_running.name = cmd->name;
	command_running.start_us = start;
	command_running.later = 0;
	cmd->proc(c, req);
	/* A call still in flight is measured when its answer comes. */
	if (!command_running.later)
		command_measure(c, cmd->name, start, before);
	return;
error:
	command_measure(c, cmd != NULL ? cmd->name : "unknown", start, before);
}
