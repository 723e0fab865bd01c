/*
 * csq_event_parse: every event type, with every field it has and every
 * reason, goes through csq_event_json and back to the same text; fields
 * and types of a newer csq are skipped; garbage is refused with a reason
 * and never read past its end. How it was tried to break: each line cut
 * at every length, wrong types, ids out of syntax, numbers out of range,
 * deep nesting, escapes; and the record's fields for the replay (needs,
 * prefer, prefer_ms, skills) each with garbage in it: a skill list that
 * csq would refuse, too many skills, an id out of syntax, a negative or
 * fractional window, a wrong JSON type.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "csq.h"
#include "event_parse.h"

/* An event of type t with every field set that its JSON may carry. */
static void
ev_full(struct csq_event *ev, enum csq_event_type t, enum csq_reason r)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = t;
	ev->id = UINT64_MAX - 1;
	ev->ts_ms = 1795946400123ULL;
	strcpy(ev->user, "u.1:x@y-z");
	strcpy(ev->queue, "sales");
	strcpy(ev->from_queue, "vip");
	strcpy(ev->servicer, "agent_7");
	strcpy(ev->room, "agent_7/12");
	ev->tier = 9;
	ev->position = 18446744073709551615ULL;
	ev->waited_ms = 5312;
	ev->offered_ms = 0;
	ev->has_offered_ms = 1;
	ev->expires_ms = 1795946430123ULL;
	ev->until_ms = 1795946460123ULL;
	ev->capacity = 4294967295U;
	ev->eta_ms = INT64_MAX;
	ev->has_eta = 1;
	strcpy(ev->queues, "a,b,sales");
	strcpy(ev->needs, "de:5,fr");
	strcpy(ev->dropped, "billing");
	ev->lowered = 2;
	strcpy(ev->skills, "billing:3,de:100,x.y_z-1:1");
	strcpy(ev->prefer, "agent_8");
	ev->prefer_ms = 3600000;
	ev->reason = r;
}

static void
assert_round_trip(const struct csq_event *ev)
{
	char a[4096], b[4096], err[CSQ_PARSE_ERR_MAX];
	struct csq_event back;
	int n = csq_event_json(ev, a, sizeof(a));

	assert_true(n > 0 && (size_t)n < sizeof(a));
	if (csq_event_parse(a, (size_t)n, &back, err) != CSQ_PARSE_OK)
		fail_msg("%s: %s", a, err);
	assert_int_equal(back.type, ev->type);
	assert_true(back.id == ev->id && back.ts_ms == ev->ts_ms);
	csq_event_json(&back, b, sizeof(b));
	assert_string_equal(a, b);
}

static void
test_round_trip_every_type_and_reason(void **state)
{
	struct csq_event ev;
	int t, r;

	(void)state;
	for (t = 0; t < CSQ_EV_TYPES; t++)
		for (r = CSQ_REASON_NONE; r <= CSQ_REASON_QUEUES; r++) {
			ev_full(&ev, (enum csq_event_type)t,
			        (enum csq_reason)r);
			assert_round_trip(&ev);
			/* And with the optional fields empty. */
			if (t != CSQ_EV_OVERFLOWED && t != CSQ_EV_TRANSFERRED)
				ev.from_queue[0] = '\0';
			ev.has_offered_ms = 0;
			ev.queues[0] = '\0';
			ev.needs[0] = ev.dropped[0] = '\0';
			ev.skills[0] = ev.prefer[0] = '\0';
			if (t != CSQ_EV_LEFT)
				assert_round_trip(&ev);
			/* queued's estimate: none yet, and none at all (a
			 * record of a csq before issue 38). */
			ev.eta_ms = -1;
			assert_round_trip(&ev);
			ev.has_eta = 0;
			assert_round_trip(&ev);
			ev.servicer[0] = ev.room[0] = '\0';
			if (t == CSQ_EV_LEFT || t == CSQ_EV_QUEUED)
				assert_round_trip(&ev);
		}
}

static enum csq_event_parse
parse(const char *s, struct csq_event *ev, char *err)
{
	return csq_event_parse(s, strlen(s), ev, err);
}

static void
test_newer_fields_and_types(void **state)
{
	char err[CSQ_PARSE_ERR_MAX];
	struct csq_event ev;

	(void)state;
	/* A newer csq's fields, of every JSON kind, in any order. */
	assert_int_equal(
	    parse(" { \"wants\" : [\"fr\", {\"x\": [1, -2.5e3, true, null]}],"
	          "\"ts\":5,\"talents\":{},\"event\":\"queued\",\"id\":3,"
	          "\"user\":\"u\\u0031\",\"queue\":\"q\",\"x\":\"\\\"\\\\\\/"
	          "\\b\\f\\n\\r\\t\"} ",
	          &ev, err),
	    CSQ_PARSE_OK);
	assert_int_equal(ev.type, CSQ_EV_QUEUED);
	assert_int_equal(ev.id, 3);
	assert_int_equal(ev.ts_ms, 5);
	assert_string_equal(ev.user, "u1");
	/* A newer type: well formed, reported as unknown, id and ts kept. */
	assert_int_equal(parse("{\"event\":\"unwound\",\"id\":9,\"ts\":1,"
	                       "\"user\":\"u\",\"wants\":[\"fr\"]}",
	                       &ev, err),
	                 CSQ_PARSE_UNKNOWN);
	assert_int_equal(ev.id, 9);
	/* A newer reason: kept as none. */
	assert_int_equal(parse("{\"event\":\"left\",\"id\":1,\"ts\":1,"
	                       "\"user\":\"u\",\"queue\":\"q\","
	                       "\"reason\":\"moon\"}",
	                       &ev, err),
	                 CSQ_PARSE_OK);
	assert_int_equal(ev.reason, CSQ_REASON_NONE);
}

static void
test_garbage_refused(void **state)
{
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{}",
	    "null",
	    "{\"event\":\"queued\",\"id\":1}",
	    "{\"event\":\"queued\",\"ts\":1}",
	    "{\"id\":1,\"ts\":1}",
	    "{\"event\":\"queued\",\"id\":-1,\"ts\":1}",
	    "{\"event\":\"queued\",\"id\":1.5,\"ts\":1}",
	    "{\"event\":\"queued\",\"id\":01,\"ts\":1}",
	    "{\"event\":\"queued\",\"id\":18446744073709551616,\"ts\":1}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"tier\":4294967296}",
	    "{\"event\":\"queued\",\"id\":\"1\",\"ts\":1}",
	    "{\"event\":7,\"id\":1,\"ts\":1}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"user\":\"a b\"}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"user\":\"\\u00e9\"}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"room\":\"s1\"}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"queues\":[1]}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"queues\":\"a\"}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"x\":tru}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"x\":\"\\q\"}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"x\":\"\\u12\"}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"x\":-}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1}x",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,}",
	    "{\"event\":\"queued\" \"id\":1,\"ts\":1}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"x\":\"a\nb\"}",
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"x\":"
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
	    "]]]"
	    "]]]]]]]}",
	};
	char err[CSQ_PARSE_ERR_MAX], user[80];
	struct csq_event ev;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &ev, err) != CSQ_PARSE_ERROR)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err[0] != '\0');
	}
	/* An id one byte over the limit. */
	memset(user, 'u', CSQ_ID_MAX + 1);
	user[CSQ_ID_MAX + 1] = '\0';
	{
		char line[256];

		snprintf(
		    line, sizeof(line),
		    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"user\":\"%s\"}",
		    user);
		assert_int_equal(parse(line, &ev, err), CSQ_PARSE_ERROR);
	}
}

/* Every prefix of a good line is refused, read within its length (ASan
 * would see a byte past a heap copy of exactly that length). */
/* The fields the replay takes from a record: garbage in any of them is
 * refused with its reason (csq-day says which line), never handed on. */
static void
test_record_fields_garbage(void **state)
{
	static const char *const bad[] = {
	    "\"needs\":\"de::5\"",
	    "\"needs\":\"de:0\"",
	    "\"needs\":\"de:101\"",
	    "\"needs\":\"de:05\"",
	    "\"needs\":\"de,,fr\"",
	    "\"needs\":\"de,de:2\"",
	    "\"needs\":\",de\"",
	    "\"needs\":\"a,b,c,d,e,f,g,h,i\"", /* 9: a user has 8 */
	    "\"needs\":\"d e\"",
	    "\"needs\":\"de@x\"",
	    "\"needs\":5",
	    "\"needs\":[\"de\"]",
	    "\"skills\":\"de:5:5\"",
	    "\"skills\":\"de:-1\"",
	    "\"skills\":\"x:1,x:2\"",
	    "\"skills\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", /* 33 bytes */
	    "\"skills\":null",
	    "\"dropped\":\"de,,\"",
	    "\"prefer\":\"\"",
	    "\"prefer\":\"a b\"",
	    "\"prefer\":\"s1/0\"",
	    "\"prefer\":7",
	    "\"prefer_ms\":-1",
	    "\"prefer_ms\":1.5",
	    "\"prefer_ms\":1e3",
	    "\"prefer_ms\":\"60000\"",
	    "\"prefer_ms\":18446744073709551616",
	};
	char line[2600], err[CSQ_PARSE_ERR_MAX], skills[2048];
	struct csq_event ev;
	size_t i, off;
	int k;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line),
		         "{\"event\":\"queued\",\"id\":1,\"ts\":1,"
		         "\"user\":\"u\",\"queue\":\"q\",%s}",
		         bad[i]);
		if (parse(line, &ev, err) != CSQ_PARSE_ERROR)
			fail_msg("accepted: %s", line);
		assert_true(err[0] != '\0');
	}
	/* The most a servicer has, 32, is read; 33 are not. */
	for (k = 0, off = 0; k < 33; k++)
		off += (size_t)snprintf(skills + off, sizeof(skills) - off,
		                        "%ss%02d:%d", k ? "," : "", k, k + 1);
	snprintf(line, sizeof(line),
	         "{\"event\":\"servicer_up\",\"id\":1,\"ts\":1,"
	         "\"skills\":\"%s\"}",
	         skills);
	assert_int_equal(parse(line, &ev, err), CSQ_PARSE_ERROR);
	*strrchr(skills, ',') = '\0';
	snprintf(line, sizeof(line),
	         "{\"event\":\"servicer_up\",\"id\":1,\"ts\":1,"
	         "\"skills\":\"%s\"}",
	         skills);
	assert_int_equal(parse(line, &ev, err), CSQ_PARSE_OK);
	assert_string_equal(ev.skills, skills);
	/* Good ones, read as written; empty is none. */
	assert_int_equal(parse("{\"event\":\"queued\",\"id\":1,\"ts\":1,"
	                       "\"needs\":\"billing:2,de:1\","
	                       "\"prefer\":\"s1\",\"prefer_ms\":0}",
	                       &ev, err),
	                 CSQ_PARSE_OK);
	assert_string_equal(ev.needs, "billing:2,de:1");
	assert_string_equal(ev.prefer, "s1");
	assert_int_equal(ev.prefer_ms, 0);
	assert_int_equal(parse("{\"event\":\"servicer_updated\",\"id\":1,"
	                       "\"ts\":1,\"servicer\":\"s\",\"capacity\":3,"
	                       "\"queues\":[\"q\"],\"skills\":\"\"}",
	                       &ev, err),
	                 CSQ_PARSE_OK);
	assert_int_equal(ev.type, CSQ_EV_SERVICER_UPDATED);
	assert_int_equal(ev.capacity, 3);
	assert_string_equal(ev.skills, "");
}

/*
 * fuzz/fuzz_event.c's finding: a line without an id field that its type
 * always prints ({"event":"queued","id":1,"ts":1}) parsed, and printed
 * as "user":"" which did not. "" is none now in user, queue, from_queue,
 * servicer and room, as csq_event_json writes it: for every type, a line
 * with its header alone, and one with each of those fields "", prints
 * into a line that parses and prints the same. "prefer", written only
 * when there is one, still refuses "" (test_record_fields_garbage).
 */
static void
test_printed_lines_parse(void **state)
{
	static const char *const ids[] = {"user", "queue", "from_queue",
	                                  "servicer", "room"};
	char line[256], a[4096], b[4096], err[CSQ_PARSE_ERR_MAX];
	struct csq_event ev, back;
	size_t i;
	int t, n;

	(void)state;
	for (t = 0; t < CSQ_EV_TYPES; t++)
		for (i = 0; i <= sizeof(ids) / sizeof(ids[0]); i++) {
			if (i == 0)
				snprintf(
				    line, sizeof(line),
				    "{\"event\":\"%s\",\"id\":1,\"ts\":2}",
				    csq_event_name((enum csq_event_type)t));
			else
				snprintf(line, sizeof(line),
				         "{\"event\":\"%s\",\"id\":1,\"ts\":2,"
				         "\"%s\":\"\"}",
				         csq_event_name((enum csq_event_type)t),
				         ids[i - 1]);
			if (parse(line, &ev, err) != CSQ_PARSE_OK)
				fail_msg("%s: %s", line, err);
			n = csq_event_json(&ev, a, sizeof(a));
			if (csq_event_parse(a, (size_t)n, &back, err) !=
			    CSQ_PARSE_OK)
				fail_msg("%s printed as %s: %s", line, a, err);
			csq_event_json(&back, b, sizeof(b));
			assert_string_equal(a, b);
		}
	/* "" is none, as a field left out is. */
	assert_int_equal(parse("{\"event\":\"matched\",\"id\":1,\"ts\":1,"
	                       "\"user\":\"\",\"room\":\"\"}",
	                       &ev, err),
	                 CSQ_PARSE_OK);
	assert_string_equal(ev.user, "");
	assert_string_equal(ev.room, "");
}

static void
test_every_cut_refused(void **state)
{
	char line[4096], err[CSQ_PARSE_ERR_MAX], *copy;
	struct csq_event ev;
	int n;
	size_t k;

	(void)state;
	ev_full(&ev, CSQ_EV_SERVICER_UP, CSQ_REASON_NONE);
	n = csq_event_json(&ev, line, sizeof(line));
	for (k = 0; k < (size_t)n; k++) {
		copy = malloc(k + 1);
		memcpy(copy, line, k);
		assert_int_equal(csq_event_parse(copy, k, &ev, err),
		                 CSQ_PARSE_ERROR);
		free(copy);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip_every_type_and_reason),
	    cmocka_unit_test(test_newer_fields_and_types),
	    cmocka_unit_test(test_garbage_refused),
	    cmocka_unit_test(test_record_fields_garbage),
	    cmocka_unit_test(test_every_cut_refused),
	    cmocka_unit_test(test_printed_lines_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
