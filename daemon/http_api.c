/*
 * The HTTP API: a JSON object in, the argv RESP would carry, the command
 * table's dispatch on a local client (client.h), its RESP3 reply out as
 * JSON. What this file decides is only the shape: which JSON field is
 * which word of the command. Whether a value is valid, whether the user
 * may run the command or act for the id, and what the engine answers are
 * the command path's, as for RESP: no rule is written here twice.
 */
#include "http_api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "admin_events.h"
#include "auth.h"
#include "client.h"
#include "command.h"
#include "config.h"
#include "engine.h"
#include "http.h"
#include "http_auth.h"
#include "log.h"
#include "resp.h"
#include "server.h"
#include "util.h"

#define API_JSON_TYPE    "application/json"
#define API_FIELDS_MAX   8 /* fields of a command's table row */
#define API_ARGS_MAX     (1 + 2 * API_FIELDS_MAX)
#define API_DEPTH_MAX    4    /* nesting of a reply: QSTATS's lists */
#define API_CRED_MAX     1024 /* bytes of Basic credentials, decoded */
#define API_ERR_MAX      160  /* a request error's text */
#define API_LIST_SEP     ','  /* a JSON list of queues: RESP's a,b,c */
#define API_REALM        "Basic realm=\"csq\", charset=\"UTF-8\""
#define API_RETRY_AFTER  "1"      /* s, with a 503: TRYAGAIN's retry */
#define API_EVENTS       "events" /* GET /api/v1/events: a stream */
#define API_CORS_MAX_AGE "600"    /* s a browser may keep a preflight's */
#define API_FORBIDDEN    403      /* libevent 2.1 names no HTTP_FORBIDDEN */

/* What a field holds, and so which JSON types it takes. */
enum api_type {
	API_STR,  /* a JSON string */
	API_INT,  /* a JSON number, passed as written */
	API_LIST, /* a JSON array of strings, or a string: "a,b" */
};

/*
 * A field of a command: its JSON name, the RESP option word before it
 * (NULL: a positional argument, required, in the table's order), and its
 * type. An option whose word is "" follows the option before it (PREFER's
 * seconds): it is written right after that one's value.
 */
struct api_field {
	const char *name;
	const char *word;
	enum api_type type;
};

/* A command as a request is read: its name (the path's) and its fields,
 * the id first (api_command). */
struct api_command {
	const char *name;
	struct api_field fields[API_FIELDS_MAX];
};

/*
 * The operations the API serves (section 11c: what a frontend and an
 * agent need, and the reads beside them), by the table of operations'
 * opcode (lib/op.h). The table says the rest: the path is the
 * operation's name, and the first field is the id its first argument
 * names, called by the table's id column (api_id_fields). What is the
 * API's own is here: that it serves the operation, and the fields after
 * the id. http_api_check holds the two tables together.
 */
static const struct api_op {
	int served;
	struct api_field fields[API_FIELDS_MAX - 1]; /* after the id */
} api_ops[CSQ_OP_COUNT] = {
    [CSQ_OP_ENQUEUE] = {1,
                        {{"queue", "QUEUE", API_STR},
                         {"tier", "TIER", API_INT},
                         {"ttl", "TTL", API_INT},
                         {"prefer", "PREFER", API_STR},
                         {"prefer_s", "", API_INT},
                         {"needs", "NEEDS", API_LIST}}},
    [CSQ_OP_WHERE] = {.served = 1},
    [CSQ_OP_LEAVE] = {.served = 1},
    [CSQ_OP_TOUCH] = {1, {{"ttl", "TTL", API_INT}}},
    [CSQ_OP_HEARTBEAT] = {1,
                          {{"capacity", "CAPACITY", API_INT},
                           {"queues", "QUEUES", API_LIST},
                           {"ttl", "TTL", API_INT},
                           {"offer", "OFFER", API_INT},
                           {"wrapup", "WRAPUP", API_INT},
                           {"skills", "SKILLS", API_LIST}}},
    [CSQ_OP_PAUSE] = {.served = 1},
    [CSQ_OP_RESUME] = {.served = 1},
    [CSQ_OP_LOGOUT] = {.served = 1},
    [CSQ_OP_ROOMS] = {.served = 1},
    [CSQ_OP_ACCEPT] = {.served = 1},
    [CSQ_OP_DECLINE] = {.served = 1},
    [CSQ_OP_READY] = {.served = 1},
    [CSQ_OP_RELEASE] = {.served = 1},
    [CSQ_OP_TRANSFER] = {1,
                         {{"queue", NULL, API_STR},
                          {"prefer", "PREFER", API_STR},
                          {"prefer_s", "", API_INT},
                          {"needs", "NEEDS", API_LIST}}},
    [CSQ_OP_QLEN] = {.served = 1},
    [CSQ_OP_QSTATS] = {.served = 1},
};

/* The JSON name of the id field, by the table's id column. */
static const char *const api_id_fields[] = {
    [CSQ_ID_OF_NONE] = NULL,           [CSQ_ID_OF_USER] = "user",
    [CSQ_ID_OF_SERVICER] = "servicer", [CSQ_ID_OF_ROOM] = "room",
    [CSQ_ID_OF_QUEUE] = "queue",
};

/* One request waiting for its reply. */
struct api_call {
	TAILQ_ENTRY(api_call) entry;
	struct http_api *api;       /* NULL: orphaned by a stop */
	struct evhttp_request *req; /* NULL: the client went away */
	struct client *c;
};

struct http_api {
	struct server *s;
	struct admin_events *events;
	TAILQ_HEAD(, api_call) calls;
};

/* A field's value as parsed: a copy of its bytes (a string unescaped, a
 * number as written, a list joined with commas). */
struct api_value {
	const struct api_field *f;
	char *v;
	size_t len;
};

/* The JSON reader's place in the body. */
struct api_json {
	const char *p, *start, *end;
	char err[API_ERR_MAX];
};

struct http_api *
http_api_new(struct server *s, struct admin_events *events)
{
	struct http_api *api = csq_xcalloc(1, sizeof(*api));

	api->s = s;
	api->events = events;
	TAILQ_INIT(&api->calls);
	return api;
}

/* Writes s (len bytes) as a JSON string. */
static void
api_json_str(struct evbuffer *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i;

	evbuffer_add(b, "\"", 1);
	for (i = 0; i < len; i++) {
		if (p[i] == '"' || p[i] == '\\')
			evbuffer_add_printf(b, "\\%c", p[i]);
		else if (p[i] < 0x20 || p[i] >= 0x7f)
			/* Beyond ASCII only in an error's echo of what was
			 * sent (ids are ASCII): as Latin-1, so that the
			 * answer is valid JSON whatever the bytes. */
			evbuffer_add_printf(b, "\\u%04x", p[i]);
		else
			evbuffer_add(b, &p[i], 1);
	}
	evbuffer_add(b, "\"", 1);
}

/*
 * HTTP's status for an error's code word (csq decision, section 11c):
 * the request's fault 400, no such servicer or room 404, a full queue
 * or one nobody serves that refuses arrivals 409, credentials 401, a
 * role or an id outside the user's 403, the engine unavailable 503.
 */
static int
api_status(const char *code, size_t len, const char **reason)
{
	static const struct {
		const char *code;
		int status;
		const char *reason;
	} map[] = {
	    {"NOTFOUND", HTTP_NOTFOUND, "Not Found"},
	    {"FULL", 409, "Conflict"},
	    {"NOBODY", 409, "Conflict"},
	    {"CLOSED", 409, "Conflict"}, /* business hours (section 3c) */
	    {"NOAUTH", 401, "Unauthorized"},
	    {"WRONGPASS", 401, "Unauthorized"},
	    {"NOPERM", 403, "Forbidden"},
	    {"TRYAGAIN", HTTP_SERVUNAVAIL, "Service Unavailable"},
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strlen(map[i].code) == len &&
		    memcmp(map[i].code, code, len) == 0) {
			*reason = map[i].reason;
			return map[i].status;
		}
	*reason = "Bad Request";
	return HTTP_BADREQUEST;
}

/* An error answer: {"error": "<code> <message>", "code": "<code>"}, the
 * error as RESP gives it and its code word alone. */
static void
api_error_as(struct evhttp_request *req, int status, const char *reason,
             const char *text, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	const char *sp = memchr(text, ' ', len);
	size_t clen = sp != NULL ? (size_t)(sp - text) : len;
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	if (status == 0)
		status = api_status(text, clen, &reason);

	if (b == NULL)
		fatalx("out of memory for an HTTP answer");
	evbuffer_add(b, "{\"error\":", 9);
	api_json_str(b, text, len);
	evbuffer_add(b, ",\"code\":", 8);
	api_json_str(b, text, clen);
	evbuffer_add(b, "}\n", 2);
	if (status == 401)
		evhttp_add_header(h, "WWW-Authenticate", API_REALM);
	else if (status == HTTP_SERVUNAVAIL)
		evhttp_add_header(h, "Retry-After", API_RETRY_AFTER);
	http_reply(req, status, reason, API_JSON_TYPE, b);
	evbuffer_free(b);
}

static void
api_error(struct evhttp_request *req, const char *text, size_t len)
{
	api_error_as(req, 0, NULL, text, len);
}

static void api_errorf(struct evhttp_request *req, int status,
                       const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An error of the request itself: status 0 takes it from the code. */
static void
api_errorf(struct evhttp_request *req, int status, const char *reason,
           const char *fmt, ...)
{
	char text[API_ERR_MAX + 64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	api_error_as(req, status, reason, text,
	             n < 0                      ? 0
	             : (size_t)n < sizeof(text) ? (size_t)n
	                                        : sizeof(text) - 1);
}

/* The JSON reader: a body must be one object of known fields. */

static void
json_ws(struct api_json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
	                         *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int
json_fail(struct api_json *j, const char *what)
{
	snprintf(j->err, sizeof(j->err), "ERR invalid JSON at byte %zu: %s",
	         (size_t)(j->p - j->start), what);
	return -1;
}

static int
json_hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	int i, d;

	for (i = 0; i < 4; i++) {
		if (p[i] >= '0' && p[i] <= '9')
			d = p[i] - '0';
		else if ((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'f')
			d = (p[i] | 0x20) - 'a' + 10;
		else
			return -1;
		v = v << 4 | (unsigned)d;
	}
	*out = v;
	return 0;
}

/* Appends code point u as UTF-8. */
static size_t
json_utf8(char *o, unsigned u)
{
	if (u < 0x80) {
		o[0] = (char)u;
		return 1;
	}
	if (u < 0x800) {
		o[0] = (char)(0xc0 | u >> 6);
		o[1] = (char)(0x80 | (u & 0x3f));
		return 2;
	}
	if (u < 0x10000) {
		o[0] = (char)(0xe0 | u >> 12);
		o[1] = (char)(0x80 | (u >> 6 & 0x3f));
		o[2] = (char)(0x80 | (u & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | u >> 18);
	o[1] = (char)(0x80 | (u >> 12 & 0x3f));
	o[2] = (char)(0x80 | (u >> 6 & 0x3f));
	o[3] = (char)(0x80 | (u & 0x3f));
	return 4;
}

/*
 * A JSON string at j->p (its opening quote), unescaped into a new
 * buffer: *out (NUL-terminated) and *len. A NUL (\u0000) is refused: no
 * argument of csq holds one.
 */
static int
json_string(struct api_json *j, char **out, size_t *len)
{
	/* Unescaped, a string is never longer than written. */
	char *o = csq_xmalloc((size_t)(j->end - j->p) + 1);
	size_t n = 0;
	unsigned u, lo;

	j->p++;
	while (j->p < j->end && *j->p != '"') {
		unsigned char ch = (unsigned char)*j->p;

		if (ch < 0x20) {
			free(o);
			return json_fail(j, "control character in a string");
		}
		if (ch != '\\') {
			o[n++] = (char)ch;
			j->p++;
			continue;
		}
		if (j->end - j->p < 2)
			break;
		switch (j->p[1]) {
		case '"':
		case '\\':
		case '/':
			o[n++] = j->p[1];
			break;
		case 'b':
			o[n++] = '\b';
			break;
		case 'f':
			o[n++] = '\f';
			break;
		case 'n':
			o[n++] = '\n';
			break;
		case 'r':
			o[n++] = '\r';
			break;
		case 't':
			o[n++] = '\t';
			break;
		case 'u':
			if (j->end - j->p < 6 || json_hex4(j->p + 2, &u) != 0) {
				free(o);
				return json_fail(j, "bad \\u escape");
			}
			/* A surrogate pair is one code point: a lone half
			 * is no character. */
			if (u >= 0xd800 && u <= 0xdbff) {
				if (j->end - j->p < 12 || j->p[6] != '\\' ||
				    j->p[7] != 'u' ||
				    json_hex4(j->p + 8, &lo) != 0 ||
				    lo < 0xdc00 || lo > 0xdfff) {
					free(o);
					return json_fail(j, "bad surrogate");
				}
				u = 0x10000 + ((u - 0xd800) << 10) +
				    (lo - 0xdc00);
				j->p += 6;
			} else if (u >= 0xdc00 && u <= 0xdfff) {
				free(o);
				return json_fail(j, "bad surrogate");
			}
			if (u == 0) {
				free(o);
				return json_fail(j, "\\u0000 in a string");
			}
			n += json_utf8(o + n, u);
			j->p += 4;
			break;
		default:
			free(o);
			return json_fail(j, "bad escape");
		}
		j->p += 2;
	}
	if (j->p >= j->end) {
		free(o);
		return json_fail(j, "unterminated string");
	}
	j->p++;
	o[n] = '\0';
	*out = o;
	*len = n;
	return 0;
}

/* A JSON number at j->p, by JSON's grammar, copied as written. */
static int
json_number(struct api_json *j, char **out, size_t *len)
{
	const char *s = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return json_fail(j, "bad number");
	if (*j->p == '0')
		j->p++;
	else
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return json_fail(j, "bad number");
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return json_fail(j, "bad number");
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	*len = (size_t)(j->p - s);
	*out = csq_xmalloc(*len + 1);
	memcpy(*out, s, *len);
	(*out)[*len] = '\0';
	return 0;
}

/* A JSON array of strings, joined with commas as RESP's lists are. A
 * comma inside an element would split it: refused. */
static int
json_list(struct api_json *j, const char *field, char **out, size_t *len)
{
	char *all = csq_xmalloc((size_t)(j->end - j->p) + 1), *one;
	size_t n = 0, olen;

	j->p++;
	json_ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		free(all);
		snprintf(j->err, sizeof(j->err), "ERR field '%s' is empty",
		         field);
		return -1;
	}
	for (;;) {
		json_ws(j);
		if (j->p >= j->end || *j->p != '"') {
			free(all);
			snprintf(j->err, sizeof(j->err),
			         "ERR field '%s' must be a list of strings",
			         field);
			return -1;
		}
		if (json_string(j, &one, &olen) != 0) {
			free(all);
			return -1;
		}
		if (memchr(one, API_LIST_SEP, olen) != NULL) {
			free(one);
			free(all);
			snprintf(j->err, sizeof(j->err),
			         "ERR field '%s': an element holds a comma",
			         field);
			return -1;
		}
		if (n > 0)
			all[n++] = API_LIST_SEP;
		memcpy(all + n, one, olen);
		n += olen;
		free(one);
		json_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			break;
		}
		free(all);
		return json_fail(j, "expected ',' or ']'");
	}
	all[n] = '\0';
	*out = all;
	*len = n;
	return 0;
}

static const struct api_field *
api_field(const struct api_command *cmd, const char *name)
{
	size_t i;

	for (i = 0; i < API_FIELDS_MAX && cmd->fields[i].name != NULL; i++)
		if (strcmp(cmd->fields[i].name, name) == 0)
			return &cmd->fields[i];
	return NULL;
}

/* The name of a JSON value's type at j->p, for an error. */
static const char *
json_kind(const struct api_json *j)
{
	switch (*j->p) {
	case '"':
		return "a string";
	case '{':
		return "an object";
	case '[':
		return "a list";
	case 't':
	case 'f':
		return "a boolean";
	case 'n':
		return "null";
	default:
		return "a number";
	}
}

/*
 * The body as one JSON object of cmd's fields into vals (one per field
 * of the table, by index; v NULL: absent). 0, or -1 with j->err set:
 * the JSON is bad, a field unknown, twice or of the wrong type.
 */
static int
api_parse(struct api_json *j, const struct api_command *cmd,
          struct api_value *vals)
{
	const struct api_field *f;
	struct api_value *v;
	char *key;
	size_t klen;
	int rc;

	json_ws(j);
	if (j->p >= j->end || *j->p != '{')
		return json_fail(j, "expected an object");
	j->p++;
	json_ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		goto end;
	}
	for (;;) {
		json_ws(j);
		if (j->p >= j->end || *j->p != '"')
			return json_fail(j, "expected a field name");
		if (json_string(j, &key, &klen) != 0)
			return -1;
		json_ws(j);
		if (j->p >= j->end || *j->p != ':') {
			free(key);
			return json_fail(j, "expected ':'");
		}
		j->p++;
		json_ws(j);
		if (j->p >= j->end) {
			free(key);
			return json_fail(j, "expected a value");
		}
		if ((f = api_field(cmd, key)) == NULL || strlen(key) != klen) {
			snprintf(j->err, sizeof(j->err),
			         "ERR unknown field '%.64s' for '%s'", key,
			         cmd->name);
			free(key);
			return -1;
		}
		free(key);
		v = &vals[f - cmd->fields];
		if (v->v != NULL) {
			snprintf(j->err, sizeof(j->err),
			         "ERR field '%s' given twice", f->name);
			return -1;
		}
		v->f = f;
		if (*j->p == '"' && (f->type == API_STR || f->type == API_LIST))
			rc = json_string(j, &v->v, &v->len);
		else if (*j->p == '[' && f->type == API_LIST)
			rc = json_list(j, f->name, &v->v, &v->len);
		else if (f->type == API_INT &&
		         (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')))
			rc = json_number(j, &v->v, &v->len);
		else {
			snprintf(j->err, sizeof(j->err),
			         "ERR field '%s' must be %s, not %s", f->name,
			         f->type == API_INT    ? "an integer"
			         : f->type == API_LIST ? "a list of strings"
			                               : "a string",
			         json_kind(j));
			return -1;
		}
		if (rc != 0)
			return -1;
		json_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			break;
		}
		return json_fail(j, "expected ',' or '}'");
	}
end:
	json_ws(j);
	if (j->p != j->end)
		return json_fail(j, "text after the object");
	return 0;
}

/* Writes one RESP3 value of the reply at *p as JSON; -1 when it is not
 * one the commands write (it cannot be: a bug, answered 500). */
static int
api_reply_json(struct evbuffer *b, const char **p, const char *end, int depth)
{
	const char *nl = memchr(*p, '\r', (size_t)(end - *p));
	char type;
	long long n, i;
	char *e;

	if (nl == NULL || depth > API_DEPTH_MAX || end - nl < 2)
		return -1;
	type = **p;
	n = strtoll(*p + 1, &e, 10);
	switch (type) {
	case '+':
		api_json_str(b, *p + 1, (size_t)(nl - *p - 1));
		*p = nl + 2;
		return 0;
	case ':':
		if (e != nl)
			return -1;
		evbuffer_add(b, *p + 1, (size_t)(nl - *p - 1));
		*p = nl + 2;
		return 0;
	case '_':
		evbuffer_add(b, "null", 4);
		*p = nl + 2;
		return 0;
	case '$':
		if (e != nl)
			return -1;
		*p = nl + 2;
		if (n < 0) {
			evbuffer_add(b, "null", 4);
			return 0;
		}
		if (end - *p < n + 2)
			return -1;
		api_json_str(b, *p, (size_t)n);
		*p += n + 2;
		return 0;
	case '*':
	case '%':
		if (e != nl || n < 0)
			return -1;
		*p = nl + 2;
		evbuffer_add(b, type == '*' ? "[" : "{", 1);
		for (i = 0; i < n; i++) {
			if (i > 0)
				evbuffer_add(b, ",", 1);
			if (api_reply_json(b, p, end, depth + 1) != 0)
				return -1;
			if (type == '%') {
				evbuffer_add(b, ":", 1);
				if (api_reply_json(b, p, end, depth + 1) != 0)
					return -1;
			}
		}
		evbuffer_add(b, type == '*' ? "]" : "}", 1);
		return 0;
	}
	return -1;
}

/* The reply c gathered, as the request's answer. */
static void
api_answer(struct evhttp_request *req, struct client *c)
{
	struct evbuffer *out = client_output(c), *b;
	size_t len = evbuffer_get_length(out);
	const char *p = (const char *)evbuffer_pullup(out, (ev_ssize_t)len);
	const char *end = p + len, *nl;

	if (len > 0 && *p == '-' && (nl = memchr(p, '\r', len)) != NULL) {
		api_error(req, p + 1, (size_t)(nl - p - 1));
		return;
	}
	if ((b = evbuffer_new()) == NULL)
		fatalx("out of memory for an HTTP answer");
	if (len == 0 || api_reply_json(b, &p, end, 0) != 0 || p != end) {
		log_warnx("http api: a reply csqd cannot write as JSON");
		evbuffer_free(b);
		api_errorf(req, HTTP_INTERNAL, "Internal Server Error",
		           "ERR internal error");
		return;
	}
	evbuffer_add(b, "\n", 1);
	http_reply(req, HTTP_OK, "OK", API_JSON_TYPE, b);
	evbuffer_free(b);
}

static void
api_call_free(struct api_call *x)
{
	if (x->api != NULL)
		TAILQ_REMOVE(&x->api->calls, x, entry);
	if (x->req != NULL)
		evhttp_connection_set_closecb(
		    evhttp_request_get_connection(x->req), NULL, NULL);
	client_local_free(x->c);
	free(x);
}

/* The reply is whole (client.h's done). */
static void
api_done(struct client *c, void *arg)
{
	struct api_call *x = arg;
	struct evhttp_request *req = x->req;

	/* The request is no longer x's to watch once answered: evhttp may
	 * free it with its connection after the answer. */
	if (req != NULL) {
		evhttp_connection_set_closecb(
		    evhttp_request_get_connection(req), NULL, NULL);
		x->req = NULL;
		api_answer(req, c);
	}
	api_call_free(x);
}

/* The client went away before its reply: the command still runs, as a
 * RESP connection's that closes; the reply goes nowhere. */
static void
api_conn_closed(struct evhttp_connection *conn, void *arg)
{
	struct api_call *x = arg;

	(void)conn;
	x->req = NULL;
}

/*
 * Logs c in with the request's credentials, as AUTH would: 0, or -1
 * with the error answered. Without any configured (no requirepass, no
 * users), c is admin, as a RESP connection is.
 */
static int
api_login(struct client *c, struct evhttp_request *req)
{
	const char *h = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Authorization");
	char cred[API_CRED_MAX];
	const char *colon;
	int len;

	if (!auth_required(c))
		return 0;
	if (h == NULL) {
		api_errorf(req, 0, NULL, "NOAUTH Authentication required.");
		return -1;
	}
	if (strncasecmp(h, "Bearer ", 7) == 0) {
		for (h += 7; *h == ' '; h++)
			;
		if (auth_login_token(c, h, strlen(h)) == 0)
			return 0;
	} else if (strncasecmp(h, "Basic ", 6) == 0) {
		for (h += 6; *h == ' '; h++)
			;
		if ((len = http_auth_decode(h, cred, sizeof(cred))) >= 0 &&
		    (colon = memchr(cred, ':', (size_t)len)) != NULL &&
		    auth_login(c, cred, (size_t)(colon - cred), colon + 1,
		               (size_t)(len - (colon - cred) - 1)) == 0)
			return 0;
	}
	api_errorf(req, 0, NULL, "WRONGPASS invalid username-password pair");
	return -1;
}

/* The command of the path's name into cmd: 0, or -1 when the API serves
 * none of that name (the name exactly: ENQUEUE is no path). */
static int
api_command(const char *name, struct api_command *cmd)
{
	int op = csq_op_lookup(name, strlen(name));
	const struct csq_op_def *d;

	if (op < 0 || !api_ops[op].served)
		return -1;
	d = csq_op_def((enum csq_opcode)op);
	if (strcmp(d->name, name) != 0)
		return -1;
	memset(cmd, 0, sizeof(*cmd));
	cmd->name = d->name;
	cmd->fields[0].name = api_id_fields[d->id];
	cmd->fields[0].type = API_STR;
	memcpy(cmd->fields + 1, api_ops[op].fields, sizeof(api_ops[op].fields));
	return 0;
}

int
http_api_check(char *why, size_t len)
{
	const struct csq_op_def *d;
	const struct api_field *f;
	int op, i, k, words;

	for (op = 0; op < CSQ_OP_COUNT; op++) {
		if (!api_ops[op].served)
			continue;
		d = csq_op_def((enum csq_opcode)op);
		/* The id and the positional fields are the words the
		 * arity counts after the name: all of them when it is
		 * exact, the least when it is not. */
		words = 2;
		for (i = 0; i < API_FIELDS_MAX - 1; i++) {
			f = &api_ops[op].fields[i];
			if (f->name == NULL)
				break;
			/* A name twice: the second could not be sent. */
			if (strcmp(f->name, api_id_fields[d->id] != NULL
			                        ? api_id_fields[d->id]
			                        : "") == 0)
				goto bad;
			for (k = 0; k < i; k++)
				if (strcmp(f->name,
				           api_ops[op].fields[k].name) == 0)
					goto bad;
			if (f->word == NULL && (i == 0 || f[-1].word == NULL))
				words++;
			else if (f->word == NULL || d->arity > 0)
				goto bad;
			else if (f->word[0] == '\0' &&
			         (i == 0 || f[-1].word == NULL ||
			          f[-1].word[0] == '\0'))
				goto bad;
		}
		if (d->arity == 0 || d->id == CSQ_ID_OF_NONE ||
		    words != (d->arity > 0 ? d->arity : -d->arity))
			goto bad;
		continue;
	bad:
		snprintf(why, len,
		         "the API's fields of '%s' do not fit its row of "
		         "the table of operations",
		         d->name);
		return -1;
	}
	return 0;
}

/* The argv of RESP from vals: the command, the positional fields in
 * order, then each option present, its word and its value. 0, or -1
 * with the missing field's error in err. */
static int
api_argv(const struct api_command *cmd, struct api_value *vals,
         struct resp_request *r, char *err, size_t errlen)
{
	const struct api_field *f;
	size_t i;

	r->argv[r->argc] = (char *)cmd->name;
	r->argvlen[r->argc++] = strlen(cmd->name);
	for (i = 0; i < API_FIELDS_MAX && cmd->fields[i].name != NULL; i++) {
		f = &cmd->fields[i];
		if (vals[i].v == NULL) {
			if (f->word == NULL) {
				snprintf(err, errlen,
				         "ERR field '%s' is required for "
				         "'%s'",
				         f->name, cmd->name);
				return -1;
			}
			continue;
		}
		if (f->word != NULL && f->word[0] != '\0') {
			r->argv[r->argc] = (char *)f->word;
			r->argvlen[r->argc++] = strlen(f->word);
		}
		r->argv[r->argc] = vals[i].v;
		r->argvlen[r->argc++] = vals[i].len;
	}
	return 0;
}

/* The peer as logs name it: "http:<ip>:<port>". */
static void
api_peer(struct evhttp_request *req, char *buf, size_t len)
{
	char *host = NULL;
	ev_uint16_t port = 0;

	evhttp_connection_get_peer(evhttp_request_get_connection(req), &host,
	                           &port);
	snprintf(buf, len, "http:%s:%u", host != NULL ? host : "?",
	         (unsigned)port);
}

/*
 * CORS (section 11c): an Origin listed in http.cors_origins, exactly, gets
 * the headers that let a browser's script read the answer, credentials
 * and all; any other gets none, and the browser keeps the answer from the
 * script. A preflight is answered here, before credentials, which a
 * browser never sends with one: 1 when req was one (answered).
 */
static int
api_cors(struct http_api *api, struct evhttp_request *req)
{
	const struct config *cfg = &api->s->cfg;
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	const char *origin = evhttp_find_header(in, "Origin");
	int i, allowed = 0, preflight;

	preflight =
	    evhttp_request_get_command(req) == EVHTTP_REQ_OPTIONS &&
	    origin != NULL &&
	    evhttp_find_header(in, "Access-Control-Request-Method") != NULL;
	if (origin != NULL)
		for (i = 0; i < cfg->ncors_origins && !allowed; i++)
			allowed = strcmp(cfg->cors_origins[i], origin) == 0;
	/* Answers differ by Origin: a cache must not share them. */
	evhttp_add_header(out, "Vary", "Origin");
	if (allowed) {
		evhttp_add_header(out, "Access-Control-Allow-Origin", origin);
		evhttp_add_header(out, "Access-Control-Allow-Credentials",
		                  "true");
		evhttp_add_header(out, "Access-Control-Expose-Headers",
		                  "Retry-After, WWW-Authenticate");
	}
	if (!preflight)
		return 0;
	if (!allowed) {
		api_errorf(req, API_FORBIDDEN, "Forbidden",
		           "ERR origin not allowed (http.cors_origins)");
		return 1;
	}
	evhttp_add_header(out, "Access-Control-Allow-Methods",
	                  "GET, POST, OPTIONS");
	evhttp_add_header(out, "Access-Control-Allow-Headers",
	                  "Authorization, Content-Type, Last-Event-ID");
	evhttp_add_header(out, "Access-Control-Max-Age", API_CORS_MAX_AGE);
	evhttp_send_reply(req, HTTP_NOCONTENT, "No Content", NULL);
	return 1;
}

/*
 * GET /api/v1/events for c, logged in: an admin hears every event, as
 * /api/events; a frontend the events of its users' user:<id> channels,
 * a servicer those of its servicer:<id> channels, of the ids it is bound
 * to (auth.h), as SUBSCRIBE would let it hear them.
 */
static void
api_events(struct http_api *api, struct evhttp_request *req,
           const struct client *c)
{
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	struct admin_filter f;
	int i;

	if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		                  "Allow", "GET, HEAD");
		api_errorf(req, HTTP_BADMETHOD, "Method Not Allowed",
		           "ERR the event stream takes GET");
		return;
	}
	if (m == EVHTTP_REQ_GET && admin_events_full(api->events)) {
		api_errorf(req, 0, NULL,
		           "TRYAGAIN too many event streams "
		           "(http.max_event_streams)");
		return;
	}
	if (auth_role(c) == CONFIG_ROLE_ADMIN) {
		admin_events_serve_for(api->events, req, NULL);
		return;
	}
	memset(&f, 0, sizeof(f));
	f.see = auth_role(c) == CONFIG_ROLE_FRONTEND ? ADMIN_SEE_USERS
	                                             : ADMIN_SEE_SERVICERS;
	f.nids = c->nids;
	for (i = 0; i < c->nids; i++)
		memcpy(f.ids[i], c->ids[i], sizeof(f.ids[i]));
	admin_events_serve_for(api->events, req, &f);
}

void
http_api_serve(struct http_api *api, struct evhttp_request *req,
               const char *name)
{
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	struct api_value vals[API_FIELDS_MAX];
	char *argv[API_ARGS_MAX], err[API_ERR_MAX], peer[CLIENT_ADDR_MAX];
	size_t argvlen[API_ARGS_MAX], len, i;
	struct resp_request r = {0, argv, argvlen, 0};
	struct api_command cmd;
	struct api_json j;
	struct api_call *x;
	struct client *c;

	if (api_cors(api, req))
		return;
	api_peer(req, peer, sizeof(peer));
	x = csq_xcalloc(1, sizeof(*x));
	x->c = c = client_new_local(api->s, peer, api_done, x);
	memset(vals, 0, sizeof(vals));
	/* Credentials first, as RESP's NOAUTH comes first: nothing is told
	 * to a client without them. */
	if (api_login(c, req) != 0)
		goto out;
	if (strcmp(name, API_EVENTS) == 0) {
		api_events(api, req, c);
		goto out;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		                  "Allow", "POST");
		api_errorf(req, HTTP_BADMETHOD, "Method Not Allowed",
		           "ERR the API takes POST");
		goto out;
	}
	if (api_command(name, &cmd) != 0) {
		api_errorf(req, HTTP_NOTFOUND, "Not Found",
		           "ERR unknown command '%.64s'", name);
		goto out;
	}
	/* No body is an empty one (pullup gives NULL for it). */
	if ((len = evbuffer_get_length(body)) == 0)
		j.start = j.p = "";
	else
		j.start = j.p =
		    (const char *)evbuffer_pullup(body, (ev_ssize_t)len);
	j.end = j.p + len;
	if (api_parse(&j, &cmd, vals) != 0) {
		api_errorf(req, 0, NULL, "%s", j.err);
		goto out;
	}
	if (api_argv(&cmd, vals, &r, err, sizeof(err)) != 0) {
		api_errorf(req, 0, NULL, "%s", err);
		goto out;
	}
	x->api = api;
	x->req = req;
	TAILQ_INSERT_TAIL(&api->calls, x, entry);
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	                              api_conn_closed, x);
	/* The command path of RESP: role, ids, arguments, engine. */
	command_dispatch(c, &r);
	for (i = 0; i < API_FIELDS_MAX; i++)
		free(vals[i].v);
	if (client_local_whole(c))
		api_done(c, x);
	return;
out:
	for (i = 0; i < API_FIELDS_MAX; i++)
		free(vals[i].v);
	client_local_free(c);
	free(x);
}

void
http_api_free(struct http_api *api)
{
	struct api_call *x;

	if (api == NULL)
		return;
	while ((x = TAILQ_FIRST(&api->calls)) != NULL) {
		TAILQ_REMOVE(&api->calls, x, entry);
		if (x->req != NULL)
			evhttp_connection_set_closecb(
			    evhttp_request_get_connection(x->req), NULL, NULL);
		x->api = NULL;
		x->req = NULL;
	}
	free(api);
}
