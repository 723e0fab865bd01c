/*
 * The public operations of libcsq on users and servicers (rooms, offers
 * and transfers have files of their own). Each validates all of its input
 * before it changes anything, so an error leaves the state as it was; then
 * it changes the state, emits the events in causal order and runs the
 * matcher where a match may have become possible.
 */
#include "orderkey.h"
#include "state.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each table's seed: csq_new's, made different for each. */
#define SEED_USERS     UINT64_C(0x9e3779b97f4a7c15)
#define SEED_SERVICERS UINT64_C(0xc2b2ae3d27d4eb4f)
#define SEED_QUEUES    UINT64_C(0x165667b19e3779f9)

/* Length of a NUL-terminated id if it is a valid one, else 0. */
static size_t
id_len(const char *s)
{
	size_t len;

	if (s == NULL)
		return 0;
	len = strnlen(s, CSQ_ID_MAX + 1);
	return csq_valid_id(s, len) ? len : 0;
}

static uint64_t
elapsed(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

uint32_t
csq_user_tier(const struct csq_user *u)
{
	struct csq_key k;

	csq_key_unpack(u->key, &k);
	return k.tier;
}

struct csq_queue *
csq_queue_get(struct csq *c, const char *name, size_t len, int create)
{
	struct csq_queue *q = csq_dict_get(c->queues, name, len);

	if (q != NULL || !create)
		return q;
	q = csq_xcalloc(1, sizeof(*q) + len + 1);
	q->line = csq_line_new(c->seed);
	q->nls_gen = ++c->nls_gen; /* no servicer's takes name it */
	csq_heap_init(&q->avail);
	csq_hours_init(q);
	q->policy = csq_policy_find(c, name, len);
	q->namelen = len;
	memcpy(q->name, name, len);
	q->name[len] = '\0';
	csq_dict_put(c->queues, q->name, len, q);
	csq_nameset_add(c->queue_names, q->name, q);
	return q;
}

/*
 * The queue of that name, created when it does not exist and fewer than
 * max_queues do; NULL when it would be one too many (CSQ_EQUEUES).
 */
struct csq_queue *
csq_queue_open(struct csq *c, const char *name, size_t len)
{
	struct csq_queue *q = csq_dict_get(c->queues, name, len);

	if (q == NULL && csq_dict_len(c->queues) >= c->limits.max_queues)
		return NULL;
	return q != NULL ? q : csq_queue_get(c, name, len, 1);
}

void
csq_queue_ref(struct csq_queue *q)
{
	q->refs++;
}

static void
queue_destroy(struct csq *c, struct csq_queue *q)
{
	csq_needline_free_queue(c, q);
	csq_line_free(q->line);
	csq_heap_free(&q->avail);
	csq_qstats_free(q);
	free(q);
}

/* Frees q once no user is in it and no servicer serves it. */
void
csq_queue_unref(struct csq *c, struct csq_queue *q)
{
	if (q->refs > 0 && --q->refs > 0)
		return;
	csq_dict_del(c->queues, q->name, q->namelen);
	csq_nameset_del(c->queue_names, q->name);
	csq_nobody_free(c, q);
	csq_hours_free(c, q);
	queue_destroy(c, q);
}

void
csq_event_begin(struct csq_event *ev, enum csq_event_type type, uint64_t now)
{
	ev->type = type;
	ev->id = 0;
	ev->ts_ms = now;
	ev->user[0] = ev->queue[0] = ev->from_queue[0] = '\0';
	ev->servicer[0] = ev->room[0] = ev->queues[0] = '\0';
	ev->tier = 0;
	ev->position = ev->waited_ms = 0;
	ev->offered_ms = ev->expires_ms = ev->until_ms = 0;
	ev->has_offered_ms = 0;
	ev->capacity = 0;
	ev->reason = CSQ_REASON_NONE;
	ev->needs[0] = ev->dropped[0] = '\0';
	ev->lowered = 0;
	ev->eta_ms = -1;
	ev->has_eta = 0;
	ev->skills[0] = ev->prefer[0] = '\0';
	ev->prefer_ms = 0;
}

void
csq_event_user(struct csq_event *ev, const struct csq_user *u)
{
	memcpy(ev->user, u->id, csq_user_idlen(u) + 1);
	memcpy(ev->queue, u->queue->name, u->queue->namelen + 1);
	ev->tier = csq_user_tier(u);
}

/* What a replay of the record needs of u beyond csq_event_user: its
 * needs in force (docs/day.md). */
void
csq_event_needs(const struct csq *c, struct csq_event *ev,
                const struct csq_user *u)
{
	const char *t = csq_needset_text(c, u->needs);

	memcpy(ev->needs, t, strlen(t) + 1);
}

/* u's window for its preferred servicer, when it waits in one. */
void
csq_event_prefer(struct csq_event *ev, const struct csq_user *u, uint64_t now)
{
	if (u->state != CSQ_USER_WAITING || !(u->flags & CSQ_USER_PREFERRING))
		return;
	memcpy(ev->prefer, u->wait->prefer->id, u->wait->prefer->idlen + 1);
	ev->prefer_ms = elapsed(u->wait->clock.node.key, now);
}

void
csq_event_room(struct csq_event *ev, const struct csq_room *r)
{
	memcpy(ev->servicer, r->servicer->id, r->servicer->idlen + 1);
	csq_room_name(r->servicer, r->index, ev->room);
}

/* Numbered whether anyone listens: a replay numbers them as the run did. */
void
csq_emit(struct csq *c, struct csq_event *ev)
{
	ev->id = ++c->event_id;
	if (c->emit != NULL)
		c->emit(c->emit_arg, ev);
}

uint64_t
csq_last_event_id(const struct csq *c)
{
	return c->event_id;
}

uint64_t
csq_user_position(const struct csq_user *u)
{
	return csq_needline_position(u);
}

void
csq_user_deadline(struct csq *c, struct csq_user *u, uint64_t now)
{
	if (u->ttl_s > 0)
		csq_deadline_set(c, &u->deadline, now + csq_ms(u->ttl_s));
	else
		csq_deadline_clear(c, &u->deadline);
}

uint64_t
csq_user_join_line(struct csq *c, struct csq_user *u, uint64_t now)
{
	uint64_t pos = csq_needline_enter(c, u);

	csq_policy_start(c, u, now);
	return pos;
}

struct csq_wait *
csq_user_wait(struct csq_user *u)
{
	if (u->wait == NULL) {
		u->wait = csq_xcalloc(1, sizeof(*u->wait));
		csq_deadline_init(&u->wait->clock, CSQ_DL_OVERFLOW);
		u->wait->user = u;
	}
	return u->wait;
}

void
csq_user_wait_free(struct csq *c, struct csq_user *u)
{
	if (u->wait == NULL)
		return;
	csq_deadline_clear(c, &u->wait->clock);
	free(u->wait);
	u->wait = NULL;
}

void
csq_user_leave_line(struct csq *c, struct csq_user *u)
{
	if (u->flags & CSQ_USER_PREFERRING)
		csq_prefer_remove(u);
	else
		csq_needline_leave(c, u);
	csq_user_wait_free(c, u);
}

uint64_t
csq_user_wait_position(const struct csq_user *u)
{
	if (u->flags & CSQ_USER_PREFERRING)
		return csq_prefer_position(u);
	return csq_user_position(u);
}

/* Its queue's clocks restart there, as its TTL does. */
uint64_t
csq_user_requeue(struct csq *c, struct csq_user *u, uint64_t now)
{
	uint64_t pos;

	u->state = CSQ_USER_WAITING;
	u->room = NULL;
	pos = csq_user_join_line(c, u, now);
	c->stats.waiting++;
	csq_user_deadline(c, u, now);
	return pos;
}

/* Frees u, which must be in no line and no room any more. */
void
csq_user_free(struct csq *c, struct csq_user *u)
{
	csq_deadline_clear(c, &u->deadline);
	if (u->state == CSQ_USER_WAITING)
		csq_user_wait_free(c, u);
	csq_needset_release(c, u->needs);
	csq_dict_remove(c->users, u);
	csq_queue_unref(c, u->queue);
	free(u);
}

struct csq *
csq_new(const struct csq_limits *limits, uint64_t seed, csq_emit_fn *emit,
        void *arg)
{
	struct csq *c = csq_xcalloc(1, sizeof(*c));
	struct csq_queue *q;

	c->limits = *limits;
	c->seed = seed;
	c->emit = emit;
	c->emit_arg = arg;
	c->users = csq_dict_new_intrusive(seed ^ SEED_USERS,
	                                  offsetof(struct csq_user, link),
	                                  offsetof(struct csq_user, id));
	c->servicers = csq_dict_new(seed ^ SEED_SERVICERS);
	c->queues = csq_dict_new(seed ^ SEED_QUEUES);
	c->queue_names = csq_nameset_new(seed ^ SEED_QUEUES);
	c->servicer_ids = csq_nameset_new(seed ^ SEED_SERVICERS);
	csq_heap_init(&c->deadlines);
	csq_skills_init(c);
	/* The default queue exists always: it holds a reference of its own. */
	q = csq_queue_get(c, CSQ_DEFAULT_QUEUE, strlen(CSQ_DEFAULT_QUEUE), 1);
	csq_queue_ref(q);
	return c;
}

static void
free_user(void *arg, const char *key, size_t len, void *val)
{
	struct csq_user *u = val;

	(void)arg, (void)key, (void)len;
	if (u->state == CSQ_USER_WAITING)
		free(u->wait);
	free(u);
}

static void
free_servicer(void *arg, const char *key, size_t len, void *val)
{
	struct csq_servicer *s = val;
	uint32_t i;

	(void)arg, (void)key, (void)len;
	for (i = 0; i < s->nrooms; i++)
		free(s->rooms[i]);
	for (i = 0; i < s->nqueues; i++)
		csq_line_free(s->prefer[i]);
	csq_navail_unaccount(s); /* out of the need-lines' heaps */
	csq_navail_free(s);
	csq_servicer_sat_free(s);
	free(s->rooms);
	free(s);
}

static void
free_queue(void *arg, const char *key, size_t len, void *val)
{
	(void)key, (void)len;
	/* The heap goes whole: the nobody state, not its deadline. */
	free(((struct csq_queue *)val)->nobody);
	queue_destroy(arg, val);
}

void
csq_free(struct csq *c)
{
	if (c == NULL)
		return;
	csq_dict_each(c->users, free_user, NULL);
	csq_dict_each(c->servicers, free_servicer, NULL);
	csq_dict_each(c->queues, free_queue, c);
	csq_dict_free(c->users);
	csq_dict_free(c->servicers);
	csq_dict_free(c->queues);
	csq_nameset_free(c->queue_names);
	csq_nameset_free(c->servicer_ids);
	csq_heap_free(&c->deadlines);
	csq_skills_free(c);
	free(c->policies);
	free(c->nobody_dirty);
	free(c);
}

void
csq_set_limits(struct csq *c, const struct csq_limits *limits)
{
	enum csq_strategy was = c->limits.strategy;

	c->limits = *limits;
	if (limits->strategy != was)
		csq_servicers_rekey(c);
}

const struct csq_limits *
csq_get_limits(const struct csq *c)
{
	return &c->limits;
}

/* Servicers. */

/* The queues s serves, as servicer_up and SERVICERS give them: "a,b,c". */
static void
servicer_queue_list(const struct csq_servicer *s, char out[CSQ_QUEUE_LIST_MAX])
{
	size_t off = 0;
	uint32_t i;

	for (i = 0; i < s->nqueues; i++) {
		if (i > 0)
			out[off++] = ',';
		memcpy(out + off, s->queues[i]->name, s->queues[i]->namelen);
		off += s->queues[i]->namelen;
	}
	out[off] = '\0';
}

static void
servicer_info(const struct csq *c, const struct csq_servicer *s, uint64_t now,
              struct csq_servicer_info *out)
{
	memcpy(out->id, s->id, s->idlen + 1);
	out->status = s->status;
	out->capacity = s->capacity;
	out->active = s->active;
	out->ttl_s = s->ttl_s;
	out->idle_ms = elapsed(now, s->last_ms);
	out->offer_s = s->offer_s;
	out->wrapup_s = s->wrapup_s;
	out->missed = s->missed;
	out->paused_by = csq_servicer_paused_by(c, s);
	out->resting_ms = csq_servicer_resting_ms(s, now);
	out->handled_total = s->handled;
	out->handle_ms_total = s->handle_ms;
	servicer_queue_list(s, out->queues);
	csq_servicer_skills_text(s, out->skills);
}

/*
 * Resolves a heartbeat's queue list into queues (created, not yet
 * referenced), duplicates collapsed. Nothing is created unless all are valid.
 */
static enum csq_status
heartbeat_queues(struct csq *c, const struct csq_heartbeat_args *a,
                 struct csq_queue **out, uint32_t *n)
{
	size_t i, j, len[CSQ_SERVICER_QUEUES], fresh = 0;
	uint32_t k = 0;
	int dup[CSQ_SERVICER_QUEUES];

	if (a->nqueues < 1 || a->nqueues > CSQ_SERVICER_QUEUES)
		return CSQ_ERANGE;
	for (i = 0; i < a->nqueues; i++)
		if ((len[i] = id_len(a->queues[i])) == 0)
			return CSQ_EQUEUE;
	for (i = 0; i < a->nqueues; i++) {
		for (j = 0; j < i; j++)
			if (len[j] == len[i] &&
			    memcmp(a->queues[j], a->queues[i], len[i]) == 0)
				break;
		if (!(dup[i] = j < i) &&
		    csq_dict_get(c->queues, a->queues[i], len[i]) == NULL)
			fresh++;
	}
	/* All of them or none: max_queues counts the new names together. */
	if (fresh > 0 && csq_dict_len(c->queues) + fresh > c->limits.max_queues)
		return CSQ_EQUEUES;
	for (i = 0; i < a->nqueues; i++)
		if (!dup[i])
			out[k++] = csq_queue_get(c, a->queues[i], len[i], 1);
	*n = k;
	return CSQ_OK;
}

/*
 * The windows of users preferring s in the queues it drops end (reason
 * queues) before anything else changes; the prefer lines of the queues
 * it keeps follow them.
 */
static void
servicer_set_queues(struct csq *c, struct csq_servicer *s,
                    struct csq_queue **qs, uint32_t n, uint64_t now,
                    struct csq_settle *st)
{
	struct csq_line *lines[CSQ_SERVICER_QUEUES];
	uint32_t i;

	csq_prefer_queues_change(c, s, qs, n, lines, now, st);
	/* Reference the new set before dropping the old: shared queues
	 * must not be freed in between. */
	for (i = 0; i < n; i++) {
		csq_queue_ref(qs[i]);
		qs[i]->nservicers++;
	}
	for (i = 0; i < s->nqueues; i++) {
		s->queues[i]->nservicers--;
		csq_queue_unref(c, s->queues[i]);
	}
	for (i = 0; i < n; i++) {
		s->queues[i] = qs[i];
		s->prefer[i] = lines[i];
		csq_heap_node_init(&s->avail[i].node);
		s->avail[i].servicer = s;
	}
	s->nqueues = n;
}

/* servicer_up at a login; servicer_updated when a HEARTBEAT changed
 * what a replay of the record needs (capacity, queues, skills). */
static void
servicer_event(struct csq *c, enum csq_event_type type,
               const struct csq_servicer *s, uint64_t now)
{
	struct csq_event ev;

	csq_event_begin(&ev, type, now);
	memcpy(ev.servicer, s->id, s->idlen + 1);
	ev.capacity = s->capacity;
	servicer_queue_list(s, ev.queues);
	csq_servicer_skills_text(s, ev.skills);
	csq_emit(c, &ev);
}

/* What servicer_updated tells of s, to see whether a HEARTBEAT changed
 * it: computed only for a heartbeat that names one of them. */
struct servicer_said {
	uint32_t capacity;
	char queues[CSQ_QUEUE_LIST_MAX];
	char skills[CSQ_SKILLS_TEXT_MAX];
};

static void
servicer_said(const struct csq_servicer *s, struct servicer_said *out)
{
	out->capacity = s->capacity;
	servicer_queue_list(s, out->queues);
	csq_servicer_skills_text(s, out->skills);
}

enum csq_status
csq_heartbeat(struct csq *c, uint64_t now, const struct csq_heartbeat_args *a,
              struct csq_servicer_info *out)
{
	struct csq_queue *qs[CSQ_SERVICER_QUEUES];
	struct csq_servicer *s;
	struct csq_settle settle;
	struct csq_skill_list skills;
	struct servicer_said before, after;
	size_t idlen;
	uint32_t nq = 0;
	int login, said;
	enum csq_status st;

	if ((idlen = id_len(a->servicer)) == 0)
		return CSQ_ESERVICER;
	if (a->has_capacity &&
	    (a->capacity < 1 || a->capacity > CSQ_CAPACITY_MAX))
		return CSQ_ERANGE;
	if (a->has_ttl && (a->ttl_s < 1 || a->ttl_s > CSQ_TTL_MAX))
		return CSQ_ERANGE;
	if (a->has_offer && a->offer_s > CSQ_OFFER_MAX)
		return CSQ_ERANGE;
	if (a->has_wrapup && a->wrapup_s > CSQ_WRAPUP_MAX)
		return CSQ_ERANGE;
	if (a->has_skills &&
	    csq_skills_parse(a->skills, CSQ_SERVICER_SKILLS, &skills) != CSQ_OK)
		return CSQ_ESKILL;
	if (a->has_queues && (st = heartbeat_queues(c, a, qs, &nq)) != CSQ_OK)
		return st;

	s = csq_dict_get(c->servicers, a->servicer, idlen);
	if ((login = s == NULL)) {
		s = csq_xcalloc(1, sizeof(*s) + idlen + 1);
		s->idlen = idlen;
		memcpy(s->id, a->servicer, idlen);
		s->status = CSQ_SERVICER_READY;
		s->ttl_s = c->limits.servicer_ttl_s;
		s->offer_s = c->limits.offer_timeout_s;
		s->wrapup_s = c->limits.wrapup_s;
		csq_deadline_init(&s->deadline, CSQ_DL_SERVICER);
		csq_deadline_init(&s->retry, CSQ_DL_RETRY);
		csq_servicer_set_capacity(s, 1);
		if (nq == 0) {
			qs[nq++] = csq_queue_get(c, CSQ_DEFAULT_QUEUE,
			                         strlen(CSQ_DEFAULT_QUEUE), 1);
		}
		s->last_order = ++c->order;
		s->last_ms = now;
		csq_dict_put(c->servicers, s->id, idlen, s);
		csq_nameset_add(c->servicer_ids, s->id, s);
		c->stats.servicers++;
	} else
		csq_servicer_unaccount(c, s);
	if ((said = !login && (a->has_capacity || nq > 0 || a->has_skills)))
		servicer_said(s, &before);

	memset(&settle, 0, sizeof(settle));
	if (a->has_capacity)
		csq_servicer_set_capacity(s, a->capacity);
	if (nq > 0)
		servicer_set_queues(c, s, qs, nq, now, &settle);
	if (a->has_ttl)
		s->ttl_s = a->ttl_s;
	/* Offers and wrap-ups under way keep the length they started with. */
	if (a->has_offer)
		s->offer_s = a->offer_s;
	if (a->has_wrapup)
		s->wrapup_s = a->wrapup_s;
	if (a->has_skills)
		csq_servicer_set_skills(c, s, &skills);
	csq_deadline_set(c, &s->deadline, now + csq_ms(s->ttl_s));
	csq_servicer_account(c, s);
	if (login)
		servicer_event(c, CSQ_EV_SERVICER_UP, s, now);
	else if (said) {
		servicer_said(s, &after);
		if (before.capacity != after.capacity ||
		    strcmp(before.queues, after.queues) != 0 ||
		    strcmp(before.skills, after.skills) != 0)
			servicer_event(c, CSQ_EV_SERVICER_UPDATED, s, now);
	}
	/* The users whose windows ended go first, as any put back. */
	csq_settle_refill(&settle, s);
	csq_settle(c, &settle, now);
	servicer_info(c, s, now, out);
	return CSQ_OK;
}

enum csq_status
csq_pause(struct csq *c, uint64_t now, const char *sid)
{
	struct csq_settle st;
	struct csq_servicer *s;

	if (id_len(sid) == 0)
		return CSQ_ESERVICER;
	if ((s = csq_servicer_get(c, sid)) == NULL)
		return CSQ_ENOTFOUND;
	if (s->status == CSQ_SERVICER_PAUSED)
		return CSQ_OK;
	memset(&st, 0, sizeof(st));
	csq_servicer_pause(c, s, now, CSQ_REASON_PAUSE, &st);
	csq_settle(c, &st, now);
	return CSQ_OK;
}

/*
 * RESUME says "ready for users now", whatever the status: the missed-offer
 * count starts again and a retry window ends; servicer_resumed only when
 * the status changes or a retry window ends early.
 */
enum csq_status
csq_resume(struct csq *c, uint64_t now, const char *sid)
{
	struct csq_servicer *s;
	struct csq_event ev;
	int tell;

	if (id_len(sid) == 0)
		return CSQ_ESERVICER;
	if ((s = csq_servicer_get(c, sid)) == NULL)
		return CSQ_ENOTFOUND;
	/* A rest that RESUME cuts short is told as a resume: no deadline
	 * will say that the servicer takes users again. */
	tell = s->status == CSQ_SERVICER_PAUSED ||
	       csq_servicer_resting_ms(s, now) > 0;
	csq_servicer_unaccount(c, s);
	s->status = CSQ_SERVICER_READY;
	s->missed = 0;
	csq_deadline_clear(c, &s->retry);
	csq_servicer_account(c, s);
	if (tell) {
		csq_event_begin(&ev, CSQ_EV_SERVICER_RESUMED, now);
		memcpy(ev.servicer, s->id, s->idlen + 1);
		csq_emit(c, &ev);
	}
	csq_match_servicer(c, s, now);
	csq_nobody_settle(c, now);
	return CSQ_OK;
}

enum csq_status
csq_logout(struct csq *c, uint64_t now, const char *sid, uint64_t *requeued)
{
	struct csq_servicer *s;

	*requeued = 0;
	if (id_len(sid) == 0)
		return CSQ_ESERVICER;
	if ((s = csq_servicer_get(c, sid)) != NULL)
		*requeued = csq_servicer_remove(c, s, now, CSQ_REASON_LOGOUT);
	return CSQ_OK;
}

/* Users. */

static struct csq_user *
user_get(const struct csq *c, const char *uid)
{
	return csq_dict_get(c->users, uid, strlen(uid));
}

/* pos: the position of a waiting u when known, else 0. */
void
csq_user_info_at(const struct csq *c, const struct csq_user *u, uint64_t now,
                 uint64_t pos, struct csq_user_info *out)
{
	const struct csq_room *r;

	memset(out, 0, sizeof(*out));
	out->state = (enum csq_user_state)u->state;
	memcpy(out->queue, u->queue->name, u->queue->namelen + 1);
	out->tier = csq_user_tier(u);
	out->waited_ms = elapsed(now, u->arrival_ms);
	out->eta_ms = -1;
	memcpy(out->needs, csq_needset_text(c, u->needs),
	       strlen(csq_needset_text(c, u->needs)) + 1);
	out->relax_ms = csq_policy_relax_ms(u, now);
	if (u->state == CSQ_USER_WAITING) {
		out->position = pos != 0 ? pos : csq_user_wait_position(u);
		if (u->flags & CSQ_USER_PREFERRING) {
			memcpy(out->prefer, u->wait->prefer->id,
			       u->wait->prefer->idlen + 1);
			out->prefer_ms = elapsed(u->wait->clock.node.key, now);
		}
		out->eta_ms = csq_estimate_user(u, out->position, now);
		return;
	}
	r = u->room;
	memcpy(out->servicer, r->servicer->id, r->servicer->idlen + 1);
	csq_room_name(r->servicer, r->index, out->room);
	out->since_ms = elapsed(now, r->since_ms);
	if (u->state == CSQ_USER_OFFERED) {
		out->expires_in_ms = elapsed(r->deadline.node.key, now);
		out->eta_ms = 0;
	}
}

static void
user_info(const struct csq *c, const struct csq_user *u, uint64_t now,
          struct csq_user_info *out)
{
	csq_user_info_at(c, u, now, 0, out);
}

/* pos: u's position, which its insert into the line told. */
static void
user_event(struct csq *c, enum csq_event_type type, const struct csq_user *u,
           const struct csq_queue *from, uint64_t pos, enum csq_reason reason,
           uint64_t now)
{
	struct csq_event ev;

	csq_event_begin(&ev, type, now);
	csq_event_user(&ev, u);
	if (type == CSQ_EV_RESCORED)
		csq_event_needs(c, &ev, u);
	ev.position = pos;
	ev.reason = reason;
	if (from != NULL)
		memcpy(ev.from_queue, from->name, from->namelen + 1);
	csq_emit(c, &ev);
}

/* A new arrival's queued, with its estimate. */
static void
queued_event(struct csq *c, const struct csq_user *u, uint64_t pos,
             int64_t eta_ms, uint64_t now)
{
	struct csq_event ev;

	csq_event_begin(&ev, CSQ_EV_QUEUED, now);
	csq_event_user(&ev, u);
	csq_event_needs(c, &ev, u);
	csq_event_prefer(&ev, u, now);
	ev.position = pos;
	ev.eta_ms = eta_ms;
	ev.has_eta = 1;
	csq_emit(c, &ev);
}

/* Users waiting in q: in its line and held for a preferred servicer. */
static uint64_t
queue_length(const struct csq_queue *q)
{
	return csq_needline_count(q) + q->preferring;
}

/* u, waiting where it waits, takes key (a new tier) in the same place:
 * its clocks or its window go on. */
static uint64_t
user_rekey(struct csq *c, struct csq_user *u, uint64_t key)
{
	struct csq_servicer *s;

	if (u->flags & CSQ_USER_PREFERRING) {
		s = u->wait->prefer;
		csq_prefer_remove(u);
		u->key = key;
		return csq_prefer_insert(c, u, s);
	}
	csq_needline_leave(c, u);
	u->key = key;
	return csq_needline_enter(c, u);
}

/*
 * A waiting user changes tier, queue or the servicer it waits for
 * (want: NULL for its queue's line), and keeps its arrival. window: the
 * seconds of a new window, or 0 to keep the one it has (want is then the
 * servicer it waits for already). A change of queue or place is a return
 * to a line: the clocks of the new line start. A move to a place with a
 * free room is a match (then only matched is published, and to the
 * queue left too, with from_queue); else rescored, reason enqueue, when
 * the tier, the queue or the needs changed (the record's replay plays
 * them: protocol.md section 3c). A window set again alone moves nothing
 * and publishes nothing; a move between the queue's line and a window
 * (PREFER alone) publishes nothing either (protocol.md section 4).
 */
static void
user_set_needs(struct csq *c, struct csq_user *u, uint16_t needs)
{
	csq_needset_hold(c, needs);
	csq_needset_release(c, u->needs);
	u->needs = needs;
}

static void
user_move(struct csq *c, struct csq_user *u, struct csq_queue *to,
          uint32_t tier, uint16_t needs, struct csq_servicer *want,
          uint32_t window, uint64_t now)
{
	struct csq_queue *from = u->queue;
	struct csq_servicer *had =
	    (u->flags & CSQ_USER_PREFERRING) ? u->wait->prefer : NULL;
	uint64_t ends = had != NULL ? u->wait->clock.node.key : 0;
	uint32_t length = had != NULL ? u->wait->prefer_s : 0;
	int moved = to != from, relined = needs != u->needs;
	struct csq_key k;
	uint64_t pos;
	uint32_t k0_tier;

	csq_key_unpack(u->key, &k);
	k0_tier = k.tier;
	if (!moved && want == had) {
		if (window > 0)
			csq_prefer_window(c, u, window, now);
		if (tier == k.tier && !relined)
			return;
		k.tier = tier;
		if (relined && !(u->flags & CSQ_USER_PREFERRING)) {
			/* Another line of the queue, the same place. */
			csq_needline_leave(c, u);
			user_set_needs(c, u, needs);
			u->key = csq_key_pack(&k);
			pos = csq_needline_enter(c, u);
			csq_policy_refresh(c, u, now);
		} else {
			user_set_needs(c, u, needs);
			pos = user_rekey(c, u, csq_key_pack(&k));
		}
	} else {
		csq_user_leave_line(c, u);
		user_set_needs(c, u, needs);
		k.tier = tier;
		u->key = csq_key_pack(&k);
		if (moved) {
			csq_queue_ref(to);
			u->queue = to;
			csq_estimate_arrival(&to->est, tier, now);
		}
		if (want != NULL) {
			pos = csq_prefer_insert(c, u, want);
			if (window > 0)
				csq_prefer_window(c, u, window, now);
			else { /* the window it had goes on */
				u->wait->prefer_s = length;
				u->wait->clock.node.tag = CSQ_DL_PREFER;
				csq_deadline_set(c, &u->wait->clock, ends);
			}
		} else
			pos = csq_user_join_line(c, u, now);
	}
	if (!csq_match_user(c, u, moved ? from : NULL, CSQ_REASON_ENQUEUE,
	                    now) &&
	    (moved || tier != k0_tier || relined))
		user_event(c, CSQ_EV_RESCORED, u, moved ? from : NULL, pos,
		           CSQ_REASON_ENQUEUE, now);
	if (moved)
		csq_queue_unref(c, from);
}

/* A queue that was looked up with create but got no reference goes. */
static void
queue_drop_unused(struct csq *c, struct csq_queue *q)
{
	if (q->refs == 0)
		csq_queue_unref(c, q);
}

/*
 * ENQUEUE of a user who waits already. Its queue stays when a transfer
 * chose it, or when the queue named is one it overflowed from (a
 * frontend that repeats its ENQUEUE must not pull it back). PREFER
 * replaces its window (or closes it, naming a servicer that cannot hold
 * one); without PREFER a window goes on while its servicer serves the
 * queue.
 */
static enum csq_status
enqueue_again(struct csq *c, uint64_t now, struct csq_user *u,
              const struct csq_enqueue_args *a, size_t qlen, uint16_t needs,
              uint64_t *opens_ms)
{
	struct csq_servicer *want = NULL;
	struct csq_queue *q;
	uint32_t window = 0;
	enum csq_status st;

	if (a->has_queue && !(u->flags & CSQ_USER_TRANSFERRED) &&
	    !csq_policy_overflowed_from(c, u, a->queue, qlen)) {
		if ((q = csq_queue_open(c, a->queue, qlen)) == NULL)
			return CSQ_EQUEUES;
		/* Business hours, then nobody there: a queue's own users
		 * stay (section 3c). */
		if (q != u->queue &&
		    (st = csq_hours_route(c, &q, opens_ms)) != CSQ_OK)
			return st;
		if (q != u->queue && (st = csq_nobody_route(c, &q)) != CSQ_OK)
			return st;
		if (q != u->queue &&
		    queue_length(q) >= csq_queue_max_length(c, q)) {
			queue_drop_unused(c, q);
			return CSQ_EFULL;
		}
		if (q != u->queue)
			u->flags &= (uint8_t)~CSQ_USER_OVERFLOWED;
	} else
		q = u->queue;
	if (a->prefer.has_prefer) {
		want = csq_prefer_target(c, &a->prefer, q,
		                         a->has_needs ? needs : u->needs);
		window = want != NULL ? a->prefer.seconds : 0;
	} else if ((u->flags & CSQ_USER_PREFERRING) &&
	           csq_servicer_queue_index(u->wait->prefer, q) >= 0)
		want = u->wait->prefer;
	if (a->has_ttl)
		u->ttl_s = a->ttl_s;
	csq_user_deadline(c, u, now);
	user_move(c, u, q, a->has_tier ? a->tier : csq_user_tier(u),
	          a->has_needs ? needs : u->needs, want, window, now);
	/* NEEDS started the steps again: those due come now. */
	csq_policy_settle(c, u, now);
	return CSQ_OK;
}

enum csq_status
csq_enqueue(struct csq *c, uint64_t now, const struct csq_enqueue_args *a,
            struct csq_user_info *out)
{
	struct csq_servicer *want;
	struct csq_queue *q = NULL;
	struct csq_user *u;
	struct csq_key k;
	size_t idlen, qlen = 0;
	uint64_t pos;
	int matched;
	uint16_t needs = 0;
	enum csq_status st;

	if ((idlen = id_len(a->user)) == 0)
		return CSQ_EUSER;
	if (a->has_queue && (qlen = id_len(a->queue)) == 0)
		return CSQ_EQUEUE;
	if (a->has_tier && a->tier > c->limits.max_tier)
		return CSQ_ERANGE;
	if (a->has_ttl && a->ttl_s > CSQ_TTL_MAX)
		return CSQ_ERANGE;
	if ((st = csq_prefer_check(&a->prefer)) != CSQ_OK)
		return st;
	if (a->has_needs &&
	    (st = csq_needs_resolve(c, a->needs, &needs)) != CSQ_OK)
		return st;

	if ((u = csq_dict_get(c->users, a->user, idlen)) != NULL) {
		if (u->state == CSQ_USER_OFFERED) {
			/* Out of line until the offer ends: only its TTL. */
			if (a->has_ttl)
				u->ttl_s = a->ttl_s;
			csq_user_deadline(c, u, now);
		} else if (u->state == CSQ_USER_WAITING &&
		           (st = enqueue_again(c, now, u, a, qlen, needs,
		                               &out->opens_ms)) != CSQ_OK)
			return st;
		user_info(c, u, now, out);
		return CSQ_OK;
	}

	if (a->has_queue) {
		if ((q = csq_queue_open(c, a->queue, qlen)) == NULL)
			return CSQ_EQUEUES;
	} else
		q = csq_queue_get(c, CSQ_DEFAULT_QUEUE,
		                  strlen(CSQ_DEFAULT_QUEUE), 0);
	/* Business hours, then nobody there (section 3c): a queue that
	 * refuses has a policy, so it exists; nothing to drop. */
	if ((st = csq_hours_route(c, &q, &out->opens_ms)) != CSQ_OK)
		return st;
	if ((st = csq_nobody_route(c, &q)) != CSQ_OK)
		return st;
	if (queue_length(q) >= csq_queue_max_length(c, q)) {
		queue_drop_unused(c, q);
		return CSQ_EFULL;
	}
	if (c->seq >= CSQ_KEY_SEQ_MAX) {
		queue_drop_unused(c, q);
		return CSQ_EEXHAUSTED;
	}
	k.tier = a->has_tier ? a->tier : 0;
	k.seq = ++c->seq;

	u = csq_xmalloc(sizeof(*u) + idlen + 1);
	u->queue = q;
	csq_queue_ref(q);
	u->key = csq_key_pack(&k);
	u->arrival_ms = now;
	u->ttl_s = a->has_ttl ? a->ttl_s : c->limits.user_ttl_s;
	u->state = CSQ_USER_WAITING;
	u->flags = 0;
	u->needs = needs;
	csq_needset_hold(c, needs);
	csq_deadline_init(&u->deadline, CSQ_DL_USER);
	u->wait = NULL;
	memcpy(u->id, a->user, idlen);
	u->id[idlen] = '\0';
	csq_dict_add(c->users, u, idlen);
	c->stats.enqueued_total++;
	csq_estimate_arrival(&q->est, k.tier, now);

	if ((want = csq_prefer_target(c, &a->prefer, q, needs)) != NULL) {
		pos = csq_prefer_insert(c, u, want);
		csq_prefer_window(c, u, a->prefer.seconds, now);
	} else
		pos = csq_user_join_line(c, u, now);
	c->stats.waiting++;
	csq_user_deadline(c, u, now);
	matched = csq_match_user(c, u, NULL, CSQ_REASON_NONE, now);
	csq_user_info_at(c, u, now, u->state == CSQ_USER_WAITING ? pos : 0,
	                 out);
	/* queued carries the reply's estimate (issue 38): a frontend that
	 * follows the events shows one from the start. */
	if (!matched)
		queued_event(c, u, pos, out->eta_ms, now);
	return CSQ_OK;
}

enum csq_status
csq_touch(struct csq *c, uint64_t now, const char *uid, int64_t ttl_s,
          int *known)
{
	struct csq_user *u;

	*known = 0;
	if (id_len(uid) == 0)
		return CSQ_EUSER;
	if (ttl_s > CSQ_TTL_MAX)
		return CSQ_ERANGE;
	if ((u = user_get(c, uid)) == NULL)
		return CSQ_OK;
	*known = 1;
	if (ttl_s >= 0)
		u->ttl_s = (uint32_t)ttl_s;
	if (u->state != CSQ_USER_ASSIGNED)
		csq_user_deadline(c, u, now);
	return CSQ_OK;
}

/*
 * A waiting or offered user gives up (LEAVE) or times out. An offer goes
 * with it, and its room is free at once; its left then names the servicer
 * and the room, so that the servicer's channel hears the offer is gone.
 */
void
csq_user_abandon(struct csq *c, struct csq_user *u, uint64_t now,
                 enum csq_reason reason, struct csq_settle *st)
{
	struct csq_room *r = u->room;
	struct csq_servicer *s;
	struct csq_event ev;

	csq_event_begin(&ev, CSQ_EV_LEFT, now);
	csq_event_user(&ev, u);
	ev.reason = reason;
	if (u->state == CSQ_USER_WAITING) {
		csq_user_leave_line(c, u);
		c->stats.waiting--;
	} else {
		s = r->servicer;
		csq_event_room(&ev, r);
		csq_servicer_unaccount(c, s);
		u->room = NULL;
		csq_room_close(c, r);
		csq_servicer_account(c, s);
		csq_settle_refill(st, s);
	}
	c->stats.abandoned_total++;
	csq_qstats_abandoned(u->queue, reason, elapsed(now, u->arrival_ms));
	csq_user_free(c, u);
	csq_emit(c, &ev);
}

enum csq_status
csq_leave(struct csq *c, uint64_t now, const char *uid, int *known)
{
	struct csq_settle st;
	struct csq_user *u;

	*known = 0;
	if (id_len(uid) == 0)
		return CSQ_EUSER;
	if ((u = user_get(c, uid)) == NULL)
		return CSQ_OK;
	*known = 1;
	memset(&st, 0, sizeof(st));
	if (u->state == CSQ_USER_ASSIGNED) {
		csq_room_end(c, u->room, now, CSQ_REASON_BY_USER, &st);
		csq_user_free(c, u);
	} else
		csq_user_abandon(c, u, now, CSQ_REASON_LEAVE, &st);
	csq_settle(c, &st, now);
	return CSQ_OK;
}

enum csq_status
csq_where(struct csq *c, uint64_t now, const char *uid,
          struct csq_user_info *out)
{
	struct csq_user *u;

	if (id_len(uid) == 0)
		return CSQ_EUSER;
	if ((u = user_get(c, uid)) == NULL) {
		memset(out, 0, sizeof(*out));
		out->state = CSQ_USER_NONE;
		return CSQ_OK;
	}
	user_info(c, u, now, out);
	return CSQ_OK;
}

/* Admin. */

struct range_walk {
	const struct csq *c;
	struct csq_queue_entry *out;
	size_t *n;
	uint64_t now;
};

static void
range_one(void *arg, const struct csq_user *u)
{
	struct range_walk *w = arg;
	struct csq_queue_entry *e = &w->out[(*w->n)++];

	memcpy(e->user, u->id, csq_user_idlen(u) + 1);
	e->tier = csq_user_tier(u);
	e->waited_ms = elapsed(w->now, u->arrival_ms);
	strcpy(e->needs, csq_needset_text(w->c, u->needs));
}

enum csq_status
csq_queue_range(struct csq *c, uint64_t now, const char *qname, uint64_t offset,
                uint32_t count, struct csq_queue_entry *out, size_t *n)
{
	struct range_walk w;
	struct csq_queue *q;
	size_t len;

	*n = 0;
	if ((len = id_len(qname)) == 0)
		return CSQ_EQUEUE;
	if (count > CSQ_RANGE_COUNT_MAX)
		return CSQ_ERANGE;
	if ((q = csq_queue_get(c, qname, len, 0)) == NULL)
		return CSQ_OK;
	w.c = c;
	w.out = out;
	w.n = n;
	w.now = now;
	csq_needline_range(q, offset, count, range_one, &w);
	return CSQ_OK;
}

enum csq_status
csq_qlen(struct csq *c, const char *qname, uint64_t *len)
{
	struct csq_queue *q;
	size_t n;

	*len = 0;
	if ((n = id_len(qname)) == 0)
		return CSQ_EQUEUE;
	if ((q = csq_queue_get(c, qname, n, 0)) != NULL)
		*len = queue_length(q);
	return CSQ_OK;
}

enum csq_status
csq_queue_stats(struct csq *c, uint64_t now, const char *qname,
                struct csq_queue_stats *out)
{
	struct csq_queue *q;
	size_t n;

	if ((n = id_len(qname)) == 0)
		return CSQ_EQUEUE;
	if ((q = csq_queue_get(c, qname, n, 0)) != NULL) {
		csq_qstats_fill(c, q, now, out);
		return CSQ_OK;
	}
	/* A queue with a policy exists: this one has the defaults. */
	memset(out, 0, sizeof(*out));
	memcpy(out->queue, qname, n + 1);
	out->eta_ms = -1;
	out->service_level_s = CSQ_DEFAULT_SERVICE_LEVEL;
	out->service_level_pct = -1;
	out->nobody_ms = CSQ_QSTATS_NO_NOBODY;
	return CSQ_OK;
}

/* The same queues as csq_queues_slice visits, from the set of names. */
struct csq_queue_stats *
csq_queues_stats_slice(struct csq *c, uint64_t now, const char *after,
                       size_t count, size_t *n, const char **next)
{
	const struct csq_nameset_node *node;
	struct csq_queue_stats *out;
	size_t cap = csq_nameset_len(c->queue_names);

	if (count > 0 && count < cap)
		cap = count;
	out = csq_xmalloc((cap + 1) * sizeof(*out));
	*n = 0;
	*next = NULL;
	for (node = csq_nameset_after(c->queue_names, after); node != NULL;
	     node = csq_nameset_next(node)) {
		if (count > 0 && *n == count) {
			*next = out[*n - 1].queue;
			break;
		}
		csq_qstats_fill(c, csq_nameset_value(node), now, &out[(*n)++]);
	}
	return out;
}

struct csq_queue_stats *
csq_queues_stats(struct csq *c, uint64_t now, size_t *n)
{
	const char *next;

	return csq_queues_stats_slice(c, now, NULL, 0, n, &next);
}

/* From the set of ids, in their order: no sort (issue 37: the sort of
 * 20,000 servicers' rows was most of a SERVICERS). */
struct csq_servicer_info *
csq_servicers_slice(struct csq *c, uint64_t now, const char *after,
                    size_t count, size_t *n, const char **next)
{
	const struct csq_nameset_node *node;
	struct csq_servicer_info *out;
	size_t cap = csq_nameset_len(c->servicer_ids);

	if (count > 0 && count < cap)
		cap = count;
	out = csq_xmalloc((cap + 1) * sizeof(*out));
	*n = 0;
	*next = NULL;
	for (node = csq_nameset_after(c->servicer_ids, after); node != NULL;
	     node = csq_nameset_next(node)) {
		if (count > 0 && *n == count) {
			*next = out[*n - 1].id;
			break;
		}
		servicer_info(c, csq_nameset_value(node), now, &out[(*n)++]);
	}
	return out;
}

struct csq_servicer_info *
csq_servicers(struct csq *c, uint64_t now, size_t *n)
{
	const char *next;

	return csq_servicers_slice(c, now, NULL, 0, n, &next);
}

void
csq_stats(const struct csq *c, struct csq_stats *out)
{
	*out = c->stats;
}
