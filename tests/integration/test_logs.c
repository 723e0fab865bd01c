/*
 * The log an operator reads (csqd's stderr): one line per event worth
 * attention, at info, with key=value fields after the message (log.format
 * "text") or as one JSON object a line ("json"); with log.audit, a line
 * per match and release. On both engines.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int
is_memory(void)
{
	return strcmp(csqd_engine(), "memory") == 0;
}

/* The first line of the log that holds text, into line (or fails). */
static void
log_line(struct csqd *d, const char *text, char *line, size_t len)
{
	char buf[512];
	FILE *f;

	csqd_wait_log(d, text);
	f = fopen(d->log_path, "r");
	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f) != NULL)
		if (strstr(buf, text) != NULL) {
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(line, len, "%s", buf);
			fclose(f);
			return;
		}
	fclose(f);
	fail_at(__FILE__, __LINE__, "no log line with %s", text);
}

static int
setup_text(void **state)
{
	return csqd_fx_setup(state,
	                     "max_queue_length = 1;\n"
	                     "queues = ( { name = \"p\"; max_length = 2; "
	                     "} );\n");
}

/* Login, logout, loss, requeue, queue full, reload: each a line of
 * fields; the peer whose command caused it where csqd knows it. */
static void
text_lines(void **state)
{
	struct csqd_fx *fx = *state;
	char line[512], peer[64];
	redisReply *r;

	r = CMD(fx->c, "CLIENT INFO");
	snprintf(peer, sizeof(peer), "%s", strstr(r->str, "addr=") + 5);
	peer[strcspn(peer, " ")] = '\0';
	freeReplyObject(r);
	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 CAPACITY 2 QUEUES a,b"));
	log_line(fx->d, "servicer logged in ", line, sizeof(line));
	assert_non_null(
	    strstr(line, " info: servicer logged in servicer=s1 capacity=2 "
	                 "queues=a,b "));
	/* The memory engine runs the call as the command runs, so the
	 * event's line knows whose it was; on Redis the events come back
	 * from Redis, to every daemon, and carry no peer. */
	if (is_memory()) {
		char want[96];

		snprintf(want, sizeof(want), " peer=%s ", peer);
		assert_non_null(strstr(line, want));
	}
	assert_non_null(strstr(line, " event_id="));
	freeReplyObject(CMD(fx->c, "ENQUEUE u1 QUEUE a"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u2 QUEUE b"));
	freeReplyObject(CMD(fx->c, "ENQUEUE w1 QUEUE c"));
	CHECK(fx->c, "-FULL queue is at its maximum length",
	      "ENQUEUE w2 QUEUE c");
	log_line(fx->d, "queue full ", line, sizeof(line));
	assert_non_null(
	    strstr(line, " warning: queue full queue=c max_queue_length=1"));
	/* A queue with a max_length of its own names that limit, not the
	 * global one (issue 37: it said max_queue_length=1 here). */
	freeReplyObject(CMD(fx->c, "ENQUEUE p1 QUEUE p"));
	freeReplyObject(CMD(fx->c, "ENQUEUE p2 QUEUE p"));
	CHECK(fx->c, "-FULL queue is at its maximum length",
	      "ENQUEUE p3 QUEUE p");
	log_line(fx->d, "queue full queue=p ", line, sizeof(line));
	assert_non_null(
	    strstr(line, " warning: queue full queue=p max_length=2"));
	freeReplyObject(CMD(fx->c, "LEAVE p1"));
	freeReplyObject(CMD(fx->c, "LEAVE p2"));
	CHECK(fx->c, ":2", "LOGOUT s1");
	log_line(fx->d, "servicer logged out ", line, sizeof(line));
	assert_non_null(strstr(line, "servicer logged out servicer=s1 "
	                             "requeued=2 "));
	log_line(fx->d, "user requeued user=u1 ", line, sizeof(line));
	assert_non_null(strstr(line, "user requeued user=u1 queue=a tier=0 "
	                             "position=1 servicer=s1 room=s1/0 "
	                             "reason=logout "));
	/* A loss: the deadline's, no client's. */
	freeReplyObject(CMD(fx->c, "HEARTBEAT s2 QUEUES a TTL 1"));
	log_line(fx->d, "servicer lost ", line, sizeof(line));
	assert_non_null(strstr(line, "servicer lost servicer=s2 requeued=1 "));
	assert_null(strstr(line, " peer="));
	/* No audit lines unless log.audit. */
	assert_false(file_contains(fx->d->log_path, "audit: "));
	/* A reload names what changed, as a field. */
	csqd_rewrite_conf(fx->d, "max_queue_length = 2;\n"
	                         "queues = ( { name = \"p\"; max_length = 2; "
	                         "} );\n");
	kill(fx->d->pid, SIGHUP);
	log_line(fx->d, "configuration reloaded ", line, sizeof(line));
	assert_non_null(strstr(line, " changed=max_queue_length"));
	assert_non_null(strstr(line, " path="));
}

static int
setup_json(void **state)
{
	return csqd_fx_setup(state,
	                     "log: { format = \"json\"; audit = true; };\n");
}

/* Every line one JSON object; the audit lines with the match's and the
 * release's fields. */
static void
json_audit_lines(void **state)
{
	struct csqd_fx *fx = *state;
	char line[512], buf[512];
	int lines = 0;
	FILE *f;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s1"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u1 TIER 3"));
	CHECK(fx->c, ":1", "RELEASE s1/0");
	log_line(fx->d, "\"msg\":\"audit: matched\"", line, sizeof(line));
	assert_json_str(line, "level", "info");
	assert_json_str(line, "user", "u1");
	assert_json_str(line, "queue", "default");
	assert_json_int(line, "tier", 3);
	assert_json_str(line, "servicer", "s1");
	assert_json_str(line, "room", "s1/0");
	assert_json_has(line, "waited_ms");
	assert_json_has(line, "ts");
	log_line(fx->d, "\"msg\":\"audit: released\"", line, sizeof(line));
	assert_json_str(line, "user", "u1");
	assert_json_str(line, "room", "s1/0");
	assert_json_str(line, "by", "servicer");
	log_line(fx->d, "\"msg\":\"servicer logged in\"", line, sizeof(line));
	assert_json_str(line, "servicer", "s1");
	assert_json_int(line, "capacity", 1);
	/* Every line, the start's prose too, is an object. */
	f = fopen(fx->d->log_path, "r");
	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f) != NULL) {
		buf[strcspn(buf, "\n")] = '\0';
		if (buf[0] == '\0')
			continue;
		lines++;
		assert_int_equal(buf[0], '{');
		assert_int_equal(buf[strlen(buf) - 1], '}');
		assert_json_has(buf, "msg");
		assert_json_has(buf, "level");
	}
	fclose(f);
	assert_true(lines >= 5);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(text_lines, setup_text,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(json_audit_lines, setup_json,
	                                    csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
