/*
 * csq-eta: the wait estimate measured on simulated days (docs/benchmarks.md,
 * "Wait estimates"). It drives libcsq itself with a fake clock, no daemon
 * and no socket, so that a day of a support team takes a second:
 *
 *   - users arrive at a rate that follows the hour of the day (a quiet
 *     night, a morning peak, a dip at lunch, an afternoon peak), one in
 *     seven of them VIP (tier 1), the rest tier 0, all in one queue;
 *   - agents work shifts: they log in, take a lunch break (PAUSE, RESUME),
 *     and at the end of a shift stop taking users (PAUSE) and log out once
 *     their last conversation is over; each takes 2 or 3 conversations at
 *     once (capacity) and has 20 s of wrap-up after each;
 *   - a conversation lasts a long-tailed time (lognormal: median 4 min,
 *     mean 6.6 min, one in a hundred over 40 min);
 *   - a user who waits longer than its patience (exponential, mean 6 min)
 *     leaves.
 *
 * For every user who waits (not matched at once) and is then matched, it
 * compares three estimates made at its arrival with the wait it had:
 * csq's eta_ms from the ENQUEUE reply; Asterisk's (holdtime, updated to
 * (3 holdtime + wait) / 4 at each answer); Rocket.Chat's (((position - 1)
 * / N + 1) * the average conversation so far, N the agents' maximum
 * conversations). It prints the mean absolute error and the share of
 * estimates within 30 % of the wait, for each, over all the days.
 *
 *	csq-eta [--days N] [--seed S] [--staff lean|short|ample] [--scale N]
 *	        [--trace FILE]
 */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csq.h"

#define DAY_MS      (24ULL * 3600 * 1000)
#define VIP_ONE_IN  7
#define HOLD_MEDIAN 240.0 /* s, of a conversation */
#define HOLD_SIGMA  1.0   /* of its logarithm: mean = median e^0.5 */
#define PATIENCE_S  360.0 /* mean, exponential */
#define WRAPUP_S    20
#define LUNCH_S     1800
#define WITHIN      0.30 /* an estimate within 30 % of the wait */

/* Arrivals per hour at the start of each hour; linear in between. */
static const double arrivals_per_hour[25] = {
    8,   6,   5,   5,   6,   10, 25, 60, 110, 150, 170, 160, 120,
    130, 165, 170, 150, 120, 90, 65, 45, 30,  18,  12,  8,
};

/* One shift: start hour, length in hours, capacity. */
struct shift {
	double start_h, hours;
	uint32_t capacity;
};

/*
 * Two staffings of the same day. Lean: two agents through the night, the
 * day shifts staggered so that each peak is short-handed for an hour or
 * two: queues of ten to thirty form, and go (most users wait). Ample:
 * more agents on the same pattern (most users are matched at once).
 */
static const struct shift lean[] = {
    {0, 8, 2},    {0, 8, 2},      {6.5, 8, 3},  {7, 8, 2},    {8, 8, 3},
    {8.5, 8, 2},  {9, 8, 2},      {10.5, 8, 3}, {12.5, 8, 3}, {13, 8, 2},
    {14.5, 8, 3}, {15.5, 8.5, 2}, {16, 8, 3},   {22, 2, 3},
};
static const struct shift shorthanded[] = {
    {0, 8, 2},    {0, 8, 2},      {6.5, 8, 3},  {7, 8, 2},
    {8, 8, 3},    {9, 8, 2},      {10.5, 8, 3}, {12.5, 8, 3},
    {14.5, 8, 3}, {15.5, 8.5, 2}, {16, 8, 3},   {22, 2, 3},
};
static const struct shift ample[] = {
    {0, 8, 2},      {0, 8, 2},   {6.5, 8, 3},  {7, 8, 2},      {7.5, 8, 2},
    {8, 8, 3},      {8.5, 8, 2}, {9, 8, 2},    {10, 8, 3},     {11, 8, 2},
    {12.5, 8, 3},   {13, 8, 2},  {14.5, 8, 3}, {15.5, 8.5, 2}, {16, 8, 3},
    {17.5, 6.5, 2}, {22, 2, 3},
};
#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

enum sim_kind {
	EV_ARRIVAL,
	EV_ABANDON,  /* a: the user */
	EV_END,      /* a: the user, its conversation ends */
	EV_LOGIN,    /* a: the agent */
	EV_LUNCH,    /* a: the agent pauses */
	EV_BACK,     /* a: the agent resumes */
	EV_SHIFT_END /* a: the agent stops taking users */
};

struct sim_event {
	uint64_t at;
	uint64_t seq;
	enum sim_kind kind;
	int a;
};

struct user {
	uint64_t arrival, matched;
	int waited;  /* not matched at once */
	int done;    /* matched or gone */
	int64_t eta; /* csq's, at arrival */
	uint64_t position;
	uint32_t tier;
	double asterisk, rocket;
	char room[CSQ_ROOM_MAX + 1];
};

struct agent {
	int working;   /* logged in */
	int leaving;   /* shift over: logs out when idle */
	uint32_t busy; /* conversations and wrap-ups */
};

/* What the estimators are judged on, one per estimator. */
struct score {
	double abs_sum;
	uint64_t n, within;
};

struct sim {
	struct csq *csq;
	uint64_t now, rng, seq;
	struct sim_event *heap;
	size_t nheap, capheap;
	struct user *users;
	int nusers, capusers;
	struct agent *agents;
	int nagents; /* each shift, scale times */
	double scale;
	/* Asterisk: holdtime; Rocket.Chat: the mean conversation. */
	double holdtime, chat_sum;
	uint64_t chats;
	uint32_t max_chats;
	/* The day's outcome. */
	uint64_t matched, matched_at_once, abandoned, no_estimate;
	struct score csq_score, asterisk_score, rocket_score;
	double wait_sum; /* of those who waited and were matched */
	FILE *trace;
	const struct shift *shifts;
	size_t nshifts;
};

static double
sim_uniform(struct sim *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (double)((s->rng * 0x2545F4914F6CDD1DULL) >> 11) /
	       (double)(1ULL << 53);
}

static double
sim_exponential(struct sim *s, double mean)
{
	return -mean * log(1 - sim_uniform(s));
}

static double
sim_lognormal(struct sim *s, double median, double sigma)
{
	double u1 = 1 - sim_uniform(s), u2 = sim_uniform(s);

	return median * exp(sigma * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
}

static void
sim_push(struct sim *s, uint64_t at, enum sim_kind kind, int a)
{
	struct sim_event e = {at, ++s->seq, kind, a}, t;
	size_t i, p;

	if (s->nheap == s->capheap) {
		s->capheap = s->capheap ? s->capheap * 2 : 256;
		s->heap = realloc(s->heap, s->capheap * sizeof(*s->heap));
		if (s->heap == NULL)
			abort();
	}
	i = s->nheap++;
	s->heap[i] = e;
	for (; i > 0; i = p) {
		p = (i - 1) / 2;
		if (s->heap[p].at < s->heap[i].at ||
		    (s->heap[p].at == s->heap[i].at &&
		     s->heap[p].seq < s->heap[i].seq))
			break;
		t = s->heap[p], s->heap[p] = s->heap[i], s->heap[i] = t;
	}
}

static struct sim_event
sim_pop(struct sim *s)
{
	struct sim_event top = s->heap[0], t;
	size_t i = 0, l, m;

	s->heap[0] = s->heap[--s->nheap];
	for (;;) {
		l = 2 * i + 1;
		m = i;
		if (l < s->nheap && (s->heap[l].at < s->heap[m].at ||
		                     (s->heap[l].at == s->heap[m].at &&
		                      s->heap[l].seq < s->heap[m].seq)))
			m = l;
		if (l + 1 < s->nheap && (s->heap[l + 1].at < s->heap[m].at ||
		                         (s->heap[l + 1].at == s->heap[m].at &&
		                          s->heap[l + 1].seq < s->heap[m].seq)))
			m = l + 1;
		if (m == i)
			break;
		t = s->heap[m], s->heap[m] = s->heap[i], s->heap[i] = t;
		i = m;
	}
	return top;
}

static double
rate_at(uint64_t ms)
{
	double h = (double)(ms % DAY_MS) / 3600000.0;
	int i = (int)h;

	return arrivals_per_hour[i] +
	       (arrivals_per_hour[i + 1] - arrivals_per_hour[i]) * (h - i);
}

/* The next arrival after t: a Poisson process thinned to rate_at. */
static uint64_t
next_arrival(struct sim *s, uint64_t t)
{
	const double peak = 170.0 / 3600000.0; /* per ms, the highest */

	for (;;) {
		t += (uint64_t)sim_exponential(s, 1 / (peak * s->scale)) + 1;
		if (sim_uniform(s) * peak * 3600000.0 <= rate_at(t))
			return t;
	}
}

static int
index_of(const char *id)
{
	return atoi(id + 1);
}

static void
score_add(struct score *k, double est_ms, double wait_ms)
{
	k->abs_sum += fabs(est_ms - wait_ms);
	k->n++;
	k->within += fabs(est_ms - wait_ms) <= WITHIN * wait_ms;
}

/*
 * The events of libcsq: a match starts a conversation (and is when the
 * estimates are judged, and Asterisk's holdtime learns); wrap-ups and
 * the end of a conversation tell when an agent may log out.
 */
static void
sim_on_event(void *arg, const struct csq_event *ev)
{
	struct sim *s = arg;
	struct user *u;
	struct agent *a;
	double wait;

	switch (ev->type) {
	case CSQ_EV_MATCHED:
		u = &s->users[index_of(ev->user)];
		a = &s->agents[index_of(ev->servicer)];
		a->busy++;
		u->done = 1;
		u->matched = s->now;
		snprintf(u->room, sizeof(u->room), "%s", ev->room);
		s->matched++;
		wait = (double)ev->waited_ms;
		if (u->waited) {
			s->wait_sum += wait;
			if (u->eta >= 0) {
				score_add(&s->csq_score, (double)u->eta, wait);
				score_add(&s->asterisk_score, u->asterisk,
				          wait);
				score_add(&s->rocket_score, u->rocket, wait);
			} else
				s->no_estimate++;
			if (s->trace != NULL)
				fprintf(
				    s->trace,
				    "%llu %.0f %lld %.0f %.0f %llu %u\n",
				    (unsigned long long)u->arrival, wait,
				    (long long)u->eta, u->asterisk, u->rocket,
				    (unsigned long long)u->position, u->tier);
		} else
			s->matched_at_once++;
		s->holdtime = (3 * s->holdtime + wait) / 4;
		sim_push(s,
		         s->now +
		             (uint64_t)(1000 * sim_lognormal(s, HOLD_MEDIAN,
		                                             HOLD_SIGMA)),
		         EV_END, index_of(ev->user));
		break;
	case CSQ_EV_READY:
		s->agents[index_of(ev->servicer)].busy--;
		break;
	default:
		break;
	}
}

static void
sim_heartbeat(struct sim *s, int i)
{
	struct csq_heartbeat_args h;
	struct csq_servicer_info info;
	char sid[16];

	snprintf(sid, sizeof(sid), "a%d", i);
	memset(&h, 0, sizeof(h));
	h.servicer = sid;
	h.has_capacity = 1;
	h.capacity = s->shifts[i % s->nshifts].capacity;
	h.has_ttl = 1;
	h.ttl_s = CSQ_TTL_MAX;
	h.has_wrapup = 1;
	h.wrapup_s = WRAPUP_S;
	csq_heartbeat(s->csq, s->now, &h, &info);
}

static void
sim_logout_if_idle(struct sim *s, int i)
{
	char sid[16];
	uint64_t n;

	if (!s->agents[i].leaving || s->agents[i].busy > 0)
		return;
	snprintf(sid, sizeof(sid), "a%d", i);
	csq_logout(s->csq, s->now, sid, &n);
	s->agents[i].working = s->agents[i].leaving = 0;
}

static void
sim_arrival(struct sim *s)
{
	struct csq_enqueue_args a;
	struct csq_user_info info;
	struct user *u;
	char uid[16];

	if (s->nusers == s->capusers) {
		s->capusers = s->capusers ? 2 * s->capusers : 4096;
		s->users = realloc(s->users, s->capusers * sizeof(*s->users));
		if (s->users == NULL)
			abort();
	}
	u = &s->users[s->nusers];
	memset(u, 0, sizeof(*u));
	u->arrival = s->now;
	snprintf(uid, sizeof(uid), "u%d", s->nusers++);
	memset(&a, 0, sizeof(a));
	a.user = uid;
	a.has_tier = 1;
	a.tier = sim_uniform(s) * VIP_ONE_IN < 1 ? 1 : 0;
	a.has_ttl = 1;
	a.ttl_s = 0; /* patience is the simulation's */
	/* The estimates at arrival, before the reply's match. */
	u->asterisk = s->holdtime;
	if (csq_enqueue(s->csq, s->now, &a, &info) != CSQ_OK)
		abort();
	if (info.state != CSQ_USER_WAITING)
		return;
	u->waited = 1;
	u->eta = info.eta_ms;
	u->position = info.position;
	u->tier = info.tier;
	u->rocket = (((double)info.position - 1) / s->max_chats + 1) *
	            (s->chats > 0 ? s->chat_sum / (double)s->chats : 0);
	sim_push(s, s->now + (uint64_t)(1000 * sim_exponential(s, PATIENCE_S)),
	         EV_ABANDON, s->nusers - 1);
}

static void
sim_step(struct sim *s, const struct sim_event *e)
{
	struct user *u;
	char id[16];
	int known, i;

	switch (e->kind) {
	case EV_ARRIVAL:
		sim_arrival(s);
		sim_push(s, next_arrival(s, s->now), EV_ARRIVAL, 0);
		break;
	case EV_ABANDON:
		u = &s->users[e->a];
		if (u->done)
			break;
		u->done = 1;
		snprintf(id, sizeof(id), "u%d", e->a);
		csq_leave(s->csq, s->now, id, &known);
		s->abandoned++;
		break;
	case EV_END:
		u = &s->users[e->a];
		s->chat_sum += (double)(s->now - u->matched);
		s->chats++;
		/* Released with wrap-up: busy until ready. */
		csq_release(s->csq, s->now, u->room, &known);
		break;
	case EV_LOGIN:
		s->agents[e->a].working = 1;
		s->agents[e->a].leaving = 0;
		sim_heartbeat(s, e->a);
		break;
	case EV_LUNCH:
	case EV_BACK:
		snprintf(id, sizeof(id), "a%d", e->a);
		if (e->kind == EV_LUNCH)
			csq_pause(s->csq, s->now, id);
		else
			csq_resume(s->csq, s->now, id);
		break;
	case EV_SHIFT_END:
		snprintf(id, sizeof(id), "a%d", e->a);
		csq_pause(s->csq, s->now, id);
		s->agents[e->a].leaving = 1;
		sim_logout_if_idle(s, e->a);
		break;
	}
	for (i = 0; i < s->nagents; i++)
		sim_logout_if_idle(s, i);
}

/* One day from midnight: its shifts, its arrivals, until the last user
 * is matched or gone. */
static void
sim_day(struct sim *s)
{
	const struct shift *f;
	struct sim_event e;
	uint64_t dl, h = 3600000;
	int i;

	for (i = 0; i < s->nagents; i++) {
		f = &s->shifts[i % s->nshifts];
		sim_push(s, (uint64_t)(f->start_h * h), EV_LOGIN, i);
		if (f->hours >= 6) {
			sim_push(s, (uint64_t)((f->start_h + 4) * h), EV_LUNCH,
			         i);
			sim_push(s,
			         (uint64_t)((f->start_h + 4) * h) +
			             LUNCH_S * 1000ULL,
			         EV_BACK, i);
		}
		sim_push(s, (uint64_t)((f->start_h + f->hours) * h),
		         EV_SHIFT_END, i);
	}
	sim_push(s, next_arrival(s, 0), EV_ARRIVAL, 0);
	while (s->nheap > 0) {
		dl = csq_next_deadline(s->csq);
		if (dl <= s->heap[0].at) {
			s->now = dl;
			csq_expire(s->csq, s->now);
			continue;
		}
		e = sim_pop(s);
		if (e.kind == EV_ARRIVAL && e.at >= DAY_MS)
			continue; /* the day's arrivals are over */
		s->now = e.at;
		sim_step(s, &e);
	}
}

static void
report(const char *name, const struct score *k)
{
	printf("%-12s %8llu %10.1f %9.1f %%\n", name, (unsigned long long)k->n,
	       k->n ? k->abs_sum / (double)k->n / 1000 : 0,
	       k->n ? 100.0 * (double)k->within / (double)k->n : 0);
}

int
main(int argc, char **argv)
{
	static const struct option options[] = {
	    {"days", required_argument, NULL, 'd'},
	    {"seed", required_argument, NULL, 's'},
	    {"trace", required_argument, NULL, 't'},
	    {"staff", required_argument, NULL, 'f'},
	    {"scale", required_argument, NULL, 'x'},
	    {NULL, 0, NULL, 0},
	};
	struct csq_limits limits;
	struct sim s;
	int days = 7, day, opt, scale = 1;
	uint64_t seed = 1;
	const char *trace = NULL, *staff = "lean";
	size_t i;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'd':
			days = atoi(optarg);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 10);
			break;
		case 't':
			trace = optarg;
			break;
		case 'f':
			staff = optarg;
			break;
		case 'x':
			scale = atoi(optarg);
			break;
		default:
			fprintf(stderr,
			        "usage: csq-eta [--days N] [--seed S] "
			        "[--staff lean|short|ample] [--scale N] "
			        "[--trace FILE]\n");
			return 2;
		}
	}
	memset(&s, 0, sizeof(s));
	if (trace != NULL && (s.trace = fopen(trace, "w")) == NULL) {
		perror(trace);
		return 1;
	}
	if (strcmp(staff, "lean") == 0) {
		s.shifts = lean;
		s.nshifts = NITEMS(lean);
	} else if (strcmp(staff, "short") == 0) {
		s.shifts = shorthanded;
		s.nshifts = NITEMS(shorthanded);
	} else if (strcmp(staff, "ample") == 0) {
		s.shifts = ample;
		s.nshifts = NITEMS(ample);
	} else {
		fprintf(stderr, "csq-eta: --staff lean or ample\n");
		return 2;
	}
	if (scale < 1) {
		fprintf(stderr, "csq-eta: --scale at least 1\n");
		return 2;
	}
	for (i = 0; i < s.nshifts; i++)
		if (s.shifts[i].capacity > s.max_chats)
			s.max_chats = s.shifts[i].capacity;
	s.scale = scale;
	s.nagents = (int)s.nshifts * scale;
	s.agents = calloc((size_t)s.nagents, sizeof(*s.agents));
	if (s.agents == NULL)
		return 1;
	csq_limits_default(&limits);
	for (day = 0; day < days; day++) {
		/* Each day a new state, as csqd would be restarted empty:
		 * every estimator learns from scratch. */
		s.rng = (seed + (uint64_t)day) * 0x9E3779B97F4A7C15ULL | 1;
		s.csq = csq_new(&limits, seed, sim_on_event, &s);
		s.now = 0;
		s.nusers = 0;
		s.holdtime = s.chat_sum = 0;
		s.chats = 0;
		memset(s.agents, 0, (size_t)s.nagents * sizeof(*s.agents));
		sim_day(&s);
		csq_free(s.csq);
	}
	printf("%s staffing, scale %d (%d agents), ", staff, scale, s.nagents);
	printf("days %d, seed %llu: %llu matched (%llu at once, %llu after "
	       "waiting, %llu of them before csq could estimate), %llu "
	       "abandoned\n",
	       days, (unsigned long long)seed, (unsigned long long)s.matched,
	       (unsigned long long)s.matched_at_once,
	       (unsigned long long)(s.matched - s.matched_at_once),
	       (unsigned long long)s.no_estimate,
	       (unsigned long long)s.abandoned);
	printf("mean wait of those who waited: %.1f s\n",
	       s.wait_sum / (double)(s.matched - s.matched_at_once) / 1000);
	printf("%-12s %8s %10s %11s\n", "estimator", "users", "MAE (s)",
	       "within 30%");
	report("csq", &s.csq_score);
	report("Asterisk", &s.asterisk_score);
	report("Rocket.Chat", &s.rocket_score);
	if (s.trace != NULL)
		fclose(s.trace);
	free(s.heap);
	free(s.users);
	free(s.agents);
	return 0;
}
