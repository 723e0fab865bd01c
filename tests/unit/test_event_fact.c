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

/*
 * csq_event_to_fact against a reference written as the loop it replaced
 * was (each kind's fields in csq_event_json's order, read one by one by
 * type), on 20,000 events of every kind with each field present or
 * absent at random: the same count and the same values, so csq.so's
 * messages keep their bytes. How it was tried: a kind's writer with two
 * fields swapped, or one that kept a trailing absent field, fails it.
 */
enum ref_type { R_STR, R_REASON, R_U32, R_U64, R_ETA, R_OFFERED };

struct ref_field {
	enum ref_type type;
	size_t off;
};

#define RS(m)                                                                  \
	{                                                                      \
		R_STR, offsetof(struct csq_event, m)                           \
	}
#define RU(m)                                                                  \
	{                                                                      \
		R_U32, offsetof(struct csq_event, m)                           \
	}
#define RL(m)                                                                  \
	{                                                                      \
		R_U64, offsetof(struct csq_event, m)                           \
	}
#define RR                                                                     \
	{                                                                      \
		R_REASON, 0                                                    \
	}
#define RE                                                                     \
	{                                                                      \
		R_ETA, 0                                                       \
	}
#define RO                                                                     \
	{                                                                      \
		R_OFFERED, offsetof(struct csq_event, offered_ms)              \
	}
#define REF(...)                                                               \
	{                                                                      \
		sizeof((struct ref_field[]){__VA_ARGS__}) /                    \
		    sizeof(struct ref_field),                                  \
		{                                                              \
			__VA_ARGS__                                            \
		}                                                              \
	}

static const struct {
	size_t n;
	struct ref_field f[10];
} ref_kinds[CSQ_EV_TYPES] = {
    [CSQ_EV_QUEUED] =
        REF(RS(user), RS(queue), RU(tier), RL(position), RS(from_queue), RE,
            RS(needs), RS(prefer), RL(prefer_ms)),
    [CSQ_EV_RESCORED] = REF(RS(user), RS(queue), RU(tier), RL(position),
                            RS(from_queue), RR, RS(needs)),
    [CSQ_EV_MATCHED] =
        REF(RS(user), RS(queue), RU(tier), RS(servicer), RS(room),
            RL(waited_ms), RS(from_queue), RO, RS(needs), RR),
    [CSQ_EV_LEFT] = REF(RS(user), RS(queue), RR, RS(servicer), RS(room)),
    [CSQ_EV_RELEASED] = REF(RS(user), RS(queue), RS(servicer), RS(room), RR),
    [CSQ_EV_REQUEUED] = REF(RS(user), RS(queue), RU(tier), RL(position),
                            RS(servicer), RS(room), RR),
    [CSQ_EV_SERVICER_UP] =
        REF(RS(servicer), RU(capacity), RS(queues), RS(skills)),
    [CSQ_EV_SERVICER_DOWN] = REF(RS(servicer), RR),
    [CSQ_EV_SERVICER_PAUSED] = REF(RS(servicer), RR),
    [CSQ_EV_SERVICER_RESUMED] = REF(RS(servicer)),
    [CSQ_EV_OFFERED] =
        REF(RS(user), RS(queue), RU(tier), RS(servicer), RS(room),
            RL(expires_ms), RS(from_queue), RS(needs), RR),
    [CSQ_EV_DECLINED] = REF(RS(user), RS(queue), RU(tier), RS(servicer),
                            RS(room), RR, RL(position), RL(until_ms)),
    [CSQ_EV_TRANSFERRED] =
        REF(RS(user), RS(from_queue), RS(queue), RU(tier), RS(servicer),
            RS(room), RL(position), RS(needs), RS(prefer), RL(prefer_ms)),
    [CSQ_EV_WRAPUP] = REF(RS(servicer), RS(room), RL(until_ms)),
    [CSQ_EV_READY] = REF(RS(servicer), RS(room)),
    [CSQ_EV_OVERFLOWED] =
        REF(RS(user), RS(from_queue), RS(queue), RU(tier), RL(position), RR),
    [CSQ_EV_PREFER_ENDED] = REF(RS(user), RS(queue), RS(servicer), RR),
    [CSQ_EV_RELAXED] = REF(RS(user), RS(queue), RU(tier), RS(needs),
                           RS(dropped), RU(lowered), RL(position)),
    [CSQ_EV_OPENED] = REF(RS(queue), RL(until_ms)),
    [CSQ_EV_CLOSED] = REF(RS(queue), RL(until_ms)),
    [CSQ_EV_SERVICER_UPDATED] =
        REF(RS(servicer), RU(capacity), RS(queues), RS(skills)),
};

static size_t
ref_to_fact(const struct csq_event *ev, struct csq_fact_value *v)
{
	size_t i, n = 0;

	for (i = 0; i < ref_kinds[ev->type].n; i++) {
		const struct ref_field *f = &ref_kinds[ev->type].f[i];
		const char *at = (const char *)ev + f->off;
		uint32_t u32;
		uint64_t u64;

		memset(&v[i], 0, sizeof(v[i]));
		switch (f->type) {
		case R_STR:
			if (at[0] != '\0') {
				v[i].type = CSQ_FACT_STR;
				v[i].s = at;
				v[i].len = strlen(at);
			}
			break;
		case R_REASON:
			if (ev->reason != CSQ_REASON_NONE) {
				v[i].type = CSQ_FACT_STR;
				v[i].s = csq_reason_name(ev->reason);
				v[i].len = strlen(v[i].s);
			}
			break;
		case R_U32:
			memcpy(&u32, at, sizeof(u32));
			v[i].type = CSQ_FACT_INT;
			v[i].n = u32;
			break;
		case R_ETA:
			if (ev->has_eta) {
				v[i].type = CSQ_FACT_INT;
				v[i].n = ev->eta_ms;
			}
			break;
		case R_OFFERED:
			if (!ev->has_offered_ms)
				break;
			/* fall through */
		case R_U64:
			memcpy(&u64, at, sizeof(u64));
			v[i].type = CSQ_FACT_INT;
			v[i].n = (int64_t)u64;
			break;
		}
		if (v[i].type != CSQ_FACT_ABSENT)
			n = i + 1;
	}
	return n;
}

static uint64_t ref_seed = 88172645463325252ull;

static uint64_t
ref_rand(void)
{
	ref_seed ^= ref_seed << 13;
	ref_seed ^= ref_seed >> 7;
	ref_seed ^= ref_seed << 17;
	return ref_seed;
}

/* A string of 0 to max - 1 bytes into a member of max bytes: empty half
 * the time (absent), the rest filled to a random length. */
static void
ref_text(char *at, size_t max)
{
	size_t len = ref_rand() % 2 ? 0 : ref_rand() % max;

	memset(at, 'a' + (int)(ref_rand() % 26), len);
	at[len] = '\0';
}

static void
test_to_fact_reference(void **state)
{
	struct csq_fact_value v[CSQ_FACT_FIELDS_MAX], w[CSQ_FACT_FIELDS_MAX];
	struct csq_event ev;
	size_t k, i, n, m;

	(void)state;
	for (k = 0; k < 20000; k++) {
		memset(&ev, 0x5a, sizeof(ev));
		ev.type = (enum csq_event_type)(k % CSQ_EV_TYPES);
		ref_text(ev.user, sizeof(ev.user));
		ref_text(ev.queue, sizeof(ev.queue));
		ref_text(ev.from_queue, sizeof(ev.from_queue));
		ref_text(ev.servicer, sizeof(ev.servicer));
		ref_text(ev.room, sizeof(ev.room));
		ref_text(ev.queues, sizeof(ev.queues));
		ref_text(ev.needs, sizeof(ev.needs));
		ref_text(ev.dropped, sizeof(ev.dropped));
		ref_text(ev.skills, sizeof(ev.skills));
		ref_text(ev.prefer, sizeof(ev.prefer));
		ev.tier = (uint32_t)ref_rand();
		ev.capacity = (uint32_t)ref_rand();
		ev.lowered = (uint32_t)ref_rand();
		ev.position = ref_rand() >> (ref_rand() % 64);
		ev.waited_ms = ref_rand() >> (ref_rand() % 64);
		ev.offered_ms = ref_rand();
		ev.expires_ms = ref_rand();
		ev.until_ms = ref_rand();
		ev.prefer_ms = ref_rand();
		ev.eta_ms = (int64_t)(ref_rand() % 100000) - 1;
		ev.has_eta = (int)(ref_rand() % 2);
		ev.has_offered_ms = (int)(ref_rand() % 2);
		ev.reason =
		    (enum csq_reason)(ref_rand() % (CSQ_REASON_LAST + 1));
		memset(v, 0xa5, sizeof(v));
		n = csq_event_to_fact(&ev, v);
		m = ref_to_fact(&ev, w);
		assert_int_equal(n, m);
		for (i = 0; i < n; i++) {
			assert_int_equal(v[i].type, w[i].type);
			assert_int_equal(v[i].n, w[i].n);
			assert_ptr_equal(v[i].s, w[i].s);
			assert_int_equal(v[i].len, w[i].len);
		}
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
	    cmocka_unit_test(test_to_fact_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
