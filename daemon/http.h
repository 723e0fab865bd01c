/*
 * The HTTP endpoint on http.listen (libevent's evhttp): GET /healthz for
 * load balancers and supervisors, GET /metrics for Prometheus, and the
 * admin view (admin_page.h, admin_api.h, admin_events.h) behind HTTP
 * Basic auth when a password is set (http_auth.h).
 */
#ifndef CSQD_HTTP_H
#define CSQD_HTTP_H

struct csq_event;
struct evbuffer;
struct evhttp_request;
struct server;

/* Listens on s->cfg.http_listen ("" = off); -1 (logged) on failure. */
int http_open(struct server *);
/* Stops listening and drops the HTTP connections. */
void http_close(struct server *);
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
