/*
 * The admin view's events (protocol-v2 section 11): GET /api/events, a
 * Server-Sent Events stream of every csq event, and the ring of recent
 * events that a stream resumes from (Last-Event-ID).
 *
 * Every event of the engine goes into the ring (http.event_history of
 * them), then, at the end of the loop turn, to every stream at once. A
 * stream whose client reads too slowly is closed when its unsent bytes
 * would pass http.event_stream_buffer: its memory is bounded, and csqd
 * never waits for it.
 */
#ifndef CSQD_ADMIN_EVENTS_H
#define CSQD_ADMIN_EVENTS_H

#include <stdint.h>

#include "config.h"
#include "csq.h"

struct admin_events;
struct config;
struct csq_engine;
struct event_base;
struct evhttp_request;

/* cfg is read at each new stream and event (a reload applies to it);
 * its event_history is the ring's size for good. The engine tells where
 * its events stand when a stream starts. */
struct admin_events *admin_events_new(struct event_base *,
                                      const struct config *cfg,
                                      struct csq_engine *);
/* Closes every stream. */
void admin_events_free(struct admin_events *);

/* An event of the engine, in id order. */
void admin_events_publish(struct admin_events *, const struct csq_event *);

/*
 * GET /api/events: starts a stream. It resumes after the id in the
 * Last-Event-ID header, or in the query's last_event_id (a browser's
 * EventSource cannot set the header on its first connection): from the
 * ring when it holds every event after that id, else with an event
 * "resync". Without either, it starts with the next event.
 */
void admin_events_serve(struct admin_events *, struct evhttp_request *);

/* Whose events a stream of the HTTP API carries (GET /api/v1/events,
 * protocol.md section 11c): those on a user:<id> channel (a frontend's)
 * or a servicer:<id> channel (a servicer's), of an id matching one of
 * ids (none: every id), as SUBSCRIBE would let the same user hear. */
enum admin_see { ADMIN_SEE_USERS, ADMIN_SEE_SERVICERS };
struct admin_filter {
	enum admin_see see;
	int nids;
	char ids[CONFIG_IDS_MAX][CONFIG_ID_GLOB_MAX];
};

/* 1 when http.max_event_streams are open: another would be refused. */
int admin_events_full(const struct admin_events *);

/* The same stream, for f's events only (NULL: every event). */
void admin_events_serve_for(struct admin_events *, struct evhttp_request *,
                            const struct admin_filter *f);

/* For /metrics: streams open, the bytes they hold that their clients
 * have not taken, and the streams closed so far for not reading. */
void admin_events_stats(const struct admin_events *, uint64_t *streams,
                        uint64_t *unsent, uint64_t *closed);

#endif
