/*
 * The queue policies on the Redis engine (protocol-v2 section 4). The
 * scripts read them from Redis, where one set is in force for every
 * daemon that shares the state: this daemon writes its own `queues` there
 * (OPS.policy, daemon/lua/policy.lua) each time its link comes up and
 * each time a reload changes them, in one script call, which also arms
 * the clocks of the users already waiting anew. Daemons whose `queues`
 * differ overwrite each other: the last to write wins, and the one that
 * replaces a set it did not write says so in its log.
 */
#include "redis_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* The calls before the last of a set: their answers say nothing. */
static void
policy_staged(void *arg, const struct csq_result *res)
{
	(void)arg, (void)res;
}

/* What the daemon's log says of the call that wrote them. */
static void
policy_done(void *arg, const struct csq_result *res)
{
	struct redis_engine *r = arg;

	if (res->status != CSQ_OK) {
		log_warnx("queues: the queue policies could not be written to "
		          "Redis (%s); they are written again when the link "
		          "comes back",
		          csq_status_text(res->status));
		return;
	}
	if (res->n == 1)
		log_warnx(
		    "queues: this daemon's queue policies replace "
		    "different ones that another csqd (or this one before "
		    "a restart) wrote to this Redis; the last to write "
		    "wins (docs/operations.md)");
	else
		log_debug("queues: %zu queue policies in force in Redis",
		          r->npolicies);
}

/* One policy as policy.lua reads it (policy_parse in common.lua). */
void
redis_policy_pack(const struct csq_policy *p, char *buf, size_t cap)
{
	snprintf(buf, cap, "%d %llu %u %u %lld %u %s",
	         p->has_strategy ? (int)p->strategy : -1,
	         (unsigned long long)(p->has_max_length ? p->max_length : 0),
	         (unsigned)p->overflow_after_s, (unsigned)p->aging_every_s,
	         p->has_aging_max_tier ? (long long)p->aging_max_tier : -1LL,
	         (unsigned)p->service_level_s, p->overflow_to);
}

static void
policy_call(struct redis_engine *r, size_t i, size_t n,
            const struct csq_policy *p)
{
	struct redis_call *k;
	struct csq_op op;

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	op.offset = i;
	op.count = (uint32_t)n;
	if (p != NULL)
		op.policy = *p;
	/* The reply of the last is the set's. */
	if (redis_call_build(r, &op, i + 1 >= n ? policy_done : policy_staged,
	                     r, &k) != 0)
		abort();
	redis_call_send(r, k);
}

/* The daemon's set, in one call (a group: never split in two batches). */
void
redis_policy_send(struct redis_engine *r)
{
	size_t i;

	redis_call_group_begin(r);
	if (r->npolicies == 0)
		policy_call(r, 0, 0, NULL);
	for (i = 0; i < r->npolicies; i++)
		policy_call(r, i, r->npolicies, &r->policies[i]);
	redis_call_group_end(r);
}

enum csq_status
redis_policy_set(struct redis_engine *r, const struct csq_policy *v, size_t n)
{
	free(r->policies);
	r->policies = NULL;
	r->npolicies = n;
	if (n > 0) {
		r->policies = csq_xmalloc(n * sizeof(*v));
		memcpy(r->policies, v, n * sizeof(*v));
	}
	if (r->up)
		redis_policy_send(r);
	return CSQ_OK;
}

/* A name for this daemon's writes, new at each start: who wrote the set
 * in force (policy.lua). */
void
redis_policy_init(struct redis_engine *r, const struct csq_policy *v, size_t n)
{
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (uint64_t)time(NULL) * 2654435761u;
	snprintf(r->writer, sizeof(r->writer), "%016llx-%ld",
	         (unsigned long long)seed, (long)getpid());
	r->policies = NULL;
	r->npolicies = 0;
	if (n > 0)
		redis_policy_set(r, v, n);
}
