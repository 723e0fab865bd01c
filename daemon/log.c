/*
 * Logging to stderr, one line per message. Under systemd with stderr going
 * to the journal, lines carry sd-daemon priority prefixes instead of a
 * timestamp, since the journal stamps them itself.
 */
#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define LOG_LINE_MAX 4096

static enum log_level log_min = LOG_LVL_INFO;
static int log_journal;

/* Indexed by enum log_level. */
static const char *const log_words[] = {"debug", "info", "warning", "error"};
static const char *const log_prefixes[] = {"<7>", "<6>", "<4>", "<3>"};

/*
 * systemd sets JOURNAL_STREAM to the "dev:ino" of the journal stream it gave
 * us as stderr. A program started from that unit inherits the variable even
 * when its stderr goes elsewhere, so the prefixes are used only on a match.
 */
void
log_init(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	uintmax_t dev, ino;
	struct stat st;
	char end;

	log_journal = 0;
	if (env == NULL ||
	    sscanf(env, "%" SCNuMAX ":%" SCNuMAX "%c", &dev, &ino, &end) != 2)
		return;
	if (fstat(STDERR_FILENO, &st) != 0)
		return;
	log_journal =
	    (uintmax_t)st.st_dev == dev && (uintmax_t)st.st_ino == ino;
}

void
log_set_level(enum log_level level)
{
	log_min = level;
}

int
log_level_parse(const char *s, enum log_level *out)
{
	size_t i;

	for (i = 0; i < sizeof(log_words) / sizeof(log_words[0]); i++) {
		if (strcmp(s, log_words[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

static void log_vlog(enum log_level, int, const char *, va_list)
    __attribute__((format(printf, 3, 0)));

/* Builds the whole line first so that it reaches stderr in one write. */
static void
log_vlog(enum log_level level, int errnum, const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX];
	struct timespec ts;
	struct tm tm;
	size_t len = 0, i, start;
	int n;

	if (level < log_min)
		return;
	if (log_journal)
		len = (size_t)snprintf(line, sizeof(line), "%s",
		                       log_prefixes[level]);
	else {
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		len = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
		len += (size_t)snprintf(line + len, sizeof(line) - len,
		                        ".%03ldZ %s: ", ts.tv_nsec / 1000000L,
		                        log_words[level]);
	}
	start = len;
	n = vsnprintf(line + len, sizeof(line) - len, fmt, ap);
	if (n > 0)
		len += (size_t)n;
	if (len < sizeof(line) && errnum != 0) {
		n = snprintf(line + len, sizeof(line) - len, ": %s",
		             strerror(errnum));
		if (n > 0)
			len += (size_t)n;
	}
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2; /* truncated; keep room for '\n' */
	/* One message, one line: a stray newline would forge another. */
	for (i = start; i < len; i++) {
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	}
	line[len++] = '\n';
	(void)!write(STDERR_FILENO, line, len);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_DEBUG, 0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_INFO, 0, fmt, ap);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_WARNING, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_WARNING, 0, fmt, ap);
	va_end(ap);
}

void
log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_ERROR, 0, fmt, ap);
	va_end(ap);
}

static void log_at(enum log_level, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
log_at(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(level, 0, fmt, ap);
	va_end(ap);
}

void
log_lines(enum log_level level, const char *text)
{
	const char *p, *nl;
	size_t len;

	for (p = text; *p != '\0'; p += len + (nl != NULL)) {
		nl = strchr(p, '\n');
		len = nl != NULL ? (size_t)(nl - p) : strlen(p);
		if (len > 0)
			log_at(level, "%.*s", (int)len, p);
	}
}

void
fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_ERROR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_ERROR, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
