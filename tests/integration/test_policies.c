/*
 * Queue policies, preferred servicers, wait estimates and per-queue
 * numbers (protocol-v2 sections 4, 5, 6) through a real csqd over TCP:
 * the `queues` configuration (csqd -n, SIGHUP, a restart with the
 * journal), overflow and aging on their deadlines, PREFER in ENQUEUE,
 * eta_ms in ENQUEUE and WHERE, QSTATS and QUEUES. Timed rules run on the
 * wall clock with their shortest settings (1 s); each wait is a poll with
 * a bound, never a fixed sleep that a slow machine could outrun.
 */
#include <sys/stat.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define FULL    "-FULL queue is at its maximum length"
#define RANGE   "-ERR value is not an integer or out of range"
#define SYNTAX  "-ERR syntax error"
#define WAIT_MS 5000

/* The fixture's policies: an overflow, an aging line, a short line, and
 * one that ages before it overflows. */
#define POLICIES                                                               \
	"queues = (\n"                                                         \
	"  { name = \"vip\"; overflow_after = 1; overflow_to = \"general\";\n" \
	"    service_level = 5; },\n"                                          \
	"  { name = \"general\"; aging_every = 1; aging_max_tier = 2; },\n"    \
	"  { name = \"small\"; max_length = 2; strategy = \"least_busy\"; "    \
	"},\n"                                                                 \
	"  { name = \"ag\"; aging_every = 2; aging_max_tier = 3;\n"            \
	"    overflow_after = 3; overflow_to = \"general\"; }\n"               \
	");\n"

static int
setup(void **state)
{
	return csqd_fx_setup(state, POLICIES);
}

/* Polls WHERE user until field is value; fails after WAIT_MS. */
static void
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
#define WHERE_UNTIL(c, u, f, v) where_until_at(__FILE__, __LINE__, c, u, f, v)

/* The same for an integer field. */
static void
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
#define WHERE_UNTIL_INT(c, u, f, v)                                            \
	where_until_int_at(__FILE__, __LINE__, c, u, f, v)

/* A second connection subscribed to channel. */
static redisContext *
subscriber(struct csqd *d, const char *channel)
{
	redisContext *sub = csqd_connect(d);
	const char *names[] = {channel};

	SUBSCRIBE(sub, 1, names);
	return sub;
}

/* The payload of the first message of m whose event is ev from user. */
static const char *
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

/*
 * Overflow: a user that waited overflow_after in vip moves to general,
 * keeping its tier; event overflowed to both queues, its own channel and
 * events; vip counts it. A re-ENQUEUE naming vip does not pull it back.
 */
static void
overflow_moves(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	redisContext *qsub = subscriber(fx->d, "queue:vip");
	struct msgs m = {0}, mq = {0};
	const char *ev;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES general");
	CHECK(fx->c,
	      "['state','assigned','queue','general','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE g0 QUEUE general");
	/* Nobody serves vip: no estimate. */
	CHECK(fx->c,
	      "['state','waiting','queue','vip','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE v1 QUEUE vip TIER 1");
	WHERE_UNTIL(fx->c, "v1", "queue", "general");
	r = CMD(fx->c, "WHERE v1");
	assert_int_equal(FIELD_INT(r, "tier"), 1);
	assert_true(FIELD_INT(r, "waited_ms") >= 1000);
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "overflowed", "v1");
	if (ev == NULL)
		fail_msg("no overflowed event for v1");
	assert_json_str(ev, "from_queue", "vip");
	assert_json_str(ev, "queue", "general");
	assert_json_int(ev, "tier", 1);
	assert_json_int(ev, "position", 1);
	assert_json_has(ev, "id");
	MSGS_COLLECT(qsub, &mq);
	assert_non_null(event_of(&mq, "overflowed", "v1"));
	r = CMD(fx->c, "QSTATS vip");
	assert_int_equal(FIELD_INT(r, "overflowed_total"), 1);
	assert_int_equal(FIELD_INT(r, "waiting"), 0);
	freeReplyObject(r);
	/* A refreshing frontend names vip again: v1 stays in general. */
	r = CMD(fx->c, "ENQUEUE v1 QUEUE vip");
	assert_string_equal(FIELD_STR(r, "queue"), "general");
	freeReplyObject(r);
	/* The room frees: v1 takes it. */
	CHECK(fx->c, ":1", "RELEASE s1/0");
	WHERE_UNTIL(fx->c, "v1", "state", "assigned");
	msgs_free(&m);
	msgs_free(&mq);
	redisFree(sub);
	redisFree(qsub);
}

/* Overflow into a queue with a free room ends in matched, from_queue vip,
 * without an overflowed event. */
static void
overflow_into_free_room(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	struct msgs m = {0};
	const char *ev;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES general");
	CHECK(fx->c,
	      "['state','waiting','queue','vip','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE v1 QUEUE vip");
	WHERE_UNTIL(fx->c, "v1", "state", "assigned");
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "matched", "v1");
	if (ev == NULL)
		fail_msg("no matched event for v1");
	assert_json_str(ev, "from_queue", "vip");
	assert_json_str(ev, "queue", "general");
	assert_json_str(ev, "servicer", "s1");
	assert_null(event_of(&m, "overflowed", "v1"));
	msgs_free(&m);
	redisFree(sub);
}

/*
 * Aging in general: one tier per second waited, up to 2; event rescored
 * with reason aging. A user whose own tier is higher keeps it.
 */
static void
aging(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "queue:general");
	struct msgs m = {0};
	const char *ev;
	int i, n;

	CHECK(fx->c,
	      "['state','waiting','queue','general','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE a1 QUEUE general");
	CHECK(fx->c,
	      "['state','waiting','queue','general','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE a2 QUEUE general TIER 5");
	WHERE_UNTIL_INT(fx->c, "a1", "tier", 1);
	WHERE_UNTIL_INT(fx->c, "a1", "tier", 2);
	/* A second more: the cap holds. */
	sleep_ms(1300);
	WHERE_UNTIL_INT(fx->c, "a1", "tier", 2);
	WHERE_UNTIL_INT(fx->c, "a2", "tier", 5);
	MSGS_COLLECT(sub, &m);
	for (i = 0, n = 0; (i = msgs_find(&m, i, "rescored")) >= 0; i++, n++) {
		ev = m.m[i].payload;
		assert_json_str(ev, "user", "a1");
		assert_json_str(ev, "reason", "aging");
		assert_json_int(ev, "tier", n + 1);
	}
	assert_int_equal(n, 2);
	/* A v1 rescore names its reason too. */
	CHECK(fx->c,
	      "['state','waiting','queue','general','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE a1 QUEUE general TIER 9");
	msgs_free(&m);
	MSGS_COLLECT(sub, &m);
	i = msgs_find(&m, 0, "rescored");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "reason", "enqueue");
	msgs_free(&m);
	redisFree(sub);
}

/* max_length of a policy: small takes 2, default goes on. */
static void
max_length(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "['state','waiting','queue','small','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE m1 QUEUE small");
	CHECK(fx->c,
	      "['state','waiting','queue','small','position',:2,"
	      "'eta_ms',:-1]",
	      "ENQUEUE m2 QUEUE small");
	CHECK(fx->c, FULL, "ENQUEUE m3 QUEUE small");
	CHECK(fx->c, "['state','none']", "WHERE m3");
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE m3");
}

/*
 * QSTATS: the fields of section 6 in order (then the abandons by
 * reason), a queue's service level from its policy, the share of the
 * outcomes within it; QUEUES lists the queues with a policy.
 */
static void
qstats(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['queue','vip','waiting',:0,'oldest_wait_ms',:0,'eta_ms',:-1,"
	      "'servicers',:0,'free_rooms',:0,'matched_total',:0,"
	      "'abandoned_total',:0,'overflowed_total',:0,'avg_wait_ms',:0,"
	      "'service_level',:5,'service_level_pct',:-1,"
	      "'abandoned_leave_total',:0,'abandoned_timeout_total',:0]",
	      "QSTATS vip");
	/* A queue without a policy nor anyone in it: the defaults. */
	CHECK(fx->c,
	      "['queue','nowhere','waiting',:0,'oldest_wait_ms',:0,"
	      "'eta_ms',:-1,'servicers',:0,'free_rooms',:0,'matched_total',:0,"
	      "'abandoned_total',:0,'overflowed_total',:0,'avg_wait_ms',:0,"
	      "'service_level',:20,'service_level_pct',:-1,"
	      "'abandoned_leave_total',:0,'abandoned_timeout_total',:0]",
	      "QSTATS nowhere");
	CHECK(fx->c, "['ag','default','general','small','vip']", "QUEUES");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:2,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES vip CAPACITY 2");
	/* A free room: a new arrival is matched at once. */
	r = CMD(fx->c, "QSTATS vip");
	assert_int_equal(FIELD_INT(r, "servicers"), 1);
	assert_int_equal(FIELD_INT(r, "free_rooms"), 2);
	assert_int_equal(FIELD_INT(r, "eta_ms"), 0);
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','assigned','queue','vip','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE x1 QUEUE vip");
	CHECK(fx->c,
	      "['state','assigned','queue','vip','room','s1/1',"
	      "'servicer','s1']",
	      "ENQUEUE x2 QUEUE vip");
	CHECK(fx->c,
	      "['state','waiting','queue','vip','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE y1 QUEUE vip");
	CHECK(fx->c,
	      "['state','waiting','queue','vip','position',:2,"
	      "'eta_ms',:-1]",
	      "ENQUEUE y2 QUEUE vip");
	sleep_ms(100);
	r = CMD(fx->c, "QSTATS vip");
	assert_int_equal(FIELD_INT(r, "waiting"), 2);
	assert_true(FIELD_INT(r, "oldest_wait_ms") >= 100);
	assert_true(FIELD_INT(r, "oldest_wait_ms") < 1000);
	assert_int_equal(FIELD_INT(r, "free_rooms"), 0);
	assert_int_equal(FIELD_INT(r, "matched_total"), 2);
	/* Matched at once, well within vip's 5 s. */
	assert_int_equal(FIELD_INT(r, "service_level_pct"), 100);
	freeReplyObject(r);
	CHECK(fx->c, ":1", "LEAVE y1");
	r = CMD(fx->c, "QSTATS vip");
	assert_int_equal(FIELD_INT(r, "waiting"), 1);
	assert_int_equal(FIELD_INT(r, "abandoned_total"), 1);
	assert_int_equal(FIELD_INT(r, "abandoned_leave_total"), 1);
	assert_int_equal(FIELD_INT(r, "abandoned_timeout_total"), 0);
	/* Two matched within, one abandoned: 2 of 3. */
	assert_int_equal(FIELD_INT(r, "service_level_pct"), 66);
	freeReplyObject(r);
	CHECK(fx->c, "-ERR invalid queue id", "QSTATS %s", "a b");
	CHECK(fx->c, "-ERR wrong number of arguments for 'qstats' command",
	      "QSTATS");
	CHECK(fx->c, "-ERR wrong number of arguments for 'qstats' command",
	      "QSTATS a b");
}

/*
 * eta_ms: -1 before any conversation of the queue ended; then, with
 * every room busy, about the time a conversation lasts per user ahead,
 * and 0 in QSTATS while a room is free. Nobody gives up here (a LEAVE
 * would teach the estimate that those ahead leave the line too).
 */
#define HOLD_MS 300

static void
eta(void **state)
{
	struct csqd_fx *fx = *state;
	long long e1, e2, e3;
	redisReply *r;
	int i;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES e");
	CHECK(fx->c,
	      "['state','assigned','queue','e','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE h0 QUEUE e");
	r = CMD(fx->c, "QSTATS e");
	assert_int_equal(FIELD_INT(r, "eta_ms"), -1);
	freeReplyObject(r);
	/* Conversations of HOLD_MS, one after another. */
	sleep_ms(HOLD_MS);
	CHECK(fx->c, ":1", "RELEASE s1/0");
	for (i = 1; i <= 3; i++) {
		r = CMD(fx->c, "ENQUEUE h%d QUEUE e", i);
		assert_string_equal(FIELD_STR(r, "state"), "assigned");
		freeReplyObject(r);
		sleep_ms(HOLD_MS);
		CHECK(fx->c, ":1", "RELEASE s1/0");
	}
	r = CMD(fx->c, "QSTATS e");
	assert_int_equal(FIELD_INT(r, "eta_ms"), 0);
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','assigned','queue','e','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE busy QUEUE e");
	r = CMD(fx->c, "ENQUEUE w1 QUEUE e");
	e1 = FIELD_INT(r, "eta_ms");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE w2 QUEUE e");
	e2 = FIELD_INT(r, "eta_ms");
	freeReplyObject(r);
	r = CMD(fx->c, "QSTATS e");
	e3 = FIELD_INT(r, "eta_ms");
	freeReplyObject(r);
	/* One room, conversations of HOLD_MS (and a little more, under a
	 * loaded machine): the first in line waits about one, the second
	 * two, a new arrival three. */
	if (e1 < HOLD_MS - 50 || e1 > 4 * HOLD_MS || e2 < e1 * 3 / 2 ||
	    e2 > e1 * 5 / 2 || e3 < e1 * 5 / 2 || e3 > e1 * 7 / 2)
		fail_msg("eta_ms %lld, %lld, %lld for conversations of %d ms",
		         e1, e2, e3, HOLD_MS);
	r = CMD(fx->c, "WHERE w2");
	assert_true(FIELD_INT(r, "eta_ms") <= e2);
	assert_true(FIELD_INT(r, "eta_ms") >= e1);
	freeReplyObject(r);
	/* Nobody serves e any more: no estimate. */
	CHECK(fx->c, ":1", "LOGOUT s1");
	r = CMD(fx->c, "WHERE w2");
	assert_int_equal(FIELD_INT(r, "eta_ms"), -1);
	freeReplyObject(r);
}

/*
 * PREFER: a user held for s2 while s2 is busy; s1, free, passes it over
 * for a later user; WHERE shows prefer and prefer_ms; s2's room frees
 * and the user takes it.
 */
static void
prefer_waits_for_servicer(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;
	long long ms;

	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE busy QUEUE q");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	r = CMD(fx->c, "ENQUEUE p1 QUEUE q PREFER s2 60");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	ms = FIELD_INT(r, "prefer_ms");
	assert_true(ms > 55000 && ms <= 60000);
	freeReplyObject(r);
	/* s1 is free and passes p1 over: the next user gets it. */
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u2 QUEUE q");
	r = CMD(fx->c, "WHERE p1");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	assert_true(FIELD_INT(r, "prefer_ms") <= ms);
	freeReplyObject(r);
	/* A re-ENQUEUE without PREFER keeps the window. */
	r = CMD(fx->c, "ENQUEUE p1 QUEUE q");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	freeReplyObject(r);
	CHECK(fx->c, ":1", "RELEASE s2/0");
	r = CMD(fx->c, "WHERE p1");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	assert_string_equal(FIELD_STR(r, "servicer"), "s2");
	assert_null(reply_field(r, "prefer"));
	freeReplyObject(r);
}

/* The window runs out: prefer_ended reason timeout, then matched like
 * any other; a LOGOUT of the servicer ends another at once. */
static void
prefer_ends(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	struct msgs m = {0};
	const char *ev;

	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE busy QUEUE q");
	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(fx->c,
	      "['servicer','s3','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s3 QUEUES other");
	CHECK(fx->c,
	      "['state','assigned','queue','other','room','s3/0',"
	      "'servicer','s3']",
	      "ENQUEUE busy3 QUEUE other");
	CHECK(fx->c, ":?", "QLEN q");
	ev = NULL;
	{
		redisReply *r = CMD(fx->c, "ENQUEUE p1 QUEUE q PREFER s2 1");
		assert_string_equal(FIELD_STR(r, "prefer"), "s2");
		freeReplyObject(r);
	}
	WHERE_UNTIL(fx->c, "p1", "state", "assigned");
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "prefer_ended", "p1");
	if (ev == NULL)
		fail_msg("no prefer_ended for p1");
	assert_json_str(ev, "servicer", "s2");
	assert_json_str(ev, "queue", "q");
	assert_json_str(ev, "reason", "timeout");
	ev = event_of(&m, "matched", "p1");
	assert_non_null(ev);
	assert_json_str(ev, "servicer", "s1");
	msgs_free(&m);
	/* s1 is busy now; p2 waits for s3, which does not serve q: no
	 * window, no event, p2 waits like anyone. */
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,"
	      "'eta_ms',:?]",
	      "ENQUEUE p2 QUEUE q PREFER s3 60");
	/* p3 waits for s2; s2 logs out: the window ends at once. */
	{
		redisReply *r = CMD(fx->c, "ENQUEUE p3 QUEUE q PREFER s2 60");
		assert_string_equal(FIELD_STR(r, "prefer"), "s2");
		freeReplyObject(r);
	}
	CHECK(fx->c, ":1", "LOGOUT s2");
	MSGS_COLLECT(sub, &m);
	assert_null(event_of(&m, "prefer_ended", "p2"));
	ev = event_of(&m, "prefer_ended", "p3");
	if (ev == NULL)
		fail_msg("no prefer_ended for p3");
	assert_json_str(ev, "reason", "logout");
	msgs_free(&m);
	{
		redisReply *r = CMD(fx->c, "WHERE p3");
		assert_null(reply_field(r, "prefer"));
		freeReplyObject(r);
	}
	/* PREFER's errors change nothing. */
	CHECK(fx->c, SYNTAX, "ENQUEUE p4 QUEUE q PREFER s1");
	CHECK(fx->c, RANGE, "ENQUEUE p4 QUEUE q PREFER s1 0");
	CHECK(fx->c, RANGE, "ENQUEUE p4 QUEUE q PREFER s1 3601");
	CHECK(fx->c, RANGE, "ENQUEUE p4 QUEUE q PREFER s1 x");
	CHECK(fx->c, "-ERR invalid servicer id", "ENQUEUE p4 PREFER %s 5",
	      "a b");
	CHECK(fx->c, "['state','none']", "WHERE p4");
	redisFree(sub);
}

/* A PREFER naming a free servicer that serves the queue: matched to it
 * at once, even when another free one would come first. */
static void
prefer_free_servicer(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE p1 QUEUE q PREFER s2 30");
	/* One not logged in: no window, the longest idle takes it. */
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE p2 QUEUE q PREFER nobody 30");
}

/*
 * TRANSFER with PREFER: s1 hands its conversation to billing for s2, who
 * is busy; s3, free and serving billing, passes the user over; s2's room
 * frees and the user takes it.
 */
static void
transfer_prefer(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE u QUEUE q");
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES billing");
	CHECK(fx->c,
	      "['state','assigned','queue','billing','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE busy QUEUE billing");
	CHECK(fx->c,
	      "['servicer','s3','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s3 QUEUES billing");
	r = CMD(fx->c, "TRANSFER s1/0 billing PREFER s2 120");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "queue"), "billing");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	assert_true(FIELD_INT(r, "prefer_ms") > 110000);
	freeReplyObject(r);
	CHECK(fx->c,
	      "['state','assigned','queue','billing','room','s3/0',"
	      "'servicer','s3']",
	      "ENQUEUE other QUEUE billing");
	CHECK(fx->c, ":1", "RELEASE s2/0");
	r = CMD(fx->c, "WHERE u");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	assert_string_equal(FIELD_STR(r, "servicer"), "s2");
	freeReplyObject(r);
}

/*
 * The window's servicer is lost (its TTL runs out): prefer_ended with
 * reason lost; the user waits in its queue like any other. Another's
 * HEARTBEAT that drops the queue: reason queues.
 */
static void
prefer_lost_and_dropped(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	struct msgs m = {0};
	const char *ev;
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:1]",
	      "HEARTBEAT s2 QUEUES q TTL 1");
	CHECK(fx->c,
	      "['servicer','s3','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s3 QUEUES q");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s2/0',"
	      "'servicer','s2']",
	      "ENQUEUE b2 QUEUE q PREFER s2 60");
	CHECK(fx->c,
	      "['state','assigned','queue','q','room','s3/0',"
	      "'servicer','s3']",
	      "ENQUEUE b3 QUEUE q");
	r = CMD(fx->c, "ENQUEUE p2 QUEUE q PREFER s2 60");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE p3 QUEUE q PREFER s3 60");
	assert_string_equal(FIELD_STR(r, "prefer"), "s3");
	freeReplyObject(r);
	/* s2 stops its heartbeats: lost after 1 s. */
	WHERE_UNTIL(fx->c, "b2", "state", "waiting");
	r = CMD(fx->c, "WHERE p2");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_null(reply_field(r, "prefer"));
	freeReplyObject(r);
	/* s3 keeps serving, but no longer q. */
	CHECK(fx->c,
	      "['servicer','s3','status','ready','capacity',:1,"
	      "'active',:1,'ttl',:30]",
	      "HEARTBEAT s3 QUEUES other");
	r = CMD(fx->c, "WHERE p3");
	assert_null(reply_field(r, "prefer"));
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "prefer_ended", "p2");
	if (ev == NULL)
		fail_msg("no prefer_ended for p2");
	assert_json_str(ev, "reason", "lost");
	assert_json_str(ev, "servicer", "s2");
	ev = event_of(&m, "prefer_ended", "p3");
	if (ev == NULL)
		fail_msg("no prefer_ended for p3");
	assert_json_str(ev, "reason", "queues");
	msgs_free(&m);
	redisFree(sub);
}

/*
 * A re-ENQUEUE during a window: PREFER again replaces it; PREFER of a
 * servicer that cannot hold it closes it, without an event.
 */
static void
prefer_reenqueue(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "events");
	struct msgs m = {0};
	redisReply *r;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s2 QUEUES q");
	freeReplyObject(CMD(fx->c, "ENQUEUE b1 QUEUE q"));
	freeReplyObject(CMD(fx->c, "ENQUEUE b2 QUEUE q"));
	r = CMD(fx->c, "ENQUEUE p QUEUE q PREFER s1 60");
	assert_string_equal(FIELD_STR(r, "prefer"), "s1");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE p QUEUE q PREFER s2 30");
	assert_string_equal(FIELD_STR(r, "prefer"), "s2");
	assert_true(FIELD_INT(r, "prefer_ms") <= 30000);
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	msgs_free(&m);
	r = CMD(fx->c, "ENQUEUE p QUEUE q PREFER nobody 30");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_null(reply_field(r, "prefer"));
	freeReplyObject(r);
	/* No prefer_ended; s1, which p no longer waits for, takes it. */
	CHECK(fx->c, ":1", "RELEASE s1/0");
	r = CMD(fx->c, "WHERE p");
	assert_string_equal(FIELD_STR(r, "servicer"), "s1");
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	assert_int_equal(msgs_find(&m, 0, "prefer_ended"), -1);
	msgs_free(&m);
	redisFree(sub);
}

/*
 * Aging meets overflow: in ag the user ages once (1 s), then overflows
 * (2 s) to general with its tier, where its clocks start again and
 * general's aging goes on from there.
 */
static void
aging_then_overflow(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub = subscriber(fx->d, "user:a");
	struct msgs m = {0};
	int i;

	CHECK(fx->c,
	      "['state','waiting','queue','ag','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE a QUEUE ag");
	WHERE_UNTIL(fx->c, "a", "queue", "general");
	WHERE_UNTIL_INT(fx->c, "a", "tier", 2);
	MSGS_COLLECT(sub, &m);
	i = msgs_find(&m, 0, "rescored");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "queue", "ag");
	assert_json_int(m.m[i].payload, "tier", 1);
	i = msgs_find(&m, i + 1, "overflowed");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "from_queue", "ag");
	assert_json_int(m.m[i].payload, "tier", 1);
	i = msgs_find(&m, i + 1, "rescored");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "queue", "general");
	assert_json_str(m.m[i].payload, "reason", "aging");
	assert_json_int(m.m[i].payload, "tier", 2);
	msgs_free(&m);
	redisFree(sub);
}

/* QSTATS in RESP3 is a map. */
static void
qstats_resp3(void **state)
{
	struct csqd_fx *fx = *state;
	char buf[4096];
	size_t n;
	int fd = raw_connect(fx->d->port), closed;

	raw_sends(fd, "HELLO 3\r\n");
	n = raw_read(fd, buf, sizeof(buf) - 1, 200, &closed);
	assert_true(n > 0);
	raw_sends(fd, "QSTATS vip\r\n");
	n = raw_read(fd, buf, sizeof(buf) - 1, 200, &closed);
	buf[n] = '\0';
	if (strncmp(buf, "%14\r\n$5\r\nqueue\r\n$3\r\nvip\r\n", 25) != 0)
		fail_msg("QSTATS in RESP3: %.80s", buf);
	assert_non_null(strstr(buf, "$17\r\nservice_level_pct\r\n:-1\r\n"));
	close(fd);
}

/* A configuration file of text in a temporary directory; its path in out. */
static void
conf_file(char *out, size_t len, const char *text)
{
	char dir[] = "/tmp/csq-policies-XXXXXX";

	if (mkdtemp(dir) == NULL)
		fail_msg("mkdtemp");
	snprintf(out, len, "%s/csqd.conf", dir);
	write_file(out, text);
}

/* csqd -n: each bad queues entry is an error at its line. */
static void
check_errors(void **state)
{
	char path[256], out[8192], want[512];
	size_t i;
	int rc;
	static const char *const expect[] = {
	    ":3: queues: unknown key colour",
	    ":4: queues: max_length must be between 1 and 100000000 (not 0)",
	    ":5: queues: \"z\": overflow_after and overflow_to go together",
	    ":6: queues: name must be a queue id",
	    ":7: queues: \"a\": overflow_to leads back to this queue (a "
	    "cycle)",
	    ":8: queues: \"b\": overflow_to leads back to this queue (a "
	    "cycle)",
	    ":9: queues: \"vip\": a second policy for the same queue",
	    ":10: queues: an entry needs a name",
	    ":11: queues: strategy must be \"longest_idle\" or "
	    "\"least_busy\"",
	    ":12: queues: \"t\": aging_max_tier above max_tier",
	    ":13: queues: service_level must be an integer",
	};

	(void)state;
	conf_file(
	    path, sizeof(path),
	    "max_tier = 3;\n"
	    "queues = ( { name = \"vip\"; },\n"
	    "  { name = \"x\"; colour = \"red\"; },\n"
	    "  { name = \"y\"; max_length = 0; },\n"
	    "  { name = \"z\"; overflow_after = 5; },\n"
	    "  { name = \"bad id!\"; },\n"
	    "  { name = \"a\"; overflow_after = 5; overflow_to = \"b\"; },\n"
	    "  { name = \"b\"; overflow_after = 5; overflow_to = \"a\"; },\n"
	    "  { name = \"vip\"; },\n"
	    "  { service_level = 3; },\n"
	    "  { name = \"s\"; strategy = \"random\"; },\n"
	    "  { name = \"t\"; aging_every = 9; aging_max_tier = 4; },\n"
	    "  { name = \"u\"; service_level = \"20\"; }\n"
	    ");\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 78)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
	for (i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		snprintf(want, sizeof(want), "csqd.conf%s", expect[i]);
		if (strstr(out, want) == NULL)
			fail_msg("no \"%s\" in:\n%s", want, out);
	}
	assert_null(strstr(out, "configuration OK"));
	/* The example of the protocol passes. */
	conf_file(path, sizeof(path),
	          "queues = (\n"
	          "  { name = \"vip\"; strategy = \"least_busy\"; "
	          "max_length = 500;\n"
	          "    overflow_after = 60; overflow_to = \"general\";\n"
	          "    aging_every = 120; aging_max_tier = 3;\n"
	          "    service_level = 20; }\n"
	          ");\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0 || strstr(out, "configuration OK") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
}

/* Polls QSTATS queue until its service_level is level. */
static void
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
#define LEVEL_UNTIL(c, q, l) level_until_at(__FILE__, __LINE__, c, q, l)

/*
 * SIGHUP: new policies apply to the users already waiting (their clocks
 * from their arrival in the queue); a bad file keeps the ones in force;
 * an empty one removes them.
 */
static void
reload(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "['state','waiting','queue','r','position',:1,"
	      "'eta_ms',:-1]",
	      "ENQUEUE r1 QUEUE r");
	CHECK(fx->c,
	      "['state','waiting','queue','r','position',:2,"
	      "'eta_ms',:-1]",
	      "ENQUEUE r2 QUEUE r");
	csqd_rewrite_conf(fx->d, "queues = ( { name = \"r\"; max_length = 2;"
	                         " service_level = 7; } );");
	kill(fx->d->pid, SIGHUP);
	LEVEL_UNTIL(fx->c, "r", 7);
	CHECK(fx->c, FULL, "ENQUEUE r3 QUEUE r");
	/* A cycle: refused, the running policies stay. */
	csqd_rewrite_conf(fx->d,
	                  "queues = ( { name = \"r\"; overflow_after = 1;"
	                  " overflow_to = \"r\"; service_level = 9; } );");
	kill(fx->d->pid, SIGHUP);
	csqd_wait_log(fx->d, "keeping the running configuration");
	LEVEL_UNTIL(fx->c, "r", 7);
	CHECK(fx->c, FULL, "ENQUEUE r3 QUEUE r");
	/* Overflow added for those waiting: they have waited long enough. */
	sleep_ms(1000);
	csqd_rewrite_conf(fx->d,
	                  "queues = ( { name = \"r\"; overflow_after = 1;"
	                  " overflow_to = \"s\"; service_level = 8; } );");
	kill(fx->d->pid, SIGHUP);
	LEVEL_UNTIL(fx->c, "r", 8);
	WHERE_UNTIL(fx->c, "r1", "queue", "s");
	WHERE_UNTIL(fx->c, "r2", "queue", "s");
	csqd_rewrite_conf(fx->d, "");
	kill(fx->d->pid, SIGHUP);
	LEVEL_UNTIL(fx->c, "r", 20);
	CHECK(fx->c, "['default','s']", "QUEUES");
}

/*
 * A restart with the journal: the policies of the file, a preference
 * window and a user's overflow clock go on (the clock from the arrival,
 * not from the restart).
 */
static void
restart_with_journal(void **state)
{
	char dir[] = "/tmp/csq-policies-XXXXXX", conf[1024];
	struct csqd *d;
	redisContext *c;
	redisReply *r;

	(void)state;
	if (mkdtemp(dir) == NULL)
		fail_msg("mkdtemp");
	snprintf(conf, sizeof(conf),
	         "memory: { journal = \"%s/csqd.journal\"; fsync = \"always\"; "
	         "};\n" POLICIES,
	         dir);
	d = csqd_start(conf);
	c = csqd_connect(d);
	CHECK(c,
	      "['servicer','s1','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s1 QUEUES q");
	CHECK(c,
	      "['state','assigned','queue','q','room','s1/0',"
	      "'servicer','s1']",
	      "ENQUEUE busy QUEUE q");
	r = CMD(c, "ENQUEUE p1 QUEUE q PREFER s1 600");
	assert_string_equal(FIELD_STR(r, "prefer"), "s1");
	freeReplyObject(r);
	CHECK(c, "['state','waiting','queue','vip','position',:1,'eta_ms',:-1]",
	      "ENQUEUE v1 QUEUE vip");
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	d = csqd_start(conf);
	c = csqd_connect(d);
	r = CMD(c, "WHERE p1");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "prefer"), "s1");
	assert_true(FIELD_INT(r, "prefer_ms") > 500000);
	freeReplyObject(r);
	WHERE_UNTIL(c, "v1", "queue", "general");
	r = CMD(c, "QSTATS vip");
	assert_int_equal(FIELD_INT(r, "overflowed_total"), 1);
	assert_int_equal(FIELD_INT(r, "service_level"), 5);
	freeReplyObject(r);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(overflow_moves, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(overflow_into_free_room, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(aging, setup, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(max_length, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(qstats, setup, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(eta, setup, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(prefer_waits_for_servicer, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(prefer_ends, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(prefer_free_servicer, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(transfer_prefer, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(prefer_lost_and_dropped, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(prefer_reenqueue, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(aging_then_overflow, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(qstats_resp3, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test(check_errors),
	    cmocka_unit_test_setup_teardown(reload, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test(restart_with_journal),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
