/*
 * Preferred servicers (protocol-v2 section 5). A user who prefers servicer
 * S for a while waits in a line of S's own, one per queue S serves
 * (s->prefer[i] beside s->queues[i]), ordered by the same order key as the
 * queues' lines; it is in no queue's line meanwhile. So nobody else's
 * match ever meets it: the queue's line holds only users anyone may take,
 * and S alone looks at its prefer lines, beside its queues' heads, when it
 * has a free room (matcher.c). The window is a deadline of the user's
 * (kind CSQ_DL_PREFER, in the node its queue's clocks use while it is in
 * line: a user is in one place at a time). When the window closes, the
 * user goes into its queue's line at its order key, served at its arrival
 * order as if it had waited there.
 */
#include "state.h"

#include <string.h>

enum csq_status
csq_prefer_check(const struct csq_prefer_args *a)
{
	if (!a->has_prefer)
		return CSQ_OK;
	if (a->servicer == NULL ||
	    !csq_valid_id(a->servicer, strnlen(a->servicer, CSQ_ID_MAX + 1)))
		return CSQ_ESERVICER;
	if (a->seconds < 1 || a->seconds > CSQ_PREFER_MAX)
		return CSQ_ERANGE;
	return CSQ_OK;
}

int
csq_servicer_queue_index(const struct csq_servicer *s,
                         const struct csq_queue *q)
{
	uint32_t i;

	for (i = 0; i < s->nqueues; i++)
		if (s->queues[i] == q)
			return (int)i;
	return -1;
}

/* The servicer a PREFER names, when it may hold a window for queue q:
 * logged in, serving q, and with the skills of need-set needs. */
struct csq_servicer *
csq_prefer_target(const struct csq *c, const struct csq_prefer_args *a,
                  const struct csq_queue *q, uint16_t needs)
{
	struct csq_servicer *s;

	if (!a->has_prefer || (s = csq_servicer_get(c, a->servicer)) == NULL)
		return NULL;
	if (needs != 0 && !csq_skills_satisfy(s, c->needsets[needs], NULL))
		return NULL;
	return csq_servicer_queue_index(s, q) >= 0 ? s : NULL;
}

static struct csq_line **
prefer_line(struct csq_servicer *s, const struct csq_queue *q)
{
	int i = csq_servicer_queue_index(s, q);

	return i >= 0 ? &s->prefer[i] : NULL;
}

uint64_t
csq_prefer_insert(struct csq *c, struct csq_user *u, struct csq_servicer *s)
{
	struct csq_line **l = prefer_line(s, u->queue);

	if (*l == NULL)
		*l = csq_line_new(c->seed);
	u->flags |= CSQ_USER_PREFERRING;
	csq_user_wait(u)->prefer = s;
	u->queue->preferring++;
	return csq_line_insert_rank(*l, u->key, u);
}

void
csq_prefer_remove(struct csq_user *u)
{
	struct csq_line **l = prefer_line(u->wait->prefer, u->queue);

	csq_line_remove(*l, u->key);
	if (csq_line_len(*l) == 0) {
		csq_line_free(*l);
		*l = NULL;
	}
	u->queue->preferring--;
	u->flags &= (uint8_t)~CSQ_USER_PREFERRING;
	u->wait->prefer = NULL;
}

uint64_t
csq_prefer_position(const struct csq_user *u)
{
	const struct csq_servicer *s = u->wait->prefer;

	return csq_line_rank(s->prefer[csq_servicer_queue_index(s, u->queue)],
	                     u->key);
}

void
csq_prefer_window(struct csq *c, struct csq_user *u, uint32_t seconds,
                  uint64_t now)
{
	struct csq_wait *w = u->wait;

	w->prefer_s = seconds;
	w->clock.node.tag = CSQ_DL_PREFER;
	csq_deadline_set(c, &w->clock, now + csq_ms(seconds));
}

/*
 * u's window closes: out of the prefer line, prefer_ended (reason), into
 * its queue's line at its key. Returns its position there. The caller
 * matches it (at once, or at the end of its operation).
 */
uint64_t
csq_prefer_end(struct csq *c, struct csq_user *u, enum csq_reason reason,
               uint64_t now)
{
	struct csq_event ev;

	csq_event_begin(&ev, CSQ_EV_PREFER_ENDED, now);
	csq_event_user(&ev, u);
	memcpy(ev.servicer, u->wait->prefer->id, u->wait->prefer->idlen + 1);
	ev.reason = reason;
	csq_deadline_clear(c, &u->wait->clock);
	csq_prefer_remove(u);
	csq_emit(c, &ev);
	return csq_user_join_line(c, u, now);
}

/* The window's deadline: the user is matched like any other now. */
void
csq_prefer_expire(struct csq *c, struct csq_user *u, uint64_t now)
{
	csq_prefer_end(c, u, CSQ_REASON_TIMEOUT, now);
	csq_match_user(c, u, NULL, CSQ_REASON_NONE, now);
}

/* Every window of prefer line l ends (reason); the users go to st. */
static void
prefer_end_line(struct csq *c, struct csq_line *l, enum csq_reason reason,
                uint64_t now, struct csq_settle *st)
{
	struct csq_line_node *node;
	struct csq_user *u;

	/* Each end frees the line with its last user: stop before. */
	while (l != NULL && (node = csq_line_first(l)) != NULL) {
		u = csq_line_node_value(node);
		if (csq_line_len(l) == 1)
			l = NULL;
		csq_prefer_end(c, u, reason, now);
		csq_settle_back(st, u);
	}
}

/* s logs out or is lost: every window held for it ends. */
void
csq_prefer_servicer_gone(struct csq *c, struct csq_servicer *s,
                         enum csq_reason reason, uint64_t now,
                         struct csq_settle *st)
{
	uint32_t i;

	for (i = 0; i < s->nqueues; i++)
		prefer_end_line(c, s->prefer[i], reason, now, st);
}

/*
 * s is about to serve qs instead of its queues: the windows of the
 * queues it drops end (reason queues), and the prefer lines of those it
 * keeps follow them to their new places (out: the lines, in the order of
 * qs).
 */
void
csq_prefer_queues_change(struct csq *c, struct csq_servicer *s,
                         struct csq_queue *const *qs, uint32_t n,
                         struct csq_line **out, uint64_t now,
                         struct csq_settle *st)
{
	uint32_t i, j;

	for (j = 0; j < n; j++)
		out[j] = NULL;
	for (i = 0; i < s->nqueues; i++) {
		for (j = 0; j < n && qs[j] != s->queues[i]; j++)
			;
		if (j < n)
			out[j] = s->prefer[i];
		else
			prefer_end_line(c, s->prefer[i], CSQ_REASON_QUEUES, now,
			                st);
		s->prefer[i] = NULL;
	}
}
