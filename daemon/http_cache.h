/*
 * One answer shared by the requests of an expensive view (/metrics,
 * /api/snapshot), whose work grows with the whole state (issue 37: 20
 * concurrent /metrics at 100,000 queues stalled every other client for
 * 3 s). A request that comes while the answer is being made waits for
 * it, one that comes within http.cache_ms of it gets it as it is: one
 * round of engine calls at a time, and at most one per http.cache_ms,
 * however many ask. The answer's bytes are shared by reference, not
 * copied per request.
 */
#ifndef CSQD_HTTP_CACHE_H
#define CSQD_HTTP_CACHE_H

struct evbuffer;
struct evhttp_request;
struct http_cache;
struct server;

/* type: the answers' Content-Type (a string that lives on). */
struct http_cache *http_cache_new(struct server *, const char *type);
/* Answers nobody more: the requests still waiting are dropped. */
void http_cache_free(struct http_cache *);

/*
 * Takes req: answered now from a fresh answer (returns 1), or kept until
 * the next one (returns 0); then *start is 1 when no answer is being made
 * and the caller must begin one (and end it with http_cache_fill).
 */
int http_cache_take(struct http_cache *, struct evhttp_request *, int *start);

/* The answer made: sent to every request waiting, and kept for
 * http.cache_ms when it is a 200 (an error is for the waiting only). */
void http_cache_fill(struct http_cache *, int code, const char *reason,
                     struct evbuffer *body);

#endif
