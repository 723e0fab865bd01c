/*
 * A queue's numbers (QSTATS, protocol-v2 section 6): matched, abandoned by
 * reason, overflowed, the sum of the waits of the matched, and the last
 * CSQ_OUTCOMES outcomes for the service level's share. Each is counted
 * where it happens (a match, a LEAVE or timeout, an overflow), O(1).
 *
 * A wait here is the user's waited_ms, from its first arrival, counted in
 * the queue it was matched or abandoned in: a customer's "answered within
 * 20 s" is about its own wait, whatever queues it passed through.
 */
#include "orderkey.h"
#include "state.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static uint64_t
elapsed(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

static int
outcome_within(uint32_t wait_ms, uint32_t level_s)
{
	return wait_ms != CSQ_OUTCOME_ABANDONED &&
	       (uint64_t)wait_ms <= csq_ms(level_s);
}

static void
qstats_outcome(struct csq_queue *q, uint32_t wait_ms)
{
	struct csq_queue_counts *k = &q->counts;

	if (k->ring == NULL) {
		k->ring = csq_xmalloc(CSQ_OUTCOMES * sizeof(*k->ring));
		k->within_s = csq_queue_service_level(q);
	}
	if (k->ring_len == CSQ_OUTCOMES)
		k->within -= outcome_within(k->ring[k->ring_next], k->within_s);
	else
		k->ring_len++;
	k->ring[k->ring_next] = wait_ms;
	k->within += outcome_within(wait_ms, k->within_s);
	k->ring_next = (k->ring_next + 1) % CSQ_OUTCOMES;
}

void
csq_qstats_matched(struct csq_queue *q, uint64_t waited_ms)
{
	q->counts.matched++;
	q->counts.wait_ms_sum += waited_ms;
	csq_estimate_outcome(&q->est, waited_ms, 0);
	qstats_outcome(q, waited_ms < CSQ_OUTCOME_ABANDONED
	                      ? (uint32_t)waited_ms
	                      : CSQ_OUTCOME_ABANDONED - 1);
}

void
csq_qstats_abandoned(struct csq_queue *q, enum csq_reason reason,
                     uint64_t waited_ms)
{
	csq_estimate_outcome(&q->est, waited_ms, 1);
	if (reason == CSQ_REASON_TIMEOUT)
		q->counts.abandoned_timeout++;
	else
		q->counts.abandoned_leave++;
	qstats_outcome(q, CSQ_OUTCOME_ABANDONED);
}

/* The service level changed (a reload): the ring counted anew against it. */
void
csq_qstats_relevel(struct csq_queue *q)
{
	struct csq_queue_counts *k = &q->counts;
	uint32_t i;

	k->within_s = csq_queue_service_level(q);
	k->within = 0;
	for (i = 0; i < k->ring_len; i++)
		k->within += outcome_within(k->ring[i], k->within_s);
}

void
csq_qstats_free(struct csq_queue *q)
{
	free(q->counts.ring);
	q->counts.ring = NULL;
}

/*
 * The longest wait in q's line: its oldest user is the first of one of
 * the tiers (each tier's users are in arrival order), so one look per
 * tier, O(tiers log n).
 */
static uint64_t qstats_oldest_in(const struct csq_line *, uint64_t now);

static uint64_t
qstats_oldest(const struct csq_queue *q, uint64_t now)
{
	struct csq_line *l;
	uint64_t oldest = 0, o;
	uint32_t i;

	/* Each line of the queue (one per need-set) the same way. */
	for (i = 0; (l = csq_needline_line(q, i)) != NULL; i++)
		if ((o = qstats_oldest_in(l, now)) > oldest)
			oldest = o;
	return oldest;
}

static int
qstats_group_cmp(const void *a, const void *b)
{
	const struct csq_needline *x = *(const struct csq_needline *const *)a;
	const struct csq_needline *y = *(const struct csq_needline *const *)b;
	uint64_t lx = csq_line_len(x->line), ly = csq_line_len(y->line);

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(x->set->text, y->set->text);
}

static int
qstats_text_cmp(const void *a, const void *b)
{
	return strcmp(a, b); /* needs is the group's first member */
}

/* The largest groups of users with needs, by need-set. */
static void
qstats_groups(const struct csq_queue *q, struct csq_queue_stats *out)
{
	struct csq_needline *v[CSQ_NEEDSETS_MAX];
	uint32_t i, n = 0;

	for (i = 0; i < q->nnls; i++)
		if (csq_line_len(q->nls[i]->line) > 0)
			v[n++] = q->nls[i];
	qsort(v, n, sizeof(*v), qstats_group_cmp);
	for (i = 0; i < n && i < CSQ_QSTATS_GROUPS; i++) {
		memcpy(out->groups[i].needs, v[i]->set->text,
		       v[i]->set->textlen + 1);
		out->groups[i].waiting = csq_line_len(v[i]->line);
	}
	out->ngroups = i;
	qsort(out->groups, out->ngroups, sizeof(out->groups[0]),
	      qstats_text_cmp);
}

static uint64_t
qstats_oldest_in(const struct csq_line *l, uint64_t now)
{
	struct csq_line_node *node;
	const struct csq_user *u;
	uint64_t oldest = 0;
	uint32_t t;

	for (t = 0; t < CSQ_TIERS; t++) {
		node = csq_line_seek(l, (uint64_t)(CSQ_KEY_TIER_MAX - t)
		                            << CSQ_KEY_SEQ_BITS);
		if (node == NULL)
			continue;
		u = csq_line_node_value(node);
		if (csq_user_tier(u) == t &&
		    elapsed(now, u->arrival_ms) > oldest)
			oldest = elapsed(now, u->arrival_ms);
	}
	return oldest;
}

void
csq_qstats_fill(const struct csq *c, const struct csq_queue *q, uint64_t now,
                struct csq_queue_stats *out)
{
	const struct csq_queue_counts *k = &q->counts;

	memset(out, 0, sizeof(*out));
	memcpy(out->queue, q->name, q->namelen + 1);
	out->waiting = csq_needline_count(q) + q->preferring;
	out->oldest_wait_ms = qstats_oldest(q, now);
	qstats_groups(q, out);
	out->eta_ms = csq_estimate_new_arrival(c, q, now);
	out->servicers = q->nservicers;
	out->free_rooms = q->rooms_free;
	out->matched_total = k->matched;
	out->abandoned_leave = k->abandoned_leave;
	out->abandoned_timeout = k->abandoned_timeout;
	out->abandoned_total = k->abandoned_leave + k->abandoned_timeout;
	out->overflowed_total = k->overflowed;
	out->wait_ms_sum = k->wait_ms_sum;
	out->avg_wait_ms = k->matched > 0 ? k->wait_ms_sum / k->matched : 0;
	out->service_level_s = csq_queue_service_level(q);
	out->outcomes = k->ring_len;
	out->outcomes_within = k->within;
	/* Business hours (section 3c). */
	out->hours = q->policy != NULL && q->policy->hours.on;
	out->open = !csq_queue_closed(q);
	out->next_change_ms = csq_hours_next_ms(q);
	/* Rounded down: 100 only when every one of them was within. */
	out->service_level_pct =
	    k->ring_len > 0 ? (int32_t)((uint64_t)k->within * 100 / k->ring_len)
	                    : -1;
	/* Section 3c: a nobody policy's spell, -1 while somebody serves. */
	out->nobody_ms = CSQ_QSTATS_NO_NOBODY;
	if (q->nobody != NULL)
		out->nobody_ms = q->nobody->since != 0
		                     ? (int64_t)elapsed(now, q->nobody->since)
		                     : -1;
}
