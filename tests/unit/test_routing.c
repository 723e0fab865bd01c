/*
 * Routing (protocol-v2 sections 1, 1a, 2, 3 and 7) on libcsq with a fake
 * clock: offers and their settled details, transfers, wrap-ups, the
 * strategies, event ids, the order in which deadlines that pass together
 * act, and every error (nothing changed after it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "state.h"

#define KEEP (-1) /* hbx: option left out */

/*
 * HEARTBEAT with OFFER and WRAPUP too (KEEP: left out), and a TTL of an
 * hour, so that no servicer is lost while a test moves the clock.
 */
static void
hbx(struct fixture *f, const char *sid, uint32_t capacity, const char *queue,
    int offer, int wrapup, struct csq_servicer_info *out)
{
	struct csq_heartbeat_args a;
	char buf[CSQ_ID_MAX + 1];

	hb_args(&a, sid, capacity, queue, buf, sizeof(buf));
	a.has_offer = offer != KEEP;
	a.offer_s = offer != KEEP ? (uint32_t)offer : 0;
	a.has_wrapup = wrapup != KEEP;
	a.wrapup_s = wrapup != KEEP ? (uint32_t)wrapup : 0;
	a.has_ttl = 1;
	a.ttl_s = 3600;
	assert_int_equal(hb_run(f, &a, out), CSQ_OK);
}

static void
enq_ttl(struct fixture *f, const char *uid, const char *queue, uint32_t ttl,
        struct csq_user_info *out)
{
	struct csq_enqueue_args a;

	enq_args(&a, uid, queue, -1);
	a.has_ttl = 1;
	a.ttl_s = ttl;
	assert_int_equal(enq_run(f, &a, out), CSQ_OK);
}

static int
accept(struct fixture *f, const char *room)
{
	int done = -1;

	assert_int_equal(csq_accept(f->csq, f->now, room, &done), CSQ_OK);
	check(f);
	return done;
}

static int
decline(struct fixture *f, const char *room)
{
	int done = -1;

	assert_int_equal(csq_decline(f->csq, f->now, room, &done), CSQ_OK);
	check(f);
	return done;
}

static int
ready(struct fixture *f, const char *room)
{
	int done = -1;

	assert_int_equal(csq_ready(f->csq, f->now, room, &done), CSQ_OK);
	check(f);
	return done;
}

static enum csq_status
transfer(struct fixture *f, const char *room, const char *queue,
         struct csq_user_info *out)
{
	struct csq_transfer_args a = {room, queue, {0, NULL, 0}, 0, NULL};
	struct csq_user_info info;
	enum csq_status st;

	st = csq_transfer(f->csq, f->now, &a, out ? out : &info);
	check(f);
	return st;
}

static const struct csq_servicer_info *
servicer(struct fixture *f, const char *sid)
{
	static struct csq_servicer_info one;
	struct csq_servicer_info *all;
	size_t n, i;

	all = csq_servicers(f->csq, f->now, &n);
	for (i = 0; i < n && strcmp(all[i].id, sid) != 0; i++)
		;
	assert_true(i < n);
	one = all[i];
	free(all);
	return &one;
}

static struct csq_stats
stats(struct fixture *f)
{
	struct csq_stats st;

	csq_stats(f->csq, &st);
	return st;
}

/* Section 1: an offer, and ACCEPT. */
static void
test_offer_and_accept(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t first;

	hbx(f, "s", 1, NULL, 30, KEEP, NULL);
	f->now += 1000;
	first = f->nevents;
	enq(f, "u", NULL, 2, &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	assert_string_equal(u.queue, "default");
	assert_int_equal(u.tier, 2);
	assert_string_equal(u.servicer, "s");
	assert_string_equal(u.room, "s/0");
	assert_int_equal(u.expires_in_ms, 30000);
	assert_string_equal(events_since(f, first), "offered");
	ev = last_event(f);
	assert_string_equal(ev->user, "u");
	assert_string_equal(ev->room, "s/0");
	assert_int_equal(ev->tier, 2);
	assert_int_equal(ev->expires_ms, f->now + 30000);
	/* Out of the line, the room reserved. */
	assert_string_equal(line_of(f, "default"), "");
	assert_int_equal(stats(f).waiting, 0);
	assert_int_equal(stats(f).rooms_busy, 1);
	assert_int_equal(stats(f).rooms_free, 0);
	assert_int_equal(stats(f).offers_total, 1);
	assert_int_equal(stats(f).matched_total, 0);
	assert_int_equal(servicer(f, "s")->active, 1);

	f->now += 4000;
	where(f, "u", &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	assert_int_equal(u.expires_in_ms, 26000);
	assert_int_equal(u.waited_ms, 4000);
	first = f->nevents;
	assert_int_equal(accept(f, "s/0"), 1);
	assert_string_equal(events_since(f, first), "matched");
	ev = last_event(f);
	assert_int_equal(ev->has_offered_ms, 1);
	assert_int_equal(ev->offered_ms, 4000);
	assert_int_equal(ev->waited_ms, 4000); /* from arrival */
	where(f, "u", &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_int_equal(u.since_ms, 0);
	assert_int_equal(stats(f).matched_total, 1);
	/* Accepted: a conversation, no offer any more. */
	assert_int_equal(accept(f, "s/0"), 0);
	assert_int_equal(decline(f, "s/0"), 0);
	assert_int_equal(release(f, "s/0"), 1);
	assert_int_equal(accept(f, "s/0"), 0); /* free */
	/* No deadline of the offer or of the user is left: the TTL. */
	assert_int_equal(csq_next_deadline(f->csq), T0 + 3600 * 1000);
}

/* A direct match (OFFER 0) has no offered_ms; v1 is unchanged. */
static void
test_offer_zero_is_v1(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;

	hbx(f, "s", 1, NULL, 0, KEEP, NULL);
	enq(f, "u", NULL, -1, &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_int_equal(last_event(f)->type, CSQ_EV_MATCHED);
	assert_int_equal(last_event(f)->has_offered_ms, 0);
	assert_int_equal(stats(f).offers_total, 0);
}

/* A room's name is "<servicer>/<index>", as snprintf("%s/%u") would
 * write it cut to CSQ_ROOM_MAX (csq_room_name writes it without printf):
 * the shortest and longest ids, the smallest and largest indexes. */
static void
test_room_name(void **state)
{
	static const uint32_t idx[] = {0,    7,    10,    42,         999,
	                               1000, 9999, 10000, 4294967295u};
	const char *ids[] = {"a", "agent-7", NULL};
	char longest[CSQ_ID_MAX + 1], got[CSQ_ROOM_MAX + 1];
	char want[CSQ_ROOM_MAX + 1];
	size_t i, j;

	(void)state;
	memset(longest, 'x', CSQ_ID_MAX);
	longest[CSQ_ID_MAX] = '\0';
	ids[2] = longest;
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct csq_servicer *s =
		    calloc(1, sizeof(*s) + strlen(ids[i]) + 1);

		assert_non_null(s);
		strcpy(s->id, ids[i]);
		s->idlen = strlen(ids[i]); /* as a HEARTBEAT makes it */
		for (j = 0; j < sizeof(idx) / sizeof(idx[0]); j++) {
			memset(got, '#', sizeof(got));
			csq_room_name(s, idx[j], got);
			snprintf(want, sizeof(want), "%s/%u", ids[i], idx[j]);
			assert_string_equal(got, want);
		}
		free(s);
	}
}

/* The errors of ACCEPT, DECLINE and READY: nothing changes. */
static void
test_room_errors(void **state)
{
	static const char *bad[] = {"s",    "s/",    "s/01", "/0",
	                            "s/-1", "b d/0", NULL};
	struct fixture *f = *state;
	struct csq_stats before, after;
	enum csq_status (*ops[])(struct csq *, uint64_t, const char *,
	                         int *) = {csq_accept, csq_decline, csq_ready};
	size_t first, i, k;
	int done;

	hbx(f, "s", 2, NULL, 30, KEEP, NULL);
	enq(f, "u", NULL, -1, NULL);
	before = stats(f);
	first = f->nevents;
	for (k = 0; k < 3; k++) {
		for (i = 0; bad[i] != NULL; i++) {
			done = 7;
			assert_int_equal(ops[k](f->csq, f->now, bad[i], &done),
			                 CSQ_EROOM);
			assert_int_equal(done, 0);
		}
		assert_int_equal(ops[k](f->csq, f->now, NULL, &done),
		                 CSQ_EROOM);
		assert_int_equal(ops[k](f->csq, f->now, "s/2", &done),
		                 CSQ_ENOTFOUND);
		assert_int_equal(ops[k](f->csq, f->now, "s/99999999999", &done),
		                 CSQ_ENOTFOUND);
		assert_int_equal(ops[k](f->csq, f->now, "nobody/0", &done),
		                 CSQ_ENOTFOUND);
		/* A room of another state: 0. */
		assert_int_equal(ops[k](f->csq, f->now, "s/1", &done), CSQ_OK);
		assert_int_equal(done, 0);
	}
	assert_int_equal(csq_ready(f->csq, f->now, "s/0", &done), CSQ_OK);
	assert_int_equal(done, 0); /* offered, not in wrap-up */
	check(f);
	after = stats(f);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(f->nevents, first);
}

/* An offered user keeps its TTL: TOUCH works, and its end withdraws. */
static void
test_offered_user_ttl(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t first;
	int known;

	hbx(f, "s", 1, NULL, 30, KEEP, NULL);
	enq_ttl(f, "u", NULL, 5, &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	hbx(f, "t", 1, "other", KEEP, KEEP, NULL);
	enq_ttl(f, "w", NULL, 0, &u); /* waits behind */
	assert_int_equal(u.state, CSQ_USER_WAITING);
	pass(f, 4000);
	assert_int_equal(csq_touch(f->csq, f->now, "u", -1, &known), CSQ_OK);
	assert_int_equal(known, 1);
	pass(f, 4000); /* touched: alive */
	where(f, "u", &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	/* The servicers' TTLs first: they stay. */
	hbx(f, "s", 0, NULL, KEEP, KEEP, NULL);
	hbx(f, "t", 0, NULL, KEEP, KEEP, NULL);
	first = f->nevents;
	pass(f, 1000);
	/* Left as timeout, naming the room; the room is free and taken. */
	assert_string_equal(events_since(f, first), "left,offered");
	ev = event_at(f, first);
	assert_string_equal(ev->user, "u");
	assert_int_equal(ev->reason, CSQ_REASON_TIMEOUT);
	assert_string_equal(ev->servicer, "s");
	assert_string_equal(ev->room, "s/0");
	assert_string_equal(event_at(f, first + 1)->user, "w");
	assert_int_equal(stats(f).abandoned_total, 1);
	assert_int_equal(servicer(f, "s")->missed, 0);
	/* TOUCH TTL 0 on an offered user: it never runs out. */
	assert_int_equal(csq_touch(f->csq, f->now, "w", 0, &known), CSQ_OK);
	check(f);
}

/* DECLINE: back at its old place, TTL restarted, next servicer at once. */
static void
test_decline(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t first;

	hbx(f, "s", 1, NULL, 100, KEEP, NULL);
	enq_ttl(f, "a", NULL, 60, NULL); /* offered to s */
	f->now += 10;
	enq_ttl(f, "b", NULL, 60, NULL);
	enq_ttl(f, "c", NULL, 60, NULL);
	assert_string_equal(line_of(f, "default"), "b,c");
	f->now += 20000;
	first = f->nevents;
	assert_int_equal(decline(f, "s/0"), 1);
	/* a goes back before b; s is in its retry window: nobody. */
	assert_string_equal(events_since(f, first), "declined");
	ev = event_at(f, first);
	assert_string_equal(ev->user, "a");
	assert_string_equal(ev->servicer, "s");
	assert_string_equal(ev->room, "s/0");
	assert_int_equal(ev->reason, CSQ_REASON_BY_SERVICER);
	assert_int_equal(ev->position, 1);
	assert_string_equal(line_of(f, "default"), "a,b,c");
	where(f, "a", &u);
	assert_int_equal(u.waited_ms, 20010);
	assert_int_equal(stats(f).offers_declined_total, 1);
	assert_int_equal(stats(f).rooms_free, 1); /* free, but resting */
	/* Its TTL restarted: 60 s from the decline, not from arrival. It
	 * is offered again once the window is over (an offer keeps the
	 * TTL running), and goes 60 s after the decline. */
	pass(f, 59000);
	where(f, "b", &u);
	assert_int_equal(u.state, CSQ_USER_NONE);
	where(f, "a", &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	assert_string_equal(u.servicer, "s");
	first = f->nevents;
	pass(f, 1000);
	assert_string_equal(events_since(f, first), "left");
	assert_string_equal(last_event(f)->user, "a");
}
/* A declined user goes to the next free servicer at once. */
static void
test_decline_next_servicer(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	size_t first;

	hbx(f, "s", 1, NULL, 30, KEEP, NULL);
	hbx(f, "t", 1, NULL, 30, KEEP, NULL);
	enq(f, "a", NULL, -1, &u);
	assert_string_equal(u.servicer, "s");
	first = f->nevents;
	assert_int_equal(decline(f, "s/0"), 1);
	assert_string_equal(events_since(f, first), "declined,offered");
	assert_string_equal(last_event(f)->servicer, "t");
	assert_string_equal(last_event(f)->user, "a");
	/* Both rest now: a waits, at the head. */
	first = f->nevents;
	assert_int_equal(decline(f, "t/0"), 1);
	assert_string_equal(events_since(f, first), "declined");
	assert_string_equal(line_of(f, "default"), "a");
	first = f->nevents;
	pass(f, 10000);
	assert_string_equal(events_since(f, first), "offered");
	assert_string_equal(last_event(f)->servicer, "s");
}

/* A servicer's handled conversations and their time (issue 38): from the
 * offer or the assignment to the end, by RELEASE or by the user's LEAVE;
 * a LOGOUT's requeue is none, and a new login starts from 0. */
static void
test_handled_counters(void **state)
{
	struct fixture *f = *state;
	int known;
	uint64_t n;

	hbx(f, "s", 1, NULL, 0, KEEP, NULL);
	enq(f, "a", NULL, -1, NULL);
	pass(f, 4000);
	assert_int_equal(release(f, "s/0"), 1);
	assert_int_equal(servicer(f, "s")->handled_total, 1);
	assert_int_equal(servicer(f, "s")->handle_ms_total, 4000);
	enq(f, "b", NULL, -1, NULL);
	pass(f, 1000);
	assert_int_equal(csq_leave(f->csq, f->now, "b", &known), CSQ_OK);
	check(f);
	assert_int_equal(servicer(f, "s")->handled_total, 2);
	assert_int_equal(servicer(f, "s")->handle_ms_total, 5000);
	enq(f, "c", NULL, -1, NULL);
	assert_int_equal(csq_logout(f->csq, f->now, "s", &n), CSQ_OK);
	check(f);
	assert_int_equal(n, 1);
	hbx(f, "s", 1, NULL, 0, KEEP, NULL);
	assert_int_equal(servicer(f, "s")->handled_total, 0);
	assert_int_equal(servicer(f, "s")->handle_ms_total, 0);
}

/* After a decline, offer_retry seconds without offers; 0: at once. */
static void
test_retry_window(void **state)
{
	struct fixture *f = *state;
	struct csq_limits l = *csq_get_limits(f->csq);
	struct csq_user_info u;
	size_t first;

	hbx(f, "s", 2, NULL, 30, KEEP, NULL);
	enq(f, "a", NULL, -1, NULL);
	enq(f, "b", NULL, -1, NULL);
	assert_int_equal(decline(f, "s/0"), 1);
	/* b's offer stands; a waits for the window. */
	where(f, "b", &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	where(f, "a", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(csq_next_deadline(f->csq), f->now + 10000);
	/* SERVICERS says it rests, and until when (issue 38): ready, not
	 * paused, no new user for 10 s. */
	assert_int_equal(servicer(f, "s")->status, CSQ_SERVICER_READY);
	assert_int_equal(servicer(f, "s")->paused_by, CSQ_REASON_NONE);
	assert_int_equal(servicer(f, "s")->resting_ms, 10000);
	/* A heartbeat or a capacity raised does not end it. */
	hbx(f, "s", 3, NULL, KEEP, KEEP, NULL);
	where(f, "a", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	pass(f, 9999);
	where(f, "a", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(servicer(f, "s")->resting_ms, 1);
	first = f->nevents;
	pass(f, 1);
	assert_string_equal(events_since(f, first), "offered");
	assert_int_equal(servicer(f, "s")->resting_ms, 0);
	assert_string_equal(last_event(f)->room, "s/0");

	/* offer_retry 0: offered again to the same servicer at once. */
	l.offer_retry_s = 0;
	csq_set_limits(f->csq, &l);
	first = f->nevents;
	assert_int_equal(decline(f, "s/0"), 1);
	assert_string_equal(events_since(f, first), "declined,offered");
	assert_string_equal(last_event(f)->room, "s/0");
	assert_string_equal(last_event(f)->user, "a");

	/* Without a window the declined event says so: 0. */
	assert_int_equal(f->events[first].until_ms, 0);

	/* RESUME ends a window at once, and says so with servicer_resumed
	 * (the status stays ready): no deadline will tell it. */
	l.offer_retry_s = 10;
	csq_set_limits(f->csq, &l);
	first = f->nevents;
	assert_int_equal(decline(f, "s/0"), 1);
	/* declined says when the servicer takes users again. */
	assert_string_equal(f->events[first].room, "s/0");
	assert_int_equal(f->events[first].until_ms, f->now + 10000);
	first = f->nevents;
	assert_int_equal(csq_resume(f->csq, f->now, "s"), CSQ_OK);
	check(f);
	assert_string_equal(events_since(f, first), "servicer_resumed,offered");
	/* A RESUME of a servicer neither paused nor resting tells nothing. */
	first = f->nevents;
	assert_int_equal(csq_resume(f->csq, f->now, "s"), CSQ_OK);
	assert_string_equal(events_since(f, first), "");
}

/* Offers run out: declined by timeout, missed, and a pause at 3. */
static void
test_missed_offers_pause(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t first;

	hbx(f, "s", 2, NULL, 5, KEEP, NULL);
	enq_ttl(f, "a", NULL, 0, NULL);
	enq_ttl(f, "b", NULL, 0, NULL);
	first = f->nevents;
	pass(f, 5000);
	/* Both run out in one pass: by room. */
	assert_string_equal(events_since(f, first), "declined,declined");
	ev = event_at(f, first);
	assert_string_equal(ev->user, "a");
	assert_int_equal(ev->reason, CSQ_REASON_TIMEOUT);
	assert_int_equal(ev->position, 1);
	assert_string_equal(event_at(f, first + 1)->user, "b");
	assert_int_equal(servicer(f, "s")->missed, 2);
	assert_int_equal(stats(f).offers_missed_total, 2);
	assert_int_equal(stats(f).offers_declined_total, 0);
	/* Its retry window ends: both offered again. */
	pass(f, 10000);
	where(f, "a", &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	/* ACCEPT starts the count again. */
	assert_int_equal(accept(f, "s/0"), 1);
	assert_int_equal(servicer(f, "s")->missed, 0);
	assert_int_equal(release(f, "s/0"), 1);
	pass(f, 5000); /* b's offer runs out */
	assert_int_equal(servicer(f, "s")->missed, 1);
	pass(f, 10000); /* the window ends: b offered again */
	enq_ttl(f, "c", NULL, 0, NULL);
	where(f, "c", &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	assert_int_equal(servicer(f, "s")->status, CSQ_SERVICER_READY);
	/* The third in a row pauses s. */
	first = f->nevents;
	pass(f, 5000);
	assert_string_equal(events_since(f, first),
	                    "declined,declined,servicer_paused");
	assert_int_equal(servicer(f, "s")->status, CSQ_SERVICER_PAUSED);
	assert_int_equal(last_event(f)->reason, CSQ_REASON_MISSED_OFFERS);
	assert_int_equal(servicer(f, "s")->missed, 3);
	/* Why, as SERVICERS says it (issue 38). */
	assert_int_equal(servicer(f, "s")->paused_by, CSQ_REASON_MISSED_OFFERS);
	assert_string_equal(line_of(f, "default"), "b,c");
	/* RESUME: the count is 0, and offers come at once. */
	first = f->nevents;
	assert_int_equal(csq_resume(f->csq, f->now, "s"), CSQ_OK);
	check(f);
	assert_string_equal(events_since(f, first),
	                    "servicer_resumed,offered,offered");
	assert_int_equal(servicer(f, "s")->missed, 0);
	assert_int_equal(servicer(f, "s")->paused_by, CSQ_REASON_NONE);
	/* By hand, with a miss counted: paused by PAUSE. */
	pass(f, 5000);
	assert_int_equal(servicer(f, "s")->missed, 2);
	assert_int_equal(csq_pause(f->csq, f->now, "s"), CSQ_OK);
	check(f);
	assert_int_equal(servicer(f, "s")->paused_by, CSQ_REASON_PAUSE);
}

/* An auto-pause withdraws the offers that did not run out (reason pause). */
static void
test_missed_pause_withdraws(void **state)
{
	struct fixture *f;
	struct csq_limits l;
	const struct csq_event *ev;
	size_t first;

	(void)state;
	csq_limits_default(&l);
	l.offer_max_missed = 1;
	f = fixture_new(&l);
	hbx(f, "s", 2, NULL, 5, KEEP, NULL);
	enq_ttl(f, "a", NULL, 0, NULL);
	f->now += 1000;
	enq_ttl(f, "b", NULL, 0, NULL);
	hbx(f, "t", 1, NULL, 0, KEEP, NULL);
	first = f->nevents;
	pass(f, 4000);
	/* a's offer ran out; b's did not: requeued, then the pause, then
	 * matching: a, the better, to t. */
	assert_string_equal(events_since(f, first),
	                    "declined,requeued,servicer_paused,matched");
	ev = event_at(f, first + 1);
	assert_string_equal(ev->user, "b");
	assert_int_equal(ev->reason, CSQ_REASON_PAUSE);
	assert_string_equal(ev->room, "s/1");
	assert_int_equal(event_at(f, first + 2)->reason,
	                 CSQ_REASON_MISSED_OFFERS);
	assert_string_equal(last_event(f)->user, "a");
	assert_string_equal(last_event(f)->servicer, "t");
	assert_int_equal(stats(f).requeued_total, 1);
	csq_free(f->csq);
	free(f);
}

/* offer_max_missed 0: never paused. */
static void
test_missed_never(void **state)
{
	struct fixture *f;
	struct csq_limits l;
	int i;

	(void)state;
	csq_limits_default(&l);
	l.offer_max_missed = 0;
	l.offer_retry_s = 0;
	f = fixture_new(&l);
	hbx(f, "s", 1, NULL, 1, KEEP, NULL);
	enq_ttl(f, "a", NULL, 0, NULL);
	for (i = 0; i < 10; i++)
		pass(f, 1000);
	assert_int_equal(servicer(f, "s")->status, CSQ_SERVICER_READY);
	assert_int_equal(servicer(f, "s")->missed, 10);
	assert_int_equal(stats(f).offers_total, 11);
	csq_free(f->csq);
	free(f);
}

/* PAUSE, LOGOUT and loss withdraw offers at the old place. */
static void
test_withdrawals(void **state)
{
	static const struct {
		const char *how;
		enum csq_reason reason;
		const char *events;
	} cases[] = {
	    {"pause", CSQ_REASON_PAUSE, "requeued,servicer_paused"},
	    {"logout", CSQ_REASON_LOGOUT, "requeued,servicer_down"},
	    {"lost", CSQ_REASON_LOST, "requeued,servicer_down"},
	};
	struct csq_heartbeat_args a;
	struct csq_servicer_info si;
	struct csq_limits l;
	struct fixture *f;
	size_t first, k;
	uint64_t n;

	(void)state;
	csq_limits_default(&l);
	for (k = 0; k < 3; k++) {
		f = fixture_new(&l);
		memset(&a, 0, sizeof(a));
		a.servicer = "s";
		a.has_offer = 1;
		a.offer_s = 60;
		a.has_ttl = 1;
		a.ttl_s = 10;
		assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si),
		                 CSQ_OK);
		enq_ttl(f, "a", NULL, 0, NULL);
		f->now += 5;
		enq_ttl(f, "b", NULL, 0, NULL);
		a.servicer = "t";
		a.ttl_s = 100;
		assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si),
		                 CSQ_OK);
		assert_string_equal(last_event(f)->user, "b");
		first = f->nevents;
		if (k == 0)
			assert_int_equal(csq_pause(f->csq, f->now, "s"),
			                 CSQ_OK);
		else if (k == 1)
			assert_int_equal(csq_logout(f->csq, f->now, "s", &n),
			                 CSQ_OK);
		else
			pass(f, 10000);
		check(f);
		assert_string_equal(events_since(f, first), cases[k].events);
		assert_int_equal(event_at(f, first)->reason, cases[k].reason);
		assert_int_equal(event_at(f, first)->position, 1);
		if (k == 0)
			assert_int_equal(event_at(f, first + 1)->reason,
			                 CSQ_REASON_PAUSE);
		/* t is free only when b leaves; a waits at its place. */
		assert_string_equal(line_of(f, "default"), "a");
		assert_int_equal(stats(f).requeued_total, 1);
		assert_int_equal(stats(f).offers_total, 2);
		first = f->nevents;
		assert_int_equal(decline(f, "t/0"), 1);
		assert_string_equal(events_since(f, first), "declined");
		csq_free(f->csq);
		free(f);
	}
}

/* The settled details of section 1. */
static void
test_offer_details(void **state)
{
	struct fixture *f = *state;
	struct csq_enqueue_args e;
	struct csq_user_info u;
	size_t first;
	int known;

	hbx(f, "s", 1, NULL, 30, KEEP, NULL);
	enq_ttl(f, "u", NULL, 5, NULL);
	/* RELEASE of an offered room: 0, and the offer stands. */
	assert_int_equal(release(f, "s/0"), 0);
	where(f, "u", &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	/* A re-ENQUEUE only restarts its TTL (and takes a new one). */
	f->now += 4000;
	first = f->nevents;
	memset(&e, 0, sizeof(e));
	e.user = "u";
	e.has_queue = 1;
	e.queue = "elsewhere";
	e.has_tier = 1;
	e.tier = 5;
	e.has_ttl = 1;
	e.ttl_s = 3;
	assert_int_equal(csq_enqueue(f->csq, f->now, &e, &u), CSQ_OK);
	check(f);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	assert_string_equal(u.queue, "default");
	assert_int_equal(u.tier, 0);
	assert_int_equal(f->nevents, first);
	assert_int_equal(csq_next_deadline(f->csq), f->now + 3000);
	/* Its options are still checked. */
	e.tier = 99;
	assert_int_equal(csq_enqueue(f->csq, f->now, &e, &u), CSQ_ERANGE);
	/* LEAVE: left, and the room is free at once. */
	enq(f, "w", NULL, -1, NULL);
	first = f->nevents;
	assert_int_equal(csq_leave(f->csq, f->now, "u", &known), CSQ_OK);
	check(f);
	assert_int_equal(known, 1);
	assert_string_equal(events_since(f, first), "left,offered");
	assert_int_equal(event_at(f, first)->reason, CSQ_REASON_LEAVE);
	assert_string_equal(event_at(f, first)->room, "s/0");
	assert_string_equal(last_event(f)->user, "w");
}

/* longest_idle: a servicer's last new user is its last offer. */
static void
test_longest_idle_counts_offers(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;

	hbx(f, "s1", 2, NULL, 30, KEEP, NULL);
	hbx(f, "s2", 2, NULL, 30, KEEP, NULL);
	enq(f, "a", NULL, -1, &u);
	assert_string_equal(u.room, "s1/0");
	enq(f, "b", NULL, -1, &u);
	assert_string_equal(u.room, "s2/0");
	assert_int_equal(decline(f, "s1/0"), 1); /* a to s2: s1 rests */
	where(f, "a", &u);
	assert_string_equal(u.room, "s2/1");
	assert_int_equal(accept(f, "s2/0"), 1);
	enq(f, "c", NULL, -1, &u);
	assert_int_equal(u.state, CSQ_USER_WAITING); /* s1 rests, s2 full */
	pass(f, 10000);
	where(f, "c", &u);
	assert_string_equal(u.room, "s1/0");
}

/* Section 2: wrap-up after RELEASE and LEAVE, READY, its deadline. */
static void
test_wrapup(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t first;
	int known;

	hbx(f, "s", 1, NULL, KEEP, 60, NULL);
	enq(f, "a", NULL, -1, NULL);
	enq(f, "b", NULL, -1, NULL);
	f->now += 100;
	first = f->nevents;
	assert_int_equal(release(f, "s/0"), 1);
	assert_string_equal(events_since(f, first), "released,wrapup");
	ev = last_event(f);
	assert_string_equal(ev->servicer, "s");
	assert_string_equal(ev->room, "s/0");
	assert_int_equal(ev->until_ms, f->now + 60000);
	/* Busy, not free: b waits. */
	where(f, "b", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(stats(f).rooms_busy, 1);
	assert_int_equal(stats(f).rooms_free, 0);
	assert_int_equal(servicer(f, "s")->active, 1);
	assert_int_equal(release(f, "s/0"), 0); /* no conversation */
	assert_int_equal(accept(f, "s/0"), 0);
	pass(f, 59999);
	where(f, "b", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	first = f->nevents;
	pass(f, 1);
	assert_string_equal(events_since(f, first), "ready,matched");
	assert_string_equal(event_at(f, first)->room, "s/0");
	assert_string_equal(last_event(f)->user, "b");

	/* LEAVE of an assigned user starts one too; READY ends it. */
	enq(f, "c", NULL, -1, NULL);
	first = f->nevents;
	assert_int_equal(csq_leave(f->csq, f->now, "b", &known), CSQ_OK);
	check(f);
	assert_string_equal(events_since(f, first), "released,wrapup");
	assert_int_equal(event_at(f, first)->reason, CSQ_REASON_BY_USER);
	first = f->nevents;
	assert_int_equal(ready(f, "s/0"), 1);
	assert_string_equal(events_since(f, first), "ready,matched");
	assert_int_equal(ready(f, "s/0"), 0);
	/* WRAPUP 0: none. */
	hbx(f, "s", 0, NULL, KEEP, 0, NULL);
	first = f->nevents;
	assert_int_equal(release(f, "s/0"), 1);
	assert_string_equal(events_since(f, first), "released");
}

/* Loss and logout end wrap-ups silently; a lowered capacity removes the
 * room when its wrap-up ends. */
static void
test_wrapup_ends(void **state)
{
	struct fixture *f = *state;
	struct csq_servicer_info si;
	size_t first;
	uint64_t n;
	int done;

	hbx(f, "s", 2, NULL, KEEP, 30, NULL);
	enq(f, "a", NULL, -1, NULL);
	enq(f, "b", NULL, -1, NULL);
	assert_int_equal(release(f, "s/1"), 1);
	hbx(f, "s", 1, NULL, KEEP, KEEP, &si);
	assert_int_equal(si.active, 2);
	first = f->nevents;
	pass(f, 30000);
	assert_string_equal(events_since(f, first), "ready");
	assert_int_equal(csq_ready(f->csq, f->now, "s/1", &done),
	                 CSQ_ENOTFOUND);
	assert_int_equal(servicer(f, "s")->active, 1);
	assert_int_equal(release(f, "s/0"), 1);
	first = f->nevents;
	assert_int_equal(csq_logout(f->csq, f->now, "s", &n), CSQ_OK);
	check(f);
	assert_int_equal(n, 0);
	assert_string_equal(events_since(f, first), "servicer_down");
	assert_int_equal(csq_next_deadline(f->csq), UINT64_MAX);
}

/* Section 1a: TRANSFER, its events and their order. */
static void
test_transfer(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	const struct csq_event *ev;
	size_t first;

	hbx(f, "s", 1, "sales", KEEP, KEEP, NULL);
	enq(f, "early", "sales", 1, NULL); /* assigned */
	f->now += 5000;
	enq(f, "late", "billing", 1, NULL);
	enq(f, "vip", "billing", 3, NULL);
	enq(f, "next", "sales", -1, NULL);
	f->now += 1000;
	first = f->nevents;
	assert_int_equal(transfer(f, "s/0", "billing", &u), CSQ_OK);
	/* Released, transferred, then s's freed room refilled. */
	assert_string_equal(events_since(f, first),
	                    "released,transferred,matched");
	ev = event_at(f, first);
	assert_int_equal(ev->reason, CSQ_REASON_BY_TRANSFER);
	assert_string_equal(ev->queue, "sales");
	ev = event_at(f, first + 1);
	assert_string_equal(ev->user, "early");
	assert_string_equal(ev->from_queue, "sales");
	assert_string_equal(ev->queue, "billing");
	assert_int_equal(ev->tier, 1);
	assert_string_equal(ev->servicer, "s");
	assert_string_equal(ev->room, "s/0");
	assert_int_equal(ev->position, 2); /* after vip, before late */
	assert_string_equal(last_event(f)->user, "next");
	/* The reply is its state, as WHERE's. */
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_string_equal(u.queue, "billing");
	assert_int_equal(u.position, 2);
	assert_int_equal(u.waited_ms, 6000);
	assert_string_equal(line_of(f, "billing"), "vip,early,late");
	assert_int_equal(stats(f).transferred_total, 1);
	assert_int_equal(stats(f).waiting, 3);
}

/* The transferred user is placed before the freed room is refilled. */
static void
test_transfer_back_to_same_servicer(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	size_t first;

	hbx(f, "s", 1, "sales", KEEP, KEEP, NULL);
	hb(f, "s", 0, "sales,billing", NULL);
	enq(f, "a", "sales", -1, NULL);
	enq(f, "b", "sales", -1, NULL); /* waits, arrived after a */
	first = f->nevents;
	assert_int_equal(transfer(f, "s/0", "billing", &u), CSQ_OK);
	assert_string_equal(events_since(f, first),
	                    "released,transferred,matched");
	/* a keeps its key: before b, whichever the queue. */
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_string_equal(u.room, "s/0");
	/* To its own queue: allowed. */
	first = f->nevents;
	assert_int_equal(transfer(f, "s/0", "billing", &u), CSQ_OK);
	assert_string_equal(events_since(f, first),
	                    "released,transferred,matched");
	assert_string_equal(event_at(f, first + 1)->from_queue, "billing");
}

/* With wrap-up: released, wrapup, transferred, then the match. */
static void
test_transfer_with_wrapup(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	size_t first;

	hbx(f, "s", 1, "sales", KEEP, 30, NULL);
	hbx(f, "t", 1, "billing", 30, KEEP, NULL);
	enq(f, "a", "sales", -1, NULL);
	enq(f, "x", "billing", -1, NULL);
	assert_int_equal(accept(f, "t/0"), 1);
	assert_int_equal(release(f, "t/0"), 1);
	first = f->nevents;
	assert_int_equal(transfer(f, "s/0", "billing", &u), CSQ_OK);
	assert_string_equal(events_since(f, first),
	                    "released,wrapup,transferred,offered");
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	assert_string_equal(u.room, "t/0");
}

/* The details of 1a: no length limit, TTL restarted, ENQUEUE's queue. */
static void
test_transfer_details(void **state)
{
	struct fixture *f = *state;
	struct csq_limits l = *csq_get_limits(f->csq);
	struct csq_user_info u;
	struct csq_enqueue_args e;
	size_t first;

	l.max_queue_length = 1;
	csq_set_limits(f->csq, &l);
	hbx(f, "s", 1, "sales", KEEP, KEEP, NULL);
	enq_ttl(f, "a", "sales", 10, NULL);
	enq(f, "full", "billing", -1, NULL);
	f->now += 9000;
	assert_int_equal(transfer(f, "s/0", "billing", &u), CSQ_OK);
	assert_string_equal(line_of(f, "billing"), "a,full");
	/* A later ENQUEUE naming its old queue does not pull it back. */
	first = f->nevents;
	memset(&e, 0, sizeof(e));
	e.user = "a";
	e.has_queue = 1;
	e.queue = "sales";
	assert_int_equal(csq_enqueue(f->csq, f->now, &e, &u), CSQ_OK);
	check(f);
	assert_string_equal(u.queue, "billing");
	assert_int_equal(f->nevents, first);
	/* Its TTL restarted at the transfer (10 s from then, not arrival),
	 * and the ENQUEUE restarted it again. */
	pass(f, 9999);
	where(f, "a", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	pass(f, 1);
	where(f, "a", &u);
	assert_int_equal(u.state, CSQ_USER_NONE);
}

/* TRANSFER's errors change nothing. */
static void
test_transfer_errors(void **state)
{
	struct fixture *f = *state;
	struct csq_stats before, after;
	size_t first;

	hbx(f, "s", 3, NULL, KEEP, 30, NULL);
	hbx(f, "o", 1, NULL, 30, KEEP, NULL);
	enq(f, "a", NULL, -1, NULL);            /* s/0 */
	enq(f, "b", NULL, -1, NULL);            /* o/0, offered */
	enq(f, "c", NULL, -1, NULL);            /* s/1 */
	assert_int_equal(release(f, "s/1"), 1); /* s/1 in wrap-up */
	before = stats(f);
	first = f->nevents;
	assert_int_equal(transfer(f, "s", "q", NULL), CSQ_EROOM);
	assert_int_equal(transfer(f, "s/00", "q", NULL), CSQ_EROOM);
	assert_int_equal(transfer(f, NULL, "q", NULL), CSQ_EROOM);
	assert_int_equal(transfer(f, "s/0", "bad queue", NULL), CSQ_EQUEUE);
	assert_int_equal(transfer(f, "s/0", "", NULL), CSQ_EQUEUE);
	assert_int_equal(transfer(f, "s/0", NULL, NULL), CSQ_EQUEUE);
	assert_int_equal(transfer(f, "s/3", "q", NULL), CSQ_ENOTFOUND);
	assert_int_equal(transfer(f, "nobody/0", "q", NULL), CSQ_ENOTFOUND);
	assert_int_equal(transfer(f, "s/2", "q", NULL), CSQ_ENOCONV); /* free */
	assert_int_equal(transfer(f, "s/1", "q", NULL), CSQ_ENOCONV); /* wrap */
	assert_int_equal(transfer(f, "o/0", "q", NULL),
	                 CSQ_ENOCONV); /* offer */
	/* A malformed room before a bad queue, as the checks go. */
	assert_int_equal(transfer(f, "s/x", "bad queue", NULL), CSQ_EROOM);
	after = stats(f);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(f->nevents, first);
	assert_string_equal(csq_status_text(CSQ_ENOCONV),
	                    "ERR no conversation in room");
}

/* Count of the queues that exist (QUEUES). */
static size_t
queue_count(struct fixture *f)
{
	struct csq_queue_info *all;
	size_t n;

	all = csq_queues(f->csq, f->now, &n);
	free(all);
	return n;
}

/*
 * max_queues (issue 37): a request that would make one queue too many
 * gets CSQ_EQUEUES and changes nothing: ENQUEUE's new user and its move,
 * a HEARTBEAT whose new names together pass it (none is made), TRANSFER;
 * queues that exist take anyone, and a gone queue's place is free again.
 */
static void
test_max_queues(void **state)
{
	struct csq_heartbeat_args h;
	struct csq_enqueue_args e;
	struct csq_servicer_info si;
	struct csq_user_info u;
	struct csq_limits l;
	struct fixture *f;
	size_t first;
	int known;

	(void)state;
	csq_limits_default(&l);
	l.max_queues = 3; /* default, a, b */
	f = fixture_new(&l);
	hbx(f, "s", 2, "a", KEEP, KEEP, NULL);
	enq(f, "u1", "a", -1, NULL); /* s/0 */
	enq(f, "u2", "b", -1, NULL);
	assert_int_equal(queue_count(f), 3);
	first = f->nevents;
	memset(&e, 0, sizeof(e));
	e.user = "u3";
	e.has_queue = 1;
	e.queue = "c";
	assert_int_equal(csq_enqueue(f->csq, f->now, &e, &u), CSQ_EQUEUES);
	assert_string_equal(csq_status_text(CSQ_EQUEUES),
	                    "FULL too many queues (max_queues)");
	e.user = "u2"; /* a move into a new queue */
	assert_int_equal(csq_enqueue(f->csq, f->now, &e, &u), CSQ_EQUEUES);
	where(f, "u2", &u);
	assert_string_equal(u.queue, "b");
	memset(&h, 0, sizeof(h));
	h.servicer = "t";
	h.has_queues = 1;
	h.nqueues = 3;
	h.queues[0] = "a";
	h.queues[1] = "c";
	h.queues[2] = "c";
	assert_int_equal(csq_heartbeat(f->csq, f->now, &h, &si), CSQ_EQUEUES);
	assert_int_equal(transfer(f, "s/0", "c", NULL), CSQ_EQUEUES);
	assert_int_equal(f->nevents, first);
	assert_int_equal(queue_count(f), 3);
	assert_int_equal(stats(f).servicers, 1);
	check(f);
	/* A gone queue's place is free again; those that exist take
	 * anyone. */
	assert_int_equal(csq_leave(f->csq, f->now, "u2", &known), CSQ_OK);
	assert_int_equal(queue_count(f), 2);
	enq(f, "u3", "c", -1, NULL);
	assert_int_equal(queue_count(f), 3);
	h.queues[1] = "c";
	h.queues[2] = "default";
	assert_int_equal(csq_heartbeat(f->csq, f->now, &h, &si), CSQ_OK);
	assert_int_equal(transfer(f, "s/0", "c", NULL), CSQ_OK);
	assert_int_equal(queue_count(f), 3);
	check(f);
	csq_free(f->csq);
	free(f);
}

/* HEARTBEAT OFFER and WRAPUP: ranges, defaults, omitted keeps. */
static void
test_heartbeat_options(void **state)
{
	struct csq_heartbeat_args a;
	struct csq_servicer_info si;
	struct csq_limits l;
	struct fixture *f;
	size_t first;

	(void)state;
	csq_limits_default(&l);
	l.offer_timeout_s = 20;
	l.wrapup_s = 15;
	f = fixture_new(&l);
	hbx(f, "s", 1, NULL, KEEP, KEEP, &si);
	assert_int_equal(si.offer_s, 20); /* the config's */
	assert_int_equal(si.wrapup_s, 15);
	assert_int_equal(si.missed, 0);
	hbx(f, "s", 1, NULL, 600, 3600, &si);
	assert_int_equal(si.offer_s, 600);
	assert_int_equal(si.wrapup_s, 3600);
	hbx(f, "s", 0, NULL, KEEP, KEEP, &si);
	assert_int_equal(si.offer_s, 600);
	assert_int_equal(si.wrapup_s, 3600);
	hbx(f, "s", 0, NULL, 0, 0, &si);
	assert_int_equal(si.offer_s, 0);
	assert_int_equal(si.wrapup_s, 0);
	/* Out of range: nothing changes. */
	first = f->nevents;
	memset(&a, 0, sizeof(a));
	a.servicer = "s";
	a.has_offer = 1;
	a.offer_s = CSQ_OFFER_MAX + 1;
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si), CSQ_ERANGE);
	a.has_offer = 0;
	a.has_wrapup = 1;
	a.wrapup_s = CSQ_WRAPUP_MAX + 1;
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si), CSQ_ERANGE);
	a.servicer = "new";
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si), CSQ_ERANGE);
	assert_int_equal(f->nevents, first);
	assert_int_equal(servicer(f, "s")->wrapup_s, 0);
	assert_int_equal(stats(f).servicers, 1);
	check(f);
	csq_free(f->csq);
	free(f);
}

/* Section 3: least_busy, its ties, and a change of strategy. */
static void
test_least_busy(void **state)
{
	struct fixture *f;
	struct csq_limits l;
	struct csq_user_info u;

	(void)state;
	csq_limits_default(&l);
	l.strategy = CSQ_STRATEGY_LEAST_BUSY;
	f = fixture_new(&l);
	hbx(f, "a", 3, NULL, KEEP, KEEP, NULL);
	hbx(f, "b", 3, NULL, KEEP, 30, NULL);
	hbx(f, "c", 3, NULL, 30, KEEP, NULL);
	/* All idle: the longest idle, a; then b and c (1 busy each). */
	enq(f, "u1", NULL, -1, &u);
	assert_string_equal(u.servicer, "a");
	enq(f, "u2", NULL, -1, &u);
	assert_string_equal(u.servicer, "b");
	enq(f, "u3", NULL, -1, &u);
	assert_string_equal(u.servicer, "c"); /* an offer is busy */
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	enq(f, "u4", NULL, -1, &u);
	assert_string_equal(u.servicer, "a"); /* 1 each: a idle longest */
	/* b's conversation ends into wrap-up: still busy. */
	assert_int_equal(release(f, "b/0"), 1);
	enq(f, "u5", NULL, -1, &u);
	assert_string_equal(u.servicer, "b");
	/* c's offer declined: c has 0 busy, but rests 10 s. */
	assert_int_equal(decline(f, "c/0"), 1);
	where(f, "u3", &u);
	assert_string_equal(u.servicer, "a"); /* a 2, b 2 (one wrap-up) */
	enq(f, "u6", NULL, -1, &u);
	assert_string_equal(u.servicer, "b");
	pass(f, 10000);
	enq(f, "u7", NULL, -1, &u);
	assert_string_equal(u.servicer, "c");

	/* longest_idle again: a, whose last new user is the oldest. */
	l.strategy = CSQ_STRATEGY_LONGEST_IDLE;
	csq_set_limits(f->csq, &l);
	check(f);
	assert_int_equal(ready(f, "b/0"), 1);
	assert_int_equal(release(f, "a/0"), 1);
	enq(f, "u8", NULL, -1, &u);
	assert_string_equal(u.servicer, "a"); /* before b (u6), c (u7) */
	csq_free(f->csq);
	free(f);
}

/* Section 7: ids one by one, on every event; csq_last_event_id. */
static void
test_event_ids(void **state)
{
	struct fixture *f = *state;
	size_t i;

	assert_int_equal(csq_last_event_id(f->csq), 0);
	hbx(f, "s", 2, NULL, 5, 5, NULL);
	enq(f, "a", NULL, -1, NULL);
	enq(f, "b", NULL, -1, NULL);
	assert_int_equal(accept(f, "s/0"), 1);
	assert_int_equal(release(f, "s/0"), 1);
	pass(f, 6000);
	assert_true(f->nevents > 6);
	for (i = 0; i < f->nevents; i++)
		assert_int_equal(f->events[i].id, i + 1);
	assert_int_equal(csq_last_event_id(f->csq), f->nevents);
}

/*
 * Deadlines that pass together act kind by kind (users, offers,
 * servicers, wrap-ups, retry windows), each by time then name, and only
 * then is anyone matched: the users put back first, each while it heads
 * its line, then the rooms freed. A wrap-up that ends in the same pass as
 * an offer runs out must not give its room to the declined user ahead of
 * a better user who waited.
 */
static void
test_expire_order(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	size_t first;

	hbx(f, "w", 1, NULL, KEEP, 10, NULL);
	hbx(f, "o", 1, NULL, 10, KEEP, NULL);
	enq_ttl(f, "x", NULL, 0, NULL);  /* w/0 */
	enq_ttl(f, "lo", NULL, 0, NULL); /* offered o/0 */
	assert_int_equal(release(f, "w/0"), 1);
	enq(f, "vip", NULL, 3, NULL);
	first = f->nevents;
	pass(f, 10000);
	/* The offer first (kind 1), then the wrap-up (kind 3); then lo,
	 * back but behind vip, waits, and w's room takes vip. */
	assert_string_equal(events_since(f, first), "declined,ready,matched");
	assert_string_equal(last_event(f)->user, "vip");
	assert_string_equal(last_event(f)->servicer, "w");
	where(f, "lo", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
}

/* A rearm (restart) gives offers, wrap-ups and retry windows their whole
 * length again. */
static void
test_rearm_routing(void **state)
{
	struct fixture *f = *state;
	struct csq_heartbeat_args a;
	struct csq_servicer_info si;
	struct csq_user_info u;
	size_t first;

	memset(&a, 0, sizeof(a));
	a.servicer = "s";
	a.has_ttl = 1;
	a.ttl_s = 1000;
	a.has_capacity = 3;
	a.capacity = 3;
	a.has_offer = 1;
	a.offer_s = 20;
	a.has_wrapup = 1;
	a.wrapup_s = 40;
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &si), CSQ_OK);
	enq_ttl(f, "a", NULL, 0, NULL);
	enq_ttl(f, "b", NULL, 0, NULL);
	assert_int_equal(accept(f, "s/0"), 1);
	assert_int_equal(release(f, "s/0"), 1); /* wrap-up 40 s */
	assert_int_equal(decline(f, "s/1"), 1); /* retry 10 s */
	enq_ttl(f, "c", NULL, 0, NULL);
	f->now += 5000;
	/* The offer to nobody: s rests; a restart 5 s later. */
	csq_rearm_deadlines(f->csq, f->now);
	check(f);
	pass(f, 9999);
	where(f, "b", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	pass(f, 1); /* the window: 10 s from the rearm */
	where(f, "b", &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	assert_int_equal(u.expires_in_ms, 20000);
	/* Another restart 15 s later: the offers get 20 s again. */
	f->now += 15000;
	csq_rearm_deadlines(f->csq, f->now);
	check(f);
	pass(f, 19999);
	where(f, "b", &u);
	assert_int_equal(u.state, CSQ_USER_OFFERED);
	assert_int_equal(u.expires_in_ms, 1);
	first = f->nevents;
	pass(f, 1);
	assert_string_equal(events_since(f, first), "declined,declined");
	assert_int_equal(servicer(f, "s")->active, 1); /* the wrap-up */
	/* The wrap-up: 40 s from that restart too; the retry window ran
	 * out meanwhile, 10 s after the offers did. */
	first = f->nevents;
	pass(f, 19999);
	assert_string_equal(events_since(f, first), "offered,offered");
	first = f->nevents;
	pass(f, 1);
	assert_string_equal(events_since(f, first), "ready");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_offer_and_accept, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_offer_zero_is_v1, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_room_errors, setup, teardown),
	    cmocka_unit_test(test_room_name),
	    cmocka_unit_test_setup_teardown(test_offered_user_ttl, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_decline, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_decline_next_servicer, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_retry_window, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_handled_counters, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_missed_offers_pause, setup,
	                                    teardown),
	    cmocka_unit_test(test_missed_pause_withdraws),
	    cmocka_unit_test(test_missed_never),
	    cmocka_unit_test(test_withdrawals),
	    cmocka_unit_test_setup_teardown(test_offer_details, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_longest_idle_counts_offers,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wrapup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wrapup_ends, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_transfer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_transfer_back_to_same_servicer,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_transfer_with_wrapup, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_transfer_details, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_transfer_errors, setup,
	                                    teardown),
	    cmocka_unit_test(test_heartbeat_options),
	    cmocka_unit_test(test_max_queues),
	    cmocka_unit_test(test_least_busy),
	    cmocka_unit_test_setup_teardown(test_event_ids, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_expire_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rearm_routing, setup,
	                                    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
