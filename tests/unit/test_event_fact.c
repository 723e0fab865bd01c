/*
 * Events as facts (lib/event_fact.c): each kind, given as csq.so
 * publishes it (the Redis engine's events), becomes exactly the JSON that
 * the memory engine's event of the same kind is; a fact that is not one
 * is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "event_fact.h"

#define S(x)                                                                   \
	{                                                                      \
		CSQ_FACT_STR, 0, x, sizeof(x) - 1                              \
	}
#define I(x)                                                                   \
	{                                                                      \
		CSQ_FACT_INT, x, NULL, 0                                       \
	}
#define ABSENT                                                                 \
	{                                                                      \
		CSQ_FACT_ABSENT, 0, NULL, 0                                    \
	}

/* The fact of kind with the fields given becomes expect (ts 5, id 7: the
 * message's, which the caller gives), whatever the event held before: it
 * is decoded into one filled with 0xa5 (csq_event_from_fact clears the
 * long texts at their first byte only) and into one of zeroes. */
static void
assert_fact_json(const char *kind, const struct csq_fact_value *v, size_t n,
                 const char *expect)
{
	struct csq_event ev;
	char buf[4096];
	int poisoned;

	for (poisoned = 0; poisoned < 2; poisoned++) {
		memset(&ev, poisoned ? 0xa5 : 0, sizeof(ev));
		assert_int_equal(
		    csq_event_from_fact(&ev, kind, strlen(kind), v, n), 0);
		ev.ts_ms = 5;
		ev.id = 7;
		csq_event_json(&ev, buf, sizeof(buf));
		assert_string_equal(buf, expect);
	}
}

#define FACT_JSON(kind, expect, ...)                                           \
	do {                                                                   \
		const struct csq_fact_value v_[] = {__VA_ARGS__};              \
		assert_fact_json(kind, v_, sizeof(v_) / sizeof(v_[0]),         \
		                 expect);                                      \
	} while (0)

/* Every kind, in the order of its fields in the scripts' calls. */
static void
test_each_kind(void **state)
{
	(void)state;
	FACT_JSON("queued",
	          "{\"event\":\"queued\",\"id\":7,\"ts\":5,\"user\":\"u1\","
	          "\"queue\":\"default\",\"tier\":2,\"position\":3}",
	          S("u1"), S("default"), I(2), I(3));
	/* With its estimate (issue 38), after from_queue. */
	FACT_JSON("queued",
	          "{\"event\":\"queued\",\"id\":7,\"ts\":5,\"user\":\"u1\","
	          "\"queue\":\"default\",\"tier\":2,\"position\":3,"
	          "\"eta_ms\":-1}",
	          S("u1"), S("default"), I(2), I(3), ABSENT, I(-1));
	FACT_JSON("queued",
	          "{\"event\":\"queued\",\"id\":7,\"ts\":5,\"user\":\"u1\","
	          "\"queue\":\"default\",\"tier\":2,\"position\":3,"
	          "\"eta_ms\":61000}",
	          S("u1"), S("default"), I(2), I(3), ABSENT, I(61000));
	FACT_JSON("rescored",
	          "{\"event\":\"rescored\",\"id\":7,\"ts\":5,\"user\":\"u1\","
	          "\"queue\":\"b\",\"tier\":0,\"position\":1,"
	          "\"from_queue\":\"a\",\"reason\":\"enqueue\"}",
	          S("u1"), S("b"), I(0), I(1), S("a"));
	FACT_JSON("rescored",
	          "{\"event\":\"rescored\",\"id\":7,\"ts\":5,\"user\":\"u1\","
	          "\"queue\":\"b\",\"tier\":4,\"position\":1,"
	          "\"reason\":\"aging\"}",
	          S("u1"), S("b"), I(4), I(1), ABSENT, S("aging"));
	FACT_JSON("overflowed",
	          "{\"event\":\"overflowed\",\"id\":7,\"ts\":5,"
	          "\"user\":\"u1\",\"from_queue\":\"vip\","
	          "\"queue\":\"general\",\"tier\":1,\"position\":2}",
	          S("u1"), S("vip"), S("general"), I(1), I(2));
	FACT_JSON("prefer_ended",
	          "{\"event\":\"prefer_ended\",\"id\":7,\"ts\":5,"
	          "\"user\":\"u1\",\"queue\":\"q\",\"servicer\":\"s\","
	          "\"reason\":\"lost\"}",
	          S("u1"), S("q"), S("s"), S("lost"));
	FACT_JSON("matched",
	          "{\"event\":\"matched\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":1,\"servicer\":\"s.1\","
	          "\"room\":\"s.1/7\",\"waited_ms\":42}",
	          S("u"), S("q"), I(1), S("s.1"), I(7), I(42), ABSENT);
	FACT_JSON("matched",
	          "{\"event\":\"matched\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":1,\"servicer\":\"s\","
	          "\"room\":\"s/0\",\"waited_ms\":0,\"from_queue\":\"p\"}",
	          S("u"), S("q"), I(1), S("s"), S("s/0"), I(0), S("p"));
	/* Why it moved, at the end of the fact (issue 36): a daemon before
	 * it drops the field, as any past a kind's. */
	FACT_JSON("matched",
	          "{\"event\":\"matched\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":1,\"servicer\":\"s\","
	          "\"room\":\"s/0\",\"waited_ms\":0,\"from_queue\":\"p\","
	          "\"reason\":\"enqueue\"}",
	          S("u"), S("q"), I(1), S("s"), S("s/0"), I(0), S("p"), ABSENT,
	          ABSENT, S("enqueue"));
	FACT_JSON("offered",
	          "{\"event\":\"offered\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":1,\"servicer\":\"s\","
	          "\"room\":\"s/0\",\"expires_ms\":9,\"from_queue\":\"p\","
	          "\"reason\":\"overflow\"}",
	          S("u"), S("q"), I(1), S("s"), S("s/0"), I(9), S("p"), ABSENT,
	          S("overflow"));
	FACT_JSON("left",
	          "{\"event\":\"left\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"reason\":\"timeout\"}",
	          S("u"), S("q"), S("timeout"));
	FACT_JSON("released",
	          "{\"event\":\"released\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"servicer\":\"s\",\"room\":\"s/3\","
	          "\"by\":\"servicer\"}",
	          S("u"), S("q"), S("s"), I(3), S("servicer"));
	FACT_JSON("requeued",
	          "{\"event\":\"requeued\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":15,\"position\":9,"
	          "\"servicer\":\"s\",\"room\":\"s/0\",\"reason\":\"lost\"}",
	          S("u"), S("q"), I(15), I(9), S("s"), I(0), S("lost"));
	FACT_JSON(
	    "servicer_up",
	    "{\"event\":\"servicer_up\",\"id\":7,\"ts\":5,\"servicer\":\"s\","
	    "\"capacity\":3,\"queues\":[\"a\",\"b\",\"default\"]}",
	    S("s"), I(3), S("a,b,default"));
	FACT_JSON(
	    "servicer_up",
	    "{\"event\":\"servicer_up\",\"id\":7,\"ts\":5,\"servicer\":\"s\","
	    "\"capacity\":1,\"queues\":[]}",
	    S("s"), I(1), S(""));
	FACT_JSON(
	    "servicer_down",
	    "{\"event\":\"servicer_down\",\"id\":7,\"ts\":5,\"servicer\":\"s\","
	    "\"reason\":\"logout\"}",
	    S("s"), S("logout"));
	FACT_JSON("servicer_paused",
	          "{\"event\":\"servicer_paused\",\"id\":7,\"ts\":5,"
	          "\"servicer\":\"s\",\"reason\":\"pause\"}",
	          S("s"), S("pause"));
	FACT_JSON("servicer_paused",
	          "{\"event\":\"servicer_paused\",\"id\":7,\"ts\":5,"
	          "\"servicer\":\"s\",\"reason\":\"missed_offers\"}",
	          S("s"), S("missed_offers"));
	/* Routing (protocol-v2 sections 1, 1a, 2): the facts in these
	 * orders. */
	FACT_JSON("offered",
	          "{\"event\":\"offered\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":1,\"servicer\":\"s\","
	          "\"room\":\"s/2\",\"expires_ms\":1700000030000}",
	          S("u"), S("q"), I(1), S("s"), I(2), I(1700000030000LL),
	          ABSENT);
	FACT_JSON("matched",
	          "{\"event\":\"matched\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":1,\"servicer\":\"s\","
	          "\"room\":\"s/2\",\"waited_ms\":9000,"
	          "\"offered_ms\":0}",
	          S("u"), S("q"), I(1), S("s"), I(2), I(9000), ABSENT, I(0));
	FACT_JSON("declined",
	          "{\"event\":\"declined\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\","
	          "\"room\":\"s/0\",\"by\":\"timeout\",\"position\":3,"
	          "\"resting_until_ms\":15}",
	          S("u"), S("q"), I(0), S("s"), I(0), S("timeout"), I(3),
	          I(15));
	FACT_JSON("left",
	          "{\"event\":\"left\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"reason\":\"leave\",\"servicer\":\"s\","
	          "\"room\":\"s/1\"}",
	          S("u"), S("q"), S("leave"), S("s"), I(1));
	FACT_JSON("requeued",
	          "{\"event\":\"requeued\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":0,\"position\":1,"
	          "\"servicer\":\"s\",\"room\":\"s/0\",\"reason\":\"pause\"}",
	          S("u"), S("q"), I(0), I(1), S("s"), I(0), S("pause"));
	FACT_JSON("released",
	          "{\"event\":\"released\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"servicer\":\"s\",\"room\":\"s/0\","
	          "\"by\":\"transfer\"}",
	          S("u"), S("q"), S("s"), I(0), S("transfer"));
	FACT_JSON("transferred",
	          "{\"event\":\"transferred\",\"id\":7,\"ts\":5,"
	          "\"user\":\"u\",\"from_queue\":\"a\",\"queue\":\"b\","
	          "\"tier\":2,\"servicer\":\"s\",\"room\":\"s/0\","
	          "\"position\":4}",
	          S("u"), S("a"), S("b"), I(2), S("s"), I(0), I(4));
	FACT_JSON("wrapup",
	          "{\"event\":\"wrapup\",\"id\":7,\"ts\":5,\"servicer\":\"s\","
	          "\"room\":\"s/0\",\"until_ms\":1700000060000}",
	          S("s"), I(0), I(1700000060000LL));
	FACT_JSON("ready",
	          "{\"event\":\"ready\",\"id\":7,\"ts\":5,\"servicer\":\"s\","
	          "\"room\":\"s/0\"}",
	          S("s"), I(0));
	FACT_JSON("servicer_resumed",
	          "{\"event\":\"servicer_resumed\",\"id\":7,\"ts\":5,"
	          "\"servicer\":\"s\"}",
	          S("s"));
}

/* A newer script's fields past a kind's are left out; fields not given
 * are absent. */
static void
test_more_and_fewer_fields(void **state)
{
	(void)state;
	FACT_JSON("servicer_resumed",
	          "{\"event\":\"servicer_resumed\",\"id\":7,\"ts\":5,"
	          "\"servicer\":\"s\"}",
	          S("s"), S("pause"), I(99));
	FACT_JSON("queued",
	          "{\"event\":\"queued\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"\",\"tier\":0,\"position\":0}",
	          S("u"));
}

/* Limits are the ones libcsq keeps to: a larger number is cut to them. */
static void
test_clamped(void **state)
{
	(void)state;
	FACT_JSON(
	    "servicer_up",
	    "{\"event\":\"servicer_up\",\"id\":7,\"ts\":5,\"servicer\":\"s\","
	    "\"capacity\":1000,\"queues\":[\"a\"]}",
	    S("s"), I(123456), S("a"));
	FACT_JSON("queued",
	          "{\"event\":\"queued\",\"id\":7,\"ts\":5,\"user\":\"u\","
	          "\"queue\":\"q\",\"tier\":15,\"position\":"
	          "9007199254740993}",
	          S("u"), S("q"), I(99), I(9007199254740993LL));
}

static void
assert_refused(const char *kind, const struct csq_fact_value *v, size_t n)
{
	struct csq_event ev;

	if (csq_event_from_fact(&ev, kind, strlen(kind), v, n) == 0)
		fail_msg("accepted a fact of %s", kind);
}

#define REFUSED(kind, ...)                                                     \
	do {                                                                   \
		const struct csq_fact_value v_[] = {__VA_ARGS__};              \
		assert_refused(kind, v_, sizeof(v_) / sizeof(v_[0]));          \
	} while (0)

/* How I tried to break it: every field that is not what its place says. */
static void
test_refused(void **state)
{
	struct csq_event ev;

	(void)state;
	REFUSED("nonsense", S("u"));
	REFUSED("queue", S("u"));    /* a prefix of a kind */
	REFUSED("queuedx", S("u"));  /* a kind and more */
	REFUSED("unknown", S("u"));  /* csq_event_name's word for none */
	REFUSED("queued", I(1));     /* a user that is a number */
	REFUSED("queued", S(""));    /* an empty id */
	REFUSED("queued", S("a b")); /* not an id's characters */
	REFUSED("queued", S("u"), S("q"), S("2")); /* a tier as text */
	REFUSED("queued", S("u"), S("q"), I(-1));
	REFUSED("queued", S("u"), S("q"), I(0), I(-5));
	REFUSED("left", S("u"), S("q"), S("bored"));
	REFUSED("left", S("u"), S("q"), I(1));
	REFUSED("released", S("u"), S("q"), S("s"), S("s/x"), S("user"));
	REFUSED("released", S("u"), S("q"), S("s"), I(1000), S("user"));
	REFUSED("released", S("u"), S("q"), S("s"), I(-1), S("user"));
	/* A room by its index alone needs the servicer before it. */
	REFUSED("released", S("u"), S("q"), ABSENT, I(1), S("user"));
	REFUSED("servicer_up", S("s"), I(1), S("a,,b"));
	REFUSED("servicer_up", S("s"), I(1), S("a,"));
	REFUSED("servicer_up", S("s"), I(1), S(",a"));
	REFUSED("servicer_up", S("s"), S("1"));
	REFUSED("offered", S("u"), S("q"), I(0), S("s"), I(0), S("soon"));
	REFUSED("matched", S("u"), S("q"), I(0), S("s"), I(0), I(0), ABSENT,
	        I(-1));
	REFUSED("servicer_paused", S("s"), S("tired"));
	REFUSED("queued",
	        S("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	          "xxxxx")); /* 65 bytes: one past CSQ_ID_MAX */
	/* The length is what counts, not a NUL. */
	assert_int_equal(csq_event_from_fact(&ev, "leftover", 4, NULL, 0), 0);
	assert_int_equal(ev.type, CSQ_EV_LEFT);
}

/* The record's fields for the replay: as csq.so tells them, the JSON of
 * the memory engine's event; and every kind's event with all of them set
 * goes to a fact and back to the same JSON (what conformance compares). */
static void
test_record_fields(void **state)
{
	struct csq_fact_value v[CSQ_FACT_FIELDS_MAX];
	struct csq_event ev, back;
	char a[4096], b[4096];
	size_t n;
	int t;

	(void)state;
	FACT_JSON("queued",
	          "{\"event\":\"queued\",\"id\":7,\"ts\":5,\"user\":\"u1\","
	          "\"queue\":\"q\",\"tier\":0,\"position\":1,\"eta_ms\":-1,"
	          "\"needs\":\"de:2\",\"prefer\":\"s\",\"prefer_ms\":60000}",
	          S("u1"), S("q"), I(0), I(1), ABSENT, I(-1), S("de:2"), S("s"),
	          I(60000));
	FACT_JSON("matched",
	          "{\"event\":\"matched\",\"id\":7,\"ts\":5,\"user\":\"u1\","
	          "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\","
	          "\"room\":\"s/0\",\"waited_ms\":3,\"needs\":\"de:2\"}",
	          S("u1"), S("q"), I(0), S("s"), I(0), I(3), ABSENT, ABSENT,
	          S("de:2"));
	FACT_JSON("servicer_updated",
	          "{\"event\":\"servicer_updated\",\"id\":7,\"ts\":5,"
	          "\"servicer\":\"s\",\"capacity\":2,\"queues\":[\"a\"],"
	          "\"skills\":\"\"}",
	          S("s"), I(2), S("a"));
	REFUSED("servicer_up", S("s"), I(1), S("a"), S("de 5"));
	REFUSED("queued", S("u"), S("q"), I(0), I(1), ABSENT, I(-1), S("de"),
	        S("a/0"));
	REFUSED("queued", S("u"), S("q"), I(0), I(1), ABSENT, I(-1), S("de"),
	        S("s"), I(-1));
	REFUSED("transferred", S("u"), S("a"), S("b"), I(0), S("s"), I(0), I(1),
	        I(5));
	for (t = 0; t < CSQ_EV_TYPES; t++) {
		memset(&ev, 0, sizeof(ev));
		ev.type = (enum csq_event_type)t;
		ev.id = 7;
		ev.ts_ms = 5;
		strcpy(ev.user, "u");
		strcpy(ev.queue, "q");
		strcpy(ev.from_queue, "p");
		strcpy(ev.servicer, "s");
		strcpy(ev.room, "s/1");
		strcpy(ev.queues, "q,p");
		strcpy(ev.needs, "billing:2,de:1");
		strcpy(ev.skills, "de:5,fr:2");
		strcpy(ev.prefer, "s2");
		ev.prefer_ms = 59000;
		ev.capacity = 3;
		ev.has_eta = 1;
		ev.eta_ms = 4000;
		ev.reason = t == CSQ_EV_SERVICER_PAUSED ? CSQ_REASON_PAUSE
		                                        : CSQ_REASON_LOST;
		n = csq_event_to_fact(&ev, v);
		memset(&back, 0xa5, sizeof(back));
		assert_int_equal(
		    csq_event_from_fact(&back, csq_event_name(ev.type),
		                        strlen(csq_event_name(ev.type)), v, n),
		    0);
		back.id = ev.id;
		back.ts_ms = ev.ts_ms;
		csq_event_json(&ev, a, sizeof(a));
		csq_event_json(&back, b, sizeof(b));
		assert_string_equal(a, b);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_each_kind),
	    cmocka_unit_test(test_more_and_fewer_fields),
	    cmocka_unit_test(test_clamped),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_record_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
