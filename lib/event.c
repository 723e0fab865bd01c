/* Events: their names, their JSON form and the channels they go to. */
#include "csq.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const event_names[] = {
    [CSQ_EV_QUEUED] = "queued",
    [CSQ_EV_RESCORED] = "rescored",
    [CSQ_EV_MATCHED] = "matched",
    [CSQ_EV_LEFT] = "left",
    [CSQ_EV_RELEASED] = "released",
    [CSQ_EV_REQUEUED] = "requeued",
    [CSQ_EV_SERVICER_UP] = "servicer_up",
    [CSQ_EV_SERVICER_DOWN] = "servicer_down",
    [CSQ_EV_SERVICER_PAUSED] = "servicer_paused",
    [CSQ_EV_SERVICER_RESUMED] = "servicer_resumed",
    [CSQ_EV_OFFERED] = "offered",
    [CSQ_EV_DECLINED] = "declined",
    [CSQ_EV_TRANSFERRED] = "transferred",
    [CSQ_EV_WRAPUP] = "wrapup",
    [CSQ_EV_READY] = "ready",
    [CSQ_EV_OVERFLOWED] = "overflowed",
    [CSQ_EV_PREFER_ENDED] = "prefer_ended",
    [CSQ_EV_RELAXED] = "relaxed",
    [CSQ_EV_OPENED] = "opened",
    [CSQ_EV_CLOSED] = "closed",
    [CSQ_EV_SERVICER_UPDATED] = "servicer_updated",
};

const char *
csq_event_name(enum csq_event_type type)
{
	if ((size_t)type >= sizeof(event_names) / sizeof(event_names[0]))
		return "unknown";
	return event_names[type];
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

/* An snprintf that appends and keeps counting past the end of buf. */
struct json {
	char *buf;
	size_t len;
	size_t off;
};

static void json_add(struct json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
json_add(struct json *j, const char *fmt, ...)
{
	va_list ap;
	size_t room = j->off < j->len ? j->len - j->off : 0;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? j->buf + j->off : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		j->off += (size_t)n;
}

/*
 * The common pieces without printf: every published event is formatted,
 * and with the record of the day (daemon/event_record.c) every event is,
 * so that vfprintf was a sixth of csqd's time under ENQUEUE. The output
 * is snprintf's: truncated at len - 1 and terminated (csq_event_json).
 */
static void
json_raw(struct json *j, const char *s, size_t n)
{
	if (j->off < j->len)
		memcpy(j->buf + j->off, s,
		       n < j->len - j->off ? n : j->len - j->off);
	j->off += n;
}

static void
json_num(struct json *j, uint64_t val)
{
	char digits[20], *p = digits + sizeof(digits);

	do
		*--p = (char)('0' + val % 10);
	while ((val /= 10) != 0);
	json_raw(j, p, (size_t)(digits + sizeof(digits) - p));
}

/* ,"key": */
static void
json_key(struct json *j, const char *key)
{
	json_raw(j, ",\"", 2);
	json_raw(j, key, strlen(key));
	json_raw(j, "\":", 2);
}

/* Ids are [A-Za-z0-9._:@-] only, so strings need no escaping. */
static void
json_str(struct json *j, const char *key, const char *val)
{
	json_key(j, key);
	json_raw(j, "\"", 1);
	json_raw(j, val, strlen(val));
	json_raw(j, "\"", 1);
}

static void
json_u64(struct json *j, const char *key, uint64_t val)
{
	json_key(j, key);
	json_num(j, val);
}

static void
json_queues(struct json *j, const char *list)
{
	const char *p = list, *comma;
	int first = 1;

	json_add(j, ",\"queues\":[");
	while (*p != '\0') {
		comma = strchr(p, ',');
		if (comma == NULL)
			comma = p + strlen(p);
		json_add(j, "%s\"%.*s\"", first ? "" : ",", (int)(comma - p),
		         p);
		first = 0;
		p = *comma == ',' ? comma + 1 : comma;
	}
	json_add(j, "]");
}

/* A user's needs in force, for the record's replay: only when it has
 * some, so that an event of a user without needs is as before. */
static void
json_needs(struct json *j, const struct csq_event *ev)
{
	if (ev->needs[0] != '\0')
		json_str(j, "needs", ev->needs);
}

/* A waiting user's window for its preferred servicer, when it has one. */
static void
json_prefer(struct json *j, const struct csq_event *ev)
{
	if (ev->prefer[0] == '\0')
		return;
	json_str(j, "prefer", ev->prefer);
	json_u64(j, "prefer_ms", ev->prefer_ms);
}

/* The fields every event about a user in a room has, in their order. */
static void
json_user_room(struct json *j, const struct csq_event *ev)
{
	json_str(j, "user", ev->user);
	json_str(j, "queue", ev->queue);
	json_u64(j, "tier", ev->tier);
	json_str(j, "servicer", ev->servicer);
	json_str(j, "room", ev->room);
}

int
csq_event_json(const struct csq_event *ev, char *buf, size_t len)
{
	struct json j = {buf, len, 0};

	if (len > 0)
		buf[0] = '\0';
	json_raw(&j, "{\"event\":\"", 10);
	json_raw(&j, csq_event_name(ev->type),
	         strlen(csq_event_name(ev->type)));
	json_raw(&j, "\",\"id\":", 7);
	json_num(&j, ev->id);
	json_raw(&j, ",\"ts\":", 6);
	json_num(&j, ev->ts_ms);
	switch (ev->type) {
	case CSQ_EV_QUEUED:
	case CSQ_EV_RESCORED:
		json_str(&j, "user", ev->user);
		json_str(&j, "queue", ev->queue);
		json_u64(&j, "tier", ev->tier);
		json_u64(&j, "position", ev->position);
		if (ev->from_queue[0] != '\0')
			json_str(&j, "from_queue", ev->from_queue);
		/* A new arrival's estimate (issue 38), -1: none yet. */
		if (ev->type == CSQ_EV_QUEUED && ev->has_eta) {
			json_key(&j, "eta_ms");
			if (ev->eta_ms < 0)
				json_raw(&j, "-1", 2);
			else
				json_num(&j, (uint64_t)ev->eta_ms);
		}
		/* A v1 rescore is ENQUEUE's: a fact without a reason too. */
		if (ev->type == CSQ_EV_RESCORED)
			json_str(&j, "reason",
			         ev->reason != CSQ_REASON_NONE
			             ? reason_name(ev->reason)
			             : reason_name(CSQ_REASON_ENQUEUE));
		json_needs(&j, ev);
		if (ev->type == CSQ_EV_QUEUED)
			json_prefer(&j, ev);
		break;
	case CSQ_EV_OVERFLOWED:
		json_str(&j, "user", ev->user);
		json_str(&j, "from_queue", ev->from_queue);
		json_str(&j, "queue", ev->queue);
		json_u64(&j, "tier", ev->tier);
		json_u64(&j, "position", ev->position);
		/* Moved by a queue's nobody policy or at a closing time
		 * (section 3c): reason nobody or closed. */
		if (ev->reason != CSQ_REASON_NONE)
			json_str(&j, "reason", reason_name(ev->reason));
		break;
	case CSQ_EV_OPENED: /* section 3c: the next change, 0 none */
	case CSQ_EV_CLOSED:
		json_str(&j, "queue", ev->queue);
		json_u64(&j, "until_ms", ev->until_ms);
		break;
	case CSQ_EV_PREFER_ENDED:
		json_str(&j, "user", ev->user);
		json_str(&j, "queue", ev->queue);
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "reason", reason_name(ev->reason));
		break;
	case CSQ_EV_RELAXED: /* skill lists are [A-Za-z0-9._:,-] only */
		json_str(&j, "user", ev->user);
		json_str(&j, "queue", ev->queue);
		json_u64(&j, "tier", ev->tier);
		json_str(&j, "needs", ev->needs);
		json_str(&j, "dropped", ev->dropped);
		json_u64(&j, "lowered", ev->lowered);
		json_u64(&j, "position", ev->position);
		break;
	case CSQ_EV_MATCHED:
		json_user_room(&j, ev);
		json_u64(&j, "waited_ms", ev->waited_ms);
		if (ev->from_queue[0] != '\0')
			json_str(&j, "from_queue", ev->from_queue);
		if (ev->has_offered_ms)
			json_u64(&j, "offered_ms", ev->offered_ms);
		json_needs(&j, ev);
		break;
	case CSQ_EV_OFFERED:
		json_user_room(&j, ev);
		json_u64(&j, "expires_ms", ev->expires_ms);
		if (ev->from_queue[0] != '\0')
			json_str(&j, "from_queue", ev->from_queue);
		json_needs(&j, ev);
		break;
	case CSQ_EV_DECLINED:
		json_user_room(&j, ev);
		json_str(&j, "by", reason_name(ev->reason));
		json_u64(&j, "position", ev->position);
		json_u64(&j, "resting_until_ms", ev->until_ms);
		break;
	case CSQ_EV_LEFT:
		json_str(&j, "user", ev->user);
		json_str(&j, "queue", ev->queue);
		json_str(&j, "reason", reason_name(ev->reason));
		/* An offered user: its offer goes with it. */
		if (ev->servicer[0] != '\0') {
			json_str(&j, "servicer", ev->servicer);
			json_str(&j, "room", ev->room);
		}
		break;
	case CSQ_EV_RELEASED:
		json_str(&j, "user", ev->user);
		json_str(&j, "queue", ev->queue);
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "room", ev->room);
		json_str(&j, "by", reason_name(ev->reason));
		break;
	case CSQ_EV_REQUEUED:
		json_str(&j, "user", ev->user);
		json_str(&j, "queue", ev->queue);
		json_u64(&j, "tier", ev->tier);
		json_u64(&j, "position", ev->position);
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "room", ev->room);
		json_str(&j, "reason", reason_name(ev->reason));
		break;
	case CSQ_EV_TRANSFERRED:
		json_str(&j, "user", ev->user);
		json_str(&j, "from_queue", ev->from_queue);
		json_str(&j, "queue", ev->queue);
		json_u64(&j, "tier", ev->tier);
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "room", ev->room);
		json_u64(&j, "position", ev->position);
		json_needs(&j, ev);
		json_prefer(&j, ev);
		break;
	case CSQ_EV_WRAPUP:
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "room", ev->room);
		json_u64(&j, "until_ms", ev->until_ms);
		break;
	case CSQ_EV_READY:
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "room", ev->room);
		break;
	case CSQ_EV_SERVICER_UP:
	case CSQ_EV_SERVICER_UPDATED:
		json_str(&j, "servicer", ev->servicer);
		json_u64(&j, "capacity", ev->capacity);
		json_queues(&j, ev->queues);
		/* A login without skills is as before; an update says what
		 * they are now, none included. */
		if (ev->skills[0] != '\0' ||
		    ev->type == CSQ_EV_SERVICER_UPDATED)
			json_str(&j, "skills", ev->skills);
		break;
	case CSQ_EV_SERVICER_DOWN:
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "reason", reason_name(ev->reason));
		break;
	case CSQ_EV_SERVICER_PAUSED:
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "reason", reason_name(ev->reason));
		break;
	case CSQ_EV_SERVICER_RESUMED:
		json_str(&j, "servicer", ev->servicer);
		break;
	}
	json_raw(&j, "}", 1);
	if (len > 0)
		buf[j.off < len ? j.off : len - 1] = '\0';
	return (int)j.off;
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
