/*
 * Raw sockets to csqd, for what hiredis would not send or would hide: bytes
 * as they are, half requests, the daemon's closes.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

int
raw_connect(int port)
{
	struct sockaddr_in sin;
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd == -1)
		fail_at(__FILE__, __LINE__, "socket: %s", strerror(errno));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		fail_at(__FILE__, __LINE__, "connect: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Send errors are ignored: the daemon may close on purpose mid-request. */
void
raw_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return;
		}
		p += n;
		len -= n;
	}
}

void
raw_sends(int fd, const char *s)
{
	raw_send(fd, s, strlen(s));
}

size_t
raw_echo_request(char *buf, size_t cap, int size, char fill)
{
	size_t len =
	    (size_t)snprintf(buf, cap, "*2\r\n$4\r\nECHO\r\n$%d\r\n", size);

	assert_true(len + (size_t)size + 2 <= cap);
	memset(buf + len, fill, (size_t)size);
	memcpy(buf + len + size, "\r\n", 2);
	return len + (size_t)size + 2;
}

size_t
raw_read(int fd, char *buf, size_t cap, int idle_ms, int *closed)
{
	struct pollfd pfd;
	size_t used = 0;
	ssize_t n;

	*closed = 0;
	while (used < cap - 1) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, idle_ms) <= 0)
			break;
		n = recv(fd, buf + used, cap - 1 - used, 0);
		if (n == 0 || (n == -1 && errno != EINTR)) {
			*closed = 1;
			break;
		}
		if (n > 0)
			used += n;
	}
	buf[used] = '\0';
	return used;
}

size_t
raw_read_until(int fd, char *buf, size_t cap, const char *until, int idle_ms,
               int *closed)
{
	int64_t deadline = now_ms() + RAW_REPLY_MS;
	struct pollfd pfd;
	size_t used = 0;
	ssize_t n;
	int wait;

	*closed = 0;
	buf[0] = '\0';
	while (used < cap - 1) {
		/* Before until has come, the reply is only slow; after it,
		 * silence is the end. */
		wait = idle_ms;
		if (until[0] != '\0' && strstr(buf, until) == NULL) {
			wait = (int)(deadline - now_ms());
			if (wait <= 0)
				break;
		}
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, wait) <= 0)
			break;
		n = recv(fd, buf + used, cap - 1 - used, 0);
		if (n == 0 || (n == -1 && errno != EINTR)) {
			*closed = 1;
			break;
		}
		if (n > 0) {
			used += n;
			buf[used] = '\0';
		}
	}
	buf[used] = '\0';
	return used;
}

size_t
raw_read_n(int fd, char *buf, size_t want, int timeout_ms)
{
	struct pollfd pfd;
	int64_t deadline = now_ms() + timeout_ms;
	size_t used = 0;
	ssize_t n;
	int left;

	while (used < want) {
		left = (int)(deadline - now_ms());
		if (left <= 0)
			break;
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, left) <= 0)
			break;
		n = recv(fd, buf + used, want - used, 0);
		if (n <= 0)
			break;
		used += n;
	}
	buf[used] = '\0';
	return used;
}

int
raw_connect_small(int port, int rcv)
{
	struct sockaddr_in sin;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

char *
http_get(int port, const char *path)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap), req[256];
	ssize_t n;
	int fd = raw_connect(port);

	assert_non_null(buf);
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
	raw_sends(fd, req);
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 4096) {
			cap *= 2;
			assert_non_null(buf = realloc(buf, cap));
		}
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}
