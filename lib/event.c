/* Events: their names, their JSON form and the channels they go to. */
#include "csq.h"

#include <string.h>

/* Each name with its length, known here, so that writing one takes no
 * strlen (csq.so writes the name of each event it publishes). */
struct event_name {
	const char *s;
	size_t len;
};
#define EVENT_NAME(type, name) [type] = {name, sizeof(name) - 1}
#define EVENT_UNKNOWN          "unknown"

static const struct event_name event_names[] = {
    EVENT_NAME(CSQ_EV_QUEUED, "queued"),
    EVENT_NAME(CSQ_EV_RESCORED, "rescored"),
    EVENT_NAME(CSQ_EV_MATCHED, "matched"),
    EVENT_NAME(CSQ_EV_LEFT, "left"),
    EVENT_NAME(CSQ_EV_RELEASED, "released"),
    EVENT_NAME(CSQ_EV_REQUEUED, "requeued"),
    EVENT_NAME(CSQ_EV_SERVICER_UP, "servicer_up"),
    EVENT_NAME(CSQ_EV_SERVICER_DOWN, "servicer_down"),
    EVENT_NAME(CSQ_EV_SERVICER_PAUSED, "servicer_paused"),
    EVENT_NAME(CSQ_EV_SERVICER_RESUMED, "servicer_resumed"),
    EVENT_NAME(CSQ_EV_OFFERED, "offered"),
    EVENT_NAME(CSQ_EV_DECLINED, "declined"),
    EVENT_NAME(CSQ_EV_TRANSFERRED, "transferred"),
    EVENT_NAME(CSQ_EV_WRAPUP, "wrapup"),
    EVENT_NAME(CSQ_EV_READY, "ready"),
    EVENT_NAME(CSQ_EV_OVERFLOWED, "overflowed"),
    EVENT_NAME(CSQ_EV_PREFER_ENDED, "prefer_ended"),
    EVENT_NAME(CSQ_EV_RELAXED, "relaxed"),
    EVENT_NAME(CSQ_EV_OPENED, "opened"),
    EVENT_NAME(CSQ_EV_CLOSED, "closed"),
    EVENT_NAME(CSQ_EV_SERVICER_UPDATED, "servicer_updated"),
};

const char *
csq_event_name(enum csq_event_type type)
{
	if ((size_t)type >= sizeof(event_names) / sizeof(event_names[0]))
		return EVENT_UNKNOWN;
	return event_names[type].s;
}

size_t
csq_event_name_len(enum csq_event_type type)
{
	if ((size_t)type >= sizeof(event_names) / sizeof(event_names[0]))
		return sizeof(EVENT_UNKNOWN) - 1;
	return event_names[type].len;
}

static const char *
reason_name(enum csq_reason r)
{
	switch (r) {
	case CSQ_REASON_LEAVE:
		return "leave";
	case CSQ_REASON_TIMEOUT:
		return "timeout";
	case CSQ_REASON_LOGOUT:
		return "logout";
	case CSQ_REASON_LOST:
		return "lost";
	case CSQ_REASON_BY_SERVICER:
		return "servicer";
	case CSQ_REASON_BY_USER:
		return "user";
	case CSQ_REASON_BY_TRANSFER:
		return "transfer";
	case CSQ_REASON_PAUSE:
		return "pause";
	case CSQ_REASON_MISSED_OFFERS:
		return "missed_offers";
	case CSQ_REASON_ENQUEUE:
		return "enqueue";
	case CSQ_REASON_AGING:
		return "aging";
	case CSQ_REASON_QUEUES:
		return "queues";
	case CSQ_REASON_NOBODY:
		return "nobody";
	case CSQ_REASON_CLOSED:
		return "closed";
	case CSQ_REASON_OVERFLOW:
		return "overflow";
	case CSQ_REASON_NONE:
		break;
	}
	return "";
}

const char *
csq_reason_name(enum csq_reason r)
{
	return reason_name(r);
}

/*
 * The JSON line of an event, written without a check of room per byte:
 * every event is formatted once the record of the day is on, and the
 * line's formatting was the record's largest cost (about 1,300
 * instructions an event with a writer that checked the room left for
 * each piece, docs/benchmarks.md). json_write writes at most
 * JSON_BOUND - 1 bytes, whatever the event holds: each string is copied
 * up to its NUL or its field's size, whichever comes first, each field at
 * most once, and the rest (keys, numbers, quotes) is far less than 1024
 * bytes, but for queues, whose commas become three bytes each
 * (CSQ_EVENT_JSON_MAX). csq_event_json writes straight into a buffer
 * that has that room (the record's has), into one of its own and copies
 * otherwise.
 */
#define JSON_BOUND CSQ_EVENT_JSON_MAX

/* A literal: its size is known, so the copy is a few moves. */
#define JSON_LIT(p, lit)                                                       \
	(memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

/*
 * A string field, up to its NUL or the end of its array (cap bytes, all of
 * them readable: a field, never a literal). Ids are [A-Za-z0-9._:@-] and
 * skill lists [A-Za-z0-9._:,-]: no escaping. Eight bytes a step: a word is
 * loaded and stored whole, and the word that holds the NUL gives the
 * string's end from its zero bytes (the lowest one found by
 * (w - 0x01..01) & ~w & 0x80..80 is the first); a byte loop cost 8
 * instructions a byte, a third of the line (docs/benchmarks.md). Bytes
 * stored past the string's end stay within its field's room, which
 * JSON_BOUND counts whole, and what follows writes over them.
 */
static char *
json_copy(char *p, const char *s, size_t cap)
{
	size_t i = 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) &&                            \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ULL;
	const uint64_t highs = 0x8080808080808080ULL;
	uint64_t w, z;

	for (; i + 8 <= cap; i += 8) {
		memcpy(&w, s + i, 8);
		memcpy(p + i, &w, 8);
		if ((z = (w - ones) & ~w & highs) != 0)
			return p + i + (size_t)(__builtin_ctzll(z) >> 3);
	}
#endif
	for (; i < cap && s[i] != '\0'; i++)
		p[i] = s[i];
	return p + i;
}

/* A name from a table (an event's, a reason's): a literal, so no reading
 * past its NUL. */
static char *
json_name(char *p, const char *name)
{
	size_t n = strlen(name);

	memcpy(p, name, n);
	return p + n;
}

#define JSON_FIELD(p, f) json_copy((p), (f), sizeof(f))
/* ,"key":"value" */
#define JSON_STR(p, key, f)                                                    \
	((p) = JSON_LIT((p), ",\"" key "\":\""), (p) = JSON_FIELD((p), (f)),   \
	 (p) = JSON_LIT((p), "\""))
/* ,"key":number */
#define JSON_U64(p, key, v)                                                    \
	((p) = JSON_LIT((p), ",\"" key "\":"), (p) = json_num((p), (v)))

/* Two digits a division, written from the end: ids and times are 5 to 13
 * digits, the larger part of a line's formatting. */
static const char json_pairs[] = "00010203040506070809"
                                 "10111213141516171819"
                                 "20212223242526272829"
                                 "30313233343536373839"
                                 "40414243444546474849"
                                 "50515253545556575859"
                                 "60616263646566676869"
                                 "70717273747576777879"
                                 "80818283848586878889"
                                 "90919293949596979899";

/* The digits of val: log10 from log2 (1233 / 4096 is about log10(2)),
 * corrected by one comparison, where a loop of divisions by 100 cost a
 * sixth of the line. */
static int
json_digits(uint64_t val)
{
#if defined(__GNUC__)
	static const uint64_t pow10[20] = {1ULL,
	                                   10ULL,
	                                   100ULL,
	                                   1000ULL,
	                                   10000ULL,
	                                   100000ULL,
	                                   1000000ULL,
	                                   10000000ULL,
	                                   100000000ULL,
	                                   1000000000ULL,
	                                   10000000000ULL,
	                                   100000000000ULL,
	                                   1000000000000ULL,
	                                   10000000000000ULL,
	                                   100000000000000ULL,
	                                   1000000000000000ULL,
	                                   10000000000000000ULL,
	                                   100000000000000000ULL,
	                                   1000000000000000000ULL,
	                                   10000000000000000000ULL};
	uint64_t v = val | 1;
	int t = ((64 - __builtin_clzll(v)) * 1233) >> 12;

	return t + (v >= pow10[t]);
#else
	int n = 1;

	while (val >= 100) {
		val /= 100;
		n += 2;
	}
	return n + (val >= 10);
#endif
}

static char *
json_num(char *p, uint64_t val)
{
	int n = json_digits(val);
	char *end = p + n;
	unsigned d;

	while (val >= 100) {
		d = (unsigned)(val % 100) * 2;
		val /= 100;
		*--end = json_pairs[d + 1];
		*--end = json_pairs[d];
	}
	if (val >= 10) {
		*--end = json_pairs[val * 2 + 1];
		*--end = json_pairs[val * 2];
	} else
		*--end = (char)('0' + val);
	return p + n;
}

static char *
json_reason(char *p, const char *key_lit, size_t key_len, enum csq_reason r)
{
	const char *name = reason_name(r);

	memcpy(p, key_lit, key_len);
	p += key_len;
	p = json_name(p, name);
	return JSON_LIT(p, "\"");
}

#define JSON_REASON(p, key, r)                                                 \
	((p) = json_reason((p), ",\"" key "\":\"",                             \
	                   sizeof(",\"" key "\":\"") - 1, (r)))

/* "a,b" as ["a","b"]. */
static char *
json_queues(char *p, const struct csq_event *ev)
{
	size_t i;

	p = JSON_LIT(p, ",\"queues\":[");
	if (ev->queues[0] != '\0') {
		*p++ = '"';
		for (i = 0; i < sizeof(ev->queues) && ev->queues[i] != '\0';
		     i++) {
			if (ev->queues[i] == ',') {
				p = JSON_LIT(p, "\",\"");
				continue;
			}
			*p++ = ev->queues[i];
		}
		*p++ = '"';
	}
	*p++ = ']';
	return p;
}

/* A user's needs in force, for the record's replay: only when it has
 * some, so that an event of a user without needs is as before. */
static char *
json_needs(char *p, const struct csq_event *ev)
{
	if (ev->needs[0] != '\0')
		JSON_STR(p, "needs", ev->needs);
	return p;
}

/* A waiting user's window for its preferred servicer, when it has one. */
static char *
json_prefer(char *p, const struct csq_event *ev)
{
	if (ev->prefer[0] == '\0')
		return p;
	JSON_STR(p, "prefer", ev->prefer);
	JSON_U64(p, "prefer_ms", ev->prefer_ms);
	return p;
}

/* The fields every event about a user in a room has, in their order. */
static char *
json_user_room(char *p, const struct csq_event *ev)
{
	JSON_STR(p, "user", ev->user);
	JSON_STR(p, "queue", ev->queue);
	JSON_U64(p, "tier", ev->tier);
	JSON_STR(p, "servicer", ev->servicer);
	JSON_STR(p, "room", ev->room);
	return p;
}

/* The line into out (JSON_BOUND bytes at least), unterminated; its end. */
static char *
json_write(const struct csq_event *ev, char *p)
{
	p = JSON_LIT(p, "{\"event\":\"");
	p = json_name(p, csq_event_name(ev->type));
	p = JSON_LIT(p, "\",\"id\":");
	p = json_num(p, ev->id);
	p = JSON_LIT(p, ",\"ts\":");
	p = json_num(p, ev->ts_ms);
	switch (ev->type) {
	case CSQ_EV_QUEUED:
	case CSQ_EV_RESCORED:
		JSON_STR(p, "user", ev->user);
		JSON_STR(p, "queue", ev->queue);
		JSON_U64(p, "tier", ev->tier);
		JSON_U64(p, "position", ev->position);
		if (ev->from_queue[0] != '\0')
			JSON_STR(p, "from_queue", ev->from_queue);
		/* A new arrival's estimate (issue 38), -1: none yet. */
		if (ev->type == CSQ_EV_QUEUED && ev->has_eta) {
			p = JSON_LIT(p, ",\"eta_ms\":");
			if (ev->eta_ms < 0)
				p = JSON_LIT(p, "-1");
			else
				p = json_num(p, (uint64_t)ev->eta_ms);
		}
		/* A v1 rescore is ENQUEUE's: a fact without a reason too. */
		if (ev->type == CSQ_EV_RESCORED)
			JSON_REASON(p, "reason",
			            ev->reason != CSQ_REASON_NONE
			                ? ev->reason
			                : CSQ_REASON_ENQUEUE);
		p = json_needs(p, ev);
		if (ev->type == CSQ_EV_QUEUED)
			p = json_prefer(p, ev);
		break;
	case CSQ_EV_OVERFLOWED:
		JSON_STR(p, "user", ev->user);
		JSON_STR(p, "from_queue", ev->from_queue);
		JSON_STR(p, "queue", ev->queue);
		JSON_U64(p, "tier", ev->tier);
		JSON_U64(p, "position", ev->position);
		/* Moved by a queue's nobody policy or at a closing time
		 * (section 3c): reason nobody or closed. */
		if (ev->reason != CSQ_REASON_NONE)
			JSON_REASON(p, "reason", ev->reason);
		break;
	case CSQ_EV_OPENED: /* section 3c: the next change, 0 none */
	case CSQ_EV_CLOSED:
		JSON_STR(p, "queue", ev->queue);
		JSON_U64(p, "until_ms", ev->until_ms);
		break;
	case CSQ_EV_PREFER_ENDED:
		JSON_STR(p, "user", ev->user);
		JSON_STR(p, "queue", ev->queue);
		JSON_STR(p, "servicer", ev->servicer);
		JSON_REASON(p, "reason", ev->reason);
		break;
	case CSQ_EV_RELAXED: /* skill lists are [A-Za-z0-9._:,-] only */
		JSON_STR(p, "user", ev->user);
		JSON_STR(p, "queue", ev->queue);
		JSON_U64(p, "tier", ev->tier);
		JSON_STR(p, "needs", ev->needs);
		JSON_STR(p, "dropped", ev->dropped);
		JSON_U64(p, "lowered", ev->lowered);
		JSON_U64(p, "position", ev->position);
		break;
	case CSQ_EV_MATCHED:
		p = json_user_room(p, ev);
		JSON_U64(p, "waited_ms", ev->waited_ms);
		if (ev->from_queue[0] != '\0')
			JSON_STR(p, "from_queue", ev->from_queue);
		if (ev->has_offered_ms)
			JSON_U64(p, "offered_ms", ev->offered_ms);
		p = json_needs(p, ev);
		/* Why a waiting user was placed at once (a move, a
		 * re-ENQUEUE): last, as in its fact. */
		if (ev->reason != CSQ_REASON_NONE)
			JSON_REASON(p, "reason", ev->reason);
		break;
	case CSQ_EV_OFFERED:
		p = json_user_room(p, ev);
		JSON_U64(p, "expires_ms", ev->expires_ms);
		if (ev->from_queue[0] != '\0')
			JSON_STR(p, "from_queue", ev->from_queue);
		p = json_needs(p, ev);
		if (ev->reason != CSQ_REASON_NONE)
			JSON_REASON(p, "reason", ev->reason);
		break;
	case CSQ_EV_DECLINED:
		p = json_user_room(p, ev);
		JSON_REASON(p, "by", ev->reason);
		JSON_U64(p, "position", ev->position);
		JSON_U64(p, "resting_until_ms", ev->until_ms);
		break;
	case CSQ_EV_LEFT:
		JSON_STR(p, "user", ev->user);
		JSON_STR(p, "queue", ev->queue);
		JSON_REASON(p, "reason", ev->reason);
		/* An offered user: its offer goes with it. */
		if (ev->servicer[0] != '\0') {
			JSON_STR(p, "servicer", ev->servicer);
			JSON_STR(p, "room", ev->room);
		}
		break;
	case CSQ_EV_RELEASED:
		JSON_STR(p, "user", ev->user);
		JSON_STR(p, "queue", ev->queue);
		JSON_STR(p, "servicer", ev->servicer);
		JSON_STR(p, "room", ev->room);
		JSON_REASON(p, "by", ev->reason);
		break;
	case CSQ_EV_REQUEUED:
		JSON_STR(p, "user", ev->user);
		JSON_STR(p, "queue", ev->queue);
		JSON_U64(p, "tier", ev->tier);
		JSON_U64(p, "position", ev->position);
		JSON_STR(p, "servicer", ev->servicer);
		JSON_STR(p, "room", ev->room);
		JSON_REASON(p, "reason", ev->reason);
		break;
	case CSQ_EV_TRANSFERRED:
		JSON_STR(p, "user", ev->user);
		JSON_STR(p, "from_queue", ev->from_queue);
		JSON_STR(p, "queue", ev->queue);
		JSON_U64(p, "tier", ev->tier);
		JSON_STR(p, "servicer", ev->servicer);
		JSON_STR(p, "room", ev->room);
		JSON_U64(p, "position", ev->position);
		p = json_needs(p, ev);
		p = json_prefer(p, ev);
		break;
	case CSQ_EV_WRAPUP:
		JSON_STR(p, "servicer", ev->servicer);
		JSON_STR(p, "room", ev->room);
		JSON_U64(p, "until_ms", ev->until_ms);
		break;
	case CSQ_EV_READY:
		JSON_STR(p, "servicer", ev->servicer);
		JSON_STR(p, "room", ev->room);
		break;
	case CSQ_EV_SERVICER_UP:
	case CSQ_EV_SERVICER_UPDATED:
		JSON_STR(p, "servicer", ev->servicer);
		JSON_U64(p, "capacity", ev->capacity);
		p = json_queues(p, ev);
		/* A login without skills is as before; an update says what
		 * they are now, none included. */
		if (ev->skills[0] != '\0' ||
		    ev->type == CSQ_EV_SERVICER_UPDATED)
			JSON_STR(p, "skills", ev->skills);
		break;
	case CSQ_EV_SERVICER_DOWN:
	case CSQ_EV_SERVICER_PAUSED:
		JSON_STR(p, "servicer", ev->servicer);
		JSON_REASON(p, "reason", ev->reason);
		break;
	case CSQ_EV_SERVICER_RESUMED:
		JSON_STR(p, "servicer", ev->servicer);
		break;
	}
	*p++ = '}';
	return p;
}

int
csq_event_json(const struct csq_event *ev, char *buf, size_t len)
{
	char own[JSON_BOUND];
	size_t n;

	if (len >= JSON_BOUND) {
		n = (size_t)(json_write(ev, buf) - buf);
		buf[n] = '\0';
		return (int)n;
	}
	/* snprintf's contract: cut at len - 1, terminated, the whole
	 * length returned. */
	n = (size_t)(json_write(ev, own) - own);
	if (len > 0) {
		memcpy(buf, own, n < len ? n : len - 1);
		buf[n < len ? n : len - 1] = '\0';
	}
	return (int)n;
}

/* out = prefix id, NUL-terminated; id is at most CSQ_ID_MAX bytes. Every
 * event names its channels, most of them for nobody: no printf here. */
static void
event_channel(char out[CSQ_CHANNEL_MAX], const char *prefix, size_t plen,
              const char *id)
{
	size_t len = strnlen(id, CSQ_ID_MAX);

	memcpy(out, prefix, plen);
	memcpy(out + plen, id, len);
	out[plen + len] = '\0';
}

int
csq_event_channels(const struct csq_event *ev,
                   char out[CSQ_EVENT_CHANNELS][CSQ_CHANNEL_MAX])
{
	int n = 0;

	if (ev->user[0] != '\0')
		event_channel(out[n++], "user:", 5, ev->user);
	if (ev->servicer[0] != '\0')
		event_channel(out[n++], "servicer:", 9, ev->servicer);
	if (ev->queue[0] != '\0')
		event_channel(out[n++], "queue:", 6, ev->queue);
	if (ev->from_queue[0] != '\0' && strcmp(ev->from_queue, ev->queue))
		event_channel(out[n++], "queue:", 6, ev->from_queue);
	memcpy(out[n++], "events", sizeof("events"));
	return n;
}
