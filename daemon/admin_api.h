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

/* An error answer of the API: {"error": text}. */
void admin_api_error(struct evhttp_request *, int code, const char *reason,
                     const char *text);

#endif
