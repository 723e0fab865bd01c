/*
 * The journal file: a header, then records (lib/record.h) one after the
 * other. Writes are one write(2) per record, so a crash can only tear the
 * last one; a damaged record followed by more than one record's worth of
 * bytes cannot be a torn write, and is refused.
 */
#include "journal.h"

#include <errno.h>
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
#include "util.h"

#define JOURNAL_MAGIC     "CSQJOURNAL1\n"
#define JOURNAL_MAGIC_LEN (sizeof(JOURNAL_MAGIC) - 1)
#define JOURNAL_SYNC_S    1 /* fsync = "everysec" */

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
	uint64_t size;
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

static int
journal_sync(struct journal *j)
{
	if (!j->dirty)
		return 0;
	if (fdatasync(j->fd) != 0) {
		log_warn("journal %s: fdatasync", j->path);
		return -1;
	}
	j->dirty = 0;
	return 0;
}

/* The hook of the memory engine: the record goes out before the op runs. */
static int
journal_append(void *arg, const struct csq_op *op, uint64_t now)
{
	struct journal *j = arg;
	uint8_t buf[CSQ_RECORD_MAX];
	size_t len = csq_record_encode(op, now, buf);

	if (write_all(j->fd, buf, len) != 0) {
		log_warn("journal %s: write", j->path);
		/* A partial record would tear the middle of the file:
		 * cut back to the last whole one. */
		if (ftruncate(j->fd, (off_t)j->size) != 0 ||
		    lseek(j->fd, (off_t)j->size, SEEK_SET) < 0)
			fatal("journal %s: cannot repair", j->path);
		return -1;
	}
	j->size += len;
	j->dirty = 1;
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

static void
journal_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct journal *j = arg;

	(void)fd, (void)what;
	if (j->fsync == CONFIG_FSYNC_EVERYSEC)
		journal_sync(j);
}

static uint64_t
elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (uint64_t)(((int64_t)t1.tv_sec - t0->tv_sec) * 1000 +
	                  ((int64_t)t1.tv_nsec - t0->tv_nsec) / 1000000);
}

/*
 * Replays buf (the whole file) into e. Returns the length of the good
 * prefix to keep, or -1 when the file is damaged beyond a torn tail.
 */
static int64_t
journal_replay(const char *path, const uint8_t *buf, size_t size,
               struct csq_engine *e, uint64_t *records)
{
	struct csq_record_strings st;
	struct csq_op op;
	uint64_t now;
	size_t off = JOURNAL_MAGIC_LEN, len = 0;
	const char *why;

	*records = 0;
	while (off < size) {
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
		         csq_record_decode(buf + off + CSQ_RECORD_HEADER, len,
		                           &op, &now, &st) != 0)
			why = off + CSQ_RECORD_HEADER + len < size
			          ? "a damaged record"
			          : "a damaged last record";
		if (why != NULL) {
			/* Only the last record can be torn by a crash; a
			 * damaged one with more after it is corruption. */
			if ((len <= CSQ_RECORD_MAX - CSQ_RECORD_HEADER &&
			     off + CSQ_RECORD_HEADER + len < size &&
			     size - off >= CSQ_RECORD_HEADER) ||
			    size - off > CSQ_RECORD_MAX) {
				log_error("journal %s: %s at offset %zu, with "
				          "%zu bytes after it: corrupt in the "
				          "middle, refusing to start",
				          path, why, off, size - off);
				return -1;
			}
			log_warnx("journal %s: torn tail (%s) at offset %zu: "
			          "dropping its last %zu bytes",
			          path, why, off, size - off);
			return (int64_t)off;
		}
		csq_engine_memory_replay(e, &op, now);
		(*records)++;
		off += CSQ_RECORD_HEADER + len;
	}
	return (int64_t)off;
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
		log_warn("journal %s: open", path);
		return NULL;
	}
	if (fstat(fd, &sb) != 0 ||
	    (sb.st_size > 0 &&
	     (buf = journal_read(fd, (size_t)sb.st_size)) == NULL)) {
		log_warn("journal %s: read", path);
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
		if (ftruncate(fd, 0) != 0 ||
		    write_all(fd, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN) != 0) {
			log_warn("journal %s: write header", path);
			goto fail;
		}
		keep = JOURNAL_MAGIC_LEN;
	} else if (keep < sb.st_size && ftruncate(fd, keep) != 0) {
		log_warn("journal %s: cut torn tail", path);
		goto fail;
	}
	if (lseek(fd, keep, SEEK_SET) < 0 || fdatasync(fd) != 0) {
		log_warn("journal %s", path);
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
	close(j->fd);
	free(j->path);
	free(j);
}
