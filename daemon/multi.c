/*
 * Transactions. MULTI gives the client a struct multi; the dispatcher
 * (command.c) then checks each command as it comes, as far as it can be
 * checked without the state (the name, the arity, the arguments of an
 * engine command), and hands it here to be queued. EXEC runs the block:
 * each command through its own handler, in order, its reply into a buffer
 * of its own; the engine calls of the block form one group (engine.h), so
 * that on the Redis engine they are one CSQ.CALL, which no other
 * call, of this daemon or another, can come between. The array is written
 * when the last call has answered.
 */
#include "multi.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "client.h"
#include "command.h"
#include "command_queue.h"
#include "log.h"
#include "metrics.h"
#include "resp.h"
#include "server.h"
#include "util.h"

struct multi {
	struct resp_request *reqs; /* each one allocation (resp_request) */
	size_t n, cap;
	size_t bytes; /* the arguments queued, for max_multi_memory */
	int dirty;    /* a command failed while queueing */
};

struct multi_exec {
	struct client *c;
	struct evbuffer **replies; /* one per queued command, in order */
	size_t n;
	size_t pending;           /* engine calls not answered yet */
	size_t calls;             /* engine calls made */
	size_t tryagain;          /* of those, answered TRYAGAIN: not run */
	int oom;                  /* one of them for Redis's maxmemory */
	size_t unsure;            /* answered "may have been applied" */
	int running;              /* inside cmd_exec: the array waits for it */
	struct client_slot *slot; /* EXEC's reply, when it comes later */
};

static void
multi_free(struct multi *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->reqs[i].argv);
	free(m->reqs);
	free(m);
}

size_t
multi_count(const struct multi *m)
{
	return m->n;
}

size_t
multi_bytes(const struct multi *m)
{
	return m->bytes;
}

void
multi_discard(struct client *c)
{
	if (c->multi != NULL)
		multi_free(c->multi);
	c->multi = NULL;
}

void
multi_flag(struct client *c)
{
	if (c->multi != NULL)
		c->multi->dirty = 1;
}

/* A copy of req in one allocation: the pointers, the lengths, the bytes. */
static void
multi_copy(struct resp_request *dst, const struct resp_request *src,
           size_t bytes)
{
	size_t head = (size_t)src->argc * (sizeof(char *) + sizeof(size_t));
	char *p;
	int i;

	dst->argc = src->argc;
	dst->argv = csq_xmalloc(head + bytes);
	dst->argvlen = (size_t *)(dst->argv + src->argc);
	dst->packed = 1;
	p = (char *)dst->argv + head;
	for (i = 0; i < src->argc; i++) {
		memcpy(p, src->argv[i], src->argvlen[i]);
		p[src->argvlen[i]] = '\0';
		dst->argv[i] = p;
		dst->argvlen[i] = src->argvlen[i];
		p += src->argvlen[i] + 1;
	}
}

void
multi_queue(struct client *c, const struct resp_request *req)
{
	struct multi *m = c->multi;
	const struct config *cfg = &c->server->cfg;
	struct evbuffer *out = client_output(c);
	size_t bytes = 0;
	int i;

	for (i = 0; i < req->argc; i++)
		bytes += req->argvlen[i] + 1;
	if (m->n >= (size_t)cfg->max_multi_commands) {
		resp_error(out,
		           "ERR too many commands in the transaction "
		           "(max_multi_commands is %lld)",
		           (long long)cfg->max_multi_commands);
		m->dirty = 1;
		return;
	}
	if (m->bytes + bytes > (uint64_t)cfg->max_multi_memory) {
		resp_error(out,
		           "ERR the transaction's commands are over "
		           "max_multi_memory (%lld bytes)",
		           (long long)cfg->max_multi_memory);
		m->dirty = 1;
		return;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 8;
		m->reqs = csq_xrealloc(m->reqs, m->cap * sizeof(*m->reqs));
	}
	multi_copy(&m->reqs[m->n++], req, bytes);
	m->bytes += bytes;
	resp_simple(out, "QUEUED");
}

void
cmd_multi(struct client *c, const struct resp_request *req)
{
	(void)req;
	/* As Redis: the error does not spoil the transaction open. */
	if (c->multi != NULL) {
		resp_error(client_output(c),
		           "ERR MULTI calls can not be nested");
		return;
	}
	c->multi = csq_xcalloc(1, sizeof(*c->multi));
	resp_simple(client_output(c), "OK");
}

void
cmd_discard(struct client *c, const struct resp_request *req)
{
	(void)req;
	if (c->multi == NULL) {
		resp_error(client_output(c), "ERR DISCARD without MULTI");
		return;
	}
	multi_discard(c);
	resp_simple(client_output(c), "OK");
}

/* csq has no keys, so nothing to watch: a block is atomic on its own. */
void
cmd_watch(struct client *c, const struct resp_request *req)
{
	(void)req;
	resp_error(client_output(c),
	           "ERR WATCH is not supported: csq has no keys to watch, and "
	           "a MULTI block runs with no other command in between");
}

/* Nothing is ever watched: UNWATCH, which clients send to reset a
 * connection, has nothing to undo. */
void
cmd_unwatch(struct client *c, const struct resp_request *req)
{
	(void)req;
	resp_simple(client_output(c), "OK");
}

/* The array, or one error for the whole block when the engine ran none
 * of it: every call was refused as the engine was unavailable. */
static void
multi_exec_reply(struct multi_exec *x, struct evbuffer *out)
{
	size_t i;

	if (x->calls > 0 && x->tryagain + x->unsure == x->calls) {
		resp_error(out, "%s",
		           csq_status_text(x->unsure > 0 ? CSQ_EUNSURE
		                           : x->oom      ? CSQ_EOOM
		                                         : CSQ_ETRYAGAIN));
		return;
	}
	resp_array(out, (int64_t)x->n);
	for (i = 0; i < x->n; i++)
		evbuffer_add_buffer(out, x->replies[i]);
}

static void
multi_exec_free(struct multi_exec *x)
{
	size_t i;

	for (i = 0; i < x->n; i++)
		evbuffer_free(x->replies[i]);
	free(x->replies);
	client_unref(x->c);
	free(x);
}

/* The last call has answered after cmd_exec returned: the array goes
 * into the slot it holds. */
static void
multi_exec_finish(struct multi_exec *x)
{
	struct client *c = x->c;

	if (c->state != CLIENT_DEAD) {
		client_slot_write(c, x->slot);
		multi_exec_reply(x, client_output(c));
		server_hold_output(c->server, c);
		client_slot_done(c, x->slot);
	}
	multi_exec_free(x);
}

void
multi_exec_answered(struct multi_exec *x, enum csq_status status)
{
	x->pending--;
	if (status == CSQ_ETRYAGAIN || status == CSQ_EOOM)
		x->tryagain++;
	if (status == CSQ_EOOM)
		x->oom = 1;
	else if (status == CSQ_EUNSURE)
		x->unsure++;
	if (x->pending == 0 && !x->running)
		multi_exec_finish(x);
}

void
multi_exec_called(struct multi_exec *x)
{
	x->pending++;
	x->calls++;
}

/* Whether any command of m is one the engine answers. */
static int
multi_has_engine_calls(const struct multi *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (command_pipelines(&m->reqs[i]))
			return 1;
	return 0;
}

void
cmd_exec(struct client *c, const struct resp_request *req)
{
	struct csq_engine *e = c->server->engine;
	struct multi *m = c->multi;
	struct evbuffer *out = client_output(c);
	struct multi_exec *x;
	uint64_t start = metrics_now_us();
	size_t i;

	(void)req;
	if (m == NULL) {
		resp_error(out, "ERR EXEC without MULTI");
		return;
	}
	c->multi = NULL; /* the block's commands run, not queue */
	if (m->dirty) {
		resp_error(out, "EXECABORT Transaction discarded because of "
		                "previous errors.");
		multi_free(m);
		return;
	}
	/* Known down: the whole block is refused before any of it runs. */
	if (!e->ops->up(e) && multi_has_engine_calls(m)) {
		resp_error(out, "%s", csq_status_text(CSQ_ETRYAGAIN));
		multi_free(m);
		return;
	}
	x = csq_xcalloc(1, sizeof(*x));
	x->c = c;
	client_ref(c);
	x->n = m->n;
	x->replies = csq_xcalloc(m->n ? m->n : 1, sizeof(*x->replies));
	x->running = 1;
	csq_engine_group_begin(e);
	for (i = 0; i < m->n; i++) {
		if ((x->replies[i] = evbuffer_new()) == NULL)
			fatalx("out of memory");
		c->cur = x->replies[i];
		command_exec_one(c, &m->reqs[i], x);
	}
	c->cur = out;
	csq_engine_group_end(e);
	x->running = 0;
	multi_free(m);
	/* EXEC itself is measured now; its commands each when answered. */
	command_queue_begin("exec", start);
	if (x->pending == 0) {
		multi_exec_reply(x, out);
		multi_exec_free(x);
		return;
	}
	x->slot = client_slot_claim(c);
}
