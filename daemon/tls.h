/*
 * TLS (protocol-v2 section 10): OpenSSL under libevent's
 * bufferevent_openssl, for the RESP ports of tls.listen and, with
 * http.tls, the HTTP endpoint. TLS 1.2 and later; the certificate and
 * key are read again at every SIGHUP; client certificates are asked for
 * and verified against tls.ca when tls.verify_clients is set.
 */
#ifndef CSQD_TLS_H
#define CSQD_TLS_H

#include <event2/util.h>

struct bufferevent;
struct config;
struct event_base;
struct tls;

/* The context of cfg's tls keys, or NULL with the reason logged. */
struct tls *tls_new(const struct config *cfg);
/*
 * Reads the certificate, key and CAs again (they may have been renewed
 * in place): 0, and new connections use them (open ones keep theirs), or
 * -1 with the reason logged and the running ones kept.
 */
int tls_reload(struct tls *, const struct config *cfg);
void tls_free(struct tls *);

/* A bufferevent that accepts a TLS connection on fd (-1: evhttp sets it
 * later); it owns fd. NULL on failure. */
struct bufferevent *tls_accept(struct tls *, struct event_base *,
                               evutil_socket_t fd);
/* Sends the close_notify of the connection, before its TCP close. */
void tls_close_notify(struct bufferevent *);
/* Why a TLS connection failed, for the log ("" when OpenSSL says
 * nothing). */
const char *tls_last_error(struct bufferevent *, char *buf, size_t len);

#endif
