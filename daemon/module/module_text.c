/*
 * The module's text commands, for those who call csq from Redis
 * directly (a script, redis-cli, redis-benchmark) rather than through
 * csqd: CSQ.ENQUEUE, CSQ.LEAVE, CSQ.WHERE, CSQ.QLEN, CSQ.RELEASE, each
 * csqd's command of that name with the state's key first. Each builds
 * the same struct csq_op that csqd sends as a record, checks it with
 * csq_op_validate and applies it with the memory engine, so it is
 * replicated (CSQ.APPLY), published and timed exactly as CSQ.CALL's
 * operations are. The replies are csqd's (docs/protocol.md, 11b).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "module_state.h"

#define TEXT_OPTS_MAX 5

/* An argument as a C string of at most cap - 1 bytes, no NUL inside. */
static int
arg_text(RedisModuleString *arg, char *out, size_t cap)
{
	size_t len;
	const char *s = RM_StringPtrLen(arg, &len);

	if (len >= cap || memchr(s, '\0', len) != NULL)
		return -1;
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

/* An integer argument in min..max (csqd's error otherwise). */
static int
arg_int(RedisModuleString *arg, long long min, long long max, long long *v)
{
	char buf[24], *end;
	long long x;

	if (arg_text(arg, buf, sizeof(buf)) != 0 || buf[0] == '\0')
		return -1;
	x = strtoll(buf, &end, 10);
	if (*end != '\0' || buf[0] == '+' || x < min || x > max)
		return -1;
	*v = x;
	return 0;
}

/* The answer of one operation, given while it runs: into the reply. */
struct text_call {
	RedisModuleCtx *ctx;
	enum csq_opcode code;
};

static void
reply_str(RedisModuleCtx *ctx, const char *s)
{
	RM_ReplyWithStringBuffer(ctx, s, strlen(s));
}

static void
reply_int(RedisModuleCtx *ctx, const char *name, long long v)
{
	reply_str(ctx, name);
	RM_ReplyWithLongLong(ctx, v);
}

/* ENQUEUE's reply, or WHERE's with detail: csqd's (command_queue.c's
 * reply_user), field for field. */
static void
reply_user(RedisModuleCtx *ctx, const struct csq_user_info *u, int detail)
{
	int prefer = u->prefer[0] != '\0', needs = u->needs[0] != '\0';
	int relax = needs && u->relax_ms >= 0;

	switch (u->state) {
	case CSQ_USER_WAITING:
		RM_ReplyWithArray(ctx, 2 * ((detail ? 6 : 4) +
		                            (prefer ? 2 : 0) + needs + relax));
		reply_str(ctx, "state");
		reply_str(ctx, "waiting");
		reply_str(ctx, "queue");
		reply_str(ctx, u->queue);
		reply_int(ctx, "position", (long long)u->position);
		if (detail) {
			reply_int(ctx, "tier", u->tier);
			reply_int(ctx, "waited_ms", (long long)u->waited_ms);
		}
		reply_int(ctx, "eta_ms", u->eta_ms);
		if (prefer) {
			reply_str(ctx, "prefer");
			reply_str(ctx, u->prefer);
			reply_int(ctx, "prefer_ms", (long long)u->prefer_ms);
		}
		break;
	case CSQ_USER_ASSIGNED:
		RM_ReplyWithArray(ctx, 2 * ((detail ? 5 : 4) + needs));
		reply_str(ctx, "state");
		reply_str(ctx, "assigned");
		reply_str(ctx, "queue");
		reply_str(ctx, u->queue);
		reply_str(ctx, "room");
		reply_str(ctx, u->room);
		reply_str(ctx, "servicer");
		reply_str(ctx, u->servicer);
		if (detail)
			reply_int(ctx, "since_ms", (long long)u->since_ms);
		relax = 0;
		break;
	case CSQ_USER_OFFERED:
		RM_ReplyWithArray(ctx, 2 * ((detail ? 8 : 7) + needs));
		reply_str(ctx, "state");
		reply_str(ctx, "offered");
		reply_str(ctx, "queue");
		reply_str(ctx, u->queue);
		reply_int(ctx, "tier", u->tier);
		reply_str(ctx, "servicer");
		reply_str(ctx, u->servicer);
		reply_str(ctx, "room");
		reply_str(ctx, u->room);
		reply_int(ctx, "expires_in_ms", (long long)u->expires_in_ms);
		if (detail)
			reply_int(ctx, "waited_ms", (long long)u->waited_ms);
		reply_int(ctx, "eta_ms", u->eta_ms);
		relax = 0;
		break;
	default:
		RM_ReplyWithArray(ctx, 2);
		reply_str(ctx, "state");
		reply_str(ctx, "none");
		return;
	}
	if (needs) {
		reply_str(ctx, "needs");
		reply_str(ctx, u->needs);
	}
	if (relax)
		reply_int(ctx, "relax_ms", u->relax_ms);
}

static void
text_answer(void *arg, const struct csq_result *res)
{
	struct text_call *tc = arg;

	if (res->status != CSQ_OK) {
		RM_ReplyWithError(tc->ctx, csq_status_text(res->status));
		return;
	}
	switch (tc->code) {
	case CSQ_OP_ENQUEUE:
		reply_user(tc->ctx, &res->user, 0);
		break;
	case CSQ_OP_WHERE:
		reply_user(tc->ctx, &res->user, 1);
		break;
	default: /* LEAVE, QLEN, RELEASE */
		RM_ReplyWithLongLong(tc->ctx, res->n);
		break;
	}
}

/*
 * Runs op on the state of key at Redis's time, as CSQ.CALL runs one of
 * its operations: a read of a key that holds no state answers as an
 * empty state does, without making one.
 */
static int
text_run(RedisModuleCtx *ctx, RedisModuleString *name, struct csq_op *op,
         int writes)
{
	struct text_call tc = {ctx, op->code};
	struct module_state *st;
	RedisModuleKey *key;
	enum csq_status s;

	if ((st = module_state_open(ctx, name, writes, &key)) == NULL) {
		/* An error replied, or a read of no state. */
		if (!writes && RM_KeyType(key) == RM_KEYTYPE_EMPTY) {
			if (op->code == CSQ_OP_WHERE)
				reply_user(ctx, &(struct csq_user_info){0}, 1);
			else
				RM_ReplyWithLongLong(ctx, 0);
		}
		RM_CloseKey(key);
		return RM_OK;
	}
	module_state_begin(st, ctx, (uint64_t)RM_Milliseconds());
	s = csq_op_validate(
	    op, csq_get_limits(csq_engine_memory_state(st->engine)));
	if (s != CSQ_OK)
		RM_ReplyWithError(ctx, csq_status_text(s));
	else
		csq_engine_call(st->engine, op, text_answer, &tc);
	module_state_end(st, NULL);
	RM_CloseKey(key);
	module_timer_update(ctx);
	return RM_OK;
}

static void
op_init(struct csq_op *op, enum csq_opcode code, const char *id)
{
	memset(op, 0, sizeof(*op));
	op->code = code;
	op->id = id;
	op->ttl_s = -1;
}

/* CSQ.<op> <key> <id>: LEAVE, WHERE, QLEN, RELEASE. */
static int
text_one(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
         enum csq_opcode code, int writes)
{
	char id[CSQ_ROOM_MAX + 1];
	struct csq_op op;

	if (argc != 3)
		return RM_WrongArity(ctx);
	if (arg_text(argv[2], id, sizeof(id)) != 0)
		return RM_ReplyWithError(
		    ctx, csq_status_text(code == CSQ_OP_QLEN      ? CSQ_EQUEUE
		                         : code == CSQ_OP_RELEASE ? CSQ_EROOM
		                                                  : CSQ_EUSER));
	op_init(&op, code, id);
	return text_run(ctx, argv[1], &op, writes);
}

static int
cmd_leave(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return text_one(ctx, argv, argc, CSQ_OP_LEAVE, 1);
}

static int
cmd_where(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return text_one(ctx, argv, argc, CSQ_OP_WHERE, 0);
}

static int
cmd_qlen(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return text_one(ctx, argv, argc, CSQ_OP_QLEN, 0);
}

static int
cmd_release(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return text_one(ctx, argv, argc, CSQ_OP_RELEASE, 1);
}

/* Which option argv[i] names (case-insensitive), or -1. */
static int
option_of(RedisModuleString *arg, const char *const *names, int n)
{
	size_t len;
	const char *s = RM_StringPtrLen(arg, &len);
	int k;

	for (k = 0; k < n; k++)
		if (strlen(names[k]) == len &&
		    strncasecmp(s, names[k], len) == 0)
			return k;
	return -1;
}

/*
 * CSQ.ENQUEUE <key> <user> [QUEUE q] [TIER t] [TTL s] [PREFER servicer
 * seconds] [NEEDS list]: csqd's ENQUEUE. Options in any order, the last
 * of a repeated one winning; their ranges are libcsq's (csq_op_validate).
 */
static int
cmd_enqueue(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	static const char *const names[TEXT_OPTS_MAX] = {"queue", "tier", "ttl",
	                                                 "prefer", "needs"};
	char user[CSQ_ID_MAX + 2], queue[CSQ_ID_MAX + 2],
	    prefer[CSQ_ID_MAX + 2], needs[CSQ_SKILLS_TEXT_MAX + 1];
	struct csq_op op;
	struct csq_enqueue_args *a = &op.enqueue;
	long long v;
	int i, k;

	if (argc < 3)
		return RM_WrongArity(ctx);
	if (arg_text(argv[2], user, sizeof(user)) != 0)
		return RM_ReplyWithError(ctx, csq_status_text(CSQ_EUSER));
	op_init(&op, CSQ_OP_ENQUEUE, user);
	a->user = user;
	for (i = 3; i < argc; i += k == 3 ? 3 : 2) {
		k = option_of(argv[i], names, TEXT_OPTS_MAX);
		if (k < 0 || i + (k == 3 ? 2 : 1) >= argc)
			return RM_ReplyWithError(ctx, "ERR syntax error");
		switch (k) {
		case 0:
			if (arg_text(argv[i + 1], queue, sizeof(queue)) != 0)
				return RM_ReplyWithError(
				    ctx, csq_status_text(CSQ_EQUEUE));
			a->has_queue = 1;
			a->queue = queue;
			break;
		case 1:
		case 2:
			if (arg_int(argv[i + 1], 0, CSQ_TTL_MAX, &v) != 0)
				return RM_ReplyWithError(
				    ctx, csq_status_text(CSQ_ERANGE));
			if (k == 1) {
				a->has_tier = 1;
				a->tier = (uint32_t)v;
			} else {
				a->has_ttl = 1;
				a->ttl_s = (uint32_t)v;
			}
			break;
		case 3:
			if (arg_text(argv[i + 1], prefer, sizeof(prefer)) != 0)
				return RM_ReplyWithError(
				    ctx, csq_status_text(CSQ_ESERVICER));
			if (arg_int(argv[i + 2], 1, CSQ_PREFER_MAX, &v) != 0)
				return RM_ReplyWithError(
				    ctx, csq_status_text(CSQ_ERANGE));
			a->prefer.has_prefer = 1;
			a->prefer.servicer = prefer;
			a->prefer.seconds = (uint32_t)v;
			break;
		default:
			if (arg_text(argv[i + 1], needs, sizeof(needs)) != 0)
				return RM_ReplyWithError(
				    ctx, csq_status_text(CSQ_ESKILL));
			a->has_needs = 1;
			a->needs = needs;
			break;
		}
	}
	return text_run(ctx, argv[1], &op, 1);
}

int
module_text_register(RedisModuleCtx *ctx)
{
	static const struct {
		const char *name;
		rm_cmd_fn fn;
		const char *flags;
	} cmds[] = {
	    {"csq.enqueue", cmd_enqueue, "write deny-oom fast"},
	    {"csq.leave", cmd_leave, "write fast"},
	    {"csq.release", cmd_release, "write fast"},
	    {"csq.where", cmd_where, "readonly fast"},
	    {"csq.qlen", cmd_qlen, "readonly fast"},
	};
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (RM_CreateCommand(ctx, cmds[i].name, cmds[i].fn,
		                     cmds[i].flags, 1, 1, 1) != RM_OK)
			return RM_ERR;
	return RM_OK;
}
