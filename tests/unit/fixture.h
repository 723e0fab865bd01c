/*
 * The fixture of libcsq's rule tests (test_matcher.c, test_routing.c,
 * test_policies.c, test_skills.c, test_nobody.c, test_hours.c,
 * test_event.c): one state, a fake clock, every event recorded, and the
 * operations as helpers that check every invariant after each call: the
 * arguments of HEARTBEAT and ENQUEUE (hb_args, enq_args) that a test's
 * own helper completes and runs (hb_run, enq_run). Include after
 * cmocka.h.
 */
#ifndef CSQ_TEST_FIXTURE_H
#define CSQ_TEST_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csq.h"

#define MAX_EVENTS 4096
#define T0         1700000000000ULL

struct fixture {
	struct csq *csq;
	uint64_t now;
	struct csq_event events[MAX_EVENTS];
	size_t nevents;
};

static inline void
record(void *arg, const struct csq_event *ev)
{
	struct fixture *f = arg;

	if (f->nevents < MAX_EVENTS)
		f->events[f->nevents++] = *ev;
}

static inline struct fixture *
fixture_new(const struct csq_limits *l)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->csq = csq_new(l, 0, record, f);
	f->now = T0;
	return f;
}

static inline int
setup(void **state)
{
	struct csq_limits l;

	csq_limits_default(&l);
	*state = fixture_new(&l);
	return 0;
}

static inline int
teardown(void **state)
{
	struct fixture *f = *state;

	csq_free(f->csq);
	free(f);
	return 0;
}

static inline void
check(struct fixture *f)
{
	char why[256];

	if (csq_check(f->csq, why, sizeof(why)) != 0)
		fail_msg("invariant broken: %s", why);
}

/*
 * HEARTBEAT's arguments: the servicer sid, capacity (0: left out) and
 * queues ("a,b"; NULL: left out), split into buf, which a must not
 * outlive. The rest (TTL, OFFER, SKILLS...) is the caller's to set.
 */
static inline void
hb_args(struct csq_heartbeat_args *a, const char *sid, uint32_t capacity,
        const char *queues, char *buf, size_t size)
{
	char *p, *save = NULL;

	memset(a, 0, sizeof(*a));
	a->servicer = sid;
	if (capacity > 0) {
		a->has_capacity = 1;
		a->capacity = capacity;
	}
	if (queues != NULL) {
		snprintf(buf, size, "%s", queues);
		a->has_queues = 1;
		for (p = strtok_r(buf, ",", &save); p != NULL;
		     p = strtok_r(NULL, ",", &save))
			a->queues[a->nqueues++] = p;
	}
}

/* Runs HEARTBEAT a (out may be NULL), checks every invariant after it,
 * and gives its status. */
static inline enum csq_status
hb_run(struct fixture *f, const struct csq_heartbeat_args *a,
       struct csq_servicer_info *out)
{
	struct csq_servicer_info info;
	enum csq_status st;

	st = csq_heartbeat(f->csq, f->now, a, out ? out : &info);
	check(f);
	return st;
}

/* ENQUEUE's arguments: the user uid, queue (NULL: left out) and tier
 * (< 0: left out). The rest (TTL, PREFER, NEEDS) is the caller's. */
static inline void
enq_args(struct csq_enqueue_args *a, const char *uid, const char *queue,
         int tier)
{
	memset(a, 0, sizeof(*a));
	a->user = uid;
	a->has_queue = queue != NULL;
	a->queue = queue;
	a->has_tier = tier >= 0;
	a->tier = tier >= 0 ? (uint32_t)tier : 0;
}

/* Runs ENQUEUE a (out may be NULL), checks every invariant after it,
 * and gives its status. */
static inline enum csq_status
enq_run(struct fixture *f, const struct csq_enqueue_args *a,
        struct csq_user_info *out)
{
	struct csq_user_info info;
	enum csq_status st;

	st = csq_enqueue(f->csq, f->now, a, out ? out : &info);
	check(f);
	return st;
}

/* HEARTBEAT with the options given (capacity 0, queues NULL: left out). */
static inline void
hb(struct fixture *f, const char *sid, uint32_t capacity, const char *queues,
   struct csq_servicer_info *out)
{
	struct csq_heartbeat_args a;
	static char buf[512];

	hb_args(&a, sid, capacity, queues, buf, sizeof(buf));
	assert_int_equal(hb_run(f, &a, out), CSQ_OK);
}

static inline void
enq(struct fixture *f, const char *uid, const char *queue, int tier,
    struct csq_user_info *out)
{
	struct csq_enqueue_args a;

	enq_args(&a, uid, queue, tier);
	assert_int_equal(enq_run(f, &a, out), CSQ_OK);
}

/* Moves the clock by ms and acts on what ran out. */
static inline void
pass(struct fixture *f, uint64_t ms)
{
	f->now += ms;
	csq_expire(f->csq, f->now);
	check(f);
}

static inline void
set_policies(struct fixture *f, const struct csq_policy *v, size_t n)
{
	assert_int_equal(csq_set_policies(f->csq, f->now, v, n), CSQ_OK);
	check(f);
}

static inline int
release(struct fixture *f, const char *room)
{
	int ended = -1;

	assert_int_equal(csq_release(f->csq, f->now, room, &ended), CSQ_OK);
	check(f);
	return ended;
}

static inline void
where(struct fixture *f, const char *uid, struct csq_user_info *out)
{
	assert_int_equal(csq_where(f->csq, f->now, uid, out), CSQ_OK);
}

/* The users of q in service order, as "a,b,c". */
static inline const char *
line_of(struct fixture *f, const char *q)
{
	static char buf[4096];
	struct csq_queue_entry e[CSQ_RANGE_COUNT_MAX];
	size_t n, i, off = 0;

	assert_int_equal(
	    csq_queue_range(f->csq, f->now, q, 0, CSQ_RANGE_COUNT_MAX, e, &n),
	    CSQ_OK);
	buf[0] = '\0';
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s",
		                        i ? "," : "", e[i].user);
	return buf;
}

static inline const struct csq_event *
event_at(struct fixture *f, size_t i)
{
	assert_true(i < f->nevents);
	return &f->events[i];
}

static inline const struct csq_event *
last_event(struct fixture *f)
{
	assert_true(f->nevents > 0);
	return &f->events[f->nevents - 1];
}

/* The names of the events from index first on, as "a,b,c". */
static inline const char *
events_since(struct fixture *f, size_t first)
{
	static char buf[4096];
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = first; i < f->nevents && off < sizeof(buf) - 64; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s",
		                        i > first ? "," : "",
		                        csq_event_name(f->events[i].type));
	return buf;
}

#endif
