/*
 * The HTTP API for frontends and agents (docs/protocol.md section 11c):
 * POST /api/v1/<command> with a JSON object of the command's arguments,
 * under the same users, roles and ids as RESP (HTTP Basic auth, or a
 * user's bearer token). A request becomes the argv that RESP would carry
 * and runs through the command table (command_dispatch) on a client
 * without a connection, so every rule, check and error is RESP's; the
 * RESP3 reply comes back as JSON.
 */
#ifndef CSQD_HTTP_API_H
#define CSQD_HTTP_API_H

#include <stddef.h>

struct admin_events;
struct evhttp_request;
struct http_api;
struct server;

/* Bytes of a request's body: the longest HEARTBEAT fits (32 queues of 64
 * bytes and 32 skills), with room. */
#define HTTP_API_BODY_MAX 8192
#define HTTP_API_PREFIX   "/api/v1/"

/* events: the streams GET /api/v1/events joins (admin_events.h). */
struct http_api *http_api_new(struct server *, struct admin_events *events);
/* Requests still waiting for the engine are answered no more. */
void http_api_free(struct http_api *);
/* A request to HTTP_API_PREFIX + name: a command, or "events" (GET: the
 * events the user may hear, as Server-Sent Events). Every answer carries
 * CORS headers for an Origin of http.cors_origins, and a preflight
 * (OPTIONS with Access-Control-Request-Method) is answered without
 * credentials. */
void http_api_serve(struct http_api *, struct evhttp_request *,
                    const char *name);

/* 0 when every operation the API serves fits its row of the table of
 * operations (lib/op.h): a command with an id first, its positional
 * fields the words its arity counts, options only where the arity is
 * "at least"; else -1 with why (tests/unit/test_http_api.c). */
int http_api_check(char *why, size_t len);

#endif
