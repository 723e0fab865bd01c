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
#include "nameset.h"

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

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The set of names (lib/nameset.c) against a sorted array: random adds
 * and removals, then "the first after" every name and between names.
 */
static void
nameset_ordered(void **state)
{
	enum { N = 3000 };
	static char names[N][12];
	const char *sorted[N];
	struct csq_nameset *set = csq_nameset_new(42);
	struct csq_nameset_node *node;
	unsigned char in[N] = {0};
	uint64_t x = 88172645463325252ULL;
	size_t i, k, n = 0;

	(void)state;
	for (i = 0; i < N; i++)
		snprintf(names[i], sizeof(names[i]), "q%zu", (i * 7919) % N);
	for (k = 0; k < 4 * N; k++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		i = (size_t)(x % N);
		if (in[i])
			csq_nameset_del(set, names[i]);
		else
			csq_nameset_add(set, names[i], names[i]);
		in[i] ^= 1;
	}
	csq_nameset_del(set, "absent");
	for (i = 0; i < N; i++)
		if (in[i])
			sorted[n++] = names[i];
	qsort(sorted, n, sizeof(sorted[0]), name_cmp);
	assert_int_equal(csq_nameset_check(set), 0);
	assert_int_equal(csq_nameset_len(set), n);
	node = csq_nameset_after(set, NULL);
	for (i = 0; i < n; i++, node = csq_nameset_next(node)) {
		assert_non_null(node);
		assert_string_equal(csq_nameset_name(node), sorted[i]);
		assert_ptr_equal(csq_nameset_value(node), sorted[i]);
	}
	assert_null(node);
	for (i = 0; i + 1 < n; i++) {
		assert_string_equal(
		    csq_nameset_name(csq_nameset_after(set, sorted[i])),
		    sorted[i + 1]);
	}
	assert_null(csq_nameset_after(set, sorted[n - 1]));
	assert_string_equal(csq_nameset_name(csq_nameset_after(set, "")),
	                    sorted[0]);
	csq_nameset_free(set);
}

/*
 * QUEUES and QSTATS in slices (issue 37): the slices of any size make
 * the whole list, in name order, and both visit the same queues (one
 * cursor); a queue made or gone between two slices is listed when it
 * sorts after the cursor and exists then, and none twice.
 */
static void
queues_in_slices(void **state)
{
	struct fixture *f = *state;
	struct csq_queue_info *all, *part;
	struct csq_queue_stats *qs;
	const char *next, *qnext;
	char after[CSQ_ID_MAX + 1], q[16], u[16];
	const size_t sizes[] = {1, 7, 1000, 5000};
	size_t nall, n, nqs, got, i, k;
	int known;

	for (i = 0; i < 2500; i++) {
		snprintf(q, sizeof(q), "q%zu", (i * 7) % 2500);
		snprintf(u, sizeof(u), "u%zu", i);
		enq(f, u, q, 0);
	}
	all = csq_queues(f->csq, f->now, &nall);
	assert_int_equal(nall, 2501); /* and default */
	for (i = 1; i < nall; i++)
		assert_true(strcmp(all[i - 1].name, all[i].name) < 0);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		got = 0;
		after[0] = '\0';
		do {
			part = csq_queues_slice(f->csq, f->now, after, sizes[k],
			                        &n, &next);
			qs = csq_queues_stats_slice(f->csq, f->now, after,
			                            sizes[k], &nqs, &qnext);
			assert_true(n <= sizes[k]);
			assert_int_equal(n, nqs);
			assert_true((next == NULL) == (qnext == NULL));
			for (i = 0; i < n; i++) {
				assert_string_equal(part[i].name,
				                    all[got + i].name);
				assert_string_equal(qs[i].queue, part[i].name);
				assert_int_equal(part[i].waiting,
				                 all[got + i].waiting);
			}
			got += n;
			if (next != NULL) {
				assert_string_equal(next, qnext);
				snprintf(after, sizeof(after), "%s", next);
			}
			free(part);
			free(qs);
		} while (next != NULL);
		assert_int_equal(got, nall);
	}
	/* Changes between two slices: q1001 (passed) goes, q999 (ahead)
	 * goes, zz (ahead) comes, a (passed) comes. */
	part = csq_queues_slice(f->csq, f->now, NULL, 10, &n, &next);
	assert_string_equal(next, part[9].name);
	snprintf(after, sizeof(after), "%s", next);
	free(part);
	assert_int_equal(csq_leave(f->csq, f->now, "u143", &known), CSQ_OK);
	assert_int_equal(csq_leave(f->csq, f->now, "u857", &known), CSQ_OK);
	enq(f, "late1", "zz", 0);
	enq(f, "late2", "a", 0);
	got = 10;
	do {
		part = csq_queues_slice(f->csq, f->now, after, 1000, &n, &next);
		for (i = 0; i < n; i++)
			assert_true(strcmp(part[i].name, after) > 0);
		got += n;
		if (next != NULL)
			snprintf(after, sizeof(after), "%s", next);
		else
			assert_string_equal(part[n - 1].name, "zz");
		free(part);
	} while (next != NULL);
	assert_int_equal(got, nall); /* one gone, zz come, a before */
	free(all);
}

/* A small deterministic generator, so that a failure repeats. */
static uint64_t
rnd_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Two rows of one servicer alike, field by field (the bytes after a
 * string are not written). */
static void
same_servicer(const struct csq_servicer_info *a,
              const struct csq_servicer_info *b)
{
	assert_string_equal(a->id, b->id);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->capacity, b->capacity);
	assert_int_equal(a->active, b->active);
	assert_int_equal(a->ttl_s, b->ttl_s);
	assert_int_equal(a->idle_ms, b->idle_ms);
	assert_int_equal(a->paused_by, b->paused_by);
	assert_string_equal(a->queues, b->queues);
	assert_string_equal(a->skills, b->skills);
}

/*
 * SERVICERS and the ROOMS of every servicer in slices (issue 37): slices
 * of any size make the whole lists, in id order, and both visit the same
 * servicers (one cursor): each slice's rooms are those of its servicers.
 */
static void
servicers_in_slices(void **state)
{
	struct fixture *f = *state;
	struct csq_servicer_info *all, *part;
	struct csq_room_info *rall, *rooms;
	const char *next, *rnext, *queues[] = {"q"};
	char after[CSQ_ID_MAX + 1], sid[16], u[16];
	const size_t sizes[] = {1, 7, 1000, 5000};
	size_t nall, nrall, n, nr, got, rgot, i, k, len;

	for (i = 0; i < 1500; i++) {
		snprintf(sid, sizeof(sid), "s%zu", (i * 7) % 1500);
		hb(f, sid, 1 + (uint32_t)(i % 3), 1, queues);
	}
	for (i = 0; i < 700; i++) { /* some rooms busy */
		snprintf(u, sizeof(u), "u%zu", i);
		enq(f, u, "q", 0);
	}
	f->now += 100;
	all = csq_servicers(f->csq, f->now, &nall);
	assert_int_equal(nall, 1500);
	for (i = 1; i < nall; i++)
		assert_true(strcmp(all[i - 1].id, all[i].id) < 0);
	assert_int_equal(csq_rooms(f->csq, f->now, NULL, &rall, &nrall),
	                 CSQ_OK);
	assert_int_equal(nrall, 3000); /* capacities 1, 2, 3 in turn */
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		got = rgot = 0;
		after[0] = '\0';
		do {
			part = csq_servicers_slice(f->csq, f->now, after,
			                           sizes[k], &n, &next);
			csq_rooms_slice(f->csq, f->now, after, sizes[k], &rooms,
			                &nr, &rnext);
			assert_true(n <= sizes[k] && n > 0);
			assert_true((next == NULL) == (rnext == NULL));
			for (i = 0; i < n; i++)
				same_servicer(&part[i], &all[got + i]);
			for (i = 0; i < nr; i++)
				assert_memory_equal(&rooms[i], &rall[rgot + i],
				                    sizeof(rooms[i]));
			/* The slice's rooms: its servicers', up to the last. */
			assert_true(nr > 0);
			len = strlen(part[n - 1].id);
			assert_memory_equal(rooms[nr - 1].room, part[n - 1].id,
			                    len);
			assert_int_equal(rooms[nr - 1].room[len], '/');
			got += n;
			rgot += nr;
			if (next != NULL) {
				assert_string_equal(next, part[n - 1].id);
				assert_string_equal(next, rnext);
				snprintf(after, sizeof(after), "%s", next);
			}
			free(part);
			free(rooms);
		} while (next != NULL);
		assert_int_equal(got, nall);
		assert_int_equal(rgot, nrall);
	}
	/* A cursor past every id: nothing, and no next. */
	part = csq_servicers_slice(f->csq, f->now, "zzz", 10, &n, &next);
	assert_int_equal(n, 0);
	assert_null(next);
	free(part);
	free(all);
	free(rall);
}

/*
 * The cursor under churn: between two slices servicers log out, log in
 * (ids before and after the cursor) and come back, the clock moves (a
 * fake clock: nobody's TTL runs out). Tried 20 times with other seeds:
 * the walk is in strict id order, so none is listed twice; every
 * servicer present from its start to its end is listed; none listed is
 * one that never existed; the state checks out after each step.
 */
static void
servicers_cursor_churn(void **state)
{
	struct fixture *f = *state;
	enum { IDS = 400 };
	const char *queues[] = {"q"}, *next;
	char present[IDS], throughout[IDS], seen[IDS], ever[IDS];
	char after[CSQ_ID_MAX + 1], sid[16], err[256], last[CSQ_ID_MAX + 1];
	struct csq_servicer_info *part;
	uint64_t x, known;
	size_t n, i, j, listed;
	unsigned round, id;

	for (round = 0; round < 20; round++) {
		x = 0x9e3779b97f4a7c15ULL * (round + 1);
		memset(present, 0, sizeof(present));
		for (i = 0; i < IDS; i++) { /* about half logged in */
			snprintf(sid, sizeof(sid), "s%03zu", i);
			if (rnd_next(&x) % 2 == 0) {
				hb(f, sid, 1, 1, queues);
				present[i] = 1;
			}
		}
		memcpy(throughout, present, sizeof(present));
		memcpy(ever, present, sizeof(present));
		memset(seen, 0, sizeof(seen));
		after[0] = last[0] = '\0';
		listed = 0;
		do {
			part = csq_servicers_slice(f->csq, f->now, after,
			                           1 + rnd_next(&x) % 37, &n,
			                           &next);
			for (i = 0; i < n; i++) {
				assert_true(strcmp(part[i].id, last) > 0);
				snprintf(last, sizeof(last), "%s", part[i].id);
				id = (unsigned)atoi(part[i].id + 1);
				assert_true(id < IDS && ever[id] && !seen[id]);
				seen[id] = 1;
				listed++;
			}
			if (next != NULL)
				snprintf(after, sizeof(after), "%s", next);
			free(part);
			/* Churn: a few out, a few in, anywhere. */
			for (j = 0; j < 6; j++) {
				id = (unsigned)(rnd_next(&x) % IDS);
				snprintf(sid, sizeof(sid), "s%03u", id);
				if (present[id]) {
					assert_int_equal(csq_logout(f->csq,
					                            f->now, sid,
					                            &known),
					                 CSQ_OK);
					present[id] = 0;
					throughout[id] = 0;
				} else {
					hb(f, sid, 2, 1, queues);
					present[id] = ever[id] = 1;
				}
			}
			f->now += 5;
			assert_int_equal(csq_check(f->csq, err, sizeof(err)),
			                 0);
		} while (next != NULL);
		for (i = 0; i < IDS; i++)
			if (throughout[i])
				assert_true(seen[i]);
		assert_true(listed > 0);
		for (i = 0; i < IDS; i++) { /* the next round starts empty */
			if (!present[i])
				continue;
			snprintf(sid, sizeof(sid), "s%03zu", i);
			assert_int_equal(
			    csq_logout(f->csq, f->now, sid, &known), CSQ_OK);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(oldest_across_tiers, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(queues_listed, setup, teardown),
	    cmocka_unit_test(nameset_ordered),
	    cmocka_unit_test_setup_teardown(queues_in_slices, setup, teardown),
	    cmocka_unit_test_setup_teardown(servicers_in_slices, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(servicers_cursor_churn, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(rooms_listed, setup, teardown),
	    cmocka_unit_test_setup_teardown(rooms_states, setup, teardown),
	};

	return cmocka_run_group_tests_name("overview", tests, NULL, NULL);
}
