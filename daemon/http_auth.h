/*
 * HTTP Basic auth for the admin view (protocol-v2 sections 9 and 11): with
 * requirepass or users set, every path but /healthz and /metrics needs a
 * user of role admin and its password, as AUTH takes them ("default" and
 * requirepass are one).
 */
#ifndef CSQD_HTTP_AUTH_H
#define CSQD_HTTP_AUTH_H

struct config;
struct evhttp_request;

/* 1 when req may see the admin view: nothing is required, or its
 * Authorization header names an admin and the right password. */
int http_auth_ok(const struct config *, struct evhttp_request *);
/* 401 with the challenge that makes a browser ask. */
void http_auth_challenge(struct evhttp_request *);

#endif
