/*
 * The journal file: a header, then records (lib/record.h) one after the
 * other. Writes are one write(2) per record, so a crash can only tear the
 * last one; a damaged record with a whole record after it, or with more
 * than one record's worth of bytes after it that are not all zeros,
 * cannot be a torn write, and is refused.
 */
#include "journal.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "record.h"
#include "snapshot.h"
#include "util.h"

#define JOURNAL_MAGIC     "CSQJOURNAL1\n"
#define JOURNAL_MAGIC_LEN (sizeof(JOURNAL_MAGIC) - 1)
#define JOURNAL_SYNC_S    1 /* fsync = "everysec" */
/* Compaction when the file reaches this many times the last snapshot, and
 * never below JOURNAL_COMPACT_MIN bytes. */
#define JOURNAL_COMPACT_FACTOR 4
#define JOURNAL_COMPACT_MIN    (4u << 20)
#define JOURNAL_WRITE_BUF      (64 * 1024)
#define JOURNAL_FAILURE_MAX    128

const double journal_fsync_bounds[JOURNAL_FSYNC_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
    0.01,   0.025,   0.05,   0.1,   0.25,   1};

struct journal {
	int fd;
	char *path;
	enum config_fsync fsync;
	int dirty; /* written since the last fsync */
	struct event *timer;
	struct event *commit; /* fsync = "always": once per loop turn */
	int commit_pending;
	void (*committed)(void *);
	void *committed_arg;
	struct csq_engine *engine;
	struct event *compact; /* runs after the operation that asked */
	uint64_t compact_at;   /* size that triggers a compaction */
	uint64_t longest_pause_ms;
	uint64_t size;
	/* Why the last write, or the last fsync, failed; "" when it did
	 * not. A write failure is the one /healthz names first. */
	char write_failed[JOURNAL_FAILURE_MAX];
	char sync_failed[JOURNAL_FAILURE_MAX];
	struct journal_stats st;
};

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static int
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static uint64_t
journal_now_us(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Notes a failure of what (errno tells why) in slot, logged when the
 * journal turns from good to failing only: with a full disk every
 * command that changes something fails, and each is answered TRYAGAIN.
 */
static void
journal_failed(struct journal *j, char *slot, const char *what)
{
	int was = j->write_failed[0] != '\0' || j->sync_failed[0] != '\0';

	snprintf(slot, JOURNAL_FAILURE_MAX, "%s: %s", what, strerror(errno));
	if (!was)
		log_warnx("journal %s: %s; changes answer TRYAGAIN until it "
		          "can be written again",
		          j->path, slot);
}

static void
journal_recovered(struct journal *j, char *slot)
{
	if (slot[0] == '\0')
		return;
	slot[0] = '\0';
	if (j->write_failed[0] == '\0' && j->sync_failed[0] == '\0')
		log_info("journal %s: writable again", j->path);
}

static int
journal_sync(struct journal *j)
{
	uint64_t t0, us;
	size_t i;

	if (!j->dirty)
		return 0;
	t0 = journal_now_us(CLOCK_MONOTONIC);
	if (fdatasync(j->fd) != 0) {
		journal_failed(j, j->sync_failed, "fdatasync");
		return -1;
	}
	us = journal_now_us(CLOCK_MONOTONIC) - t0;
	j->st.fsyncs++;
	j->st.fsync_us_sum += us;
	for (i = 0; i < JOURNAL_FSYNC_BUCKETS; i++)
		if ((double)us <= journal_fsync_bounds[i] * 1e6) {
			j->st.fsync_buckets[i]++;
			break;
		}
	j->dirty = 0;
	journal_recovered(j, j->sync_failed);
	return 0;
}

/*
 * While writes fail, once a second: whether a record of the largest size
 * would fit at the end now. Zeros are written there and cut again; a
 * crash in between leaves a tail of zeros, which the replay takes for a
 * torn write and cuts.
 */
static void
journal_probe(struct journal *j)
{
	static const uint8_t zeros[CSQ_RECORD_MAX];
	ssize_t n = pwrite(j->fd, zeros, sizeof(zeros), (off_t)j->size);
	int saved = errno;

	if (ftruncate(j->fd, (off_t)j->size) != 0)
		fatal("journal %s: cannot repair", j->path);
	if (n == (ssize_t)sizeof(zeros)) {
		journal_recovered(j, j->write_failed);
		return;
	}
	/* A short write is a full disk, as write_all would find out. */
	errno = n >= 0 ? ENOSPC : saved;
	journal_failed(j, j->write_failed, "write");
}

/* The hook of the memory engine: the record goes out before the op runs. */
static int
journal_append(void *arg, const struct csq_op *op, uint64_t now)
{
	struct journal *j = arg;
	uint8_t buf[CSQ_RECORD_MAX];
	size_t len = csq_record_encode(op, now, buf);

	if (write_all(j->fd, buf, len) != 0) {
		journal_failed(j, j->write_failed, "write");
		j->st.write_errors++;
		/* A partial record would tear the middle of the file:
		 * cut back to the last whole one. */
		if (ftruncate(j->fd, (off_t)j->size) != 0 ||
		    lseek(j->fd, (off_t)j->size, SEEK_SET) < 0)
			fatal("journal %s: cannot repair", j->path);
		return -1;
	}
	journal_recovered(j, j->write_failed);
	j->st.bytes_written += len;
	j->size += len;
	j->dirty = 1;
	if (j->size >= j->compact_at &&
	    !event_pending(j->compact, EV_TIMEOUT, NULL))
		event_active(j->compact, EV_TIMEOUT, 0);
	/* Group commit: one fsync at the end of this loop turn for every
	 * record written in it. Replies that depend on these records are
	 * held back until then (journal_uncommitted). */
	if (j->fsync == CONFIG_FSYNC_ALWAYS && !j->commit_pending) {
		j->commit_pending = 1;
		event_active(j->commit, EV_TIMEOUT, 0);
	}
	return 0;
}

static void
journal_commit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct journal *j = arg;

	(void)fd, (void)what;
	j->commit_pending = 0;
	/* Replies for these records are held: they must not leave unless
	 * the records are on disk. */
	if (journal_sync(j) != 0)
		fatalx("journal %s: cannot sync with fsync = always; "
		       "stopping before any reply promises what the disk "
		       "does not hold",
		       j->path);
	if (j->committed != NULL)
		j->committed(j->committed_arg);
}

int
journal_uncommitted(const struct journal *j)
{
	return j != NULL && j->commit_pending;
}

void
journal_set_commit_cb(struct journal *j, void (*cb)(void *), void *arg)
{
	j->committed = cb;
	j->committed_arg = arg;
}

static uint64_t elapsed_ms(const struct timespec *);

/* A buffered writer for compaction: records go out 64 KiB at a time. */
struct journal_writer {
	int fd;
	int failed;
	size_t len;
	uint64_t total;
	uint8_t buf[JOURNAL_WRITE_BUF];
};

static void
writer_flush(struct journal_writer *w)
{
	if (!w->failed && w->len > 0 && write_all(w->fd, w->buf, w->len) != 0)
		w->failed = 1;
	w->total += w->len;
	w->len = 0;
}

static void
writer_add(struct journal_writer *w, const void *p, size_t len)
{
	if (w->len + len > sizeof(w->buf))
		writer_flush(w);
	memcpy(w->buf + w->len, p, len);
	w->len += len;
}

static void
writer_item(void *arg, const struct csq_snap_item *it)
{
	struct journal_writer *w = arg;
	uint8_t rec[CSQ_RECORD_MAX];

	writer_add(w, rec, csq_record_encode_snap(it, rec));
}

static void
journal_schedule(struct journal *j)
{
	uint64_t base =
	    j->size > JOURNAL_COMPACT_MIN ? j->size : JOURNAL_COMPACT_MIN;

	j->compact_at = base * JOURNAL_COMPACT_FACTOR;
}

/*
 * Compaction: the live state as a snapshot (the limits, then every item)
 * in a new file, synced, then renamed over the journal. It runs between
 * two operations of the event loop, so no change can slip in meanwhile;
 * its length is the pause, logged, the longest kept.
 */
static void
journal_compact(struct journal *j)
{
	struct journal_writer *w = csq_xcalloc(1, sizeof(*w));
	const struct csq_policy *policies;
	char *tmp, *dir, *slash;
	uint8_t rec[CSQ_RECORD_MAX];
	struct timespec t0;
	struct csq_op op;
	uint64_t before = j->size, ms;
	size_t i, n;
	int dfd;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (asprintf(&tmp, "%s.compact", j->path) < 0)
		fatal("asprintf");
	w->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		log_warn("journal %s: compaction: open", tmp);
		goto out;
	}
	writer_add(w, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN);
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_LIMITS;
	op.limits = *csq_get_limits(csq_engine_memory_state(j->engine));
	writer_add(w, rec, csq_record_encode(&op, 0, rec));
	/* The policies before the state: a restored user's clocks are
	 * its queue's policy's. */
	policies = csq_get_policies(csq_engine_memory_state(j->engine), &n);
	op.code = CSQ_OP_POLICY;
	op.count = (uint32_t)n;
	for (i = 0; i < n; i++) {
		op.offset = i;
		op.policy = policies[i];
		writer_add(w, rec, csq_record_encode(&op, 0, rec));
	}
	csq_engine_memory_snapshot(j->engine, writer_item, w);
	writer_flush(w);
	if (w->failed || fdatasync(w->fd) != 0 || rename(tmp, j->path) != 0) {
		log_warn("journal %s: compaction failed; keeping the journal",
		         j->path);
		close(w->fd);
		unlink(tmp);
		goto out;
	}
	/* The rename is durable only once the directory is synced. */
	dir = csq_xstrndup(j->path, strlen(j->path));
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	if ((dfd = open(slash != NULL ? dir : ".", O_RDONLY | O_DIRECTORY)) >=
	    0) {
		(void)fsync(dfd);
		close(dfd);
	}
	free(dir);
	close(j->fd);
	j->fd = w->fd;
	j->size = w->total;
	j->dirty = 0;
	j->st.bytes_written += w->total;
	j->st.last_compaction_ms = journal_now_us(CLOCK_REALTIME) / 1000;
	ms = elapsed_ms(&t0);
	if (ms > j->longest_pause_ms)
		j->longest_pause_ms = ms;
	log_info("journal %s: compacted %" PRIu64 " to %" PRIu64
	         " bytes in %" PRIu64 " ms (longest pause so far %" PRIu64
	         " ms)",
	         j->path, before, j->size, ms, j->longest_pause_ms);
out:
	journal_schedule(j);
	free(tmp);
	free(w);
}

static void
journal_compact_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	journal_compact(arg);
}

static void
journal_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct journal *j = arg;

	(void)fd, (void)what;
	if (j->fsync == CONFIG_FSYNC_EVERYSEC)
		journal_sync(j);
	if (j->write_failed[0] != '\0')
		journal_probe(j);
}

const char *
journal_failure(const struct journal *j)
{
	if (j == NULL)
		return NULL;
	if (j->write_failed[0] != '\0')
		return j->write_failed;
	return j->sync_failed[0] != '\0' ? j->sync_failed : NULL;
}

const struct journal_stats *
journal_stats(const struct journal *j)
{
	return j != NULL ? &j->st : NULL;
}

static uint64_t
elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (uint64_t)(((int64_t)t1.tv_sec - t0->tv_sec) * 1000 +
	                  ((int64_t)t1.tv_nsec - t0->tv_nsec) / 1000000);
}

/* Decodes one payload and applies it to e: an operation or a snapshot
 * item. -1 when it is not a valid record or does not fit the state. */
static int
journal_apply(const uint8_t *payload, size_t len, struct csq_engine *e)
{
	struct csq_record_strings st;
	struct csq_snap_item it;
	struct csq_op op;
	uint64_t now;

	if (csq_record_is_snap(payload, len))
		return csq_record_decode_snap(payload, len, &it) != 0 ||
		               csq_engine_memory_restore(e, &it) != 0
		           ? -1
		           : 0;
	if (csq_record_decode(payload, len, &op, &now, &st) != 0)
		return -1;
	csq_engine_memory_replay(e, &op, now);
	return 0;
}

/*
 * Whether the bytes of buf from off, where a damaged record starts, can be
 * what a crash left of the last write. They can if they are all zeros
 * (blocks that a power cut left unwritten hold zeros, however many), or
 * if they are no longer than one record and hold no whole record, found
 * by its checksum at any offset: a record after the damage was written
 * after it, so the damage is not a torn last write.
 */
static int
journal_torn(const uint8_t *buf, size_t size, size_t off)
{
	size_t p, len;

	for (p = off; p < size && buf[p] == 0; p++)
		;
	if (p == size)
		return 1;
	if (size - off > CSQ_RECORD_MAX)
		return 0;
	for (p = off + 1; size - p >= CSQ_RECORD_HEADER; p++) {
		len = le32(buf + p);
		if (len > 0 && len <= size - p - CSQ_RECORD_HEADER &&
		    csq_crc32c(buf + p + CSQ_RECORD_HEADER, len) ==
		        le32(buf + p + 4))
			return 0;
	}
	return 1;
}

/*
 * A snapshot's items ended at offset off (a record that is not one, or
 * the end of what is kept): 0 when they make a state together. Items
 * that each fitted but not together are no torn write, and are refused.
 */
static int
journal_snapshot_end(const char *path, struct csq_engine *e, int *snap,
                     size_t off)
{
	if (!*snap)
		return 0;
	*snap = 0;
	if (csq_engine_memory_restore_end(e) == 0)
		return 0;
	log_error("journal %s: the snapshot before offset %zu is not a state "
	          "csqd could be in; refusing to start",
	          path, off);
	return -1;
}

/*
 * Replays buf (the whole file) into e. Returns the length of the good
 * prefix to keep, or -1 when the file is damaged beyond a torn tail.
 */
static int64_t
journal_replay(const char *path, const uint8_t *buf, size_t size,
               struct csq_engine *e, uint64_t *records)
{
	size_t off = JOURNAL_MAGIC_LEN, len = 0;
	const char *why;
	int snap = 0;

	*records = 0;
	while (off < size) {
		if (size - off >= CSQ_RECORD_HEADER + 1 &&
		    !csq_record_is_snap(buf + off + CSQ_RECORD_HEADER,
		                        size - off - CSQ_RECORD_HEADER) &&
		    journal_snapshot_end(path, e, &snap, off) != 0)
			return -1;
		why = NULL;
		if (size - off < CSQ_RECORD_HEADER)
			why = "a header cut short";
		else if ((len = le32(buf + off)) >
		         CSQ_RECORD_MAX - CSQ_RECORD_HEADER)
			why = "an impossible length";
		else if (size - off - CSQ_RECORD_HEADER < len)
			why = "a record cut short";
		else if (csq_crc32c(buf + off + CSQ_RECORD_HEADER, len) !=
		             le32(buf + off + 4) ||
		         journal_apply(buf + off + CSQ_RECORD_HEADER, len, e) !=
		             0)
			why = off + CSQ_RECORD_HEADER + len < size
			          ? "a damaged record"
			          : "a damaged last record";
		if (why != NULL) {
			/* Only the last record can be torn by a crash; a
			 * damaged one with more after it is corruption. */
			if (!journal_torn(buf, size, off)) {
				log_error("journal %s: %s at offset %zu, with "
				          "%zu bytes after it: corrupt in the "
				          "middle, refusing to start",
				          path, why, off, size - off);
				return -1;
			}
			log_warnx("journal %s: torn tail (%s) at offset %zu: "
			          "dropping its last %zu bytes",
			          path, why, off, size - off);
			return journal_snapshot_end(path, e, &snap, off) != 0
			           ? -1
			           : (int64_t)off;
		}
		snap = csq_record_is_snap(buf + off + CSQ_RECORD_HEADER, len);
		(*records)++;
		off += CSQ_RECORD_HEADER + len;
	}
	return journal_snapshot_end(path, e, &snap, off) != 0 ? -1
	                                                      : (int64_t)off;
}

/* Reads the whole file; it was just opened, nothing else writes it. */
static uint8_t *
journal_read(int fd, size_t size)
{
	uint8_t *buf = csq_xmalloc(size + 1);
	size_t got = 0;
	ssize_t n;

	while (got < size) {
		n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	return buf;
}

/* A journal csqd cannot open at start stops it: an error, with the key. */
static void
journal_open_error(const char *path, const char *step)
{
	log_error("journal %s: %s: %s; not starting: fix the file or its "
	          "directory, or change memory.journal",
	          path, step, strerror(errno));
}

struct journal *
journal_open(struct event_base *base, const char *path, enum config_fsync fsync,
             struct csq_engine *e)
{
	struct timeval tv = {JOURNAL_SYNC_S, 0};
	struct timespec t0;
	struct journal *j;
	struct stat sb;
	uint8_t *buf = NULL;
	uint64_t records = 0;
	int64_t keep;
	int fd;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		journal_open_error(path, "open");
		return NULL;
	}
	if (fstat(fd, &sb) != 0 ||
	    (sb.st_size > 0 &&
	     (buf = journal_read(fd, (size_t)sb.st_size)) == NULL)) {
		journal_open_error(path, "read");
		close(fd);
		return NULL;
	}
	if ((size_t)sb.st_size >= JOURNAL_MAGIC_LEN &&
	    memcmp(buf, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN) != 0) {
		log_error("journal %s: not a csq journal (bad header); "
		          "refusing to start",
		          path);
		goto fail;
	}
	if ((size_t)sb.st_size <= JOURNAL_MAGIC_LEN) {
		/* New, or torn while its header was being written. */
		keep = 0;
	} else if ((keep = journal_replay(path, buf, (size_t)sb.st_size, e,
	                                  &records)) < 0)
		goto fail;
	if (keep == 0) {
		/* From the start: reading a torn header (or a header alone)
		 * left the offset past it, and a header written there, after
		 * a hole of zeros, would be refused at the next start. */
		if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0 ||
		    write_all(fd, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN) != 0) {
			journal_open_error(path, "write header");
			goto fail;
		}
		keep = JOURNAL_MAGIC_LEN;
	} else if (keep < sb.st_size && ftruncate(fd, keep) != 0) {
		journal_open_error(path, "cut torn tail");
		goto fail;
	}
	if (lseek(fd, keep, SEEK_SET) < 0 || fdatasync(fd) != 0) {
		journal_open_error(path, "sync");
		goto fail;
	}
	free(buf);

	j = csq_xcalloc(1, sizeof(*j));
	j->fd = fd;
	j->path = csq_xstrndup(path, strlen(path));
	j->fsync = fsync;
	j->size = (uint64_t)keep;
	j->timer = event_new(base, -1, EV_PERSIST, journal_timer_cb, j);
	j->commit = event_new(base, -1, 0, journal_commit_cb, j);
	j->compact = event_new(base, -1, 0, journal_compact_cb, j);
	j->engine = e;
	journal_schedule(j);
	event_add(j->timer, &tv);
	csq_engine_memory_set_journal(e, journal_append, j);
	/* Nobody is lost for the time the daemon was down. */
	csq_engine_memory_rearm(e);
	log_info("journal %s: replayed %" PRIu64 " records (%" PRId64
	         " bytes) in %" PRIu64 " ms",
	         path, records, keep, elapsed_ms(&t0));
	return j;
fail:
	free(buf);
	close(fd);
	return NULL;
}

uint64_t
journal_size(const struct journal *j)
{
	return j->size;
}

void
journal_set_fsync(struct journal *j, enum config_fsync fsync)
{
	j->fsync = fsync;
}

void
journal_close(struct journal *j)
{
	if (j == NULL)
		return;
	j->dirty = 1;
	journal_sync(j);
	event_free(j->timer);
	event_free(j->commit);
	event_free(j->compact);
	close(j->fd);
	free(j->path);
	free(j);
}
