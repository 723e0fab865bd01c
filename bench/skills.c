/*
 * csq-skills: the speed rows of skills (issue 35, docs/benchmarks.md),
 * driven through libcsq itself with a fake clock, so that what is timed
 * is the matcher and nothing of the network:
 *
 *   S servicers (1,000) of capacity 1 serving one queue, each with 3 to 6
 *   of 20 skills at levels 1..5; 50 need-sets of 1 to 3 of those skills,
 *   each taken from a servicer's skills (so someone may take it); W users
 *   (100,000) waiting, each with one of the need-sets. The same run
 *   without skills: no SKILLS, no NEEDS.
 *
 *   - ENQUEUE rate: the W users enqueued while every room is busy;
 *   - match: a RELEASE of a random busy room, which puts the best user
 *     that servicer may take into it, timed, then one ENQUEUE so that W
 *     stay waiting: p50, p99, p99.9 over M releases, after one untimed
 *     release of each room;
 *   - memory per waiting user: the heap's growth (mallinfo2) over the W.
 *
 * usage: csq-skills [--plain] [-s servicers] [-w waiting] [-m releases]
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "csq.h"

#define SKILLS   20
#define NEEDSETS 50
#define T0       1700000000000ULL

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Servicer i's skills: 3 to 6 distinct of the 20, levels 1..5. */
static void
servicer_skills(char *out, size_t cap, int *skill, int *level, int *n)
{
	size_t off = 0;
	int i, j, s;

	*n = 3 + (int)rnd(4);
	for (i = 0; i < *n; i++) {
		do {
			s = (int)rnd(SKILLS);
			for (j = 0; j < i && skill[j] != s; j++)
				;
		} while (j < i);
		skill[i] = s;
		level[i] = 1 + (int)rnd(5);
		off += (size_t)snprintf(out + off, cap - off, "%sk%d:%d",
		                        i ? "," : "", s, level[i]);
	}
}

/* The timed release, a function of its own so that callgrind can count
 * it alone (--toggle-collect=timed_release), not the untimed ones. */
static __attribute__((noinline)) void
timed_release(struct csq *c, uint64_t now, const char *room)
{
	int known;

	csq_release(c, now, room, &known);
}

int
main(int argc, char **argv)
{
	static char needsets[NEEDSETS][128];
	char skills[256], sid[32], uid[32], room[48];
	int plain = 0, nservicers = 1000, waiting = 100000, releases = 20000;
	int skill[8], level[8], n, i, j, known;
	struct csq_heartbeat_args h;
	struct csq_enqueue_args e;
	struct csq_servicer_info si;
	struct csq_user_info u;
	struct csq_limits l;
	struct mallinfo2 m0, m1;
	uint64_t now = T0, t, *lat, enq_ns;
	long seq = 0;
	struct csq *c;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--plain") == 0)
			plain = 1;
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			nservicers = atoi(argv[++i]);
		else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
			waiting = atoi(argv[++i]);
		else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
			releases = atoi(argv[++i]);
		else {
			fprintf(stderr,
			        "usage: csq-skills [--plain] [-s "
			        "servicers] [-w waiting] [-m releases]\n");
			return 64;
		}
	}
	csq_limits_default(&l);
	l.max_queue_length = (uint64_t)waiting * 2;
	c = csq_new(&l, 42, NULL, NULL);
	for (i = 0; i < nservicers; i++) {
		servicer_skills(skills, sizeof(skills), skill, level, &n);
		/* A need-set from this servicer's skills, at or below its
		 * levels: someone may take it. */
		if (i < NEEDSETS) {
			size_t off = 0;
			int k = 1 + (int)rnd(3);

			for (j = 0; j < k && j < n; j++)
				off += (size_t)snprintf(
				    needsets[i] + off,
				    sizeof(needsets[i]) - off, "%sk%d:%d",
				    j ? "," : "", skill[j],
				    1 + (int)rnd((uint32_t)level[j]));
		}
		memset(&h, 0, sizeof(h));
		snprintf(sid, sizeof(sid), "s%d", i);
		h.servicer = sid;
		h.has_ttl = 1;
		h.ttl_s = CSQ_TTL_MAX;
		h.has_queues = 1;
		h.nqueues = 1;
		h.queues[0] = "support";
		h.has_skills = !plain;
		h.skills = skills;
		if (csq_heartbeat(c, now, &h, &si) != CSQ_OK)
			return 1;
	}
	memset(&e, 0, sizeof(e));
	e.has_queue = 1;
	e.queue = "support";
	e.has_ttl = 1; /* TTL 0: never gone */
	e.user = uid;
	/* Fill the rooms first (not timed), then the W who wait. */
	for (i = 0; i < nservicers * 4; i++) {
		snprintf(uid, sizeof(uid), "u%ld", seq++);
		e.has_needs = !plain;
		e.needs = needsets[rnd(NEEDSETS)];
		csq_enqueue(c, now, &e, &u);
	}
	m0 = mallinfo2();
	t = now_ns();
	for (i = 0; i < waiting; i++) {
		snprintf(uid, sizeof(uid), "u%ld", seq++);
		e.needs = needsets[rnd(NEEDSETS)];
		csq_enqueue(c, now, &e, &u);
	}
	enq_ns = now_ns() - t;
	m1 = mallinfo2();
	/* Each room released once, untimed, so that what is timed is the
	 * steady state: a servicer's list of the need-lines it may take
	 * (lib/needline.c) is made at its first match after the need-lines
	 * appeared, once (docs/benchmarks.md, "Skills"). */
	for (i = 0; i < nservicers; i++) {
		now++;
		snprintf(room, sizeof(room), "s%d/0", i);
		csq_release(c, now, room, &known);
		snprintf(uid, sizeof(uid), "u%ld", seq++);
		e.needs = needsets[rnd(NEEDSETS)];
		csq_enqueue(c, now, &e, &u);
	}
	lat = calloc((size_t)releases, sizeof(*lat));
	for (i = 0; i < releases; i++) {
		now++;
		snprintf(room, sizeof(room), "s%u/0",
		         rnd((uint32_t)nservicers));
		t = now_ns();
		timed_release(c, now, room);
		lat[i] = now_ns() - t;
		snprintf(uid, sizeof(uid), "u%ld", seq++);
		e.needs = needsets[rnd(NEEDSETS)];
		csq_enqueue(c, now, &e, &u);
	}
	qsort(lat, (size_t)releases, sizeof(*lat), u64_cmp);
	{
		struct csq_stats st;

		csq_stats(c, &st);
		printf("mode %s servicers %d waiting %llu need-sets %d\n",
		       plain ? "plain" : "skills", nservicers,
		       (unsigned long long)st.waiting, plain ? 0 : NEEDSETS);
		printf("enqueue_per_sec %.0f\n", waiting / (enq_ns / 1e9));
		printf("release_match_ns p50 %llu p99 %llu p999 %llu "
		       "(matched %llu)\n",
		       (unsigned long long)lat[releases / 2],
		       (unsigned long long)lat[releases * 99 / 100],
		       (unsigned long long)lat[releases * 999 / 1000],
		       (unsigned long long)st.matched_total);
		printf("heap_bytes_per_waiting_user %.1f\n",
		       (double)(m1.uordblks - m0.uordblks) / waiting);
	}
	free(lat);
	csq_free(c);
	return 0;
}
