/*
 * Listening sockets: TCP on IPv4 and IPv6, and Unix sockets. Each accepted
 * connection becomes a client, unless max_clients are connected already.
 */
#ifndef CSQD_LISTENER_H
#define CSQD_LISTENER_H

struct server;

/* Opens every address of the configuration; -1 (logged) on failure. */
int listener_open_all(struct server *);
/* Stops accepting and closes every listening socket. */
void listener_close_all(struct server *);

#endif
