/*
 * What one connection may cost (issue 37), each attack of the audit run
 * as it ran, against a real csqd: connections that never authenticate
 * (auth_timeout), replies piled up before AUTH (max_unauth_output), a
 * connection's patterns (max_client_patterns), slow HTTP requests
 * (http.request_timeout), too many HTTP connections
 * (http.max_connections), and descriptors kept for RESP connections
 * (reserved_fds). The limits live in the daemon, before any engine: the
 * memory engine's run is the test.
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define BUF          4096
#define SLOW_CONNS   20   /* the slowloris's connections */
#define DRIP_MS      200  /* a byte each this often */
#define DEADLINE_MAX 4000 /* ms: closed by then, for a deadline of 1 s */
#define CAP_CONNS    4    /* http.max_connections of the cap's test */
#define FD_HEADROOM  24   /* descriptors over those open (reserved_fds) */
#define FD_RESERVED  16
#define FD_ATTACK    40 /* HTTP connections against FD_HEADROOM */
#define FLOOD_MAX    (16 * 1024 * 1024) /* bytes of "X\r\n", at most */
#define FLOOD_CHUNK  (64 * 1024)

static int
setup_auth(void **state)
{
	return csqd_fx_setup(state, "requirepass = \"s3cret\";\n"
	                            "auth_timeout = 1;\n");
}

static int
setup_pass(void **state)
{
	return csqd_fx_setup(state, "requirepass = \"s3cret\";\n");
}

static int
setup_patterns(void **state)
{
	return csqd_fx_setup(state, "max_client_patterns = 3;\n");
}

static int
setup_http(void **state, const char *http_conf, const char *conf)
{
	struct csqd_fx *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	*state = fx;
	fx->d = csqd_start_http_conf(http_conf, conf);
	fx->c = csqd_connect(fx->d);
	return 0;
}

static int
setup_slow(void **state)
{
	return setup_http(state, "request_timeout = 1;", NULL);
}

static int
setup_cap(void **state)
{
	return setup_http(state, "max_connections = 4;", NULL);
}

static int
setup_fds(void **state)
{
	return setup_http(state, "", "reserved_fds = 16;\n");
}

/* Whether csqd has closed fd: it reads what came and sees the end, in
 * idle_ms at most. */
static int
closed_within(int fd, int idle_ms)
{
	char buf[BUF];
	int closed;

	raw_read(fd, buf, sizeof(buf), idle_ms, &closed);
	return closed;
}

/*
 * A connection that must authenticate and does not, within
 * auth_timeout (1 s here), is closed: one that sent nothing, and one
 * that sends AUTH one byte at a time (the audit's 600 connections held
 * every slot of max_clients for good). One that authenticated stays.
 */
static void
auth_deadline(void **state)
{
	struct csqd_fx *fx = *state;
	static const char auth[] = "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n";
	redisContext *c2 = csqd_connect(fx->d);
	int64_t t0, took;
	int idle, drip, i;

	CHECK(fx->c, "+OK", "AUTH s3cret");
	CHECK(c2, "+OK", "AUTH s3cret");
	t0 = now_ms();
	idle = raw_connect(fx->d->port);
	drip = raw_connect(fx->d->port);
	/* One byte every DRIP_MS: the whole AUTH would take 5 s. */
	for (i = 0; i < (int)sizeof(auth) - 1; i++) {
		raw_send(drip, auth + i, 1);
		if (closed_within(drip, DRIP_MS))
			break;
	}
	took = now_ms() - t0;
	print_message("a dripping AUTH closed after %lld ms (%d bytes)\n",
	              (long long)took, i);
	assert_true(i < (int)sizeof(auth) - 1);
	assert_true(took >= 900 && took < DEADLINE_MAX);
	assert_true(closed_within(idle, DEADLINE_MAX));
	csqd_wait_log(fx->d, "that had not authenticated (or finished the TLS "
	                     "handshake) within auth_timeout (1 s)");
	/* Authenticated before: still served, after its deadline passed. */
	CHECK(c2, "+PONG", "PING");
	CHECK(fx->c, "+PONG", "PING");
	close(idle);
	close(drip);
	redisFree(c2);
}

/*
 * The audit's connections pipelined "X\r\n" before AUTH without reading
 * the errors: csqd held their replies up to the global 1 GiB. Now it
 * holds max_unauth_output (64 KiB) at most, and closes the connection
 * with a line; the sender finds it closed long before it has sent
 * FLOOD_MAX.
 */
static void
unauth_output(void **state)
{
	struct csqd_fx *fx = *state;
	static char chunk[FLOOD_CHUNK];
	struct timeval tv = {5, 0};
	size_t sent = 0, i;
	int fd = raw_connect(fx->d->port);
	ssize_t n;

	for (i = 0; i + 3 <= sizeof(chunk); i += 3)
		memcpy(chunk + i, "X\r\n", 3);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (sent < FLOOD_MAX) {
		n = send(fd, chunk, i, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sent += (size_t)n;
	}
	print_message("pipelined %zu bytes before AUTH until csqd closed\n",
	              sent);
	csqd_wait_log(fx->d, "replies over max_unauth_output (65536 bytes) "
	                     "before AUTH, closing");
	assert_true(sent < FLOOD_MAX);
	CHECK(fx->c, "+OK", "AUTH s3cret");
	assert_true(
	    INFO_FIELD(fx->c, "client_output_buffer_limit_disconnections") >=
	    1);
	close(fd);
}

/* A PSUBSCRIBE's reply, and the client's count after it. */
#define PSUB_OK(c, pat, count)                                                 \
	CHECK((c), "['psubscribe','" pat "',:" #count "]", "PSUBSCRIBE " pat)
#define TOO_MANY "-ERR too many patterns (at most 3 a connection)"

/*
 * A connection holds max_client_patterns (3 here) patterns at most (the
 * audit's frontend added 120,000, and every publish walked them all). A
 * request that would take it over takes none of its patterns; one it
 * holds already costs nothing; an unsubscribe makes room. Another
 * connection has its own count.
 */
static void
pattern_count(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c = fx->c, *other = csqd_connect(fx->d);
	redisReply *r;

	PSUB_OK(c, "user:a*", 1);
	PSUB_OK(c, "user:b*", 2);
	CHECK(c, TOO_MANY, "PSUBSCRIBE user:c* user:d*");
	CHECK(c, TOO_MANY, "PSUBSCRIBE user:c* user:c*");
	/* One new and one held: 3. */
	r = CMD(c, "PSUBSCRIBE user:a* user:c*");
	assert_repr(r, "['psubscribe','user:a*',:2]");
	freeReplyObject(r);
	r = GET_REPLY(c);
	assert_repr(r, "['psubscribe','user:c*',:3]");
	freeReplyObject(r);
	PSUB_OK(c, "user:a*", 3);
	CHECK(c, TOO_MANY, "PSUBSCRIBE user:d*");
	CHECK(c, "['punsubscribe','user:a*',:2]", "PUNSUBSCRIBE user:a*");
	PSUB_OK(c, "user:d*", 3);
	/* Channels are not patterns. */
	CHECK(c, "['subscribe','user:x',:4]", "SUBSCRIBE user:x");
	PSUB_OK(other, "user:a*", 1);
	redisFree(other);
}

/* Sends a byte to each of the fds still open (-1: closed) and marks
 * those csqd has closed; returns how many are open. */
static int
drip_all(int *fds, int n, int idle_ms)
{
	struct pollfd p[SLOW_CONNS];
	char buf[BUF];
	int i, open = 0;
	ssize_t got;

	for (i = 0; i < n; i++) {
		if (fds[i] >= 0)
			(void)send(fds[i], "a", 1, MSG_NOSIGNAL);
		p[i].fd = fds[i];
		p[i].events = POLLIN;
		p[i].revents = 0;
	}
	(void)poll(p, (nfds_t)n, idle_ms);
	for (i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		if (p[i].revents != 0) {
			got = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
			if (got <= 0 && !(got < 0 && errno == EAGAIN)) {
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
		}
		open++;
	}
	return open;
}

/*
 * Slowloris: SLOW_CONNS connections each send a request's first line,
 * then a header byte every DRIP_MS. evhttp's own timeout started again
 * at every byte, so they stayed for good; http.request_timeout (1 s
 * here) counts from the connection: all are closed within it (and the
 * time of a look). Meanwhile an honest GET is answered, and an event
 * stream, which is a request being answered, is not cut.
 */
static void
http_slowloris(void **state)
{
	struct csqd_fx *fx = *state;
	char buf[BUF];
	int fds[SLOW_CONNS], stream, i, open, closed;
	int64_t t0;

	stream = raw_connect(fx->d->http_port);
	raw_sends(stream, "GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n");
	raw_read_until(stream, buf, sizeof(buf), "\r\n\r\n", 50, &closed);
	assert_non_null(strstr(buf, " 200 "));
	t0 = now_ms();
	for (i = 0; i < SLOW_CONNS; i++) {
		fds[i] = raw_connect(fx->d->http_port);
		raw_sends(fds[i], "GET /healthz HTTP/1.1\r\nX-Slow: ");
	}
	do
		open = drip_all(fds, SLOW_CONNS, DRIP_MS);
	while (open > 0 && now_ms() - t0 < DEADLINE_MAX);
	print_message("%d of %d slow connections open after %lld ms\n", open,
	              SLOW_CONNS, (long long)(now_ms() - t0));
	assert_int_equal(open, 0);
	assert_true(now_ms() - t0 >= 900);
	csqd_wait_log(fx->d, "sent no whole request within "
	                     "http.request_timeout (1 s)");
	/* The stream is older than the deadline and still carries events. */
	freeReplyObject(CMD(fx->c, "ENQUEUE slow1"));
	raw_read_until(stream, buf, sizeof(buf), "slow1", 50, &closed);
	assert_non_null(strstr(buf, "\"queued\""));
	assert_false(closed);
	close(stream);
	CHECK(fx->c, "+PONG", "PING");
}

/* GET /healthz on fd (kept alive): 1 when answered 200, 0 when csqd
 * closed it without an answer. */
static int
healthz_on(int fd)
{
	char buf[BUF];
	int closed;

	raw_sends(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	raw_read_until(fd, buf, sizeof(buf), "ok\n", 50, &closed);
	if (strstr(buf, " 200 ") != NULL)
		return 1;
	assert_true(closed);
	return 0;
}

/*
 * http.max_connections (4 here): the fifth connection at once is
 * closed unanswered, with a line; when one of the four goes, a new one
 * is served again.
 */
static void
http_conn_cap(void **state)
{
	struct csqd_fx *fx = *state;
	int fds[CAP_CONNS], extra, i, ok = 0;
	int64_t until;

	for (i = 0; i < CAP_CONNS; i++) {
		fds[i] = raw_connect(fx->d->http_port);
		assert_true(healthz_on(fds[i]));
	}
	extra = raw_connect(fx->d->http_port);
	assert_false(healthz_on(extra));
	close(extra);
	csqd_wait_log(fx->d, "http: refused 1 connection(s): "
	                     "http.max_connections (4) open");
	/* The four are still served. */
	for (i = 0; i < CAP_CONNS; i++)
		assert_true(healthz_on(fds[i]));
	close(fds[0]);
	/* csqd sees the close at its next turn: a new one is served then. */
	for (until = now_ms() + 5000; !ok && now_ms() < until;) {
		extra = raw_connect(fx->d->http_port);
		ok = healthz_on(extra);
		close(extra);
		if (!ok)
			sleep_ms(20);
	}
	assert_true(ok);
	for (i = 1; i < CAP_CONNS; i++)
		close(fds[i]);
}

/*
 * The audit's slowloris with a low `ulimit -n` made the RESP port fail
 * accept() ("Too many open files") for the whole attack. HTTP now takes
 * none of the last reserved_fds descriptors (16 here): with only
 * FD_HEADROOM free, FD_ATTACK idle HTTP connections take what HTTP may
 * and are refused beyond, and a RESP client still connects and is
 * answered.
 */
static void
http_reserved_fds(void **state)
{
	struct csqd_fx *fx = *state;
	int fds[FD_ATTACK], i, kept = 0;
	struct rlimit was;
	redisContext *c;

	csqd_limit_fds(fx->d, fx->c, FD_HEADROOM, &was);
	for (i = 0; i < FD_ATTACK; i++)
		fds[i] = raw_connect(fx->d->http_port);
	csqd_wait_log(fx->d, "fewer than reserved_fds (16) descriptors left");
	for (i = 0; i < FD_ATTACK; i++)
		kept += !closed_within(fds[i], 200);
	print_message("%d of %d HTTP connections kept with %d descriptors "
	              "free, %d reserved\n",
	              kept, FD_ATTACK, FD_HEADROOM, FD_RESERVED);
	/* Holes below the last descriptors are HTTP's too: a few more
	 * than FD_HEADROOM - FD_RESERVED may be kept, never all. */
	assert_true(kept > 0 && kept < FD_HEADROOM);
	c = csqd_connect(fx->d);
	CHECK(c, "+PONG", "PING");
	redisFree(c);
	CHECK(fx->c, "+PONG", "PING");
	assert_int_equal(prlimit(fx->d->pid, RLIMIT_NOFILE, &was, NULL), 0);
	for (i = 0; i < FD_ATTACK; i++)
		close(fds[i]);
}

static int
setup_cached(void **state)
{
	return setup_http(state, "cache_ms = 60000;",
	                  "max_output_memory = 1048576;\n");
}

/* The body of GET path on a new connection (fails unless 200). */
static char *
http_body(int port, const char *path)
{
	static char buf[1 << 20];
	char req[256];
	const char *p;
	int fd = raw_connect(port), closed;

	snprintf(req, sizeof(req),
	         "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	         path);
	raw_sends(fd, req);
	raw_read(fd, buf, sizeof(buf), 2000, &closed);
	close(fd);
	assert_non_null(strstr(buf, " 200 "));
	assert_non_null(p = strstr(buf, "\r\n\r\n"));
	return strdup(p + 4);
}

/*
 * /metrics and /api/snapshot walk every queue: one answer is shared by
 * the requests within http.cache_ms (60 s here) of it, whatever changed
 * since (issue 37: 20 concurrent /metrics at 100,000 queues stalled PING
 * for 3 s). A snapshot says which event it includes, so that the stream
 * resumed from it misses nothing.
 */
static void
http_shared_answer(void **state)
{
	struct csqd_fx *fx = *state;
	char *m1, *m2, *s1, *s2;

	m1 = http_body(fx->d->http_port, "/metrics");
	s1 = http_body(fx->d->http_port, "/api/snapshot");
	freeReplyObject(CMD(fx->c, "ENQUEUE shared1 QUEUE fresh"));
	m2 = http_body(fx->d->http_port, "/metrics");
	s2 = http_body(fx->d->http_port, "/api/snapshot");
	assert_string_equal(m1, m2);
	assert_string_equal(s1, s2);
	assert_null(strstr(s2, "fresh"));
	free(m1);
	free(m2);
	free(s1);
	free(s2);
}

/*
 * HTTP answers count against max_output_memory (1 MiB here): the audit's
 * 800 unread /metrics took RSS from 37 to 510 MB, counted nowhere.
 * Clients that ask for a large snapshot (4,000 queues) and read nothing
 * are closed, the largest first, until the rest fit, with a line.
 */
static void
http_output_counted(void **state)
{
	struct csqd_fx *fx = *state;
	int fds[10], i, rcv = 4096, closed, n = 0, queues = 4000;
	char buf[BUF];

	/* A snapshot of about 500 kB: with a receive window this small the
	 * kernel takes some 16 kB of it (its first send buffer), and the
	 * rest waits in csqd. */
	for (i = 0; i < queues; i++)
		redisAppendCommand(fx->c, "ENQUEUE big%d QUEUE queue-%06d", i,
		                   i);
	for (i = 0; i < queues; i++)
		freeReplyObject(GET_REPLY(fx->c));
	for (i = 0; i < 10; i++) {
		fds[i] = raw_connect_small(fx->d->http_port, rcv);
		raw_sends(fds[i],
		          "GET /api/snapshot HTTP/1.1\r\nHost: x\r\n\r\n");
	}
	csqd_wait_log(fx->d, "http: all clients' output over "
	                     "max_output_memory (1048576 bytes)");
	for (i = 0; i < 10; i++) {
		raw_read(fds[i], buf, sizeof(buf), 100, &closed);
		close(fds[i]);
	}
	n = INFO_FIELD(fx->c, "client_output_buffer_limit_disconnections");
	print_message("%d unread snapshots closed for max_output_memory\n", n);
	assert_true(n >= 1);
	CHECK(fx->c, "+PONG", "PING");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(auth_deadline, setup_auth,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(unauth_output, setup_pass,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(pattern_count, setup_patterns,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(http_slowloris, setup_slow,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(http_conn_cap, setup_cap,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(http_reserved_fds, setup_fds,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(http_shared_answer, setup_cached,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(http_output_counted, setup_cached,
	                                    csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
