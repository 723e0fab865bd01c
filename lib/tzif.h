/*
 * Time zones from the system's database (RFC 8536 TZif files): the bytes
 * of a file, which the daemon reads, parsed into a compact zone that a
 * queue policy carries whole (business hours, protocol.md section 3c).
 *
 * A zone keeps the transitions from CSQ_TZ_EPOCH (2000-01-01) on, of the
 * file's 64-bit data (version 2 and later; a version 1 file's 32-bit
 * data), and the footer's TZ string, which gives the offset after the
 * last transition. Before 2000 the offset in force at 2000 is used: csq
 * lives in the present.
 */
#ifndef CSQ_TZIF_H
#define CSQ_TZIF_H

#include <stddef.h>
#include <stdint.h>

#define CSQ_TZ_NAME_MAX    64          /* bytes of a zone's name */
#define CSQ_TZ_TRANSITIONS 256         /* kept, from 2000 on (Asia/Gaza: 236) */
#define CSQ_TZ_TYPES       16          /* distinct offsets among them */
#define CSQ_TZ_RULE_MAX    64          /* the footer's bytes, with its NUL */
#define CSQ_TZ_EPOCH       946684800LL /* 2000-01-01T00:00:00Z */
#define CSQ_TZ_OFFSET_MAX  93599       /* |offset| below 26 h (RFC 8536) */

/* A date of a TZ rule: Jn (julian, no Feb 29), n (0-based, with it) or
 * Mm.w.d (day d of week w of month m, w = 5: the last), and the time of
 * day of the change in local time (RFC 8536 allows -167..167 h). */
struct csq_tz_date {
	uint8_t kind; /* 'J', 'n', 'M' */
	uint16_t day; /* J: 1..365, n: 0..365, M: the weekday 0..6 */
	uint8_t month, week;
	int32_t time;
};

/* A footer's TZ string, parsed: offsets east of UTC, in seconds. */
struct csq_tz_rule {
	int32_t std_off, dst_off;
	int has_dst;
	struct csq_tz_date start, end;
};

struct csq_tz {
	char name[CSQ_TZ_NAME_MAX + 1];
	int32_t base_off; /* in force at 2000, and before the first */
	uint32_t ntrans, ntypes;
	int32_t types[CSQ_TZ_TYPES];     /* offsets east of UTC, seconds */
	uint32_t at[CSQ_TZ_TRANSITIONS]; /* seconds since CSQ_TZ_EPOCH */
	uint8_t type[CSQ_TZ_TRANSITIONS];
	char rule_text[CSQ_TZ_RULE_MAX]; /* the footer; "" for none */
	int has_rule;
	struct csq_tz_rule rule;
};

/*
 * Parses a TZif file's bytes into *out (name left to the caller). 0, or
 * -1 with *err a sentence that says what is wrong. Never reads past
 * len; every count is checked against the bytes before it is used.
 */
int csq_tzif_parse(const uint8_t *buf, size_t len, struct csq_tz *out,
                   const char **err);
/* A footer TZ string ("CET-1CEST,M3.5.0,M10.5.0/3"): 0 or -1. */
int csq_tz_rule_parse(const char *s, struct csq_tz_rule *out);
/* A zone's fields hold together (a decoded record's): 0 or -1. */
int csq_tz_check(const struct csq_tz *);
/* A zone name as the database spells it: [A-Za-z0-9._+-] parts joined
 * by '/', no part "." or "..", 1..CSQ_TZ_NAME_MAX bytes. */
int csq_tz_valid_name(const char *);

/* The offset east of UTC in force at t (seconds since 1970, UTC). */
int32_t csq_tz_offset(const struct csq_tz *, int64_t t);
/* The first change of offset after t, or INT64_MAX. */
int64_t csq_tz_next_transition(const struct csq_tz *, int64_t t);

/* Civil dates: days since 1970-01-01 of y-m-d, and back. */
int64_t csq_days_from_civil(int64_t y, unsigned m, unsigned d);
void csq_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

#endif
