/*
 * TZif files (RFC 8536) into compact zones, and the offset a zone gives
 * at an instant. Everything that comes from the file is bounded before it
 * is used: a count against the bytes that are left, an index against its
 * table, a time against its neighbours.
 */
#include "tzif.h"

#include <limits.h>
#include <string.h>

#define TZIF_HEADER    44
#define TZIF_TYPE_SIZE 6
#define SECS_PER_DAY   86400
#define SECS_PER_HOUR  3600
#define RULE_HOURS_MAX 167 /* RFC 8536's extension of POSIX */

int64_t
csq_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void
csq_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int64_t
floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static int
is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* --- the footer's TZ string --- */

struct rule_cursor {
	const char *p;
};

static int
rule_name(struct rule_cursor *c)
{
	const char *s = c->p;
	size_t n = 0;

	if (*s == '<') {
		for (s++; *s != '>'; s++, n++)
			if (*s == '\0' || !((*s >= 'A' && *s <= 'Z') ||
			                    (*s >= 'a' && *s <= 'z') ||
			                    (*s >= '0' && *s <= '9') ||
			                    *s == '+' || *s == '-'))
				return -1;
		c->p = s + 1;
		return n >= 3 ? 0 : -1;
	}
	while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))
		s++, n++;
	c->p = s;
	return n >= 3 ? 0 : -1;
}

/* [+-]hh[:mm[:ss]] into seconds, hours at most max. */
static int
rule_hms(struct rule_cursor *c, int max, int32_t *out)
{
	int sign = 1, part = 0, v, digits;
	int32_t total = 0;

	if (*c->p == '+' || *c->p == '-')
		sign = *c->p++ == '-' ? -1 : 1;
	for (part = 0; part < 3; part++) {
		if (part > 0) {
			if (*c->p != ':')
				break;
			c->p++;
		}
		v = 0;
		for (digits = 0; *c->p >= '0' && *c->p <= '9'; digits++)
			if (digits < 3)
				v = v * 10 + (*c->p++ - '0');
			else
				return -1;
		if (digits == 0 || (part == 0 && v > max) ||
		    (part > 0 && (digits != 2 || v > 59)))
			return -1;
		total += part == 0 ? v * SECS_PER_HOUR : part == 1 ? v * 60 : v;
	}
	*out = sign * total;
	return 0;
}

static int
rule_num(struct rule_cursor *c, int lo, int hi, int *out)
{
	int v = 0, digits = 0;

	while (*c->p >= '0' && *c->p <= '9') {
		if (++digits > 3)
			return -1;
		v = v * 10 + (*c->p++ - '0');
	}
	if (digits == 0 || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int
rule_date(struct rule_cursor *c, struct csq_tz_date *d)
{
	int a, b, e;

	memset(d, 0, sizeof(*d));
	if (*c->p == 'J') {
		c->p++;
		if (rule_num(c, 1, 365, &a) != 0)
			return -1;
		d->kind = 'J';
		d->day = (uint16_t)a;
	} else if (*c->p == 'M') {
		c->p++;
		if (rule_num(c, 1, 12, &a) != 0 || *c->p++ != '.' ||
		    rule_num(c, 1, 5, &b) != 0 || *c->p++ != '.' ||
		    rule_num(c, 0, 6, &e) != 0)
			return -1;
		d->kind = 'M';
		d->month = (uint8_t)a;
		d->week = (uint8_t)b;
		d->day = (uint16_t)e;
	} else {
		if (rule_num(c, 0, 365, &a) != 0)
			return -1;
		d->kind = 'n';
		d->day = (uint16_t)a;
	}
	d->time = 2 * SECS_PER_HOUR;
	if (*c->p == '/') {
		c->p++;
		if (rule_hms(c, RULE_HOURS_MAX, &d->time) != 0)
			return -1;
	}
	return 0;
}

int
csq_tz_rule_parse(const char *s, struct csq_tz_rule *r)
{
	struct rule_cursor c = {s};
	int32_t off;

	memset(r, 0, sizeof(*r));
	if (rule_name(&c) != 0 || rule_hms(&c, 24, &off) != 0)
		return -1;
	r->std_off = -off; /* POSIX counts west */
	if (*c.p == '\0')
		return 0;
	if (rule_name(&c) != 0)
		return -1;
	r->has_dst = 1;
	r->dst_off = r->std_off + SECS_PER_HOUR;
	if (*c.p != ',' && *c.p != '\0') {
		if (rule_hms(&c, 24, &off) != 0)
			return -1;
		r->dst_off = -off;
	}
	/* Without dates POSIX leaves the rule to the system: refused. */
	if (*c.p++ != ',' || rule_date(&c, &r->start) != 0 || *c.p++ != ',' ||
	    rule_date(&c, &r->end) != 0 || *c.p != '\0')
		return -1;
	return 0;
}

/* Days since 1970 of rule date d in year y. */
static int64_t
rule_day(const struct csq_tz_date *d, int64_t y)
{
	int64_t jan1 = csq_days_from_civil(y, 1, 1), first, day;
	unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int wd;

	switch (d->kind) {
	case 'J':
		return jan1 + d->day - 1 + (is_leap(y) && d->day >= 60);
	case 'n':
		return jan1 + d->day;
	default:
		first = csq_days_from_civil(y, d->month, 1);
		wd =
		    (int)((first + 4) % 7); /* 1970-01-01: Thursday, 0 Sunday */
		if (wd < 0)
			wd += 7;
		day = first + (d->day - wd + 7) % 7 + (d->week - 1) * 7;
		if (d->month == 2 && is_leap(y))
			mdays[1] = 29;
		while (day >= first + mdays[d->month - 1])
			day -= 7;
		return day;
	}
}

/* The instants (UTC) daylight time starts and ends in year y. */
static void
rule_year(const struct csq_tz_rule *r, int64_t y, int64_t *start, int64_t *end)
{
	*start =
	    rule_day(&r->start, y) * SECS_PER_DAY + r->start.time - r->std_off;
	*end = rule_day(&r->end, y) * SECS_PER_DAY + r->end.time - r->dst_off;
}

static int64_t
year_of(int64_t t)
{
	int64_t y;
	unsigned m, d;

	csq_civil_from_days(floor_div(t, SECS_PER_DAY), &y, &m, &d);
	return y;
}

static int32_t
rule_offset(const struct csq_tz_rule *r, int64_t t)
{
	int64_t s, e;
	int dst;

	if (!r->has_dst)
		return r->std_off;
	rule_year(r, year_of(t + r->std_off), &s, &e);
	dst = s < e ? (t >= s && t < e) : !(t >= e && t < s);
	return dst ? r->dst_off : r->std_off;
}

static int64_t
rule_next(const struct csq_tz_rule *r, int64_t t)
{
	int64_t y = year_of(t), best = INT64_MAX, s, e, k;

	if (!r->has_dst)
		return INT64_MAX;
	for (k = y - 1; k <= y + 2; k++) {
		rule_year(r, k, &s, &e);
		if (s > t && s < best &&
		    rule_offset(r, s) != rule_offset(r, s - 1))
			best = s;
		if (e > t && e < best &&
		    rule_offset(r, e) != rule_offset(r, e - 1))
			best = e;
	}
	return best;
}

/* --- the zone --- */

int
csq_tz_valid_name(const char *s)
{
	size_t len = strnlen(s, CSQ_TZ_NAME_MAX + 1), i, part = 0;

	if (len == 0 || len > CSQ_TZ_NAME_MAX)
		return 0;
	for (i = 0; i <= len; i++) {
		char ch = s[i];

		if (ch == '/' || ch == '\0') {
			if (part == 0 || (part == 1 && s[i - 1] == '.') ||
			    (part == 2 && s[i - 1] == '.' && s[i - 2] == '.'))
				return 0;
			part = 0;
			continue;
		}
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		      ch == '+' || ch == '-'))
			return 0;
		part++;
	}
	return 1;
}

int
csq_tz_check(const struct csq_tz *z)
{
	struct csq_tz_rule r;
	uint32_t i;

	if (memchr(z->name, '\0', sizeof(z->name)) == NULL ||
	    !csq_tz_valid_name(z->name) || z->ntrans > CSQ_TZ_TRANSITIONS ||
	    z->ntypes > CSQ_TZ_TYPES || (z->ntrans > 0 && z->ntypes == 0) ||
	    z->base_off > CSQ_TZ_OFFSET_MAX ||
	    z->base_off < -CSQ_TZ_OFFSET_MAX ||
	    memchr(z->rule_text, '\0', sizeof(z->rule_text)) == NULL ||
	    z->has_rule != (z->rule_text[0] != '\0'))
		return -1;
	for (i = 0; i < z->ntypes; i++)
		if (z->types[i] > CSQ_TZ_OFFSET_MAX ||
		    z->types[i] < -CSQ_TZ_OFFSET_MAX)
			return -1;
	for (i = 0; i < z->ntrans; i++)
		if (z->type[i] >= z->ntypes ||
		    (i > 0 && z->at[i] <= z->at[i - 1]))
			return -1;
	if (z->has_rule && (csq_tz_rule_parse(z->rule_text, &r) != 0 ||
	                    memcmp(&r, &z->rule, sizeof(r)) != 0))
		return -1;
	return 0;
}

int32_t
csq_tz_offset(const struct csq_tz *z, int64_t t)
{
	uint32_t lo = 0, hi = z->ntrans, mid;
	int64_t rel = t - CSQ_TZ_EPOCH;

	if (z->ntrans == 0 || rel < (int64_t)z->at[0])
		return z->ntrans == 0 && z->has_rule ? rule_offset(&z->rule, t)
		                                     : z->base_off;
	if (rel > (int64_t)z->at[z->ntrans - 1] && z->has_rule)
		return rule_offset(&z->rule, t);
	while (hi - lo > 1) { /* at[lo] <= rel < at[hi] */
		mid = lo + (hi - lo) / 2;
		if ((int64_t)z->at[mid] <= rel)
			lo = mid;
		else
			hi = mid;
	}
	return z->types[z->type[lo]];
}

int64_t
csq_tz_next_transition(const struct csq_tz *z, int64_t t)
{
	uint32_t lo = 0, hi = z->ntrans, mid;
	int64_t rel = t - CSQ_TZ_EPOCH;

	if (z->ntrans > 0 && rel < (int64_t)z->at[z->ntrans - 1]) {
		while (lo < hi) { /* the first at > rel */
			mid = lo + (hi - lo) / 2;
			if ((int64_t)z->at[mid] <= rel)
				lo = mid + 1;
			else
				hi = mid;
		}
		return CSQ_TZ_EPOCH + (int64_t)z->at[lo];
	}
	return z->has_rule ? rule_next(&z->rule, t) : INT64_MAX;
}

/* --- the file --- */

struct tzif_cursor {
	const uint8_t *p;
	size_t left;
};

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static int64_t
be64(const uint8_t *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_header {
	int version; /* 1, 2, 3, 4 */
	uint32_t isut, isstd, leap, time, type, chars;
};

static int
tzif_header(struct tzif_cursor *c, struct tzif_header *h, const char **err)
{
	const uint8_t *p = c->p;

	if (c->left < TZIF_HEADER || memcmp(p, "TZif", 4) != 0) {
		*err = "not a TZif file (no \"TZif\" header)";
		return -1;
	}
	if (p[4] == 0)
		h->version = 1;
	else if (p[4] >= '2' && p[4] <= '9')
		h->version = p[4] - '0';
	else {
		*err = "unknown TZif version";
		return -1;
	}
	h->isut = be32(p + 20);
	h->isstd = be32(p + 24);
	h->leap = be32(p + 28);
	h->time = be32(p + 32);
	h->type = be32(p + 36);
	h->chars = be32(p + 40);
	if (h->type == 0 || h->type > 256 || h->chars == 0 ||
	    (h->isut != 0 && h->isut != h->type) ||
	    (h->isstd != 0 && h->isstd != h->type)) {
		*err = "TZif header counts that do not hold together";
		return -1;
	}
	c->p += TZIF_HEADER;
	c->left -= TZIF_HEADER;
	return 0;
}

/* The data block's size for times of tsize bytes, or SIZE_MAX when the
 * counts are beyond any file. */
static size_t
tzif_block_size(const struct tzif_header *h, size_t tsize)
{
	uint64_t n = (uint64_t)h->time * (tsize + 1) +
	             (uint64_t)h->type * TZIF_TYPE_SIZE + h->chars +
	             (uint64_t)h->leap * (tsize + 4) + h->isstd + h->isut;

	return n > SIZE_MAX / 2 ? SIZE_MAX : (size_t)n;
}

/* An offset interned among z's types: its index, or -1 when full. */
static int
tz_type(struct csq_tz *z, int32_t off)
{
	uint32_t i;

	for (i = 0; i < z->ntypes; i++)
		if (z->types[i] == off)
			return (int)i;
	if (z->ntypes == CSQ_TZ_TYPES)
		return -1;
	z->types[z->ntypes] = off;
	return (int)z->ntypes++;
}

static int
tzif_block(struct tzif_cursor *c, const struct tzif_header *h, size_t tsize,
           struct csq_tz *z, const char **err)
{
	const uint8_t *times = c->p, *idx = times + (size_t)h->time * tsize;
	const uint8_t *types = idx + h->time;
	int64_t t, prev = INT64_MIN, rel;
	int32_t off, cur;
	uint32_t i;
	int k;

	for (i = 0; i < h->type; i++) {
		off = (int32_t)be32(types + i * TZIF_TYPE_SIZE);
		if (off > CSQ_TZ_OFFSET_MAX || off < -CSQ_TZ_OFFSET_MAX ||
		    types[i * TZIF_TYPE_SIZE + 4] > 1 ||
		    types[i * TZIF_TYPE_SIZE + 5] >= h->chars) {
			*err = "a local time type out of its ranges";
			return -1;
		}
	}
	if (h->leap > 0) {
		*err = "a zone with leap seconds (right/): not supported";
		return -1;
	}
	/* Before the first transition: type 0 (RFC 8536, 3.2). */
	z->base_off = (int32_t)be32(types);
	cur = z->base_off;
	for (i = 0; i < h->time; i++) {
		t = tsize == 8 ? be64(times + i * 8)
		               : (int64_t)(int32_t)be32(times + i * 4);
		if (t <= prev || idx[i] >= h->type) {
			*err =
			    "transitions out of order, or of an unknown type";
			return -1;
		}
		prev = t;
		off = (int32_t)be32(types + idx[i] * TZIF_TYPE_SIZE);
		if (t <= CSQ_TZ_EPOCH) {
			z->base_off = off;
			cur = off;
			continue;
		}
		rel = t - CSQ_TZ_EPOCH;
		if (off == cur) /* a new name only: no change of offset */
			continue;
		if (rel > UINT32_MAX || z->ntrans == CSQ_TZ_TRANSITIONS ||
		    (k = tz_type(z, off)) < 0) {
			*err = "more transitions or offsets than csq keeps";
			return -1;
		}
		z->at[z->ntrans] = (uint32_t)rel;
		z->type[z->ntrans++] = (uint8_t)k;
		cur = off;
	}
	return 0;
}

int
csq_tzif_parse(const uint8_t *buf, size_t len, struct csq_tz *z,
               const char **err)
{
	struct tzif_cursor c = {buf, len};
	struct tzif_header h;
	size_t size, flen;
	const uint8_t *nl;

	*err = "";
	memset(z, 0, sizeof(*z));
	if (tzif_header(&c, &h, err) != 0)
		return -1;
	if ((size = tzif_block_size(&h, 4)) > c.left) {
		*err = "a TZif file cut short";
		return -1;
	}
	if (h.version == 1) {
		if (tzif_block(&c, &h, 4, z, err) != 0)
			return -1;
		return 0;
	}
	c.p += size;
	c.left -= size;
	if (tzif_header(&c, &h, err) != 0)
		return -1;
	if ((size = tzif_block_size(&h, 8)) > c.left) {
		*err = "a TZif file cut short";
		return -1;
	}
	if (tzif_block(&c, &h, 8, z, err) != 0)
		return -1;
	c.p += size;
	c.left -= size;
	/* The footer: "\n" TZ string "\n". */
	if (c.left < 2 || c.p[0] != '\n' ||
	    (nl = memchr(c.p + 1, '\n', c.left - 1)) == NULL) {
		*err = "a TZif footer missing or not closed";
		return -1;
	}
	flen = (size_t)(nl - (c.p + 1));
	if (flen >= CSQ_TZ_RULE_MAX || memchr(c.p + 1, '\0', flen) != NULL) {
		*err = "a TZif footer too long";
		return -1;
	}
	memcpy(z->rule_text, c.p + 1, flen);
	z->rule_text[flen] = '\0';
	if (flen > 0) {
		if (csq_tz_rule_parse(z->rule_text, &z->rule) != 0) {
			*err = "a TZif footer that is not a TZ rule";
			return -1;
		}
		z->has_rule = 1;
	}
	return 0;
}
