/* Logging with levels to stderr; priority prefixes under journald. */
#ifndef CSQD_LOG_H
#define CSQD_LOG_H

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARNING, LOG_LVL_ERROR };
/* log.format: "text" lines, or one JSON object a line. */
enum log_format { LOG_FMT_TEXT, LOG_FMT_JSON };

/* One field of a structured line: a string, or a number when str is
 * NULL. */
struct log_kv {
	const char *key;
	const char *str;
	long long num;
};

#define LOG_STR(k, v) ((struct log_kv){(k), (v) != NULL ? (v) : "", 0})
#define LOG_NUM(k, v) ((struct log_kv){(k), NULL, (long long)(v)})

void log_init(void); /* reads JOURNAL_STREAM to pick the format */
void log_set_level(enum log_level);
void log_set_format(enum log_format);
int log_level_parse(const char *, enum log_level *);
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
/* log_warn appends strerror(errno); log_warnx does not. */
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
/*
 * A line for an operator's tools: the message, then each field, as
 * key=value (a value with a space, a quote or an equals sign in quotes)
 * in text, or as members of the line's JSON object.
 */
void log_kv(enum log_level, const char *msg, const struct log_kv *, size_t n);
/* Each line of a multi-line report (a memstream's) as one message. */
void log_lines(enum log_level, const char *text);
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
