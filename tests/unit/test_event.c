/* Events: the exact JSON of each type and the channels each goes to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "csq.h"
#include "fixture.h"
#include "state.h"

static void
ev_init(struct csq_event *ev, enum csq_event_type type)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->id = 42;
	ev->ts_ms = 1700000000123ULL;
}

/* Both ways csq_event_json writes: straight into a buffer of
 * CSQ_EVENT_JSON_MAX bytes (the record's), and through a copy into a
 * shorter one (server.c's 4096). */
static void
assert_json(const struct csq_event *ev, const char *expect)
{
	static char big[CSQ_EVENT_JSON_MAX];
	char buf[4096];
	int n = csq_event_json(ev, buf, sizeof(buf));

	assert_int_equal(n, (int)strlen(expect));
	assert_string_equal(buf, expect);
	assert_int_equal(csq_event_json(ev, big, sizeof(big)), n);
	assert_string_equal(big, expect);
}

static void
test_json_each_type(void **state)
{
	struct csq_event ev;

	(void)state;
	ev_init(&ev, CSQ_EV_QUEUED);
	strcpy(ev.user, "u1");
	strcpy(ev.queue, "default");
	ev.tier = 2;
	ev.position = 3;
	assert_json(&ev, "{\"event\":\"queued\",\"id\":42,\"ts\":1700000000123,"
	                 "\"user\":\"u1\",\"queue\":\"default\",\"tier\":2,"
	                 "\"position\":3}");
	/* With its estimate (issue 38): -1 none yet, or ms. */
	ev.has_eta = 1;
	ev.eta_ms = -1;
	assert_json(&ev, "{\"event\":\"queued\",\"id\":42,\"ts\":1700000000123,"
	                 "\"user\":\"u1\",\"queue\":\"default\",\"tier\":2,"
	                 "\"position\":3,\"eta_ms\":-1}");
	ev.eta_ms = 95000;
	assert_json(&ev, "{\"event\":\"queued\",\"id\":42,\"ts\":1700000000123,"
	                 "\"user\":\"u1\",\"queue\":\"default\",\"tier\":2,"
	                 "\"position\":3,\"eta_ms\":95000}");
	ev.has_eta = 0;
	ev.type = CSQ_EV_RESCORED;
	strcpy(ev.from_queue, "old");
	/* A v1 rescore (ENQUEUE's) says so without being told. */
	assert_json(&ev,
	            "{\"event\":\"rescored\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"default\",\"tier\":2,"
	            "\"position\":3,\"from_queue\":\"old\","
	            "\"reason\":\"enqueue\"}");
	ev.from_queue[0] = '\0';
	ev.reason = CSQ_REASON_AGING;
	assert_json(&ev,
	            "{\"event\":\"rescored\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"default\",\"tier\":2,"
	            "\"position\":3,\"reason\":\"aging\"}");

	ev_init(&ev, CSQ_EV_OVERFLOWED);
	strcpy(ev.user, "u1");
	strcpy(ev.from_queue, "vip");
	strcpy(ev.queue, "general");
	ev.tier = 1;
	ev.position = 4;
	assert_json(&ev, "{\"event\":\"overflowed\",\"id\":42,"
	                 "\"ts\":1700000000123,\"user\":\"u1\","
	                 "\"from_queue\":\"vip\",\"queue\":\"general\","
	                 "\"tier\":1,\"position\":4}");

	ev_init(&ev, CSQ_EV_PREFER_ENDED);
	strcpy(ev.user, "u1");
	strcpy(ev.queue, "q");
	strcpy(ev.servicer, "alice");
	ev.reason = CSQ_REASON_QUEUES;
	assert_json(&ev, "{\"event\":\"prefer_ended\",\"id\":42,"
	                 "\"ts\":1700000000123,\"user\":\"u1\",\"queue\":\"q\","
	                 "\"servicer\":\"alice\",\"reason\":\"queues\"}");

	ev_init(&ev, CSQ_EV_MATCHED);
	strcpy(ev.user, "u1");
	strcpy(ev.queue, "q");
	strcpy(ev.servicer, "s");
	strcpy(ev.room, "s/0");
	ev.waited_ms = 42;
	assert_json(&ev,
	            "{\"event\":\"matched\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"q\",\"tier\":0,"
	            "\"servicer\":\"s\",\"room\":\"s/0\","
	            "\"waited_ms\":42}");
	strcpy(ev.from_queue, "old");
	assert_json(&ev,
	            "{\"event\":\"matched\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"q\",\"tier\":0,"
	            "\"servicer\":\"s\",\"room\":\"s/0\","
	            "\"waited_ms\":42,\"from_queue\":\"old\"}");
	/* Why it moved (issue 36): last, as in its fact. */
	ev.reason = CSQ_REASON_ENQUEUE;
	assert_json(&ev,
	            "{\"event\":\"matched\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"q\",\"tier\":0,"
	            "\"servicer\":\"s\",\"room\":\"s/0\","
	            "\"waited_ms\":42,\"from_queue\":\"old\","
	            "\"reason\":\"enqueue\"}");
	ev.type = CSQ_EV_OFFERED;
	ev.reason = CSQ_REASON_OVERFLOW;
	ev.expires_ms = 9;
	assert_json(&ev,
	            "{\"event\":\"offered\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"q\",\"tier\":0,"
	            "\"servicer\":\"s\",\"room\":\"s/0\","
	            "\"expires_ms\":9,\"from_queue\":\"old\","
	            "\"reason\":\"overflow\"}");
	ev.type = CSQ_EV_RELEASED;
	ev.reason = CSQ_REASON_BY_USER;
	assert_json(&ev,
	            "{\"event\":\"released\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"q\",\"servicer\":\"s\","
	            "\"room\":\"s/0\",\"by\":\"user\"}");
	ev.type = CSQ_EV_REQUEUED;
	ev.reason = CSQ_REASON_LOST;
	ev.position = 1;
	assert_json(&ev,
	            "{\"event\":\"requeued\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"q\",\"tier\":0,"
	            "\"position\":1,\"servicer\":\"s\",\"room\":\"s/0\","
	            "\"reason\":\"lost\"}");

	ev_init(&ev, CSQ_EV_LEFT);
	strcpy(ev.user, "u1");
	strcpy(ev.queue, "q");
	ev.reason = CSQ_REASON_TIMEOUT;
	assert_json(&ev, "{\"event\":\"left\",\"id\":42,\"ts\":1700000000123,"
	                 "\"user\":\"u1\",\"queue\":\"q\",\"reason\":"
	                 "\"timeout\"}");

	ev_init(&ev, CSQ_EV_SERVICER_UP);
	strcpy(ev.servicer, "agent-7");
	ev.capacity = 3;
	strcpy(ev.queues, "a,b.c,default");
	assert_json(&ev,
	            "{\"event\":\"servicer_up\",\"id\":42,\"ts\":1700000000123,"
	            "\"servicer\":\"agent-7\",\"capacity\":3,"
	            "\"queues\":[\"a\",\"b.c\",\"default\"]}");
	ev.type = CSQ_EV_SERVICER_DOWN;
	ev.reason = CSQ_REASON_LOGOUT;
	assert_json(
	    &ev, "{\"event\":\"servicer_down\",\"id\":42,\"ts\":1700000000123,"
	         "\"servicer\":\"agent-7\",\"reason\":\"logout\"}");
	ev.type = CSQ_EV_SERVICER_PAUSED;
	ev.reason = CSQ_REASON_MISSED_OFFERS;
	assert_json(&ev, "{\"event\":\"servicer_paused\",\"id\":42,\"ts\":"
	                 "1700000000123,\"servicer\":\"agent-7\","
	                 "\"reason\":\"missed_offers\"}");
	ev.reason = CSQ_REASON_PAUSE;
	assert_json(&ev, "{\"event\":\"servicer_paused\",\"id\":42,\"ts\":"
	                 "1700000000123,\"servicer\":\"agent-7\","
	                 "\"reason\":\"pause\"}");
	ev.type = CSQ_EV_SERVICER_RESUMED;
	assert_json(&ev, "{\"event\":\"servicer_resumed\",\"id\":42,\"ts\":"
	                 "1700000000123,\"servicer\":\"agent-7\"}");

	/* The routing events of protocol-v2 sections 1, 1a and 2. */
	ev_init(&ev, CSQ_EV_OFFERED);
	strcpy(ev.user, "u1");
	strcpy(ev.queue, "q");
	ev.tier = 1;
	strcpy(ev.servicer, "s");
	strcpy(ev.room, "s/2");
	ev.expires_ms = 1700000030123ULL;
	assert_json(&ev, "{\"event\":\"offered\",\"id\":42,\"ts\":"
	                 "1700000000123,\"user\":\"u1\",\"queue\":\"q\","
	                 "\"tier\":1,\"servicer\":\"s\",\"room\":\"s/2\","
	                 "\"expires_ms\":1700000030123}");
	ev.type = CSQ_EV_MATCHED;
	ev.waited_ms = 9000;
	ev.offered_ms = 4000;
	ev.has_offered_ms = 1;
	assert_json(&ev, "{\"event\":\"matched\",\"id\":42,\"ts\":"
	                 "1700000000123,\"user\":\"u1\",\"queue\":\"q\","
	                 "\"tier\":1,\"servicer\":\"s\",\"room\":\"s/2\","
	                 "\"waited_ms\":9000,\"offered_ms\":4000}");
	ev.type = CSQ_EV_DECLINED;
	ev.reason = CSQ_REASON_TIMEOUT;
	ev.position = 4;
	assert_json(&ev, "{\"event\":\"declined\",\"id\":42,\"ts\":"
	                 "1700000000123,\"user\":\"u1\",\"queue\":\"q\","
	                 "\"tier\":1,\"servicer\":\"s\",\"room\":\"s/2\","
	                 "\"by\":\"timeout\",\"position\":4,"
	                 "\"resting_until_ms\":0}");
	ev.until_ms = 1700000010123; /* resting after it: offer_retry 10 */
	assert_json(&ev, "{\"event\":\"declined\",\"id\":42,\"ts\":"
	                 "1700000000123,\"user\":\"u1\",\"queue\":\"q\","
	                 "\"tier\":1,\"servicer\":\"s\",\"room\":\"s/2\","
	                 "\"by\":\"timeout\",\"position\":4,"
	                 "\"resting_until_ms\":1700000010123}");
	ev.until_ms = 0;
	ev.type = CSQ_EV_LEFT;
	ev.reason = CSQ_REASON_LEAVE;
	assert_json(&ev, "{\"event\":\"left\",\"id\":42,\"ts\":"
	                 "1700000000123,\"user\":\"u1\",\"queue\":\"q\","
	                 "\"reason\":\"leave\",\"servicer\":\"s\","
	                 "\"room\":\"s/2\"}");
	ev.type = CSQ_EV_REQUEUED;
	ev.reason = CSQ_REASON_PAUSE;
	assert_json(&ev, "{\"event\":\"requeued\",\"id\":42,\"ts\":"
	                 "1700000000123,\"user\":\"u1\",\"queue\":\"q\","
	                 "\"tier\":1,\"position\":4,\"servicer\":\"s\","
	                 "\"room\":\"s/2\",\"reason\":\"pause\"}");
	ev.type = CSQ_EV_RELEASED;
	ev.reason = CSQ_REASON_BY_TRANSFER;
	assert_json(&ev, "{\"event\":\"released\",\"id\":42,\"ts\":"
	                 "1700000000123,\"user\":\"u1\",\"queue\":\"q\","
	                 "\"servicer\":\"s\",\"room\":\"s/2\","
	                 "\"by\":\"transfer\"}");
	ev.type = CSQ_EV_TRANSFERRED;
	strcpy(ev.from_queue, "sales");
	ev.position = 2;
	assert_json(&ev, "{\"event\":\"transferred\",\"id\":42,\"ts\":"
	                 "1700000000123,\"user\":\"u1\",\"from_queue\":"
	                 "\"sales\",\"queue\":\"q\",\"tier\":1,"
	                 "\"servicer\":\"s\",\"room\":\"s/2\","
	                 "\"position\":2}");

	ev_init(&ev, CSQ_EV_WRAPUP);
	strcpy(ev.servicer, "s");
	strcpy(ev.room, "s/0");
	ev.until_ms = 1700000060123ULL;
	assert_json(&ev, "{\"event\":\"wrapup\",\"id\":42,\"ts\":"
	                 "1700000000123,\"servicer\":\"s\",\"room\":"
	                 "\"s/0\",\"until_ms\":1700000060123}");
	ev.type = CSQ_EV_READY;
	assert_json(&ev, "{\"event\":\"ready\",\"id\":42,\"ts\":"
	                 "1700000000123,\"servicer\":\"s\",\"room\":"
	                 "\"s/0\"}");
}

/* A short buffer: the length comes back as snprintf's, nothing overruns. */
static void
test_json_truncates(void **state)
{
	struct csq_event ev;
	char buf[10];
	char full[512];
	int n;

	(void)state;
	ev_init(&ev, CSQ_EV_SERVICER_PAUSED);
	strcpy(ev.servicer, "s");
	n = csq_event_json(&ev, buf, sizeof(buf));
	assert_int_equal(n, csq_event_json(&ev, full, sizeof(full)));
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_memory_equal(buf, full, sizeof(buf) - 1);
}

/* The longest events there can be fit csqd's 4096 bytes (server.c's
 * EVENT_JSON_MAX, the record's RECORD_LINE_MAX): a servicer with 32
 * queues of 64 bytes and 32 skills of 32 bytes at level 100, and a
 * transferred with every field at its longest. */
static void
test_json_longest(void **state)
{
	struct csq_event ev;
	char buf[8192], name[CSQ_ID_MAX];
	size_t off = 0;
	int i, n;

	(void)state;
	ev_init(&ev, CSQ_EV_SERVICER_UPDATED);
	ev.id = ev.ts_ms = UINT64_MAX;
	memset(ev.servicer, 's', CSQ_ID_MAX);
	ev.capacity = CSQ_CAPACITY_MAX;
	memset(name, 'q', sizeof(name));
	for (i = 0; i < CSQ_SERVICER_QUEUES; i++)
		off += (size_t)snprintf(ev.queues + off,
		                        sizeof(ev.queues) - off, "%s%.*s%02d",
		                        i ? "," : "", CSQ_ID_MAX - 2, name, i);
	assert_int_equal(off, sizeof(ev.queues) - 1);
	for (i = 0, off = 0; i < CSQ_SERVICER_SKILLS; i++)
		off += (size_t)snprintf(ev.skills + off,
		                        sizeof(ev.skills) - off, "%s%0*d:100",
		                        i ? "," : "", CSQ_SKILL_NAME_MAX, i);
	n = csq_event_json(&ev, buf, sizeof(buf));
	assert_true(n < 4096);
	ev.type = CSQ_EV_SERVICER_UP; /* its name 5 bytes shorter */
	assert_int_equal(csq_event_json(&ev, buf, sizeof(buf)), n - 5);
	ev_init(&ev, CSQ_EV_TRANSFERRED);
	ev.id = ev.ts_ms = ev.position = ev.prefer_ms = UINT64_MAX;
	memset(ev.user, 'u', CSQ_ID_MAX);
	memset(ev.queue, 'q', CSQ_ID_MAX);
	memset(ev.from_queue, 'f', CSQ_ID_MAX);
	memset(ev.servicer, 's', CSQ_ID_MAX);
	memset(ev.prefer, 'p', CSQ_ID_MAX);
	memset(ev.room, 'r', CSQ_ROOM_MAX);
	memset(ev.needs, 'n', sizeof(ev.needs) - 1);
	assert_true(csq_event_json(&ev, buf, sizeof(buf)) < 4096);
}

/*
 * How the formatter without bounds checks was tried to break: every
 * string of the event at its field's full size without a NUL, queues all
 * commas (each three bytes out), every number at its largest, for every
 * type and one past: the line stays within CSQ_EVENT_JSON_MAX (ASan
 * watches the buffer's end), and a buffer of any shorter size gets the
 * same bytes cut, terminated, with the whole length returned.
 */
static void
test_json_garbage_fields(void **state)
{
	static char big[CSQ_EVENT_JSON_MAX], cut[CSQ_EVENT_JSON_MAX];
	static const size_t sizes[] = {0, 1, 2, 100, 4096, 9000};
	struct csq_event ev;
	size_t i, k;
	int t, n;

	(void)state;
	for (t = 0; t <= CSQ_EV_TYPES; t++) {
		memset(&ev, 0xff, sizeof(ev));
		memset(ev.user, 'u', sizeof(ev.user));
		memset(ev.queue, 'q', sizeof(ev.queue));
		memset(ev.from_queue, 'f', sizeof(ev.from_queue));
		memset(ev.servicer, 's', sizeof(ev.servicer));
		memset(ev.room, 'r', sizeof(ev.room));
		memset(ev.queues, ',', sizeof(ev.queues));
		memset(ev.needs, 'n', sizeof(ev.needs));
		memset(ev.dropped, 'd', sizeof(ev.dropped));
		memset(ev.skills, 'k', sizeof(ev.skills));
		memset(ev.prefer, 'p', sizeof(ev.prefer));
		ev.type = (enum csq_event_type)t;
		ev.reason = CSQ_REASON_CLOSED;
		ev.eta_ms = INT64_MAX;
		n = csq_event_json(&ev, big, sizeof(big));
		assert_true(n > 0 && (size_t)n < sizeof(big));
		assert_int_equal((int)strlen(big), n);
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			memset(cut, 'X', sizeof(cut));
			assert_int_equal(csq_event_json(&ev,
			                                sizes[i] ? cut : NULL,
			                                sizes[i]),
			                 n);
			if (sizes[i] == 0)
				continue;
			k = sizes[i] - 1 < (size_t)n ? sizes[i] - 1 : (size_t)n;
			assert_memory_equal(cut, big, k);
			assert_int_equal(cut[k], '\0');
			assert_int_equal(cut[k + 1], 'X');
		}
	}
}

/*
 * An event as libcsq makes one (csq_event_begin: each field's first byte,
 * not the whole struct) in memory never written before, its strings put
 * in by strcpy: the bytes after each NUL are whatever was there.
 * csq_event_json reads a field eight bytes at a time, past its NUL within
 * its array: the line is the same as a zeroed event's, and under
 * unit.valgrind (tests/valgrind) no decision of it may depend on those
 * bytes ("conditional jump or move depends on uninitialised value").
 */
static void
test_json_unwritten_tails(void **state)
{
	struct csq_event *ev = malloc(sizeof(*ev)), zeroed;
	char a[CSQ_EVENT_JSON_MAX], b[4096];
	int t, n;

	(void)state;
	assert_non_null(ev);
	for (t = 0; t < CSQ_EV_TYPES; t++) {
		csq_event_begin(ev, (enum csq_event_type)t, 1700000000123ULL);
		ev->id = 42;
		strcpy(ev->user, "u1");
		strcpy(ev->queue, "sales-east");
		strcpy(ev->from_queue, "support");
		strcpy(ev->servicer, "agent.007@x");
		strcpy(ev->room, "agent.007@x/1");
		strcpy(ev->queues, "sales-east,support");
		strcpy(ev->needs, "de:2");
		strcpy(ev->dropped, "fr");
		strcpy(ev->skills, "de:5,fr:2");
		strcpy(ev->prefer, "agent.008");
		ev->reason = t == CSQ_EV_MATCHED || t == CSQ_EV_OFFERED
		                 ? CSQ_REASON_ENQUEUE
		                 : CSQ_REASON_LOST;
		memset(&zeroed, 0, sizeof(zeroed));
		zeroed = *ev;
		memset(zeroed.user, 0, sizeof(zeroed.user));
		memset(zeroed.queue, 0, sizeof(zeroed.queue));
		memset(zeroed.from_queue, 0, sizeof(zeroed.from_queue));
		memset(zeroed.servicer, 0, sizeof(zeroed.servicer));
		memset(zeroed.room, 0, sizeof(zeroed.room));
		memset(zeroed.queues, 0, sizeof(zeroed.queues));
		memset(zeroed.needs, 0, sizeof(zeroed.needs));
		memset(zeroed.dropped, 0, sizeof(zeroed.dropped));
		memset(zeroed.skills, 0, sizeof(zeroed.skills));
		memset(zeroed.prefer, 0, sizeof(zeroed.prefer));
		strcpy(zeroed.user, ev->user);
		strcpy(zeroed.queue, ev->queue);
		strcpy(zeroed.from_queue, ev->from_queue);
		strcpy(zeroed.servicer, ev->servicer);
		strcpy(zeroed.room, ev->room);
		strcpy(zeroed.queues, ev->queues);
		strcpy(zeroed.needs, ev->needs);
		strcpy(zeroed.dropped, ev->dropped);
		strcpy(zeroed.skills, ev->skills);
		strcpy(zeroed.prefer, ev->prefer);
		/* Straight into a buffer of CSQ_EVENT_JSON_MAX (the
		 * record's), and through a copy into a shorter one. */
		n = csq_event_json(ev, a, sizeof(a));
		assert_int_equal(csq_event_json(&zeroed, b, sizeof(b)), n);
		assert_string_equal(a, b);
		assert_int_equal(csq_event_json(ev, b, sizeof(b)), n);
		assert_string_equal(a, b);
		/* Every byte of the line decided: strlen reads each one. */
		assert_int_equal((int)strlen(a), n);
	}
	free(ev);
}

static void
test_channels(void **state)
{
	char ch[CSQ_EVENT_CHANNELS][CSQ_CHANNEL_MAX];
	struct csq_event ev;

	(void)state;
	ev_init(&ev, CSQ_EV_QUEUED);
	strcpy(ev.user, "u1");
	strcpy(ev.queue, "q");
	assert_int_equal(csq_event_channels(&ev, ch), 3);
	assert_string_equal(ch[0], "user:u1");
	assert_string_equal(ch[1], "queue:q");
	assert_string_equal(ch[2], "events");

	ev.type = CSQ_EV_RESCORED;
	strcpy(ev.from_queue, "old");
	assert_int_equal(csq_event_channels(&ev, ch), 4);
	assert_string_equal(ch[2], "queue:old");
	assert_string_equal(ch[3], "events");

	ev_init(&ev, CSQ_EV_MATCHED);
	strcpy(ev.user, "u1");
	strcpy(ev.queue, "q");
	strcpy(ev.servicer, "s");
	strcpy(ev.room, "s/0");
	assert_int_equal(csq_event_channels(&ev, ch), 4);
	assert_string_equal(ch[0], "user:u1");
	assert_string_equal(ch[1], "servicer:s");
	assert_string_equal(ch[2], "queue:q");
	assert_string_equal(ch[3], "events");
	/* Matched at once after a move: the queue left is told too. */
	strcpy(ev.from_queue, "old");
	assert_int_equal(csq_event_channels(&ev, ch), 5);
	assert_string_equal(ch[2], "queue:q");
	assert_string_equal(ch[3], "queue:old");
	assert_string_equal(ch[4], "events");

	/* A transfer: both queues, once each even when they are one. */
	ev.type = CSQ_EV_TRANSFERRED;
	assert_int_equal(csq_event_channels(&ev, ch), 5);
	assert_string_equal(ch[1], "servicer:s");
	assert_string_equal(ch[3], "queue:old");
	strcpy(ev.from_queue, "q");
	assert_int_equal(csq_event_channels(&ev, ch), 4);

	ev_init(&ev, CSQ_EV_SERVICER_DOWN);
	strcpy(ev.servicer, "s");
	assert_int_equal(csq_event_channels(&ev, ch), 2);
	assert_string_equal(ch[0], "servicer:s");
	assert_string_equal(ch[1], "events");
	ev.type = CSQ_EV_WRAPUP;
	strcpy(ev.room, "s/0");
	assert_int_equal(csq_event_channels(&ev, ch), 2);
	ev.type = CSQ_EV_READY;
	assert_int_equal(csq_event_channels(&ev, ch), 2);

	/* An offered user who leaves: its servicer hears the offer went. */
	ev_init(&ev, CSQ_EV_LEFT);
	strcpy(ev.user, "u1");
	strcpy(ev.queue, "q");
	strcpy(ev.servicer, "s");
	strcpy(ev.room, "s/0");
	assert_int_equal(csq_event_channels(&ev, ch), 4);
	assert_string_equal(ch[1], "servicer:s");
}

static void
test_ids_and_rooms(void **state)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                               "abcdefghijklmnopqrstuvwxyz"
	                               "0123456789._:@-";
	char sid[CSQ_ID_MAX + 1], id65[66];
	size_t len, at;
	uint32_t idx;
	int c;

	(void)state;
	assert_true(csq_valid_id("aZ09._:@-", 9));
	assert_false(csq_valid_id("", 0));
	assert_false(csq_valid_id("a b", 3));
	assert_false(csq_valid_id("a/b", 3));
	assert_false(csq_valid_id("a\0b", 3));
	assert_false(csq_valid_id("é", strlen("é")));
	memset(id65, 'x', sizeof(id65));
	assert_true(csq_valid_id(id65, 64));
	assert_false(csq_valid_id(id65, 65));
	/* Every byte, alone and after a good one: the alphabet's 67 and
	 * no other (lib/id.c's table). */
	for (c = 0; c < 256; c++) {
		char one[2] = {'a', (char)c};
		int ok = c != 0 && strchr(alphabet, c) != NULL;

		assert_int_equal(csq_valid_id(&one[1], 1), ok);
		assert_int_equal(csq_valid_id(one, 2), ok);
	}
	/* One bad byte at every place of every length, in the checker's
	 * steps of four and in the bytes after them. */
	for (len = 1; len <= CSQ_ID_MAX; len++)
		for (at = 0; at < len; at++) {
			memset(id65, 'x', sizeof(id65));
			id65[at] = '/';
			assert_false(csq_valid_id(id65, len));
			id65[at] = '\0';
			assert_false(csq_valid_id(id65, len));
			id65[at] = (char)0xff;
			assert_false(csq_valid_id(id65, len));
			id65[at] = '@';
			assert_true(csq_valid_id(id65, len));
		}

	assert_int_equal(csq_parse_room("s/0", 3, sid, &idx), 0);
	assert_string_equal(sid, "s");
	assert_int_equal(idx, 0);
	assert_int_equal(csq_parse_room("agent.1/999", 11, sid, &idx), 0);
	assert_int_equal(idx, 999);
	assert_int_equal(csq_parse_room("s/999999999", 11, sid, &idx), 0);
	assert_int_equal(idx, 999999999);
	/* Ten digits or more: well formed, and no room exists there. */
	assert_int_equal(csq_parse_room("s/1000000000", 12, sid, &idx), 0);
	assert_int_equal(idx, UINT32_MAX);
	assert_int_equal(csq_parse_room("s/4294967296000", 15, sid, &idx), 0);
	assert_int_equal(idx, UINT32_MAX);
	assert_int_not_equal(csq_parse_room("s/10000000000x", 14, sid, &idx),
	                     0);
	assert_int_not_equal(csq_parse_room("s/0000000000", 12, sid, &idx), 0);
	assert_int_not_equal(csq_parse_room("s/01", 4, sid, &idx), 0);
	assert_int_not_equal(csq_parse_room("s/-1", 4, sid, &idx), 0);
	assert_int_not_equal(csq_parse_room("s/+1", 4, sid, &idx), 0);
	assert_int_not_equal(csq_parse_room("s/", 2, sid, &idx), 0);
	assert_int_not_equal(csq_parse_room("/0", 2, sid, &idx), 0);
	assert_int_not_equal(csq_parse_room("s", 1, sid, &idx), 0);
	assert_int_not_equal(csq_parse_room("s/1x", 4, sid, &idx), 0);
	assert_int_not_equal(csq_parse_room("s/1/2", 5, sid, &idx), 0);
	assert_int_not_equal(csq_parse_room("b d/0", 5, sid, &idx), 0);
}

/*
 * What the record's replay needs (docs/day.md): a user's needs, its
 * preferred servicer, a servicer's skills and a HEARTBEAT's change. Each
 * is there only when set, so that an event without them is as before.
 */
static void
test_json_record_fields(void **state)
{
	struct csq_event ev;

	(void)state;
	ev_init(&ev, CSQ_EV_QUEUED);
	strcpy(ev.user, "u1");
	strcpy(ev.queue, "q");
	ev.position = 1;
	ev.has_eta = 1;
	ev.eta_ms = -1;
	strcpy(ev.needs, "billing:2,de:1");
	strcpy(ev.prefer, "agent7");
	ev.prefer_ms = 60000;
	assert_json(&ev, "{\"event\":\"queued\",\"id\":42,\"ts\":1700000000123,"
	                 "\"user\":\"u1\",\"queue\":\"q\",\"tier\":0,"
	                 "\"position\":1,\"eta_ms\":-1,"
	                 "\"needs\":\"billing:2,de:1\",\"prefer\":\"agent7\","
	                 "\"prefer_ms\":60000}");
	/* rescored: needs (a re-ENQUEUE with NEEDS), never a prefer. */
	ev.type = CSQ_EV_RESCORED;
	ev.reason = CSQ_REASON_ENQUEUE;
	assert_json(&ev, "{\"event\":\"rescored\",\"id\":42,"
	                 "\"ts\":1700000000123,\"user\":\"u1\",\"queue\":\"q\","
	                 "\"tier\":0,\"position\":1,\"reason\":\"enqueue\","
	                 "\"needs\":\"billing:2,de:1\"}");
	ev.type = CSQ_EV_MATCHED;
	strcpy(ev.servicer, "s");
	strcpy(ev.room, "s/0");
	ev.reason = CSQ_REASON_NONE;
	ev.waited_ms = 5;
	assert_json(&ev,
	            "{\"event\":\"matched\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"q\",\"tier\":0,"
	            "\"servicer\":\"s\",\"room\":\"s/0\",\"waited_ms\":5,"
	            "\"needs\":\"billing:2,de:1\"}");
	ev.type = CSQ_EV_OFFERED;
	ev.expires_ms = 9;
	assert_json(&ev,
	            "{\"event\":\"offered\",\"id\":42,\"ts\":1700000000123,"
	            "\"user\":\"u1\",\"queue\":\"q\",\"tier\":0,"
	            "\"servicer\":\"s\",\"room\":\"s/0\",\"expires_ms\":9,"
	            "\"needs\":\"billing:2,de:1\"}");
	ev.type = CSQ_EV_TRANSFERRED;
	strcpy(ev.from_queue, "p");
	assert_json(&ev, "{\"event\":\"transferred\",\"id\":42,"
	                 "\"ts\":1700000000123,\"user\":\"u1\","
	                 "\"from_queue\":\"p\",\"queue\":\"q\",\"tier\":0,"
	                 "\"servicer\":\"s\",\"room\":\"s/0\",\"position\":1,"
	                 "\"needs\":\"billing:2,de:1\",\"prefer\":\"agent7\","
	                 "\"prefer_ms\":60000}");
	/* Without needs and window: as before. */
	ev.needs[0] = ev.prefer[0] = '\0';
	assert_json(&ev, "{\"event\":\"transferred\",\"id\":42,"
	                 "\"ts\":1700000000123,\"user\":\"u1\","
	                 "\"from_queue\":\"p\",\"queue\":\"q\",\"tier\":0,"
	                 "\"servicer\":\"s\",\"room\":\"s/0\",\"position\":1}");

	ev_init(&ev, CSQ_EV_SERVICER_UP);
	strcpy(ev.servicer, "s");
	ev.capacity = 2;
	strcpy(ev.queues, "a,b");
	assert_json(&ev, "{\"event\":\"servicer_up\",\"id\":42,"
	                 "\"ts\":1700000000123,\"servicer\":\"s\","
	                 "\"capacity\":2,\"queues\":[\"a\",\"b\"]}");
	strcpy(ev.skills, "billing:3,de:5");
	assert_json(&ev, "{\"event\":\"servicer_up\",\"id\":42,"
	                 "\"ts\":1700000000123,\"servicer\":\"s\","
	                 "\"capacity\":2,\"queues\":[\"a\",\"b\"],"
	                 "\"skills\":\"billing:3,de:5\"}");
	/* An update says the skills it leaves, none included. */
	ev.type = CSQ_EV_SERVICER_UPDATED;
	ev.skills[0] = '\0';
	assert_json(&ev, "{\"event\":\"servicer_updated\",\"id\":42,"
	                 "\"ts\":1700000000123,\"servicer\":\"s\","
	                 "\"capacity\":2,\"queues\":[\"a\",\"b\"],"
	                 "\"skills\":\"\"}");
}

static void
heartbeat_skills(struct fixture *f, const char *sid, uint32_t capacity,
                 const char *skills)
{
	struct csq_heartbeat_args a;

	hb_args(&a, sid, capacity, NULL, NULL, 0);
	a.has_skills = skills != NULL;
	a.skills = skills;
	assert_int_equal(hb_run(f, &a, NULL), CSQ_OK);
}

/* The operations give the events those fields, and only when set. */
static void
test_record_fields_from_operations(void **state)
{
	struct fixture *f = *state;
	struct csq_enqueue_args e;
	struct csq_transfer_args t;
	struct csq_user_info info;
	const struct csq_event *ev;
	size_t first;

	hb(f, "s1", 1, "q,r", NULL);
	ev = last_event(f);
	assert_int_equal(ev->type, CSQ_EV_SERVICER_UP);
	assert_string_equal(ev->skills, "");
	heartbeat_skills(f, "s1", 0, "de:5");
	ev = last_event(f);
	assert_int_equal(ev->type, CSQ_EV_SERVICER_UPDATED);
	assert_string_equal(ev->skills, "de:5");
	hb(f, "s2", 1, "q", NULL);
	/* A login with skills: servicer_up has them, canonical. */
	heartbeat_skills(f, "s3", 0, "fr:2,de:5");
	ev = last_event(f);
	assert_int_equal(ev->type, CSQ_EV_SERVICER_UP);
	assert_string_equal(ev->skills, "de:5,fr:2");
	/* A keep-alive, or one that says again what is so: no event. */
	first = f->nevents;
	heartbeat_skills(f, "s3", 0, NULL);
	heartbeat_skills(f, "s3", 1, "de:5,fr:2");
	hb(f, "s1", 1, "q,r", NULL);
	assert_int_equal(f->nevents, first);
	/* A change of capacity, of queues, of skills: servicer_updated with
	 * all three as they are now. */
	heartbeat_skills(f, "s3", 2, NULL);
	assert_string_equal(events_since(f, first), "servicer_updated");
	ev = last_event(f);
	assert_int_equal(ev->capacity, 2);
	assert_string_equal(ev->queues, "default");
	assert_string_equal(ev->skills, "de:5,fr:2");
	heartbeat_skills(f, "s3", 0, "");
	assert_string_equal(last_event(f)->skills, "");
	hb(f, "s3", 0, "q", NULL);
	hb(f, "s2", 0, "q,r", NULL);
	assert_int_equal(last_event(f)->type, CSQ_EV_SERVICER_UPDATED);
	assert_string_equal(last_event(f)->queues, "q,r");

	/* Every room taken by users without needs: events as before. */
	enq(f, "a", "q", -1, NULL);
	enq(f, "b", "q", -1, NULL);
	enq(f, "c", "q", -1, NULL);
	enq(f, "d", "q", -1, NULL);
	assert_int_equal(last_event(f)->type, CSQ_EV_MATCHED);
	assert_string_equal(last_event(f)->needs, "");
	/* A waiting user with needs and a window: queued has both. */
	memset(&e, 0, sizeof(e));
	e.user = "u1";
	e.has_queue = 1;
	e.queue = "q";
	e.has_needs = 1;
	e.needs = "de:2";
	e.prefer.has_prefer = 1;
	e.prefer.servicer = "s1";
	e.prefer.seconds = 90;
	assert_int_equal(csq_enqueue(f->csq, f->now, &e, &info), CSQ_OK);
	check(f);
	ev = last_event(f);
	assert_int_equal(ev->type, CSQ_EV_QUEUED);
	assert_string_equal(ev->needs, "de:2");
	assert_string_equal(ev->prefer, "s1");
	assert_int_equal(ev->prefer_ms, 90000);
	/* Without a window, needs alone. */
	e.user = "u2";
	e.prefer.has_prefer = 0;
	e.needs = "fr";
	assert_int_equal(csq_enqueue(f->csq, f->now, &e, &info), CSQ_OK);
	check(f);
	assert_string_equal(last_event(f)->needs, "fr:1");
	assert_string_equal(last_event(f)->prefer, "");
	/* s1's room free: it takes u1, whose matched has its needs. */
	f->now += 1000;
	release(f, "s1/0");
	ev = last_event(f);
	assert_int_equal(ev->type, CSQ_EV_MATCHED);
	assert_string_equal(ev->user, "u1");
	assert_string_equal(ev->needs, "de:2");
	/* s3 (no skills) may not take u2 in its free room, until fr. */
	release(f, "s3/0");
	first = f->nevents;
	heartbeat_skills(f, "s3", 0, "fr:1");
	assert_string_equal(events_since(f, first), "servicer_updated,matched");
	assert_string_equal(last_event(f)->user, "u2");
	assert_string_equal(last_event(f)->needs, "fr:1");

	/* A transfer with NEEDS and PREFER: transferred carries them, and
	 * s1's freed room takes u1 back (its window is s1's). */
	f->now += 1000;
	memset(&t, 0, sizeof(t));
	t.room = "s1/0";
	t.queue = "r";
	t.has_needs = 1;
	t.needs = "de:1";
	t.prefer.has_prefer = 1;
	t.prefer.servicer = "s1";
	t.prefer.seconds = 30;
	first = f->nevents;
	assert_int_equal(csq_transfer(f->csq, f->now, &t, &info), CSQ_OK);
	check(f);
	assert_string_equal(events_since(f, first),
	                    "released,transferred,matched");
	ev = &f->events[first + 1];
	assert_string_equal(ev->needs, "de:1");
	assert_string_equal(ev->prefer, "s1");
	assert_int_equal(ev->prefer_ms, 30000);
	assert_string_equal(last_event(f)->needs, "de:1");
}

/* Each name's length is its strlen, "unknown"'s past the last type
 * too: a length one short (or long) would write every event of the
 * type wrong in csq.so's messages. */
static void
test_name_lengths(void **state)
{
	int t;

	(void)state;
	for (t = 0; t <= CSQ_EV_TYPES + 1; t++) {
		const char *name = csq_event_name((enum csq_event_type)t);

		assert_non_null(name);
		assert_true(name[0] != '\0');
		assert_int_equal(csq_event_name_len((enum csq_event_type)t),
		                 strlen(name));
	}
	assert_string_equal(csq_event_name(CSQ_EV_TYPES), "unknown");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_name_lengths),
	    cmocka_unit_test(test_json_each_type),
	    cmocka_unit_test(test_json_truncates),
	    cmocka_unit_test(test_json_longest),
	    cmocka_unit_test(test_json_garbage_fields),
	    cmocka_unit_test(test_json_unwritten_tails),
	    cmocka_unit_test(test_channels),
	    cmocka_unit_test(test_ids_and_rooms),
	    cmocka_unit_test(test_json_record_fields),
	    cmocka_unit_test_setup_teardown(test_record_fields_from_operations,
	                                    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
