/*
 * The admin view's last hour (protocol-v2 section 11): every
 * ADMIN_HISTORY_STEP_S, the users waiting and the users matched so far, as
 * STATS tells them, so that a page opened now draws the hour before it.
 */
#ifndef CSQD_ADMIN_HISTORY_H
#define CSQD_ADMIN_HISTORY_H

struct admin_history;
struct csq_engine;
struct evbuffer;
struct event_base;

struct admin_history *admin_history_new(struct event_base *,
                                        struct csq_engine *);
/* A sample still being asked for is answered to nobody. */
void admin_history_free(struct admin_history *);

/* The samples of the last hour, oldest first, as a JSON array of
 * [time (Unix ms), waiting, matched in the minute before it, or null
 * while the history is shorter than a minute]. */
void admin_history_json(const struct admin_history *, struct evbuffer *);

#endif
