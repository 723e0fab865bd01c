/*
 * An event's JSON line back into a struct csq_event (event_parse.h): a
 * small recursive-descent reader of JSON, strict where csq's own fields
 * are concerned (their types, ranges and id syntax) and lenient with
 * everything else, which it reads and skips.
 */
#include "event_parse.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PARSE_DEPTH_MAX 32  /* of arrays and objects in unknown fields */
#define PARSE_KEY_MAX   256 /* longer keys are refused */
#define PARSE_TYPE_MAX  64

struct parse {
	const char *p, *start, *end;
	char *err;
	int failed;
};

static void parse_fail(struct parse *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
parse_fail(struct parse *ps, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->failed)
		return;
	ps->failed = 1;
	n = snprintf(ps->err, CSQ_PARSE_ERR_MAX,
	             "at byte %zu: ", (size_t)(ps->p - ps->start));
	va_start(ap, fmt);
	vsnprintf(ps->err + n, CSQ_PARSE_ERR_MAX - (size_t)n, fmt, ap);
	va_end(ap);
}

static void
parse_ws(struct parse *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
	                           *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int
parse_peek(struct parse *ps)
{
	parse_ws(ps);
	return ps->p < ps->end ? (unsigned char)*ps->p : -1;
}

static int
parse_expect(struct parse *ps, char c)
{
	if (parse_peek(ps) != (unsigned char)c) {
		parse_fail(ps, "'%c' expected", c);
		return -1;
	}
	ps->p++;
	return 0;
}

static int
parse_hex4(struct parse *ps, unsigned *out)
{
	unsigned v = 0;
	int i;

	for (i = 0; i < 4; i++, ps->p++) {
		char c = ps->p < ps->end ? *ps->p : '\0';

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else {
			parse_fail(ps, "bad \\u escape");
			return -1;
		}
	}
	*out = v;
	return 0;
}

/* A string into out (cap bytes with its NUL; out NULL: skipped). Its
 * length, or -1 when malformed or longer than cap - 1. */
static long
parse_string(struct parse *ps, char *out, size_t cap)
{
	size_t n = 0;
	unsigned cp;
	char c;

	if (parse_expect(ps, '"') != 0)
		return -1;
	for (;;) {
		if (ps->p >= ps->end) {
			parse_fail(ps, "unterminated string");
			return -1;
		}
		c = *ps->p++;
		if (c == '"')
			break;
		if ((unsigned char)c < 0x20) {
			parse_fail(ps, "control character in a string");
			return -1;
		}
		if (c == '\\') {
			c = ps->p < ps->end ? *ps->p++ : '\0';
			switch (c) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			case 'u':
				if (parse_hex4(ps, &cp) != 0)
					return -1;
				/* Not an id's character either way: kept as
				 * '?' so that the id check refuses it. */
				c = cp < 0x80 && cp >= 0x20 ? (char)cp : '?';
				break;
			default:
				parse_fail(ps, "bad escape");
				return -1;
			}
		}
		if (out != NULL) {
			if (n + 1 >= cap) {
				parse_fail(ps, "string too long");
				return -1;
			}
			out[n] = c;
		}
		n++;
	}
	if (out != NULL)
		out[n] = '\0';
	return (long)n;
}

/* An unsigned integer as csq writes them: digits, no sign, no fraction. */
static int
parse_u64(struct parse *ps, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *first;

	parse_ws(ps);
	first = ps->p;
	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		unsigned d = (unsigned)(*ps->p - '0');

		if (v > (max - d) / 10) {
			parse_fail(ps, "number out of range");
			return -1;
		}
		v = v * 10 + d;
		ps->p++;
	}
	if (ps->p == first || (ps->p - first > 1 && *first == '0') ||
	    (ps->p < ps->end &&
	     (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E'))) {
		parse_fail(ps, "unsigned integer expected");
		return -1;
	}
	*out = v;
	return 0;
}

/* Any JSON number, skipped. */
static int
parse_skip_number(struct parse *ps)
{
	const char *first = ps->p;

	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	while (ps->p < ps->end &&
	       ((*ps->p >= '0' && *ps->p <= '9') || *ps->p == '.' ||
	        *ps->p == 'e' || *ps->p == 'E' || *ps->p == '+' ||
	        *ps->p == '-'))
		ps->p++;
	if (ps->p == first || (ps->p - first == 1 && *first == '-')) {
		parse_fail(ps, "value expected");
		return -1;
	}
	return 0;
}

static int
parse_literal(struct parse *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
		parse_fail(ps, "value expected");
		return -1;
	}
	ps->p += n;
	return 0;
}

/* Any JSON value, skipped. */
static int
parse_skip(struct parse *ps, int depth)
{
	int c = parse_peek(ps);

	if (depth > PARSE_DEPTH_MAX) {
		parse_fail(ps, "nested too deep");
		return -1;
	}
	switch (c) {
	case '"':
		return parse_string(ps, NULL, 0) < 0 ? -1 : 0;
	case '{':
	case '[':
		ps->p++;
		if (parse_peek(ps) == (c == '{' ? '}' : ']')) {
			ps->p++;
			return 0;
		}
		for (;;) {
			if (c == '{' && (parse_string(ps, NULL, 0) < 0 ||
			                 parse_expect(ps, ':') != 0))
				return -1;
			if (parse_skip(ps, depth + 1) != 0)
				return -1;
			if (parse_peek(ps) == ',') {
				ps->p++;
				continue;
			}
			return parse_expect(ps, c == '{' ? '}' : ']');
		}
	case 't':
		return parse_literal(ps, "true");
	case 'f':
		return parse_literal(ps, "false");
	case 'n':
		return parse_literal(ps, "null");
	default:
		return parse_skip_number(ps);
	}
}

/* ["a","b"] into "a,b". */
static int
parse_queues(struct parse *ps, char *out, size_t cap)
{
	char one[CSQ_ID_MAX + 1];
	size_t n = 0, k = 0;
	long len;

	out[0] = '\0';
	if (parse_expect(ps, '[') != 0)
		return -1;
	if (parse_peek(ps) == ']') {
		ps->p++;
		return 0;
	}
	for (;;) {
		if ((len = parse_string(ps, one, sizeof(one))) < 0)
			return -1;
		if (!csq_valid_id(one, (size_t)len) ||
		    ++k > CSQ_SERVICER_QUEUES || n + (size_t)len + 2 > cap) {
			parse_fail(ps, "bad queue in queues");
			return -1;
		}
		if (n > 0)
			out[n++] = ',';
		memcpy(out + n, one, (size_t)len + 1);
		n += (size_t)len;
		if (parse_peek(ps) == ',') {
			ps->p++;
			continue;
		}
		return parse_expect(ps, ']');
	}
}

static int
parse_reason(struct parse *ps, enum csq_reason *out)
{
	char name[32];
	int r;

	if (parse_string(ps, name, sizeof(name)) < 0)
		return -1;
	for (r = CSQ_REASON_LEAVE; r <= CSQ_REASON_LAST; r++)
		if (strcmp(name, csq_reason_name((enum csq_reason)r)) == 0) {
			*out = (enum csq_reason)r;
			return 0;
		}
	/* A reason of a newer csq: kept as none. */
	*out = CSQ_REASON_NONE;
	return 0;
}

/*
 * An id field: the id syntax of csq_valid_id, or a room's. "" is none
 * where csq_event_json writes an event without one as "" (none_ok: user,
 * queue, from_queue, servicer, room of a line that lacked them), so that
 * every line that parses prints into one that parses (fuzz/fuzz_event.c
 * found {"event":"queued","id":1,"ts":1} printed with "user":"", which
 * did not); "prefer" is written only when there is one.
 */
static int
parse_id(struct parse *ps, char *out, size_t cap, int room, int none_ok)
{
	char sid[CSQ_ID_MAX + 1];
	uint32_t index;
	long len;

	if ((len = parse_string(ps, out, cap)) < 0)
		return -1;
	if (len == 0 && none_ok)
		return 0;
	if (room ? csq_parse_room(out, (size_t)len, sid, &index) != 0
	         : !csq_valid_id(out, (size_t)len)) {
		parse_fail(ps, "bad %s", room ? "room" : "id");
		return -1;
	}
	return 0;
}

/* A skill list as csq writes it ("de:5,fr"): [A-Za-z0-9._:,-], maybe
 * empty, and a list SKILLS or NEEDS would take, of at most max skills
 * (a replay hands it to csq as it is). */
static int
parse_skills(struct parse *ps, char *out, size_t cap, uint32_t max)
{
	struct csq_skill_list l;
	long len, i;

	if ((len = parse_string(ps, out, cap)) < 0)
		return -1;
	for (i = 0; i < len; i++)
		if (!csq_valid_id(out + i, 1) && out[i] != ',') {
			parse_fail(ps, "bad skill list");
			return -1;
		}
	if (csq_skills_parse(out, max, &l) != CSQ_OK) {
		parse_fail(ps, "bad skill list");
		return -1;
	}
	return 0;
}

static int
parse_num_field(struct parse *ps, const char *key, struct csq_event *ev)
{
	uint64_t v;

	if (strcmp(key, "tier") == 0 || strcmp(key, "capacity") == 0 ||
	    strcmp(key, "lowered") == 0) {
		if (parse_u64(ps, UINT32_MAX, &v) != 0)
			return -1;
		if (key[0] == 't')
			ev->tier = (uint32_t)v;
		else if (key[0] == 'c')
			ev->capacity = (uint32_t)v;
		else
			ev->lowered = (uint32_t)v;
		return 0;
	}
	if (parse_u64(ps, UINT64_MAX, &v) != 0)
		return -1;
	if (strcmp(key, "id") == 0)
		ev->id = v;
	else if (strcmp(key, "ts") == 0)
		ev->ts_ms = v;
	else if (strcmp(key, "position") == 0)
		ev->position = v;
	else if (strcmp(key, "waited_ms") == 0)
		ev->waited_ms = v;
	else if (strcmp(key, "offered_ms") == 0) {
		ev->offered_ms = v;
		ev->has_offered_ms = 1;
	} else if (strcmp(key, "expires_ms") == 0)
		ev->expires_ms = v;
	else if (strcmp(key, "prefer_ms") == 0)
		ev->prefer_ms = v;
	else
		ev->until_ms = v;
	return 0;
}

/* queued's eta_ms: -1 (none yet) or a number of ms. */
static int
parse_eta(struct parse *ps, struct csq_event *ev)
{
	uint64_t v;

	if (parse_peek(ps) == '-') {
		ps->p++;
		if (parse_u64(ps, 1, &v) != 0 || v != 1) {
			parse_fail(ps, "bad eta_ms");
			return -1;
		}
		ev->eta_ms = -1;
	} else {
		if (parse_u64(ps, INT64_MAX, &v) != 0)
			return -1;
		ev->eta_ms = (int64_t)v;
	}
	ev->has_eta = 1;
	return 0;
}

static const char *const parse_numbers[] = {
    "id",         "ts",         "tier",     "position",         "waited_ms",
    "offered_ms", "expires_ms", "until_ms", "resting_until_ms", "capacity",
    "lowered",    "prefer_ms",  NULL};

static int
parse_is(const char *key, const char *const *names)
{
	for (; *names != NULL; names++)
		if (strcmp(key, *names) == 0)
			return 1;
	return 0;
}

/* One member's value, key already read; known keys into ev. */
static int
parse_member(struct parse *ps, const char *key, struct csq_event *ev,
             char *type, size_t tcap, int *seen)
{
	if (strcmp(key, "event") == 0) {
		*seen |= 1;
		return parse_string(ps, type, tcap) < 0 ? -1 : 0;
	}
	if (parse_is(key, parse_numbers)) {
		if (strcmp(key, "id") == 0)
			*seen |= 2;
		else if (strcmp(key, "ts") == 0)
			*seen |= 4;
		return parse_num_field(ps, key, ev);
	}
	if (strcmp(key, "eta_ms") == 0)
		return parse_eta(ps, ev);
	if (strcmp(key, "user") == 0)
		return parse_id(ps, ev->user, sizeof(ev->user), 0, 1);
	if (strcmp(key, "queue") == 0)
		return parse_id(ps, ev->queue, sizeof(ev->queue), 0, 1);
	if (strcmp(key, "from_queue") == 0)
		return parse_id(ps, ev->from_queue, sizeof(ev->from_queue), 0,
		                1);
	if (strcmp(key, "servicer") == 0)
		return parse_id(ps, ev->servicer, sizeof(ev->servicer), 0, 1);
	if (strcmp(key, "room") == 0)
		return parse_id(ps, ev->room, sizeof(ev->room), 1, 1);
	if (strcmp(key, "reason") == 0 || strcmp(key, "by") == 0)
		return parse_reason(ps, &ev->reason);
	if (strcmp(key, "queues") == 0)
		return parse_queues(ps, ev->queues, sizeof(ev->queues));
	if (strcmp(key, "needs") == 0)
		return parse_skills(ps, ev->needs, sizeof(ev->needs),
		                    CSQ_USER_NEEDS);
	if (strcmp(key, "dropped") == 0)
		return parse_skills(ps, ev->dropped, sizeof(ev->dropped),
		                    CSQ_USER_NEEDS);
	if (strcmp(key, "skills") == 0)
		return parse_skills(ps, ev->skills, sizeof(ev->skills),
		                    CSQ_SERVICER_SKILLS);
	if (strcmp(key, "prefer") == 0)
		return parse_id(ps, ev->prefer, sizeof(ev->prefer), 0, 0);
	return parse_skip(ps, 1);
}

enum csq_event_parse
csq_event_parse(const char *line, size_t len, struct csq_event *ev, char *err)
{
	struct parse ps = {line, line, line + len, err, 0};
	char key[PARSE_KEY_MAX], type[PARSE_TYPE_MAX];
	int seen = 0, t;

	memset(ev, 0, sizeof(*ev));
	ev->eta_ms = -1;
	err[0] = '\0';
	type[0] = '\0';
	if (parse_expect(&ps, '{') != 0)
		return CSQ_PARSE_ERROR;
	if (parse_peek(&ps) != '}')
		for (;;) {
			if (parse_peek(&ps) != '"') {
				parse_fail(&ps, "key expected");
				return CSQ_PARSE_ERROR;
			}
			if (parse_string(&ps, key, sizeof(key)) < 0 ||
			    parse_expect(&ps, ':') != 0 ||
			    parse_member(&ps, key, ev, type, sizeof(type),
			                 &seen) != 0)
				return CSQ_PARSE_ERROR;
			if (parse_peek(&ps) != ',')
				break;
			ps.p++;
		}
	if (parse_expect(&ps, '}') != 0)
		return CSQ_PARSE_ERROR;
	if (parse_peek(&ps) != -1) {
		parse_fail(&ps, "text after the object");
		return CSQ_PARSE_ERROR;
	}
	if (seen != 7) {
		parse_fail(&ps, "no %s",
		           !(seen & 1)   ? "event"
		           : !(seen & 2) ? "id"
		                         : "ts");
		return CSQ_PARSE_ERROR;
	}
	for (t = 0; t < CSQ_EV_TYPES; t++)
		if (strcmp(type, csq_event_name((enum csq_event_type)t)) == 0) {
			ev->type = (enum csq_event_type)t;
			return CSQ_PARSE_OK;
		}
	return CSQ_PARSE_UNKNOWN;
}
