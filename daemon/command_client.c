/*
 * CLIENT LIST, CLIENT INFO, CLIENT KILL and CLIENT HELP, as Redis 7 has
 * them: one line of field=value per connection, and the kill by id, by
 * address, by local address, by type, or by the old "ip:port" form.
 */
#include "command_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "client.h"
#include "command_arg.h"
#include "log.h"
#include "multi.h"
#include "pubsub.h"
#include "resp.h"
#include "server.h"
#include "util.h"

/* The client types of TYPE: csqd has neither masters nor replicas, so
 * those match no connection. */
enum client_type {
	TYPE_ANY,
	TYPE_NORMAL,
	TYPE_PUBSUB,
	TYPE_NONE, /* master, replica, slave */
};

/* TYPE's argument i: the type, or -1 with Redis's error replied. */
static int
client_type(struct client *c, const struct resp_request *req, int i)
{
	if (command_arg_is(req, i, "normal"))
		return TYPE_NORMAL;
	if (command_arg_is(req, i, "pubsub"))
		return TYPE_PUBSUB;
	if (command_arg_is(req, i, "master") ||
	    command_arg_is(req, i, "replica") ||
	    command_arg_is(req, i, "slave"))
		return TYPE_NONE;
	resp_error(client_output(c), "ERR Unknown client type '%.*s'",
	           command_arg_echo_len(req, i), req->argv[i]);
	return -1;
}

static int
client_is_type(const struct client *t, int type)
{
	switch (type) {
	case TYPE_ANY:
		return 1;
	case TYPE_NORMAL:
		return !client_subscribed(t);
	case TYPE_PUBSUB:
		return client_subscribed(t);
	default:
		return 0;
	}
}

/* Redis's flags: P subscribed, x inside MULTI, c closing after its
 * reply, A to be closed at once; N none of them. */
static void
client_flags(const struct client *t, char *buf, size_t len)
{
	size_t n = 0;

	if (client_subscribed(t) && n + 1 < len)
		buf[n++] = 'P';
	if (t->multi != NULL && n + 1 < len)
		buf[n++] = 'x';
	if (t->state == CLIENT_CLOSING && n + 1 < len)
		buf[n++] = 'c';
	if (t->killed != NULL && n + 1 < len)
		buf[n++] = 'A';
	if (n == 0)
		buf[n++] = 'N';
	buf[n] = '\0';
}

/* One line of CLIENT LIST, fields in Redis 7's order; what csqd does not
 * have (a database, client-side caching) is what Redis shows without. */
static void
client_line(struct evbuffer *b, struct client *t)
{
	uint64_t now = server_now_ms();
	size_t qbuf = t->in != NULL ? evbuffer_get_length(t->in) : 0;
	size_t obl = t->out != NULL ? evbuffer_get_length(t->out) : 0;
	size_t omem = t->bev != NULL ? client_pending(t) : 0, oll = 0;
	const struct client_slot *slot;
	char flags[8], cmd[64];

	client_flags(t, flags, sizeof(flags));
	TAILQ_FOREACH(slot, &t->slots, entry)
		oll++;
	if (t->last_cmd == NULL)
		snprintf(cmd, sizeof(cmd), "NULL");
	else if (t->last_sub == NULL)
		snprintf(cmd, sizeof(cmd), "%s", t->last_cmd);
	else
		snprintf(cmd, sizeof(cmd), "%s|%s", t->last_cmd, t->last_sub);
	evbuffer_add_printf(
	    b,
	    "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu "
	    "flags=%s db=0 sub=%zu psub=%zu ssub=0 multi=%lld qbuf=%zu "
	    "qbuf-free=0 argv-mem=0 multi-mem=%zu obl=%zu oll=%zu omem=%zu "
	    "tot-mem=%zu events=%s cmd=%s user=%s redir=-1 resp=%d\n",
	    (unsigned long long)t->id, t->addr, t->laddr,
	    t->bev != NULL ? (int)bufferevent_getfd(t->bev) : -1,
	    t->name != NULL ? t->name : "",
	    (unsigned long long)((now - t->created_ms) / 1000),
	    (unsigned long long)(now > t->last_ms ? (now - t->last_ms) / 1000
	                                          : 0),
	    flags, t->subs.nchannels, t->subs.npatterns,
	    t->multi != NULL ? (long long)multi_count(t->multi) : -1LL, qbuf,
	    t->multi != NULL ? multi_bytes(t->multi) : 0, obl, oll, omem,
	    qbuf + omem, omem > obl ? "rw" : "r", cmd,
	    t->user[0] ? t->user : "default", t->proto);
}

/* Sends the lines in b as one bulk string (CLIENT LIST, CLIENT INFO). */
static void
client_reply_lines(struct client *c, struct evbuffer *b)
{
	size_t len = evbuffer_get_length(b);

	resp_bulk(client_output(c),
	          len > 0 ? (const char *)evbuffer_pullup(b, -1) : "", len);
	evbuffer_free(b);
}

static struct evbuffer *
client_lines_new(void)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL)
		fatalx("out of memory");
	return b;
}

static int
client_id_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* CLIENT LIST [TYPE type] [ID id [id ...]]: with IDs, sorted once and
 * looked up per connection, so that a million of them against
 * max_clients connections is not a product of the two (issue 37). */
void
cmd_client_list(struct client *c, const struct resp_request *req)
{
	struct evbuffer *b;
	struct client *t;
	int type = TYPE_ANY, ids = 0, i;
	uint64_t *want = NULL;
	size_t nwant = 0;
	int64_t id;

	if (req->argc >= 4 && command_arg_is(req, 2, "type") &&
	    req->argc == 4) {
		if ((type = client_type(c, req, 3)) < 0)
			return;
	} else if (req->argc >= 4 && command_arg_is(req, 2, "id")) {
		want = csq_xmalloc((size_t)(req->argc - 3) * sizeof(*want));
		for (i = 3; i < req->argc; i++) {
			if (command_arg_parse_int(req->argv[i], req->argvlen[i],
			                          &id) != 0 ||
			    id <= 0) {
				resp_error(client_output(c),
				           "ERR Invalid client ID");
				free(want);
				return;
			}
			want[nwant++] = (uint64_t)id;
		}
		qsort(want, nwant, sizeof(*want), client_id_cmp);
		ids = 3;
	} else if (req->argc != 2) {
		resp_error(client_output(c), ERR_SYNTAX);
		return;
	}
	b = client_lines_new();
	TAILQ_FOREACH(t, &c->server->clients, entry) {
		if (!client_is_type(t, type))
			continue;
		if (ids != 0 && bsearch(&t->id, want, nwant, sizeof(*want),
		                        client_id_cmp) == NULL)
			continue;
		client_line(b, t);
	}
	free(want);
	client_reply_lines(c, b);
}

void
cmd_client_info(struct client *c, const struct resp_request *req)
{
	struct evbuffer *b = client_lines_new();

	(void)req;
	client_line(b, c);
	client_reply_lines(c, b);
}

/* Closes t for CLIENT KILL, from c: c itself after this reply, as
 * Redis does; another at the next turn of the loop (t's own callbacks
 * may not be the ones running). */
static void
client_kill_one(struct client *c, struct client *t)
{
	struct log_kv kv[] = {
	    LOG_NUM("client", t->id),
	    LOG_STR("addr", t->addr),
	    LOG_NUM("by", c->id),
	    LOG_STR("by_addr", c->addr),
	};

	log_kv(LOG_LVL_INFO, "client killed", kv, 4);
	if (t == c)
		client_close_after_reply(c);
	else
		client_kill(t, "killed by CLIENT KILL");
}

/* The filters of CLIENT KILL <filter> <value> ...; 0, or -1 with the
 * error replied. */
struct kill_filter {
	int64_t id; /* 0: any */
	const char *addr, *laddr, *user;
	int type;
	int skipme;
};

static int
kill_filter_parse(struct client *c, const struct resp_request *req,
                  struct kill_filter *f)
{
	struct evbuffer *out = client_output(c);
	int i;

	memset(f, 0, sizeof(*f));
	f->skipme = 1;
	for (i = 2; i < req->argc; i += 2) {
		if (i + 1 >= req->argc) {
			resp_error(out, ERR_SYNTAX);
			return -1;
		}
		if (command_arg_is(req, i, "id")) {
			if (command_arg_parse_int(req->argv[i + 1],
			                          req->argvlen[i + 1],
			                          &f->id) != 0 ||
			    f->id <= 0) {
				resp_error(out, "ERR client-id should be "
				                "greater than 0");
				return -1;
			}
		} else if (command_arg_is(req, i, "addr")) {
			f->addr = req->argv[i + 1];
		} else if (command_arg_is(req, i, "laddr")) {
			f->laddr = req->argv[i + 1];
		} else if (command_arg_is(req, i, "user")) {
			f->user = req->argv[i + 1];
		} else if (command_arg_is(req, i, "type")) {
			if ((f->type = client_type(c, req, i + 1)) < 0)
				return -1;
		} else if (command_arg_is(req, i, "skipme")) {
			if (command_arg_is(req, i + 1, "yes"))
				f->skipme = 1;
			else if (command_arg_is(req, i + 1, "no"))
				f->skipme = 0;
			else {
				resp_error(out, ERR_SYNTAX);
				return -1;
			}
		} else {
			resp_error(out, ERR_SYNTAX);
			return -1;
		}
	}
	return 0;
}

static int
kill_filter_match(const struct kill_filter *f, const struct client *c,
                  const struct client *t)
{
	return t->killed == NULL && t->state == CLIENT_ACTIVE &&
	       (f->id == 0 || (uint64_t)f->id == t->id) &&
	       (f->addr == NULL || strcmp(f->addr, t->addr) == 0) &&
	       (f->laddr == NULL || strcmp(f->laddr, t->laddr) == 0) &&
	       (f->user == NULL ||
	        strcmp(f->user, t->user[0] ? t->user : "default") == 0) &&
	       client_is_type(t, f->type) && !(f->skipme && t == c);
}

/*
 * CLIENT KILL ip:port (the old form: +OK, or "No such client"), or
 * CLIENT KILL <filter> <value> ... (the count of clients killed).
 */
void
cmd_client_kill(struct client *c, const struct resp_request *req)
{
	struct kill_filter f;
	struct client *t, *self_match = NULL;
	int64_t n = 0;

	if (req->argc == 3) {
		TAILQ_FOREACH(t, &c->server->clients, entry)
			if (t->killed == NULL && t->state == CLIENT_ACTIVE &&
			    strcmp(t->addr, req->argv[2]) == 0)
				break;
		if (t == NULL) {
			resp_error(client_output(c), "ERR No such client");
			return;
		}
		resp_simple(client_output(c), "OK");
		client_kill_one(c, t);
		return;
	}
	if (kill_filter_parse(c, req, &f) != 0)
		return;
	TAILQ_FOREACH(t, &c->server->clients, entry) {
		if (!kill_filter_match(&f, c, t))
			continue;
		n++;
		if (t == c)
			self_match = t; /* after the reply */
		else
			client_kill_one(c, t);
	}
	resp_integer(client_output(c), n);
	if (self_match != NULL)
		client_kill_one(c, c);
}

void
cmd_client_help(struct client *c, const struct resp_request *req)
{
	static const char *const lines[] = {
	    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	    "GETNAME",
	    "    Return the name of the current connection.",
	    "ID",
	    "    Return the ID of the current connection.",
	    "INFO",
	    "    Return information about the current client connection.",
	    "KILL <ip:port>",
	    "    Kill connection made from <ip:port>.",
	    "KILL <option> <value> [<option> <value> [...]]",
	    "    Kill connections. Options are:",
	    "    * ID <client-id>",
	    "      Kill connections by client id.",
	    "    * ADDR (<ip:port>|<unixsocket>:0)",
	    "      Kill connections made from the specified address",
	    "    * LADDR (<ip:port>|<unixsocket>:0)",
	    "      Kill connections made to specified local address",
	    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	    "      Kill connections by type.",
	    "    * USER <username>",
	    "      Kill connections authenticated by <username>.",
	    "    * SKIPME (YES|NO)",
	    "      Skip killing current connection (default: yes).",
	    "LIST [options ...]",
	    "    Return information about client connections. Options:",
	    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	    "      Return clients of specified type.",
	    "    * ID <client-id> [<client-id> ...]",
	    "      Return clients of the given ids.",
	    "SETNAME <name>",
	    "    Assign the name <name> to the current connection.",
	    "SETINFO <attr> <value>",
	    "    Accepted for client libraries (LIB-NAME, LIB-VER); not kept.",
	    "HELP",
	    "    Prints this help.",
	};
	size_t i, n = sizeof(lines) / sizeof(lines[0]);

	(void)req;
	resp_array(client_output(c), (int64_t)n);
	for (i = 0; i < n; i++)
		resp_simple(client_output(c), lines[i]);
}

/*
 * MONITOR is not csq's: every change is published, with its id, on the
 * "events" channel, which is how to watch csq (docs/design.md says why).
 */
void
cmd_monitor(struct client *c, const struct resp_request *req)
{
	(void)req;
	resp_error(client_output(c),
	           "ERR MONITOR is not supported: SUBSCRIBE events shows every "
	           "change csq makes, as it happens");
}
