/*
 * Business hours (protocol.md section 3c) through a real csqd over TCP,
 * on the test clock (DEBUG CLOCK): a Friday evening in Berlin into the
 * Monday after the spring forward (2030-03-31), on the memory engine and
 * on csq.so (integration.redis_module.hours). Closing time moves and
 * releases, with their events; a closed queue refuses with when it
 * opens, lets users wait unmatched, or sends them to its fallback; the
 * opening matches them, at 09:00 CEST (07:00Z, not 08:00Z). QSTATS
 * shows open and the next change. csqd -n checks the keys (a bad zone
 * names the key and the file); SIGHUP
 * applies new hours to the users waiting; a restart on the journal
 * keeps a queue closed and its users waiting.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy_harness.h"

/* After the file's last transition but one: a DEBUG CLOCK moves forward
 * from the real time, so the test's days are in 2030 (Berlin springs
 * forward on 2030-03-31). */
#define FRI_1630 UINT64_C(1901028600000) /* 2030-03-29T15:30Z, 16:30 CET */
#define FRI_1700 UINT64_C(1901030400000) /* 17:00 CET */
#define MON_0900 UINT64_C(1901257200000) /* 2030-04-01 09:00 CEST */
#define MON_1700 UINT64_C(1901286000000) /* 17:00 CEST */
#define HOUR     UINT64_C(3600000)

#define BERLIN "zone = \"Europe/Berlin\"; week = \"mon-fri 09:00-17:00\"; "
#define HOURS_CONF                                                             \
	"queues = (\n"                                                         \
	"  { name = \"sup\"; hours = { " BERLIN                                \
	"when_closed = \"refuse\"; at_close = \"move\"; "                      \
	"move_to = \"night\"; closed = [\"2026-12-24\"]; }; },\n"              \
	"  { name = \"wq\"; hours = { " BERLIN                                 \
	"at_close = \"release\"; }; },\n"                                      \
	"  { name = \"fb\"; hours = { zone = \"America/New_York\"; "           \
	"week = \"mon-fri 09:00-17:00\"; when_closed = \"fallback\"; "         \
	"fallback = \"night\"; }; } );\n"

#ifdef CSQ_TEST_CLOCK
/* The cases on the test clock: only a build with DEBUG CLOCK has them
 * (CSQ_TEST_CLOCK, as scripts/test's); the others run in every build. */
static int
hours_setup(void **state)
{
	return csqd_fx_setup(state, HOURS_CONF);
}

static void
clock_to(redisContext *c, uint64_t t)
{
	CHECK(c, "+OK", "DEBUG CLOCK %llu", (unsigned long long)t);
}
#endif

/* QSTATS q's open and next_change_ms, polled until they are these. */
static void
hours_until(redisContext *c, const char *q, long long open, long long next)
{
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *r;
	long long o = -1, n = -1;

	for (;;) {
		r = CMD(c, "QSTATS %s", q);
		if (reply_field(r, "open") != NULL) {
			o = FIELD_INT(r, "open");
			n = FIELD_INT(r, "next_change_ms");
		}
		freeReplyObject(r);
		if (o == open && n == next)
			return;
		if (now_ms() > deadline)
			fail_msg(
			    "QSTATS %s: open %lld next %lld, not %lld %lld", q,
			    o, n, open, next);
		sleep_ms(20);
	}
}

#ifdef CSQ_TEST_CLOCK
/* Polls WHERE user until it is gone (state none). */
static void
gone_until(redisContext *c, const char *user)
{
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *r;
	int gone;

	for (;;) {
		r = CMD(c, "WHERE %s", user);
		gone = strcmp(FIELD_STR(r, "state"), "none") == 0;
		freeReplyObject(r);
		if (gone)
			return;
		if (now_ms() > deadline)
			fail_msg("%s is still there", user);
		sleep_ms(20);
	}
}

/* The servicer lives over the weekend: heartbeats every 20 h. */
static void
weekend(redisContext *c, uint64_t from, uint64_t to)
{
	redisReply *r;

	for (; from + 20 * HOUR < to; from += 20 * HOUR) {
		clock_to(c, from + 20 * HOUR);
		r = CMD(c, "HEARTBEAT s1");
		freeReplyObject(r);
	}
}

/*
 * Friday 17:00 CET: sup closes (its users move to night, overflowed
 * with reason closed), wq closes (its users leave, left with reason
 * closed). Closed, sup refuses with Monday 09:00 CEST; wq lets users
 * wait beside a free room; Monday at 07:00Z both open and wq's user
 * takes the room.
 */
static void
hours_dst(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *sub;
	struct msgs m = {0};
	const char *ev;
	redisReply *r;
	int i;

	clock_to(fx->c, FRI_1630);
	sub = subscriber(fx->d, "events");
	hours_until(fx->c, "sup", 1, (long long)FRI_1700);
	r = CMD(fx->c, "HEARTBEAT s1 QUEUES wq TTL 86400");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE w1 QUEUE wq TTL 0");
	assert_string_equal(FIELD_STR(r, "room"), "s1/0");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE w2 QUEUE wq TTL 0");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE m1 QUEUE sup TTL 0");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);

	clock_to(fx->c, FRI_1700);
	WHERE_UNTIL(fx->c, "m1", "queue", "night");
	gone_until(fx->c, "w2");
	hours_until(fx->c, "sup", 0, (long long)MON_0900);
	hours_until(fx->c, "wq", 0, (long long)MON_0900);
	MSGS_COLLECT(sub, &m);
	ev = event_of(&m, "overflowed", "m1");
	assert_non_null(ev);
	assert_json_str(ev, "reason", "closed");
	assert_json_str(ev, "from_queue", "sup");
	ev = event_of(&m, "left", "w2");
	assert_non_null(ev);
	assert_json_str(ev, "reason", "closed");
	msgs_free(&m);

	/* Closed: refused with when it opens, after the spring forward. */
	CHECK(fx->c,
	      "-CLOSED queue is closed; it opens at 2030-04-01T07:00:00Z "
	      "(1901257200000)",
	      "ENQUEUE x QUEUE sup");
	CHECK(fx->c, "['state','none']", "WHERE x");
	/* wq: waits beside s1's free room, and is not matched. */
	CHECK(fx->c, ":1", "RELEASE s1/0");
	r = CMD(fx->c, "ENQUEUE w3 QUEUE wq TTL 0");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);

	weekend(fx->c, FRI_1700, MON_0900);
	clock_to(fx->c, MON_0900 - 1000);
	r = CMD(fx->c, "WHERE w3");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	clock_to(fx->c, MON_0900);
	WHERE_UNTIL(fx->c, "w3", "room", "s1/0");
	hours_until(fx->c, "wq", 1, (long long)MON_1700);
	hours_until(fx->c, "sup", 1, (long long)MON_1700);
	r = CMD(fx->c, "ENQUEUE x QUEUE sup TTL 0");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	MSGS_COLLECT(sub, &m);
	/* sup and wq open (by name), until 17:00 CEST; fb (New York) is
	 * still shut. */
	i = msgs_find(&m, 0, "opened");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "queue", "sup");
	assert_json_int(m.m[i].payload, "until_ms", (long long)MON_1700);
	i = msgs_find(&m, i + 1, "opened");
	assert_true(i >= 0);
	assert_json_str(m.m[i].payload, "queue", "wq");
	msgs_free(&m);
	redisFree(sub);
}

/* A closed queue with a fallback sends its arrivals there. */
static void
hours_fallback(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	clock_to(fx->c, FRI_1700 + 4 * HOUR); /* 2030-03-29 16:00 EDT: open */
	r = CMD(fx->c, "ENQUEUE f1 QUEUE fb TTL 0");
	assert_string_equal(FIELD_STR(r, "queue"), "fb");
	freeReplyObject(r);
	clock_to(fx->c, FRI_1700 + 6 * HOUR); /* 18:00 EDT: closed */
	hours_until(fx->c, "fb", 0, (long long)(MON_0900 + 6 * HOUR));
	r = CMD(fx->c, "ENQUEUE f2 QUEUE fb TTL 0");
	assert_string_equal(FIELD_STR(r, "queue"), "night");
	freeReplyObject(r);
	/* keep (fb's default): f1 stays, unmatched. */
	r = CMD(fx->c, "WHERE f1");
	assert_string_equal(FIELD_STR(r, "queue"), "fb");
	freeReplyObject(r);
}

/* SIGHUP: hours taken away open the queue for those waiting. */
static void
hours_reload(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	clock_to(fx->c, FRI_1700 + HOUR);
	hours_until(fx->c, "wq", 0, (long long)MON_0900);
	r = CMD(fx->c, "HEARTBEAT s1 QUEUES wq TTL 86400");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE w1 QUEUE wq TTL 0");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	csqd_rewrite_conf(fx->d, "queues = ( { name = \"wq\"; } );");
	kill(fx->d->pid, SIGHUP);
	WHERE_UNTIL(fx->c, "w1", "room", "s1/0");
	r = CMD(fx->c, "QSTATS wq");
	assert_null(reply_field(r, "open"));
	freeReplyObject(r);
}
#endif

/* csqd -n checks the keys, each at its line. */
static void
hours_check_config(void **state)
{
	char path[256], out[8192];
	int rc;

	(void)state;
	if (strcmp(csqd_engine(), "memory") != 0)
		skip(); /* csqd -n reads the file alone: one run is enough */
	conf_file(path, sizeof(path),
	          "queues = ( { name = \"a\"; hours = { zone = "
	          "\"Europe/Nowhere\"; week = \"mon 09:00-10:00\"; }; },\n"
	          "  { name = \"b\"; hours = { zone = \"../etc/passwd\"; "
	          "week = \"mon 09:00-10:00\"; }; },\n"
	          "  { name = \"c\"; hours = { zone = \"UTC\"; "
	          "week = \"mon 9:00-10:00\"; }; },\n"
	          "  { name = \"d\"; hours = { zone = \"UTC\"; week = \"\"; "
	          "closed = [\"2026-02-30\"]; when_closed = \"later\"; }; },\n"
	          "  { name = \"e\"; hours = { zone = \"UTC\"; week = \"\"; "
	          "when_closed = \"fallback\"; }; },\n"
	          "  { name = \"f\"; hours = { week = \"\"; }; } );\n");
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 78 ||
	    strstr(out, "csqd.conf:1: queues: hours: zone \"Europe/Nowhere\": "
	                "/usr/share/zoneinfo/Europe/Nowhere: No such file") ==
	        NULL ||
	    strstr(out, "csqd.conf:2: queues: hours: zone must be a zone "
	                "name") == NULL ||
	    strstr(out, "csqd.conf:3: queues: hours: week: a time range") ==
	        NULL ||
	    strstr(out, "csqd.conf:4: queues: hours: closed: \"2026-02-30\"") ==
	        NULL ||
	    strstr(out, "csqd.conf:4: queues: hours: when_closed must be") ==
	        NULL ||
	    strstr(out, "csqd.conf:5: queues: \"e\": hours: fallback") ==
	        NULL ||
	    strstr(out, "csqd.conf:6: queues: hours needs zone and week") ==
	        NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
	conf_file(path, sizeof(path), HOURS_CONF);
	rc = csqd_run(out, sizeof(out), "-n", "-c", path, NULL);
	if (rc != 0 || strstr(out, "configuration OK") == NULL)
		fail_msg("csqd -n exit %d:\n%s", rc, out);
}

/* A restart on the journal: a queue never open stays closed, its user
 * waiting beside a free room, and refusing queues refuse. */
static void
hours_restart(void **state)
{
	char dir[] = "/tmp/csq-hours-XXXXXX", conf[1024], path[256];
	struct csqd *d;
	redisContext *c;
	redisReply *r;

	(void)state;
	if (strcmp(csqd_engine(), "memory") != 0)
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/csqd.journal", dir);
	snprintf(conf, sizeof(conf),
	         "memory: { journal = \"%s\"; };\n"
	         "queues = ( { name = \"never\"; hours = { zone = "
	         "\"Australia/Lord_Howe\"; week = \"\"; }; },\n"
	         "  { name = \"no\"; hours = { zone = \"Asia/Tokyo\"; "
	         "week = \"\"; when_closed = \"refuse\"; }; } );\n",
	         path);
	d = csqd_start(conf);
	c = csqd_connect(d);
	r = CMD(c, "HEARTBEAT s1 QUEUES never TTL 3600");
	freeReplyObject(r);
	r = CMD(c, "ENQUEUE u1 QUEUE never TTL 0");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	d = csqd_start(conf);
	c = csqd_connect(d);
	r = CMD(c, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	hours_until(c, "never", 0, 0);
	CHECK(c, "-CLOSED queue is closed; no opening time is ahead",
	      "ENQUEUE u2 QUEUE no");
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	unlink(path);
	rmdir(dir);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
#ifdef CSQ_TEST_CLOCK
	    cmocka_unit_test_setup_teardown(hours_dst, hours_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(hours_fallback, hours_setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(hours_reload, hours_setup,
	                                    csqd_fx_teardown),
#endif
	    cmocka_unit_test(hours_check_config),
	    cmocka_unit_test(hours_restart),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
