/*
 * The memory engine's append-only journal: every operation that may change
 * the state is written (and, with fsync = "always", on disk) before it
 * runs; at start the journal is replayed into the engine. See
 * docs/design.md for the format.
 */
#ifndef CSQD_JOURNAL_H
#define CSQD_JOURNAL_H

#include "config.h"
#include "engine.h"

struct event_base;
struct journal;

/*
 * Opens (or creates, 0600) the journal at path, replays it into the
 * memory engine e and hooks itself into e. A torn tail is cut and logged;
 * any other damage is an error: NULL, with the reason logged.
 */
struct journal *journal_open(struct event_base *, const char *path,
                             enum config_fsync, struct csq_engine *e);
/*
 * 1 while records written in this loop turn wait for their fsync (fsync =
 * "always"): output that tells of them must wait too. The commit callback
 * runs after each such fsync.
 */
int journal_uncommitted(const struct journal *);
void journal_set_commit_cb(struct journal *, void (*)(void *), void *);
/* Changes the fsync policy (reload). */
void journal_set_fsync(struct journal *, enum config_fsync);
/* Syncs and closes. */
void journal_close(struct journal *);

#endif
