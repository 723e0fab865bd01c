/*
 * The memory engine's journal, without the file: every operation of a
 * random run with offers, wrap-ups, transfers, retry windows, a change of
 * strategy and time passing goes through the journal hook into records;
 * replaying the records into a new engine, under another hash seed, gives
 * the same state (the same snapshot, byte for byte, and the same last
 * event id), and so does a compaction (the state as snapshot items) half
 * way, followed by the records after it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "record.h"
#include "snapshot.h"

#define OPS 6000

static uint64_t clock_ms = 1700000000000ULL;

static uint64_t
fake_clock(void *arg)
{
	(void)arg;
	return clock_ms;
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* A journal in memory: records one after another, as in the file. */
struct journal {
	uint8_t *buf;
	size_t len, cap;
};

static void
journal_add(struct journal *j, const uint8_t *rec, size_t n)
{
	if (j->len + n > j->cap) {
		j->cap = (j->len + n) * 2;
		j->buf = realloc(j->buf, j->cap);
		assert_non_null(j->buf);
	}
	memcpy(j->buf + j->len, rec, n);
	j->len += n;
}

/* The whole journal, and from the compaction on, the compacted one. */
struct journals {
	struct journal full, compacted;
	int compacting;
};

static int
journal_hook(void *arg, const struct csq_op *op, uint64_t now)
{
	struct journals *js = arg;
	uint8_t rec[CSQ_RECORD_MAX];
	size_t n = csq_record_encode(op, now, rec);

	journal_add(&js->full, rec, n);
	if (js->compacting)
		journal_add(&js->compacted, rec, n);
	return 0;
}

static void
journal_snap_item(void *arg, const struct csq_snap_item *it)
{
	uint8_t rec[CSQ_RECORD_MAX];

	journal_add(arg, rec, csq_record_encode_snap(it, rec));
}

/* Replays j into e as the daemon's journal does at start. */
static void
journal_replay(struct csq_engine *e, const struct journal *j)
{
	struct csq_record_strings st;
	struct csq_snap_item it;
	struct csq_op op;
	const uint8_t *p = j->buf, *payload;
	uint64_t now;
	uint32_t len, crc;

	while (p < j->buf + j->len) {
		len = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
		      (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		crc = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
		      (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		payload = p + CSQ_RECORD_HEADER;
		assert_int_equal(csq_crc32c(payload, len), crc);
		if (csq_record_is_snap(payload, len)) {
			assert_int_equal(
			    csq_record_decode_snap(payload, len, &it), 0);
			assert_int_equal(csq_engine_memory_restore(e, &it), 0);
		} else {
			assert_int_equal(
			    csq_record_decode(payload, len, &op, &now, &st), 0);
			csq_engine_memory_replay(e, &op, now);
		}
		p += CSQ_RECORD_HEADER + len;
	}
}

/* The state as its snapshot records, sorted: equal states, equal texts. */
struct dump {
	char **items;
	size_t n, cap;
};

static void
dump_item(void *arg, const struct csq_snap_item *it)
{
	struct dump *d = arg;
	uint8_t rec[CSQ_RECORD_MAX];
	size_t n = csq_record_encode_snap(it, rec), i;
	char *hex = malloc(2 * n + 1);

	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", rec[i]);
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 64;
		d->items = realloc(d->items, d->cap * sizeof(*d->items));
	}
	d->items[d->n++] = hex;
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
assert_same_state(struct csq_engine *a, struct csq_engine *b)
{
	struct dump da = {NULL, 0, 0}, db = {NULL, 0, 0};
	char why[256];
	size_t i;

	if (csq_check(csq_engine_memory_state(b), why, sizeof(why)) != 0)
		fail_msg("replayed state: %s", why);
	csq_engine_memory_snapshot(a, dump_item, &da);
	csq_engine_memory_snapshot(b, dump_item, &db);
	qsort(da.items, da.n, sizeof(*da.items), str_cmp);
	qsort(db.items, db.n, sizeof(*db.items), str_cmp);
	assert_int_equal(da.n, db.n);
	for (i = 0; i < da.n; i++) {
		assert_string_equal(da.items[i], db.items[i]);
		free(da.items[i]);
		free(db.items[i]);
	}
	free(da.items);
	free(db.items);
	assert_int_equal(csq_last_event_id(csq_engine_memory_state(a)),
	                 csq_last_event_id(csq_engine_memory_state(b)));
}

static void
ignore(void *arg, const struct csq_result *r)
{
	(void)arg, (void)r;
}

/* One random command or change of state on e. */
static void
random_step(struct csq_engine *e, struct csq_limits *limits)
{
	static const char *queues[] = {"default", "q1", "q2"};
	char sid[8], uid[8], room[16];
	struct csq_op op;

	snprintf(sid, sizeof(sid), "s%u", rnd(5));
	snprintf(uid, sizeof(uid), "u%u", rnd(40));
	snprintf(room, sizeof(room), "%s/%u", sid, rnd(3));
	memset(&op, 0, sizeof(op));
	op.ttl_s = -1;
	switch (rnd(14)) {
	case 0:
	case 1:
		op.code = CSQ_OP_HEARTBEAT;
		op.heartbeat.servicer = op.id = sid;
		op.heartbeat.has_capacity = rnd(2);
		op.heartbeat.capacity = 1 + rnd(2);
		op.heartbeat.has_ttl = 1;
		op.heartbeat.ttl_s = 2 + rnd(4);
		op.heartbeat.has_queues = rnd(3) == 0;
		op.heartbeat.nqueues = 1;
		op.heartbeat.queues[0] = queues[rnd(3)];
		op.heartbeat.has_offer = rnd(3) == 0;
		op.heartbeat.offer_s = rnd(3);
		op.heartbeat.has_wrapup = rnd(3) == 0;
		op.heartbeat.wrapup_s = rnd(3);
		break;
	case 2:
	case 3:
		op.code = CSQ_OP_ENQUEUE;
		op.enqueue.user = op.id = uid;
		op.enqueue.has_queue = rnd(2);
		op.enqueue.queue = queues[rnd(3)];
		op.enqueue.has_ttl = rnd(2);
		op.enqueue.ttl_s = rnd(5);
		break;
	case 4:
		op.code = rnd(2) ? CSQ_OP_PAUSE : CSQ_OP_RESUME;
		op.id = sid;
		break;
	case 5:
		op.code = rnd(2) ? CSQ_OP_RELEASE : CSQ_OP_ACCEPT;
		op.id = room;
		break;
	case 6:
		op.code = rnd(2) ? CSQ_OP_DECLINE : CSQ_OP_READY;
		op.id = room;
		break;
	case 7:
		op.code = CSQ_OP_TRANSFER;
		op.transfer.room = op.id = room;
		op.transfer.queue = queues[rnd(3)];
		break;
	case 8:
		op.code = rnd(2) ? CSQ_OP_LEAVE : CSQ_OP_TOUCH;
		op.id = uid;
		break;
	case 9:
		op.code = CSQ_OP_LOGOUT;
		op.id = sid;
		if (rnd(4) != 0)
			return;
		break;
	case 10:
	case 11:
		clock_ms += rnd(1500);
		e->ops->expire(e);
		return;
	case 12:
		if (rnd(30) == 0) {
			limits->strategy =
			    limits->strategy == CSQ_STRATEGY_LEAST_BUSY
			        ? CSQ_STRATEGY_LONGEST_IDLE
			        : CSQ_STRATEGY_LEAST_BUSY;
			limits->offer_retry_s = rnd(3);
			e->ops->set_limits(e, limits);
		}
		return;
	case 13:
		if (rnd(40) == 0)
			csq_engine_memory_rearm(e); /* as after a restart */
		return;
	}
	csq_engine_call(e, &op, ignore, NULL);
}

static void
test_replay_and_compaction(void **state)
{
	static struct journals js;
	struct csq_engine *a, *b, *c;
	struct csq_limits limits;
	uint8_t rec[CSQ_RECORD_MAX];
	struct csq_stats st;
	struct csq_op op;
	int i;

	(void)state;
	csq_limits_default(&limits);
	limits.offer_max_missed = 2;
	limits.offer_retry_s = 1;
	a = csq_engine_memory_new(&limits, 1, fake_clock, NULL, NULL, NULL);
	/* The daemon's journal starts with the limits it was given. */
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_LIMITS;
	op.limits = limits;
	journal_add(&js.full, rec, csq_record_encode(&op, clock_ms, rec));
	csq_engine_memory_set_journal(a, journal_hook, &js);
	for (i = 0; i < OPS / 2; i++)
		random_step(a, &limits);
	/* Compaction: the limits, the state as items, then what follows. */
	op.limits = limits;
	journal_add(&js.compacted, rec, csq_record_encode(&op, clock_ms, rec));
	csq_engine_memory_snapshot(a, journal_snap_item, &js.compacted);
	js.compacting = 1;
	for (i = 0; i < OPS / 2; i++)
		random_step(a, &limits);

	/* The run made what it claims to replay. */
	csq_stats(csq_engine_memory_state(a), &st);
	assert_true(st.offers_total > 50 && st.offers_declined_total > 2 &&
	            st.offers_missed_total > 10 && st.transferred_total > 10);

	b = csq_engine_memory_new(&limits, 2, fake_clock, NULL, NULL, NULL);
	journal_replay(b, &js.full);
	assert_same_state(a, b);
	c = csq_engine_memory_new(&limits, 3, fake_clock, NULL, NULL, NULL);
	journal_replay(c, &js.compacted);
	assert_same_state(a, c);
	/* A restart: every deadline runs again from now, alike on all. */
	clock_ms += 60000;
	csq_engine_memory_rearm(a);
	csq_engine_memory_rearm(b);
	csq_engine_memory_rearm(c);
	assert_same_state(a, b);
	assert_same_state(a, c);
	a->ops->free(a);
	b->ops->free(b);
	c->ops->free(c);
	free(js.full.buf);
	free(js.compacted.buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_and_compaction),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
