/*
 * Business hours (protocol.md section 3c). A queue's policy may carry
 * opening hours: weekly ranges in local time of a zone, and closed
 * dates. Whether it is open is a function of local time, which changes
 * only at a range's edge, at a local midnight (a closed date), or where
 * the zone's offset changes; so the next change is the first of those
 * instants, after now, at which the answer differs. That instant is the
 * queue's one deadline (CSQ_DL_HOURS) in the heap: no scan, ever, of
 * the queues for their hours.
 *
 * While a queue is closed nobody of it is matched; ENQUEUE waits, is
 * refused (with when it opens) or goes to a fallback queue; at closing
 * time its users stay, move or leave, each with its event.
 */
#include "hours.h"

#include "state.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_PER_DAY  1440
#define SECS_PER_DAY 86400
#define SECS_PER_MIN 60
#define OFFSET_REACH (26 * 3600) /* no offset is this far from UTC */
#define CHUNK_DAYS   8           /* days of candidates looked at at once */
#define WEEK_TMP     256         /* ranges before they are merged */
#define DAY_NAMES    "montuewedthufrisatsun"

static int64_t
floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* --- the text --- */

struct range {
	uint32_t start, end;
};

static int
range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static const char *
skip_spaces(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static int
parse_day(const char **p)
{
	int i;

	for (i = 0; i < 7; i++)
		if (strncmp(*p, &DAY_NAMES[3 * i], 3) == 0) {
			*p += 3;
			return i;
		}
	return -1;
}

/* HH:MM, 00:00..24:00: minutes of the day. */
static int
parse_time(const char **p)
{
	const char *s = *p;
	int h, m;

	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' ||
	    s[2] != ':' || s[3] < '0' || s[3] > '9' || s[4] < '0' || s[4] > '9')
		return -1;
	h = (s[0] - '0') * 10 + (s[1] - '0');
	m = (s[3] - '0') * 10 + (s[4] - '0');
	if (h > 24 || m > 59 || (h == 24 && m != 0))
		return -1;
	*p += 5;
	return h * 60 + m;
}

static int
week_add(struct range *v, size_t *n, uint32_t start, uint32_t end)
{
	if (*n == WEEK_TMP)
		return -1;
	v[*n].start = start;
	v[(*n)++].end = end;
	return 0;
}

int
csq_hours_parse_week(const char *s, struct csq_hours *h, const char **err)
{
	struct range v[WEEK_TMP];
	size_t n = 0, i, k;
	int d1, d2, d, a, b;
	uint32_t start, end;
	const char *p = s;

	*err = "";
	if (strnlen(s, CSQ_HOURS_WEEK_MAX) >= CSQ_HOURS_WEEK_MAX) {
		*err = "too long";
		return -1;
	}
	p = skip_spaces(p);
	while (*p != '\0') {
		if ((d1 = parse_day(&p)) < 0) {
			*err = "a day is mon, tue, wed, thu, fri, sat or sun";
			return -1;
		}
		d2 = d1;
		if (*p == '-') {
			p++;
			if ((d2 = parse_day(&p)) < 0) {
				*err = "a range of days is day-day";
				return -1;
			}
		}
		if (*p != ' ' && *p != '\t') {
			*err = "days and times go apart by a space";
			return -1;
		}
		p = skip_spaces(p);
		do {
			if ((a = parse_time(&p)) < 0 || *p++ != '-' ||
			    (b = parse_time(&p)) < 0 || a == b ||
			    a == MIN_PER_DAY) {
				*err = "a time range is HH:MM-HH:MM (00:00 to "
				       "24:00, not empty)";
				return -1;
			}
			for (d = d1;; d = (d + 1) % 7) {
				start = (uint32_t)(d * MIN_PER_DAY + a);
				end = (uint32_t)(d * MIN_PER_DAY + b +
				                 (b < a ? MIN_PER_DAY : 0));
				if (end > CSQ_WEEK_MINUTES) { /* round */
					if (week_add(v, &n, start,
					             CSQ_WEEK_MINUTES) != 0 ||
					    week_add(v, &n, 0,
					             end - CSQ_WEEK_MINUTES) !=
					        0)
						goto many;
				} else if (week_add(v, &n, start, end) != 0)
					goto many;
				if (d == d2)
					break;
			}
			p = skip_spaces(p);
		} while (*p >= '0' && *p <= '9');
		if (*p == ',')
			p = skip_spaces(p + 1);
		else if (*p != '\0') {
			*err = "items go apart by commas";
			return -1;
		}
	}
	qsort(v, n, sizeof(*v), range_cmp);
	for (i = 0, k = 0; i < n; i++) {
		if (k > 0 && v[i].start <= v[k - 1].end) {
			if (v[i].end > v[k - 1].end)
				v[k - 1].end = v[i].end;
			continue;
		}
		v[k++] = v[i];
	}
	if (k > CSQ_HOURS_RANGES)
		goto many;
	h->nranges = (uint32_t)k;
	for (i = 0; i < k; i++) {
		h->range[i].start = (uint16_t)v[i].start;
		h->range[i].end = (uint16_t)v[i].end;
	}
	return 0;
many:
	*err = "more than 28 ranges in the week";
	return -1;
}

int
csq_hours_parse_date(const char *s, int32_t *days)
{
	unsigned y = 0, m, d,
	         md[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int i;

	for (i = 0; i < 10; i++)
		if (i == 4 || i == 7 ? s[i] != '-' : (s[i] < '0' || s[i] > '9'))
			return -1;
	if (s[10] != '\0')
		return -1;
	for (i = 0; i < 4; i++)
		y = y * 10 + (unsigned)(s[i] - '0');
	m = (unsigned)((s[5] - '0') * 10 + (s[6] - '0'));
	d = (unsigned)((s[8] - '0') * 10 + (s[9] - '0'));
	if ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)
		md[1] = 29;
	if (y < 1970 || m < 1 || m > 12 || d < 1 || d > md[m - 1])
		return -1;
	*days = (int32_t)csq_days_from_civil(y, m, d);
	return 0;
}

int
csq_hours_add_closed(struct csq_hours *h, int32_t days)
{
	uint32_t i;

	if (h->nclosed == CSQ_HOURS_CLOSED)
		return -1;
	for (i = 0; i < h->nclosed && h->closed[i] < days; i++)
		;
	if (i < h->nclosed && h->closed[i] == days)
		return -1;
	memmove(&h->closed[i + 1], &h->closed[i],
	        (h->nclosed - i) * sizeof(h->closed[0]));
	h->closed[i] = days;
	h->nclosed++;
	return 0;
}

static int
queue_name_ok(const char *s)
{
	size_t len = strnlen(s, CSQ_ID_MAX + 1);

	return len <= CSQ_ID_MAX && csq_valid_id(s, len);
}

int
csq_hours_check(const struct csq_hours *h)
{
	uint32_t i;

	if (!h->on) {
		static const struct csq_hours none;

		return memcmp(h, &none, sizeof(none)) == 0 ? 0 : -1;
	}
	if (h->on != 1 || h->nranges > CSQ_HOURS_RANGES ||
	    h->nclosed > CSQ_HOURS_CLOSED ||
	    h->when_closed > CSQ_CLOSED_FALLBACK ||
	    h->at_close > CSQ_AT_CLOSE_RELEASE || csq_tz_check(&h->tz) != 0)
		return -1;
	for (i = 0; i < h->nranges; i++)
		if (h->range[i].start >= h->range[i].end ||
		    h->range[i].end > CSQ_WEEK_MINUTES ||
		    (i > 0 && h->range[i].start <= h->range[i - 1].end))
			return -1;
	for (i = 0; i < h->nclosed; i++)
		if (h->closed[i] < 0 ||
		    (i > 0 && h->closed[i] <= h->closed[i - 1]))
			return -1;
	/* A queue named where it is used, and only there. */
	if ((h->when_closed == CSQ_CLOSED_FALLBACK) !=
	        (h->fallback[0] != '\0') ||
	    (h->at_close == CSQ_AT_CLOSE_MOVE) != (h->move_to[0] != '\0') ||
	    memchr(h->fallback, '\0', sizeof(h->fallback)) == NULL ||
	    memchr(h->move_to, '\0', sizeof(h->move_to)) == NULL ||
	    (h->fallback[0] != '\0' && !queue_name_ok(h->fallback)) ||
	    (h->move_to[0] != '\0' && !queue_name_ok(h->move_to)))
		return -1;
	return 0;
}

/* --- when it is open --- */

static int
closed_on(const struct csq_hours *h, int64_t day)
{
	uint32_t lo = 0, hi = h->nclosed, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (h->closed[mid] == day)
			return 1;
		if (h->closed[mid] < day)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int
csq_hours_open_at(const struct csq_hours *h, int64_t t)
{
	int64_t local = t + csq_tz_offset(&h->tz, t);
	int64_t day = floor_div(local, SECS_PER_DAY);
	uint32_t mow, i;

	if (closed_on(h, day))
		return 0;
	mow = (uint32_t)(((day + 3) % 7 + 7) % 7 * MIN_PER_DAY +
	                 (local - day * SECS_PER_DAY) / SECS_PER_MIN);
	for (i = 0; i < h->nranges && h->range[i].start <= mow; i++)
		if (mow < h->range[i].end)
			return 1;
	return 0;
}

struct cands {
	int64_t *v;
	size_t n, cap;
};

static void
cand_add(struct cands *c, int64_t t)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->v = csq_xrealloc(c->v, c->cap * sizeof(*c->v));
	}
	c->v[c->n++] = t;
}

static int
cand_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The instants whose local time in z is local: none in a gap of a
 * spring forward, two in the hour a fall back repeats. Each offset in
 * force within two days of it is tried.
 */
static void
local_instants(const struct csq_tz *z, int64_t local, struct cands *out)
{
	int32_t offs[8];
	int n = 0, i, j;
	int64_t t = local - 2 * SECS_PER_DAY, end = local + 2 * SECS_PER_DAY;

	offs[n++] = csq_tz_offset(z, t);
	while ((t = csq_tz_next_transition(z, t)) <= end && n < 8)
		offs[n++] = csq_tz_offset(z, t);
	for (i = 0; i < n; i++) {
		for (j = 0; j < i && offs[j] != offs[i]; j++)
			;
		if (j == i && csq_tz_offset(z, local - offs[i]) == offs[i])
			cand_add(out, local - offs[i]);
	}
}

/* The local times of days from..to at which h may change. */
static void
chunk_candidates(const struct csq_hours *h, int64_t from, int64_t to,
                 struct cands *out)
{
	int64_t day, t, end;
	uint32_t i, wd, s, e;

	for (day = from; day <= to; day++) {
		wd = (uint32_t)(((day + 3) % 7 + 7) % 7);
		local_instants(&h->tz, day * SECS_PER_DAY, out);
		for (i = 0; i < h->nranges; i++) {
			s = h->range[i].start;
			e = h->range[i].end;
			if (s / MIN_PER_DAY == wd && s % MIN_PER_DAY != 0)
				local_instants(&h->tz,
				               day * SECS_PER_DAY +
				                   (s % MIN_PER_DAY) *
				                       SECS_PER_MIN,
				               out);
			if (e / MIN_PER_DAY == wd && e % MIN_PER_DAY != 0)
				local_instants(&h->tz,
				               day * SECS_PER_DAY +
				                   (e % MIN_PER_DAY) *
				                       SECS_PER_MIN,
				               out);
		}
	}
	/* And where the offset changes: the local time jumps. */
	t = from * SECS_PER_DAY - OFFSET_REACH;
	end = (to + 1) * SECS_PER_DAY + OFFSET_REACH;
	while ((t = csq_tz_next_transition(&h->tz, t)) <= end)
		cand_add(out, t);
}

uint64_t
csq_hours_next(const struct csq_hours *h, uint64_t now_ms, int *open)
{
	int64_t t = (int64_t)(now_ms / 1000), lo = t, hi, d0;
	struct cands c = {NULL, 0, 0};
	uint64_t next = UINT64_MAX;
	size_t i;
	int k;

	*open = csq_hours_open_at(h, t);
	d0 = floor_div(t + csq_tz_offset(&h->tz, t), SECS_PER_DAY) - 1;
	for (k = 0; k * CHUNK_DAYS < CSQ_HOURS_HORIZON_DAYS; k++) {
		hi = (d0 + CHUNK_DAYS) * SECS_PER_DAY - OFFSET_REACH;
		c.n = 0;
		/* Instants in (lo, hi] have local days within d0 - 3 and
		 * d0 + 8: an offset is less than 26 h. */
		chunk_candidates(h, d0 - 3, d0 + CHUNK_DAYS + 1, &c);
		qsort(c.v, c.n, sizeof(*c.v), cand_cmp);
		for (i = 0; i < c.n; i++)
			if (c.v[i] > lo && c.v[i] <= hi &&
			    csq_hours_open_at(h, c.v[i]) != *open) {
				next = (uint64_t)c.v[i] * 1000;
				goto done;
			}
		lo = hi;
		d0 += CHUNK_DAYS;
	}
done:
	free(c.v);
	return next;
}

void
csq_hours_iso(const struct csq_hours *h, uint64_t ms, char out[32])
{
	int64_t t = (int64_t)(ms / 1000), y;
	int32_t off = csq_tz_offset(&h->tz, t);
	int64_t local = t + off, day = floor_div(local, SECS_PER_DAY);
	int64_t sec = local - day * SECS_PER_DAY;
	int32_t a = off < 0 ? -off : off;
	unsigned m, d;

	csq_civil_from_days(day, &y, &m, &d);
	snprintf(out, 32, "%04lld-%02u-%02uT%02d:%02d:%02d%c%02d:%02d",
	         (long long)y, m, d, (int)(sec / 3600), (int)(sec / 60 % 60),
	         (int)(sec % 60), off < 0 ? '-' : '+', (int)(a / 3600),
	         (int)(a / 60 % 60));
}

/* --- a queue's hours in the state --- */

int
csq_queue_closed(const struct csq_queue *q)
{
	return q->closed;
}

static const struct csq_hours *
queue_hours(const struct csq_queue *q)
{
	if (q->policy == NULL || !q->policy->hours.on)
		return NULL;
	return &q->policy->hours;
}

uint64_t
csq_hours_next_ms(const struct csq_queue *q)
{
	return csq_deadline_running(&q->hours) ? q->hours.node.key : 0;
}

static int
user_key_cmp(const void *a, const void *b)
{
	const struct csq_user *x = *(struct csq_user *const *)a;
	const struct csq_user *y = *(struct csq_user *const *)b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/* q's users in line, in service order (not those held for a servicer:
 * they wait for it until their windows end, csq decision). */
static struct csq_user **
queue_users(const struct csq_queue *q, size_t *n)
{
	struct csq_line_node *node;
	struct csq_user **v;
	struct csq_line *l;
	uint32_t j;

	v = csq_xmalloc((csq_needline_count(q) + 1) * sizeof(*v));
	*n = 0;
	for (j = 0; (l = csq_needline_line(q, j)) != NULL; j++)
		for (node = csq_line_first(l); node != NULL;
		     node = csq_line_next(node))
			v[(*n)++] = csq_line_node_value(node);
	qsort(v, *n, sizeof(*v), user_key_cmp);
	return v;
}

/* Closing time: the users in line stay, move or leave. */
static void
hours_close(struct csq *c, struct csq_queue *q, const struct csq_hours *h,
            uint64_t now)
{
	struct csq_settle st;
	struct csq_user **v;
	size_t i, n;

	if (h->at_close == CSQ_AT_CLOSE_KEEP)
		return;
	v = queue_users(q, &n);
	memset(&st, 0, sizeof(st));
	for (i = 0; i < n; i++)
		if (h->at_close == CSQ_AT_CLOSE_MOVE)
			csq_policy_move(c, v[i], h->move_to, CSQ_REASON_CLOSED,
			                now);
		else
			csq_user_abandon(c, v[i], now, CSQ_REASON_CLOSED, &st);
	csq_settle(c, &st, now);
	free(v);
}

struct avail_one {
	uint64_t key, tie;
	char id[CSQ_ID_MAX + 1];
};

static int
avail_cmp(const void *a, const void *b)
{
	const struct avail_one *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->tie < y->tie ? -1 : x->tie > y->tie;
}

/* Opening time: q's free servicers, in its strategy's order, take the
 * best users they serve (q's, now that it is open). */
static void
hours_open(struct csq *c, struct csq_queue *q, uint64_t now)
{
	struct avail_one *v;
	struct csq_servicer *s;
	size_t i, n = q->avail.len;

	if (n == 0)
		return;
	v = csq_xmalloc(n * sizeof(*v));
	for (i = 0; i < n; i++) {
		s = csq_container_of(q->avail.nodes[i], struct csq_avail, node)
		        ->servicer;
		v[i].key = q->avail.nodes[i]->key;
		v[i].tie = q->avail.nodes[i]->tie;
		memcpy(v[i].id, s->id, s->idlen + 1);
	}
	qsort(v, n, sizeof(*v), avail_cmp);
	for (i = 0; i < n; i++)
		if ((s = csq_servicer_get(c, v[i].id)) != NULL)
			csq_match_servicer(c, s, now);
	free(v);
}

/* q is open or not now, and changes next at next (UINT64_MAX: never):
 * on a change its event, then what the change does. */
static void
hours_set(struct csq *c, struct csq_queue *q, int open, uint64_t next,
          uint64_t now)
{
	const struct csq_hours *h = queue_hours(q);
	struct csq_event ev;

	if (next != UINT64_MAX)
		csq_deadline_set(c, &q->hours, next);
	else
		csq_deadline_clear(c, &q->hours);
	if (open == !q->closed)
		return;
	q->closed = (uint8_t)!open;
	csq_event_begin(&ev, open ? CSQ_EV_OPENED : CSQ_EV_CLOSED, now);
	memcpy(ev.queue, q->name, q->namelen + 1);
	ev.until_ms = next != UINT64_MAX ? next : 0;
	csq_emit(c, &ev);
	if (!open && h != NULL)
		hours_close(c, q, h, now);
	else if (open)
		hours_open(c, q, now);
}

void
csq_hours_apply(struct csq *c, struct csq_queue *q, uint64_t now)
{
	const struct csq_hours *h = queue_hours(q);
	uint64_t next = UINT64_MAX;
	int open = 1;

	if (h != NULL)
		next = csq_hours_next(h, now, &open);
	hours_set(c, q, open, next, now);
}

void
csq_hours_init(struct csq_queue *q)
{
	csq_deadline_init(&q->hours, CSQ_DL_HOURS);
}

void
csq_hours_free(struct csq *c, struct csq_queue *q)
{
	csq_deadline_clear(c, &q->hours);
}

enum csq_status
csq_hours_route(struct csq *c, struct csq_queue **qp, uint64_t *opens_ms)
{
	struct csq_queue *q = *qp;
	const struct csq_hours *h;
	size_t hops;

	for (hops = 0; q->closed && (h = queue_hours(q)) != NULL; hops++) {
		if (h->when_closed == CSQ_CLOSED_WAIT)
			break;
		/* Refused, or a fallback chain that comes back: closed. */
		if (h->when_closed == CSQ_CLOSED_REFUSE ||
		    hops > c->npolicies) {
			*opens_ms = csq_hours_next_ms(*qp);
			return CSQ_ECLOSED;
		}
		q = csq_queue_get(c, h->fallback, strlen(h->fallback), 1);
	}
	*qp = q;
	return CSQ_OK;
}
