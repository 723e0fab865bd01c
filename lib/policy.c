/*
 * Queue policies (protocol-v2 section 4): per queue, a maximum length, a
 * strategy, an overflow (after so long in the queue, move to another) and
 * aging (every so long in the queue, one tier more), and the service level
 * its numbers are measured against.
 *
 * A user's overflow and aging are one deadline of its own, in the one
 * heap: the next of its steps, measured from when it joined its line
 * (joined_ms). The deadline's kind says which step comes; when an aging
 * step and the overflow fall in the same millisecond the kind is aging,
 * and its act takes the overflow too, so that the user carries the tier
 * it earned into the next queue. No step scans a line: each is O(log n).
 */
#include "hours.h"
#include "orderkey.h"
#include "state.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
csq_policy_error_text(enum csq_policy_error e)
{
	switch (e) {
	case CSQ_POLICY_OK:
		return "ok";
	case CSQ_POLICY_NAME:
		return "name is not a valid queue id";
	case CSQ_POLICY_DUPLICATE:
		return "a second policy for the same queue";
	case CSQ_POLICY_MAX_LENGTH:
		return "max_length out of range (1..100000000)";
	case CSQ_POLICY_OVERFLOW_TO:
		return "overflow_to is not a valid queue id, or the queue "
		       "itself";
	case CSQ_POLICY_OVERFLOW_AFTER:
		return "overflow_after out of range (1..86400)";
	case CSQ_POLICY_OVERFLOW_PAIR:
		return "overflow_after and overflow_to go together";
	case CSQ_POLICY_CYCLE:
		return "overflow_to leads back to this queue (a cycle)";
	case CSQ_POLICY_AGING_EVERY:
		return "aging_every out of range (0..86400)";
	case CSQ_POLICY_AGING_MAX_TIER:
		return "aging_max_tier above max_tier";
	case CSQ_POLICY_SERVICE_LEVEL:
		return "service_level out of range (1..86400)";
	case CSQ_POLICY_SKILL_ORDER:
		return "skill_order must be \"strategy\" or \"level\"";
	case CSQ_POLICY_RELAX:
		return "relax: at most 4 steps, after growing (1..86400), each "
		       "with drop (skill names, at most 99 bytes, or \"*\") or "
		       "lower (1..100)";
	case CSQ_POLICY_NOBODY:
		return "nobody: counts \"logged_in\" or \"ready\"; "
		       "when_nobody \"wait\", \"refuse\" or \"fallback\" "
		       "(with fallback, a queue id not the queue itself); "
		       "at_nobody \"keep\", \"move\" or \"release\" (with "
		       "grace 1..86400, and move_to with \"move\")";
	case CSQ_POLICY_NOBODY_CYCLE:
		return "nobody: fallback leads back to this queue (a cycle)";
	case CSQ_POLICY_HOURS:
		return "hours: a zone, a week, at most 64 closed dates, "
		       "when_closed and at_close known";
	case CSQ_POLICY_HOURS_QUEUE:
		return "hours: fallback (with when_closed = \"fallback\") or "
		       "move_to (with at_close = \"move\") is not a queue id, "
		       "or the queue itself";
	}
	return "unknown error";
}

static int
valid_name(const char *s)
{
	return csq_valid_id(s, strnlen(s, CSQ_ID_MAX + 1));
}

static const struct csq_policy *
policy_find_in(const struct csq_policy *v, size_t n, const char *name,
               size_t len)
{
	size_t lo = 0, hi = n, mid;
	int cmp;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		cmp = strncmp(v[mid].name, name, len);
		if (cmp == 0 && v[mid].name[len] != '\0')
			cmp = 1;
		if (cmp == 0)
			return &v[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The policy of queue name in v (any order), by a walk: for the check. */
static size_t
policy_index(const struct csq_policy *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return i;
	return n;
}

/* The relax steps: growing times, each drops or lowers, drop a list of
 * names (no levels) or "*" alone (drop_all). */
static int
policy_relax_check(const struct csq_policy *p)
{
	const struct csq_relax_step *r;
	struct csq_skill_list l;
	uint32_t i, j, prev = 0;

	if (p->nrelax > CSQ_RELAX_STEPS)
		return -1;
	for (i = 0; i < p->nrelax; i++) {
		r = &p->relax[i];
		if (r->after_s <= prev || r->after_s > CSQ_POLICY_SECONDS_MAX ||
		    r->lower > CSQ_SKILL_LEVEL_MAX || r->drop_all > 1 ||
		    memchr(r->drop, '\0', sizeof(r->drop)) == NULL ||
		    strchr(r->drop, ':') != NULL ||
		    csq_skills_parse(r->drop, CSQ_USER_NEEDS, &l) != CSQ_OK ||
		    (r->drop_all && l.n > 0) ||
		    (!r->drop_all && l.n == 0 && r->lower == 0))
			return -1;
		for (j = 0; j < l.n; j++)
			if (l.v[j].level != 1)
				return -1;
		prev = r->after_s;
	}
	return 0;
}

static enum csq_policy_error
policy_check_one(const struct csq_policy *p, const struct csq_limits *l)
{
	int has_to = p->overflow_to[0] != '\0';

	if (!valid_name(p->name))
		return CSQ_POLICY_NAME;
	if (p->has_max_length &&
	    (p->max_length < 1 || p->max_length > CSQ_QUEUE_LENGTH_MAX))
		return CSQ_POLICY_MAX_LENGTH;
	if (has_to && (!valid_name(p->overflow_to) ||
	               strcmp(p->overflow_to, p->name) == 0))
		return CSQ_POLICY_OVERFLOW_TO;
	if (p->overflow_after_s > CSQ_POLICY_SECONDS_MAX)
		return CSQ_POLICY_OVERFLOW_AFTER;
	if (has_to != (p->overflow_after_s > 0))
		return CSQ_POLICY_OVERFLOW_PAIR;
	if (p->aging_every_s > CSQ_POLICY_SECONDS_MAX)
		return CSQ_POLICY_AGING_EVERY;
	if (p->has_aging_max_tier && p->aging_max_tier > l->max_tier)
		return CSQ_POLICY_AGING_MAX_TIER;
	if (p->service_level_s > CSQ_POLICY_SECONDS_MAX)
		return CSQ_POLICY_SERVICE_LEVEL;
	if (p->skill_order > CSQ_SKILL_ORDER_LEVEL)
		return CSQ_POLICY_SKILL_ORDER;
	if (policy_relax_check(p) != 0)
		return CSQ_POLICY_RELAX;
	if (p->hours.on && (strcmp(p->hours.fallback, p->name) == 0 ||
	                    strcmp(p->hours.move_to, p->name) == 0 ||
	                    (p->hours.when_closed == CSQ_CLOSED_FALLBACK) !=
	                        (p->hours.fallback[0] != '\0') ||
	                    (p->hours.at_close == CSQ_AT_CLOSE_MOVE) !=
	                        (p->hours.move_to[0] != '\0')))
		return CSQ_POLICY_HOURS_QUEUE;
	if (csq_hours_check(&p->hours) != 0)
		return CSQ_POLICY_HOURS;
	return CSQ_POLICY_OK;
}

/* Following overflow_to from entry i comes back to it. */
static int
policy_cycles(const struct csq_policy *v, size_t n, size_t i)
{
	size_t j = i, steps;

	for (steps = 0; steps < n; steps++) {
		if (v[j].overflow_to[0] == '\0')
			return 0;
		j = policy_index(v, n, v[j].overflow_to);
		if (j == n)
			return 0;
		if (j == i)
			return 1;
	}
	return 0; /* a cycle further on, reported at one of its own */
}

enum csq_policy_error
csq_policy_check_entry(const struct csq_policy *v, size_t n, size_t i,
                       const struct csq_limits *l)
{
	enum csq_policy_error e;

	if ((e = policy_check_one(&v[i], l)) != CSQ_POLICY_OK)
		return e;
	if (policy_index(v, i, v[i].name) < i)
		return CSQ_POLICY_DUPLICATE;
	if (policy_cycles(v, n, i))
		return CSQ_POLICY_CYCLE;
	return csq_nobody_check(v, n, i);
}

enum csq_policy_error
csq_policies_check(const struct csq_policy *v, size_t n,
                   const struct csq_limits *l, size_t *bad)
{
	enum csq_policy_error e;
	size_t i;

	for (i = 0; i < n; i++) {
		*bad = i;
		if ((e = csq_policy_check_entry(v, n, i, l)) != CSQ_POLICY_OK)
			return e;
	}
	*bad = 0;
	return CSQ_POLICY_OK;
}

const struct csq_policy *
csq_policy_find(const struct csq *c, const char *name, size_t len)
{
	return policy_find_in(c->policies, c->npolicies, name, len);
}

const struct csq_policy *
csq_get_policies(const struct csq *c, size_t *n)
{
	*n = c->npolicies;
	return c->policies;
}

uint64_t
csq_queue_max_length(const struct csq *c, const struct csq_queue *q)
{
	if (q->policy != NULL && q->policy->has_max_length)
		return q->policy->max_length;
	return c->limits.max_queue_length;
}

uint32_t
csq_queue_service_level(const struct csq_queue *q)
{
	if (q->policy != NULL && q->policy->service_level_s > 0)
		return q->policy->service_level_s;
	return CSQ_DEFAULT_SERVICE_LEVEL;
}

/* The tier aging stops at in q, 0 when q does not age. */
static uint32_t
policy_aging_max(const struct csq *c, const struct csq_queue *q)
{
	const struct csq_policy *p = q->policy;
	uint32_t max = c->limits.max_tier;

	if (p == NULL || p->aging_every_s == 0)
		return 0;
	if (p->has_aging_max_tier && p->aging_max_tier < max)
		max = p->aging_max_tier;
	return max;
}

/* q's policy has a clock: an overflow or aging. */
int
csq_policy_has_clocks(const struct csq_queue *q)
{
	const struct csq_policy *p = q->policy;

	return p != NULL && (p->overflow_after_s > 0 || p->aging_every_s > 0);
}

#define policy_clocks csq_policy_has_clocks

/* u (in its queue's line) has relax steps to come: it has needs, and
 * its queue's policy has steps it has not passed. */
static int
policy_relax_pending(const struct csq_user *u)
{
	const struct csq_policy *p = u->queue->policy;
	uint32_t step = u->wait != NULL ? u->wait->relax_step : 0;

	if (u->wait == NULL && (u->flags & CSQ_USER_RELAXED))
		return 0; /* past them all, its wait gone with them */
	return p != NULL && u->needs != 0 && step < p->nrelax;
}

/*
 * u's wait goes (no clock of its queue is left for it). One that passed
 * every relax step with needs still in force says so in its flags: with
 * no wait to count its steps, it would look as if it had passed none.
 */
static void
policy_wait_drop(struct csq *c, struct csq_user *u)
{
	const struct csq_policy *p = u->queue->policy;

	if (u->wait != NULL && p != NULL && u->needs != 0 && p->nrelax > 0 &&
	    u->wait->relax_step >= p->nrelax)
		u->flags |= CSQ_USER_RELAXED;
	csq_user_wait_free(c, u);
}

int
csq_policy_user_clocks(const struct csq_user *u)
{
	return policy_clocks(u->queue) || policy_relax_pending(u);
}

int64_t
csq_policy_relax_ms(const struct csq_user *u, uint64_t now)
{
	uint64_t at;

	if (u->state != CSQ_USER_WAITING || (u->flags & CSQ_USER_PREFERRING) ||
	    u->wait == NULL || !policy_relax_pending(u))
		return -1;
	at = u->wait->joined_ms +
	     csq_ms(u->queue->policy->relax[u->wait->relax_step].after_s);
	return at > now ? (int64_t)(at - now) : 0;
}

/*
 * Whether a clock of kind at time at, of a user who joined q's line at
 * joined, is one that policy_arm_after could have set: an aging point of
 * the policy before any overflow, or the overflow (at its time or, made
 * due by a reload, after it). For csq_check and the snapshot's restore.
 */
int
csq_policy_clock_fits(const struct csq_queue *q, uint64_t joined,
                      enum csq_deadline_kind kind, uint64_t at)
{
	const struct csq_policy *p = q->policy;
	uint64_t every, overflow;

	if (p == NULL || (!policy_clocks(q) && p->nrelax == 0))
		return 0;
	overflow = p->overflow_after_s > 0
	               ? joined + csq_ms(p->overflow_after_s)
	               : UINT64_MAX;
	switch (kind) {
	case CSQ_DL_RELAX: /* at a step's time, or later (a reload's) */
		return p->nrelax > 0 &&
		       at >= joined + csq_ms(p->relax[0].after_s);
	case CSQ_DL_AGING:
		every = csq_ms(p->aging_every_s);
		return every > 0 && at > joined && (at - joined) % every == 0 &&
		       at <= overflow;
	case CSQ_DL_OVERFLOW:
		return overflow != UINT64_MAX && at >= overflow;
	default:
		return 0;
	}
}

/*
 * Arms u's next step after time t (exclusive), from joined_ms and its
 * queue's policy (which has a clock): the next aging point, or the
 * overflow, whichever comes first (aging on a tie). An aging point is
 * armed whatever u's tier: at its act, a user at the top (its own tier,
 * or max_tier lowered by a reload) passes it, and one whose tier an
 * ENQUEUE lowered ages again, with no clock to mend.
 */
static void
policy_arm_after(struct csq *c, struct csq_user *u, uint64_t t)
{
	const struct csq_policy *p = u->queue->policy;
	struct csq_wait *w = u->wait;
	uint64_t every, overflow = UINT64_MAX, aging = UINT64_MAX, k;
	uint64_t relax = UINT64_MAX;

	if (p->overflow_after_s > 0)
		overflow = w->joined_ms + csq_ms(p->overflow_after_s);
	if (p->aging_every_s > 0) {
		every = csq_ms(p->aging_every_s);
		k = (t >= w->joined_ms ? (t - w->joined_ms) / every : 0) + 1;
		aging = w->joined_ms + k * every;
	}
	/* The next relax step: a due one (a reload's, a NEEDS's) at t, which
	 * the operation that armed it acts on before it ends
	 * (csq_policy_settle, csq_set_policies). */
	if (policy_relax_pending(u)) {
		relax = w->joined_ms + csq_ms(p->relax[w->relax_step].after_s);
		if (relax < t)
			relax = t;
	}
	/* A due overflow (a reload made it so): the same. */
	if (overflow < t)
		overflow = t;
	/* On a tie: relax, then aging, then overflow (csq_policy_act). */
	if (relax <= aging && relax <= overflow) {
		w->clock.node.tag = CSQ_DL_RELAX;
		csq_deadline_set(c, &w->clock, relax);
		return;
	}
	w->clock.node.tag = aging <= overflow ? CSQ_DL_AGING : CSQ_DL_OVERFLOW;
	csq_deadline_set(c, &w->clock, aging <= overflow ? aging : overflow);
}

/* Only a user of a queue with a clock has a struct csq_wait in line. */
void
csq_policy_start(struct csq *c, struct csq_user *u, uint64_t now)
{
	u->flags &= (uint8_t)~CSQ_USER_RELAXED; /* a new line's steps */
	if (!csq_policy_user_clocks(u)) {
		csq_user_wait_free(c, u);
		return;
	}
	csq_user_wait(u)->joined_ms = now;
	policy_arm_after(c, u, now);
}

/*
 * The policy changed under u: its clocks anew, measured from when it
 * joined its line; a user who had none (its queue had no clock) is
 * measured from now.
 */
static void
policy_rearm(struct csq *c, struct csq_user *u, uint64_t now)
{
	if (!csq_policy_user_clocks(u))
		policy_wait_drop(c, u);
	else if (u->wait == NULL)
		csq_policy_start(c, u, now);
	else
		policy_arm_after(c, u, now);
}

void
csq_policy_refresh(struct csq *c, struct csq_user *u, uint64_t now)
{
	if (u->wait != NULL)
		u->wait->relax_step = 0;
	u->flags &= (uint8_t)~CSQ_USER_RELAXED; /* new needs: every step */
	policy_rearm(c, u, now);
}

/*
 * A re-ENQUEUE names queue named: 1 when u overflowed and named is
 * upstream of u's queue in the overflow chain, so that a frontend that
 * repeats its first ENQUEUE does not pull the user back.
 */
int
csq_policy_overflowed_from(const struct csq *c, const struct csq_user *u,
                           const char *named, size_t len)
{
	const struct csq_policy *p;
	size_t steps;

	if (!(u->flags & CSQ_USER_OVERFLOWED))
		return 0;
	for (steps = 0; steps <= c->npolicies; steps++) {
		if ((p = csq_policy_find(c, named, len)) == NULL ||
		    p->overflow_to[0] == '\0')
			return 0;
		named = p->overflow_to;
		len = strlen(named);
		if (len == u->queue->namelen &&
		    memcmp(named, u->queue->name, len) == 0)
			return 1;
	}
	return 0;
}

/* One aging step: a tier more, the same arrival; event rescored. */
static void
policy_age(struct csq *c, struct csq_user *u, uint64_t now)
{
	struct csq_event ev;
	struct csq_key k;
	uint64_t pos;

	csq_key_unpack(u->key, &k);
	csq_needline_leave(c, u);
	k.tier++;
	u->key = csq_key_pack(&k);
	pos = csq_needline_enter(c, u);
	csq_event_begin(&ev, CSQ_EV_RESCORED, now);
	csq_event_user(&ev, u);
	ev.position = pos;
	ev.reason = CSQ_REASON_AGING;
	csq_emit(c, &ev);
}

/*
 * u moves to queue name with its key, whatever the target's length; its
 * clocks start again there. A free room there takes it at once (matched
 * or offered, with from_queue); else overflowed (with reason nobody for
 * a nobody policy's move, closed at a closing time, section 3c).
 */
void
csq_policy_move(struct csq *c, struct csq_user *u, const char *name,
                enum csq_reason reason, uint64_t now)
{
	struct csq_queue *from = u->queue, *to;
	struct csq_event ev;
	uint64_t pos;

	to = csq_queue_get(c, name, strlen(name), 1);
	csq_needline_leave(c, u);
	if (u->wait != NULL) /* the new queue's steps, from the first */
		u->wait->relax_step = 0;
	csq_queue_ref(to);
	u->queue = to;
	u->flags |= CSQ_USER_OVERFLOWED;
	from->counts.overflowed++;
	csq_estimate_arrival(&to->est, csq_user_tier(u), now);
	pos = csq_needline_enter(c, u);
	csq_policy_start(c, u, now);
	/* Matched at once: its matched (offered) says which move it was,
	 * an overflow's by name (overflowed's has no reason). */
	if (!csq_match_user(c, u, from,
	                    reason != CSQ_REASON_NONE ? reason
	                                              : CSQ_REASON_OVERFLOW,
	                    now)) {
		csq_event_begin(&ev, CSQ_EV_OVERFLOWED, now);
		csq_event_user(&ev, u);
		memcpy(ev.from_queue, from->name, from->namelen + 1);
		ev.position = pos;
		ev.reason = reason;
		csq_emit(c, &ev);
	}
	csq_queue_unref(c, from);
}

/* u's overflow: to its queue's overflow_to. */
static void
policy_overflow(struct csq *c, struct csq_user *u, uint64_t now)
{
	csq_policy_move(c, u, u->queue->policy->overflow_to, CSQ_REASON_NONE,
	                now);
}

/*
 * u's next relax step (section 3c) on its needs in force: the needs it
 * drops go, the levels come down (never below 1), and u takes the
 * need-set of what is left, in the line of it, at its place (its key).
 * A step that changes nothing publishes nothing; else relaxed, then u
 * is matched if a free room may take it now. When no need-set is free
 * to intern the result, the step drops every need (the widest).
 * Returns 1 when u was matched (it waits no more).
 */
static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
policy_relax(struct csq *c, struct csq_user *u, uint64_t now)
{
	const struct csq_relax_step *r =
	    &u->queue->policy->relax[u->wait->relax_step];
	const struct csq_needset *ns = c->needsets[u->needs];
	struct csq_skill_list drop, left;
	const char *gone[CSQ_USER_NEEDS];
	struct csq_event ev;
	uint16_t to;
	uint32_t i, j, lowered = 0, ngone = 0;
	size_t off = 0;

	u->wait->relax_step++;
	csq_skills_parse(r->drop, CSQ_USER_NEEDS, &drop); /* checked */
	csq_event_begin(&ev, CSQ_EV_RELAXED, now);
	left.n = 0;
	for (i = 0; i < ns->n; i++) {
		for (j = 0; j < drop.n && !r->drop_all; j++)
			if (strcmp(drop.v[j].name, ns->v[i].name->name) == 0)
				break;
		if (r->drop_all || j < drop.n) {
			gone[ngone++] = ns->v[i].name->name;
			continue;
		}
		memcpy(left.v[left.n].name, ns->v[i].name->name,
		       ns->v[i].name->len + 1);
		left.v[left.n].level = ns->v[i].level;
		if (r->lower > 0 && ns->v[i].level > 1) {
			left.v[left.n].level = ns->v[i].level > r->lower
			                           ? ns->v[i].level - r->lower
			                           : 1;
			lowered = r->lower;
		}
		left.n++;
	}
	/* The names dropped in name order, whatever the order of the
	 * need-set's skills (their ids depend on the order skills were
	 * first seen, which a restored state does not share: fuzz_csq). */
	qsort(gone, ngone, sizeof(gone[0]), cmp_name);
	for (i = 0; i < ngone; i++)
		off +=
		    (size_t)snprintf(ev.dropped + off, sizeof(ev.dropped) - off,
		                     "%s%s", off > 0 ? "," : "", gone[i]);
	if (off == 0 && lowered == 0)
		return 0;
	if (csq_needset_get(c, &left, &to) != CSQ_OK) {
		to = 0; /* the widest: no need at all */
		strcpy(ev.dropped, ns->text);
	}
	csq_needline_leave(c, u);
	csq_needset_hold(c, to);
	csq_needset_release(c, u->needs);
	u->needs = to;
	ev.position = csq_needline_enter(c, u);
	csq_event_user(&ev, u);
	strcpy(ev.needs, csq_needset_text(c, to));
	ev.lowered = lowered;
	csq_emit(c, &ev);
	return csq_match_user(c, u, NULL, CSQ_REASON_NONE, now);
}

/*
 * u's step is due (its deadline at at <= now). Every aging point up to
 * now that comes before the overflow is a step, one event each while
 * the tier grows (a pass that comes late makes them all, not one per
 * pass), then the overflow if it is due; else the next step after now.
 */
void
csq_policy_act(struct csq *c, struct csq_user *u, uint64_t now)
{
	const struct csq_policy *p = u->queue->policy;
	struct csq_wait *w = u->wait;
	uint64_t at, limit = now, overflow_at, points, every, first;
	enum csq_deadline_kind kind;
	uint32_t max;

	if (!csq_policy_user_clocks(u) || w == NULL) {
		policy_wait_drop(c, u);
		return;
	}
	at = w->clock.node.key;
	overflow_at = p->overflow_after_s > 0
	                  ? w->joined_ms + csq_ms(p->overflow_after_s)
	                  : UINT64_MAX;
	if (overflow_at < limit)
		limit = overflow_at;
	kind = csq_deadline_kind(&w->clock);
	/* The relax steps due first: one that ends in a match ends it. */
	while (policy_relax_pending(u) &&
	       w->joined_ms + csq_ms(p->relax[w->relax_step].after_s) <= limit)
		if (policy_relax(c, u, now))
			return;
	if (!csq_policy_user_clocks(u)) {
		policy_wait_drop(c, u);
		return;
	}
	/* The first aging point not acted on: the clock's, or after a
	 * relax step the next point at or after it (a tie). */
	if (p->aging_every_s > 0 &&
	    (kind == CSQ_DL_AGING || kind == CSQ_DL_RELAX)) {
		every = csq_ms(p->aging_every_s);
		first = at;
		if (kind == CSQ_DL_RELAX)
			first = w->joined_ms +
			        (at > w->joined_ms
			             ? (at - w->joined_ms + every - 1) / every
			             : 1) *
			            every;
		points = first <= limit ? (limit - first) / every + 1 : 0;
		max = policy_aging_max(c, u->queue);
		for (; points > 0 && csq_user_tier(u) < max; points--)
			policy_age(c, u, now);
	}
	if (overflow_at <= now)
		policy_overflow(c, u, now);
	else
		policy_arm_after(c, u, now);
}

/*
 * u's clock, if the operation under way left it due (a NEEDS that starts
 * the steps again, measured from when u joined its line): its steps act
 * now, inside the operation. Left to the next pass of the deadlines, what
 * came of them would depend on when that pass runs (the memory engine's
 * timer or the next DEBUG CLOCK, csq.so's timer or csqd's reaper), and a
 * journal's replay, the module and the memory engine could part.
 */
void
csq_policy_settle(struct csq *c, struct csq_user *u, uint64_t now)
{
	struct csq_wait *w = u->wait;

	if (u->state != CSQ_USER_WAITING || (u->flags & CSQ_USER_PREFERRING) ||
	    w == NULL || !csq_deadline_running(&w->clock) ||
	    w->clock.node.key > now)
		return;
	switch (csq_deadline_kind(&w->clock)) {
	case CSQ_DL_OVERFLOW:
	case CSQ_DL_AGING:
	case CSQ_DL_RELAX:
		csq_policy_act(c, u, now);
		break;
	default:
		break;
	}
}

/* Each queue's policy pointer into v, and the lines of those whose
 * clocks changed armed anew. */
static int
clocks_differ(const struct csq_policy *a, const struct csq_policy *b)
{
	if (a == NULL || b == NULL)
		return a != b;
	return a->overflow_after_s != b->overflow_after_s ||
	       strcmp(a->overflow_to, b->overflow_to) != 0 ||
	       a->aging_every_s != b->aging_every_s ||
	       a->has_aging_max_tier != b->has_aging_max_tier ||
	       a->aging_max_tier != b->aging_max_tier ||
	       a->nrelax != b->nrelax ||
	       memcmp(a->relax, b->relax, sizeof(a->relax)) != 0;
}

static int
strategy_of(const struct csq_policy *p, enum csq_strategy dflt)
{
	return p != NULL && p->has_strategy ? (int)p->strategy : (int)dflt;
}

struct queues_walk {
	struct csq_queue **v;
	size_t n;
};

static void
queues_collect(void *arg, const char *key, size_t len, void *val)
{
	struct queues_walk *w = arg;

	(void)key, (void)len;
	w->v[w->n++] = val;
}

static int
queue_name_cmp(const void *a, const void *b)
{
	return strcmp((*(struct csq_queue *const *)a)->name,
	              (*(struct csq_queue *const *)b)->name);
}

static int
policy_cmp(const void *a, const void *b)
{
	return strcmp(((const struct csq_policy *)a)->name,
	              ((const struct csq_policy *)b)->name);
}

/*
 * The queues of the new policies are made (a policy holds a reference:
 * its queue exists, and keeps its numbers, for as long as the policy),
 * then every queue gets its new policy, and those whose clocks changed
 * have their users' clocks armed anew (one walk of their lines, once per
 * reload); the old policies' references go last, so that no queue in
 * both is freed in between. The steps the new policies make due (a
 * shorter overflow_after, a relax step passed already) act last, inside
 * the reload, as a pass of the deadlines at now would (in its order):
 * never at whatever time the next pass comes (csq_policy_settle).
 */
enum csq_status
csq_set_policies(struct csq *c, uint64_t now, const struct csq_policy *v,
                 size_t n)
{
	struct csq_policy *old = c->policies, *nv;
	size_t nold = c->npolicies, i, bad;
	struct queues_walk w;
	struct csq_line_node *node;
	const struct csq_policy *was;
	struct csq_queue *q;
	struct csq_line *l;
	uint32_t j;
	int rekey = 0;

	if (csq_policies_check(v, n, &c->limits, &bad) != CSQ_POLICY_OK)
		return CSQ_ERANGE;
	nv = csq_xmalloc((n + 1) * sizeof(*nv));
	if (n > 0)
		memcpy(nv, v, n * sizeof(*nv));
	qsort(nv, n, sizeof(*nv), policy_cmp);
	for (i = 0; i < n; i++)
		csq_queue_ref(
		    csq_queue_get(c, nv[i].name, strlen(nv[i].name), 1));
	c->policies = nv;
	c->npolicies = n;

	w.v = csq_xmalloc((csq_dict_len(c->queues) + 1) * sizeof(*w.v));
	w.n = 0;
	csq_dict_each(c->queues, queues_collect, &w);
	for (i = 0; i < w.n; i++) {
		q = w.v[i];
		was = q->policy;
		q->policy = csq_policy_find(c, q->name, q->namelen);
		if (strategy_of(was, c->limits.strategy) !=
		        strategy_of(q->policy, c->limits.strategy) ||
		    (was != NULL ? was->skill_order : 0) !=
		        (q->policy != NULL ? q->policy->skill_order : 0))
			rekey = 1;
		if (csq_queue_service_level(q) != q->counts.within_s)
			csq_qstats_relevel(q);
		csq_nobody_policy(c, q, now);
		if (!clocks_differ(was, q->policy))
			continue;
		for (j = 0; (l = csq_needline_line(q, j)) != NULL; j++)
			for (node = csq_line_first(l); node != NULL;
			     node = csq_line_next(node))
				policy_rearm(c, csq_line_node_value(node), now);
	}
	if (rekey)
		csq_servicers_rekey(c);
	/* Business hours (section 3c), queue by queue in the order of
	 * their names: open or closed now, with their events. */
	qsort(w.v, w.n, sizeof(*w.v), queue_name_cmp);
	for (i = 0; i < w.n; i++)
		csq_hours_apply(c, w.v[i], now);
	free(w.v);
	for (i = 0; i < nold; i++)
		csq_queue_unref(
		    c, csq_queue_get(c, old[i].name, strlen(old[i].name), 0));
	free(old);
	csq_expire(c, now);
	return CSQ_OK;
}
