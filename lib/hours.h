/*
 * Business hours (protocol.md section 3c): the text of a policy's hours
 * parsed, and when a queue is open, computed from its zone (tzif.h).
 * Pure functions over struct csq_hours (csq.h).
 */
#ifndef CSQ_HOURS_H
#define CSQ_HOURS_H

#include "csq.h"

/*
 * A week: "mon-fri 09:00-17:00, sat 10:00-14:00". Items apart by
 * commas; each a day or a range of days (mon..sun, "fri-mon" goes round)
 * and one or more times HH:MM-HH:MM (00:00..24:00); an end before its
 * start runs into the next day. Overlapping ranges are merged. "" is a
 * week with no open time. 0, or -1 with *err what is wrong.
 */
int csq_hours_parse_week(const char *s, struct csq_hours *h, const char **err);
/* "YYYY-MM-DD", a real date: its days since 1970-01-01. 0 or -1. */
int csq_hours_parse_date(const char *s, int32_t *days);
/* A closed date more: 0, or -1 when it is there already or full. */
int csq_hours_add_closed(struct csq_hours *h, int32_t days);
/* h's fields hold together (csq_policies_check, a decoded record). */
int csq_hours_check(const struct csq_hours *h);

/* 1 when h is open at t (seconds since 1970, UTC). */
int csq_hours_open_at(const struct csq_hours *h, int64_t t);
/*
 * Whether h is open at now_ms (*open) and the first instant after it at
 * which that changes (epoch ms), or UINT64_MAX when it does not within
 * CSQ_HOURS_HORIZON_DAYS (always open, or never).
 */
#define CSQ_HOURS_HORIZON_DAYS 400
uint64_t csq_hours_next(const struct csq_hours *h, uint64_t now_ms, int *open);
/* ms as ISO 8601 in h's zone: "2026-03-30T09:00:00+02:00". */
void csq_hours_iso(const struct csq_hours *h, uint64_t ms, char out[32]);

#endif
