/*
 * The admin view's last hour (protocol-v2 section 11): every
 * ADMIN_HISTORY_STEP_S, the users waiting and the users matched so far, as
 * STATS tells them, so that a page opened now draws the hour before it,
 * and after a restart too when the samples have a file (http.history).
 */
#ifndef CSQD_ADMIN_HISTORY_H
#define CSQD_ADMIN_HISTORY_H

struct admin_history;
struct csq_engine;
struct evbuffer;
struct event_base;

/* path: the file the samples are kept in across a restart (written after
 * every sample, read at the start); NULL or "": none. */
struct admin_history *admin_history_new(struct event_base *,
                                        struct csq_engine *, const char *path);
/* A sample still being asked for is answered to nobody. */
void admin_history_free(struct admin_history *);

/* The samples of the last hour, oldest first, as a JSON array of
 * [time (Unix ms), waiting, matched in the minute before it, or null
 * while the history is shorter than a minute or a restart lies in it]. */
void admin_history_json(const struct admin_history *, struct evbuffer *);

#endif
