/*
 * The HTTP endpoint on http.listen (libevent's evhttp): GET /healthz for
 * load balancers and supervisors, GET /metrics for Prometheus, and the
 * admin view (admin_page.h, admin_api.h, admin_events.h) behind HTTP
 * Basic auth when a password is set (http_auth.h), and POST /api/v1/ for
 * frontends and agents under their own users (http_api.h).
 */
#ifndef CSQD_HTTP_H
#define CSQD_HTTP_H

#include <stddef.h>

struct csq_event;
struct evbuffer;
struct evhttp_request;
struct server;

/* Listens on s->cfg.http_listen ("" = off); -1 (logged) on failure. */
int http_open(struct server *);
/* Stops listening and drops the HTTP connections. */
void http_close(struct server *);
/*
 * Output HTTP answers have waiting, all connections together (weighed
 * with the clients' against max_output_memory, client.c), and in *most
 * the largest one's.
 */
unsigned long long http_output(struct server *, size_t *most);
/* Closes the HTTP connection with the most output waiting, for
 * max_output_memory; returns how much it had. */
size_t http_shed(struct server *);
/* An answer of len bytes was queued: the output is weighed at the end of
 * this turn of the loop, before any of it is written. */
void http_weigh_soon(struct server *, size_t len);
/* An event of the engine, for the admin view's streams. */
void http_event(struct server *, const struct csq_event *);

/* A whole answer: body as the content of type; HEAD gets its length
 * and no body. No caching: everything csqd serves is live or built in. */
void http_reply(struct evhttp_request *, int code, const char *reason,
                const char *type, struct evbuffer *body);
/* The same with a line of text. */
void http_text(struct evhttp_request *, int code, const char *reason,
               const char *text);

#endif
