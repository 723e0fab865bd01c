/*
 * The what-if replay (lib/replay_day.h), with csq's own clock: a day made
 * by driving a csq state (offers, wrap-ups, an overflow, a pause, a lost
 * servicer, users who leave, requeues) replayed under its own
 * configuration gives the same events and the same report; a censored
 * patience is drawn beyond its censoring point, the same for the same
 * seed; a conversation the record lacks lasts one of its queue's; offers
 * are answered as recorded; a wrap-up ends when the record's did (READY
 * early), one the record lacks as one of its queue's; servicers added and
 * removed over a range log in and out at its ends; a change out of its range is
 * refused with nothing played; records with holes and reused ids do not break
 * it. A day with skills, needs, relaxation, preferred servicers, changes
 * of capacity and skills by HEARTBEAT and transfers (with NEEDS) is
 * replayed as it was, and a what-if without relaxation changes it; a
 * record with garbage in those fields is refused at its line (the
 * parser: test_event_parse.c), and one whose needs no servicer meets, or
 * whose transfer goes nowhere, plays without a crash. Business hours in
 * a what-if close and open the queue in the replay (closed, opened, the
 * users waiting released, arrivals refused while closed); a user that
 * the record's closing released is not taken to have given up then.
 * Re-ENQUEUEs of waiting users that change their needs (rescored, or a
 * match the new needs made at once) or their tier are played at their
 * recorded times: the day is replayed as it was; so are re-ENQUEUEs that
 * move a waiting user into another queue's free room, told from an
 * overflow's by their matched's reason.
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
#include "hours.h"
#include "replay_day.h"
#include "report.h"
#include "tzif.h"

#define T0  1795770000000ULL /* 2026-11-27T09:00:00Z */
#define SEC 1000ULL
#define MIN 60000ULL

/* Events as they came: a copy each. */
struct events {
	struct csq_event *v;
	size_t n, cap;
};

static void
collect(void *arg, const struct csq_event *ev)
{
	struct events *e = arg;

	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 256;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
		assert_non_null(e->v);
	}
	e->v[e->n++] = *ev;
}

static struct csq_replay_day *
day_of_lines(const char *const *lines)
{
	struct csq_replay_day *d = csq_replay_day_new();
	char err[CSQ_PARSE_ERR_MAX];
	struct csq_event ev;

	for (; *lines != NULL; lines++) {
		if (csq_event_parse(*lines, strlen(*lines), &ev, err) !=
		    CSQ_PARSE_OK)
			fail_msg("%s: %s", *lines, err);
		csq_replay_day_event(d, &ev);
	}
	csq_replay_day_end(d);
	return d;
}

static struct csq_replay_day *
day_of_events(const struct events *e)
{
	struct csq_replay_day *d = csq_replay_day_new();
	size_t i;

	for (i = 0; i < e->n; i++)
		csq_replay_day_event(d, &e->v[i]);
	csq_replay_day_end(d);
	return d;
}

static void
rp_config(struct csq_replay_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	csq_limits_default(&cfg->limits);
	cfg->seed = 1;
}

static struct events
play(const struct csq_replay_day *d, const struct csq_replay_config *cfg)
{
	struct events e = {NULL, 0, 0};

	assert_int_equal(csq_replay_day_run(d, cfg, collect, &e, NULL), CSQ_OK);
	return e;
}

static const struct csq_event *
find(const struct events *e, enum csq_event_type type, const char *user,
     const char *servicer)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		if (e->v[i].type == type &&
		    (user == NULL || strcmp(e->v[i].user, user) == 0) &&
		    (servicer == NULL ||
		     strcmp(e->v[i].servicer, servicer) == 0))
			return &e->v[i];
	return NULL;
}

/* ---- A day made on csq itself. ---- */

static uint64_t rng;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

#define USERS 400

struct sim_user {
	char id[16];
	uint64_t give_up, talk_end;
	int waiting, talking, moved;
	char room[CSQ_ROOM_MAX + 1];
};

/*
 * One step of the simulated users: a conversation ends at its time (by
 * TRANSFER to hand_to, one in four, once per user, when hand_to is not
 * NULL; else by RELEASE), a user put in a room talks 60 s to talk_s
 * more, an offer is declined one time in three, a waiting user leaves
 * at its time.
 */
static void
sim_users(struct csq *c, uint64_t now, struct sim_user *u, int n,
          uint32_t talk_s, const char *hand_to)
{
	struct csq_transfer_args ta;
	struct csq_user_info info;
	int i, done;

	for (i = 0; i < n; i++) {
		if (!u[i].waiting && !u[i].talking)
			continue;
		assert_int_equal(csq_where(c, now, u[i].id, &info), CSQ_OK);
		if (u[i].talking && info.state == CSQ_USER_ASSIGNED &&
		    strcmp(info.room, u[i].room) == 0) {
			if (now < u[i].talk_end)
				continue;
			u[i].talking = 0;
			if (hand_to != NULL && !u[i].moved && rnd(4) == 0) {
				memset(&ta, 0, sizeof(ta));
				ta.room = u[i].room;
				ta.queue = hand_to;
				ta.has_needs = 1;
				ta.needs = "";
				assert_int_equal(
				    csq_transfer(c, now, &ta, &info), CSQ_OK);
				u[i].moved = 1;
				u[i].waiting = 1;
				continue;
			}
			assert_int_equal(csq_release(c, now, u[i].room, &done),
			                 CSQ_OK);
			continue;
		}
		u[i].talking = 0; /* its servicer went: requeued */
		u[i].waiting = 1;
		if (info.state == CSQ_USER_ASSIGNED) {
			u[i].waiting = 0;
			u[i].talking = 1;
			u[i].talk_end = now + (60 + rnd(talk_s)) * SEC;
			snprintf(u[i].room, sizeof(u[i].room), "%s", info.room);
		} else if (info.state == CSQ_USER_OFFERED) {
			assert_int_equal(
			    rnd(3) == 0 ? csq_decline(c, now, info.room, &done)
			                : csq_accept(c, now, info.room, &done),
			    CSQ_OK);
			assert_int_equal(done, 1);
		} else if (info.state == CSQ_USER_WAITING &&
		           now >= u[i].give_up) {
			csq_leave(c, now, u[i].id, &done);
			u[i].waiting = 0;
		} else if (info.state == CSQ_USER_NONE)
			u[i].waiting = 0;
	}
}

static void
heartbeat(struct csq *c, uint64_t now, const char *sid, uint32_t capacity,
          const char *q1, const char *q2, uint32_t offer_s, uint32_t wrapup_s)
{
	struct csq_heartbeat_args a;
	struct csq_servicer_info info;

	memset(&a, 0, sizeof(a));
	a.servicer = sid;
	a.has_capacity = a.has_ttl = a.has_queues = a.has_offer = a.has_wrapup =
	    1;
	a.capacity = capacity;
	a.ttl_s = 60;
	a.offer_s = offer_s;
	a.wrapup_s = wrapup_s;
	a.queues[a.nqueues++] = q1;
	if (q2 != NULL)
		a.queues[a.nqueues++] = q2;
	assert_int_equal(csq_heartbeat(c, now, &a, &info), CSQ_OK);
}

/*
 * Two hours in steps of 10 s: s1 (2 rooms, sales and support), s2 (sales,
 * by offer, declining one in four), s3 (support, 30 s of wrap-up, lost
 * from 09:40 to 10:00: no heartbeat), s4 (sales, paused 10:10-10:30); a
 * sales user waiting 2 minutes overflows to support.
 */
static void
make_day(struct events *out, const struct csq_policy *pol, size_t npol,
         enum csq_strategy strategy)
{
	struct csq_limits lim;
	struct csq *c;
	static struct sim_user u[USERS];
	struct csq_enqueue_args ea;
	struct csq_user_info info;
	uint64_t now;
	int n = 0;

	csq_limits_default(&lim);
	lim.user_ttl_s = 0;
	lim.strategy = strategy;
	memset(u, 0, sizeof(u));
	rng = 0x9e3779b97f4a7c15ULL;
	c = csq_new(&lim, 42, collect, out);
	assert_int_equal(csq_set_policies(c, T0, pol, npol), CSQ_OK);
	for (now = T0; now < T0 + 120 * MIN; now += 10 * SEC) {
		csq_expire(c, now);
		heartbeat(c, now, "s1", 2, "sales", "support", 0, 0);
		heartbeat(c, now, "s2", 1, "sales", NULL, 20, 0);
		if (now < T0 + 40 * MIN || now >= T0 + 60 * MIN)
			heartbeat(c, now, "s3", 1, "support", NULL, 0, 30);
		if (now >= T0 + 20 * MIN)
			heartbeat(c, now, "s4", 1, "sales", NULL, 0, 0);
		if (now == T0 + 70 * MIN)
			assert_int_equal(csq_pause(c, now, "s4"), CSQ_OK);
		if (now == T0 + 90 * MIN)
			assert_int_equal(csq_resume(c, now, "s4"), CSQ_OK);
		if (rnd(100) < 20 && n < USERS) {
			snprintf(u[n].id, sizeof(u[n].id), "u%03d", n);
			memset(&ea, 0, sizeof(ea));
			ea.user = u[n].id;
			ea.has_queue = ea.has_tier = 1;
			ea.queue = rnd(2) ? "sales" : "support";
			ea.tier = rnd(10) == 0;
			assert_int_equal(csq_enqueue(c, now, &ea, &info),
			                 CSQ_OK);
			u[n].waiting = 1;
			u[n].give_up = now + (60 + rnd(600)) * SEC;
			n++;
		}
		sim_users(c, now, u, n, 360, NULL);
	}
	csq_free(c);
}

static struct csq_report *
report_of(const struct events *e)
{
	struct csq_report_config cfg = {.interval_ms = 30 * MIN};
	struct csq_report *r = csq_report_new(&cfg);
	size_t i;

	for (i = 0; i < e->n; i++)
		csq_report_event(r, &e->v[i]);
	csq_report_end(r);
	return r;
}

static void
assert_same_reports(const struct events *a, const struct events *b)
{
	struct csq_report *ra = report_of(a), *rb = report_of(b);
	const struct csq_report_row *x, *y;
	size_t nx, ny, i;

	x = csq_report_rows(ra, &nx);
	y = csq_report_rows(rb, &ny);
	assert_int_equal(nx, ny);
	for (i = 0; i < nx; i++) {
		assert_string_equal(x[i].queue, y[i].queue);
		assert_int_equal(x[i].arrivals, y[i].arrivals);
		assert_int_equal(x[i].matched, y[i].matched);
		assert_int_equal(x[i].abandoned, y[i].abandoned);
		assert_int_equal(x[i].within, y[i].within);
		assert_int_equal(x[i].wait_p50_ms, y[i].wait_p50_ms);
		assert_int_equal(x[i].wait_p90_ms, y[i].wait_p90_ms);
		assert_int_equal(x[i].handle_sum_ms, y[i].handle_sum_ms);
	}
	csq_report_free(ra);
	csq_report_free(rb);
}

/* What each user went through, in order: the events about it. */
static void
assert_same_users(const struct events *a, const struct events *b)
{
	size_t i, j = 0;

	for (i = 0; i < a->n; i++) {
		if (a->v[i].user[0] == '\0')
			continue;
		while (j < b->n && b->v[j].user[0] == '\0')
			j++;
		assert_true(j < b->n);
		assert_int_equal(a->v[i].type, b->v[j].type);
		assert_int_equal(a->v[i].ts_ms, b->v[j].ts_ms);
		assert_string_equal(a->v[i].user, b->v[j].user);
		assert_string_equal(a->v[i].room, b->v[j].room);
		j++;
	}
}

static void
test_own_configuration(void **state)
{
	struct csq_policy pol[1];
	struct events rec = {NULL, 0, 0}, rep;
	struct csq_replay_config cfg;
	struct csq_replay_day *d;
	int k;

	(void)state;
	memset(pol, 0, sizeof(pol));
	snprintf(pol[0].name, sizeof(pol[0].name), "sales");
	pol[0].overflow_after_s = 120;
	snprintf(pol[0].overflow_to, sizeof(pol[0].overflow_to), "support");
	for (k = 0; k < 2; k++) {
		enum csq_strategy st =
		    k ? CSQ_STRATEGY_LEAST_BUSY : CSQ_STRATEGY_LONGEST_IDLE;

		rec.n = 0;
		make_day(&rec, pol, 1, st);
		/* The day has what the replay must model. */

		assert_non_null(find(&rec, CSQ_EV_OFFERED, NULL, "s2"));
		assert_non_null(find(&rec, CSQ_EV_DECLINED, NULL, "s2"));
		assert_non_null(find(&rec, CSQ_EV_OVERFLOWED, NULL, NULL));
		assert_non_null(find(&rec, CSQ_EV_REQUEUED, NULL, "s3"));
		assert_non_null(find(&rec, CSQ_EV_LEFT, NULL, NULL));
		assert_non_null(find(&rec, CSQ_EV_WRAPUP, NULL, "s3"));
		d = day_of_events(&rec);
		rp_config(&cfg);
		cfg.limits.strategy = st;
		cfg.policies = pol;
		cfg.npolicies = 1;
		rep = play(d, &cfg);
		assert_same_users(&rec, &rep);
		assert_same_reports(&rec, &rep);
		/* Played again: the day is not changed by a run. */
		free(rep.v);
		rep = play(d, &cfg);
		assert_same_reports(&rec, &rep);
		free(rep.v);
		csq_replay_day_free(d);
	}
	free(rec.v);
}

/* s serves q alone; u1 leaves after 100 s, u2..u5 are served after
 * waits of 10 to 70 s, each talks 5 minutes. */
static const char *const small_day[] = {
    "{\"event\":\"servicer_up\",\"id\":1,\"ts\":1795770000000,"
    "\"servicer\":\"s\",\"capacity\":1,\"queues\":[\"q\"]}",
    "{\"event\":\"matched\",\"id\":2,\"ts\":1795770000000,\"user\":\"u0\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/0\","
    "\"waited_ms\":0}",
    "{\"event\":\"queued\",\"id\":3,\"ts\":1795770010000,\"user\":\"u1\","
    "\"queue\":\"q\",\"tier\":0,\"position\":1}",
    "{\"event\":\"queued\",\"id\":4,\"ts\":1795770020000,\"user\":\"u2\","
    "\"queue\":\"q\",\"tier\":0,\"position\":2}",
    "{\"event\":\"left\",\"id\":5,\"ts\":1795770110000,\"user\":\"u1\","
    "\"queue\":\"q\",\"reason\":\"leave\"}",
    "{\"event\":\"released\",\"id\":6,\"ts\":1795770300000,\"user\":\"u0\","
    "\"queue\":\"q\",\"servicer\":\"s\",\"room\":\"s/0\",\"by\":"
    "\"servicer\"}",
    "{\"event\":\"matched\",\"id\":7,\"ts\":1795770300000,\"user\":\"u2\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/0\","
    "\"waited_ms\":280000}",
    "{\"event\":\"queued\",\"id\":8,\"ts\":1795770400000,\"user\":\"u3\","
    "\"queue\":\"q\",\"tier\":0,\"position\":1}",
    "{\"event\":\"left\",\"id\":9,\"ts\":1795770500000,\"user\":\"u3\","
    "\"queue\":\"q\",\"reason\":\"timeout\"}",
    "{\"event\":\"released\",\"id\":10,\"ts\":1795770420000,\"user\":"
    "\"u2\",\"queue\":\"q\",\"servicer\":\"s\",\"room\":\"s/0\",\"by\":"
    "\"servicer\"}",
    "{\"event\":\"servicer_down\",\"id\":11,\"ts\":1795773600000,"
    "\"servicer\":\"s\",\"reason\":\"logout\"}",
    NULL};

/* Without s, nobody is served: u1 and u3 leave as recorded (u3 for its
 * TTL), u0 and u2, served, leave (if ever) only beyond the wait they were
 * seen to bear, the same for the same seed. */
static void
test_censored_patience(void **state)
{
	struct csq_replay_day *d = day_of_lines(small_day);
	struct csq_replay_change ch;
	struct csq_replay_config cfg;
	struct events a, b;
	const struct csq_event *ev;
	size_t i;

	(void)state;
	memset(&ch, 0, sizeof(ch));
	ch.kind = CSQ_REPLAY_REMOVE;
	snprintf(ch.servicer, sizeof(ch.servicer), "s");
	ch.from_ms = T0;
	ch.to_ms = T0 + 60 * MIN + 1;
	rp_config(&cfg);
	cfg.changes = &ch;
	cfg.nchanges = 1;
	a = play(d, &cfg);
	assert_null(find(&a, CSQ_EV_MATCHED, NULL, NULL));
	ev = find(&a, CSQ_EV_LEFT, "u1", NULL);
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 110 * SEC);
	assert_int_equal(ev->reason, CSQ_REASON_LEAVE);
	ev = find(&a, CSQ_EV_LEFT, "u3", NULL);
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 500 * SEC);
	assert_int_equal(ev->reason, CSQ_REASON_TIMEOUT);
	if ((ev = find(&a, CSQ_EV_LEFT, "u2", NULL)) != NULL)
		assert_true(ev->ts_ms > T0 + 20 * SEC + 280 * SEC);
	if ((ev = find(&a, CSQ_EV_LEFT, "u0", NULL)) != NULL)
		assert_true(ev->ts_ms > T0);
	/* The queue's patience: two left (90 s, 100 s), two censored: a
	 * draw beyond 280 s is from the exponential tail. Over seeds, u2
	 * leaves sometimes and not always at the same time. */
	b = play(d, &cfg);
	assert_int_equal(a.n, b.n);
	for (i = 0; i < a.n; i++)
		assert_int_equal(a.v[i].ts_ms, b.v[i].ts_ms);
	free(b.v);
	{
		uint64_t seen[8];
		int nseen = 0, s, j, left = 0;

		for (s = 1; s <= 8; s++) {
			cfg.seed = (uint64_t)s;
			b = play(d, &cfg);
			ev = find(&b, CSQ_EV_LEFT, "u2", NULL);
			if (ev != NULL) {
				assert_true(ev->ts_ms > T0 + 300 * SEC);
				left++;
				for (j = 0; j < nseen; j++)
					if (seen[j] == ev->ts_ms)
						break;
				if (j == nseen)
					seen[nseen++] = ev->ts_ms;
			}
			free(b.v);
		}
		assert_true(left >= 2);
		assert_true(nseen >= 2);
	}
	free(a.v);
	csq_replay_day_free(d);
}

/* A second servicer from 09:01: u1, who left, is served, and talks as
 * long as one of q's recorded conversations (300 s or 120 s). */
static void
test_drawn_handle(void **state)
{
	struct csq_replay_day *d = day_of_lines(small_day);
	struct csq_replay_change ch;
	struct csq_replay_config cfg;
	const struct csq_event *m, *r;
	struct events a;

	(void)state;
	memset(&ch, 0, sizeof(ch));
	ch.kind = CSQ_REPLAY_ADD;
	snprintf(ch.servicer, sizeof(ch.servicer), "x");
	ch.from_ms = T0 + 1 * MIN;
	ch.to_ms = T0 + 50 * MIN;
	ch.capacity = 2;
	rp_config(&cfg);
	cfg.changes = &ch;
	cfg.nchanges = 1;
	a = play(d, &cfg);
	m = find(&a, CSQ_EV_MATCHED, "u1", "x");
	assert_non_null(m);
	assert_int_equal(m->ts_ms, T0 + 1 * MIN);
	r = find(&a, CSQ_EV_RELEASED, "u1", "x");
	assert_non_null(r);
	assert_true(r->ts_ms - m->ts_ms == 300 * SEC ||
	            r->ts_ms - m->ts_ms == 120 * SEC);
	/* x logs in and out at the range's ends, as configured. */
	m = find(&a, CSQ_EV_SERVICER_UP, NULL, "x");
	assert_non_null(m);
	assert_int_equal(m->ts_ms, T0 + 1 * MIN);
	assert_int_equal(m->capacity, 2);
	assert_string_equal(m->queues, "q");
	m = find(&a, CSQ_EV_SERVICER_DOWN, NULL, "x");
	assert_non_null(m);
	assert_int_equal(m->ts_ms, T0 + 50 * MIN);
	free(a.v);
	csq_replay_day_free(d);
}

/* s removed from 09:02 to 09:30: out at 09:02 (u0 back in line), back
 * at 09:30 as the record has it then, and serves again. */
static void
test_remove_range(void **state)
{
	struct csq_replay_day *d = day_of_lines(small_day);
	struct csq_replay_change ch;
	struct csq_replay_override o;
	struct csq_replay_config cfg;
	const struct csq_event *ev;
	struct events a;
	size_t i;
	int ups = 0;

	(void)state;
	memset(&ch, 0, sizeof(ch));
	ch.kind = CSQ_REPLAY_REMOVE;
	snprintf(ch.servicer, sizeof(ch.servicer), "s");
	ch.from_ms = T0 + 2 * MIN;
	ch.to_ms = T0 + 30 * MIN;
	memset(&o, 0, sizeof(o));
	snprintf(o.servicer, sizeof(o.servicer), "s");
	o.has_capacity = 1;
	o.capacity = 3;
	rp_config(&cfg);
	cfg.changes = &ch;
	cfg.nchanges = 1;
	cfg.overrides = &o;
	cfg.noverrides = 1;
	a = play(d, &cfg);
	ev = find(&a, CSQ_EV_SERVICER_DOWN, NULL, "s");
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 2 * MIN);
	ev = find(&a, CSQ_EV_REQUEUED, "u0", "s");
	assert_non_null(ev);
	for (i = 0; i < a.n; i++)
		if (a.v[i].type == CSQ_EV_SERVICER_UP) {
			assert_int_equal(a.v[i].capacity, 3);
			assert_int_equal(a.v[i].ts_ms,
			                 ups == 0 ? T0 : T0 + 30 * MIN);
			ups++;
		}
	assert_int_equal(ups, 2);
	/* With 3 rooms, u0, u1 and u2 were all in rooms at 09:02 and back
	 * in line; u1's recorded patience (100 s) had run out in its room,
	 * so it goes at once; u2's, drawn beyond 280 s, had not. */
	ev = find(&a, CSQ_EV_MATCHED, "u1", "s");
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 10 * SEC);
	ev = find(&a, CSQ_EV_LEFT, "u1", NULL);
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 2 * MIN);
	ev = find(&a, CSQ_EV_LEFT, "u2", NULL);
	assert_true(ev == NULL || ev->ts_ms > T0 + 300 * SEC);
	free(a.v);
	csq_replay_day_free(d);
}

/* s offers: u1 declined after 5 s, offered again and accepted after
 * 3 s; the replay answers as recorded, and an assigning s (--offer 0)
 * makes no offer. */
static const char *const offer_day[] = {
    "{\"event\":\"servicer_up\",\"id\":1,\"ts\":1795770000000,"
    "\"servicer\":\"s\",\"capacity\":1,\"queues\":[\"q\"]}",
    "{\"event\":\"offered\",\"id\":2,\"ts\":1795770010000,\"user\":\"u1\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/0\","
    "\"expires_ms\":1795770030000}",
    "{\"event\":\"declined\",\"id\":3,\"ts\":1795770015000,\"user\":\"u1\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/0\","
    "\"by\":\"servicer\",\"position\":1}",
    "{\"event\":\"offered\",\"id\":4,\"ts\":1795770025000,\"user\":\"u1\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/0\","
    "\"expires_ms\":1795770045000}",
    "{\"event\":\"matched\",\"id\":5,\"ts\":1795770028000,\"user\":\"u1\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/0\","
    "\"waited_ms\":18000,\"offered_ms\":3000}",
    "{\"event\":\"released\",\"id\":6,\"ts\":1795770100000,\"user\":\"u1\","
    "\"queue\":\"q\",\"servicer\":\"s\",\"room\":\"s/0\",\"by\":"
    "\"servicer\"}",
    NULL};

static void
test_offers(void **state)
{
	struct csq_replay_day *d = day_of_lines(offer_day);
	struct csq_replay_config cfg;
	struct csq_replay_override o;
	const struct csq_event *ev;
	struct events a;

	(void)state;
	rp_config(&cfg);
	/* The retry window after a decline is the configuration's: 10 s,
	 * as the record shows (25 - 15). */
	a = play(d, &cfg);
	ev = find(&a, CSQ_EV_OFFERED, "u1", "s");
	assert_non_null(ev);
	assert_int_equal(ev->expires_ms - ev->ts_ms, 20 * SEC);
	ev = find(&a, CSQ_EV_DECLINED, "u1", "s");
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 15 * SEC);
	ev = find(&a, CSQ_EV_MATCHED, "u1", "s");
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 28 * SEC);
	assert_int_equal(ev->offered_ms, 3 * SEC);
	ev = find(&a, CSQ_EV_RELEASED, "u1", "s");
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 100 * SEC);
	free(a.v);

	memset(&o, 0, sizeof(o));
	o.has_offer = 1; /* every servicer: assigned */
	cfg.overrides = &o;
	cfg.noverrides = 1;
	a = play(d, &cfg);
	assert_null(find(&a, CSQ_EV_OFFERED, NULL, NULL));
	ev = find(&a, CSQ_EV_MATCHED, "u1", "s");
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 10 * SEC);
	free(a.v);
	csq_replay_day_free(d);
}

/* s wraps up 60 s after each conversation, but says READY after 20 s
 * (u1); u2 leaves unserved. The replay ends s's wrap-up when the record
 * did; x, added with 60 s of wrap-up, serves u2 for a drawn time and is
 * READY after 20 s too, the queue's only recorded wrap-up. */
static const char *const wrap_day[] = {
    "{\"event\":\"servicer_up\",\"id\":1,\"ts\":1795770000000,"
    "\"servicer\":\"s\",\"capacity\":1,\"queues\":[\"q\"]}",
    "{\"event\":\"matched\",\"id\":2,\"ts\":1795770000000,\"user\":\"u1\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/0\","
    "\"waited_ms\":0}",
    "{\"event\":\"queued\",\"id\":3,\"ts\":1795770010000,\"user\":\"u2\","
    "\"queue\":\"q\",\"tier\":0,\"position\":1}",
    "{\"event\":\"left\",\"id\":4,\"ts\":1795770050000,\"user\":\"u2\","
    "\"queue\":\"q\",\"reason\":\"leave\"}",
    "{\"event\":\"released\",\"id\":5,\"ts\":1795770100000,\"user\":\"u1\","
    "\"queue\":\"q\",\"servicer\":\"s\",\"room\":\"s/0\",\"by\":"
    "\"servicer\"}",
    "{\"event\":\"wrapup\",\"id\":6,\"ts\":1795770100000,\"servicer\":"
    "\"s\",\"room\":\"s/0\",\"until_ms\":1795770160000}",
    "{\"event\":\"ready\",\"id\":7,\"ts\":1795770120000,\"servicer\":\"s\","
    "\"room\":\"s/0\"}",
    "{\"event\":\"servicer_down\",\"id\":8,\"ts\":1795770600000,"
    "\"servicer\":\"s\",\"reason\":\"logout\"}",
    NULL};

static void
test_wrapup(void **state)
{
	struct csq_replay_day *d = day_of_lines(wrap_day);
	struct csq_replay_change ch;
	struct csq_replay_override o;
	struct csq_replay_config cfg;
	const struct csq_event *ev, *rel;
	struct events a;
	size_t i;

	(void)state;
	rp_config(&cfg);
	a = play(d, &cfg);
	ev = find(&a, CSQ_EV_WRAPUP, NULL, "s");
	assert_non_null(ev);
	assert_int_equal(ev->until_ms - ev->ts_ms, 60 * SEC);
	ev = find(&a, CSQ_EV_READY, NULL, "s");
	assert_non_null(ev);
	assert_int_equal(ev->ts_ms, T0 + 120 * SEC);
	free(a.v);

	memset(&ch, 0, sizeof(ch));
	ch.kind = CSQ_REPLAY_ADD;
	snprintf(ch.servicer, sizeof(ch.servicer), "x");
	ch.from_ms = T0 + 20 * SEC;
	ch.to_ms = T0 + 590 * SEC;
	ch.capacity = 1;
	memset(&o, 0, sizeof(o));
	snprintf(o.servicer, sizeof(o.servicer), "x");
	o.has_wrapup = 1;
	o.wrapup_s = 60;
	cfg.changes = &ch;
	cfg.nchanges = 1;
	cfg.overrides = &o;
	cfg.noverrides = 1;
	a = play(d, &cfg);
	rel = find(&a, CSQ_EV_RELEASED, "u2", "x");
	assert_non_null(rel);
	for (i = 0; i < a.n; i++)
		if (a.v[i].type == CSQ_EV_READY &&
		    strcmp(a.v[i].servicer, "x") == 0)
			break;
	assert_true(i < a.n);
	assert_int_equal(a.v[i].ts_ms, rel->ts_ms + 20 * SEC);
	free(a.v);
	csq_replay_day_free(d);
}

/* How it was broken: a change out of range, an empty or reversed range,
 * a bad id, an override out of range: refused, nothing emitted. */
static void
test_refused(void **state)
{
	struct csq_replay_day *d = day_of_lines(small_day);
	struct csq_replay_change ch;
	struct csq_replay_override o;
	struct csq_replay_config cfg;
	struct events a = {NULL, 0, 0};
	int k;

	(void)state;
	for (k = 0; k < 7; k++) {
		memset(&ch, 0, sizeof(ch));
		memset(&o, 0, sizeof(o));
		ch.kind = CSQ_REPLAY_ADD;
		snprintf(ch.servicer, sizeof(ch.servicer), "x");
		ch.from_ms = T0;
		ch.to_ms = T0 + MIN;
		ch.capacity = 1;
		rp_config(&cfg);
		cfg.changes = &ch;
		cfg.nchanges = 1;
		switch (k) {
		case 0:
			ch.to_ms = ch.from_ms;
			break;
		case 1:
			ch.capacity = 0;
			break;
		case 2:
			snprintf(ch.servicer, sizeof(ch.servicer), "a b");
			break;
		case 3:
			ch.capacity = CSQ_CAPACITY_MAX + 1;
			break;
		case 4:
			o.has_offer = 1;
			o.offer_s = CSQ_OFFER_MAX + 1;
			cfg.overrides = &o;
			cfg.noverrides = 1;
			break;
		case 5:
			o.has_wrapup = 1;
			o.wrapup_s = CSQ_WRAPUP_MAX + 1;
			cfg.overrides = &o;
			cfg.noverrides = 1;
			break;
		case 6:
			cfg.nchanges = CSQ_REPLAY_CHANGES_MAX + 1;
			break;
		}
		assert_int_equal(csq_replay_day_run(d, &cfg, collect, &a, NULL),
		                 CSQ_ERANGE);
		assert_int_equal(a.n, 0);
	}
	csq_replay_day_free(d);
}

/* Events without their users or rooms, a release of nobody, a user's
 * events before its arrival, a reused id, an empty record: no crash; the
 * reused id plays as a stay of its own. */
static const char *const holes[] = {
    "{\"event\":\"released\",\"id\":1,\"ts\":1795770000000,\"user\":\"zz\","
    "\"queue\":\"q\",\"servicer\":\"s\",\"room\":\"s/0\",\"by\":"
    "\"servicer\"}",
    "{\"event\":\"left\",\"id\":2,\"ts\":1795770000000,\"user\":\"yy\","
    "\"queue\":\"q\",\"reason\":\"leave\"}",
    "{\"event\":\"declined\",\"id\":3,\"ts\":1795770000000,\"user\":\"ww\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/0\","
    "\"by\":\"timeout\",\"position\":1}",
    "{\"event\":\"matched\",\"id\":4,\"ts\":1795770000000,\"queue\":\"q\"}",
    "{\"event\":\"servicer_down\",\"id\":5,\"ts\":1795770000000}",
    "{\"event\":\"queued\",\"id\":6,\"ts\":1795770001000,\"user\":\"u\","
    "\"queue\":\"q\",\"tier\":0,\"position\":1}",
    "{\"event\":\"left\",\"id\":7,\"ts\":1795770002000,\"user\":\"u\","
    "\"queue\":\"q\",\"reason\":\"leave\"}",
    "{\"event\":\"queued\",\"id\":8,\"ts\":1795770003000,\"user\":\"u\","
    "\"queue\":\"q\",\"tier\":0,\"position\":1}",
    "{\"event\":\"requeued\",\"id\":9,\"ts\":1795770004000,\"user\":\"u\","
    "\"queue\":\"q\",\"tier\":0,\"position\":1,\"servicer\":\"s\","
    "\"room\":\"s/0\",\"reason\":\"lost\"}",
    "{\"event\":\"servicer_up\",\"id\":10,\"ts\":1795770005000,"
    "\"servicer\":\"s\",\"capacity\":1,\"queues\":[]}",
    "{\"event\":\"matched\",\"id\":11,\"ts\":1795770010000,\"user\":"
    "\"m\",\"queue\":\"q\",\"tier\":0,\"servicer\":\"t\",\"room\":"
    "\"t/0\",\"waited_ms\":600000}",
    NULL};

static void
test_holes(void **state)
{
	struct csq_replay_day *d = day_of_lines(holes);
	struct csq_replay_config cfg;
	struct events a;
	char queues[CSQ_QUEUE_LIST_MAX];

	(void)state;
	rp_config(&cfg);
	a = play(d, &cfg);
	assert_non_null(find(&a, CSQ_EV_QUEUED, "u", NULL));
	assert_non_null(find(&a, CSQ_EV_LEFT, "u", NULL));
	/* The second stay, served by s (the default queue's) or not. */
	assert_non_null(find(&a, CSQ_EV_QUEUED, "u:2", NULL));
	/* m, matched after 10 minutes of a wait the record began during,
	 * arrives at the record's start. */
	assert_int_equal(find(&a, CSQ_EV_QUEUED, "m", NULL)->ts_ms, T0);
	csq_replay_day_queues(d, queues, sizeof(queues));
	assert_string_equal(queues, "q");
	free(a.v);
	csq_replay_day_free(d);

	d = csq_replay_day_new();
	csq_replay_day_end(d);
	a = play(d, &cfg);
	assert_int_equal(a.n, 0);
	free(a.v);
	csq_replay_day_free(d);
}

/* ---- Skills, relaxation, windows, transfers. ---- */

static void
heartbeat_sk(struct csq *c, uint64_t now, const char *sid, uint32_t capacity,
             const char *queue, const char *skills)
{
	struct csq_heartbeat_args a;
	struct csq_servicer_info info;

	memset(&a, 0, sizeof(a));
	a.servicer = sid;
	a.has_capacity = a.has_ttl = a.has_queues = a.has_skills = 1;
	a.capacity = capacity;
	a.ttl_s = 60;
	a.queues[a.nqueues++] = queue;
	a.skills = skills;
	assert_int_equal(csq_heartbeat(c, now, &a, &info), CSQ_OK);
}

/*
 * An hour and a half in steps of 10 s: k1 (support, de:5), k2 (support,
 * en:3; from 09:30 two rooms and de:2 too), k3 (billing, no skills).
 * Support users need de, en:2, fr (nobody has it: relaxation only) or
 * nothing; one in five prefers k1 for a minute; one support conversation
 * in four is handed on to billing with NEEDS "" at its end.
 */
static void
make_skills_day(struct events *out, const struct csq_policy *pol, size_t npol)
{
	static const char *const needs[] = {"de", "en:2", "fr", ""};
	struct csq_limits lim;
	struct csq *c;
	static struct sim_user u[USERS];
	struct csq_enqueue_args ea;
	struct csq_user_info info;
	uint64_t now;
	int n = 0;

	csq_limits_default(&lim);
	lim.user_ttl_s = 0;
	memset(u, 0, sizeof(u));
	rng = 0x2545f4914f6cdd1dULL;
	c = csq_new(&lim, 42, collect, out);
	assert_int_equal(csq_set_policies(c, T0, pol, npol), CSQ_OK);
	for (now = T0; now < T0 + 90 * MIN; now += 10 * SEC) {
		csq_expire(c, now);
		heartbeat_sk(c, now, "k1", 1, "support", "de:5");
		if (now < T0 + 30 * MIN)
			heartbeat_sk(c, now, "k2", 1, "support", "en:3");
		else
			heartbeat_sk(c, now, "k2", 2, "support", "de:2,en:3");
		heartbeat_sk(c, now, "k3", 1, "billing", "");
		if (rnd(100) < 25 && n < USERS) {
			snprintf(u[n].id, sizeof(u[n].id), "u%03d", n);
			memset(&ea, 0, sizeof(ea));
			ea.user = u[n].id;
			ea.has_queue = 1;
			ea.queue = "support";
			ea.has_needs = 1;
			ea.needs = needs[rnd(4)];
			if (rnd(5) == 0) {
				ea.prefer.has_prefer = 1;
				ea.prefer.servicer = "k1";
				ea.prefer.seconds = 60;
			}
			assert_int_equal(csq_enqueue(c, now, &ea, &info),
			                 CSQ_OK);
			u[n].waiting = 1;
			u[n].give_up = now + (120 + rnd(900)) * SEC;
			n++;
		}
		sim_users(c, now, u, n, 300, "billing");
	}
	csq_free(c);
}

static size_t
count(const struct events *e, enum csq_event_type type)
{
	size_t i, n = 0;

	for (i = 0; i < e->n; i++)
		n += e->v[i].type == type;
	return n;
}

static void
test_skills_day(void **state)
{
	struct csq_policy pol[1];
	struct events rec = {NULL, 0, 0}, rep;
	struct csq_replay_config cfg;
	struct csq_replay_stats st;
	struct csq_replay_day *d;
	const struct csq_event *ev;

	(void)state;
	memset(pol, 0, sizeof(pol));
	snprintf(pol[0].name, sizeof(pol[0].name), "support");
	pol[0].nrelax = 2;
	pol[0].relax[0].after_s = 60;
	pol[0].relax[0].lower = 2;
	pol[0].relax[1].after_s = 150;
	pol[0].relax[1].drop_all = 1;
	make_skills_day(&rec, pol, 1);
	/* The day has what the replay must model. */
	assert_non_null(find(&rec, CSQ_EV_RELAXED, NULL, NULL));
	assert_non_null(find(&rec, CSQ_EV_TRANSFERRED, NULL, NULL));
	assert_non_null(find(&rec, CSQ_EV_PREFER_ENDED, NULL, NULL));
	assert_non_null(ev = find(&rec, CSQ_EV_SERVICER_UPDATED, NULL, "k2"));
	assert_string_equal(ev->skills, "de:2,en:3");
	assert_int_equal(ev->capacity, 2);
	assert_true(count(&rec, CSQ_EV_TRANSFERRED) >= 3);

	/* Under its own configuration: the same day, transfers included. */
	d = day_of_events(&rec);
	rp_config(&cfg);
	cfg.policies = pol;
	cfg.npolicies = 1;
	rep = play(d, &cfg);
	assert_same_users(&rec, &rep);
	assert_same_reports(&rec, &rep);
	assert_int_equal(count(&rep, CSQ_EV_RELAXED),
	                 count(&rec, CSQ_EV_RELAXED));
	free(rep.v);
	assert_int_equal(csq_replay_day_run(d, &cfg, NULL, NULL, &st), CSQ_OK);
	assert_int_equal(st.transfers, count(&rec, CSQ_EV_TRANSFERRED));

	/* What if support did not relax: nothing relaxed, and the users who
	 * need fr (which nobody has) are never served. */
	cfg.npolicies = 0;
	rep = play(d, &cfg);
	assert_int_equal(count(&rep, CSQ_EV_RELAXED), 0);
	assert_int_equal(count(&rep, CSQ_EV_QUEUED) + 0 > 0, 1);
	{
		size_t i;

		for (i = 0; i < rep.n; i++)
			if (rep.v[i].type == CSQ_EV_MATCHED)
				assert_true(strstr(rep.v[i].needs, "fr") ==
				            NULL);
	}
	assert_true(count(&rep, CSQ_EV_MATCHED) < count(&rec, CSQ_EV_MATCHED));
	free(rep.v);

	/* What if k3 had fr and served support too (an override): it takes
	 * fr users without waiting for relaxation. */
	{
		struct csq_replay_override o;

		memset(&o, 0, sizeof(o));
		snprintf(o.servicer, sizeof(o.servicer), "k3");
		o.has_skills = o.has_queues = 1;
		snprintf(o.skills, sizeof(o.skills), "fr:1");
		snprintf(o.queues, sizeof(o.queues), "support,billing");
		cfg.overrides = &o;
		cfg.noverrides = 1;
		rep = play(d, &cfg);
		assert_non_null(ev = find(&rep, CSQ_EV_MATCHED, NULL, "k3"));
		assert_true(count(&rep, CSQ_EV_MATCHED) >
		            count(&rec, CSQ_EV_MATCHED) / 2);
		free(rep.v);
		/* A skill list csq would refuse: nothing played. */
		snprintf(o.skills, sizeof(o.skills), "fr:0");
		assert_int_equal(csq_replay_day_run(d, &cfg, NULL, NULL, NULL),
		                 CSQ_ERANGE);
		cfg.overrides = NULL;
		cfg.noverrides = 0;
	}
	csq_replay_day_free(d);
	free(rec.v);
}

/* ---- Re-ENQUEUE of a waiting user. ---- */

/*
 * An hour in steps of 10 s: k1 (support, de:5), k2 (support, en:3);
 * users needing de, en:2, fr (nobody has it) or nothing; support drops
 * every need after 150 s. A user in its second minute of waiting asks
 * again: one that needs fr one time in two, with NEEDS "" or NEEDS de
 * (rescored, or matched at once when a free room may take it now); the
 * others one time in three, with TIER 1 or NEEDS "".
 */
static void
make_again_day(struct events *out, const struct csq_policy *pol)
{
	static const char *const needs[] = {"de", "en:2", "fr", ""};
	static struct sim_user u[USERS];
	static uint64_t arrived[USERS];
	static int asked[USERS], fr[USERS];
	struct csq_limits lim;
	struct csq *c;
	struct csq_enqueue_args ea;
	struct csq_user_info info;
	uint64_t now;
	int n = 0, i;

	csq_limits_default(&lim);
	lim.user_ttl_s = 0;
	memset(u, 0, sizeof(u));
	memset(asked, 0, sizeof(asked));
	rng = 0x853c49e6748fea9bULL;
	c = csq_new(&lim, 42, collect, out);
	assert_int_equal(csq_set_policies(c, T0, pol, 1), CSQ_OK);
	for (now = T0; now < T0 + 60 * MIN; now += 10 * SEC) {
		csq_expire(c, now);
		heartbeat_sk(c, now, "k1", 1, "support", "de:5");
		heartbeat_sk(c, now, "k2", 1, "support", "en:3");
		if (rnd(100) < 15 && n < USERS) {
			snprintf(u[n].id, sizeof(u[n].id), "u%03d", n);
			memset(&ea, 0, sizeof(ea));
			ea.user = u[n].id;
			ea.has_queue = ea.has_needs = 1;
			ea.queue = "support";
			ea.needs = needs[rnd(4)];
			fr[n] = strcmp(ea.needs, "fr") == 0;
			assert_int_equal(csq_enqueue(c, now, &ea, &info),
			                 CSQ_OK);
			u[n].waiting = 1;
			u[n].give_up = now + (120 + rnd(600)) * SEC;
			arrived[n++] = now;
		}
		for (i = 0; i < n; i++) {
			if (asked[i] || !u[i].waiting ||
			    now < arrived[i] + 60 * SEC ||
			    csq_where(c, now, u[i].id, &info) != CSQ_OK ||
			    info.state != CSQ_USER_WAITING)
				continue;
			asked[i] = 1;
			if (rnd(fr[i] ? 2 : 3) != 0)
				continue;
			memset(&ea, 0, sizeof(ea));
			ea.user = u[i].id;
			if (fr[i] || rnd(2) == 0) {
				ea.has_needs = 1;
				ea.needs = fr[i] && rnd(2) ? "de" : "";
			} else {
				ea.has_tier = 1;
				ea.tier = 1;
			}
			assert_int_equal(csq_enqueue(c, now, &ea, &info),
			                 CSQ_OK);
		}
		sim_users(c, now, u, n, 300, NULL);
	}
	csq_free(c);
}

static void
test_reenqueue(void **state)
{
	struct csq_policy pol[1];
	struct events rec = {NULL, 0, 0}, rep;
	struct csq_replay_config cfg;
	struct csq_replay_stats st;
	struct csq_replay_day *d;
	size_t i, needs_only = 0, tiers = 0, rescored = 0;

	(void)state;
	memset(pol, 0, sizeof(pol));
	snprintf(pol[0].name, sizeof(pol[0].name), "support");
	pol[0].nrelax = 1;
	pol[0].relax[0].after_s = 150;
	pol[0].relax[0].drop_all = 1;
	make_again_day(&rec, pol);
	/* The record has them: a change of needs alone publishes rescored
	 * with the new needs (protocol.md 3c), a new tier too. */
	for (i = 0; i < rec.n; i++) {
		if (rec.v[i].type != CSQ_EV_RESCORED)
			continue;
		assert_int_equal(rec.v[i].reason, CSQ_REASON_ENQUEUE);
		rescored++;
		if (rec.v[i].tier == 1)
			tiers++;
		else
			needs_only++;
	}
	assert_true(needs_only > 0);
	assert_true(tiers > 0);

	/* Replayed under its own configuration: the same day, every
	 * re-ENQUEUE at its time, those that ended in a match included. */
	d = day_of_events(&rec);
	rp_config(&cfg);
	cfg.policies = pol;
	cfg.npolicies = 1;
	rep = play(d, &cfg);
	assert_same_users(&rec, &rep);
	assert_same_reports(&rec, &rep);
	assert_int_equal(count(&rep, CSQ_EV_RESCORED), rescored);
	free(rep.v);
	assert_int_equal(csq_replay_day_run(d, &cfg, NULL, NULL, &st), CSQ_OK);
	assert_true(st.reenqueued > rescored); /* some matched at once */

	/* Played without its servicers (a what-if): the re-ENQUEUEs of
	 * users still waiting are played all the same, and nobody is
	 * matched. */
	{
		struct csq_replay_change ch[2];

		memset(ch, 0, sizeof(ch));
		for (i = 0; i < 2; i++) {
			ch[i].kind = CSQ_REPLAY_REMOVE;
			snprintf(ch[i].servicer, sizeof(ch[i].servicer), "k%zu",
			         i + 1);
			ch[i].from_ms = T0;
			ch[i].to_ms = T0 + 120 * MIN;
		}
		cfg.changes = ch;
		cfg.nchanges = 2;
		rep = play(d, &cfg);
		assert_int_equal(count(&rep, CSQ_EV_MATCHED), 0);
		assert_true(count(&rep, CSQ_EV_RESCORED) >= rescored);
		free(rep.v);
		cfg.changes = NULL;
		cfg.nchanges = 0;
	}
	csq_replay_day_free(d);
	free(rec.v);
}

/*
 * An hour where waiting sales users move themselves: s1 serves sales
 * alone (one room), s2 support (two rooms); after 30 s of waiting, one
 * sales user in three sends ENQUEUE ... QUEUE support, which a free room
 * of s2 often takes at once (matched, from_queue sales, reason enqueue);
 * a sales user that waited 3 minutes overflows to support, at once into
 * a free room too (matched, from_queue sales, reason overflow).
 */
static void
make_move_day(struct events *out, const struct csq_policy *pol)
{
	static struct sim_user u[USERS];
	static uint64_t arrived[USERS];
	static int asked[USERS];
	struct csq_limits lim;
	struct csq *c;
	struct csq_enqueue_args ea;
	struct csq_user_info info;
	uint64_t now;
	int n = 0, i;

	csq_limits_default(&lim);
	lim.user_ttl_s = 0;
	memset(u, 0, sizeof(u));
	memset(asked, 0, sizeof(asked));
	rng = 0x2545f4914f6cdd1dULL;
	c = csq_new(&lim, 42, collect, out);
	assert_int_equal(csq_set_policies(c, T0, pol, 1), CSQ_OK);
	for (now = T0; now < T0 + 60 * MIN; now += 10 * SEC) {
		csq_expire(c, now);
		heartbeat(c, now, "s1", 1, "sales", NULL, 0, 0);
		heartbeat(c, now, "s2", 2, "support", NULL, 0, 0);
		if (rnd(100) < 25 && n < USERS) {
			snprintf(u[n].id, sizeof(u[n].id), "u%03d", n);
			memset(&ea, 0, sizeof(ea));
			ea.user = u[n].id;
			ea.has_queue = 1;
			ea.queue = rnd(4) ? "sales" : "support";
			assert_int_equal(csq_enqueue(c, now, &ea, &info),
			                 CSQ_OK);
			u[n].waiting = 1;
			u[n].give_up = now + (240 + rnd(600)) * SEC;
			arrived[n++] = now;
		}
		for (i = 0; i < n; i++) {
			if (asked[i] || !u[i].waiting ||
			    now < arrived[i] + 30 * SEC ||
			    csq_where(c, now, u[i].id, &info) != CSQ_OK ||
			    info.state != CSQ_USER_WAITING ||
			    strcmp(info.queue, "sales") != 0)
				continue;
			asked[i] = 1;
			if (rnd(3) != 0)
				continue;
			memset(&ea, 0, sizeof(ea));
			ea.user = u[i].id;
			ea.has_queue = 1;
			ea.queue = "support";
			assert_int_equal(csq_enqueue(c, now, &ea, &info),
			                 CSQ_OK);
		}
		sim_users(c, now, u, n, 120, NULL);
	}
	csq_free(c);
}

/* Matched (or offered) after a move of why, in e. */
static size_t
count_moved(const struct events *e, enum csq_reason why)
{
	size_t i, n = 0;

	for (i = 0; i < e->n; i++)
		if ((e->v[i].type == CSQ_EV_MATCHED ||
		     e->v[i].type == CSQ_EV_OFFERED) &&
		    e->v[i].from_queue[0] != '\0' && e->v[i].reason == why)
			n++;
	return n;
}

/*
 * A re-ENQUEUE that moves a waiting user into a free room and an
 * overflow that does are told apart by the matched's reason (issue 36):
 * the replay plays the first as the same ENQUEUE at its time and leaves
 * the second to its configuration's overflow, so the day is replayed as
 * it was. How it was broken: the same record without the reasons (as a
 * csq before them wrote it) plays every such move as an overflow, and
 * gives another day, so the test sees the difference.
 */
static void
test_reenqueue_move(void **state)
{
	struct csq_policy pol[1];
	struct events rec = {NULL, 0, 0}, rep;
	struct csq_replay_config cfg;
	struct csq_replay_day *d;
	size_t enq, ovf, i;

	(void)state;
	memset(pol, 0, sizeof(pol));
	snprintf(pol[0].name, sizeof(pol[0].name), "sales");
	pol[0].overflow_after_s = 180;
	snprintf(pol[0].overflow_to, sizeof(pol[0].overflow_to), "support");
	make_move_day(&rec, pol);
	enq = count_moved(&rec, CSQ_REASON_ENQUEUE);
	ovf = count_moved(&rec, CSQ_REASON_OVERFLOW);
	assert_true(enq > 0);
	assert_true(ovf > 0);
	/* Nothing else has a reason on matched, and every move has one. */
	assert_int_equal(count_moved(&rec, CSQ_REASON_NONE), 0);
	for (i = 0; i < rec.n; i++)
		if (rec.v[i].type == CSQ_EV_MATCHED &&
		    rec.v[i].from_queue[0] == '\0')
			assert_int_equal(rec.v[i].reason, CSQ_REASON_NONE);

	d = day_of_events(&rec);
	rp_config(&cfg);
	cfg.policies = pol;
	cfg.npolicies = 1;
	rep = play(d, &cfg);
	assert_same_users(&rec, &rep);
	assert_same_reports(&rec, &rep);
	assert_int_equal(count_moved(&rep, CSQ_REASON_ENQUEUE), enq);
	assert_int_equal(count_moved(&rep, CSQ_REASON_OVERFLOW), ovf);
	free(rep.v);
	csq_replay_day_free(d);

	/* The record of a csq before the reason: each move read as an
	 * overflow, and the replay's day is another. */
	for (i = 0; i < rec.n; i++)
		if (rec.v[i].type == CSQ_EV_MATCHED ||
		    rec.v[i].type == CSQ_EV_OFFERED)
			rec.v[i].reason = CSQ_REASON_NONE;
	d = day_of_events(&rec);
	rep = play(d, &cfg);
	assert_true(count_moved(&rep, CSQ_REASON_ENQUEUE) < enq);
	free(rep.v);
	csq_replay_day_free(d);
	free(rec.v);
}

/* Records a replay must survive: needs nobody meets, a window for a
 * servicer never seen, a transfer with no transferred (and one to a
 * queue nobody serves), an update of a servicer never logged in. */
static const char *const odd_day[] = {
    "{\"event\":\"servicer_updated\",\"id\":1,\"ts\":1795770000000,"
    "\"servicer\":\"s\",\"capacity\":2,\"queues\":[\"q\"],"
    "\"skills\":\"de:3\"}",
    "{\"event\":\"queued\",\"id\":2,\"ts\":1795770001000,\"user\":\"a\","
    "\"queue\":\"q\",\"tier\":0,\"position\":1,\"needs\":\"zz:100\"}",
    "{\"event\":\"queued\",\"id\":3,\"ts\":1795770002000,\"user\":\"b\","
    "\"queue\":\"q\",\"tier\":0,\"position\":2,\"prefer\":\"ghost\","
    "\"prefer_ms\":3600000000}",
    "{\"event\":\"matched\",\"id\":4,\"ts\":1795770003000,\"user\":\"b\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/0\","
    "\"waited_ms\":1000,\"needs\":\"de:3\"}",
    "{\"event\":\"released\",\"id\":5,\"ts\":1795770063000,\"user\":\"b\","
    "\"queue\":\"q\",\"servicer\":\"s\",\"room\":\"s/0\","
    "\"by\":\"transfer\"}",
    "{\"event\":\"matched\",\"id\":6,\"ts\":1795770064000,\"user\":\"c\","
    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s\",\"room\":\"s/1\","
    "\"waited_ms\":0}",
    "{\"event\":\"released\",\"id\":7,\"ts\":1795770070000,\"user\":\"c\","
    "\"queue\":\"q\",\"servicer\":\"s\",\"room\":\"s/1\","
    "\"by\":\"transfer\"}",
    "{\"event\":\"transferred\",\"id\":8,\"ts\":1795770070000,\"user\":\"c\","
    "\"from_queue\":\"q\",\"queue\":\"nobody_here\",\"tier\":0,"
    "\"servicer\":\"s\",\"room\":\"s/1\",\"position\":1,"
    "\"needs\":\"de:1\",\"prefer\":\"s\",\"prefer_ms\":1}",
    "{\"event\":\"left\",\"id\":9,\"ts\":1795770600000,\"user\":\"c\","
    "\"queue\":\"nobody_here\",\"reason\":\"leave\"}",
    NULL,
};

static void
test_odd_records(void **state)
{
	struct csq_replay_day *d = day_of_lines(odd_day);
	struct csq_replay_config cfg;
	struct events rep;
	const struct csq_event *ev;

	(void)state;
	rp_config(&cfg);
	rep = play(d, &cfg);
	/* a needs what nobody has: it waits; b goes to s (its window's
	 * servicer is nobody), c is handed on and leaves from there. */
	assert_null(find(&rep, CSQ_EV_MATCHED, "a", NULL));
	assert_non_null(find(&rep, CSQ_EV_MATCHED, "b", "s"));
	assert_non_null(ev = find(&rep, CSQ_EV_TRANSFERRED, "c", NULL));
	assert_string_equal(ev->queue, "nobody_here");
	assert_non_null(ev = find(&rep, CSQ_EV_LEFT, "c", NULL));
	assert_int_equal(ev->ts_ms, 1795770600000ULL);
	free(rep.v);
	csq_replay_day_free(d);
}

/* ---- Business hours (protocol.md 3c) in a what-if. ---- */

/* Queue q in UTC (the system's zone file, as csqd reads it), open week. */
static void
hours_policy(struct csq_policy *p, const char *week, uint32_t when, uint32_t at)
{
	static uint8_t buf[1 << 16];
	const char *err;
	size_t len;
	FILE *fp;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "q");
	p->hours.on = 1;
	fp = fopen("/usr/share/zoneinfo/UTC", "rb");
	assert_non_null(fp);
	len = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	if (csq_tzif_parse(buf, len, &p->hours.tz, &err) != 0)
		fail_msg("UTC: %s", err);
	snprintf(p->hours.tz.name, sizeof(p->hours.tz.name), "UTC");
	if (csq_hours_parse_week(week, &p->hours, &err) != 0)
		fail_msg("%s: %s", week, err);
	p->hours.when_closed = when;
	p->hours.at_close = at;
	assert_int_equal(csq_hours_check(&p->hours), 0);
}

/* A Friday morning (T0 is 2026-11-27, a Friday, 09:00 UTC): s serves q
 * from 09:00, each user talks 10 minutes; arrivals every 4 minutes
 * from 09:01 to 10:57 (30 users), some waiting. */
static void
hours_day(struct events *rec)
{
	struct csq_limits lim;
	struct csq *c;
	struct csq_enqueue_args ea;
	struct csq_user_info info;
	char uid[16], room[CSQ_ROOM_MAX + 1];
	uint64_t now, ends[64];
	int n = 0, i, done;

	csq_limits_default(&lim);
	lim.user_ttl_s = 0;
	c = csq_new(&lim, 7, collect, rec);
	heartbeat(c, T0, "s", 2, "q", NULL, 0, 0);
	memset(ends, 0, sizeof(ends));
	for (now = T0; now <= T0 + 120 * MIN; now += MIN) {
		heartbeat(c, now, "s", 2, "q", NULL, 0, 0);
		for (i = 0; i < n; i++) {
			snprintf(uid, sizeof(uid), "h%02d", i);
			if (csq_where(c, now, uid, &info) != CSQ_OK)
				continue;
			if (info.state == CSQ_USER_ASSIGNED && ends[i] == 0)
				ends[i] = now + 10 * MIN;
			else if (info.state == CSQ_USER_ASSIGNED &&
			         now >= ends[i]) {
				snprintf(room, sizeof(room), "%s", info.room);
				assert_int_equal(
				    csq_release(c, now, room, &done), CSQ_OK);
			}
		}
		if ((now - T0) % (4 * MIN) == MIN && n < 64) {
			snprintf(uid, sizeof(uid), "h%02d", n++);
			memset(&ea, 0, sizeof(ea));
			ea.user = uid;
			ea.has_queue = 1;
			ea.queue = "q";
			assert_int_equal(csq_enqueue(c, now, &ea, &info),
			                 CSQ_OK);
		}
	}
	csq_free(c);
}

static void
test_hours_what_if(void **state)
{
	struct events rec = {NULL, 0, 0}, rep;
	struct csq_replay_config cfg;
	struct csq_replay_stats st;
	struct csq_replay_day *d;
	struct csq_policy pol;
	const struct csq_event *ev;
	size_t i, waiting_left = 0;

	(void)state;
	hours_day(&rec);
	assert_null(find(&rec, CSQ_EV_CLOSED, NULL, NULL));
	d = day_of_events(&rec);
	rp_config(&cfg);
	/* What if q closed at 10:00, refusing arrivals and releasing those
	 * waiting: closed at 10:00 (until Monday 09:00), each user waiting
	 * then leaves with reason closed, and later arrivals are refused. */
	hours_policy(&pol, "mon-fri 09:00-10:00", CSQ_CLOSED_REFUSE,
	             CSQ_AT_CLOSE_RELEASE);
	cfg.policies = &pol;
	cfg.npolicies = 1;
	rep = play(d, &cfg);
	assert_non_null(ev = find(&rep, CSQ_EV_CLOSED, NULL, NULL));
	assert_int_equal(ev->ts_ms, T0 + 60 * MIN);
	assert_string_equal(ev->queue, "q");
	assert_null(find(&rep, CSQ_EV_OPENED, NULL, NULL));
	for (i = 0; i < rep.n; i++) {
		if (rep.v[i].type == CSQ_EV_LEFT) {
			assert_int_equal(rep.v[i].reason, CSQ_REASON_CLOSED);
			assert_int_equal(rep.v[i].ts_ms, T0 + 60 * MIN);
			waiting_left++;
		}
		/* Nobody is placed in a room of q while it is closed. */
		if (rep.v[i].type == CSQ_EV_MATCHED)
			assert_true(rep.v[i].ts_ms < T0 + 60 * MIN);
	}
	assert_true(waiting_left > 0);
	free(rep.v);
	assert_int_equal(csq_replay_day_run(d, &cfg, NULL, NULL, &st), CSQ_OK);
	assert_int_equal(st.refused, 15); /* 10:01, 10:05, ... 10:57 */

	/* Closed until 10:00 with arrivals waiting: opened at 10:00, and s
	 * takes them then. */
	hours_policy(&pol, "fri 10:00-18:00", CSQ_CLOSED_WAIT,
	             CSQ_AT_CLOSE_KEEP);
	rep = play(d, &cfg);
	assert_non_null(ev = find(&rep, CSQ_EV_OPENED, NULL, NULL));
	assert_int_equal(ev->ts_ms, T0 + 60 * MIN);
	assert_non_null(ev = find(&rep, CSQ_EV_MATCHED, NULL, "s"));
	assert_int_equal(ev->ts_ms, T0 + 60 * MIN);
	free(rep.v);
	csq_replay_day_free(d);

	/* The record's own closing released r1: under a what-if without
	 * hours, r1 waits on (its patience is only known to be longer) and
	 * s, back at 09:40, takes it. */
	{
		static const char *const closed_day[] = {
		    "{\"event\":\"queued\",\"id\":1,\"ts\":1795770000000,"
		    "\"user\":\"r1\",\"queue\":\"q\",\"tier\":0,"
		    "\"position\":1}",
		    "{\"event\":\"closed\",\"id\":2,\"ts\":1795771800000,"
		    "\"queue\":\"q\",\"until_ms\":0}",
		    "{\"event\":\"left\",\"id\":3,\"ts\":1795771800000,"
		    "\"user\":\"r1\",\"queue\":\"q\",\"reason\":\"closed\"}",
		    "{\"event\":\"servicer_up\",\"id\":4,\"ts\":1795772400000,"
		    "\"servicer\":\"s\",\"capacity\":1,\"queues\":[\"q\"]}",
		    NULL,
		};

		d = day_of_lines(closed_day);
		cfg.npolicies = 0;
		rep = play(d, &cfg);
		assert_null(find(&rep, CSQ_EV_LEFT, "r1", NULL));
		assert_non_null(ev = find(&rep, CSQ_EV_MATCHED, "r1", "s"));
		assert_int_equal(ev->ts_ms, 1795772400000ULL);
		free(rep.v);
		csq_replay_day_free(d);
	}
	free(rec.v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_own_configuration),
	    cmocka_unit_test(test_censored_patience),
	    cmocka_unit_test(test_drawn_handle),
	    cmocka_unit_test(test_remove_range),
	    cmocka_unit_test(test_offers),
	    cmocka_unit_test(test_wrapup),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_holes),
	    cmocka_unit_test(test_skills_day),
	    cmocka_unit_test(test_odd_records),
	    cmocka_unit_test(test_hours_what_if),
	    cmocka_unit_test(test_reenqueue),
	    cmocka_unit_test(test_reenqueue_move),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
