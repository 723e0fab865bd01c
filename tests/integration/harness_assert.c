/*
 * The harness's commands and checks: a command and its reply, the reply
 * shown as text (reply_repr) and compared exactly, fields of maps, JSON
 * events, messages of a subscription; a failure says where, and shows
 * the daemon's log.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define REPR_BULK_MAX 300 /* longer bulk strings are shown cut */

void
fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s:%d: ", file, line);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	_fail(file, line);
}

struct repr {
	char *buf;
	size_t len, used;
};

static void
repr_add(struct repr *r, const char *s, size_t n)
{
	if (r->used + n >= r->len)
		n = r->len - 1 - r->used;
	memcpy(r->buf + r->used, s, n);
	r->used += n;
	r->buf[r->used] = '\0';
}

/* Bulk strings are quoted with '; inside them ' and \\ are escaped. */
static void
repr_str(struct repr *r, const char *s, size_t n, int quoted)
{
	char tmp[8];
	size_t i;

	for (i = 0; i < n; i++) {
		if (i == REPR_BULK_MAX) {
			snprintf(tmp, sizeof(tmp), "...");
			repr_add(r, tmp, strlen(tmp));
			break;
		}
		if (quoted && (s[i] == '\'' || s[i] == '\\')) {
			tmp[0] = '\\';
			tmp[1] = s[i];
			repr_add(r, tmp, 2);
		} else if ((unsigned char)s[i] < 0x20 ||
		           (unsigned char)s[i] >= 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\x%02x",
			         (unsigned char)s[i]);
			repr_add(r, tmp, 4);
		} else
			repr_add(r, s + i, 1);
	}
}

static void
repr_reply(struct repr *r, const redisReply *rep)
{
	char tmp[32];
	size_t i;

	if (rep == NULL) {
		repr_add(r, "(null)", 6);
		return;
	}
	switch (rep->type) {
	case REDIS_REPLY_STATUS:
		repr_add(r, "+", 1);
		repr_str(r, rep->str, rep->len, 0);
		break;
	case REDIS_REPLY_ERROR:
		repr_add(r, "-", 1);
		repr_str(r, rep->str, rep->len, 0);
		break;
	case REDIS_REPLY_INTEGER:
		snprintf(tmp, sizeof(tmp), ":%lld", rep->integer);
		repr_add(r, tmp, strlen(tmp));
		break;
	case REDIS_REPLY_NIL:
		repr_add(r, "nil", 3);
		break;
	case REDIS_REPLY_STRING:
		repr_add(r, "'", 1);
		repr_str(r, rep->str, rep->len, 1);
		repr_add(r, "'", 1);
		break;
	case REDIS_REPLY_ARRAY:
		repr_add(r, "[", 1);
		for (i = 0; i < rep->elements; i++) {
			if (i > 0)
				repr_add(r, ",", 1);
			repr_reply(r, rep->element[i]);
		}
		repr_add(r, "]", 1);
		break;
	default:
		snprintf(tmp, sizeof(tmp), "?type%d", rep->type);
		repr_add(r, tmp, strlen(tmp));
		break;
	}
}

void
reply_repr(const redisReply *rep, char *buf, size_t len)
{
	struct repr r = {buf, len, 0};

	buf[0] = '\0';
	repr_reply(&r, rep);
}

redisReply *
reply_field(const redisReply *r, const char *name)
{
	size_t i;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (i = 0; i + 1 < r->elements; i += 2) {
		if (r->element[i]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[i]->str, name) == 0)
			return r->element[i + 1];
	}
	return NULL;
}

static redisReply *
harness_vcmd(const char *file, int line, redisContext *c, const char *fmt,
             va_list ap)
{
	redisReply *r;

	r = redisvCommand(c, fmt, ap);
	if (r == NULL)
		fail_at(file, line, "command '%s' got no reply: %s", fmt,
		        c->errstr);
	return r;
}

redisReply *
cmd_at(const char *file, int line, redisContext *c, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = harness_vcmd(file, line, c, fmt, ap);
	va_end(ap);
	return r;
}

redisReply *
cmd_argv_at(const char *file, int line, redisContext *c, int argc,
            const char **argv, const size_t *argvlen)
{
	redisReply *r;

	r = redisCommandArgv(c, argc, argv, argvlen);
	if (r == NULL)
		fail_at(file, line, "command '%s' got no reply: %s", argv[0],
		        c->errstr);
	return r;
}

redisReply *
get_reply_at(const char *file, int line, redisContext *c)
{
	void *r = NULL;

	if (redisGetReply(c, &r) != REDIS_OK || r == NULL)
		fail_at(file, line, "no reply: %s", c->errstr);
	return r;
}

/*
 * Whether a reply's rendering is the one expected, where ":?" in expect
 * stands for any integer (an estimate, eta_ms, that the test does not
 * state).
 */
static int
repr_matches(const char *got, const char *expect)
{
	while (*expect != '\0') {
		if (expect[0] == ':' && expect[1] == '?') {
			if (*got++ != ':')
				return 0;
			if (*got == '-')
				got++;
			if (*got < '0' || *got > '9')
				return 0;
			while (*got >= '0' && *got <= '9')
				got++;
			expect += 2;
			continue;
		}
		if (*got++ != *expect++)
			return 0;
	}
	return *got == '\0';
}

void
check_at(const char *file, int line, redisContext *c, const char *expect,
         const char *fmt, ...)
{
	char got[8192];
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = harness_vcmd(file, line, c, fmt, ap);
	va_end(ap);
	reply_repr(r, got, sizeof(got));
	freeReplyObject(r);
	if (!repr_matches(got, expect))
		fail_at(file, line,
		        "command '%s'\n  expected %s\n  got      %s", fmt,
		        expect, got);
}

void
assert_repr_at(const char *file, int line, const redisReply *r,
               const char *expect)
{
	char got[8192];

	reply_repr(r, got, sizeof(got));
	if (!repr_matches(got, expect))
		fail_at(file, line, "reply\n  expected %s\n  got      %s",
		        expect, got);
}

void
assert_status_at(const char *file, int line, const redisReply *r,
                 const char *status)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_STATUS &&
	    strcmp(r->str, status) == 0)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected status +%s, got %s", status, got);
}

void
assert_error_at(const char *file, int line, const redisReply *r,
                const char *text)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_ERROR &&
	    strcmp(r->str, text) == 0)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected error -%s, got %s", text, got);
}

void
assert_error_prefix_at(const char *file, int line, const redisReply *r,
                       const char *prefix)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_ERROR &&
	    strncmp(r->str, prefix, strlen(prefix)) == 0)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected error starting -%s, got %s", prefix, got);
}

void
assert_integer_at(const char *file, int line, const redisReply *r, long long v)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == v)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected :%lld, got %s", v, got);
}

void
assert_bulk_at(const char *file, int line, const redisReply *r, const char *s)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_STRING && r->len == strlen(s) &&
	    memcmp(r->str, s, r->len) == 0)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected bulk '%s', got %s", s, got);
}

long long
field_int_at(const char *file, int line, const redisReply *r, const char *name)
{
	char got[8192];
	redisReply *v;

	v = reply_field(r, name);
	if (v != NULL && v->type == REDIS_REPLY_INTEGER)
		return v->integer;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "no integer field '%s' in %s", name, got);
	return -1;
}

#define SIGTERM_RUN_MS 20000 /* for a late SIGTERM's pipeline to run */

int
sigterm_pipeline_at(const char *file, int line, struct csqd *d, int n, int late)
{
	redisContext *c = csqd_connect(d), *m = late ? csqd_connect(d) : NULL;
	redisReply *r;
	long long before = 0, k;
	int64_t deadline;
	int i, acked = 0, done = 0;

	if (late)
		before =
		    info_field_at(file, line, m, "total_commands_processed");
	for (i = 0; i < n; i++)
		redisAppendCommand(c, "ENQUEUE t%d", i);
	while (!done)
		if (redisBufferWrite(c, &done) != REDIS_OK)
			fail_at(file, line, "writing the pipeline: %s",
			        c->errstr);
	/* Until csqd has run them all: INFO counts every command, its own
	 * calls too (k of them after the first). A fixed 300 ms was not
	 * always enough: 1,408 and 1,536 of 2,000 had run on the Redis
	 * engine at a load average of 11 to 14. */
	for (k = 1, deadline = now_ms() + SIGTERM_RUN_MS;
	     late && now_ms() < deadline &&
	     info_field_at(file, line, m, "total_commands_processed") - before -
	             k <
	         n;
	     k++)
		sleep_ms(10);
	if (m != NULL)
		redisFree(m);
	kill(d->pid, SIGTERM);
	if (late) {
		sleep_ms(100);
		redisAppendCommand(c, "PING");
		for (done = 0; !done;)
			if (redisBufferWrite(c, &done) != REDIS_OK)
				break;
	}
	while (redisGetReply(c, (void **)&r) == REDIS_OK) {
		if (field_int_at(file, line, r, "position") != acked + 1)
			fail_at(file, line, "reply %d out of order", acked);
		freeReplyObject(r);
		acked++;
	}
	if (c->err != REDIS_ERR_EOF)
		fail_at(file, line, "after %d replies: %s", acked, c->errstr);
	redisFree(c);
	print_message("SIGTERM: %d of %d pipelined ENQUEUEs answered\n", acked,
	              n);
	/* d stays the caller's to stop (csqd_stop then returns the status
	 * seen here): freeing it before a failure left the caller's teardown
	 * holding a freed daemon. */
	if (csqd_wait_exit(d, 10000) != 0) {
		csqd_dump_log(d);
		fail_at(file, line, "csqd did not exit with 0 after SIGTERM");
	}
	return acked;
}

long long
info_field_at(const char *file, int line, redisContext *c, const char *name)
{
	redisReply *r = cmd_at(file, line, c, "INFO");
	char key[64], *v;
	long long n = -1;

	snprintf(key, sizeof(key), "\r\n%s:", name);
	if (r->type == REDIS_REPLY_STRING && (v = strstr(r->str, key)) != NULL)
		n = atoll(v + strlen(key));
	freeReplyObject(r);
	return n;
}

const char *
field_str_at(const char *file, int line, const redisReply *r, const char *name)
{
	char got[8192];
	redisReply *v;

	v = reply_field(r, name);
	if (v != NULL && v->type == REDIS_REPLY_STRING)
		return v->str;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "no bulk field '%s' in %s", name, got);
	return NULL;
}

static void
harness_lower(char *dst, const char *src, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i] != '\0'; i++)
		dst[i] = tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

void
subscribe_at(const char *file, int line, redisContext *c, const char *verb,
             int already, int n, const char **names)
{
	const char *argv[64];
	char kind[32], expect[512];
	redisReply *r;
	int i;

	argv[0] = verb;
	for (i = 0; i < n && i < 63; i++)
		argv[i + 1] = names[i];
	redisAppendCommandArgv(c, n + 1, argv, NULL);
	harness_lower(kind, verb, sizeof(kind));
	for (i = 0; i < n; i++) {
		r = get_reply_at(file, line, c);
		snprintf(expect, sizeof(expect), "['%s','%s',:%d]", kind,
		         names[i], already + i + 1);
		assert_repr_at(file, line, r, expect);
		freeReplyObject(r);
	}
}

static void
harness_copy(char *dst, size_t len, const redisReply *r)
{
	snprintf(dst, len, "%s", r->type == REDIS_REPLY_STRING ? r->str : "?");
}

void
msgs_collect_at(const char *file, int line, redisContext *c, struct msgs *m)
{
	char got[8192];
	redisReply *r;
	struct msg *x;

	m->n = 0;
	redisAppendCommand(c, "PING");
	for (;;) {
		r = get_reply_at(file, line, c);
		if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
		    r->element[0]->type == REDIS_REPLY_STRING) {
			if (strcmp(r->element[0]->str, "pong") == 0) {
				freeReplyObject(r);
				return;
			}
			if (m->n < MSGS_MAX &&
			    strcmp(r->element[0]->str, "message") == 0 &&
			    r->elements == 3) {
				x = &m->m[m->n++];
				snprintf(x->kind, sizeof(x->kind), "message");
				x->pattern[0] = '\0';
				harness_copy(x->channel, sizeof(x->channel),
				             r->element[1]);
				x->payload = strdup(r->element[2]->str);
				freeReplyObject(r);
				continue;
			}
			if (m->n < MSGS_MAX &&
			    strcmp(r->element[0]->str, "pmessage") == 0 &&
			    r->elements == 4) {
				x = &m->m[m->n++];
				snprintf(x->kind, sizeof(x->kind), "pmessage");
				harness_copy(x->pattern, sizeof(x->pattern),
				             r->element[1]);
				harness_copy(x->channel, sizeof(x->channel),
				             r->element[2]);
				x->payload = strdup(r->element[3]->str);
				freeReplyObject(r);
				continue;
			}
		}
		reply_repr(r, got, sizeof(got));
		freeReplyObject(r);
		fail_at(file, line, "unexpected push in subscribe mode: %s",
		        got);
	}
}

void
msgs_free(struct msgs *m)
{
	int i;

	for (i = 0; i < m->n; i++)
		free(m->m[i].payload);
	m->n = 0;
}

int
msgs_find(const struct msgs *m, int from, const char *event)
{
	char v[256], want[256];
	int i;

	snprintf(want, sizeof(want), "\"%s\"", event);
	for (i = from; i < m->n; i++) {
		if (json_value(m->m[i].payload, "event", v, sizeof(v)) == 0 &&
		    strcmp(v, want) == 0)
			return i;
	}
	return -1;
}

/* Space-separated event names of the messages, in order. */
void
msgs_events(const struct msgs *m, char *out, size_t len)
{
	char v[128];
	int i;

	out[0] = '\0';
	for (i = 0; i < m->n; i++) {
		if (json_value(m->m[i].payload, "event", v, sizeof(v)) != 0)
			snprintf(v, sizeof(v), "?");
		if (i > 0)
			strncat(out, " ", len - strlen(out) - 1);
		strncat(out, v, len - strlen(out) - 1);
	}
}

void
msgs_dump(const struct msgs *m)
{
	int i;

	for (i = 0; i < m->n; i++)
		fprintf(stderr, "  %s %s %s %s\n", m->m[i].kind,
		        m->m[i].pattern, m->m[i].channel, m->m[i].payload);
}

/*
 * Runs a command on c, then collects what sub received and checks the
 * sequence of event names (JSON-quoted, space-separated).
 */
void
expect_events_at(const char *file, int line, redisContext *c, redisContext *sub,
                 struct msgs *m, const char *events, const char *cmd)
{
	char got[4096];
	redisReply *r;

	if (cmd != NULL) {
		r = cmd_at(file, line, c, cmd);
		if (r->type == REDIS_REPLY_ERROR) {
			reply_repr(r, got, sizeof(got));
			freeReplyObject(r);
			fail_at(file, line, "%s: %s", cmd, got);
		}
		freeReplyObject(r);
	}
	msgs_free(m);
	msgs_collect_at(file, line, sub, m);
	msgs_events(m, got, sizeof(got));
	if (strcmp(got, events) != 0) {
		msgs_dump(m);
		fail_at(file, line,
		        "after '%s':\n  expected events %s\n  got %s",
		        cmd != NULL ? cmd : "", events, got);
	}
}
/* Skips a JSON string starting at its opening quote; returns past it. */
static const char *
json_skip_string(const char *p)
{
	for (p++; *p != '\0' && *p != '"'; p++)
		if (*p == '\\' && p[1] != '\0')
			p++;
	return *p == '"' ? p + 1 : p;
}

/* Skips one JSON value (string, array, object or scalar). */
static const char *
json_skip_value(const char *p)
{
	int depth = 0;

	if (*p == '"')
		return json_skip_string(p);
	if (*p == '[' || *p == '{') {
		do {
			if (*p == '"') {
				p = json_skip_string(p);
				continue;
			}
			if (*p == '[' || *p == '{')
				depth++;
			else if (*p == ']' || *p == '}')
				depth--;
			p++;
		} while (*p != '\0' && depth > 0);
		return p;
	}
	while (*p != '\0' && *p != ',' && *p != '}' && *p != ']' &&
	       !isspace((unsigned char)*p))
		p++;
	return p;
}

int
json_value(const char *json, const char *key, char *out, size_t outlen)
{
	const char *p = json, *k, *v, *e;
	size_t klen = strlen(key), n;

	while (isspace((unsigned char)*p))
		p++;
	if (*p != '{')
		return -1;
	p++;
	for (;;) {
		while (isspace((unsigned char)*p) || *p == ',')
			p++;
		if (*p != '"')
			return -1;
		k = p + 1;
		p = json_skip_string(p);
		n = (size_t)(p - k) - 1;
		while (isspace((unsigned char)*p))
			p++;
		if (*p != ':')
			return -1;
		p++;
		while (isspace((unsigned char)*p))
			p++;
		v = p;
		e = json_skip_value(p);
		if (n == klen && memcmp(k, key, klen) == 0) {
			n = (size_t)(e - v);
			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		p = e;
		if (*p == '\0' || p == v)
			return -1;
	}
}

void
assert_json_str_at(const char *file, int line, const char *json,
                   const char *key, const char *value)
{
	char v[1024], want[1024];

	snprintf(want, sizeof(want), "\"%s\"", value);
	if (json_value(json, key, v, sizeof(v)) != 0)
		fail_at(file, line, "no key \"%s\" in %s", key, json);
	if (strcmp(v, want) != 0)
		fail_at(file, line, "key \"%s\": expected %s, got %s in %s",
		        key, want, v, json);
}

long long
json_int_at(const char *file, int line, const char *json, const char *key)
{
	char v[1024], *end;
	long long n;

	if (json_value(json, key, v, sizeof(v)) != 0)
		fail_at(file, line, "no key \"%s\" in %s", key, json);
	errno = 0;
	n = strtoll(v, &end, 10);
	if (v[0] == '\0' || *end != '\0' || errno != 0)
		fail_at(file, line,
		        "key \"%s\": %s is not a JSON integer in %s", key, v,
		        json);
	return n;
}

void
assert_json_int_at(const char *file, int line, const char *json,
                   const char *key, long long value)
{
	long long n;

	n = json_int_at(file, line, json, key);
	if (n != value)
		fail_at(file, line, "key \"%s\": expected %lld, got %lld in %s",
		        key, value, n, json);
}

void
assert_json_has_at(const char *file, int line, const char *json,
                   const char *key)
{
	char v[1024];

	if (json_value(json, key, v, sizeof(v)) != 0)
		fail_at(file, line, "no key \"%s\" in %s", key, json);
}

void
assert_json_lacks_at(const char *file, int line, const char *json,
                     const char *key)
{
	char v[1024];

	if (json_value(json, key, v, sizeof(v)) == 0)
		fail_at(file, line, "unexpected key \"%s\" in %s", key, json);
}

/* The loss storm of harness.h. */

static void
storm_stat_is(const char *file, int line, const redisReply *r, const char *name,
              long long want)
{
	long long got = field_int_at(file, line, r, name);

	if (got != want)
		fail_at(file, line, "STATS %s: %lld, expected %lld", name, got,
		        want);
}

void
storm_begin_at(const char *file, int line, redisContext *c)
{
	redisReply *r;
	int i, n = 2 * (STORM_A + STORM_B) + 1;
	int64_t t0 = now_ms();

	for (i = 0; i < STORM_A; i++)
		redisAppendCommand(c,
		                   "HEARTBEAT a%04d CAPACITY 2 QUEUES q TTL %d",
		                   i, STORM_TTL_S);
	for (i = 0; i < STORM_B; i++)
		redisAppendCommand(c,
		                   "HEARTBEAT b%03d CAPACITY 2 QUEUES q TTL %d",
		                   i, STORM_TTL_S);
	for (i = 0; i < STORM_A; i++)
		redisAppendCommand(c, "ENQUEUE u%04d QUEUE q", i);
	for (i = 0; i < STORM_B; i++)
		redisAppendCommand(c, "ENQUEUE v%03d QUEUE q TIER 2", i);
	redisAppendCommand(c, "HEARTBEAT L CAPACITY 3 QUEUES q TTL 60");
	while (n-- > 0) {
		r = get_reply_at(file, line, c);
		if (r->type == REDIS_REPLY_ERROR)
			fail_at(file, line, "storm setup: %s", r->str);
		freeReplyObject(r);
	}
	/* Every user in a room of its own, each a servicer's first, and
	 * nobody lost yet. */
	r = cmd_at(file, line, c, "STATS");
	print_message("storm: set up in %lld ms (TTL %d s)\n",
	              (long long)(now_ms() - t0), STORM_TTL_S);
	storm_stat_is(file, line, r, "servicers", STORM_A + STORM_B + 1);
	storm_stat_is(file, line, r, "rooms_busy", STORM_A + STORM_B);
	storm_stat_is(file, line, r, "waiting", 0);
	freeReplyObject(r);
	check_at(file, line, c,
	         "['state','assigned','queue','q','room','b000/0','servicer',"
	         "'b000']",
	         "ENQUEUE v000");
}

void
storm_end_at(const char *file, int line, redisContext *c, int extra)
{
	redisReply *r;
	int64_t t0 = now_ms();

	for (;;) {
		r = cmd_at(file, line, c, "STATS");
		if (field_int_at(file, line, r, "servicers") == 1)
			break;
		freeReplyObject(r);
		if (now_ms() - t0 > 10000)
			fail_at(file, line,
			        "the servicers were not declared lost");
		sleep_ms(100);
	}
	storm_stat_is(file, line, r, "servicers_lost_total", STORM_A + STORM_B);
	storm_stat_is(file, line, r, "requeued_total", STORM_A + STORM_B);
	storm_stat_is(file, line, r, "matched_total", STORM_A + STORM_B + 3);
	storm_stat_is(file, line, r, "waiting", STORM_A + STORM_B - 3 + extra);
	storm_stat_is(file, line, r, "rooms_busy", 3);
	freeReplyObject(r);
	check_at(file, line, c,
	         "['state','assigned','queue','q','room','L/0','servicer','L']",
	         "ENQUEUE v000");
	check_at(file, line, c,
	         "['state','assigned','queue','q','room','L/1','servicer','L']",
	         "ENQUEUE v001");
	check_at(file, line, c,
	         "['state','assigned','queue','q','room','L/2','servicer','L']",
	         "ENQUEUE v002");
	r = cmd_at(file, line, c, "WHERE v003");
	if (field_int_at(file, line, r, "position") != 1 + extra)
		fail_at(file, line, "v003 is not at %d", 1 + extra);
	freeReplyObject(r);
	r = cmd_at(file, line, c, "WHERE u0000");
	if (field_int_at(file, line, r, "position") != 98 + extra)
		fail_at(file, line, "u0000 is not at %d", 98 + extra);
	freeReplyObject(r);
}
