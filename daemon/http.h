/*
 * The HTTP endpoint on http.listen (libevent's evhttp): GET /healthz for
 * load balancers and supervisors, GET /metrics for Prometheus.
 */
#ifndef CSQD_HTTP_H
#define CSQD_HTTP_H

struct server;

/* Listens on s->cfg.http_listen ("" = off); -1 (logged) on failure. */
int http_open(struct server *);
/* Stops listening and drops the HTTP connections. */
void http_close(struct server *);

#endif
