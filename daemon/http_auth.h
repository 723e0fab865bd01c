/*
 * HTTP Basic auth for the admin view (protocol-v2 sections 9 and 11): with
 * requirepass or users set, every path but /healthz and /metrics needs a
 * user of role admin and its password, as AUTH takes them ("default" and
 * requirepass are one).
 */
#ifndef CSQD_HTTP_AUTH_H
#define CSQD_HTTP_AUTH_H

#include <stddef.h>

struct config;
struct evhttp_request;

/* 1 when req may see the admin view: nothing is required, or its
 * Authorization header names an admin and the right password. */
int http_auth_ok(const struct config *, struct evhttp_request *);
/* Decodes base64 (padding optional) into out, cap bytes at most; its
 * length, or -1 (not base64, or too long). */
int http_auth_decode(const char *in, char *out, size_t cap);
/* 401 with the challenge that makes a browser ask. */
void http_auth_challenge(struct evhttp_request *);

#endif
