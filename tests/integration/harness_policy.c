/*
 * The helpers of policy_harness.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_harness.h"

int
policy_setup(void **state)
{
	return csqd_fx_setup(state, POLICIES);
}

/* Polls WHERE user until field is value; fails after WAIT_MS. */
void
where_until_at(const char *file, int line, redisContext *c, const char *user,
               const char *field, const char *value)
{
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *r;
	redisReply *f;
	int ok;

	for (;;) {
		r = cmd_at(file, line, c, "WHERE %s", user);
		f = reply_field(r, field);
		ok = f != NULL && f->type == REDIS_REPLY_STRING &&
		     strcmp(f->str, value) == 0;
		freeReplyObject(r);
		if (ok)
			return;
		if (now_ms() > deadline)
			fail_at(file, line, "WHERE %s: %s not %s within %d ms",
			        user, field, value, WAIT_MS);
		sleep_ms(20);
	}
}

/* The same for an integer field. */
void
where_until_int_at(const char *file, int line, redisContext *c,
                   const char *user, const char *field, long long value)
{
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *r, *f;
	int ok;

	for (;;) {
		r = cmd_at(file, line, c, "WHERE %s", user);
		f = reply_field(r, field);
		ok = f != NULL && f->type == REDIS_REPLY_INTEGER &&
		     f->integer == value;
		freeReplyObject(r);
		if (ok)
			return;
		if (now_ms() > deadline)
			fail_at(file, line,
			        "WHERE %s: %s not %lld within %d ms", user,
			        field, value, WAIT_MS);
		sleep_ms(20);
	}
}

/* A second connection subscribed to channel. */
redisContext *
subscriber(struct csqd *d, const char *channel)
{
	redisContext *sub = csqd_connect(d);
	const char *names[] = {channel};

	SUBSCRIBE(sub, 1, names);
	return sub;
}

/* The payload of the first message of m whose event is ev from user. */
const char *
event_of(const struct msgs *m, const char *ev, const char *user)
{
	char v[80], want[80];
	int i;

	snprintf(want, sizeof(want), "\"%s\"", user);
	for (i = 0; (i = msgs_find(m, i, ev)) >= 0; i++)
		if (json_value(m->m[i].payload, "user", v, sizeof(v)) == 0 &&
		    strcmp(v, want) == 0)
			return m->m[i].payload;
	return NULL;
}

/* Polls QSTATS queue until its service_level is level. */
void
level_until_at(const char *file, int line, redisContext *c, const char *queue,
               long long level)
{
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *r;
	long long v;

	for (;;) {
		r = cmd_at(file, line, c, "QSTATS %s", queue);
		v = field_int_at(file, line, r, "service_level");
		freeReplyObject(r);
		if (v == level)
			return;
		if (now_ms() > deadline)
			fail_at(file, line, "QSTATS %s: service_level %lld",
			        queue, v);
		sleep_ms(20);
	}
}

/* A configuration file of text in a temporary directory; its path in out. */
void
conf_file(char *out, size_t len, const char *text)
{
	char dir[] = "/tmp/csq-policies-XXXXXX";

	if (mkdtemp(dir) == NULL)
		fail_msg("mkdtemp");
	snprintf(out, len, "%s/csqd.conf", dir);
	write_file(out, text);
}
