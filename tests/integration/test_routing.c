/*
 * Routing (protocol-v2 sections 1, 1a, 2, 3 and 7) over the wire: OFFER
 * and ACCEPT, DECLINE, offers that run out and the pause they lead to,
 * withdrawals, TRANSFER, wrap-up and READY, the strategy from the
 * configuration and a reload, each command's errors, and the events with
 * their ids; on both engines.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define SYNTAX    "-ERR syntax error"
#define NOTFOUND  "-NOTFOUND no such servicer or room"
#define BAD_ROOM  "-ERR invalid room id"
#define BAD_QUEUE "-ERR invalid queue id"
#define RANGE     "-ERR value is not an integer or out of range"
#define NO_CONV   "-ERR no conversation in room"

/* A daemon, a connection, and one subscribed to every event. */
struct rfx {
	struct csqd *d;
	redisContext *c, *sub;
	struct msgs m;
};

static struct rfx *
rfx_start(void **state, const char *conf)
{
	static const char *events[] = {"events"};
	struct rfx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		abort();
	fx->d = csqd_start(conf);
	fx->c = csqd_connect(fx->d);
	fx->sub = csqd_connect(fx->d);
	SUBSCRIBE(fx->sub, 1, events);
	*state = fx;
	return fx;
}

static int
setup(void **state)
{
	rfx_start(state, "");
	return 0;
}

static int
teardown(void **state)
{
	struct rfx *fx = *state;
	int rc;

	msgs_free(&fx->m);
	redisFree(fx->c);
	redisFree(fx->sub);
	rc = csqd_stop(fx->d);
	free(fx);
	return rc == 0 ? 0 : -1;
}

/* The JSON of the i-th event collected last, which must be named ev. */
static const char *
event_at(struct rfx *fx, int i, const char *ev)
{
	char name[64], want[64];

	if (i >= fx->m.n)
		fail_msg("no event %d (of %d)", i, fx->m.n);
	snprintf(want, sizeof(want), "\"%s\"", ev);
	if (json_value(fx->m.m[i].payload, "event", name, sizeof(name)) != 0 ||
	    strcmp(name, want) != 0)
		fail_msg("event %d is %s, not %s", i, fx->m.m[i].payload, ev);
	return fx->m.m[i].payload;
}

/*
 * The events on fx->sub from now on, in fx->m, once there are as many as
 * in want (or more, or TIMER_EVENTS_MS passed): they must be want. For
 * what timers bring: after a fixed sleep, a test process that ran late
 * also found the next timer's events.
 */
#define TIMER_EVENTS_MS 10000

static void
wait_events(struct rfx *fx, const char *want)
{
	struct msgs *more = calloc(1, sizeof(*more));
	int64_t t0 = now_ms();
	char got[4096];
	int i, n = 0;

	if (more == NULL)
		abort();
	for (i = 0; want[i] != '\0'; i++)
		n += want[i] == '"';
	msgs_free(&fx->m);
	for (;;) {
		msgs_collect_at(__FILE__, __LINE__, fx->sub, more);
		for (i = 0; i < more->n && fx->m.n < MSGS_MAX; i++)
			fx->m.m[fx->m.n++] = more->m[i];
		more->n = 0;
		msgs_events(&fx->m, got, sizeof(got));
		if (fx->m.n >= n / 2 || now_ms() - t0 > TIMER_EVENTS_MS)
			break;
		sleep_ms(20);
	}
	free(more);
	if (strcmp(got, want) != 0) {
		msgs_dump(&fx->m);
		fail_msg("expected events %s\n  got %s", want, got);
	}
}

/* An offer, and ACCEPT: the replies, the events, STATS. */
static void
offer_and_accept(void **state)
{
	struct rfx *fx = *state;
	const char *j;
	redisReply *r;
	long long offered_id;

	CHECK(fx->c,
	      "['servicer','s','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:60]",
	      "HEARTBEAT s OFFER 30 TTL 60");
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"servicer_up\"", NULL);
	r = CMD(fx->c, "ENQUEUE u TIER 2");
	assert_string_equal(FIELD_STR(r, "state"), "offered");
	assert_string_equal(FIELD_STR(r, "queue"), "default");
	assert_int_equal(FIELD_INT(r, "tier"), 2);
	assert_string_equal(FIELD_STR(r, "servicer"), "s");
	assert_string_equal(FIELD_STR(r, "room"), "s/0");
	assert_int_equal(FIELD_INT(r, "expires_in_ms"), 30000);
	/* An offered user's estimate is 0 (protocol-v2 section 1). */
	assert_int_equal(FIELD_INT(r, "eta_ms"), 0);
	assert_int_equal(r->elements, 14);
	freeReplyObject(r);
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"offered\"", NULL);
	j = event_at(fx, 0, "offered");
	assert_json_str(j, "user", "u");
	assert_json_str(j, "queue", "default");
	assert_json_int(j, "tier", 2);
	assert_json_str(j, "servicer", "s");
	assert_json_str(j, "room", "s/0");
	assert_int_equal(JSON_INT(j, "expires_ms") - JSON_INT(j, "ts"), 30000);
	offered_id = JSON_INT(j, "id");

	/* Out of line; the room reserved. */
	CHECK(fx->c, ":0", "QLEN default");
	r = CMD(fx->c, "WHERE u");
	assert_string_equal(FIELD_STR(r, "state"), "offered");
	assert_true(FIELD_INT(r, "expires_in_ms") <= 30000);
	assert_true(FIELD_INT(r, "waited_ms") >= 0);
	freeReplyObject(r);
	CHECK(fx->c, ":0", "RELEASE s/0"); /* the offer stands */
	CHECK(fx->c, ":0", "READY s/0");

	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"matched\"", "ACCEPT s/0");
	j = event_at(fx, 0, "matched");
	assert_json_str(j, "room", "s/0");
	assert_json_has(j, "offered_ms");
	assert_json_has(j, "waited_ms");
	assert_int_equal(JSON_INT(j, "id"), offered_id + 1);
	CHECK(fx->c, ":0", "ACCEPT s/0");
	CHECK(fx->c, ":0", "DECLINE s/0");
	r = CMD(fx->c, "WHERE u");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	freeReplyObject(r);
	r = CMD(fx->c, "STATS");
	assert_int_equal(FIELD_INT(r, "offers_total"), 1);
	assert_int_equal(FIELD_INT(r, "matched_total"), 1);
	assert_int_equal(FIELD_INT(r, "offers_declined_total"), 0);
	assert_int_equal(FIELD_INT(r, "offers_missed_total"), 0);
	assert_int_equal(FIELD_INT(r, "transferred_total"), 0);
	freeReplyObject(r);
	/* Released: the room is free, and nothing is offered. */
	CHECK(fx->c, ":1", "RELEASE s/0");
	CHECK(fx->c, ":0", "ACCEPT s/0");
}

/* Too few and too many arguments: Redis's text, with the name in
 * lower case. */
static void
wrong_args(struct rfx *fx, const char *cmd, const char *lower)
{
	char expect[128];

	snprintf(expect, sizeof(expect),
	         "-ERR wrong number of arguments for '%s' command", lower);
	CHECK(fx->c, expect, "%s", cmd);
	CHECK(fx->c, expect, "%s s/0 s/1", cmd);
}

/* The errors of ACCEPT, DECLINE and READY: nothing changes. */
static void
room_errors(void **state)
{
	static const char *const cmds[] = {"ACCEPT", "DECLINE", "READY"};
	struct rfx *fx = *state;
	char lower[16];
	size_t k, i;

	CHECK(fx->c,
	      "['servicer','s','status','ready','capacity',:2,"
	      "'active',:0,'ttl',:30]",
	      "HEARTBEAT s CAPACITY 2 OFFER 30");
	CHECK(fx->c,
	      "['state','offered','queue','default','tier',:0,"
	      "'servicer','s','room','s/0','expires_in_ms',:30000,'eta_ms',:0]",
	      "ENQUEUE u");
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"servicer_up\" \"offered\"",
	              NULL);
	for (k = 0; k < 3; k++) {
		for (i = 0; cmds[k][i] != '\0'; i++)
			lower[i] = (char)(cmds[k][i] - 'A' + 'a');
		lower[i] = '\0';
		CHECK(fx->c, BAD_ROOM, "%s s/01", cmds[k]);
		CHECK(fx->c, BAD_ROOM, "%s s", cmds[k]);
		CHECK(fx->c, BAD_ROOM, "%s s/", cmds[k]);
		CHECK(fx->c, NOTFOUND, "%s s/2", cmds[k]);
		CHECK(fx->c, NOTFOUND, "%s s/99999999999", cmds[k]);
		CHECK(fx->c, NOTFOUND, "%s nobody/0", cmds[k]);
		CHECK(fx->c, ":0", "%s s/1", cmds[k]); /* free */
		wrong_args(fx, cmds[k], lower);
	}
	CHECK(fx->c, ":0", "READY s/0"); /* offered, not in wrap-up */
	/* Nothing changed: no event, the offer stands. */
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "", NULL);
	CHECK(fx->c, ":1", "ACCEPT s/0");
}

/* Short retry windows and two missed offers to a pause. */
static int
setup_fast(void **state)
{
	rfx_start(state, "offer_retry = 1;\noffer_max_missed = 2;\n");
	return 0;
}

/*
 * DECLINE, then the retry window, then offers that run out: declined by
 * timeout, missed counted, the pause at offer_max_missed, and RESUME.
 */
static void
decline_timeout_pause(void **state)
{
	struct rfx *fx = *state;
	const char *j;
	redisReply *r;
	long long ts;

	CHECK(fx->c,
	      "['servicer','s','status','ready','capacity',:1,"
	      "'active',:0,'ttl',:60]",
	      "HEARTBEAT s OFFER 1 TTL 60");
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"servicer_up\" \"offered\"",
	              "ENQUEUE u");
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"declined\"", "DECLINE s/0");
	j = event_at(fx, 0, "declined");
	assert_json_str(j, "by", "servicer");
	assert_json_int(j, "position", 1);
	assert_json_str(j, "room", "s/0");
	ts = JSON_INT(j, "ts");
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,'eta_ms',:?]",
	      "ENQUEUE u");
	/*
	 * The window (1 s) ends: offered again; then it runs out (1 s),
	 * declined by timeout, s still ready: offered again after the
	 * window; the second in a row pauses s. The events' times say when
	 * each came.
	 */
	wait_events(fx, "\"offered\" \"declined\" \"offered\" \"declined\" "
	                "\"servicer_paused\"");
	assert_true(JSON_INT(event_at(fx, 0, "offered"), "ts") - ts >= 1000);
	j = event_at(fx, 1, "declined");
	assert_json_str(j, "by", "timeout");
	assert_true(JSON_INT(j, "ts") - JSON_INT(fx->m.m[0].payload, "ts") >=
	            1000);
	assert_true(JSON_INT(event_at(fx, 2, "offered"), "ts") -
	                JSON_INT(j, "ts") >=
	            1000);
	j = event_at(fx, 3, "declined");
	assert_json_str(j, "by", "timeout");
	assert_true(JSON_INT(j, "ts") - JSON_INT(fx->m.m[2].payload, "ts") >=
	            1000);
	assert_json_str(event_at(fx, 4, "servicer_paused"), "reason",
	                "missed_offers");
	r = CMD(fx->c, "STATS");
	assert_int_equal(FIELD_INT(r, "offers_total"), 3);
	assert_int_equal(FIELD_INT(r, "offers_declined_total"), 1);
	assert_int_equal(FIELD_INT(r, "offers_missed_total"), 2);
	assert_int_equal(FIELD_INT(r, "waiting"), 1);
	freeReplyObject(r);
	/* RESUME: the count is 0, and the offer comes at once. */
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"servicer_resumed\" \"offered\"", "RESUME s");
	CHECK(fx->c, ":1", "ACCEPT s/0");
}

/* PAUSE and LOGOUT withdraw offers: requeued at the old place. */
static void
withdrawals(void **state)
{
	struct rfx *fx = *state;
	const char *j;
	redisReply *r;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s OFFER 30 CAPACITY 2"));
	freeReplyObject(CMD(fx->c, "ENQUEUE a"));
	freeReplyObject(CMD(fx->c, "ENQUEUE b"));
	freeReplyObject(CMD(fx->c, "ACCEPT s/1"));
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"servicer_up\" \"offered\" \"offered\" \"matched\"",
	              NULL);
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"requeued\" \"servicer_paused\"", "PAUSE s");
	j = event_at(fx, 0, "requeued");
	assert_json_str(j, "user", "a");
	assert_json_str(j, "reason", "pause");
	assert_json_int(j, "position", 1);
	assert_json_str(event_at(fx, 1, "servicer_paused"), "reason", "pause");
	/* The conversation goes on; a logout requeues it. */
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"requeued\" \"servicer_down\"",
	              "LOGOUT s");
	assert_json_str(event_at(fx, 0, "requeued"), "reason", "logout");
	r = CMD(fx->c, "QUEUE default");
	assert_int_equal(r->elements, 2);
	assert_reply_bulk(r->element[0]->element[0], "a");
	assert_reply_bulk(r->element[1]->element[0], "b");
	freeReplyObject(r);
}

/*
 * The loss of a servicer (its TTL runs out) withdraws its offers, each
 * user back at its place (requeued, reason lost), and ends its wrap-ups
 * without a ready.
 */
static void
servicer_lost(void **state)
{
	struct rfx *fx = *state;
	const char *j;
	redisReply *r;

	/* TTL 2: the four commands below come before it runs out, even
	 * from a test process that runs a second late. */
	freeReplyObject(
	    CMD(fx->c, "HEARTBEAT s CAPACITY 2 OFFER 30 WRAPUP 60 TTL 2"));
	freeReplyObject(CMD(fx->c, "ENQUEUE a"));
	freeReplyObject(CMD(fx->c, "ENQUEUE b"));
	CHECK(fx->c, ":1", "ACCEPT s/1");
	CHECK(fx->c, ":1", "RELEASE s/1");
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"servicer_up\" \"offered\" \"offered\" \"matched\" "
	              "\"released\" \"wrapup\"",
	              NULL);
	wait_events(fx, "\"requeued\" \"servicer_down\"");
	j = event_at(fx, 0, "requeued");
	assert_json_str(j, "user", "a");
	assert_json_str(j, "reason", "lost");
	assert_json_str(j, "servicer", "s");
	assert_json_str(j, "room", "s/0");
	assert_json_int(j, "position", 1);
	assert_json_str(event_at(fx, 1, "servicer_down"), "reason", "lost");
	/* Nobody serves default any more: no estimate. */
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE a");
	r = CMD(fx->c, "STATS");
	assert_int_equal(FIELD_INT(r, "servicers"), 0);
	assert_int_equal(FIELD_INT(r, "rooms_busy"), 0);
	assert_int_equal(FIELD_INT(r, "offers_total"), 2);
	assert_int_equal(FIELD_INT(r, "offers_missed_total"), 0);
	freeReplyObject(r);
	CHECK(fx->c, NOTFOUND, "READY s/1");
	CHECK(fx->c, NOTFOUND, "ACCEPT s/0");
	/* Nothing more: no ready for the wrap-up. */
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "", NULL);
}

/* LEAVE of an offered user: left, naming the room, which is free. */
static void
offered_user_leaves(void **state)
{
	struct rfx *fx = *state;
	const char *j;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s OFFER 30"));
	freeReplyObject(CMD(fx->c, "ENQUEUE a"));
	freeReplyObject(CMD(fx->c, "ENQUEUE b"));
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"servicer_up\" \"offered\" \"queued\"", NULL);
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"left\" \"offered\"",
	              "LEAVE a");
	j = event_at(fx, 0, "left");
	assert_json_str(j, "reason", "leave");
	assert_json_str(j, "servicer", "s");
	assert_json_str(j, "room", "s/0");
	assert_json_str(event_at(fx, 1, "offered"), "user", "b");
}

/* Wrap-up after RELEASE, READY, and its end by the clock. */
static void
wrapup(void **state)
{
	struct rfx *fx = *state;
	const char *j;
	long long until;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s WRAPUP 1 TTL 60"));
	freeReplyObject(CMD(fx->c, "ENQUEUE a"));
	freeReplyObject(CMD(fx->c, "ENQUEUE b"));
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"servicer_up\" \"matched\" \"queued\"", NULL);
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"released\" \"wrapup\"",
	              "RELEASE s/0");
	j = event_at(fx, 1, "wrapup");
	assert_json_str(j, "servicer", "s");
	assert_json_str(j, "room", "s/0");
	until = JSON_INT(j, "until_ms");
	assert_int_equal(until - JSON_INT(j, "ts"), 1000);
	/* Busy, not free: b waits; no conversation to release. */
	CHECK(fx->c,
	      "['state','waiting','queue','default','position',:1,'eta_ms',:?]",
	      "ENQUEUE b");
	CHECK(fx->c, ":0", "RELEASE s/0");
	CHECK(fx->c, ":0", "ACCEPT s/0");
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"ready\" \"matched\"",
	              "READY s/0");
	CHECK(fx->c, ":0", "READY s/0");
	/* LEAVE of the user in the room: its wrap-up too, ended by the
	 * clock. */
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"released\" \"wrapup\"",
	              "LEAVE b");
	assert_json_str(event_at(fx, 0, "released"), "by", "user");
	until = JSON_INT(event_at(fx, 1, "wrapup"), "until_ms");
	wait_events(fx, "\"ready\"");
	assert_true(JSON_INT(event_at(fx, 0, "ready"), "ts") >= until);
	CHECK(fx->c, ":0", "READY s/0");
	/* WRAPUP 0: none. */
	freeReplyObject(CMD(fx->c, "HEARTBEAT s WRAPUP 0"));
	freeReplyObject(CMD(fx->c, "ENQUEUE c"));
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"matched\"", NULL);
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "\"released\"", "RELEASE s/0");
}

/* HEARTBEAT's OFFER and WRAPUP: ranges, errors change nothing. */
static void
heartbeat_options(void **state)
{
	struct rfx *fx = *state;
	redisReply *r;

	CHECK(fx->c, RANGE, "HEARTBEAT s OFFER 601");
	CHECK(fx->c, RANGE, "HEARTBEAT s OFFER -1");
	CHECK(fx->c, RANGE, "HEARTBEAT s WRAPUP 3601");
	CHECK(fx->c, RANGE, "HEARTBEAT s WRAPUP x");
	CHECK(fx->c, SYNTAX, "HEARTBEAT s OFFER");
	CHECK(fx->c, "[]", "SERVICERS");
	freeReplyObject(CMD(fx->c, "heartbeat s offer 600 wrapup 3600"));
	freeReplyObject(CMD(fx->c, "HEARTBEAT s CAPACITY 2"));
	r = CMD(fx->c, "SERVICERS");
	assert_int_equal(r->element[0]->elements, 9);
	assert_reply_integer(r->element[0]->element[6], 600);  /* offer */
	assert_reply_integer(r->element[0]->element[7], 3600); /* wrapup */
	assert_reply_integer(r->element[0]->element[8], 0);    /* missed */
	freeReplyObject(r);
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"servicer_up\" \"servicer_updated\"", NULL);
}

/* TRANSFER: events in order, the reply as WHERE's, STATS. */
static void
transfer(void **state)
{
	struct rfx *fx = *state;
	const char *j;
	redisReply *r;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s QUEUES sales"));
	freeReplyObject(CMD(fx->c, "HEARTBEAT t QUEUES billing"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u QUEUE sales TIER 1"));
	freeReplyObject(CMD(fx->c, "ENQUEUE w QUEUE sales"));
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"servicer_up\" \"servicer_up\" \"matched\" \"queued\"",
	              NULL);
	/* u to billing, where t is free; s's room takes w. */
	r = CMD(fx->c, "TRANSFER s/0 billing");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	assert_string_equal(FIELD_STR(r, "queue"), "billing");
	assert_string_equal(FIELD_STR(r, "room"), "t/0");
	assert_true(FIELD_INT(r, "since_ms") >= 0);
	freeReplyObject(r);
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"released\" \"transferred\" \"matched\" \"matched\"",
	              NULL);
	assert_json_str(event_at(fx, 0, "released"), "by", "transfer");
	j = event_at(fx, 1, "transferred");
	assert_json_str(j, "user", "u");
	assert_json_str(j, "from_queue", "sales");
	assert_json_str(j, "queue", "billing");
	assert_json_int(j, "tier", 1);
	assert_json_str(j, "servicer", "s");
	assert_json_str(j, "room", "s/0");
	assert_json_int(j, "position", 1);
	assert_json_str(event_at(fx, 2, "matched"), "room", "t/0");
	assert_json_str(event_at(fx, 3, "matched"), "user", "w");
	r = CMD(fx->c, "STATS");
	assert_int_equal(FIELD_INT(r, "transferred_total"), 1);
	freeReplyObject(r);
	/* To a queue nobody serves: it waits there, and a refreshing
	 * frontend does not pull it back. */
	r = CMD(fx->c, "TRANSFER t/0 nobody");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_string_equal(FIELD_STR(r, "queue"), "nobody");
	assert_int_equal(FIELD_INT(r, "position"), 1);
	assert_int_equal(FIELD_INT(r, "tier"), 1);
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u QUEUE sales");
	assert_string_equal(FIELD_STR(r, "queue"), "nobody");
	freeReplyObject(r);
}

/* TRANSFER's errors, each before anything changes. */
static void
transfer_errors(void **state)
{
	struct rfx *fx = *state;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s CAPACITY 3 WRAPUP 60"));
	freeReplyObject(CMD(fx->c, "HEARTBEAT o OFFER 60"));
	freeReplyObject(CMD(fx->c, "ENQUEUE a")); /* s/0 */
	freeReplyObject(CMD(fx->c, "ENQUEUE b")); /* o/0 */
	freeReplyObject(CMD(fx->c, "ENQUEUE c")); /* s/1 */
	CHECK(fx->c, ":1", "RELEASE s/1");        /* in wrap-up */
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m,
	              "\"servicer_up\" \"servicer_up\" \"matched\" \"offered\" "
	              "\"matched\" \"released\" \"wrapup\"",
	              NULL);
	CHECK(fx->c, "-ERR wrong number of arguments for 'transfer' command",
	      "TRANSFER s/0");
	CHECK(fx->c, SYNTAX, "TRANSFER s/0 q PREFER o");
	CHECK(fx->c, SYNTAX, "TRANSFER s/0 q PREFER o 10 x");
	CHECK(fx->c, RANGE, "TRANSFER s/0 q PREFER o 0");
	CHECK(fx->c, SYNTAX, "TRANSFER s/0 q x");
	CHECK(fx->c, BAD_ROOM, "TRANSFER s/00 q");
	CHECK(fx->c, BAD_ROOM, "TRANSFER s/x bad.queue!");
	CHECK(fx->c, BAD_QUEUE, "TRANSFER s/0 bad,queue");
	CHECK(fx->c, NOTFOUND, "TRANSFER s/3 q");
	CHECK(fx->c, NOTFOUND, "TRANSFER s/12345678901 q");
	CHECK(fx->c, NOTFOUND, "TRANSFER nobody/0 q");
	CHECK(fx->c, NO_CONV, "TRANSFER s/2 q"); /* free */
	CHECK(fx->c, NO_CONV, "TRANSFER s/1 q"); /* wrap-up */
	CHECK(fx->c, NO_CONV, "TRANSFER o/0 q"); /* offered */
	EXPECT_EVENTS(fx->c, fx->sub, &fx->m, "", NULL);
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','s/0',"
	      "'servicer','s']",
	      "ENQUEUE a");
}

static int
setup_least_busy(void **state)
{
	rfx_start(state, "strategy = \"least_busy\";\n");
	return 0;
}

/* Rewrites d's configuration to conf and reloads it (SIGHUP), waiting for
 * the log to say so, until a deadline for a hang (RELOAD_WAIT_MS): 500
 * tries 10 ms apart gave a csqd on a loaded machine about 5 s. */
#define RELOAD_WAIT_MS 30000

static void
reload(struct csqd *d, const char *conf)
{
	int before = count_in_file(d->log_path, "configuration reloaded");
	int64_t deadline;

	csqd_rewrite_conf(d, conf);
	kill(d->pid, SIGHUP);
	for (deadline = now_ms() + RELOAD_WAIT_MS; now_ms() < deadline;) {
		if (count_in_file(d->log_path, "configuration reloaded") >
		    before)
			return;
		sleep_ms(10);
	}
	csqd_dump_log(d);
	fail_msg("no reload within %d ms", RELOAD_WAIT_MS);
}

/* least_busy from the configuration, then longest_idle by a reload. */
static void
least_busy(void **state)
{
	struct rfx *fx = *state;
	redisReply *r;

	freeReplyObject(CMD(fx->c, "HEARTBEAT a CAPACITY 3"));
	freeReplyObject(CMD(fx->c, "HEARTBEAT b CAPACITY 3"));
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','a/0',"
	      "'servicer','a']",
	      "ENQUEUE u1");
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','b/0',"
	      "'servicer','b']",
	      "ENQUEUE u2");
	CHECK(fx->c, ":1", "RELEASE b/0");
	/* b has none busy, a one: b, though a is the longer idle. */
	CHECK(fx->c,
	      "['state','assigned','queue','default','room','b/0',"
	      "'servicer','b']",
	      "ENQUEUE u3");
	CHECK(fx->c, ":1", "RELEASE b/0");
	reload(fx->d, "strategy = \"longest_idle\";\n");
	assert_true(file_contains(fx->d->log_path, "changed=strategy"));
	r = CMD(fx->c, "ENQUEUE u4");
	assert_string_equal(FIELD_STR(r, "servicer"), "a");
	freeReplyObject(r);
}

/* csqd -n: the new keys, their ranges and values. */
static void
config_keys(void **state)
{
	char out[4096], path[256];
	struct rfx *fx = *state;

	snprintf(path, sizeof(path), "%s/check.conf", fx->d->dir);
	write_file(path, "offer_timeout = 600;\noffer_max_missed = 0;\n"
	                 "offer_retry = 3600;\nwrapup = 3600;\n"
	                 "strategy = \"least_busy\";\n");
	assert_int_equal(csqd_run(out, sizeof(out), "-n", "-c", path, NULL), 0);
	write_file(path, "offer_timeout = 601;\nstrategy = \"busiest\";\n"
	                 "wrapup = -1;\noffer_retry = 3601;\n"
	                 "offer_max_missed = 1001;\n");
	assert_int_equal(csqd_run(out, sizeof(out), "-n", "-c", path, NULL),
	                 78);
	assert_non_null(strstr(out, "check.conf:1:"));
	assert_non_null(strstr(out, "check.conf:2:"));
	assert_non_null(strstr(out, "check.conf:3:"));
	assert_non_null(strstr(out, "check.conf:4:"));
	assert_non_null(strstr(out, "check.conf:5:"));
	/* The same keys on the Redis engine. */
	write_file(path, "engine = \"redis\";\nwrapup = 5;\n"
	                 "offer_timeout = 10;\nstrategy = \"least_busy\";\n");
	assert_int_equal(csqd_run(out, sizeof(out), "-n", "-c", path, NULL), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest memory[] = {
	    cmocka_unit_test_setup_teardown(offer_and_accept, setup, teardown),
	    cmocka_unit_test_setup_teardown(room_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(decline_timeout_pause, setup_fast,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(withdrawals, setup, teardown),
	    cmocka_unit_test_setup_teardown(servicer_lost, setup, teardown),
	    cmocka_unit_test_setup_teardown(offered_user_leaves, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(wrapup, setup, teardown),
	    cmocka_unit_test_setup_teardown(heartbeat_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(transfer, setup, teardown),
	    cmocka_unit_test_setup_teardown(transfer_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(least_busy, setup_least_busy,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(config_keys, setup, teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("routing", memory, NULL, NULL);
}
