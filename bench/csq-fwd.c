/*
 * csq-fwd: a TCP forwarder that does nothing but copy bytes, the cost of
 * one hop in front of a server and nothing more. scripts/bench puts it in
 * front of redis-server and runs the EVALSHA yardstick through it, so that
 * the table shows beside csqd's Redis-engine row what any process between
 * the clients and Redis costs on the machine (docs/benchmarks.md).
 *
 *	csq-fwd LISTEN_PORT UPSTREAM_PORT
 *
 * Both on 127.0.0.1. Each accepted connection gets its own connection to
 * the upstream; one thread and epoll, as csqd and Redis, no parsing and no
 * batching. What a socket does not take waits in its pair's buffer, and
 * the other side is not read meanwhile, so a slow reader slows its writer
 * rather than growing memory. Runs until killed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FWD_BUF    (64 * 1024)
#define FWD_EVENTS 256

/* One side of a pair: its socket, and what waits to be written to it. */
struct side {
	int fd;
	struct side *peer;
	char *buf;
	size_t off, len;
};

static int ep;
/* Pairs closed in this batch of events, freed after it: a later event of
 * the batch may name the other side. */
static struct side *dead[FWD_EVENTS];
static int ndead;

static void
fatal(const char *what)
{
	perror(what);
	exit(1);
}

static void
watch(struct side *s, int op)
{
	struct epoll_event ev;

	/* Reading this side stops while its peer has bytes waiting. */
	ev.events = s->peer->len > 0 ? 0 : EPOLLIN;
	if (s->len > 0)
		ev.events |= EPOLLOUT;
	ev.data.ptr = s;
	if (epoll_ctl(ep, op, s->fd, &ev) == -1)
		fatal("epoll_ctl");
}

static void
pair_close(struct side *s)
{
	struct side *p = s->peer;

	close(s->fd);
	close(p->fd);
	s->fd = p->fd = -1;
	dead[ndead++] = s < p ? s : p;
}

static void
pairs_free(void)
{
	for (; ndead > 0; ndead--) {
		free(dead[ndead - 1][0].buf);
		free(dead[ndead - 1][1].buf);
		free(dead[ndead - 1]);
	}
}

static int
socket_ready(int fd)
{
	int one = 1;

	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1)
		return -1;
	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static struct sockaddr_in
loopback(int port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static void
pair_open(int client, int upstream_port)
{
	struct sockaddr_in a = loopback(upstream_port);
	struct side *s = calloc(2, sizeof(*s));
	int up = socket(AF_INET, SOCK_STREAM, 0);

	if (s == NULL || (s[0].buf = malloc(FWD_BUF)) == NULL ||
	    (s[1].buf = malloc(FWD_BUF)) == NULL)
		fatal("malloc");
	/* Connected while still blocking: the upstream is local. */
	if (up == -1 || connect(up, (struct sockaddr *)&a, sizeof(a)) == -1 ||
	    socket_ready(up) == -1 || socket_ready(client) == -1) {
		perror("upstream");
		close(client);
		if (up != -1)
			close(up);
		free(s[0].buf);
		free(s[1].buf);
		free(s);
		return;
	}
	s[0].fd = client;
	s[1].fd = up;
	s[0].peer = &s[1];
	s[1].peer = &s[0];
	watch(&s[0], EPOLL_CTL_ADD);
	watch(&s[1], EPOLL_CTL_ADD);
}

/* Writes what waits for s; -1 when the connection is gone. */
static int
side_flush(struct side *s)
{
	ssize_t n;

	while (s->len > 0) {
		n = write(s->fd, s->buf + s->off, s->len);
		if (n == -1)
			return errno == EAGAIN ? 0 : -1;
		s->off += (size_t)n;
		s->len -= (size_t)n;
	}
	s->off = 0;
	return 0;
}

/* Reads s and writes it to its peer; -1 when the connection is gone. */
static int
side_read(struct side *s)
{
	struct side *p = s->peer;
	ssize_t n;

	if (p->len > 0) /* read again once that is written */
		return 0;
	n = read(s->fd, p->buf, FWD_BUF);
	if (n == 0 || (n == -1 && errno != EAGAIN))
		return -1;
	if (n == -1)
		return 0;
	p->off = 0;
	p->len = (size_t)n;
	if (side_flush(p) == -1)
		return -1;
	if (p->len > 0) {
		watch(s, EPOLL_CTL_MOD);
		watch(p, EPOLL_CTL_MOD);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct epoll_event evs[FWD_EVENTS];
	struct sockaddr_in a;
	struct side *s;
	int ls, one = 1, n, i, fd, port, upstream, had;

	if (argc != 3 || (port = atoi(argv[1])) <= 0 || port > 65535 ||
	    (upstream = atoi(argv[2])) <= 0 || upstream > 65535) {
		fprintf(stderr, "usage: csq-fwd LISTEN_PORT UPSTREAM_PORT\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	a = loopback(port);
	if ((ls = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(ls, (struct sockaddr *)&a, sizeof(a)) == -1 ||
	    listen(ls, 511) == -1)
		fatal("listen");
	if ((ep = epoll_create1(0)) == -1)
		fatal("epoll_create1");
	evs[0].events = EPOLLIN;
	evs[0].data.ptr = NULL; /* the listener */
	if (epoll_ctl(ep, EPOLL_CTL_ADD, ls, &evs[0]) == -1)
		fatal("epoll_ctl");
	for (;;) {
		if ((n = epoll_wait(ep, evs, FWD_EVENTS, -1)) == -1) {
			if (errno == EINTR)
				continue;
			fatal("epoll_wait");
		}
		for (i = 0; i < n; i++) {
			if ((s = evs[i].data.ptr) == NULL) {
				if ((fd = accept(ls, NULL, NULL)) != -1)
					pair_open(fd, upstream);
				continue;
			}
			if (s->fd == -1)
				continue;
			if (evs[i].events & (EPOLLHUP | EPOLLERR)) {
				pair_close(s);
				continue;
			}
			if (evs[i].events & EPOLLOUT) {
				had = s->len > 0;
				if (side_flush(s) == -1) {
					pair_close(s);
					continue;
				}
				if (had && s->len == 0) {
					watch(s, EPOLL_CTL_MOD);
					watch(s->peer, EPOLL_CTL_MOD);
				}
			}
			if ((evs[i].events & EPOLLIN) && side_read(s) == -1)
				pair_close(s);
		}
		pairs_free();
	}
}
