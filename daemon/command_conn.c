/*
 * The connection's commands, and those a Redis client library sends on
 * its own (HELLO, CLIENT SETNAME, SELECT 0, COMMAND, INFO): answered as
 * Redis answers them, so that such libraries work unchanged.
 */
#include "command_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "client.h"
#include "command_arg.h"
#include "command_client.h"
#include "info.h"
#include "multi.h"
#include "pubsub.h"
#include "resp.h"
#include "server.h"
#include "util.h"

#define CLIENT_NAME_MAX 256

void
cmd_ping(struct client *c, const struct resp_request *req)
{
	struct evbuffer *out = client_output(c);

	if (req->argc > 2) {
		command_arg_arity_error(out, "ping");
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
void
cmd_echo(struct client *c, const struct resp_request *req)
{
	resp_bulk(client_output(c), req->argv[1], req->argvlen[1]);
}

void
cmd_quit(struct client *c, const struct resp_request *req)
{
	(void)req;
	resp_simple(client_output(c), "OK");
	client_close_after_reply(c);
}

/* AUTH's and HELLO's: argument user (0: none, the default user) and
 * argument pass; 0 and authenticated, or -1 with the error replied. */
static int
auth_user(struct client *c, const struct resp_request *req, int user, int pass)
{
	if (auth_login(c, user != 0 ? req->argv[user] : NULL,
	               user != 0 ? req->argvlen[user] : 0, req->argv[pass],
	               req->argvlen[pass]) != 0) {
		resp_error(client_output(c),
		           "WRONGPASS invalid username-password pair");
		return -1;
	}
	return 0;
}

void
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
	 * and only the old one-argument form is told it is useless. With
	 * users there is no such default user: a wrong pair. */
	if (pass[0] == '\0' && c->server->cfg.nusers == 0 && req->argc == 2) {
		resp_error(out, "ERR AUTH <password> called without any "
		                "password configured for the default user. "
		                "Are you sure your configuration is correct?");
		return;
	}
	if (auth_user(c, req, req->argc == 3 ? 1 : 0, p) == 0)
		resp_simple(out, "OK");
}

void
cmd_select(struct client *c, const struct resp_request *req)
{
	int64_t db;

	if (command_arg_parse_int(req->argv[1], req->argvlen[1], &db) != 0)
		resp_error(client_output(c), ERR_RANGE);
	else if (db != 0)
		resp_error(client_output(c), "ERR DB index is out of range");
	else
		resp_simple(client_output(c), "OK");
}

/* No command table to give: COMMAND is empty, and COUNT says so. */
void
cmd_command(struct client *c, const struct resp_request *req)
{
	if (command_arg_is(req, 1, "count"))
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
void
cmd_hello(struct client *c, const struct resp_request *req)
{
	struct evbuffer *out = client_output(c);
	int64_t ver = 0;
	int i, user = 0, name = 0;

	if (req->argc >= 2) {
		if (command_arg_parse_int(req->argv[1], req->argvlen[1],
		                          &ver) != 0) {
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
		if (command_arg_is(req, i, "auth") && req->argc - i > 2) {
			user = i + 1;
			i += 2;
		} else if (command_arg_is(req, i, "setname") &&
		           req->argc - i > 1) {
			name = ++i;
		} else {
			resp_error(out,
			           "ERR Syntax error in HELLO option '%.*s'",
			           command_arg_echo_len(req, i), req->argv[i]);
			return;
		}
	}
	if (user != 0 && auth_user(c, req, user, user + 1) != 0)
		return;
	if (auth_required(c)) {
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

void
cmd_client(struct client *c, const struct resp_request *req)
{
	struct evbuffer *out = client_output(c);

	/* The dispatcher has checked the subcommand and its arguments. */
	if (command_arg_is(req, 1, "id"))
		resp_integer(out, (int64_t)c->id);
	else if (command_arg_is(req, 1, "getname")) {
		if (c->name != NULL)
			resp_bulk_str(out, c->name);
		else
			resp_nil(out, c->proto);
	} else if (command_arg_is(req, 1, "setname")) {
		if (client_setname(c, req->argv[2], req->argvlen[2]) == 0)
			resp_simple(out, "OK");
	} else if (command_arg_is(req, 1, "list"))
		cmd_client_list(c, req);
	else if (command_arg_is(req, 1, "info"))
		cmd_client_info(c, req);
	else if (command_arg_is(req, 1, "kill"))
		cmd_client_kill(c, req);
	else if (command_arg_is(req, 1, "help"))
		cmd_client_help(c, req);
	else /* setinfo: accepted and not kept */
		resp_simple(out, "OK");
}

/* RESET, as Redis: the connection as if new (subscriptions, name, AUTH). */
void
cmd_reset(struct client *c, const struct resp_request *req)
{
	(void)req;
	multi_discard(c);
	pubsub_forget(c->server->pubsub, c);
	free(c->name);
	c->name = NULL;
	auth_reset(c);
	c->proto = 2;
	resp_simple(client_output(c), "RESET");
}
