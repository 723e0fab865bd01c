/*
 * The admin's overview in libcsq (lib/overview.c), on a fake clock: the
 * queues that exist with their lines' length and longest wait across
 * tiers, and servicers' rooms in each state.
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

#define T0 1700000000000ULL

struct fixture {
	struct csq *csq;
	uint64_t now;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct csq_limits l;

	csq_limits_default(&l);
	l.max_tier = CSQ_TIER_LIMIT;
	f->csq = csq_new(&l, 0, NULL, NULL);
	f->now = T0;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	csq_free(f->csq);
	free(f);
	return 0;
}

static void
enq(struct fixture *f, const char *uid, const char *queue, uint32_t tier)
{
	struct csq_enqueue_args a;
	struct csq_user_info info;

	memset(&a, 0, sizeof(a));
	a.user = uid;
	a.has_queue = 1;
	a.queue = queue;
	a.has_tier = 1;
	a.tier = tier;
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &info), CSQ_OK);
}

static void
hb(struct fixture *f, const char *sid, uint32_t capacity, size_t nqueues,
   const char *const *queues)
{
	struct csq_heartbeat_args a;
	struct csq_servicer_info info;
	size_t i;

	memset(&a, 0, sizeof(a));
	a.servicer = sid;
	a.has_capacity = 1;
	a.capacity = capacity;
	if (nqueues > 0) {
		a.has_queues = 1;
		a.nqueues = nqueues;
		for (i = 0; i < nqueues; i++)
			a.queues[i] = queues[i];
	}
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &info), CSQ_OK);
}

static struct csq_queue_info
info_of(struct fixture *f, const char *q)
{
	struct csq_queue_info qi;

	assert_int_equal(csq_queue_info(f->csq, f->now, q, &qi), CSQ_OK);
	return qi;
}

/*
 * The longest wait is that of the first user of some tier, never the head
 * of the line alone: here the tier 0 user who came first sits behind
 * later users of higher tiers, and tiers with gaps between them are
 * each looked at.
 */
static void
oldest_across_tiers(void **state)
{
	struct fixture *f = *state;
	struct csq_queue_info qi;

	qi = info_of(f, "q");
	assert_int_equal(qi.waiting, 0);
	assert_int_equal(qi.oldest_wait_ms, 0);
	assert_string_equal(qi.oldest_user, "");
	assert_string_equal(qi.name, "q");
	enq(f, "old0", "q", 0);
	f->now += 1000;
	enq(f, "mid7", "q", 7);
	f->now += 1000;
	enq(f, "new0", "q", 0);
	enq(f, "top15", "q", 15);
	f->now += 500;
	qi = info_of(f, "q");
	assert_int_equal(qi.waiting, 4);
	assert_int_equal(qi.oldest_wait_ms, 2500);
	assert_string_equal(qi.oldest_user, "old0");
	/* Without old0, mid7 (tier 7, the middle of the line) is oldest. */
	enq(f, "old0", "q", 15); /* a rescore keeps its arrival */
	qi = info_of(f, "q");
	assert_int_equal(qi.oldest_wait_ms, 2500);
	{
		int known;

		assert_int_equal(csq_leave(f->csq, f->now, "old0", &known),
		                 CSQ_OK);
	}
	qi = info_of(f, "q");
	assert_int_equal(qi.waiting, 3);
	assert_int_equal(qi.oldest_wait_ms, 1500);
	assert_string_equal(qi.oldest_user, "mid7");
	assert_int_equal(csq_queue_info(f->csq, f->now, "bad!", &qi),
	                 CSQ_EQUEUE);
}

/* Sorted by name; default always; waiting or served; once each. */
static void
queues_listed(void **state)
{
	struct fixture *f = *state;
	static const char *const qs[] = {"b", "a", "default"};
	struct csq_queue_info *v;
	size_t n;

	v = csq_queues(f->csq, f->now, &n);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "default");
	free(v);
	hb(f, "s1", 1, 3, qs);
	hb(f, "s2", 1, 2, qs);
	enq(f, "u1", "c", 2);
	f->now += 40;
	enq(f, "u2", "a", 0); /* assigned at once: a waits for nobody */
	v = csq_queues(f->csq, f->now, &n);
	assert_int_equal(n, 4);
	assert_string_equal(v[0].name, "a");
	assert_int_equal(v[0].waiting, 0);
	assert_string_equal(v[1].name, "b");
	assert_string_equal(v[2].name, "c");
	assert_int_equal(v[2].waiting, 1);
	assert_int_equal(v[2].oldest_wait_ms, 40);
	assert_string_equal(v[3].name, "default");
	free(v);
	/* A policy makes its queue one that exists, empty and unserved. */
	{
		struct csq_policy p;

		memset(&p, 0, sizeof(p));
		snprintf(p.name, sizeof(p.name), "ruled");
		assert_int_equal(csq_set_policies(f->csq, f->now, &p, 1),
		                 CSQ_OK);
	}
	v = csq_queues(f->csq, f->now, &n);
	assert_int_equal(n, 5);
	assert_string_equal(v[4].name, "ruled");
	assert_int_equal(v[4].waiting, 0);
	free(v);
}

static void
rooms_listed(void **state)
{
	struct fixture *f = *state;
	struct csq_room_info *r;
	size_t n;
	int ended;

	assert_int_equal(csq_rooms(f->csq, f->now, "nobody", &r, &n),
	                 CSQ_ENOTFOUND);
	assert_null(r);
	assert_int_equal(csq_rooms(f->csq, f->now, "", &r, &n), CSQ_ESERVICER);
	hb(f, "s1", 2, 0, NULL);
	enq(f, "u1", "default", 0);
	f->now += 300;
	assert_int_equal(csq_rooms(f->csq, f->now, "s1", &r, &n), CSQ_OK);
	assert_int_equal(n, 2);
	assert_string_equal(r[0].room, "s1/0");
	assert_int_equal(r[0].state, CSQ_ROOM_ASSIGNED);
	assert_string_equal(r[0].user, "u1");
	assert_int_equal(r[0].since_ms, 300);
	assert_string_equal(r[1].room, "s1/1");
	assert_int_equal(r[1].state, CSQ_ROOM_FREE);
	assert_string_equal(r[1].user, "");
	assert_int_equal(r[1].since_ms, 0);
	free(r);
	assert_int_equal(csq_release(f->csq, f->now, "s1/0", &ended), CSQ_OK);
	assert_int_equal(csq_rooms(f->csq, f->now, "s1", &r, &n), CSQ_OK);
	assert_int_equal(r[0].state, CSQ_ROOM_FREE);
	free(r);
}

/* Offers and wrap-ups (protocol-v2 sections 1 and 2): their rooms say
 * so, with the offered user and the time in the state; and every
 * servicer's rooms at once, by servicer id. */
static void
rooms_states(void **state)
{
	struct fixture *f = *state;
	struct csq_heartbeat_args a;
	struct csq_servicer_info info;
	struct csq_room_info *r;
	size_t n;
	int done;

	memset(&a, 0, sizeof(a));
	a.servicer = "s2";
	a.has_offer = 1;
	a.offer_s = 30;
	a.has_wrapup = 1;
	a.wrapup_s = 60;
	assert_int_equal(csq_heartbeat(f->csq, f->now, &a, &info), CSQ_OK);
	hb(f, "s1", 1, 0, NULL);
	enq(f, "u1", "default", 0); /* s2 idles longest: offered */
	f->now += 100;
	assert_int_equal(csq_rooms(f->csq, f->now, "s2", &r, &n), CSQ_OK);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].state, CSQ_ROOM_OFFERED);
	assert_string_equal(r[0].user, "u1");
	assert_int_equal(r[0].since_ms, 100);
	free(r);
	assert_int_equal(csq_accept(f->csq, f->now, "s2/0", &done), CSQ_OK);
	assert_int_equal(done, 1);
	f->now += 50;
	assert_int_equal(csq_rooms(f->csq, f->now, "s2", &r, &n), CSQ_OK);
	assert_int_equal(r[0].state, CSQ_ROOM_ASSIGNED);
	assert_int_equal(r[0].since_ms, 50);
	free(r);
	assert_int_equal(csq_release(f->csq, f->now, "s2/0", &done), CSQ_OK);
	f->now += 20;
	assert_int_equal(csq_rooms(f->csq, f->now, "s2", &r, &n), CSQ_OK);
	assert_int_equal(r[0].state, CSQ_ROOM_WRAPUP);
	assert_string_equal(r[0].user, "");
	assert_int_equal(r[0].since_ms, 20);
	free(r);
	/* All: s1's room, then s2's. */
	assert_int_equal(csq_rooms(f->csq, f->now, NULL, &r, &n), CSQ_OK);
	assert_int_equal(n, 2);
	assert_string_equal(r[0].room, "s1/0");
	assert_int_equal(r[0].state, CSQ_ROOM_FREE);
	assert_string_equal(r[1].room, "s2/0");
	free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(oldest_across_tiers, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(queues_listed, setup, teardown),
	    cmocka_unit_test_setup_teardown(rooms_listed, setup, teardown),
	    cmocka_unit_test_setup_teardown(rooms_states, setup, teardown),
	};

	return cmocka_run_group_tests_name("overview", tests, NULL, NULL);
}
