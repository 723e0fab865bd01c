/*
 * Webhooks (docs/protocol.md, "Webhooks"): each event whose channels match
 * an entry's glob is POSTed, as the JSON of csq_event_json, to the entry's
 * URL. One connection and one request in flight per URL, so that a URL gets
 * its events in order; a failure is retried with backoff; the events
 * waiting for a URL are bounded (max_backlog), the oldest dropped when
 * full, so that a slow or dead receiver never holds up matching.
 */
#ifndef CSQD_WEBHOOK_H
#define CSQD_WEBHOOK_H

#include "config.h"

struct event_base;
struct evbuffer;
struct csq_event;
struct webhooks;

/* NULL when cfg has no webhooks; the entries were checked by config.c. */
struct webhooks *webhooks_new(struct event_base *, const struct config *cfg);
/*
 * The webhooks of cfg after a reload (SIGHUP), in place of old (freed;
 * NULL is fine): an entry the reload did not change keeps its connection,
 * its backlog, the event in flight and its counters; a new or changed one
 * starts empty; one no longer there goes, with what it held (logged).
 * NULL when cfg has none.
 */
struct webhooks *webhooks_reload(struct webhooks *old, struct event_base *,
                                 const struct config *cfg);
/* Pending deliveries are abandoned. NULL is fine. */
void webhooks_free(struct webhooks *);
/* One event, from the emit path: queued for each matching URL. */
void webhooks_event(struct webhooks *, const struct csq_event *);
/* The csq_webhook_* families of /metrics; nothing for NULL. */
void webhooks_render(const struct webhooks *, struct evbuffer *);
/* http:// and https:// URLs (with a host, no user:password@, no
 * #fragment): NULL when url can be used, else why. */
const char *webhooks_check_url(const char *url);

#endif
