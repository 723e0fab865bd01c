/*
 * Queue policies (protocol-v2 section 4) where the Redis engine has
 * something of its own: one set in force for all the daemons of a prefix,
 * the last written (docs/protocol.md, decision 30), and a write that arms
 * anew the clocks of users who came through another daemon. Both daemons
 * run on one clock that the test moves (DEBUG CLOCK), so that "from when
 * the user joined its line" and "from the write" are told apart exactly:
 * those runs are compiled in only with CSQ_TEST_CLOCK (a test build's).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define PREFIX  "policy"
#define WAIT_MS 5000
#define T0      UINT64_C(2000000000000) /* the runs' first ms */
struct pfx {
	struct redisd *r;
	struct csqd *d[2];
	redisContext *c[2];
};

static int
setup(void **state)
{
	struct pfx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		abort();
	fx->r = redisd_start(0);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct pfx *fx = *state;
	int i, rc = 0;

	for (i = 0; i < 2; i++) {
		if (fx->c[i] != NULL)
			redisFree(fx->c[i]);
		if (fx->d[i] != NULL && csqd_stop(fx->d[i]) != 0)
			rc = -1;
	}
	if (rc != 0)
		redisd_dump_log(fx->r);
	redisd_free(fx->r);
	free(fx);
	return rc;
}

/* Daemon i on the fixture's Redis, with extra configuration. */
static void
daemon_start(struct pfx *fx, int i, const char *extra)
{
	fx->d[i] = csqd_start_redis(fx->r, PREFIX, extra);
	fx->c[i] = csqd_connect(fx->d[i]);
}

#ifdef CSQ_TEST_CLOCK
/* Both daemons' clocks at t. */
static void
clock_at(struct pfx *fx, uint64_t t)
{
	int i;

	for (i = 0; i < 2; i++)
		CHECK(fx->c[i], "+OK", "DEBUG CLOCK %llu",
		      (unsigned long long)t);
}
#endif

/* How many times d's log holds text. */
static int
log_count(const struct csqd *d, const char *text)
{
	static char buf[1 << 16];
	const char *p;
	size_t len;
	int n = 0;
	FILE *f;

	if ((f = fopen(d->log_path, "r")) == NULL)
		return 0;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	fclose(f);
	for (p = buf; (p = strstr(p, text)) != NULL; p++)
		n++;
	return n;
}

/* Waits until d's log holds text n times. */
static void
log_until(const struct csqd *d, const char *text, int n)
{
	int64_t deadline = now_ms() + WAIT_MS;

	while (log_count(d, text) < n) {
		if (now_ms() > deadline)
			fail_msg("csqd's log said \"%s\" %d times, not %d",
			         text, log_count(d, text), n);
		sleep_ms(20);
	}
}

#ifdef CSQ_TEST_CLOCK
/* Polls WHERE user on c until its queue is q. */
static void
queue_until(redisContext *c, const char *user, const char *q)
{
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *r;
	int ok;

	for (;;) {
		r = CMD(c, "WHERE %s", user);
		ok = strcmp(FIELD_STR(r, "queue"), q) == 0;
		freeReplyObject(r);
		if (ok)
			return;
		if (now_ms() > deadline)
			fail_msg("WHERE %s: not in %s within %d ms", user, q,
			         WAIT_MS);
		sleep_ms(20);
	}
}

/* Polls WHERE user on c until its tier is tier. */
static void
tier_until(redisContext *c, const char *user, long long tier)
{
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *r;
	int ok;

	for (;;) {
		r = CMD(c, "WHERE %s", user);
		ok = FIELD_INT(r, "tier") == tier;
		freeReplyObject(r);
		if (ok)
			return;
		if (now_ms() > deadline)
			fail_msg("WHERE %s: not tier %lld within %d ms", user,
			         tier, WAIT_MS);
		sleep_ms(20);
	}
}
#endif

/* An ENQUEUE of user into q that gets in (waiting). */
#define CHECK_OK_ENQUEUE(c, user)                                              \
	do {                                                                   \
		redisReply *r_ = CMD((c), "ENQUEUE %s QUEUE q", (user));       \
		assert_int_equal(r_->type, REDIS_REPLY_ARRAY);                 \
		freeReplyObject(r_);                                           \
	} while (0)

#ifdef CSQ_TEST_CLOCK
/* The runs on one clock for both daemons: only a build with DEBUG CLOCK
 * (CSQ_TEST_CLOCK, as scripts/test's) has them. */

/*
 * Two daemons, one state: the second writes the same set as the first
 * (nothing changes); then a reload of the second with other policies
 * replaces the first's, and is in force for users who come through the
 * first, whose own file still has the old ones. A user who waited before, in a
 * queue that had no clock, is measured from the write.
 */
static void
last_writer_wins(void **state)
{
	struct pfx *fx = *state;
	static const char first[] =
	    "queues = ( { name = \"q\"; max_length = 1; } );\n";

	daemon_start(fx, 0, first);
	daemon_start(fx, 1, first);
	clock_at(fx, T0);
	CHECK(fx->c[0],
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE a QUEUE q");
	CHECK(fx->c[1], "-FULL queue is at its maximum length",
	      "ENQUEUE b QUEUE q");

	csqd_rewrite_conf(fx->d[1], "queues = ( { name = \"q\"; max_length = 2;"
	                            " overflow_after = 3; overflow_to = \"o\";"
	                            " } );\n");
	clock_at(fx, T0 + 10000);
	kill(fx->d[1]->pid, SIGHUP);
	csqd_wait_log(fx->d[1], "configuration reloaded");
	/* A call after the write, on the same link: answered once the write
	 * is done. */
	freeReplyObject(CMD(fx->c[1], "WHERE a"));
	/* In force through the first daemon too. */
	clock_at(fx, T0 + 11000);
	CHECK(fx->c[0],
	      "['state','waiting','queue','q','position',:2,'eta_ms',:-1]",
	      "ENQUEUE b QUEUE q");
	/* a had no clock: its overflow counts from the write, not from its
	 * arrival ten seconds before. */
	clock_at(fx, T0 + 12999);
	CHECK(fx->c[0],
	      "['state','waiting','queue','q','position',:1,"
	      "'tier',:0,'waited_ms',:12999,'eta_ms',:-1]",
	      "WHERE a");
	clock_at(fx, T0 + 13000);
	queue_until(fx->c[0], "a", "o");
	queue_until(fx->c[1], "a", "o");
	CHECK(fx->c[0],
	      "['state','waiting','queue','q','position',:1,"
	      "'tier',:0,'waited_ms',:2000,'eta_ms',:-1]",
	      "WHERE b");
}

/*
 * A reload of one daemon arms anew the clocks of users who came through
 * the other, from when they joined the line: an overflow_after shorter
 * than a user's wait moves it at once (without the aging steps it would
 * have had before: the overflow is its clock, as lib/policy.c arms it),
 * another user when its own time comes, after a step of the new aging
 * counted from its arrival too.
 */
static void
reload_rearms(void **state)
{
	struct pfx *fx = *state;
	static const char first[] =
	    "queues = ( { name = \"q\"; aging_every = 3600; } );\n";
	redisReply *r;

	daemon_start(fx, 0, first);
	daemon_start(fx, 1, first);
	clock_at(fx, T0);
	CHECK(fx->c[0],
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE a QUEUE q");
	clock_at(fx, T0 + 4000);
	CHECK(fx->c[0],
	      "['state','waiting','queue','q','position',:2,'eta_ms',:-1]",
	      "ENQUEUE b QUEUE q");
	clock_at(fx, T0 + 5000);
	csqd_rewrite_conf(fx->d[1],
	                  "queues = ( { name = \"q\"; overflow_after = 3;"
	                  " overflow_to = \"o\"; aging_every = 2; } );\n");
	kill(fx->d[1]->pid, SIGHUP);
	log_until(fx->d[1], "configuration reloaded", 1);
	/* a joined at T0: its overflow was due at T0 + 3 s, and comes now ...
	 */
	queue_until(fx->c[0], "a", "o");
	r = CMD(fx->c[0], "WHERE a");
	assert_int_equal(FIELD_INT(r, "tier"), 0);
	freeReplyObject(r);
	/* ... and b, who joined at T0 + 4 s, stays until T0 + 7 s, and ages
	 * at T0 + 6 s, two seconds after it came. */
	clock_at(fx, T0 + 5999);
	CHECK(fx->c[1],
	      "['state','waiting','queue','q','position',:1,"
	      "'tier',:0,'waited_ms',:1999,'eta_ms',:-1]",
	      "WHERE b");
	clock_at(fx, T0 + 6000);
	tier_until(fx->c[1], "b", 1);
	r = CMD(fx->c[1], "WHERE b");
	assert_string_equal(FIELD_STR(r, "queue"), "q");
	freeReplyObject(r);
	clock_at(fx, T0 + 7000);
	queue_until(fx->c[1], "b", "o");
	tier_until(fx->c[0], "b", 1);
}

/*
 * On the Redis engine a user's overflow clock lives in Redis and keeps
 * running while csqd is down (docs/protocol.md §3b; the memory engine
 * starts it again at the restart): a csqd that comes back after the
 * clock ran out moves the user at once, its clock counted from the
 * arrival, not from the restart.
 */
static void
clocks_run_while_down(void **state)
{
	struct pfx *fx = *state;
	static const char conf[] =
	    "queues = ( { name = \"q\"; "
	    "overflow_after = 2; overflow_to = \"o\"; } );\n";

	daemon_start(fx, 0, conf);
	CHECK(fx->c[0], "+OK", "DEBUG CLOCK %llu", (unsigned long long)T0);
	CHECK(fx->c[0],
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE a QUEUE q");
	redisFree(fx->c[0]);
	fx->c[0] = NULL;
	assert_int_equal(csqd_stop(fx->d[0]), 0);
	fx->d[0] = NULL;
	daemon_start(fx, 0, conf);
	/* Still waiting in q on the new daemon's (real) clock, before T0. */
	queue_until(fx->c[0], "a", "q");
	CHECK(fx->c[0], "+OK", "DEBUG CLOCK %llu",
	      (unsigned long long)(T0 + 2000));
	queue_until(fx->c[0], "a", "o");
}
#endif

/* The debug line of a write of the policies (redis_policy.c). */
#define IN_FORCE "queue policies in force in Redis"

/* ENQUEUEs user<n> into q on c until q refuses one (-FULL), taking
 * each that got in out again: the policy's max_length is in force. */
static void
full_until(redisContext *c, const char *q)
{
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *r;
	int n, full;

	for (n = 0;; n++) {
		r = CMD(c, "ENQUEUE probe%d QUEUE %s", n, q);
		full = r->type == REDIS_REPLY_ERROR &&
		       strncmp(r->str, "FULL", 4) == 0;
		freeReplyObject(r);
		if (full)
			return;
		freeReplyObject(CMD(c, "LEAVE probe%d", n));
		if (now_ms() > deadline)
			fail_msg("%s never full within %d ms: no max_length", q,
			         WAIT_MS);
		sleep_ms(20);
	}
}

/*
 * A state that went back gets its policies back (issue 37): after a
 * FLUSHALL csqd noticed that the event ids went back and went on
 * without its queue policies until its link came up again, and a SIGHUP
 * with the same file wrote nothing. Now the ids going back write them
 * again, and so does every reload.
 */
static void
policies_come_back(void **state)
{
	struct pfx *fx = *state;
	static const char conf[] =
	    "queues = ( { name = \"q\"; max_length = 1; } );\n"
	    "log: { level = \"debug\"; };\n";
	redisContext *rc = redisd_connect(fx->r);
	int i;

	daemon_start(fx, 0, conf);
	CHECK_OK_ENQUEUE(fx->c[0], "a");
	full_until(fx->c[0], "q");
	/* Events enough that an id after the FLUSHALL is lower than the
	 * last one, not the same (which csqd takes for a repeat). */
	for (i = 0; i < 3; i++) {
		freeReplyObject(CMD(fx->c[0], "ENQUEUE x%d QUEUE other", i));
		freeReplyObject(CMD(fx->c[0], "LEAVE x%d", i));
	}
	CHECK(rc, "+OK", "FLUSHALL");
	/* The next event's id is 1 again: csqd sees it went back. */
	CHECK_OK_ENQUEUE(fx->c[0], "b");
	log_until(fx->d[0], "went back", 1);
	full_until(fx->c[0], "q");
	/* A reload with the same file writes them again too (an operator's
	 * way to put them back when the ids did not go back: a restore of
	 * the keys alone, say): its line, at debug level, once more. */
	i = log_count(fx->d[0], IN_FORCE);
	kill(fx->d[0]->pid, SIGHUP);
	log_until(fx->d[0], "configuration reloaded", 1);
	log_until(fx->d[0], IN_FORCE, i + 1);
	full_until(fx->c[0], "q");
	redisFree(rc);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
#ifdef CSQ_TEST_CLOCK
	    cmocka_unit_test_setup_teardown(last_writer_wins, setup, teardown),
	    cmocka_unit_test_setup_teardown(reload_rearms, setup, teardown),
	    cmocka_unit_test_setup_teardown(clocks_run_while_down, setup,
	                                    teardown),
#endif
	    cmocka_unit_test_setup_teardown(policies_come_back, setup,
	                                    teardown),
	};

	if (redisd_binary() == NULL) {
		fprintf(stderr, "%s: no redis-server\n", argv[0]);
		return 1;
	}
	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("redis_policy", tests, NULL, NULL);
}
