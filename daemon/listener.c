/* Listening sockets and the admission of new connections. */
#include "listener.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "client.h"
#include "log.h"
#include "loop.h"
#include "resp.h"
#include "server.h"
#include "util.h"

#define LISTEN_BACKLOG    511
#define ACCEPT_BACKOFF_MS 100   /* out of descriptors: pause accepting */
#define ACCEPT_LOG_MS     10000 /* at most one line about it this often */

struct listener {
	struct listener *next;
	struct server *server;
	struct evconnlistener *evl;
	struct accept_guard *guard;
	char path[CONFIG_STR_MAX]; /* unix socket to remove, or "" */
	char name[CONFIG_STR_MAX];
	int tls; /* a port of tls.listen */
};

/*
 * What a listening socket does when accept() fails. libevent hands the
 * error to the listener's error callback, whose argument is the accept
 * callback's: evhttp's own for the HTTP listener. So guards are found by
 * their listener, in this list.
 */
struct accept_guard {
	struct accept_guard *next;
	struct evconnlistener *evl;
	struct event *backoff;
	unsigned long failed; /* accepts that failed since the last line */
	uint64_t logged_us;   /* when that line was written; 0 never */
	char name[CONFIG_STR_MAX];
};

static struct accept_guard *guards;

static void
listener_accept_cb(struct evconnlistener *evl, evutil_socket_t fd,
                   struct sockaddr *sa, int salen, void *arg)
{
	struct listener *l = arg;
	struct server *s = l->server;
	struct client *c;
	int full;

	(void)evl, (void)sa, (void)salen;
	if (s->stopping) {
		evutil_closesocket(fd);
		return;
	}
	s->stats.connections_total++;
	full = s->nclients >= (uint64_t)s->cfg.max_clients;
	if ((c = client_new(s, fd, l->tls)) == NULL)
		return;
	if (full) {
		/* Told why, as Redis does, then closed gracefully. */
		s->stats.rejected_total++;
		resp_error(client_output(c),
		           "ERR max number of clients reached");
		client_close_after_reply(c);
	}
}

static void
guard_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct accept_guard *g = arg;

	(void)fd, (void)what;
	evconnlistener_enable(g->evl);
}

static void
guard_error_cb(struct evconnlistener *evl, void *arg)
{
	struct timeval tv = {0, ACCEPT_BACKOFF_MS * 1000};
	int err = EVUTIL_SOCKET_ERROR();
	struct accept_guard *g;

	(void)arg;
	for (g = guards; g != NULL && g->evl != evl; g = g->next)
		;
	if (g == NULL)
		return;
	/* Out of descriptors, this comes every ACCEPT_BACKOFF_MS, and while
	 * a backlog drains, between accepts that succeed: one line at most
	 * every ACCEPT_LOG_MS, which counts the failures since the last. */
	g->failed++;
	if (g->logged_us == 0 ||
	    loop_now_us() - g->logged_us >= ACCEPT_LOG_MS * 1000u) {
		log_warnx("accept on %s: %s; retrying (failures since the "
		          "last line: %lu)",
		          g->name, evutil_socket_error_to_string(err),
		          g->failed);
		g->failed = 0;
		g->logged_us = loop_now_us();
	}
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		/* Retrying at once would spin: the socket stays readable.
		 * Wait for descriptors. */
		evconnlistener_disable(g->evl);
		evtimer_add(g->backoff, &tv);
	}
}

struct accept_guard *
accept_guard_new(struct event_base *base, struct evconnlistener *evl,
                 const char *name)
{
	struct accept_guard *g = csq_xcalloc(1, sizeof(*g));

	g->evl = evl;
	g->backoff = evtimer_new(base, guard_resume_cb, g);
	snprintf(g->name, sizeof(g->name), "%s", name);
	evconnlistener_set_error_cb(evl, guard_error_cb);
	g->next = guards;
	guards = g;
	return g;
}

void
accept_guard_free(struct accept_guard *g)
{
	struct accept_guard **p;

	for (p = &guards; *p != NULL; p = &(*p)->next) {
		if (*p == g) {
			*p = g->next;
			break;
		}
	}
	event_free(g->backoff);
	free(g);
}

static struct listener *
listener_add(struct server *s, const char *name, const struct sockaddr *sa,
             socklen_t salen, unsigned flags, int tls)
{
	struct listener *l = csq_xcalloc(1, sizeof(*l));

	l->server = s;
	l->tls = tls;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->evl = evconnlistener_new_bind(s->base, listener_accept_cb, l,
	                                 LEV_OPT_CLOSE_ON_FREE |
	                                     LEV_OPT_CLOSE_ON_EXEC | flags,
	                                 LISTEN_BACKLOG, sa, (int)salen);
	if (l->evl == NULL) {
		/* Only a start opens listeners, and csqd stops without. */
		log_error("cannot listen on %s: %s; not starting: free the "
		          "address or change %s",
		          name, strerror(errno), tls ? "tls.listen" : "listen");
		free(l);
		return NULL;
	}
	l->guard = accept_guard_new(s->base, l->evl, name);
	l->next = s->listeners;
	s->listeners = l;
	return l;
}

static int
listener_open_unix(struct server *s, const char *name, const char *path,
                   int tls)
{
	struct sockaddr_un sun;
	struct listener *l;
	struct stat st;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("unix socket path too long: %s", path);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path));
	/* A socket left by an earlier run is in the way; anything else
	 * at that path is not ours to remove. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	l = listener_add(s, name, (struct sockaddr *)&sun, sizeof(sun), 0, tls);
	if (l == NULL)
		return -1;
	snprintf(l->path, sizeof(l->path), "%s", path);
	return 0;
}

struct addrinfo *
listener_resolve(const char *name, const char *key, const char *host, int port)
{
	struct addrinfo hints, *res;
	char service[16];
	int err;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(service, sizeof(service), "%d", port);
	if ((err = getaddrinfo(host, service, &hints, &res)) != 0) {
		log_error("cannot listen on %s: %s; not starting: change %s",
		          name, gai_strerror(err), key);
		return NULL;
	}
	return res;
}

static int
listener_open_tcp(struct server *s, const char *name, const char *host,
                  int port, int tls)
{
	struct addrinfo *res, *ai;
	int n = 0;

	if ((res = listener_resolve(name, tls ? "tls.listen" : "listen", host,
	                            port)) == NULL)
		return -1;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (listener_add(s, name, ai->ai_addr, ai->ai_addrlen,
		                 LEV_OPT_REUSEABLE, tls) == NULL) {
			freeaddrinfo(res);
			return -1;
		}
		n++;
	}
	freeaddrinfo(res);
	return n > 0 ? 0 : -1;
}

/* Opens the addresses of one list (listen, or tls.listen). */
static int
listener_open_list(struct server *s, int n, char list[][CONFIG_STR_MAX],
                   int tls)
{
	struct config_addr addr;
	int i;

	for (i = 0; i < n; i++) {
		const char *name = list[i];

		if (config_parse_addr(name, &addr) != 0) {
			log_warnx("invalid listen address: %s", name);
			return -1;
		}
		if (addr.is_unix
		        ? listener_open_unix(s, name, addr.host, tls)
		        : listener_open_tcp(s, name, addr.host, addr.port, tls))
			return -1;
		log_info("listening on %s%s", name, tls ? " (TLS)" : "");
	}
	return 0;
}

int
listener_open_all(struct server *s)
{
	if (listener_open_list(s, s->cfg.nlisten, s->cfg.listen, 0) != 0)
		return -1;
	return listener_open_list(s, s->cfg.ntls_listen, s->cfg.tls_listen, 1);
}

void
listener_close_all(struct server *s)
{
	struct listener *l;

	while ((l = s->listeners) != NULL) {
		s->listeners = l->next;
		accept_guard_free(l->guard);
		evconnlistener_free(l->evl);
		if (l->path[0] != '\0')
			unlink(l->path);
		free(l);
	}
}
