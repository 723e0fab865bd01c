/*
 * The queue policies on the Redis engine (protocol-v2 section 4). csq.so
 * keeps them in the state, where one set is in force for every daemon
 * that shares it: this daemon writes its own `queues` there (POLICY
 * records) each time its link comes up and each time a reload changes
 * them, in one CSQ.CALL, which also arms the clocks of the users already
 * waiting anew. Daemons whose `queues` differ overwrite each other: the
 * last to write wins.
 */
#include "redis_engine.h"

#include <stdlib.h>
#include <string.h>

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
	log_debug("queues: %zu queue policies in force in Redis", r->npolicies);
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

void
redis_policy_init(struct redis_engine *r, const struct csq_policy *v, size_t n)
{
	r->policies = NULL;
	r->npolicies = 0;
	if (n > 0)
		redis_policy_set(r, v, n);
}
