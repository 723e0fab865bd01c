/*
 * The fairness audit (audit.h): a model of every user (its state, its
 * room, its line, its arrival and its needs in force), of every room and
 * servicer (its skills), and of the waiting lines of each queue and tier
 * in arrival order, moved by the events as csq moves its own state.
 */
#include "audit.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "event_parse.h"
#include "util.h"

#define AUDIT_SEED 0x6373712d61756469ULL /* any: the ids are not hostile */

enum au_state { AU_GONE, AU_WAITING, AU_OFFERED, AU_ASSIGNED, AU_MOVING };

struct au_line;

struct au_user {
	char id[CSQ_ID_MAX + 1];
	enum au_state st;
	char queue[CSQ_ID_MAX + 1];
	uint32_t tier;
	uint64_t arrival; /* the id of the event it arrived with */
	uint64_t placed;  /* the id of the event that put it in its room */
	char room[CSQ_ROOM_MAX + 1];
	unsigned excuses; /* 1 << enum csq_audit_excuse, this life */
	/* Its needs in force as the record last said them ("" none), and
	 * the event that said it (0: no event of it carried them). */
	char needs[CSQ_NEEDS_TEXT_MAX];
	uint64_t needs_at;
	/* Its preference window as the record opened it (queued or
	 * transferred with prefer): the servicer it waits for, when the
	 * window closes (ms: its time out, or its prefer_ended), and the
	 * event that opened it (0: no window on record, this life). */
	char prefer[CSQ_ID_MAX + 1];
	uint64_t prefer_until, prefer_at;
	struct au_line *line;
	struct au_user *prev, *next; /* in line, in arrival order */
};

/* The waiting users of one queue and tier, oldest arrival first. */
struct au_line {
	struct au_user *head, *tail;
	uint64_t n; /* users in it */
	/* No window on record of a user in it is open at or after this
	 * time (ms; the latest end of one that joined it, or opened in it),
	 * so that an arrival's position is checked without a walk of the
	 * line, as before windows were checked. */
	uint64_t window_end;
};

struct au_room {
	char servicer[CSQ_ID_MAX + 1];
	struct au_user *user; /* NULL: free */
	uint64_t placed;
};

/* A servicer's skills as its last servicer_up or servicer_updated said
 * them ("" none); a servicer the record never showed has no entry. */
struct au_servicer {
	char skills[CSQ_SKILLS_TEXT_MAX];
	uint64_t at;
};

/* An overtake not excused yet: a later prefer_ended may excuse it. */
struct au_pending {
	struct au_user *early, *late;
	uint64_t early_arrival, late_arrival, at;
	char queue[CSQ_ID_MAX + 1];
	uint32_t tier;
	char servicer[CSQ_ID_MAX + 1];
	/* The earlier user's needs, which the servicer's skills met: the
	 * events that said both (0: it had none). */
	uint64_t needs_at, skills_at;
	/* The earlier user's window on record, which did not excuse it:
	 * the event that opened it (0: none), and whether it was for the
	 * servicer that took the later user (else it had closed). */
	uint64_t window_at;
	int window_same;
	char window_for[CSQ_ID_MAX + 1];
	int excused;
};

struct csq_audit {
	struct csq_dict *users, *rooms, *lines, *servicers;
	struct csq_audit_summary sum;
	struct csq_audit_finding *found;
	size_t nfound, capfound;
	struct au_pending *pending;
	size_t npending, cappending;
	uint32_t max_tier; /* the highest seen in a line */
	int ended;
};

static const char *const kind_names[CSQ_AUDIT_KINDS] = {
    [CSQ_AUDIT_OVERTAKEN] = "overtaken",   [CSQ_AUDIT_TWO_USERS] = "two_users",
    [CSQ_AUDIT_TWO_OFFERS] = "two_offers", [CSQ_AUDIT_LOST] = "lost",
    [CSQ_AUDIT_STRAY] = "stray",           [CSQ_AUDIT_GAP] = "gap",
};

static const char *const excuse_names[CSQ_EXCUSES] = {
    [CSQ_EXCUSE_PREFER] = "preferred servicer",
    [CSQ_EXCUSE_SKILLS] = "skills",
    [CSQ_EXCUSE_AGING] = "aging",
    [CSQ_EXCUSE_OVERFLOW] = "overflow",
    [CSQ_EXCUSE_TRANSFER] = "transfer",
    [CSQ_EXCUSE_DECLINED] = "declined or missed offer",
    [CSQ_EXCUSE_REQUEUE] = "requeue",
    [CSQ_EXCUSE_BEFORE] = "arrived before the record began",
    [CSQ_EXCUSE_UNRECORDED] = "servicer's skills not on record",
};

const char *
csq_audit_kind_name(enum csq_audit_kind k)
{
	return (unsigned)k < CSQ_AUDIT_KINDS ? kind_names[k] : "unknown";
}

const char *
csq_audit_excuse_name(enum csq_audit_excuse e)
{
	return (unsigned)e < CSQ_EXCUSES ? excuse_names[e] : "unknown";
}

struct csq_audit *
csq_audit_new(void)
{
	struct csq_audit *a = csq_xcalloc(1, sizeof(*a));

	a->users = csq_dict_new(AUDIT_SEED);
	a->rooms = csq_dict_new(AUDIT_SEED);
	a->lines = csq_dict_new(AUDIT_SEED);
	a->servicers = csq_dict_new(AUDIT_SEED);
	return a;
}

static void
audit_free_val(void *arg, const char *key, size_t len, void *val)
{
	(void)arg, (void)key, (void)len;
	free(val);
}

void
csq_audit_free(struct csq_audit *a)
{
	if (a == NULL)
		return;
	csq_dict_each(a->users, audit_free_val, NULL);
	csq_dict_each(a->rooms, audit_free_val, NULL);
	csq_dict_each(a->lines, audit_free_val, NULL);
	csq_dict_each(a->servicers, audit_free_val, NULL);
	csq_dict_free(a->users);
	csq_dict_free(a->rooms);
	csq_dict_free(a->lines);
	csq_dict_free(a->servicers);
	free(a->found);
	free(a->pending);
	free(a);
}

static void audit_find(struct csq_audit *, enum csq_audit_kind, int nids,
                       const uint64_t *ids, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void
audit_find(struct csq_audit *a, enum csq_audit_kind kind, int nids,
           const uint64_t *ids, const char *fmt, ...)
{
	struct csq_audit_finding *f;
	va_list ap;

	if (a->nfound == a->capfound) {
		a->capfound = a->capfound ? a->capfound * 2 : 16;
		a->found =
		    csq_xrealloc(a->found, a->capfound * sizeof(*a->found));
	}
	f = &a->found[a->nfound++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->nids = nids < CSQ_AUDIT_IDS ? nids : CSQ_AUDIT_IDS;
	memcpy(f->ids, ids, (size_t)f->nids * sizeof(*ids));
	va_start(ap, fmt);
	vsnprintf(f->text, sizeof(f->text), fmt, ap);
	va_end(ap);
	a->sum.findings[kind]++;
}

/* The line of queue q, tier t: "q" NUL-free key "q\x1ft". */
static struct au_line *
audit_line(struct csq_audit *a, const char *q, uint32_t t)
{
	char key[CSQ_ID_MAX + 16];
	int n = snprintf(key, sizeof(key), "%s\x1f%" PRIu32, q, t);
	struct au_line *l = csq_dict_get(a->lines, key, (size_t)n);

	if (l == NULL) {
		l = csq_xcalloc(1, sizeof(*l));
		csq_dict_put(a->lines, key, (size_t)n, l);
	}
	return l;
}

static void
line_remove(struct au_user *u)
{
	struct au_line *l = u->line;

	if (l == NULL)
		return;
	if (u->prev != NULL)
		u->prev->next = u->next;
	else
		l->head = u->next;
	if (u->next != NULL)
		u->next->prev = u->prev;
	else
		l->tail = u->prev;
	u->prev = u->next = NULL;
	u->line = NULL;
	l->n--;
}

/* Into the line of its queue and tier, at its arrival: from the tail,
 * where new arrivals go. */
static void
line_insert(struct csq_audit *a, struct au_user *u)
{
	struct au_line *l = audit_line(a, u->queue, u->tier);
	struct au_user *at;

	/* Out of its line first: a user that is its line's tail (a
	 * rescored of the last arrival) must not be found as its own
	 * place. */
	line_remove(u);
	at = l->tail;
	while (at != NULL && at->arrival > u->arrival)
		at = at->prev;
	u->line = l;
	u->prev = at;
	u->next = at != NULL ? at->next : l->head;
	if (u->next != NULL)
		u->next->prev = u;
	else
		l->tail = u;
	if (at != NULL)
		at->next = u;
	else
		l->head = u;
	l->n++;
	if (u->prefer_at != 0 && u->prefer_until > l->window_end)
		l->window_end = u->prefer_until;
	if (u->tier > a->max_tier)
		a->max_tier = u->tier;
}

static struct au_user *
audit_user(struct csq_audit *a, const char *id)
{
	size_t len = strlen(id);
	struct au_user *u = csq_dict_get(a->users, id, len);

	if (u == NULL) {
		u = csq_xcalloc(1, sizeof(*u));
		memcpy(u->id, id, len + 1);
		csq_dict_put(a->users, u->id, len, u);
	}
	return u;
}

static struct au_room *
audit_room(struct csq_audit *a, const char *id, const char *servicer)
{
	size_t len = strlen(id);
	struct au_room *r = csq_dict_get(a->rooms, id, len);

	if (r == NULL) {
		r = csq_xcalloc(1, sizeof(*r));
		csq_dict_put(a->rooms, id, len, r);
		snprintf(r->servicer, sizeof(r->servicer), "%s", servicer);
	}
	return r;
}

/* A user's life begins: a fresh arrival, or one the record began after. */
static void
user_arrive(struct csq_audit *a, struct au_user *u, const struct csq_event *ev,
            int before)
{
	u->arrival = ev->id;
	u->excuses = before ? 1u << CSQ_EXCUSE_BEFORE : 0;
	u->room[0] = '\0';
	u->needs[0] = '\0';
	u->needs_at = 0;
	u->prefer[0] = '\0';
	u->prefer_at = 0;
	if (before)
		a->sum.before++;
	else
		a->sum.arrivals++;
}

static void
user_wait(struct csq_audit *a, struct au_user *u, const struct csq_event *ev)
{
	snprintf(u->queue, sizeof(u->queue), "%s", ev->queue);
	u->tier = ev->tier;
	u->st = AU_WAITING;
	u->room[0] = '\0';
	line_insert(a, u);
}

static void
user_gone(struct au_user *u)
{
	line_remove(u);
	u->st = AU_GONE;
	u->room[0] = '\0';
}

/* The room a user held is free again. */
static void
room_free(struct csq_audit *a, struct au_user *u)
{
	struct au_room *r;

	if (u->room[0] == '\0')
		return;
	r = csq_dict_get(a->rooms, u->room, strlen(u->room));
	if (r != NULL && r->user == u)
		r->user = NULL;
	u->room[0] = '\0';
}

/* The first excuse of a pair of users, or -1. */
static int
audit_excuse(unsigned bits)
{
	int e;

	for (e = 0; e < CSQ_EXCUSES; e++)
		if (bits & (1u << e))
			return e;
	return -1;
}

/* The needs in force of u that ev says (an event that carries them:
 * absent, none). */
static void
user_needs(struct au_user *u, const struct csq_event *ev)
{
	snprintf(u->needs, sizeof(u->needs), "%s", ev->needs);
	u->needs_at = ev->id;
}

/*
 * 1 when skills meet needs (protocol.md section 3c: every skill needed,
 * at the level needed or higher), 0 when not, -1 when either is not a
 * skill list (not csqd's: csq_event_parse refuses them). Both lists are
 * sorted by name once parsed: one merge.
 */
static int
audit_meets(const char *skills, const char *needs)
{
	struct csq_skill_list have, want;
	uint32_t i, j = 0;
	int cmp = 1;

	if (csq_skills_parse(skills, CSQ_SERVICER_SKILLS, &have) != CSQ_OK ||
	    csq_skills_parse(needs, CSQ_USER_NEEDS, &want) != CSQ_OK)
		return -1;
	for (i = 0; i < want.n; i++) {
		while (j < have.n &&
		       (cmp = strcmp(have.v[j].name, want.v[i].name)) < 0)
			j++;
		if (j == have.n || cmp != 0 ||
		    have.v[j].level < want.v[i].level)
			return 0;
	}
	return 1;
}

/*
 * What excuses servicer s (NULL: not on record) passing over y, which
 * needs something: skills when its recorded skills do not meet y's
 * recorded needs, nothing when they do; when either is unknown, the
 * lenient excuse that says so.
 */
static unsigned
audit_skills(const struct au_servicer *s, const struct au_user *y)
{
	if (y->needs[0] == '\0')
		return 0;
	if (s == NULL)
		return 1u << CSQ_EXCUSE_UNRECORDED;
	switch (audit_meets(s->skills, y->needs)) {
	case 0:
		return 1u << CSQ_EXCUSE_SKILLS;
	case 1:
		return 0;
	default:
		return 1u << CSQ_EXCUSE_UNRECORDED;
	}
}

/* The window ev opens for u (queued, transferred: prefer, prefer_ms, the
 * whole window from ev's time); none without prefer. */
static void
user_window(struct au_user *u, const struct csq_event *ev)
{
	u->prefer_at = 0;
	if (ev->prefer[0] == '\0')
		return;
	snprintf(u->prefer, sizeof(u->prefer), "%s", ev->prefer);
	u->prefer_until = ev->ts_ms + ev->prefer_ms;
	u->prefer_at = ev->id;
	if (u->line != NULL && u->prefer_until > u->line->window_end)
		u->line->window_end = u->prefer_until;
}

/* u's window on record is open at ev's time. */
static int
window_open(const struct au_user *u, const struct csq_event *ev)
{
	return u->prefer_at != 0 && ev->ts_ms < u->prefer_until;
}

/*
 * What the windows on record excuse when ev's servicer takes u past y:
 * y's, when it was open then and for another servicer (y waited for
 * that one: protocol.md section 3b); u's, when it was open and for this
 * one (u was taken by the servicer it waited for). A window for the
 * servicer that took u, or one closed by then, excuses nothing.
 */
static unsigned
audit_windows(const struct au_user *y, const struct au_user *u,
              const struct csq_event *ev)
{
	if (window_open(y, ev) && strcmp(y->prefer, ev->servicer) != 0)
		return 1u << CSQ_EXCUSE_PREFER;
	if (window_open(u, ev) && strcmp(u->prefer, ev->servicer) == 0)
		return 1u << CSQ_EXCUSE_PREFER;
	return 0;
}

/*
 * u is offered or matched by ev's servicer: whoever of its queue and tier
 * arrived before it and is still waiting was overtaken. Excused at once
 * when either has a reason, or when the servicer's skills (as the record
 * has them now) do not meet the earlier one's needs in force; else kept
 * pending, for a prefer_ended later in the record may say that the
 * earlier one was held for a servicer.
 */
static void
audit_order(struct csq_audit *a, struct au_user *u, const struct csq_event *ev)
{
	struct au_line *l = audit_line(a, ev->queue, ev->tier);
	const struct au_servicer *s =
	    csq_dict_get(a->servicers, ev->servicer, strlen(ev->servicer));
	struct au_user *y;
	struct au_pending *p;
	int e;

	a->sum.checked++;
	for (y = l->head; y != NULL && y->arrival < u->arrival; y = y->next) {
		if (y == u || y->st != AU_WAITING)
			continue;
		if ((e = audit_excuse(y->excuses | u->excuses |
		                      audit_windows(y, u, ev) |
		                      audit_skills(s, y))) >= 0) {
			a->sum.excused[e]++;
			continue;
		}
		if (a->npending == a->cappending) {
			a->cappending = a->cappending ? a->cappending * 2 : 16;
			a->pending = csq_xrealloc(
			    a->pending, a->cappending * sizeof(*a->pending));
		}
		p = &a->pending[a->npending++];
		memset(p, 0, sizeof(*p));
		p->early = y;
		p->late = u;
		p->early_arrival = y->arrival;
		p->late_arrival = u->arrival;
		p->at = ev->id;
		p->tier = ev->tier;
		if (y->needs[0] != '\0') {
			p->needs_at = y->needs_at;
			p->skills_at = s->at;
		}
		if (y->prefer_at != 0) {
			p->window_at = y->prefer_at;
			p->window_same = strcmp(y->prefer, ev->servicer) == 0;
			snprintf(p->window_for, sizeof(p->window_for), "%s",
			         y->prefer);
		}
		snprintf(p->queue, sizeof(p->queue), "%s", ev->queue);
		snprintf(p->servicer, sizeof(p->servicer), "%s", ev->servicer);
	}
}

/* A user's life ends or it was held for a servicer: pending overtakes of
 * this life that it excuses are settled now. */
static void
audit_settle(struct csq_audit *a, struct au_user *u)
{
	struct au_pending *p;
	size_t i;
	int e;

	for (i = 0; i < a->npending; i++) {
		p = &a->pending[i];
		if (p->excused ||
		    !((p->early == u && p->early_arrival == u->arrival) ||
		      (p->late == u && p->late_arrival == u->arrival)))
			continue;
		if ((e = audit_excuse(u->excuses)) >= 0) {
			p->excused = 1;
			a->sum.excused[e]++;
		}
	}
}

/*
 * u's window for ev's servicer closed (prefer_ended): u was held for that
 * servicer until now, so the overtakes of u (this life) by others so
 * far are excused; one by that servicer is not. For a window the record
 * did not open (a re-ENQUEUE's PREFER publishes nothing; a csq before
 * issue 36 wrote no prefer) this is the first the record says of it.
 */
static void
audit_settle_window(struct csq_audit *a, struct au_user *u,
                    const struct csq_event *ev)
{
	struct au_pending *p;
	size_t i;

	for (i = 0; i < a->npending; i++) {
		p = &a->pending[i];
		if (p->excused || p->early != u ||
		    p->early_arrival != u->arrival ||
		    strcmp(p->servicer, ev->servicer) == 0)
			continue;
		p->excused = 1;
		a->sum.excused[CSQ_EXCUSE_PREFER]++;
	}
}

static void
audit_stray(struct csq_audit *a, const struct au_user *u,
            const struct csq_event *ev, const char *why)
{
	uint64_t ids[2] = {u->placed ? u->placed : u->arrival, ev->id};

	audit_find(a, CSQ_AUDIT_STRAY, 2, ids, "%s of user %s: %s",
	           csq_event_name(ev->type), u->id, why);
}

/* ev offers or matches u into ev's room. */
static void
audit_place(struct csq_audit *a, struct au_user *u, const struct csq_event *ev,
            int offer)
{
	struct au_room *r = audit_room(a, ev->room, ev->servicer);
	uint64_t ids[2];

	if (u->st == AU_OFFERED || u->st == AU_ASSIGNED) {
		ids[0] = u->placed;
		ids[1] = ev->id;
		audit_find(a, CSQ_AUDIT_TWO_OFFERS, 2, ids,
		           "user %s %s room %s while %s room %s", u->id,
		           offer ? "offered" : "matched into", ev->room,
		           u->st == AU_OFFERED ? "offered" : "in", u->room);
		room_free(a, u);
	} else if (u->st == AU_GONE) {
		user_arrive(a, u, ev, 0);
	}
	if (r->user != NULL && r->user != u) {
		ids[0] = r->placed;
		ids[1] = ev->id;
		audit_find(a, CSQ_AUDIT_TWO_USERS, 2, ids,
		           "room %s given to %s while %s holds it", ev->room,
		           u->id, r->user->id);
		r->user->room[0] = '\0';
		user_gone(r->user);
	}
	/* Moved at once into a free room by a policy (overflow, nobody,
	 * closed; a record before the reason: any move). A re-ENQUEUE's
	 * move (reason enqueue) keeps its arrival, as its rescored does,
	 * and is checked as any placement. */
	if (ev->from_queue[0] != '\0' && ev->reason != CSQ_REASON_ENQUEUE)
		u->excuses |= 1u << CSQ_EXCUSE_OVERFLOW;
	audit_order(a, u, ev);
	line_remove(u);
	user_needs(u, ev);
	u->prefer_at = 0; /* a window ends silently in a room */
	snprintf(u->queue, sizeof(u->queue), "%s", ev->queue);
	u->tier = ev->tier;
	u->st = offer ? AU_OFFERED : AU_ASSIGNED;
	u->placed = ev->id;
	snprintf(u->room, sizeof(u->room), "%s", ev->room);
	r->user = u;
	r->placed = ev->id;
	if (!offer)
		a->sum.matched++;
}

static void
audit_matched(struct csq_audit *a, struct au_user *u,
              const struct csq_event *ev)
{
	/* ACCEPT: the offer becomes the conversation. */
	if (u->st == AU_OFFERED && strcmp(u->room, ev->room) == 0) {
		user_needs(u, ev);
		u->st = AU_ASSIGNED;
		u->placed = ev->id;
		a->sum.matched++;
		return;
	}
	audit_place(a, u, ev, 0);
}

/* Back in line at its old place (requeued, declined, transferred). */
static void
audit_back(struct csq_audit *a, struct au_user *u, const struct csq_event *ev,
           enum csq_audit_excuse why)
{
	if (u->st == AU_GONE)
		user_arrive(a, u, ev, 1);
	room_free(a, u);
	u->excuses |= 1u << why;
	user_wait(a, u, ev);
}

/* The rooms of a servicer that went: any user still in one is lost. */
struct au_down {
	struct csq_audit *a;
	const struct csq_event *ev;
};

static void
audit_down_room(void *arg, const char *key, size_t len, void *val)
{
	struct au_down *d = arg;
	struct au_room *r = val;
	struct au_user *u = r->user;
	uint64_t ids[2];

	(void)key, (void)len;
	if (u == NULL || strcmp(r->servicer, d->ev->servicer) != 0)
		return;
	ids[0] = r->placed;
	ids[1] = d->ev->id;
	audit_find(d->a, CSQ_AUDIT_LOST, 2, ids,
	           "user %s in room %s went with servicer %s, never requeued",
	           u->id, u->room, d->ev->servicer);
	r->user = NULL;
	u->room[0] = '\0';
	user_gone(u);
}

static void
audit_ids(struct csq_audit *a, uint64_t id)
{
	uint64_t ids[2] = {a->sum.last_id, id};

	if (a->sum.events == 0)
		a->sum.first_id = id;
	else if (id != a->sum.last_id + 1)
		audit_find(a, CSQ_AUDIT_GAP, 2, ids,
		           id > a->sum.last_id
		               ? "%" PRIu64 " events missing between these"
		               : "ids went back (%" PRIu64 " after)",
		           id > a->sum.last_id ? id - a->sum.last_id - 1
		                               : a->sum.last_id);
	a->sum.events++;
	a->sum.last_id = id;
}

void
csq_audit_unknown(struct csq_audit *a, uint64_t id)
{
	audit_ids(a, id);
	a->sum.unknown_events++;
}

static void audit_settle(struct csq_audit *, struct au_user *);

/*
 * A new arrival's position says how many users its queue's line holds
 * ahead of it: those of a higher tier and its own tier's earlier ones.
 * When the model holds more, some of them are not in that line (held for
 * a preferred servicer, or the arrival itself is, its position being in
 * that servicer's line): the record says which only when a window ends
 * (prefer_ended), so all of them are excused as held, and counted so.
 * Lenient where the record is silent, never a false finding.
 */
static void
audit_position(struct csq_audit *a, struct au_user *x,
               const struct csq_event *ev)
{
	char key[CSQ_ID_MAX + 16];
	struct au_line *l;
	struct au_user *y;
	uint64_t ahead = 0;
	uint32_t t;
	int n;

	/* An arrival in a window on record: its position is in its
	 * servicer's line. */
	if (x->prefer_at != 0)
		return;
	for (t = ev->tier; t <= a->max_tier && t >= ev->tier; t++) {
		n = snprintf(key, sizeof(key), "%s\x1f%" PRIu32, ev->queue, t);
		if ((l = csq_dict_get(a->lines, key, (size_t)n)) == NULL)
			continue;
		ahead += l->n - (x->line == l ? 1 : 0);
		/* Those in a window on record are not in the line. Only
		 * when one may be open: a walk of the line for every
		 * arrival was quadratic in its length. */
		if (ev->ts_ms >= l->window_end)
			continue;
		for (y = l->head; y != NULL; y = y->next) {
			a->sum.walked++;
			if (y != x && window_open(y, ev))
				ahead--;
		}
	}
	if (ev->position == 0 || ahead <= ev->position - 1)
		return;
	x->excuses |= 1u << CSQ_EXCUSE_PREFER;
	for (t = ev->tier; t <= a->max_tier && t >= ev->tier; t++) {
		n = snprintf(key, sizeof(key), "%s\x1f%" PRIu32, ev->queue, t);
		if ((l = csq_dict_get(a->lines, key, (size_t)n)) == NULL)
			continue;
		for (y = l->head; y != NULL; y = y->next)
			if (y != x && !window_open(y, ev) &&
			    !(y->excuses & 1u << CSQ_EXCUSE_PREFER)) {
				y->excuses |= 1u << CSQ_EXCUSE_PREFER;
				audit_settle(a, y);
			}
	}
}

/* The fields the audit needs of each type: a line without them (not
 * csqd's) is a finding, and changes nothing else. */
static const char *
audit_missing(const struct csq_event *ev)
{
	switch (ev->type) {
	case CSQ_EV_OFFERED:
	case CSQ_EV_MATCHED:
	case CSQ_EV_DECLINED:
	case CSQ_EV_RELEASED:
		if (ev->room[0] == '\0' || ev->servicer[0] == '\0')
			return "room";
		/* FALLTHROUGH */
	case CSQ_EV_QUEUED:
	case CSQ_EV_RESCORED:
	case CSQ_EV_OVERFLOWED:
	case CSQ_EV_REQUEUED:
	case CSQ_EV_TRANSFERRED:
	case CSQ_EV_LEFT:
	case CSQ_EV_PREFER_ENDED:
	case CSQ_EV_RELAXED:
		if (ev->user[0] == '\0')
			return "user";
		if (ev->queue[0] == '\0')
			return "queue";
		return NULL;
	case CSQ_EV_SERVICER_DOWN:
		return ev->servicer[0] == '\0' ? "servicer" : NULL;
	default:
		return NULL;
	}
}

/* A servicer's skills, as a login or a HEARTBEAT's change says them
 * (servicer_up without skills: none). */
static void
audit_servicer(struct csq_audit *a, const struct csq_event *ev)
{
	size_t len = strlen(ev->servicer);
	struct au_servicer *s;

	if (len == 0)
		return;
	if ((s = csq_dict_get(a->servicers, ev->servicer, len)) == NULL) {
		s = csq_xcalloc(1, sizeof(*s));
		csq_dict_put(a->servicers, ev->servicer, len, s);
	}
	snprintf(s->skills, sizeof(s->skills), "%s", ev->skills);
	s->at = ev->id;
}

void
csq_audit_event(struct csq_audit *a, const struct csq_event *ev)
{
	struct au_user *u = NULL;
	struct au_down down = {a, ev};
	const char *missing;

	audit_ids(a, ev->id);
	if ((missing = audit_missing(ev)) != NULL) {
		audit_find(a, CSQ_AUDIT_STRAY, 1, &ev->id, "%s without a %s",
		           csq_event_name(ev->type), missing);
		return;
	}
	if (ev->user[0] != '\0')
		u = audit_user(a, ev->user);
	switch (ev->type) {
	case CSQ_EV_QUEUED:
	case CSQ_EV_RESCORED:
	case CSQ_EV_OVERFLOWED:
		if (u->st == AU_GONE)
			user_arrive(a, u, ev,
			            ev->type != CSQ_EV_QUEUED ||
			                ev->from_queue[0] != '\0');
		else if (u->st != AU_WAITING) {
			audit_stray(a, u, ev, "not waiting");
			room_free(a, u);
		}
		if (ev->type == CSQ_EV_OVERFLOWED)
			u->excuses |= 1u << CSQ_EXCUSE_OVERFLOW;
		if (ev->type == CSQ_EV_RESCORED &&
		    ev->reason == CSQ_REASON_AGING)
			u->excuses |= 1u << CSQ_EXCUSE_AGING;
		/* queued and rescored carry the needs in force (none when
		 * absent), checked at each overtake (audit_order); an
		 * overflow keeps them. */
		if (ev->type != CSQ_EV_OVERFLOWED)
			user_needs(u, ev);
		/* A window (queued's prefer): passed over rightly by a
		 * servicer other than the one it waits for, while it is
		 * open (audit_windows). */
		if (ev->type == CSQ_EV_QUEUED)
			user_window(u, ev);
		user_wait(a, u, ev);
		if (ev->type == CSQ_EV_QUEUED && ev->from_queue[0] == '\0' &&
		    u->arrival == ev->id)
			audit_position(a, u, ev);
		break;
	case CSQ_EV_OFFERED:
		audit_place(a, u, ev, 1);
		break;
	case CSQ_EV_MATCHED:
		audit_matched(a, u, ev);
		break;
	case CSQ_EV_DECLINED:
		if (u->st != AU_OFFERED || strcmp(u->room, ev->room) != 0)
			audit_stray(a, u, ev, "no such offer");
		audit_back(a, u, ev, CSQ_EXCUSE_DECLINED);
		break;
	case CSQ_EV_REQUEUED:
		if (u->st != AU_OFFERED && u->st != AU_ASSIGNED &&
		    u->st != AU_GONE)
			audit_stray(a, u, ev, "not in a room");
		audit_back(a, u, ev, CSQ_EXCUSE_REQUEUE);
		break;
	case CSQ_EV_TRANSFERRED:
		if (u->st != AU_MOVING && u->st != AU_GONE)
			audit_stray(a, u, ev, "not released by a transfer");
		audit_back(a, u, ev, CSQ_EXCUSE_TRANSFER);
		user_needs(u, ev);
		user_window(u, ev);
		break;
	case CSQ_EV_PREFER_ENDED:
		if (u->st == AU_GONE) {
			user_arrive(a, u, ev, 1);
			user_wait(a, u, ev);
		}
		/* Its window is closed from now on; the overtakes by other
		 * servicers while it waited for this one are excused. */
		if (window_open(u, ev))
			u->prefer_until = ev->ts_ms;
		audit_settle_window(a, u, ev);
		break;
	case CSQ_EV_RELAXED:
		if (u->st == AU_GONE) {
			user_arrive(a, u, ev, 1);
			user_wait(a, u, ev);
		}
		if (u->needs[0] != '\0') {
			/* The needs in force from now on: checked at each
			 * overtake after it (audit_order). */
			user_needs(u, ev);
			break;
		}
		/* In need of skills that the record did not say before (a
		 * csq before issue 36 wrote needs only in relaxed): passed
		 * by others of its line rightly, as this event says only
		 * now (audit_settle). */
		u->excuses |= 1u << CSQ_EXCUSE_SKILLS;
		user_needs(u, ev);
		audit_settle(a, u);
		break;
	case CSQ_EV_LEFT:
		if (u->st == AU_GONE)
			a->sum.before++;
		else if (u->st == AU_ASSIGNED || u->st == AU_MOVING)
			audit_stray(a, u, ev, "left from a room");
		if (ev->reason == CSQ_REASON_TIMEOUT)
			a->sum.expired++;
		else
			a->sum.left++;
		room_free(a, u);
		user_gone(u);
		break;
	case CSQ_EV_RELEASED:
		if (u->st == AU_GONE) {
			a->sum.before++;
			a->sum.matched++;
		} else if (u->st != AU_ASSIGNED ||
		           strcmp(u->room, ev->room) != 0)
			audit_stray(a, u, ev, "not in that room");
		room_free(a, u);
		user_gone(u);
		if (ev->reason == CSQ_REASON_BY_TRANSFER)
			u->st = AU_MOVING;
		break;
	case CSQ_EV_SERVICER_DOWN:
		csq_dict_each(a->rooms, audit_down_room, &down);
		break;
	case CSQ_EV_SERVICER_UP:
	case CSQ_EV_SERVICER_UPDATED:
		audit_servicer(a, ev);
		break;
	case CSQ_EV_SERVICER_PAUSED:
	case CSQ_EV_SERVICER_RESUMED:
	case CSQ_EV_WRAPUP:
	case CSQ_EV_READY:
	case CSQ_EV_OPENED: /* business hours: a queue's, no user's */
	case CSQ_EV_CLOSED:
		break;
	}
}

static void
audit_count_end(void *arg, const char *key, size_t len, void *val)
{
	struct csq_audit *a = arg;
	struct au_user *u = val;
	uint64_t ids[1] = {u->placed};

	(void)key, (void)len;
	if (u->st == AU_WAITING)
		a->sum.still_waiting++;
	else if (u->st == AU_OFFERED || u->st == AU_ASSIGNED)
		a->sum.in_rooms++;
	else if (u->st == AU_MOVING)
		audit_find(a, CSQ_AUDIT_LOST, 1, ids,
		           "user %s released by a transfer, never placed again",
		           u->id);
}

void
csq_audit_end(struct csq_audit *a)
{
	struct au_pending *p;
	size_t i;
	uint64_t ids[CSQ_AUDIT_IDS];
	char why[96], window[128];
	int n;

	if (a->ended)
		return;
	a->ended = 1;
	csq_dict_each(a->users, audit_count_end, a);
	for (i = 0; i < a->npending; i++) {
		p = &a->pending[i];
		if (p->excused)
			continue;
		ids[0] = p->early_arrival;
		ids[1] = p->late_arrival;
		ids[2] = p->at;
		n = 3;
		/* With needs: the skills excuse refused, and the events
		 * that said the needs and the skills that met them. */
		why[0] = '\0';
		if (p->needs_at != 0) {
			ids[n++] = p->needs_at;
			snprintf(why, sizeof(why),
			         ", whose skills (event %" PRIu64
			         ") met its needs (event %" PRIu64 ")",
			         p->skills_at, p->needs_at);
		}
		/* With a window on record: the preferred-servicer excuse
		 * refused, and the event that opened the window. */
		window[0] = '\0';
		if (p->window_at != 0) {
			ids[n++] = p->window_at;
			snprintf(window, sizeof(window),
			         p->window_same ? "; its window (event %" PRIu64
			                          ") was for %s itself"
			                        : "; its window (event %" PRIu64
			                          ") for %s had closed",
			         p->window_at, p->window_for);
		}
		audit_find(a, CSQ_AUDIT_OVERTAKEN, n, ids,
		           "%s (arrived at event %" PRIu64
		           ") was waiting in %s tier %" PRIu32
		           " when %s, who arrived after, went to %s%s%s",
		           p->early->id, p->early_arrival, p->queue, p->tier,
		           p->late->id, p->servicer, why, window);
	}
}

const struct csq_audit_summary *
csq_audit_summary(const struct csq_audit *a)
{
	return &a->sum;
}

const struct csq_audit_finding *
csq_audit_findings(const struct csq_audit *a, size_t *n)
{
	*n = a->nfound;
	return a->found;
}

int
csq_audit_line(struct csq_audit *a, const char *line, size_t len, char *err)
{
	struct csq_event ev;

	switch (csq_event_parse(line, len, &ev, err)) {
	case CSQ_PARSE_OK:
		csq_audit_event(a, &ev);
		return 0;
	case CSQ_PARSE_UNKNOWN:
		csq_audit_unknown(a, ev.id);
		return 0;
	case CSQ_PARSE_ERROR:
		break;
	}
	return -1;
}
