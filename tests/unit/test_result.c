/*
 * What travels between csqd and csq.so, the Redis module: each
 * operation's result as bytes (lib/result.c) and each event as a fact in
 * MessagePack (lib/event_fact.c's csq_event_to_fact, daemon/msgpack.c's
 * writer). Everything comes back as it went, at every width of the
 * MessagePack writer; a result cut short, or with a byte more, or of an
 * array longer than its bytes could hold, is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "event_fact.h"
#include "msgpack.h"
#include "record.h"
#include "result.h"

/* Every field of r, by value, as one text (to compare two results). */
static void
result_text(enum csq_opcode code, const struct csq_result *r, char *out,
            size_t cap)
{
	struct csq_wbuf w = {0};
	size_t i, n;

	/* The encoding is the comparison: fields set only in the struct
	 * would be lost and show as a difference of the decoded one. */
	csq_result_encode(code, r, &w);
	n = 0;
	for (i = 0; i < w.len && n + 3 < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%02x", w.p[i]);
	out[n] = '\0';
	csq_wbuf_free(&w);
}

/* r goes and comes back equal; each cut of it is refused, as is a byte
 * more. */
static void
assert_round_trip(enum csq_opcode code, const struct csq_result *r)
{
	static char a[1 << 16], b[1 << 16];
	struct csq_wbuf w = {0};
	struct csq_result back;
	void *owned;
	size_t cut;

	csq_result_encode(code, r, &w);
	assert_int_equal(csq_result_decode(code, w.p, w.len, &back, &owned), 0);
	result_text(code, r, a, sizeof(a));
	result_text(code, &back, b, sizeof(b));
	assert_string_equal(a, b);
	assert_int_equal(back.status, r->status);
	assert_true(back.n == r->n);
	assert_true(back.event_id == r->event_id);
	/* A slice's cursor (QUEUES, QSTATS). */
	assert_true((back.next == NULL) == (r->next == NULL));
	if (r->next != NULL)
		assert_string_equal(back.next, r->next);
	free(owned);
	/* The same bytes decoded into a result that held something else
	 * (csqd reuses its calls' results): the decode fills all that the
	 * shape's reply reads, and leaves no pointer of before. */
	memset(&back, 0xa5, sizeof(back));
	assert_int_equal(csq_result_decode(code, w.p, w.len, &back, &owned), 0);
	result_text(code, &back, b, sizeof(b));
	assert_string_equal(a, b);
	assert_int_equal(back.status, r->status);
	assert_true(back.n == r->n);
	assert_true(back.event_id == r->event_id);
	assert_true((back.next == NULL) == (r->next == NULL));
	assert_true(back.nentries == r->nentries);
	free(owned);
	for (cut = 0; cut < w.len; cut++) {
		assert_int_equal(
		    csq_result_decode(code, w.p, cut, &back, &owned), -1);
		assert_null(owned);
	}
	csq_put_uint(&w, 0, 1);
	assert_int_equal(csq_result_decode(code, w.p, w.len, &back, &owned),
	                 -1);
	csq_wbuf_free(&w);
}

/* A string's bytes: its length (2 bytes, little-endian) and its bytes;
 * an empty string and NULL are two zero bytes. The decoder is the
 * round trips' judge; these are the bytes themselves. */
static void
test_put_str_bytes(void **state)
{
	static const uint8_t want[] = {0, 0, 0,   0,   1,    0,   'a',
	                               3, 0, 'a', 'b', 'c',  0,   0,
	                               2, 0, 'x', 'y', 0x2c, 0x01};
	char big[301];
	struct csq_wbuf w = {0};

	(void)state;
	csq_put_str(&w, "");
	csq_put_str(&w, NULL);
	csq_put_str(&w, "a");
	csq_put_str(&w, "abc");
	csq_put_str(&w, "");
	csq_put_str(&w, "xy");
	memset(big, 'z', 300);
	big[300] = '\0';
	csq_put_str(&w, big);
	assert_int_equal(w.len, sizeof(want) + 300);
	assert_memory_equal(w.p, want, sizeof(want));
	assert_int_equal(w.p[sizeof(want)], 'z');
	assert_int_equal(w.p[sizeof(want) + 299], 'z');
	csq_wbuf_free(&w);
}

static void
test_scalars(void **state)
{
	struct csq_result r;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.status = CSQ_ENOTFOUND;
	r.n = -1;
	r.event_id = UINT64_MAX;
	assert_round_trip(CSQ_OP_RELEASE, &r);
	r.status = CSQ_OK;
	r.n = 3;
	r.event_id = 42;
	assert_round_trip(CSQ_OP_LOGOUT, &r);

	memset(&r, 0, sizeof(r));
	snprintf(r.servicer.id, sizeof(r.servicer.id), "agent-7");
	r.servicer.status = CSQ_SERVICER_PAUSED;
	r.servicer.capacity = 1000;
	r.servicer.active = 999;
	r.servicer.ttl_s = 86400;
	r.servicer.idle_ms = UINT64_C(1) << 40;
	r.servicer.offer_s = 600;
	r.servicer.wrapup_s = 3600;
	r.servicer.missed = 3;
	r.servicer.paused_by = CSQ_REASON_MISSED_OFFERS;
	r.servicer.resting_ms = UINT64_C(1) << 50;
	r.servicer.handled_total = 12;
	r.servicer.handle_ms_total = UINT64_MAX;
	memset(r.servicer.queues, 'q', sizeof(r.servicer.queues) - 1);
	snprintf(r.servicer.skills, sizeof(r.servicer.skills),
	         "billing:3,de:5");
	assert_round_trip(CSQ_OP_HEARTBEAT, &r);

	memset(&r, 0, sizeof(r));
	r.user.state = CSQ_USER_OFFERED;
	snprintf(r.user.queue, sizeof(r.user.queue), "billing");
	r.user.position = 12;
	r.user.tier = 15;
	r.user.waited_ms = 61000;
	snprintf(r.user.room, sizeof(r.user.room), "agent-7/999");
	snprintf(r.user.servicer, sizeof(r.user.servicer), "agent-7");
	r.user.since_ms = 5;
	r.user.expires_in_ms = 25000;
	snprintf(r.user.prefer, sizeof(r.user.prefer), "agent-9");
	r.user.prefer_ms = 1;
	r.user.eta_ms = -1;
	snprintf(r.user.needs, sizeof(r.user.needs), "billing:2,de:1");
	r.user.relax_ms = 29999;
	assert_round_trip(CSQ_OP_ENQUEUE, &r);
	r.user.eta_ms = INT64_MAX;
	assert_round_trip(CSQ_OP_WHERE, &r);
	assert_round_trip(CSQ_OP_TRANSFER, &r);

	memset(&r, 0, sizeof(r));
	r.stats.waiting = 1;
	r.stats.transferred_total = UINT64_MAX;
	r.stats.offers_missed_total = 77;
	assert_round_trip(CSQ_OP_STATS, &r);
}

static void
test_arrays(void **state)
{
	struct csq_queue_entry entries[3];
	struct csq_servicer_info servicers[2];
	struct csq_queue_info queues[2];
	struct csq_room_info rooms[4];
	struct csq_queue_stats qstats[2];
	struct csq_result r;
	size_t i;

	(void)state;
	memset(entries, 0, sizeof(entries));
	memset(servicers, 0, sizeof(servicers));
	memset(queues, 0, sizeof(queues));
	memset(rooms, 0, sizeof(rooms));
	memset(qstats, 0, sizeof(qstats));
	for (i = 0; i < 3; i++) {
		snprintf(entries[i].user, sizeof(entries[i].user), "u%zu", i);
		entries[i].tier = (uint32_t)i;
		entries[i].waited_ms = 1000 * i;
	}
	for (i = 0; i < 2; i++) {
		snprintf(servicers[i].id, sizeof(servicers[i].id), "s%zu", i);
		snprintf(servicers[i].queues, sizeof(servicers[i].queues),
		         "a,b");
		servicers[i].capacity = 2;
		snprintf(queues[i].name, sizeof(queues[i].name), "q%zu", i);
		queues[i].waiting = 5;
		snprintf(queues[i].oldest_user, sizeof(queues[i].oldest_user),
		         "old");
		snprintf(qstats[i].queue, sizeof(qstats[i].queue), "q%zu", i);
		qstats[i].eta_ms = -1;
		qstats[i].service_level_pct = -1;
		qstats[i].outcomes = 1000;
		qstats[i].ngroups = (uint32_t)i * CSQ_QSTATS_GROUPS;
	}
	for (i = 0; i < CSQ_QSTATS_GROUPS; i++) {
		snprintf(qstats[1].groups[i].needs,
		         sizeof(qstats[1].groups[i].needs), "s%zu:%zu", i,
		         i + 1);
		qstats[1].groups[i].waiting = i;
	}
	for (i = 0; i < 4; i++) {
		snprintf(rooms[i].room, sizeof(rooms[i].room), "s0/%zu", i);
		rooms[i].state = (enum csq_room_state)i;
		rooms[i].since_ms = i;
		if (i == 2)
			snprintf(rooms[i].needs, sizeof(rooms[i].needs),
			         "fr:4");
	}
	memset(&r, 0, sizeof(r));
	r.entries = entries;
	r.nentries = 3;
	assert_round_trip(CSQ_OP_QUEUE, &r);
	r.nentries = 0;
	assert_round_trip(CSQ_OP_QUEUE, &r);
	memset(&r, 0, sizeof(r));
	r.servicers = servicers;
	r.nentries = 2;
	assert_round_trip(CSQ_OP_SERVICERS, &r);
	r.next = servicers[1].id; /* a slice with more after it (issue 37) */
	assert_round_trip(CSQ_OP_SERVICERS, &r);
	memset(&r, 0, sizeof(r));
	r.queues = queues;
	r.nentries = 2;
	assert_round_trip(CSQ_OP_QUEUES, &r);
	r.next = queues[1].name; /* a slice with more after it */
	assert_round_trip(CSQ_OP_QUEUES, &r);
	r.nentries = 0;
	assert_round_trip(CSQ_OP_QUEUES, &r);
	memset(&r, 0, sizeof(r));
	r.rooms = rooms;
	r.nentries = 4;
	assert_round_trip(CSQ_OP_ROOMS, &r);
	r.next = "s2";
	assert_round_trip(CSQ_OP_ROOMS, &r);
	memset(&r, 0, sizeof(r));
	r.qstats = qstats;
	r.nentries = 2;
	assert_round_trip(CSQ_OP_QSTATS, &r);
	r.next = "q1:@.-";
	assert_round_trip(CSQ_OP_QSTATS, &r);
}

/* An array that says it is longer than its bytes could be is refused
 * before anything is allocated for it; values out of their enum too. */
static void
test_lies(void **state)
{
	struct csq_wbuf w = {0};
	struct csq_result r;
	void *owned;

	(void)state;
	csq_put_uint(&w, CSQ_OK, 1);
	csq_put_uint(&w, 0, 8);
	csq_put_uint(&w, 0, 8);
	csq_put_uint(&w, UINT32_MAX, 4); /* four billion entries */
	assert_int_equal(
	    csq_result_decode(CSQ_OP_SERVICERS, w.p, w.len, &r, &owned), -1);
	assert_null(owned);
	w.len = 0;
	csq_put_uint(&w, 200, 1); /* no such status */
	csq_put_uint(&w, 0, 16);
	assert_int_equal(
	    csq_result_decode(CSQ_OP_LEAVE, w.p, w.len, &r, &owned), -1);
	w.len = 0;
	csq_put_uint(&w, CSQ_OK, 1);
	csq_put_uint(&w, 0, 16);
	csq_put_uint(&w, 2, 2); /* an id of two bytes, one of them NUL */
	csq_put_bytes(&w, "a", 2);
	csq_put_uint(&w, 0, 32);
	assert_int_equal(
	    csq_result_decode(CSQ_OP_HEARTBEAT, w.p, w.len, &r, &owned), -1);
	w.len = 0;
	csq_put_uint(&w, CSQ_OK, 1);
	csq_put_uint(&w, 0, 16);
	csq_put_uint(&w, 9, 1); /* a user state that is none */
	assert_int_equal(
	    csq_result_decode(CSQ_OP_WHERE, w.p, w.len, &r, &owned), -1);
	csq_wbuf_free(&w);
}

/* An event of type t with every field of struct csq_event set. */
static void
full_event(struct csq_event *ev, enum csq_event_type t, size_t width)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = t;
	ev->id = 9;
	ev->ts_ms = 1700000000000;
	memset(ev->user, 'u', width < CSQ_ID_MAX ? width : CSQ_ID_MAX);
	snprintf(ev->queue, sizeof(ev->queue), "queue-%zu", width);
	snprintf(ev->from_queue, sizeof(ev->from_queue), "from");
	snprintf(ev->servicer, sizeof(ev->servicer), "agent");
	snprintf(ev->room, sizeof(ev->room), "agent/%zu", width % 1000);
	ev->tier = (uint32_t)(width % 16);
	ev->position = (uint64_t)1 << (width % 64);
	ev->waited_ms = width * 1000003;
	ev->offered_ms = width;
	ev->has_offered_ms = 1;
	ev->expires_ms = (uint64_t)1 << 41;
	ev->until_ms = 65536 + width;
	ev->capacity = (uint32_t)(width % 1000) + 1;
	snprintf(ev->queues, sizeof(ev->queues), "a,b,queue-%zu", width);
	ev->reason = CSQ_REASON_LOST;
	snprintf(ev->needs, sizeof(ev->needs), "de:%zu,fr:1", width % 100 + 1);
	snprintf(ev->dropped, sizeof(ev->dropped), "billing");
	ev->lowered = 2;
}

/* Each kind of event, through a message as the module publishes it and
 * the subscription reads it, is the same JSON. */
static void
test_events_through_msgpack(void **state)
{
	struct csq_fact_value v[CSQ_FACT_FIELDS_MAX], back[CSQ_FACT_FIELDS_MAX];
	char want[4096], got[4096];
	struct csq_event ev, ev2;
	struct msgpack_in in;
	struct csq_wbuf w = {0};
	const char *kind;
	size_t n, i, width, klen;
	uint32_t m;
	int t;

	(void)state;
	for (width = 1; width <= 64; width *= 4) {
		for (t = 0; t < CSQ_EV_TYPES; t++) {
			full_event(&ev, (enum csq_event_type)t, width);
			n = csq_event_to_fact(&ev, v);
			w.len = 0;
			kind = csq_event_name(ev.type);
			msgpack_put_array(&w, (uint32_t)(n + 1));
			msgpack_put_str(&w, kind, strlen(kind));
			for (i = 0; i < n; i++)
				msgpack_put_fact_value(&w, &v[i]);
			msgpack_init(&in, w.p, w.len);
			assert_int_equal(msgpack_array(&in, &m), 0);
			assert_int_equal(m, n + 1);
			assert_int_equal(msgpack_str(&in, &kind, &klen), 0);
			for (i = 0; i < n; i++)
				assert_int_equal(
				    msgpack_fact_value(&in, &back[i]), 0);
			assert_ptr_equal(in.p, w.p + w.len);
			assert_int_equal(
			    csq_event_from_fact(&ev2, kind, klen, back, n), 0);
			ev2.id = ev.id;
			ev2.ts_ms = ev.ts_ms;
			csq_event_json(&ev, want, sizeof(want));
			csq_event_json(&ev2, got, sizeof(got));
			assert_string_equal(want, got);
		}
	}
	/* The writer's integers at each width, and a negative one. */
	for (i = 0; i < 64; i++) {
		int64_t x = i == 63 ? -5 : (int64_t)((uint64_t)1 << i) - 1, y;

		w.len = 0;
		msgpack_put_int(&w, x);
		msgpack_init(&in, w.p, w.len);
		assert_int_equal(msgpack_int(&in, &y), 0);
		assert_true(x == y);
	}
	csq_wbuf_free(&w);
}

/* The reads, which only the module's calls carry as records: each comes
 * back as it went, "every queue" (no id) told from a queue's id. */
static void
test_read_records(void **state)
{
	static const enum csq_opcode codes[] = {
	    CSQ_OP_WHERE, CSQ_OP_QLEN,   CSQ_OP_QUEUE, CSQ_OP_SERVICERS,
	    CSQ_OP_STATS, CSQ_OP_QUEUES, CSQ_OP_ROOMS, CSQ_OP_QSTATS,
	};
	uint8_t rec[CSQ_RECORD_MAX];
	struct csq_record_strings st;
	struct csq_op op, back;
	uint64_t now;
	size_t i, len;
	int with_id;

	(void)state;
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		for (with_id = 0; with_id < 2; with_id++) {
			memset(&op, 0, sizeof(op));
			op.code = codes[i];
			op.id = with_id || codes[i] == CSQ_OP_WHERE ||
			                codes[i] == CSQ_OP_QLEN ||
			                codes[i] == CSQ_OP_QUEUE
			            ? "q-1"
			            : NULL;
			op.offset = UINT64_C(1) << 60;
			op.count = 1000;
			len = csq_record_encode(&op, 77, rec);
			assert_int_equal(
			    csq_record_decode(rec + CSQ_RECORD_HEADER,
			                      len - CSQ_RECORD_HEADER, &back,
			                      &now, &st),
			    0);
			assert_int_equal(back.code, op.code);
			assert_true(now == 77);
			if (codes[i] == CSQ_OP_SERVICERS ||
			    codes[i] == CSQ_OP_STATS) {
				assert_null(back.id);
				continue;
			}
			if (op.id == NULL)
				assert_null(back.id);
			else
				assert_string_equal(back.id, op.id);
			if (codes[i] == CSQ_OP_QUEUE) {
				assert_true(back.offset == op.offset);
				assert_int_equal(back.count, op.count);
			}
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_str_bytes),
	    cmocka_unit_test(test_scalars),
	    cmocka_unit_test(test_arrays),
	    cmocka_unit_test(test_lies),
	    cmocka_unit_test(test_events_through_msgpack),
	    cmocka_unit_test(test_read_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
