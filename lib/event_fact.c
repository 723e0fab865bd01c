/*
 * Events as facts (event_fact.h): each kind's fields in the order
 * csq_event_json writes them, and each field's place in struct csq_event.
 * A new kind of event is one line in fact_kinds; a new field one line in
 * fact_fields (and its enum name).
 */
#include "event_fact.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum fact_field {
	F_END, /* ends a kind's list */
	F_USER,
	F_QUEUE,
	F_FROM_QUEUE,
	F_SERVICER,
	F_ROOM,
	F_TIER,
	F_POSITION,
	F_WAITED_MS,
	F_CAPACITY,
	F_QUEUES,
	F_REASON, /* "reason", or "by" where csq_event_json says so */
	F_OFFERED_MS,
	F_EXPIRES_MS,
	F_UNTIL_MS,
	F_NEEDS,     /* relaxed: the needs in force */
	F_DROPPED,   /* relaxed: the names dropped */
	F_LOWERED,   /* relaxed: by how much the levels went down */
	F_ETA_MS,    /* queued: the estimate, -1 none */
	F_SKILLS,    /* servicer_up, servicer_updated: the servicer's skills */
	F_PREFER,    /* queued, transferred: the preferred servicer */
	F_PREFER_MS, /* and its window's time left */
};

enum fact_type {
	FACT_ID,         /* an id, into a char array */
	FACT_IDS,        /* ids joined by commas (servicer_up's queues) */
	FACT_ROOM,       /* a room, or its index of the event's servicer */
	FACT_U32,        /* an integer up to max */
	FACT_U64,        /* an integer */
	FACT_REASON,     /* a reason's name */
	FACT_OFFERED_MS, /* an integer whose presence says ACCEPT made it */
	FACT_SKILLS,     /* a skill list's text, [A-Za-z0-9._:,-] */
	FACT_ETA,        /* an estimate, -1 or more, whose presence says so */
};

/* A field's place: its member of struct csq_event. */
#define FIELD(type, member, max)                                               \
	{                                                                      \
		type, offsetof(struct csq_event, member),                      \
		    sizeof(((struct csq_event *)0)->member), max               \
	}

static const struct {
	enum fact_type type;
	size_t off;   /* in struct csq_event */
	size_t size;  /* of the member */
	uint32_t max; /* FACT_U32's */
} fact_fields[] = {
    [F_USER] = FIELD(FACT_ID, user, 0),
    [F_QUEUE] = FIELD(FACT_ID, queue, 0),
    [F_FROM_QUEUE] = FIELD(FACT_ID, from_queue, 0),
    [F_SERVICER] = FIELD(FACT_ID, servicer, 0),
    [F_ROOM] = FIELD(FACT_ROOM, room, 0),
    [F_TIER] = FIELD(FACT_U32, tier, CSQ_TIER_LIMIT),
    [F_POSITION] = FIELD(FACT_U64, position, 0),
    [F_WAITED_MS] = FIELD(FACT_U64, waited_ms, 0),
    [F_CAPACITY] = FIELD(FACT_U32, capacity, CSQ_CAPACITY_MAX),
    [F_QUEUES] = FIELD(FACT_IDS, queues, 0),
    [F_REASON] = FIELD(FACT_REASON, reason, 0),
    [F_OFFERED_MS] = FIELD(FACT_OFFERED_MS, offered_ms, 0),
    [F_EXPIRES_MS] = FIELD(FACT_U64, expires_ms, 0),
    [F_UNTIL_MS] = FIELD(FACT_U64, until_ms, 0),
    [F_NEEDS] = FIELD(FACT_SKILLS, needs, 0),
    [F_DROPPED] = FIELD(FACT_SKILLS, dropped, 0),
    [F_LOWERED] = FIELD(FACT_U32, lowered, CSQ_SKILL_LEVEL_MAX),
    [F_ETA_MS] = FIELD(FACT_ETA, eta_ms, 0),
    [F_SKILLS] = FIELD(FACT_SKILLS, skills, 0),
    [F_PREFER] = FIELD(FACT_ID, prefer, 0),
    [F_PREFER_MS] = FIELD(FACT_U64, prefer_ms, 0),
};

#define FACT_KIND_FIELDS 10

/*
 * Each kind's fields, in csq_event_json's order, as X-macro lists: one
 * list makes both the kind's line of fact_kinds (read by
 * csq_event_from_fact) and its writer (fact_<kind>, csq_event_to_fact).
 */
/* clang-format off */
#define KIND_QUEUED(X) \
	X(F_USER) X(F_QUEUE) X(F_TIER) X(F_POSITION) X(F_FROM_QUEUE) \
	X(F_ETA_MS) X(F_NEEDS) X(F_PREFER) X(F_PREFER_MS)
#define KIND_RESCORED(X) \
	X(F_USER) X(F_QUEUE) X(F_TIER) X(F_POSITION) X(F_FROM_QUEUE) \
	X(F_REASON) X(F_NEEDS)
#define KIND_MATCHED(X) \
	X(F_USER) X(F_QUEUE) X(F_TIER) X(F_SERVICER) X(F_ROOM) \
	X(F_WAITED_MS) X(F_FROM_QUEUE) X(F_OFFERED_MS) X(F_NEEDS) \
	X(F_REASON)
/* servicer and room: an offered user's left. */
#define KIND_LEFT(X) \
	X(F_USER) X(F_QUEUE) X(F_REASON) X(F_SERVICER) X(F_ROOM)
#define KIND_RELEASED(X) \
	X(F_USER) X(F_QUEUE) X(F_SERVICER) X(F_ROOM) X(F_REASON)
#define KIND_REQUEUED(X) \
	X(F_USER) X(F_QUEUE) X(F_TIER) X(F_POSITION) X(F_SERVICER) X(F_ROOM) \
	X(F_REASON)
#define KIND_SERVICER_UP(X) \
	X(F_SERVICER) X(F_CAPACITY) X(F_QUEUES) X(F_SKILLS)
#define KIND_SERVICER_DOWN(X) \
	X(F_SERVICER) X(F_REASON)
#define KIND_SERVICER_PAUSED(X) \
	X(F_SERVICER) X(F_REASON)
#define KIND_SERVICER_RESUMED(X) \
	X(F_SERVICER)
#define KIND_OFFERED(X) \
	X(F_USER) X(F_QUEUE) X(F_TIER) X(F_SERVICER) X(F_ROOM) \
	X(F_EXPIRES_MS) X(F_FROM_QUEUE) X(F_NEEDS) X(F_REASON)
#define KIND_DECLINED(X) \
	X(F_USER) X(F_QUEUE) X(F_TIER) X(F_SERVICER) X(F_ROOM) X(F_REASON) \
	X(F_POSITION) X(F_UNTIL_MS)
#define KIND_TRANSFERRED(X) \
	X(F_USER) X(F_FROM_QUEUE) X(F_QUEUE) X(F_TIER) X(F_SERVICER) \
	X(F_ROOM) X(F_POSITION) X(F_NEEDS) X(F_PREFER) X(F_PREFER_MS)
#define KIND_WRAPUP(X) \
	X(F_SERVICER) X(F_ROOM) X(F_UNTIL_MS)
#define KIND_READY(X) \
	X(F_SERVICER) X(F_ROOM)
#define KIND_OVERFLOWED(X) \
	X(F_USER) X(F_FROM_QUEUE) X(F_QUEUE) X(F_TIER) X(F_POSITION) \
	X(F_REASON)
#define KIND_PREFER_ENDED(X) \
	X(F_USER) X(F_QUEUE) X(F_SERVICER) X(F_REASON)
#define KIND_RELAXED(X) \
	X(F_USER) X(F_QUEUE) X(F_TIER) X(F_NEEDS) X(F_DROPPED) X(F_LOWERED) \
	X(F_POSITION)
#define KIND_OPENED(X) \
	X(F_QUEUE) X(F_UNTIL_MS)
#define KIND_CLOSED(X) \
	X(F_QUEUE) X(F_UNTIL_MS)
#define KIND_SERVICER_UPDATED(X) \
	X(F_SERVICER) X(F_CAPACITY) X(F_QUEUES) X(F_SKILLS)

/* Every kind, with its event type's name after CSQ_EV_. */
#define FACT_KIND_LIST(K) \
	K(QUEUED) K(RESCORED) K(MATCHED) K(LEFT) K(RELEASED) K(REQUEUED) \
	K(SERVICER_UP) K(SERVICER_DOWN) K(SERVICER_PAUSED) \
	K(SERVICER_RESUMED) K(OFFERED) K(DECLINED) K(TRANSFERRED) K(WRAPUP) \
	K(READY) K(OVERFLOWED) K(PREFER_ENDED) K(RELAXED) K(OPENED) \
	K(CLOSED) K(SERVICER_UPDATED)
/* clang-format on */

#define FACT_KIND_ONE(kind) +1
/* As many kinds as types, each once (a line given twice stops the build),
 * so that none is missing. */
_Static_assert(0 FACT_KIND_LIST(FACT_KIND_ONE) == CSQ_EV_TYPES,
               "every kind of event in FACT_KIND_LIST");

#define FACT_FIELD_ITEM(f)   f,
#define FACT_KIND_LINE(kind) [CSQ_EV_##kind] = {KIND_##kind(FACT_FIELD_ITEM)},

/* Each kind's fields, in csq_event_json's order. */
static const unsigned char fact_kinds[][FACT_KIND_FIELDS] = {
    FACT_KIND_LIST(FACT_KIND_LINE)};
/* A kind without its line here has no fact: the module could not tell
 * it to csqd. */
_Static_assert(sizeof(fact_kinds) / sizeof(fact_kinds[0]) == CSQ_EV_TYPES,
               "every kind of event has its fact");

#define FACT_KINDS (sizeof(fact_kinds) / sizeof(fact_kinds[0]))

static int
fact_kind(const char *kind, size_t klen, enum csq_event_type *type)
{
	const char *name;
	size_t t;

	for (t = 0; t < FACT_KINDS; t++) {
		name = csq_event_name((enum csq_event_type)t);
		if (strlen(name) == klen && memcmp(name, kind, klen) == 0) {
			*type = (enum csq_event_type)t;
			return 0;
		}
	}
	return -1;
}

static int
fact_reason(const struct csq_fact_value *v, enum csq_reason *out)
{
	const char *name;
	int r;

	if (v->type != CSQ_FACT_STR)
		return -1;
	for (r = CSQ_REASON_NONE + 1;
	     (name = csq_reason_name((enum csq_reason)r))[0] != '\0'; r++)
		if (strlen(name) == v->len && memcmp(name, v->s, v->len) == 0) {
			*out = (enum csq_reason)r;
			return 0;
		}
	return -1;
}

/* An id, or with list ids joined by commas, into out (cap bytes). */
static int
fact_ids(const struct csq_fact_value *v, char *out, size_t cap, int list)
{
	size_t start = 0, i;

	if (v->type != CSQ_FACT_STR || v->len >= cap)
		return -1;
	for (i = 0; i <= v->len; i++) {
		if (i < v->len && (!list || v->s[i] != ','))
			continue;
		/* An empty list is no queue; an empty id is no id. */
		if (!(list && v->len == 0) &&
		    !csq_valid_id(v->s + start, i - start))
			return -1;
		start = i + 1;
	}
	memcpy(out, v->s, v->len);
	out[v->len] = '\0';
	return 0;
}

/* A skill list's text (csq_event_json writes it as it is): within its
 * bytes, of the characters of skill lists only. */
static int
fact_skills(const struct csq_fact_value *v, char *out, size_t cap)
{
	size_t i;
	char c;

	if (v->type != CSQ_FACT_STR || v->len >= cap)
		return -1;
	for (i = 0; i < v->len; i++) {
		c = v->s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == ':' || c == ',' || c == '-'))
			return -1;
	}
	memcpy(out, v->s, v->len);
	out[v->len] = '\0';
	return 0;
}

/* A room: "<servicer>/<index>" as it is, or the index of the event's
 * servicer (given before the room in every kind that has both). */
static int
fact_room(const struct csq_fact_value *v, struct csq_event *ev)
{
	char sid[CSQ_ID_MAX + 1];
	uint32_t idx;

	if (v->type == CSQ_FACT_INT) {
		if (v->n < 0 || v->n >= CSQ_CAPACITY_MAX ||
		    ev->servicer[0] == '\0')
			return -1;
		snprintf(ev->room, sizeof(ev->room), "%s/%u", ev->servicer,
		         (unsigned)v->n);
		return 0;
	}
	if (v->type != CSQ_FACT_STR || v->len >= sizeof(ev->room) ||
	    csq_parse_room(v->s, v->len, sid, &idx) != 0)
		return -1;
	memcpy(ev->room, v->s, v->len);
	ev->room[v->len] = '\0';
	return 0;
}

static int
fact_set(struct csq_event *ev, enum fact_field f,
         const struct csq_fact_value *v)
{
	char *at = (char *)ev + fact_fields[f].off;
	uint32_t u32;
	uint64_t u64;

	if (v->type == CSQ_FACT_ABSENT)
		return 0;
	switch (fact_fields[f].type) {
	case FACT_ID:
	case FACT_IDS:
		return fact_ids(v, at, fact_fields[f].size,
		                fact_fields[f].type == FACT_IDS);
	case FACT_ROOM:
		return fact_room(v, ev);
	case FACT_SKILLS:
		return fact_skills(v, at, fact_fields[f].size);
	case FACT_REASON:
		return fact_reason(v, &ev->reason);
	case FACT_U32:
		if (v->type != CSQ_FACT_INT || v->n < 0)
			return -1;
		u32 = v->n > fact_fields[f].max ? fact_fields[f].max
		                                : (uint32_t)v->n;
		memcpy(at, &u32, sizeof(u32));
		return 0;
	case FACT_ETA:
		if (v->type == CSQ_FACT_ABSENT)
			return 0;
		if (v->type != CSQ_FACT_INT || v->n < -1)
			return -1;
		ev->eta_ms = v->n;
		ev->has_eta = 1;
		return 0;
	case FACT_U64:
	case FACT_OFFERED_MS:
		if (v->type != CSQ_FACT_INT || v->n < 0)
			return -1;
		u64 = (uint64_t)v->n;
		memcpy(at, &u64, sizeof(u64));
		if (fact_fields[f].type == FACT_OFFERED_MS)
			ev->has_offered_ms = 1;
		return 0;
	}
	return -1;
}

/* The fields after queues, by size: event_clear clears each of them. What
 * is left is padding (7 bytes on x86-64); a field added there of 8 bytes
 * or more stops the build, and test_event_fact's poisoned decode catches
 * one that event_clear leaves and the JSON shows. */
#define EVENT_TAIL                                                             \
	(sizeof(((struct csq_event *)0)->queues) + sizeof(enum csq_reason) +   \
	 2 * CSQ_NEEDS_TEXT_MAX + sizeof(uint32_t) + sizeof(int64_t) +         \
	 sizeof(int) + CSQ_SKILLS_TEXT_MAX + CSQ_ID_MAX + 1 +                  \
	 sizeof(uint64_t))
_Static_assert(sizeof(struct csq_event) - offsetof(struct csq_event, queues) -
                       EVENT_TAIL <
                   sizeof(uint64_t),
               "a field after csq_event's queues: clear it in event_clear");

/*
 * An event as a memset to zero would leave it (eta_ms -1: none), for
 * 3.9 KB fewer stores: the short fields before queues are zeroed whole,
 * the long texts from it on (queues, needs, dropped, skills, prefer) at
 * their first byte, as every reader takes them as C strings. csqd's
 * Redis engine decodes every event of csq.so's into one.
 */
static void
event_clear(struct csq_event *ev)
{
	memset(ev, 0, offsetof(struct csq_event, queues));
	ev->queues[0] = '\0';
	ev->reason = CSQ_REASON_NONE;
	ev->needs[0] = '\0';
	ev->dropped[0] = '\0';
	ev->lowered = 0;
	ev->eta_ms = -1;
	ev->has_eta = 0;
	ev->skills[0] = '\0';
	ev->prefer[0] = '\0';
	ev->prefer_ms = 0;
}

int
csq_event_from_fact(struct csq_event *ev, const char *kind, size_t klen,
                    const struct csq_fact_value *v, size_t n)
{
	const unsigned char *fields;
	size_t i;

	event_clear(ev);
	if (fact_kind(kind, klen, &ev->type) != 0)
		return -1;
	fields = fact_kinds[ev->type];
	/* Fields past the kind's are a newer script's: left out. */
	for (i = 0; i < n && i < FACT_KIND_FIELDS && fields[i] != F_END; i++)
		if (fact_set(ev, (enum fact_field)fields[i], &v[i]) != 0)
			return -1;
	return 0;
}

/*
 * Field f of ev into *v (absent: zeroed), and n one past it when it is
 * present. f is a constant in each kind's writer below, so that its type
 * and place fold away: a kind's fields are written one after the other,
 * with no loop over the kind's list and no switch on a field's type
 * (always inlined: GCC otherwise calls it, and the switch stays).
 */
static inline __attribute__((always_inline)) void
fact_get(const struct csq_event *ev, enum fact_field f, size_t i,
         struct csq_fact_value *v, size_t *n)
{
	const char *at = (const char *)ev + fact_fields[f].off;
	uint32_t u32;
	uint64_t u64;

	memset(v, 0, sizeof(*v));
	switch (fact_fields[f].type) {
	case FACT_ID:
	case FACT_IDS:
	case FACT_ROOM:
	case FACT_SKILLS:
		if (at[0] == '\0')
			return;
		v->type = CSQ_FACT_STR;
		v->s = at;
		v->len = strlen(at);
		break;
	case FACT_REASON:
		if (ev->reason == CSQ_REASON_NONE)
			return;
		v->type = CSQ_FACT_STR;
		v->s = csq_reason_name(ev->reason);
		v->len = strlen(v->s);
		break;
	case FACT_U32:
		memcpy(&u32, at, sizeof(u32));
		v->type = CSQ_FACT_INT;
		v->n = (int64_t)u32;
		break;
	case FACT_ETA:
		if (!ev->has_eta)
			return;
		v->type = CSQ_FACT_INT;
		v->n = ev->eta_ms;
		break;
	case FACT_OFFERED_MS:
		if (!ev->has_offered_ms)
			return;
		/* fall through */
	case FACT_U64:
		memcpy(&u64, at, sizeof(u64));
		v->type = CSQ_FACT_INT;
		v->n = (int64_t)u64;
		break;
	}
	/* Absent fields at the end are left out (a reader takes a field
	 * past the last one given as absent): a matched or offered without
	 * a move costs csq.so's message no more than before its reason, the
	 * last of its fact, came (issue 36); most cost less. */
	*n = i + 1;
}

typedef size_t fact_writer(const struct csq_event *,
                           struct csq_fact_value v[CSQ_FACT_FIELDS_MAX]);

#define FACT_GET(f)                                                            \
	fact_get(ev, f, i, &v[i], &n);                                         \
	i++;
#define FACT_WRITER(kind)                                                      \
	static size_t fact_##kind(                                             \
	    const struct csq_event *ev,                                        \
	    struct csq_fact_value v[CSQ_FACT_FIELDS_MAX])                      \
	{                                                                      \
		size_t i = 0, n = 0;                                           \
                                                                               \
		KIND_##kind(FACT_GET) return n;                                \
	}
FACT_KIND_LIST(FACT_WRITER)

#define FACT_WRITER_ROW(kind) [CSQ_EV_##kind] = fact_##kind,

static fact_writer *const fact_writers[] = {FACT_KIND_LIST(FACT_WRITER_ROW)};
_Static_assert(sizeof(fact_writers) / sizeof(fact_writers[0]) == CSQ_EV_TYPES,
               "every kind of event has its writer");

size_t
csq_event_to_fact(const struct csq_event *ev,
                  struct csq_fact_value v[CSQ_FACT_FIELDS_MAX])
{
	return fact_writers[ev->type](ev, v);
}
