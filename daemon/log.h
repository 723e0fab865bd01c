/* Logging with levels to stderr; priority prefixes under journald. */
#ifndef CSQD_LOG_H
#define CSQD_LOG_H

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARNING, LOG_LVL_ERROR };

void log_init(void); /* reads JOURNAL_STREAM to pick the format */
void log_set_level(enum log_level);
int log_level_parse(const char *, enum log_level *);
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
/* log_warn appends strerror(errno); log_warnx does not. */
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
/* Each line of a multi-line report (a memstream's) as one message. */
void log_lines(enum log_level, const char *text);
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
