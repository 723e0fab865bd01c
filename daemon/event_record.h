/*
 * The record of the day: every event csqd publishes, as the JSON line of
 * lib/event.c (csq_event_json, with its id and time), appended to a file
 * (record.path). Lines are buffered and written once per loop turn; output
 * that tells of them (replies, pushes to subscribers) waits for that
 * write, and with fsync = "always" for its fdatasync, as it waits for the
 * journal's (server_hold_output). The file is rotated by size or at the
 * first event of a new UTC day, rotated files older than record.keep_days
 * are removed, and a restart appends to the file it finds (a torn last
 * line, from a crash in the middle of a write, is cut first).
 * docs/operations.md, "The record of the day".
 */
#ifndef CSQD_EVENT_RECORD_H
#define CSQD_EVENT_RECORD_H

#include "config.h"

struct event_base;
struct event_record;

/* Opens (creates, 0640) cfg->record_path for appending. NULL with the
 * reason logged when it cannot be opened or its tail is not a line. */
struct event_record *event_record_open(struct event_base *,
                                       const struct config *);
/* Appends ev's line to the buffer; it is written at the end of this turn.
 * Returns the line (csq_event_json's, without the newline) and its length
 * in *len, valid until the next call, for the publish to send as it is;
 * NULL when the line was too long to record. */
const char *event_record_event(struct event_record *, const struct csq_event *,
                               size_t *len);
/* 1 while lines of this loop turn wait to be written (and synced). */
int event_record_pending(const struct event_record *);
/* Runs after each write at the end of a turn (the server's release). */
void event_record_set_flush_cb(struct event_record *, void (*)(void *), void *);
/* The fsync policy, rotation and retention of a reloaded configuration
 * (the path needs a restart). */
void event_record_reconfigure(struct event_record *, const struct config *);
/* Writes what is buffered, syncs and closes; NULL is fine. */
void event_record_close(struct event_record *);

#endif
