/*
 * The command table, as data, and the dispatcher. The dispatcher checks,
 * in Redis's order, authentication, the name, the arity and the
 * subscribe-mode context; the handlers (command_queue.c, command_conn.c,
 * command_pubsub.c) check their arguments completely (command_arg.h)
 * before anything changes, so that every bad request gets one clear error
 * and changes nothing.
 */
#include "command.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "auth.h"
#include "client.h"
#include "command_arg.h"
#include "command_client.h"
#include "command_conn.h"
#include "command_pubsub.h"
#include "command_queue.h"
#include "debug_clock.h"
#include "info.h"
#include "metrics.h"
#include "multi.h"
#include "op_args.h"
#include "resp.h"
#include "server.h"

#define CMD_NOAUTH  0x1  /* allowed before AUTH */
#define CMD_PUBSUB  0x2  /* allowed in RESP2's subscribe mode */
#define CMD_ENGINE  0x4  /* answered by the engine, in turn: may pipeline */
#define CMD_SUBCMDS 0x8  /* a container: argv[1] names a subcommand */
#define CMD_TXN     0x10 /* runs at once inside MULTI, never queued */
#define CMD_NOMULTI 0x20 /* refused inside MULTI */

typedef void command_proc(struct client *, const struct resp_request *);

/*
 * roles: the roles besides admin that may run the command (the bits of
 * lib/op.h's roles column, protocol-v2 section 9), or ADMIN: admin
 * alone. Every row says (the build refuses a row without it). A
 * container's subcommands have their own.
 */
struct command {
	const char *name; /* lower case, as errors quote it */
	int arity;        /* > 0: exactly; < 0: at least -arity */
	int flags;
	command_proc *proc; /* NULL: an operation (engine_commands) */
	int roles;
};

#define ADMIN 0 /* admin alone */
#define F     CSQ_ROLE_FRONTEND
#define S     CSQ_ROLE_SERVICER
#define ALL   (F | S)

/*
 * The engine's commands are the operations of lib/op.h's table, each with
 * its name, arity and roles there (an operation of arity 0 is no
 * command); the others are csqd's own.
 */
#define ENGINE_ROW(code, name, number, arity, roles, ...)                      \
	[CSQ_OP_##code] = {#name, arity, CMD_ENGINE, NULL, roles},

static const struct command engine_commands[CSQ_OP_COUNT] = {
    CSQ_OPS(ENGINE_ROW)};

static const struct command commands[] = {
    {"ping", -1, CMD_PUBSUB, cmd_ping, ALL},
    {"echo", 2, 0, cmd_echo, ADMIN},
    {"quit", -1, CMD_NOAUTH | CMD_PUBSUB | CMD_TXN, cmd_quit, ALL},
    {"reset", 1, CMD_PUBSUB | CMD_TXN, cmd_reset, ALL},
    {"auth", -2, CMD_NOAUTH | CMD_NOMULTI, cmd_auth, ALL},
    /* Channels are checked by the role too (command_pubsub.c). */
    {"subscribe", -2, CMD_PUBSUB | CMD_NOMULTI, cmd_subscribe, F | S},
    {"unsubscribe", -1, CMD_PUBSUB | CMD_NOMULTI, cmd_unsubscribe, ALL},
    {"psubscribe", -2, CMD_PUBSUB | CMD_NOMULTI, cmd_psubscribe, F | S},
    {"punsubscribe", -1, CMD_PUBSUB | CMD_NOMULTI, cmd_punsubscribe, ALL},
    {"info", -1, 0, cmd_info, ALL},
    {"client", -2, CMD_SUBCMDS, cmd_client, ALL},
    /* SELECT 0 is all it allows. */
    {"select", 2, 0, cmd_select, ALL},
    {"command", -1, CMD_SUBCMDS, cmd_command, ALL},
    {"hello", -1, CMD_NOAUTH | CMD_NOMULTI, cmd_hello, ALL},
    {"multi", 1, CMD_TXN, cmd_multi, ALL},
    {"exec", 1, CMD_TXN, cmd_exec, ALL},
    {"discard", 1, CMD_TXN, cmd_discard, ALL},
    /* Refused or a no-op (WATCH is not supported): no state to guard,
     * and a client's transaction helper may send them. */
    {"watch", -2, CMD_TXN, cmd_watch, ALL},
    {"unwatch", 1, 0, cmd_unwatch, ALL},
    /* Not csq's: the events channel shows every change. */
    {"monitor", 1, CMD_NOMULTI, cmd_monitor, ADMIN},
#ifdef CSQ_TEST_CLOCK
    /* A test build's clock (debug_clock.h): never in a release. */
    {"debug", -2, CMD_NOMULTI, cmd_debug, ADMIN},
#endif
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
	int roles; /* as struct command's */
} subcommands[] = {
    {"client", "id", 2, ALL},        {"client", "getname", 2, ALL},
    {"client", "setname", 3, ALL},   {"client", "setinfo", 4, ALL},
    {"client", "list", -2, ADMIN},   {"client", "info", 2, ADMIN},
    {"client", "kill", -3, ADMIN},   {"client", "help", 2, ADMIN},
    {"command", "count", 2, ALL},    {"command", "docs", -2, ALL},
    {"command", "info", -2, ALL},    {"command", "list", -2, ALL},
    {"command", "getkeys", -3, ALL}, {"command", "getkeysandflags", -3, ALL},
    {"command", "help", 2, ALL},
};

#undef ADMIN
#undef F
#undef S
#undef ALL

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
	           command_arg_echo_len(req, 1), req->argv[1], upper);
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

	if (c->state != CLIENT_DEAD && (c->bev != NULL || c->local)) {
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
	int op = csq_op_lookup(name, len);

	if (op >= 0)
		return &engine_commands[op];
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strlen(commands[i].name) == len &&
		    strncasecmp(commands[i].name, name, len) == 0)
			return &commands[i];
	return NULL;
}

/* What cmd's first argument names: its operation's id column, or none
 * for csqd's own commands (engine_commands' rows are in the order of the
 * opcodes). */
static enum csq_id_of
command_id_of(const struct command *cmd)
{
	return cmd->proc != NULL
	           ? CSQ_ID_OF_NONE
	           : csq_op_def((enum csq_opcode)(cmd - engine_commands))->id;
}

/* Runs cmd's handler: its own, or its operation's (engine_commands'
 * rows are in the order of the opcodes). */
static void
command_run(const struct command *cmd, struct client *c,
            const struct resp_request *req)
{
	if (cmd->proc != NULL)
		cmd->proc(c, req);
	else
		command_queue_op(c, req,
		                 (enum csq_opcode)(cmd - engine_commands));
}

int
command_pipelines(const struct resp_request *req)
{
	const struct command *cmd =
	    command_lookup(req->argv[0], req->argvlen[0]);

	return cmd != NULL && (cmd->flags & CMD_ENGINE);
}

/* The loop's time of this turn, which costs no system call: for CLIENT
 * LIST's idle, a second's precision is plenty. */
static uint64_t
command_clock_ms(struct server *s)
{
	struct timeval tv;

	event_base_gettimeofday_cached(s->base, &tv);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/*
 * A command inside MULTI, checked as far as it can be before EXEC: an
 * engine command's arguments too (its handler runs in check mode, and
 * makes no call), so that a bad argument aborts the whole block rather
 * than leave it half applied. Only what depends on the state (NOTFOUND,
 * FULL) is left to EXEC's array.
 */
static void
command_multi_queue(struct client *c, const struct command *cmd,
                    const struct resp_request *req, uint64_t start,
                    size_t before)
{
	int good = 1;

	if (cmd->flags & CMD_ENGINE) {
		command_queue_check(1);
		command_run(cmd, c, req);
		good = command_queue_checked();
		command_queue_check(0);
	}
	if (!good) {
		multi_flag(c);
		command_measure(c, cmd->name, start, before);
		return;
	}
	multi_queue(c, req);
}

void
command_exec_one(struct client *c, const struct resp_request *req,
                 struct multi_exec *x)
{
	const struct command *cmd =
	    command_lookup(req->argv[0], req->argvlen[0]);
	size_t before = evbuffer_get_length(client_output(c));
	uint64_t start = metrics_now_us();

	/* Counted in commands_total when it was queued. */
	command_queue_begin(cmd->name, start);
	command_queue_exec(x);
	command_run(cmd, c, req);
	command_queue_exec(NULL);
	if (!command_queue_later())
		command_measure(c, cmd->name, start, before);
}

void
command_dispatch(struct client *c, const struct resp_request *req)
{
	struct evbuffer *out = client_output(c);
	const struct command *cmd;
	const struct subcommand *sub = NULL;
	const char *name;
	char fullname[64];
	size_t before = evbuffer_get_length(out);
	uint64_t start = metrics_now_us();

	c->server->stats.commands_total++;
	c->last_ms = command_clock_ms(c->server);
	cmd = command_lookup(req->argv[0], req->argvlen[0]);
	if (auth_required(c) && (cmd == NULL || !(cmd->flags & CMD_NOAUTH))) {
		resp_error(out, "NOAUTH Authentication required.");
		goto error;
	}
	if (cmd == NULL) {
		resp_error(out, "ERR unknown command '%.*s'",
		           command_arg_echo_len(req, 0), req->argv[0]);
		goto error;
	}
	if (!op_args_arity_ok(cmd->arity, req->argc)) {
		command_arg_arity_error(out, cmd->name);
		goto error;
	}
	name = cmd->name;
	c->last_cmd = cmd->name;
	c->last_sub = NULL;
	if ((cmd->flags & CMD_SUBCMDS) && req->argc >= 2) {
		sub = subcommand_lookup(cmd, req->argv[1], req->argvlen[1]);
		if (sub == NULL) {
			reply_unknown_subcommand(out, cmd, req);
			goto error;
		}
		c->last_sub = sub->name;
		snprintf(fullname, sizeof(fullname), "%s|%s", cmd->name,
		         sub->name);
		name = fullname;
		if (!op_args_arity_ok(sub->arity, req->argc)) {
			command_arg_arity_error(out, fullname);
			goto error;
		}
	}
	/* After the name and the arity, as Redis checks its ACL. */
	if (!auth_may_run(c, sub != NULL ? sub->roles : cmd->roles)) {
		resp_error(out,
		           "NOPERM this user has no permissions to run the "
		           "'%s' command",
		           name);
		goto error;
	}
	/* A user bound to ids acts for those only (auth.h): here, before
	 * any engine, so on both engines, in MULTI and pipelines alike. */
	if (req->argc >= 2 && !auth_may_act(c, command_id_of(cmd), req->argv[1],
	                                    req->argvlen[1])) {
		resp_error(out,
		           "NOPERM this user has no permissions to act "
		           "for the id '%.*s'",
		           command_arg_echo_len(req, 1), req->argv[1]);
		goto error;
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
	if (c->multi != NULL && !(cmd->flags & CMD_TXN)) {
		if (cmd->flags & CMD_NOMULTI) {
			resp_error(
			    out,
			    "ERR Command not allowed inside a transaction");
			goto error;
		}
		command_multi_queue(c, cmd, req, start, before);
		return;
	}
	command_queue_begin(cmd->name, start);
	c->server->log_peer = c->addr;
	command_run(cmd, c, req);
	c->server->log_peer = NULL;
	/* A call still in flight is measured when its answer comes. */
	if (!command_queue_later())
		command_measure(c, cmd->name, start, before);
	return;
error:
	/* As Redis: a command refused inside MULTI spoils the block. */
	multi_flag(c);
	command_measure(c, cmd != NULL ? cmd->name : "unknown", start, before);
}
