/*
 * The module's text commands, for those who call csq from Redis
 * directly (a script, redis-cli, redis-benchmark) rather than through
 * csqd: CSQ.ENQUEUE, CSQ.LEAVE, CSQ.WHERE, CSQ.QLEN, CSQ.RELEASE, each
 * csqd's command of that name with the state's key first. Each is the
 * operation of that name in lib/op.h's table: its words are parsed by
 * csqd's parser (op_args.h), checked with csq_op_validate and applied
 * with the memory engine, so it is replicated (CSQ.APPLY), published and
 * timed exactly as CSQ.CALL's operations are; its reply is written by
 * csqd's writer (op_reply.h), field for field (docs/protocol.md, 11b).
 */
#include <stdlib.h>
#include <string.h>

#include "module_state.h"

#include "op_args.h"
#include "op_reply.h"
#include "util.h"

#define TEXT_WORDS 16 /* words whose places fit on the stack, at most */

/* The reply's sink: Redis's reply calls (a map is a flat array). */
static void
sink_map(void *ctx, int64_t pairs)
{
	RM_ReplyWithArray(ctx, 2 * (long)pairs);
}

static void
sink_array(void *ctx, int64_t n)
{
	RM_ReplyWithArray(ctx, (long)n);
}

static void
sink_bulk(void *ctx, const char *s, size_t len)
{
	RM_ReplyWithStringBuffer(ctx, s, len);
}

static void
sink_integer(void *ctx, int64_t v)
{
	RM_ReplyWithLongLong(ctx, v);
}

static void
sink_simple(void *ctx, const char *s)
{
	RM_ReplyWithSimpleString(ctx, s);
}

/* The answer of one operation, given while it runs: into the reply. */
struct text_call {
	RedisModuleCtx *ctx;
	enum csq_opcode code;
};

static void
text_reply(RedisModuleCtx *ctx, enum csq_opcode code,
           const struct csq_result *res)
{
	const struct op_reply o = {ctx,       sink_map,     sink_array,
	                           sink_bulk, sink_integer, sink_simple};

	if (res->status != CSQ_OK)
		RM_ReplyWithError(ctx, csq_status_text(res->status));
	else
		op_reply_write(&o, code, res);
}

static void
text_answer(void *arg, const struct csq_result *res)
{
	struct text_call *tc = arg;

	text_reply(tc->ctx, tc->code, res);
}

/*
 * Runs op on the state of key at Redis's time, as CSQ.CALL runs one of
 * its operations: a read of a key that holds no state answers as an
 * empty state does, without making one.
 */
static int
text_run(RedisModuleCtx *ctx, RedisModuleString *name, struct csq_op *op,
         size_t user_len)
{
	struct text_call tc = {ctx, op->code};
	int writes = csq_op_mutates(op->code);
	struct module_state *st;
	RedisModuleKey *key;
	enum csq_status s;

	if ((st = module_state_open(ctx, name, writes, &key)) == NULL) {
		/* An error replied, or a read of no state. */
		if (!writes && RM_KeyType(key) == RM_KEYTYPE_EMPTY)
			text_reply(ctx, op->code, &(struct csq_result){0});
		RM_CloseKey(key);
		return RM_OK;
	}
	/* The user's bucket on its way from memory while the op is checked
	 * and journaled: in a big state it was the call's costliest miss. */
	if (user_len > 0)
		csq_engine_memory_prefetch_user(st->engine, op->id, user_len);
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

/*
 * CSQ.<op> <key> <words>: csqd's command of that name and arity with the
 * key first. The words are read where Redis holds them: a command's
 * arguments are sds strings, each with a NUL after its bytes (Redis's own
 * commands read them as C strings), so the parser reads C strings without
 * a copy; an argument's own NUL bytes are in its length, as they were in
 * the copy this replaced. The TIER a state takes is its own
 * (csq_op_validate), so the parser takes any tier there may be.
 */
static int
text_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
             enum csq_opcode code)
{
	const struct csq_op_def *def = csq_op_def(code);
	char *words[TEXT_WORDS];
	size_t lens[TEXT_WORDS], len, ulen = 0;
	struct resp_request req = {argc - 1, words, lens, 0};
	struct op_args_buf buf;
	struct csq_op op;
	const char *err;
	int i, ret;

	if (!op_args_arity_ok(def->arity, argc - 1))
		return RM_WrongArity(ctx);
	/* The key's place is the name's: the words follow it. A command's
	 * usual words fit on the stack; more go to the heap. */
	if (req.argc > TEXT_WORDS) {
		req.argv = csq_xmalloc((size_t)req.argc * sizeof(*req.argv));
		req.argvlen =
		    csq_xmalloc((size_t)req.argc * sizeof(*req.argvlen));
	}
	for (i = 0; i < req.argc; i++) {
		req.argv[i] = (char *)RM_StringPtrLen(argv[i + 1], &len);
		req.argvlen[i] = len;
	}
	err = op_args_parse(code, &req, CSQ_TIER_LIMIT, &op, &buf);
	/* A user's id is the word after the key (op->id), whose length is
	 * known here: the hint's, in text_run. */
	if (err == NULL && def->id == CSQ_ID_OF_USER && op.id == req.argv[1])
		ulen = req.argvlen[1];
	ret = err != NULL ? RM_ReplyWithError(ctx, err)
	                  : text_run(ctx, argv[1], &op, ulen);
	if (req.argv != words) {
		free(req.argvlen);
		free(req.argv);
	}
	return ret;
}

static int
cmd_enqueue(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return text_command(ctx, argv, argc, CSQ_OP_ENQUEUE);
}

static int
cmd_leave(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return text_command(ctx, argv, argc, CSQ_OP_LEAVE);
}

static int
cmd_where(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return text_command(ctx, argv, argc, CSQ_OP_WHERE);
}

static int
cmd_qlen(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return text_command(ctx, argv, argc, CSQ_OP_QLEN);
}

static int
cmd_release(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return text_command(ctx, argv, argc, CSQ_OP_RELEASE);
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
