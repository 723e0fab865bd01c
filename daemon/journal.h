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
/*
 * NULL while the journal can be written, else why not ("write: No space
 * left on device"), for /healthz. Set by a write or an fsync that fails;
 * cleared by the next that succeeds, or by the probe that the journal
 * runs every second meanwhile, so that health comes back with the disk
 * even when no change is asked for.
 */
const char *journal_failure(const struct journal *);

/* What /metrics shows of the journal. */
#define JOURNAL_FSYNC_BUCKETS 12
extern const double journal_fsync_bounds[JOURNAL_FSYNC_BUCKETS]; /* s */
struct journal_stats {
	uint64_t write_errors;  /* records that could not be written */
	uint64_t bytes_written; /* records, and compactions' snapshots */
	uint64_t fsyncs;        /* fdatasync calls, and their time: */
	uint64_t fsync_us_sum;
	uint64_t fsync_buckets[JOURNAL_FSYNC_BUCKETS]; /* not cumulative */
	uint64_t last_compaction_ms; /* Unix ms of the last one; 0 none */
};
const struct journal_stats *journal_stats(const struct journal *);

/* The file's size in bytes now (INFO's persistence section). */
uint64_t journal_size(const struct journal *);
/* Changes the fsync policy (reload). */
void journal_set_fsync(struct journal *, enum config_fsync);
/* Syncs and closes. */
void journal_close(struct journal *);

#endif
