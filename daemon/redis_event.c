/*
 * hiredis on libevent, with fewer system calls than the adapter hiredis
 * ships (hiredis/adapters/libevent.h).
 *
 * That adapter registers a one-shot read event, so every reply costs two
 * epoll_ctl calls (libevent takes the fd out after it fires, hiredis puts
 * it back), and it registers the write event for every command and takes
 * it out once written: two more. Here the read event is persistent, and a
 * command is written at the end of the loop turn it was made in (an
 * active event, which costs no system call), together with every other
 * command of that turn, or at once when the caller says so
 * (redis_event_write_now); the write event is registered only when the
 * socket did not take everything, and while connecting.
 */
#include "redis_event.h"

#include <stdlib.h>

#include <event2/event.h>
#include <hiredis/async.h>

#include "log.h"
#include "loop.h"
#include "util.h"

struct redis_event {
	redisAsyncContext *ac;
	struct event *rev;   /* readable: persistent */
	struct event *wev;   /* writable: one-shot, when it is needed */
	struct event *later; /* written at the end of the loop turn */
	int reading;         /* rev is added */
	int in_write;        /* inside redisAsyncHandleWrite */
	int gone;            /* cleaned up inside redisAsyncHandleWrite */
};

static void
redis_event_free(struct redis_event *e)
{
	event_free(e->rev);
	event_free(e->wev);
	event_free(e->later);
	free(e);
}

/* hiredis may free the context, and with it e, from inside the write. */
static void
redis_event_write(struct redis_event *e)
{
	e->in_write = 1;
	redisAsyncHandleWrite(e->ac);
	if (e->gone) {
		redis_event_free(e);
		return;
	}
	e->in_write = 0;
}

static void
read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct redis_event *e = arg;

	(void)fd, (void)what;
	loop_did_work();
	redisAsyncHandleRead(e->ac);
}

static void
write_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	redis_event_write(arg);
}

static void
add_read(void *arg)
{
	struct redis_event *e = arg;

	if (!e->reading) {
		event_add(e->rev, NULL);
		e->reading = 1;
	}
}

static void
del_read(void *arg)
{
	struct redis_event *e = arg;

	if (e->reading) {
		event_del(e->rev);
		e->reading = 0;
	}
}

/*
 * Inside a write, hiredis asks again only when the socket was full; while
 * connecting, writable means connected. Otherwise the write waits for the
 * end of the loop turn, when it sends everything asked for until then.
 */
static void
add_write(void *arg)
{
	struct redis_event *e = arg;

	if (e->in_write || !(e->ac->c.flags & REDIS_CONNECTED))
		event_add(e->wev, NULL);
	else if (!event_pending(e->later, EV_TIMEOUT, NULL) &&
	         !event_pending(e->wev, EV_WRITE, NULL))
		event_active(e->later, EV_TIMEOUT, 0);
}

static void
del_write(void *arg)
{
	struct redis_event *e = arg;

	event_del(e->wev);
	event_del(e->later);
}

/*
 * What ac has to send goes now, not at the end of the loop turn: for the
 * Redis engine's calls, made at the end of a turn already, so that they
 * leave before the replies and messages to clients that the same turn
 * queued, which csqd can write while Redis works (docs/benchmarks.md,
 * "Where a match's microseconds go"). Not while the socket is full:
 * then the write event sends it.
 */
void
redis_event_write_now(redisAsyncContext *ac)
{
	struct redis_event *e = ac->ev.data;

	if (e == NULL || e->in_write ||
	    !event_pending(e->later, EV_TIMEOUT, NULL))
		return;
	event_del(e->later);
	redis_event_write(e);
}

static void
cleanup(void *arg)
{
	struct redis_event *e = arg;

	if (e->in_write) {
		event_del(e->rev);
		event_del(e->wev);
		event_del(e->later);
		e->gone = 1;
		return;
	}
	redis_event_free(e);
}

int
redis_event_attach(redisAsyncContext *ac, struct event_base *evb)
{
	struct redis_event *e;
	int fd = ac->c.fd;

	if (ac->ev.data != NULL)
		return REDIS_ERR;
	e = csq_xcalloc(1, sizeof(*e));
	e->ac = ac;
	e->rev = event_new(evb, fd, EV_READ | EV_PERSIST, read_cb, e);
	e->wev = event_new(evb, fd, EV_WRITE, write_cb, e);
	e->later = event_new(evb, -1, 0, write_cb, e);
	if (e->rev == NULL || e->wev == NULL || e->later == NULL)
		fatalx("out of memory for the events of a Redis link");
	ac->ev.addRead = add_read;
	ac->ev.delRead = del_read;
	ac->ev.addWrite = add_write;
	ac->ev.delWrite = del_write;
	ac->ev.cleanup = cleanup;
	ac->ev.data = e;
	add_read(e);
	event_add(e->wev, NULL); /* connecting: writable means connected */
	return REDIS_OK;
}
