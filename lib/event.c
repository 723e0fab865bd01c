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
	case CSQ_REASON_NONE:
		break;
	}
	return "";
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

/* Ids are [A-Za-z0-9._:@-] only, so strings need no escaping. */
static void
json_str(struct json *j, const char *key, const char *val)
{
	json_add(j, ",\"%s\":\"%s\"", key, val);
}

static void
json_u64(struct json *j, const char *key, uint64_t val)
{
	json_add(j, ",\"%s\":%" PRIu64, key, val);
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

int
csq_event_json(const struct csq_event *ev, char *buf, size_t len)
{
	struct json j = {buf, len, 0};

	if (len > 0)
		buf[0] = '\0';
	json_add(&j, "{\"event\":\"%s\",\"ts\":%" PRIu64,
	         csq_event_name(ev->type), ev->ts_ms);
	switch (ev->type) {
	case CSQ_EV_QUEUED:
	case CSQ_EV_RESCORED:
		json_str(&j, "user", ev->user);
		json_str(&j, "queue", ev->queue);
		json_u64(&j, "tier", ev->tier);
		json_u64(&j, "position", ev->position);
		if (ev->from_queue[0] != '\0')
			json_str(&j, "from_queue", ev->from_queue);
		break;
	case CSQ_EV_MATCHED:
		json_str(&j, "user", ev->user);
		json_str(&j, "queue", ev->queue);
		json_u64(&j, "tier", ev->tier);
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "room", ev->room);
		json_u64(&j, "waited_ms", ev->waited_ms);
		if (ev->from_queue[0] != '\0')
			json_str(&j, "from_queue", ev->from_queue);
		break;
	case CSQ_EV_LEFT:
		json_str(&j, "user", ev->user);
		json_str(&j, "queue", ev->queue);
		json_str(&j, "reason", reason_name(ev->reason));
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
	case CSQ_EV_SERVICER_UP:
		json_str(&j, "servicer", ev->servicer);
		json_u64(&j, "capacity", ev->capacity);
		json_queues(&j, ev->queues);
		break;
	case CSQ_EV_SERVICER_DOWN:
		json_str(&j, "servicer", ev->servicer);
		json_str(&j, "reason", reason_name(ev->reason));
		break;
	case CSQ_EV_SERVICER_PAUSED:
	case CSQ_EV_SERVICER_RESUMED:
		json_str(&j, "servicer", ev->servicer);
		break;
	}
	json_add(&j, "}");
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

/* Parsing the same JSON back: the events that Redis scripts publish. */

struct json_in {
	const char *p, *end;
};

static int
json_in_peek(struct json_in *in, char c)
{
	return in->p < in->end && *in->p == c;
}

static int
json_in_expect(struct json_in *in, char c)
{
	if (!json_in_peek(in, c))
		return -1;
	in->p++;
	return 0;
}

/* A string without escapes (ids and names need none); into out. */
static int
json_in_str(struct json_in *in, char *out, size_t cap)
{
	const char *s;
	size_t n;

	if (json_in_expect(in, '"') != 0)
		return -1;
	s = in->p;
	while (in->p < in->end && *in->p != '"') {
		if (*in->p == '\\' || (unsigned char)*in->p < 0x20)
			return -1;
		in->p++;
	}
	if (in->p == in->end || (n = (size_t)(in->p - s)) >= cap)
		return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	in->p++;
	return 0;
}

static int
json_in_u64(struct json_in *in, uint64_t *v)
{
	uint64_t x = 0;
	const char *s = in->p;

	uint64_t d;

	while (in->p < in->end && *in->p >= '0' && *in->p <= '9') {
		d = (uint64_t)(*in->p++ - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	if (in->p == s)
		return -1;
	*v = x;
	return 0;
}

/* ["a","b"] into "a,b". */
static int
json_in_queues(struct json_in *in, char *out, size_t cap)
{
	char name[CSQ_ID_MAX + 1];
	size_t off = 0, n;

	out[0] = '\0';
	if (json_in_expect(in, '[') != 0)
		return -1;
	while (!json_in_peek(in, ']')) {
		if (off > 0 && json_in_expect(in, ',') != 0)
			return -1;
		if (json_in_str(in, name, sizeof(name)) != 0)
			return -1;
		n = strlen(name);
		if (off + n + 2 > cap)
			return -1;
		if (off > 0)
			out[off++] = ',';
		memcpy(out + off, name, n + 1);
		off += n;
	}
	in->p++;
	return 0;
}

static int
event_type_of(const char *name, enum csq_event_type *type)
{
	size_t i;

	for (i = 0; i < sizeof(event_names) / sizeof(event_names[0]); i++)
		if (strcmp(event_names[i], name) == 0) {
			*type = (enum csq_event_type)i;
			return 0;
		}
	return -1;
}

static int
reason_of(const char *name, enum csq_reason *r)
{
	static const enum csq_reason all[] = {
	    CSQ_REASON_LEAVE, CSQ_REASON_TIMEOUT,     CSQ_REASON_LOGOUT,
	    CSQ_REASON_LOST,  CSQ_REASON_BY_SERVICER, CSQ_REASON_BY_USER,
	};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(reason_name(all[i]), name) == 0) {
			*r = all[i];
			return 0;
		}
	return -1;
}

static int
json_in_copy(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

/* One "key":value pair into ev; unknown keys are skipped if simple. */
static int
json_in_field(struct json_in *in, struct csq_event *ev, uint64_t *id,
              int *have_type)
{
	char key[32], str[CSQ_ID_MAX + 16];
	uint64_t v;

	if (json_in_str(in, key, sizeof(key)) != 0 ||
	    json_in_expect(in, ':') != 0)
		return -1;
	if (strcmp(key, "queues") == 0)
		return json_in_queues(in, ev->queues, sizeof(ev->queues));
	if (json_in_peek(in, '"')) {
		if (json_in_str(in, str, sizeof(str)) != 0)
			return -1;
		if (strcmp(key, "event") == 0) {
			*have_type = 1;
			return event_type_of(str, &ev->type);
		}
		if (strcmp(key, "reason") == 0 || strcmp(key, "by") == 0)
			return reason_of(str, &ev->reason);
		if (strcmp(key, "user") == 0)
			return json_in_copy(ev->user, sizeof(ev->user), str);
		if (strcmp(key, "queue") == 0)
			return json_in_copy(ev->queue, sizeof(ev->queue), str);
		if (strcmp(key, "from_queue") == 0)
			return json_in_copy(ev->from_queue,
			                    sizeof(ev->from_queue), str);
		if (strcmp(key, "servicer") == 0)
			return json_in_copy(ev->servicer, sizeof(ev->servicer),
			                    str);
		if (strcmp(key, "room") == 0)
			return json_in_copy(ev->room, sizeof(ev->room), str);
		return 0;
	}
	if (json_in_u64(in, &v) != 0)
		return -1;
	if (strcmp(key, "ts") == 0)
		ev->ts_ms = v;
	else if (strcmp(key, "id") == 0)
		*id = v;
	else if (strcmp(key, "tier") == 0)
		ev->tier = v > CSQ_TIER_LIMIT ? CSQ_TIER_LIMIT : (uint32_t)v;
	else if (strcmp(key, "position") == 0)
		ev->position = v;
	else if (strcmp(key, "waited_ms") == 0)
		ev->waited_ms = v;
	else if (strcmp(key, "capacity") == 0)
		ev->capacity =
		    v > CSQ_CAPACITY_MAX ? CSQ_CAPACITY_MAX : (uint32_t)v;
	return 0;
}

int
csq_event_parse(const char *json, size_t len, struct csq_event *ev,
                uint64_t *id)
{
	struct json_in in = {json, json + len};
	int have_type = 0, first = 1;

	*id = 0;
	memset(ev, 0, sizeof(*ev));
	if (json_in_expect(&in, '{') != 0)
		return -1;
	while (!json_in_peek(&in, '}')) {
		if (!first && json_in_expect(&in, ',') != 0)
			return -1;
		first = 0;
		if (json_in_field(&in, ev, id, &have_type) != 0)
			return -1;
	}
	if (json_in_expect(&in, '}') != 0 || in.p != in.end || !have_type)
		return -1;
	return 0;
}
