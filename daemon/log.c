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
static enum log_format log_format = LOG_FMT_TEXT;
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

void
log_set_format(enum log_format format)
{
	log_format = format;
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

/* A bounded writer into one line. */
struct log_line {
	char buf[LOG_LINE_MAX];
	size_t len;
};

static void
log_add(struct log_line *l, const char *s, size_t n)
{
	if (n > sizeof(l->buf) - 2 - l->len)
		n = sizeof(l->buf) - 2 - l->len; /* room for '\n' */
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void log_addf(struct log_line *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
log_addf(struct log_line *l, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		log_add(l, tmp,
		        (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* s as the inside of a JSON string; control bytes as \u00XX, so that a
 * newline cannot forge another line. */
static void
log_add_json(struct log_line *l, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			log_add(l, "\\", 1);
			log_add(l, s, 1);
		} else if (ch < 0x20 || ch == 0x7f)
			log_addf(l, "\\u%04x", ch);
		else
			log_add(l, s, 1);
	}
}

/* A text field's value: bare, or quoted when it would not read back as
 * one value (logfmt's rule); control bytes become spaces. */
static void
log_add_value(struct log_line *l, const char *s)
{
	int quote = *s == '\0' || strpbrk(s, " \"=") != NULL;
	const char *p;

	if (quote)
		log_add(l, "\"", 1);
	for (p = s; *p != '\0'; p++) {
		if (*p == '"' || (*p == '\\' && quote))
			log_add(l, "\\", 1);
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			log_add(l, " ", 1);
		else
			log_add(l, p, 1);
	}
	if (quote)
		log_add(l, "\"", 1);
}

/*
 * Builds the whole line first so that it reaches stderr in one write:
 * the time (unless the journal stamps it) and level, the message, the
 * fields.
 */
static void
log_write(enum log_level level, const char *msg, const struct log_kv *kv,
          size_t n)
{
	struct log_line l;
	struct timespec ts;
	struct tm tm;
	char when[32];
	size_t i, start;

	l.len = 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	i = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + i, sizeof(when) - i, ".%03ldZ", ts.tv_nsec / 1000000L);
	if (log_journal)
		log_add(&l, log_prefixes[level], strlen(log_prefixes[level]));
	if (log_format == LOG_FMT_JSON) {
		log_addf(&l, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"", when,
		         log_words[level]);
		log_add_json(&l, msg);
		log_add(&l, "\"", 1);
		for (i = 0; i < n; i++) {
			log_add(&l, ",\"", 2);
			log_add_json(&l, kv[i].key);
			log_add(&l, "\":", 2);
			if (kv[i].str == NULL)
				log_addf(&l, "%lld", kv[i].num);
			else {
				log_add(&l, "\"", 1);
				log_add_json(&l, kv[i].str);
				log_add(&l, "\"", 1);
			}
		}
		log_add(&l, "}", 1);
	} else {
		if (!log_journal)
			log_addf(&l, "%s %s: ", when, log_words[level]);
		start = l.len;
		log_add(&l, msg, strlen(msg));
		/* One message, one line: a stray newline would forge
		 * another. */
		for (i = start; i < l.len; i++)
			if (l.buf[i] == '\n' || l.buf[i] == '\r')
				l.buf[i] = ' ';
		for (i = 0; i < n; i++) {
			log_add(&l, " ", 1);
			log_add(&l, kv[i].key, strlen(kv[i].key));
			log_add(&l, "=", 1);
			if (kv[i].str == NULL)
				log_addf(&l, "%lld", kv[i].num);
			else
				log_add_value(&l, kv[i].str);
		}
	}
	l.buf[l.len++] = '\n';
	(void)!write(STDERR_FILENO, l.buf, l.len);
}

static void log_vlog(enum log_level, int, const char *, va_list)
    __attribute__((format(printf, 3, 0)));

static void
log_vlog(enum log_level level, int errnum, const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX];
	size_t len;
	int n;

	if (level < log_min)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	len = n < 0 ? 0 : (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
	msg[len] = '\0';
	if (errnum != 0 && len < sizeof(msg))
		snprintf(msg + len, sizeof(msg) - len, ": %s",
		         strerror(errnum));
	log_write(level, msg, NULL, 0);
}

void
log_kv(enum log_level level, const char *msg, const struct log_kv *kv, size_t n)
{
	if (level >= log_min)
		log_write(level, msg, kv, n);
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
