/*
 * Listening sockets: TCP on IPv4 and IPv6, and Unix sockets. Each accepted
 * connection becomes a client, unless max_clients are connected already.
 */
#ifndef CSQD_LISTENER_H
#define CSQD_LISTENER_H

struct event_base;
struct evconnlistener;
struct server;
struct accept_guard;
struct addrinfo;

/* Opens every address of the configuration; -1 (logged) on failure. */
int listener_open_all(struct server *);
/* The addresses to listen on for host:port (freeaddrinfo them), or NULL
 * with the reason logged as an error that stops csqd; name is the address
 * as configured, key the configuration key that holds it. */
struct addrinfo *listener_resolve(const char *name, const char *key,
                                  const char *host, int port);
/* Stops accepting and closes every listening socket. */
void listener_close_all(struct server *);

/*
 * When accept() on evl fails for want of descriptors or memory, it pauses
 * for 100 ms, where retrying at once would spin on a socket that stays
 * readable, and logs one line at most every 10 s, named name. Free it
 * before evl.
 */
struct accept_guard *accept_guard_new(struct event_base *,
                                      struct evconnlistener *evl,
                                      const char *name);
void accept_guard_free(struct accept_guard *);

#endif
