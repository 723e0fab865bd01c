/*
 * Business hours (protocol.md section 3c): the TZif parser against the
 * system's real zone files (Europe/Berlin, America/New_York, Lord Howe's
 * half-hour DST, Asia/Tokyo without DST) and files made bad on purpose
 * (every prefix of a real file, counts that lie, transitions out of
 * order, types out of range, footers missing or wrong, leap seconds);
 * the week's text; the next change across DST changes, gaps and the
 * repeated hour; and the rules in libcsq: refuse, wait, fallback, no
 * match while closed, the match at opening, keep/move/release at
 * closing, and the POLICY record's round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture.h"
#include "hours.h"
#include "record.h"
#include "snapshot.h"
#include "tzif.h"

#define ZONEINFO "/usr/share/zoneinfo/"

static uint8_t *
zone_bytes(const char *name, size_t *len)
{
	char path[256];
	uint8_t *buf = malloc(1 << 16);
	FILE *fp;

	snprintf(path, sizeof(path), ZONEINFO "%s", name);
	fp = fopen(path, "rb");
	assert_non_null(fp);
	*len = fread(buf, 1, 1 << 16, fp);
	fclose(fp);
	return buf;
}

static void
zone_load(const char *name, struct csq_tz *z)
{
	const char *err;
	size_t len;
	uint8_t *b = zone_bytes(name, &len);

	if (csq_tzif_parse(b, len, z, &err) != 0)
		fail_msg("%s: %s", name, err);
	snprintf(z->name, sizeof(z->name), "%s", name);
	assert_int_equal(csq_tz_check(z), 0);
	free(b);
}

/* Seconds since 1970 of a UTC time. */
static int64_t
utc(int y, unsigned mo, unsigned d, int h, int mi)
{
	return csq_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

/* Expected values from Python's zoneinfo over the same files. */
static void
test_tzif_real_zones(void **state)
{
	struct csq_tz z;

	(void)state;
	zone_load("Europe/Berlin", &z);
	assert_int_equal(csq_tz_offset(&z, utc(2026, 1, 15, 12, 0)), 3600);
	assert_int_equal(csq_tz_offset(&z, utc(2026, 7, 15, 12, 0)), 7200);
	assert_int_equal(csq_tz_next_transition(&z, utc(2026, 1, 1, 0, 0)),
	                 1774746000); /* 2026-03-29T01:00Z */
	assert_int_equal(csq_tz_offset(&z, 1774746000 - 1), 3600);
	assert_int_equal(csq_tz_offset(&z, 1774746000), 7200);
	assert_int_equal(csq_tz_next_transition(&z, 1774746000), 1792890000);
	/* After the file's last transition (2037): the footer's rule. */
	assert_int_equal(csq_tz_next_transition(&z, utc(2040, 1, 1, 0, 0)),
	                 2216250000);
	assert_int_equal(csq_tz_next_transition(&z, 2216250000), 2234998800);
	assert_int_equal(csq_tz_offset(&z, 2216250000), 7200);
	assert_int_equal(csq_tz_offset(&z, 2234998800), 3600);
	assert_int_equal(csq_tz_offset(&z, 2234998800 - 1), 7200);

	zone_load("America/New_York", &z);
	assert_int_equal(csq_tz_next_transition(&z, utc(2026, 1, 1, 0, 0)),
	                 1772953200);
	assert_int_equal(csq_tz_offset(&z, 1772953200), -14400);
	assert_int_equal(csq_tz_next_transition(&z, 1772953200), 1793512800);
	assert_int_equal(csq_tz_offset(&z, 1793512800), -18000);
	assert_int_equal(csq_tz_next_transition(&z, utc(2040, 1, 1, 0, 0)),
	                 2215062000);
	assert_int_equal(csq_tz_next_transition(&z, 2215062000), 2235621600);

	/* Half an hour of DST: +10:30 and +11:00. */
	zone_load("Australia/Lord_Howe", &z);
	assert_int_equal(csq_tz_next_transition(&z, utc(2026, 1, 1, 0, 0)),
	                 1775314800);
	assert_int_equal(csq_tz_offset(&z, 1775314800 - 1), 39600);
	assert_int_equal(csq_tz_offset(&z, 1775314800), 37800);
	assert_int_equal(csq_tz_next_transition(&z, 1775314800), 1791041400);
	assert_int_equal(csq_tz_next_transition(&z, utc(2040, 1, 1, 0, 0)),
	                 2216818800);
	assert_int_equal(csq_tz_next_transition(&z, 2216818800), 2233150200);
	assert_int_equal(csq_tz_offset(&z, 2233150200), 39600);

	/* No DST since 1951: one offset, no transition ahead. */
	zone_load("Asia/Tokyo", &z);
	assert_int_equal(csq_tz_offset(&z, utc(2026, 7, 1, 0, 0)), 32400);
	assert_int_equal(csq_tz_offset(&z, utc(1999, 7, 1, 0, 0)), 32400);
	assert_true(csq_tz_next_transition(&z, utc(2026, 1, 1, 0, 0)) ==
	            INT64_MAX);
	zone_load("UTC", &z);
	assert_int_equal(csq_tz_offset(&z, utc(2026, 7, 1, 0, 0)), 0);
}

/* The TZ strings of footers, good and bad. */
static void
test_tz_rules(void **state)
{
	static const char *const good[] = {
	    "CET-1CEST,M3.5.0,M10.5.0/3",
	    "EST5EDT,M3.2.0,M11.1.0",
	    "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
	    "JST-9",
	    "<-03>3",
	    "IST-2IDT,M3.4.4/26,M10.5.0",
	    "<-02>2<-01>,M3.5.0/-1,M10.5.0/0",
	    "AAA3BBB,J60/2,J300/2",
	    "AAA3BBB,0/2,365/2",
	    "XXX-3:30:15",
	};
	static const char *const bad[] = {
	    "",
	    "C",
	    "CET",
	    "CET-",
	    "CET-1X",
	    "CET-25",
	    "CET-1:60",
	    "CET-1CEST",
	    "<+1>1",
	    "<+10",
	    "CET-1CEST,M13.1.0,M10.5.0",
	    "CET-1CEST,M3.6.0,M10.5.0",
	    "CET-1CEST,M3.5.7,M10.5.0",
	    "CET-1CEST,M3.5.0",
	    "CET-1CEST,J0,J10",
	    "CET-1CEST,366,10",
	    "CET-1CEST,M3.5.0/168,M10.5.0",
	    "CET-1CEST,M3.5.0,M10.5.0/3x",
	    "CET-1:5",
	};
	struct csq_tz_rule r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (csq_tz_rule_parse(good[i], &r) != 0)
			fail_msg("refused %s", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (csq_tz_rule_parse(bad[i], &r) == 0)
			fail_msg("took %s", bad[i]);
	assert_int_equal(csq_tz_rule_parse("<+1030>-10:30<+11>-11,M10.1.0,"
	                                   "M4.1.0",
	                                   &r),
	                 0);
	assert_int_equal(r.std_off, 37800);
	assert_int_equal(r.dst_off, 39600);
	assert_int_equal(csq_tz_rule_parse("EST5EDT,M3.2.0,M11.1.0", &r), 0);
	assert_int_equal(r.std_off, -18000);
	assert_int_equal(r.dst_off, -14400);
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Offset of the v2 header in a real v2+ file. */
static size_t
v2_header(const uint8_t *b)
{
	uint32_t c[6];
	int i;

	for (i = 0; i < 6; i++)
		c[i] = (uint32_t)b[20 + 4 * i] << 24 |
		       (uint32_t)b[21 + 4 * i] << 16 |
		       (uint32_t)b[22 + 4 * i] << 8 | b[23 + 4 * i];
	return 44 + c[3] * 5 + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0];
}

static void
expect_bad(const uint8_t *b, size_t len, const char *why)
{
	struct csq_tz z;
	const char *err = NULL;

	if (csq_tzif_parse(b, len, &z, &err) == 0)
		fail_msg("took a file with %s", why);
	assert_non_null(err);
	assert_true(err[0] != '\0');
}

/* How it was tried to break: every prefix of a real file, each header
 * count made to lie, a transition out of order, a type out of range, an
 * offset out of range, the footer gone, cut or not a rule, leap seconds,
 * random bytes flipped (which may parse, but must not crash or read out
 * of bounds: ASan watches). */
static void
test_tzif_bad_files(void **state)
{
	struct csq_tz z;
	const char *err;
	size_t len, i, h2;
	uint8_t *b = zone_bytes("Europe/Berlin", &len), *c = malloc(len + 64);
	unsigned seed = 7;

	(void)state;
	for (i = 0; i < len; i++) /* every prefix: the footer's \n is last */
		expect_bad(b, i, "its end cut off");
	expect_bad((const uint8_t *)"TZjf", 4, "a wrong magic");
	h2 = v2_header(b);
	/* The counts. */
	for (i = 0; i < 6; i++) {
		memcpy(c, b, len);
		put32(c + h2 + 20 + 4 * i, 0x7fffffff);
		expect_bad(c, len, "a count beyond the file");
	}
	memcpy(c, b, len);
	put32(c + h2 + 36, 0); /* typecnt */
	expect_bad(c, len, "no local time type");
	memcpy(c, b, len);
	put32(c + h2 + 20, 1); /* isutcnt neither 0 nor typecnt */
	expect_bad(c, len, "isutcnt off");
	/* A transition out of order: the second before the first. */
	memcpy(c, b, len);
	memcpy(c + h2 + 44 + 8, c + h2 + 44, 8);
	expect_bad(c, len, "transitions out of order");
	/* The first transition's type past the types. */
	memcpy(c, b, len);
	{
		uint32_t timecnt = (uint32_t)c[h2 + 32] << 24 |
		                   (uint32_t)c[h2 + 33] << 16 |
		                   (uint32_t)c[h2 + 34] << 8 | c[h2 + 35];

		c[h2 + 44 + 8 * timecnt] = 200;
		expect_bad(c, len, "a type out of range");
		memcpy(c, b, len);
		/* type 0's offset: 30 hours */
		put32(c + h2 + 44 + 9 * timecnt, 30 * 3600);
		expect_bad(c, len, "an offset out of range");
	}
	/* The footer. */
	memcpy(c, b, len);
	c[len - 1] = 'x';
	expect_bad(c, len, "a footer not closed");
	memcpy(c, b, len);
	memcpy(c + len - 5, "/3x\n", 4);
	expect_bad(c, len - 1, "a footer that is no rule");
	/* Leap seconds, counted in the v1 header (and its block). */
	memcpy(c, b, len);
	put32(c + 28, 1);
	expect_bad(c, len, "leap seconds");
	/* A version 1 file: the first block alone, 32-bit times. */
	memcpy(c, b, len);
	c[4] = 0;
	assert_int_equal(csq_tzif_parse(c, h2, &z, &err), 0);
	assert_int_equal(csq_tz_offset(&z, 1774746000), 7200);
	assert_int_equal(z.has_rule, 0);
	/* Bytes flipped at random: whatever it says, it says it safely,
	 * and what it takes holds together. */
	for (i = 0; i < 2000; i++) {
		memcpy(c, b, len);
		seed = seed * 1103515245u + 12345u;
		c[(seed >> 8) % len] ^= (uint8_t)(1u << (seed % 8));
		seed = seed * 1103515245u + 12345u;
		c[(seed >> 8) % len] ^= (uint8_t)(seed >> 24);
		if (csq_tzif_parse(c, len, &z, &err) == 0) {
			strcpy(z.name, "X");
			assert_int_equal(csq_tz_check(&z), 0);
			(void)csq_tz_offset(&z, 1774746000);
			(void)csq_tz_next_transition(&z, 1774746000);
		}
	}
	free(b);
	free(c);
}

static void
test_zone_names(void **state)
{
	(void)state;
	assert_true(csq_tz_valid_name("Europe/Berlin"));
	assert_true(csq_tz_valid_name("Etc/GMT+5"));
	assert_true(csq_tz_valid_name("America/Argentina/Buenos_Aires"));
	assert_false(csq_tz_valid_name(""));
	assert_false(csq_tz_valid_name("/etc/passwd"));
	assert_false(csq_tz_valid_name("../etc/passwd"));
	assert_false(csq_tz_valid_name("Europe/../../etc"));
	assert_false(csq_tz_valid_name("Europe//Berlin"));
	assert_false(csq_tz_valid_name("Europe/Berlin/"));
	assert_false(csq_tz_valid_name("Europe/Ber lin"));
	assert_false(csq_tz_valid_name("./UTC"));
}

static void
hours_of(struct csq_hours *h, const char *zone, const char *week)
{
	const char *err;

	memset(h, 0, sizeof(*h));
	h->on = 1;
	zone_load(zone, &h->tz);
	if (csq_hours_parse_week(week, h, &err) != 0)
		fail_msg("%s: %s", week, err);
	assert_int_equal(csq_hours_check(h), 0);
}

static void
test_week_text(void **state)
{
	static const char *const bad[] = {
	    "mon",
	    "mon 9:00-17:00",
	    "mon 09:00-09:00",
	    "xyz 09:00-17:00",
	    "mon-xyz 09:00-10:00",
	    "mon 24:00-10:00",
	    "mon 09:00-24:01",
	    "mon 09:60-10:00",
	    "mon 09:00-17:00 sat",
	    "mon 09:00-17:00; tue 09:00-10:00",
	    "mon,tue 09:00-10:00",
	    "mon 09:00 - 10:00",
	    "monday 09:00-10:00",
	};
	struct csq_hours h;
	const char *err;
	size_t i;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(csq_hours_parse_week("mon-fri 09:00-17:00, "
	                                      "sat 10:00-14:00",
	                                      &h, &err),
	                 0);
	assert_int_equal(h.nranges, 6);
	assert_int_equal(h.range[0].start, 9 * 60);
	assert_int_equal(h.range[5].start, 5 * 1440 + 600);
	/* Two times for a day, overlaps merged, a night into the next
	 * day, and Sunday night into Monday (round the week). */
	assert_int_equal(csq_hours_parse_week("mon 09:00-12:00 11:00-13:00, "
	                                      "fri 22:00-02:00, "
	                                      "sun 23:00-01:00",
	                                      &h, &err),
	                 0);
	assert_int_equal(h.nranges, 4);
	assert_int_equal(h.range[0].start, 0);
	assert_int_equal(h.range[0].end, 60);
	assert_int_equal(h.range[1].start, 9 * 60);
	assert_int_equal(h.range[1].end, 13 * 60);
	assert_int_equal(h.range[2].start, 4 * 1440 + 22 * 60);
	assert_int_equal(h.range[2].end, 5 * 1440 + 120);
	assert_int_equal(h.range[3].end, CSQ_WEEK_MINUTES);
	assert_int_equal(csq_hours_parse_week("fri-mon 00:00-24:00", &h, &err),
	                 0);
	assert_int_equal(h.nranges, 2); /* fri..sun, and mon */
	assert_int_equal(csq_hours_parse_week("", &h, &err), 0);
	assert_int_equal(h.nranges, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (csq_hours_parse_week(bad[i], &h, &err) == 0)
			fail_msg("took %s", bad[i]);
	/* Dates. */
	{
		int32_t d;

		assert_int_equal(csq_hours_parse_date("2026-12-24", &d), 0);
		assert_int_equal(d, csq_days_from_civil(2026, 12, 24));
		assert_int_equal(csq_hours_parse_date("2028-02-29", &d), 0);
		assert_int_equal(csq_hours_parse_date("2026-02-29", &d), -1);
		assert_int_equal(csq_hours_parse_date("2026-13-01", &d), -1);
		assert_int_equal(csq_hours_parse_date("2026-1-01", &d), -1);
		assert_int_equal(csq_hours_parse_date("2026-01-011", &d), -1);
		assert_int_equal(csq_hours_parse_date("1969-12-31", &d), -1);
		memset(&h, 0, sizeof(h));
		assert_int_equal(csq_hours_add_closed(&h, 5), 0);
		assert_int_equal(csq_hours_add_closed(&h, 3), 0);
		assert_int_equal(csq_hours_add_closed(&h, 5), -1);
		assert_int_equal(h.closed[0], 3);
	}
}

/* The next change, its ms, and whether open now. */
static uint64_t
next_of(const struct csq_hours *h, int64_t t, int *open)
{
	return csq_hours_next(h, (uint64_t)t * 1000, open);
}

static void
test_next_change_dst(void **state)
{
	struct csq_hours h;
	char iso[32];
	int open;

	(void)state;
	/* Berlin: Friday 2026-03-27 18:00 CET, closed; Monday opens at
	 * 09:00 CEST, after the spring forward: 07:00Z, not 08:00Z. */
	hours_of(&h, "Europe/Berlin", "mon-fri 09:00-17:00");
	assert_int_equal(next_of(&h, utc(2026, 3, 27, 17, 0), &open),
	                 (uint64_t)utc(2026, 3, 30, 7, 0) * 1000);
	assert_int_equal(open, 0);
	csq_hours_iso(&h, (uint64_t)utc(2026, 3, 30, 7, 0) * 1000, iso);
	assert_string_equal(iso, "2026-03-30T09:00:00+02:00");
	/* Friday 16:59 CET: open, closes at 17:00 CET = 16:00Z. */
	assert_int_equal(next_of(&h, utc(2026, 3, 27, 15, 59), &open),
	                 (uint64_t)utc(2026, 3, 27, 16, 0) * 1000);
	assert_int_equal(open, 1);
	/* The same ms as the change: the new state already. */
	assert_int_equal(next_of(&h, utc(2026, 3, 27, 16, 0), &open),
	                 (uint64_t)utc(2026, 3, 30, 7, 0) * 1000);
	assert_int_equal(open, 0);
	/* Autumn: 09:00 CET again, 08:00Z. */
	assert_int_equal(next_of(&h, utc(2026, 10, 24, 12, 0), &open),
	                 (uint64_t)utc(2026, 10, 26, 8, 0) * 1000);
	/* Closed dates: Christmas Eve is a Thursday; open on the 28th. */
	memset(&h, 0, sizeof(h));
	hours_of(&h, "Europe/Berlin", "mon-fri 09:00-17:00");
	csq_hours_add_closed(&h, (int32_t)csq_days_from_civil(2026, 12, 24));
	csq_hours_add_closed(&h, (int32_t)csq_days_from_civil(2026, 12, 25));
	assert_int_equal(next_of(&h, utc(2026, 12, 23, 16, 30), &open),
	                 (uint64_t)utc(2026, 12, 28, 8, 0) * 1000);
	assert_int_equal(open, 0);
	/* A night over midnight into a closed date ends at midnight. */
	hours_of(&h, "Europe/Berlin", "wed 22:00-02:00");
	csq_hours_add_closed(&h, (int32_t)csq_days_from_civil(2026, 12, 24));
	assert_int_equal(next_of(&h, utc(2026, 12, 23, 21, 30), &open),
	                 (uint64_t)utc(2026, 12, 23, 23, 0) * 1000);
	assert_int_equal(open, 1);

	/* New York, 2026-03-08: 02:00 to 03:00 never happens; a range that
	 * starts at 02:30 opens when the clock jumps, 07:00Z. */
	hours_of(&h, "America/New_York", "sun 02:30-04:00");
	assert_int_equal(next_of(&h, utc(2026, 3, 7, 12, 0), &open),
	                 (uint64_t)1772953200 * 1000);
	assert_int_equal(open, 0);
	assert_int_equal(next_of(&h, 1772953200, &open),
	                 (uint64_t)utc(2026, 3, 8, 8, 0) * 1000);
	assert_int_equal(open, 1);

	/* Lord Howe, 2026-04-05: at 02:00 (+11) the clock goes back to
	 * 01:30 (+10:30); 01:45-02:30 is open, shut for a quarter hour
	 * while 01:30-01:45 comes again, open again until 02:30. */
	hours_of(&h, "Australia/Lord_Howe", "sun 01:45-02:30");
	assert_int_equal(next_of(&h, utc(2026, 4, 4, 12, 0), &open),
	                 (uint64_t)utc(2026, 4, 4, 14, 45) * 1000);
	assert_int_equal(next_of(&h, utc(2026, 4, 4, 14, 45), &open),
	                 (uint64_t)utc(2026, 4, 4, 15, 0) * 1000);
	assert_int_equal(open, 1);
	assert_int_equal(next_of(&h, utc(2026, 4, 4, 15, 0), &open),
	                 (uint64_t)utc(2026, 4, 4, 15, 15) * 1000);
	assert_int_equal(open, 0);
	assert_int_equal(next_of(&h, utc(2026, 4, 4, 15, 15), &open),
	                 (uint64_t)utc(2026, 4, 4, 16, 0) * 1000);
	assert_int_equal(open, 1);

	/* Tokyo, no DST; open all week: no change, ever. */
	hours_of(&h, "Asia/Tokyo", "mon-sun 00:00-24:00");
	assert_true(next_of(&h, utc(2026, 3, 7, 12, 0), &open) == UINT64_MAX);
	assert_int_equal(open, 1);
	hours_of(&h, "Asia/Tokyo", "");
	assert_true(next_of(&h, utc(2026, 3, 7, 12, 0), &open) == UINT64_MAX);
	assert_int_equal(open, 0);
	hours_of(&h, "Asia/Tokyo", "mon 09:00-10:00");
	assert_int_equal(next_of(&h, utc(2026, 3, 7, 12, 0), &open),
	                 (uint64_t)utc(2026, 3, 9, 0, 0) * 1000);
}

/* --- the rules in libcsq --- */

static const struct csq_event *
find_event(struct fixture *f, size_t from, enum csq_event_type t,
           const char *user)
{
	size_t i;

	for (i = from; i < f->nevents; i++)
		if (f->events[i].type == t &&
		    (user == NULL || strcmp(f->events[i].user, user) == 0))
			return &f->events[i];
	return NULL;
}

/* Users never time out; servicers live a day (heartbeats keep them). */
static int
setup_long(void **state)
{
	struct csq_limits l;

	csq_limits_default(&l);
	l.user_ttl_s = 0;
	l.servicer_ttl_s = CSQ_TTL_MAX;
	*state = fixture_new(&l);
	return 0;
}

/* A policy for queue "sup": Berlin, mon-fri 09:00-17:00. */
static void
policy_sup(struct csq_policy *p, uint32_t when, uint32_t at)
{
	memset(p, 0, sizeof(*p));
	strcpy(p->name, "sup");
	hours_of(&p->hours, "Europe/Berlin", "mon-fri 09:00-17:00");
	p->hours.when_closed = when;
	p->hours.at_close = at;
	if (when == CSQ_CLOSED_FALLBACK)
		strcpy(p->hours.fallback, "night");
	if (at == CSQ_AT_CLOSE_MOVE)
		strcpy(p->hours.move_to, "night");
}

static void
expire_at(struct fixture *f, uint64_t t)
{
	f->now = t;
	csq_expire(f->csq, f->now);
	check(f);
}

#define FRI_1630 ((uint64_t)1774625400000ULL) /* 2026-03-27T15:30Z */
#define FRI_1700 ((uint64_t)1774627200000ULL) /* 17:00 CET */
#define MON_0900 ((uint64_t)1774854000000ULL) /* 2026-03-30 09:00 CEST */

/* wait: users wait while closed, and nobody is matched; at opening the
 * free room takes the first of them. The state's own clock crosses the
 * spring forward: Monday's opening is at 07:00Z. */
static void
test_wait_then_open(void **state)
{
	struct fixture *f = *state;
	struct csq_policy p;
	struct csq_queue_stats qs;
	struct csq_user_info u;
	size_t mark;

	f->now = FRI_1630;
	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_KEEP);
	set_policies(f, &p, 1);
	assert_int_equal(csq_next_deadline(f->csq), FRI_1700);
	hb(f, "s1", 1, "sup", NULL);
	enq(f, "u0", "sup", -1, &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	release(f, "s1/0");
	mark = f->nevents;
	expire_at(f, FRI_1700);
	assert_non_null(find_event(f, mark, CSQ_EV_CLOSED, NULL));
	assert_int_equal(last_event(f)->until_ms, MON_0900);
	assert_int_equal(csq_queue_stats(f->csq, f->now, "sup", &qs), CSQ_OK);
	assert_int_equal(qs.hours, 1);
	assert_int_equal(qs.open, 0);
	assert_int_equal(qs.next_change_ms, MON_0900);
	assert_int_equal(qs.eta_ms, -1); /* a free room, but closed */
	/* The room is free, and stays so beside the users (check()). */
	enq(f, "u1", "sup", -1, &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(u.eta_ms, -1);
	enq(f, "u2", "sup", 3, &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	/* Heartbeats change nothing while closed. */
	f->now += 3600000;
	hb(f, "s1", 2, NULL, NULL);
	f->now = FRI_1700 + 86000000;
	hb(f, "s1", 0, NULL, NULL);
	expire_at(f, f->now);
	where(f, "u2", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	f->now = MON_0900 - 60000;
	hb(f, "s1", 0, NULL, NULL); /* alive over the weekend */
	mark = f->nevents;
	expire_at(f, MON_0900 - 1);
	assert_int_equal(f->nevents, mark);
	expire_at(f, MON_0900);
	assert_string_equal(events_since(f, mark), "opened,matched,matched");
	assert_int_equal(f->events[mark].until_ms,
	                 (uint64_t)1774882800000ULL);        /* 17:00 CEST */
	assert_string_equal(f->events[mark + 1].user, "u2"); /* tier 3 */
	assert_int_equal(csq_queue_stats(f->csq, f->now, "sup", &qs), CSQ_OK);
	assert_int_equal(qs.open, 1);
}

/* refuse: ENQUEUE (and a move by ENQUEUE) is CSQ_ECLOSED, with when it
 * opens, and changes nothing; a user already in the queue stays. */
static void
test_refuse(void **state)
{
	struct fixture *f = *state;
	struct csq_enqueue_args a;
	struct csq_policy p;
	struct csq_user_info u;
	size_t mark;

	f->now = FRI_1700 + 1000;
	policy_sup(&p, CSQ_CLOSED_REFUSE, CSQ_AT_CLOSE_KEEP);
	set_policies(f, &p, 1);
	memset(&a, 0, sizeof(a));
	a.user = "u1";
	a.has_queue = 1;
	a.queue = "sup";
	mark = f->nevents;
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_ECLOSED);
	assert_int_equal(u.opens_ms, MON_0900);
	assert_int_equal(f->nevents, mark);
	where(f, "u1", &u);
	assert_int_equal(u.state, CSQ_USER_NONE);
	/* One waiting elsewhere may not move in either. */
	enq(f, "u2", "other", -1, NULL);
	a.user = "u2";
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_ECLOSED);
	where(f, "u2", &u);
	assert_string_equal(u.queue, "other");
	check(f);
	/* Open: it takes it. */
	expire_at(f, MON_0900);
	a.user = "u1";
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_OK);
	assert_string_equal(u.queue, "sup");
	check(f);
}

/* fallback: the arrival goes to the fallback queue and is placed there. */
static void
test_fallback(void **state)
{
	struct fixture *f = *state;
	struct csq_policy p;
	struct csq_user_info u;

	f->now = FRI_1700 + 1000;
	policy_sup(&p, CSQ_CLOSED_FALLBACK, CSQ_AT_CLOSE_KEEP);
	set_policies(f, &p, 1);
	hb(f, "night1", 1, "night", NULL);
	enq(f, "u1", "sup", -1, &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_string_equal(u.queue, "night");
	enq(f, "u2", "sup", -1, &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_string_equal(u.queue, "night");
	/* Its re-ENQUEUE naming sup keeps it where it is. */
	enq(f, "u2", "sup", -1, &u);
	assert_string_equal(u.queue, "night");
}

/* Two closed queues that fall back on each other: the arrival is refused
 * as closed (with the first's opening), never sent round for ever. */
static void
test_fallback_cycle(void **state)
{
	struct fixture *f = *state;
	struct csq_enqueue_args a;
	struct csq_user_info u;
	struct csq_policy p[2];

	f->now = FRI_1700 + 1000;
	policy_sup(&p[0], CSQ_CLOSED_FALLBACK, CSQ_AT_CLOSE_KEEP);
	policy_sup(&p[1], CSQ_CLOSED_FALLBACK, CSQ_AT_CLOSE_KEEP);
	strcpy(p[1].name, "night");
	strcpy(p[1].hours.fallback, "sup");
	set_policies(f, p, 2);
	memset(&a, 0, sizeof(a));
	a.user = "u1";
	a.has_queue = 1;
	a.queue = "sup";
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_ECLOSED);
	assert_int_equal(u.opens_ms, MON_0900);
	check(f);
}

/* At closing time: move (overflowed, reason closed) or release (left,
 * reason closed), in service order; keep leaves them. */
static void
test_at_close(void **state)
{
	struct fixture *f = *state;
	struct csq_policy p;
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t mark;

	f->now = FRI_1630;
	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_MOVE);
	set_policies(f, &p, 1);
	enq(f, "a", "sup", -1, NULL);
	enq(f, "b", "sup", 2, NULL);
	mark = f->nevents;
	expire_at(f, FRI_1700);
	assert_string_equal(events_since(f, mark),
	                    "closed,overflowed,overflowed");
	ev = &f->events[mark + 1];
	assert_string_equal(ev->user, "b");
	assert_string_equal(ev->queue, "night");
	assert_string_equal(ev->from_queue, "sup");
	assert_int_equal(ev->reason, CSQ_REASON_CLOSED);
	where(f, "a", &u);
	assert_string_equal(u.queue, "night");
	assert_string_equal(line_of(f, "night"), "b,a");

	/* release, by a reload (it applies to those waiting). */
	f->now = MON_0900 + 3600000;
	csq_expire(f->csq, f->now);
	enq(f, "c", "sup", -1, NULL);
	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_RELEASE);
	set_policies(f, &p, 1);
	mark = f->nevents;
	expire_at(f, (uint64_t)1774882800000ULL); /* Monday 17:00 CEST */
	assert_string_equal(events_since(f, mark), "closed,left");
	ev = find_event(f, mark, CSQ_EV_LEFT, "c");
	assert_non_null(ev);
	assert_int_equal(ev->reason, CSQ_REASON_CLOSED);
	where(f, "c", &u);
	assert_int_equal(u.state, CSQ_USER_NONE);
}

/* A reload that takes the hours away opens the queue, and its users
 * are matched; one that brings them closes it at once. */
static void
test_reload(void **state)
{
	struct fixture *f = *state;
	struct csq_policy p;
	struct csq_user_info u;
	size_t mark;

	f->now = FRI_1700 + 1000;
	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_KEEP);
	mark = f->nevents;
	set_policies(f, &p, 1);
	assert_string_equal(events_since(f, mark), "closed");
	hb(f, "s1", 1, "sup", NULL);
	enq(f, "u1", "sup", -1, &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	mark = f->nevents;
	set_policies(f, NULL, 0);
	check(f);
	assert_string_equal(events_since(f, mark), "opened,matched");
	assert_int_equal(f->events[mark].until_ms, 0);
	assert_true(csq_next_deadline(f->csq) > f->now);
}

static void
restore_into(void *arg, const struct csq_snap_item *it)
{
	assert_int_equal(csq_restore(arg, it), 0);
}

/*
 * The journal's compaction: the policies (as POLICY records are, at the
 * snapshot's time), then the snapshot's items, into a new state. A
 * closed queue's users waiting beside a free room are a state, not a
 * match that never happened; the restored state closes and opens as the
 * first does.
 */
static void
test_snapshot(void **state)
{
	struct fixture *f = *state, *g;
	struct csq_limits l;
	struct csq_policy p;
	struct csq_user_info u;
	struct csq_queue_stats qs;
	size_t mark;
	char why[256];

	f->now = FRI_1700 + 1000;
	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_KEEP);
	set_policies(f, &p, 1);
	hb(f, "s1", 2, "sup", NULL);
	enq(f, "u1", "sup", -1, NULL);
	enq(f, "u2", "sup", 1, NULL);
	csq_limits_default(&l);
	l.user_ttl_s = 0;
	l.servicer_ttl_s = CSQ_TTL_MAX;
	g = fixture_new(&l);
	g->now = f->now;
	assert_int_equal(csq_set_policies(g->csq, g->now, &p, 1), CSQ_OK);
	csq_snapshot(f->csq, restore_into, g->csq);
	assert_int_equal(csq_restore_end(g->csq), 0);
	if (csq_check(g->csq, why, sizeof(why)) != 0)
		fail_msg("restored: %s", why);
	assert_int_equal(csq_queue_stats(g->csq, g->now, "sup", &qs), CSQ_OK);
	assert_int_equal(qs.open, 0);
	assert_int_equal(qs.next_change_ms, MON_0900);
	/* Both open on Monday, the same way. */
	g->now = MON_0900 - 60000;
	hb(g, "s1", 0, NULL, NULL);
	f->now = g->now;
	hb(f, "s1", 0, NULL, NULL);
	mark = g->nevents;
	expire_at(g, MON_0900);
	expire_at(f, MON_0900);
	assert_string_equal(events_since(g, mark), "opened,matched,matched");
	where(g, "u2", &u);
	assert_string_equal(u.room, "s1/0");
	where(f, "u2", &u);
	assert_string_equal(u.room, "s1/0");
	csq_free(g->csq);
	free(g);
}

/*
 * A snapshot taken when the closing is due and not yet acted on (the
 * pass comes after it): the restored state keeps the queue open with
 * its due deadline, and its next pass closes it and releases the users,
 * event for event as the first state's.
 */
static void
test_snapshot_due(void **state)
{
	struct fixture *f = *state, *g;
	struct csq_limits l;
	struct csq_policy p;
	size_t mf, mg;
	char why[256];

	f->now = FRI_1630;
	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_RELEASE);
	set_policies(f, &p, 1);
	enq(f, "u1", "sup", -1, NULL);
	enq(f, "u2", "sup", -1, NULL);
	f->now = FRI_1700 + 5000; /* due, no pass yet */
	csq_limits_default(&l);
	l.user_ttl_s = 0;
	l.servicer_ttl_s = CSQ_TTL_MAX;
	g = fixture_new(&l);
	g->now = f->now;
	assert_int_equal(csq_set_policies(g->csq, g->now, &p, 1), CSQ_OK);
	csq_snapshot(f->csq, restore_into, g->csq);
	assert_int_equal(csq_restore_end(g->csq), 0);
	if (csq_check(g->csq, why, sizeof(why)) != 0)
		fail_msg("restored: %s", why);
	assert_int_equal(csq_next_deadline(g->csq), FRI_1700);
	mf = f->nevents;
	mg = g->nevents;
	expire_at(f, f->now);
	expire_at(g, g->now);
	assert_string_equal(events_since(f, mf), "closed,left,left");
	assert_string_equal(events_since(g, mg), "closed,left,left");
	assert_int_equal(f->events[f->nevents - 1].id,
	                 g->events[g->nevents - 1].id);
	csq_free(g->csq);
	free(g);
}

/* What a configuration may not pass: fallback without when_closed
 * fallback, the queue itself, a bad zone in a record. */
static void
test_policy_check(void **state)
{
	struct fixture *f = *state;
	struct csq_policy p;

	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_KEEP);
	strcpy(p.hours.fallback, "night");
	assert_int_equal(csq_set_policies(f->csq, f->now, &p, 1), CSQ_ERANGE);
	policy_sup(&p, CSQ_CLOSED_FALLBACK, CSQ_AT_CLOSE_KEEP);
	strcpy(p.hours.fallback, "sup");
	assert_int_equal(csq_set_policies(f->csq, f->now, &p, 1), CSQ_ERANGE);
	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_MOVE);
	p.hours.move_to[0] = '\0';
	assert_int_equal(csq_set_policies(f->csq, f->now, &p, 1), CSQ_ERANGE);
	policy_sup(&p, 7, CSQ_AT_CLOSE_KEEP);
	assert_int_equal(csq_set_policies(f->csq, f->now, &p, 1), CSQ_ERANGE);
	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_KEEP);
	p.hours.range[0].end = p.hours.range[0].start; /* empty */
	assert_int_equal(csq_set_policies(f->csq, f->now, &p, 1), CSQ_ERANGE);
	policy_sup(&p, CSQ_CLOSED_WAIT, CSQ_AT_CLOSE_KEEP);
	p.hours.tz.at[1] = p.hours.tz.at[0]; /* transitions out of order */
	assert_int_equal(csq_set_policies(f->csq, f->now, &p, 1), CSQ_ERANGE);
	check(f);
}

/* The POLICY record carries the hours whole; a record whose zone is cut
 * or out of order is no record. */
static void
test_record(void **state)
{
	uint8_t buf[CSQ_RECORD_MAX], buf2[CSQ_RECORD_MAX];
	struct csq_record_strings s;
	struct csq_op op, back;
	uint64_t now;
	size_t n, n2;

	(void)state;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	op.count = 1;
	policy_sup(&op.policy, CSQ_CLOSED_FALLBACK, CSQ_AT_CLOSE_MOVE);
	csq_hours_add_closed(&op.policy.hours, 20000);
	zone_load("Asia/Gaza", &op.policy.hours.tz); /* the most transitions */
	/* With the longest nobody tail before it (section 3c): both fit. */
	op.policy.nobody.on = 1;
	op.policy.nobody.when_nobody = CSQ_NOBODY_FALLBACK;
	op.policy.nobody.at_nobody = CSQ_NOBODY_MOVE;
	op.policy.nobody.grace_s = 60;
	memset(op.policy.nobody.fallback, 'f', CSQ_ID_MAX);
	memset(op.policy.nobody.move_to, 'm', CSQ_ID_MAX);
	n = csq_record_encode(&op, 42, buf);
	assert_true(n <= CSQ_RECORD_MAX);
	assert_int_equal(csq_record_decode(buf + CSQ_RECORD_HEADER,
	                                   n - CSQ_RECORD_HEADER, &back, &now,
	                                   &s),
	                 0);
	assert_memory_equal(&back.policy.hours, &op.policy.hours,
	                    sizeof(op.policy.hours));
	assert_memory_equal(&back.policy.nobody, &op.policy.nobody,
	                    sizeof(op.policy.nobody));
	n2 = csq_record_encode(&back, 42, buf2);
	assert_int_equal(n2, n);
	assert_memory_equal(buf, buf2, n);
	/* Cut anywhere in the hours: refused. */
	for (n2 = n - 1; n2 > n - 600; n2--)
		assert_int_not_equal(csq_record_decode(buf + CSQ_RECORD_HEADER,
		                                       n2 - CSQ_RECORD_HEADER,
		                                       &back, &now, &s),
		                     0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tzif_real_zones),
	    cmocka_unit_test(test_tz_rules),
	    cmocka_unit_test(test_tzif_bad_files),
	    cmocka_unit_test(test_zone_names),
	    cmocka_unit_test(test_week_text),
	    cmocka_unit_test(test_next_change_dst),
	    cmocka_unit_test_setup_teardown(test_wait_then_open, setup_long,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_refuse, setup_long, teardown),
	    cmocka_unit_test_setup_teardown(test_fallback, setup_long,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_fallback_cycle, setup_long,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_at_close, setup_long,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_reload, setup_long, teardown),
	    cmocka_unit_test_setup_teardown(test_snapshot, setup_long,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_snapshot_due, setup_long,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_policy_check, setup, teardown),
	    cmocka_unit_test(test_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
