/*
 * The admin view's JSON API (protocol-v2 section 11):
 *
 *   GET /api/snapshot               the whole state, with the id of its
 *                                   last event
 *   GET /api/queue/<q>?offset&count a page of q's line
 *
 * Each asks the engine through the calls of the commands (STATS, QUEUES,
 * SERVICERS, ROOMS; QUEUES and QUEUE), made as one group: no other call
 * comes between them on any daemon, so that what the answer shows is one
 * state, that of the event id it carries. A client that then follows the
 * events after that id (admin_events.h) misses none and counts none twice.
 */
#ifndef CSQD_ADMIN_API_H
#define CSQD_ADMIN_API_H

#include <stddef.h>

struct admin_api;
struct admin_history;
struct evhttp_request;
struct server;

/* The snapshot carries history's samples too (the page's chart). */
struct admin_api *admin_api_new(struct server *, struct admin_history *);
/* The calls still out answer later, to nobody. */
void admin_api_free(struct admin_api *);

void admin_api_snapshot(struct admin_api *, struct evhttp_request *);
/* queue: the path after "/api/queue/", still %-encoded. */
void admin_api_queue(struct admin_api *, struct evhttp_request *,
                     const char *queue);

/*
 * The snapshots being made (issue 37), their bodies so far together, and
 * in *most the largest one's: weighed against max_output_memory with the
 * HTTP answers waiting to be sent (http_output).
 */
size_t admin_api_making(const struct admin_api *, size_t *most);
/* Drops the largest snapshot being made, for max_output_memory, with a
 * line: its requests get 503. Returns how much it held (0: none). */
size_t admin_api_drop(struct admin_api *);

/* An error answer of the API: {"error": text}. */
void admin_api_error(struct evhttp_request *, int code, const char *reason,
                     const char *text);

#endif
