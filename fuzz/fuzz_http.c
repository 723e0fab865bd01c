/*
 * csqd's HTTP endpoint (daemon/http.c, on libevent's evhttp) as a client
 * reaches it: each input is the bytes of one connection, sent to the
 * endpoint that http_open sets up, with csqd's limits and handlers (the
 * metrics, the health check, the admin view's page, API and event
 * stream, the HTTP API's commands), over a memory engine that holds a few
 * servicers, queues and users so that they have something to say. The
 * connection is closed for writing after the input; the endpoint must then
 * answer and close it too (an event stream, once started, is left by the
 * client), with nothing but HTTP responses, and never crash.
 *
 * The endpoint listens on 127.0.0.1 at a port free when the target starts.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "engine.h"
#include "fuzz.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "util.h"

#define FUZZ_PORT_TRIES  20
#define FUZZ_ANSWER_S    5 /* the endpoint's time to answer and close */
#define FUZZ_REPLY_MAX   (1 << 20)
#define FUZZ_CHUNK       4096
#define FUZZ_NOW_MS      1700000000000ULL
#define FUZZ_STREAM_TYPE "Content-Type: text/event-stream"
#define FUZZ_HTTP_PREFIX "HTTP/" /* evhttp answers in the request's version */

static struct server srv;
static uint64_t now_ms = FUZZ_NOW_MS;

static uint64_t
fixed_clock(void *arg)
{
	(void)arg;
	return now_ms;
}

/* The engine's events reach the metrics, as in csqd (server.c). */
static void
emit(void *arg, const struct csq_event *ev)
{
	(void)arg;
	metrics_event(srv.metrics, ev);
}

/* The deadline timer a command arms (server_arm_deadline): the commands
 * of the HTTP API (http_api.h) run here as in csqd; the deadlines
 * themselves are left to their end, as this clock never moves. */
static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
}

static void
ignore_result(void *arg, const struct csq_result *r)
{
	(void)arg, (void)r;
}

/* Two servicers over three queues, a match and two users waiting. */
static void
populate(struct csq_engine *e)
{
	static const char *const users[] = {"u1", "u2", "u3"};
	struct csq_op op;
	size_t i;

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat.servicer = "s1";
	op.heartbeat.has_queues = 1;
	op.heartbeat.nqueues = 2;
	op.heartbeat.queues[0] = "sales";
	op.heartbeat.queues[1] = "support";
	csq_engine_call(e, &op, ignore_result, NULL);
	op.heartbeat.servicer = "s2";
	op.heartbeat.nqueues = 1;
	op.heartbeat.queues[0] = "billing";
	csq_engine_call(e, &op, ignore_result, NULL);
	op.code = CSQ_OP_PAUSE;
	op.id = "s2";
	csq_engine_call(e, &op, ignore_result, NULL);
	for (i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		memset(&op, 0, sizeof(op));
		op.code = CSQ_OP_ENQUEUE;
		op.enqueue.user = users[i];
		op.enqueue.has_queue = 1;
		op.enqueue.queue = i == 0 ? "sales" : "billing";
		csq_engine_call(e, &op, ignore_result, NULL);
	}
}

/* A port that nothing listens on now, or 0. */
static int
free_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd, port = 0;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return 0;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct csq_limits limits;
	int i;

	(void)argc, (void)argv;
	if (getenv("FUZZ_LOG") == NULL)
		log_set_level((enum log_level)(LOG_LVL_ERROR + 1));
	config_default(&srv.cfg);
	srv.base = event_base_new();
	srv.metrics = metrics_new(1, 1000);
	srv.deadline_ev = evtimer_new(srv.base, deadline_cb, NULL);
	srv.deadline_armed = UINT64_MAX;
	csq_limits_default(&limits);
	srv.engine =
	    csq_engine_memory_new(&limits, 1, fixed_clock, NULL, emit, NULL);
	populate(srv.engine);
	for (i = 0; i < FUZZ_PORT_TRIES; i++) {
		snprintf(srv.cfg.http_listen, sizeof(srv.cfg.http_listen),
		         "127.0.0.1:%d", free_port());
		if (http_open(&srv) == 0 && srv.http != NULL)
			return 0;
	}
	fuzz_fail("cannot open the HTTP endpoint");
}

/* One connection: what is left to send, what came back. */
struct conn {
	int fd;
	const uint8_t *data;
	size_t size, sent;
	char *reply;
	size_t len;
	int done, timed_out;
	struct event *ev;
};

static void
conn_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char buf[FUZZ_CHUNK];
	ssize_t n;

	if (what & EV_TIMEOUT) {
		c->timed_out = c->done = 1;
		return;
	}
	if ((what & EV_WRITE) && c->sent < c->size) {
		n = send(fd, c->data + c->sent, c->size - c->sent,
		         MSG_NOSIGNAL);
		if (n > 0)
			c->sent += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			c->sent = c->size; /* closed on us: stop sending */
		if (c->sent == c->size)
			shutdown(fd, SHUT_WR);
	}
	if (what & EV_READ) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n > 0 && c->len + (size_t)n <= FUZZ_REPLY_MAX) {
			memcpy(c->reply + c->len, buf, (size_t)n);
			c->len += (size_t)n;
		} else if (n == 0 ||
		           (n < 0 && errno != EAGAIN && errno != EINTR)) {
			c->done = 1;
		}
	}
}

/*
 * A connection to the endpoint, non-blocking. The wait for it goes on
 * through signals: libFuzzer's timer (SIGALRM) interrupted a blocking
 * connect() on a loaded machine.
 */
static int
connect_endpoint(const struct sockaddr_in *sin)
{
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	int fd, err = 0, n;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) == 0)
		return fd;
	if (errno != EINPROGRESS && errno != EINTR)
		goto fail;
	pfd.fd = fd;
	pfd.events = POLLOUT;
	while ((n = poll(&pfd, 1, FUZZ_ANSWER_S * 1000)) < 0 && errno == EINTR)
		;
	if (n != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		goto fail;
	if (err == 0)
		return fd;
	errno = err;
fail:
	n = errno;
	close(fd);
	errno = n;
	return -1;
}

/* An event stream (/api/events) stays open by design, a client's end of
 * writing or not: once its headers are in, the client has its answer. */
static int
stream_started(const struct conn *c)
{
	return memmem(c->reply, c->len, FUZZ_STREAM_TYPE,
	              strlen(FUZZ_STREAM_TYPE)) != NULL &&
	       memmem(c->reply, c->len, "\r\n\r\n", 4) != NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct timeval tv = {FUZZ_ANSWER_S, 0};
	struct config_addr addr;
	struct sockaddr_in sin;
	struct conn c;

	memset(&c, 0, sizeof(c));
	c.data = data;
	c.size = size;
	c.reply = csq_xmalloc(FUZZ_REPLY_MAX);
	config_parse_addr(srv.cfg.http_listen, &addr);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)addr.port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((c.fd = connect_endpoint(&sin)) < 0)
		fuzz_fail("cannot connect to the endpoint: %s",
		          strerror(errno));
	if (size == 0)
		shutdown(c.fd, SHUT_WR);
	c.ev = event_new(srv.base, c.fd, EV_READ | EV_WRITE | EV_PERSIST,
	                 conn_cb, &c);
	event_add(c.ev, &tv);
	while (!c.done) {
		/* Writable for good once everything is sent: read only. */
		if (c.sent == c.size) {
			event_del(c.ev);
			event_assign(c.ev, srv.base, c.fd, EV_READ | EV_PERSIST,
			             conn_cb, &c);
			event_add(c.ev, &tv);
			c.size = c.sent + 1; /* assigned once */
			c.sent = c.size;
		}
		event_base_loop(srv.base, EVLOOP_ONCE);
		if (stream_started(&c))
			break;
	}
	if (c.timed_out)
		fuzz_fail("the endpoint neither answered nor closed in %d s",
		          FUZZ_ANSWER_S);
	if (c.len > 0 &&
	    (c.len < strlen(FUZZ_HTTP_PREFIX) ||
	     memcmp(c.reply, FUZZ_HTTP_PREFIX, strlen(FUZZ_HTTP_PREFIX)) != 0))
		fuzz_fail("the endpoint answered %.40s", c.reply);
	event_free(c.ev);
	close(c.fd);
	free(c.reply);
	return 0;
}
