/*
 * The record of the day (event_record.h): a buffer of JSON lines written
 * with one write(2) per loop turn, the file it goes to, its rotation and
 * its retention.
 */
#include "event_record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/aio_abi.h>

#include <event2/event.h>

#include "log.h"
#include "util.h"

#define RECORD_LINE_MAX    4096 /* longer lines are refused (none is) */
#define RECORD_DAY_MS      86400000ULL
#define RECORD_SYNC_S      1           /* fsync = "everysec", and retries */
#define RECORD_BUFFER_MAX  (64u << 20) /* kept while writes fail */
#define RECORD_FAILURE_MAX 128
#define RECORD_HEAD_MAX    8192 /* bytes read for the first line */
#define RECORD_STAMP       "%Y%m%d-%H%M%S"
#define RECORD_STAMP_LEN   15 /* 20261129-014500 */

/*
 * fsync = "everysec": the once-a-second fdatasync is asynchronous, as
 * Redis's bio makes its append-only file's: in the loop it took from 1
 * to over 100 ms a second on a busy disk, and every client waited. Not
 * in a thread of csqd's own, though: once a process has a second thread,
 * glibc's malloc and free take the arena's lock with an atomic
 * instruction on every call that the per-thread cache does not serve,
 * and that cost csqd 110 to 130 ns an ENQUEUE, about 4 % of its time
 * at pipeline 16 (docs/benchmarks.md, the record of the day, 13:51 UTC).
 * So the sync is a Linux AIO request (IOCB_CMD_FDSYNC, Linux 4.18 and
 * later), which the kernel runs in a worker of its own; the next second
 * reaps it. One sync at a time; a second that finds the last one still
 * running skips its turn. Where io_setup is refused (an older kernel, a
 * seccomp filter), the fdatasync runs in the loop, said once in the log.
 */
struct record_syncer {
	aio_context_t ctx; /* 0: none, the sync runs in the loop */
	int busy;          /* a sync was submitted and not yet reaped */
	int inline_said;   /* the fallback was logged */
};

struct event_record {
	int fd;
	char *path;
	enum config_fsync fsync;
	uint64_t rotate_size; /* 0: no rotation by size */
	int rotate_daily;
	uint64_t keep_days; /* 0: every rotated file is kept */
	char *buf;          /* lines not written yet */
	size_t len, cap;
	uint64_t size;     /* of the file */
	uint64_t first_ts; /* the file's first event's time; 0: empty */
	uint64_t day_end;  /* the first ms of the UTC day after first_ts's */
	int dirty;         /* written since the last fdatasync */
	int pending;       /* the flush of this turn is due */
	struct event *flush_ev;
	struct event *timer;
	void (*flushed)(void *);
	void *flushed_arg;
	char failed[RECORD_FAILURE_MAX]; /* why the last write failed */
	uint64_t lost;                   /* lines dropped over the buffer */
	struct record_syncer sync;
};

static void
record_sync(struct event_record *r)
{
	if (!r->dirty)
		return;
	if (fdatasync(r->fd) != 0) {
		log_warn("record %s: fdatasync", r->path);
		return;
	}
	r->dirty = 0;
}

static long
record_io_getevents(aio_context_t ctx, struct io_event *ev,
                    struct timespec *timeout)
{
	return syscall(SYS_io_getevents, ctx, 1L, 1L, ev, timeout);
}

/* Reaps the sync in flight, if it is done (or, with wait, once it is). */
static void
record_sync_reap(struct event_record *r, int wait)
{
	struct record_syncer *y = &r->sync;
	struct timespec zero = {0, 0};
	struct io_event ev;
	long n;

	if (!y->busy)
		return;
	do
		n = record_io_getevents(y->ctx, &ev, wait ? NULL : &zero);
	while (n < 0 && errno == EINTR && wait);
	if (n == 0 || (n < 0 && errno == EINTR))
		return;
	y->busy = 0;
	if (n < 0)
		log_warn("record %s: io_getevents", r->path);
	else if (ev.res < 0)
		log_warnx("record %s: fdatasync: %s", r->path,
		          strerror((int)-ev.res));
}

/* The second's sync: submitted to the kernel, unless one runs. */
static void
record_sync_later(struct event_record *r)
{
	struct record_syncer *y = &r->sync;
	struct iocb cb, *cbs[1] = {&cb};

	record_sync_reap(r, 0);
	if (!r->dirty || y->busy)
		return;
	if (y->ctx != 0) {
		memset(&cb, 0, sizeof(cb));
		cb.aio_fildes = (uint32_t)r->fd;
		cb.aio_lio_opcode = IOCB_CMD_FDSYNC;
		/* The kernel holds the file until the sync is done: a
		 * rotation may close r->fd meanwhile. */
		if (syscall(SYS_io_submit, y->ctx, 1L, cbs) == 1) {
			y->busy = 1;
			r->dirty = 0;
			return;
		}
		/* Said once: from now on the sync runs in the loop. */
		log_warn("record %s: io_submit (fdatasync); fsync = "
		         "\"everysec\" syncs in the event loop from now",
		         r->path);
		(void)syscall(SYS_io_destroy, y->ctx);
		y->ctx = 0;
		y->inline_said = 1;
	} else if (!y->inline_said) {
		y->inline_said = 1;
		log_warnx("record %s: no asynchronous fdatasync here; fsync = "
		          "\"everysec\" syncs in the event loop",
		          r->path);
	}
	record_sync(r);
}

static void
record_failed(struct event_record *r, const char *what)
{
	if (r->failed[0] == '\0')
		log_warnx("record %s: %s: %s; events are kept in memory (%u "
		          "MiB at most) and written when it can be again",
		          r->path, what, strerror(errno),
		          RECORD_BUFFER_MAX >> 20);
	snprintf(r->failed, sizeof(r->failed), "%s: %s", what, strerror(errno));
}

/*
 * Writes the buffer at the end of the file. A write that fails half way
 * is cut back, so that the file holds whole lines only; the buffer is
 * kept for the next try. 0 when everything was written.
 */
static int
record_write(struct event_record *r)
{
	size_t off = 0;
	ssize_t n;

	while (off < r->len) {
		if ((n = write(r->fd, r->buf + off, r->len - off)) < 0) {
			if (errno == EINTR)
				continue;
			record_failed(r, "write");
			if (off > 0 && ftruncate(r->fd, (off_t)r->size) != 0)
				fatal("record %s: cannot cut a partial write",
				      r->path);
			if (r->len > RECORD_BUFFER_MAX) {
				size_t i, lines = 0;

				for (i = 0; i < r->len; i++)
					lines += r->buf[i] == '\n';
				r->lost += lines;
				r->len = 0;
				log_error(
				    "record %s: %zu events dropped (%" PRIu64
				    " so far): the disk took none for too "
				    "long",
				    r->path, lines, r->lost);
			}
			return -1;
		}
		off += (size_t)n;
	}
	r->size += r->len;
	r->len = 0;
	r->dirty = 1;
	if (r->failed[0] != '\0') {
		r->failed[0] = '\0';
		log_info("record %s: writable again", r->path);
	}
	return 0;
}

static void
record_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct event_record *r = arg;

	(void)fd, (void)what;
	r->pending = 0;
	if (record_write(r) == 0 && r->fsync == CONFIG_FSYNC_ALWAYS)
		record_sync(r);
	if (r->flushed != NULL)
		r->flushed(r->flushed_arg);
}

static void
record_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct event_record *r = arg;

	(void)fd, (void)what;
	if (r->len > 0 && !r->pending)
		(void)record_write(r);
	if (r->fsync == CONFIG_FSYNC_EVERYSEC)
		record_sync_later(r);
}

static void
record_set_first(struct event_record *r, uint64_t ts)
{
	r->first_ts = ts;
	r->day_end = ts - ts % RECORD_DAY_MS + RECORD_DAY_MS;
}

/* The directory of the record, and its file name in it. */
static void
record_split(const char *path, char *dir, size_t len, const char **base)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL) {
		snprintf(dir, len, ".");
		*base = path;
	} else if (slash == path) {
		snprintf(dir, len, "/");
		*base = slash + 1;
	} else {
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
		*base = slash + 1;
	}
}

static void
record_sync_dir(const char *path)
{
	char dir[CONFIG_STR_MAX];
	const char *base;
	int dfd;

	record_split(path, dir, sizeof(dir), &base);
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
}

/* The time in a rotated file's name (base.YYYYmmdd-HHMMSS[-n]), in ms;
 * 0 when name is not one of this record's rotated files. */
static uint64_t
record_rotated_ms(const char *name, const char *base)
{
	size_t blen = strlen(base);
	struct tm tm;
	const char *end;
	time_t t;

	if (strncmp(name, base, blen) != 0 || name[blen] != '.')
		return 0;
	memset(&tm, 0, sizeof(tm));
	end = strptime(name + blen + 1, RECORD_STAMP, &tm);
	if (end == NULL || end != name + blen + 1 + RECORD_STAMP_LEN ||
	    (*end != '\0' && *end != '-'))
		return 0;
	if ((t = timegm(&tm)) < 0)
		return 0;
	return (uint64_t)t * 1000;
}

/* Removes the rotated files whose first event is over keep_days older
 * than now (an event's time). */
static void
record_prune(struct event_record *r, uint64_t now)
{
	char dir[CONFIG_STR_MAX], victim[2 * CONFIG_STR_MAX];
	uint64_t keep = r->keep_days * RECORD_DAY_MS, ms;
	const char *base;
	struct dirent *de;
	DIR *d;

	if (r->keep_days == 0 || now < keep)
		return;
	record_split(r->path, dir, sizeof(dir), &base);
	if ((d = opendir(dir)) == NULL) {
		log_warn("record %s: retention: opendir %s", r->path, dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if ((ms = record_rotated_ms(de->d_name, base)) == 0 ||
		    ms >= now - keep)
			continue;
		snprintf(victim, sizeof(victim), "%s/%s", dir, de->d_name);
		if (unlink(victim) == 0)
			log_info("record %s: removed %s (older than %" PRIu64
			         " days)",
			         r->path, victim, r->keep_days);
		else
			log_warn("record %s: retention: unlink %s", r->path,
			         victim);
	}
	closedir(d);
}

static int
record_open_fd(const char *path)
{
	return open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

/*
 * The file so far is renamed after its first event (path.YYYYmmdd-HHMMSS,
 * -1, -2... when that name is taken) and a new one begins. What is
 * buffered goes to the old file first. A rotation that fails keeps
 * writing to the file it has.
 */
static void
record_rotate(struct event_record *r, uint64_t now)
{
	char to[CONFIG_STR_MAX + 32];
	struct tm tm;
	time_t t = (time_t)(r->first_ts / 1000);
	size_t off;
	int fd, n;

	if (record_write(r) != 0)
		return;
	record_sync(r);
	gmtime_r(&t, &tm);
	off = (size_t)snprintf(to, sizeof(to), "%s.", r->path);
	strftime(to + off, sizeof(to) - off, RECORD_STAMP, &tm);
	off = strlen(to);
	for (n = 1; access(to, F_OK) == 0 && n < 1000; n++)
		snprintf(to + off, sizeof(to) - off, "-%d", n);
	if (rename(r->path, to) != 0) {
		log_warn("record %s: rotation: rename to %s", r->path, to);
		return;
	}
	if ((fd = record_open_fd(r->path)) < 0) {
		/* Renamed, the old descriptor still writes to it. */
		log_warn("record %s: rotation: open", r->path);
		return;
	}
	close(r->fd);
	r->fd = fd;
	r->size = 0;
	r->first_ts = 0;
	r->dirty = 0;
	record_sync_dir(r->path);
	log_info("record %s: rotated to %s", r->path, to);
	record_prune(r, now);
}

const char *
event_record_event(struct event_record *r, const struct csq_event *ev,
                   size_t *len)
{
	const char *line;
	int n;

	if (r->size + r->len > 0 &&
	    ((r->rotate_daily && ev->ts_ms >= r->day_end) ||
	     (r->rotate_size > 0 && r->size + r->len >= r->rotate_size)))
		record_rotate(r, ev->ts_ms);
	if (r->size + r->len == 0)
		record_set_first(r, ev->ts_ms);
	/* Room for any line and its newline: csq_event_json then writes
	 * straight into the buffer, with no copy. */
	if (r->cap - r->len < CSQ_EVENT_JSON_MAX + 1) {
		r->cap = r->cap * 2 > r->len + CSQ_EVENT_JSON_MAX + 1
		             ? r->cap * 2
		             : r->len + CSQ_EVENT_JSON_MAX + 1;
		r->buf = csq_xrealloc(r->buf, r->cap);
	}
	n = csq_event_json(ev, r->buf + r->len, r->cap - r->len);
	if (n <= 0 || (size_t)n >= RECORD_LINE_MAX) {
		log_warnx("record %s: event %" PRIu64
		          " (%s) too long to record",
		          r->path, ev->id, csq_event_name(ev->type));
		return NULL;
	}
	line = r->buf + r->len;
	*len = (size_t)n;
	r->len += (size_t)n;
	r->buf[r->len++] = '\n';
	if (!r->pending) {
		r->pending = 1;
		event_active(r->flush_ev, EV_TIMEOUT, 0);
	}
	return line;
}

int
event_record_pending(const struct event_record *r)
{
	return r != NULL && r->pending;
}

void
event_record_set_flush_cb(struct event_record *r, void (*cb)(void *), void *arg)
{
	r->flushed = cb;
	r->flushed_arg = arg;
}

void
event_record_reconfigure(struct event_record *r, const struct config *cfg)
{
	r->fsync = cfg->record_fsync;
	r->rotate_size = (uint64_t)cfg->record_rotate_size;
	r->rotate_daily = cfg->record_rotate_daily;
	r->keep_days = (uint64_t)cfg->record_keep_days;
}

/*
 * A file that csqd wrote before: a last line without its newline is what
 * a crash in the middle of a write leaves, and is cut; the first line
 * gives the day the file began. -1 for a file that is not a record.
 */
static int
record_resume(struct event_record *r)
{
	char chunk[RECORD_HEAD_MAX + 1], *ts;
	struct stat st;
	off_t end, at;
	ssize_t n, i;

	if (fstat(r->fd, &st) != 0) {
		log_error("record %s: fstat: %s", r->path, strerror(errno));
		return -1;
	}
	end = st.st_size;
	/* Back from the end to the last newline. */
	while (end > 0) {
		at = end > RECORD_HEAD_MAX ? end - RECORD_HEAD_MAX : 0;
		if ((n = pread(r->fd, chunk, (size_t)(end - at), at)) <= 0) {
			log_error("record %s: read: %s", r->path,
			          strerror(errno));
			return -1;
		}
		for (i = n - 1; i >= 0 && chunk[i] != '\n'; i--)
			;
		if (i >= 0) {
			end = at + i + 1;
			break;
		}
		end = at;
	}
	if (end != st.st_size) {
		log_warnx("record %s: cut a torn last line of %jd bytes",
		          r->path, (intmax_t)(st.st_size - end));
		if (ftruncate(r->fd, end) != 0) {
			log_error("record %s: ftruncate: %s", r->path,
			          strerror(errno));
			return -1;
		}
	}
	r->size = (uint64_t)end;
	if (end == 0)
		return 0;
	if ((n = pread(r->fd, chunk, RECORD_HEAD_MAX, 0)) <= 0) {
		log_error("record %s: read: %s", r->path, strerror(errno));
		return -1;
	}
	chunk[n] = '\0';
	if (strncmp(chunk, "{\"event\":", 9) != 0 ||
	    (ts = strstr(chunk, ",\"ts\":")) == NULL ||
	    memchr(chunk, '\n', (size_t)(ts - chunk)) != NULL) {
		log_error("record %s: its first line is not an event; not "
		          "starting: csqd appends only to a record of its own: "
		          "move the file away or change record.path",
		          r->path);
		return -1;
	}
	record_set_first(r, strtoull(ts + 6, NULL, 10));
	log_info("record %s: continuing after %" PRIu64 " bytes", r->path,
	         r->size);
	return 0;
}

struct event_record *
event_record_open(struct event_base *base, const struct config *cfg)
{
	struct event_record *r = csq_xcalloc(1, sizeof(*r));
	struct timeval tv = {RECORD_SYNC_S, 0};

	r->path = csq_xstrndup(cfg->record_path, strlen(cfg->record_path));
	event_record_reconfigure(r, cfg);
	if ((r->fd = record_open_fd(r->path)) < 0) {
		log_error(
		    "record %s: open: %s; not starting: fix the file or its "
		    "directory, or change record.path",
		    r->path, strerror(errno));
		free(r->path);
		free(r);
		return NULL;
	}
	if (record_resume(r) != 0) {
		close(r->fd);
		free(r->path);
		free(r);
		return NULL;
	}
	if (syscall(SYS_io_setup, 1L, &r->sync.ctx) != 0)
		r->sync.ctx =
		    0; /* said at the first sync (record_sync_later) */
	r->flush_ev = event_new(base, -1, 0, record_flush_cb, r);
	r->timer = event_new(base, -1, EV_PERSIST, record_timer_cb, r);
	event_add(r->timer, &tv);
	return r;
}

void
event_record_close(struct event_record *r)
{
	if (r == NULL)
		return;
	record_sync_reap(r, 1);
	if (r->sync.ctx != 0)
		(void)syscall(SYS_io_destroy, r->sync.ctx);
	(void)record_write(r);
	if (r->fsync != CONFIG_FSYNC_NO)
		record_sync(r);
	close(r->fd);
	event_free(r->flush_ev);
	event_free(r->timer);
	free(r->buf);
	free(r->path);
	free(r);
}
