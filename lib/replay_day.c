/*
 * The what-if replay (replay_day.h). The record is read into stays of
 * users (visits) and servicers' actions; a run plays them through a csq
 * state of its own with a heap of actions on one clock.
 *
 * How each input is modelled (docs/day.md says it for users):
 *   - an arrival: at its recorded time, in the queue it arrived in, at
 *     its tier (ENQUEUE);
 *   - patience, measured from the arrival: the recorded one where the
 *     user left (LEAVE or its TTL); where it was served, or still there
 *     at the end, it is only known to be longer than its wait (censored),
 *     and is drawn from the queue's patience beyond that point, estimated
 *     over every stay of the queue with its censoring (Kaplan-Meier): a
 *     draw beyond the estimate's last drop is "never leaves";
 *   - a conversation: the k-th conversation of a stay in the replay lasts
 *     as long as its k-th in the record; one the record cut short (its
 *     servicer went) is drawn from the queue's conversations longer than
 *     the cut, one the record does not have from all the queue's;
 *   - an offer: the k-th offer of a stay to a servicer is answered as
 *     the record's first unused offer of that stay to that servicer was
 *     (accepted or declined after the same delay, or left to run out);
 *     one the record does not have, as one of that servicer's offers
 *     drawn at random (every servicer's, for one the record lacks);
 *   - servicers: logins (capacity, queues, skills) and changes of them
 *     (servicer_updated), logouts and losses, pauses and resumes at their
 *     recorded times; offer and wrap-up times as the record shows them
 *     (an offered's expires_ms, a wrapup's until_ms);
 *   - needs and a preferred servicer: an arrival's as its first event
 *     carries them; relax steps are the configuration's, so a what-if
 *     may change them;
 *   - a re-ENQUEUE of a waiting user that changed its tier, queue or
 *     needs (rescored, reason enqueue; or a matched or offered whose
 *     needs differ from those in force, when the new needs took it at
 *     once): the same ENQUEUE at its recorded time, if the user is still
 *     waiting in the replay then;
 *   - a transfer: the conversation that the record's agent handed on is
 *     handed on in the replay too, when it ends, to the queue and with
 *     the needs and window the record's transferred names; the stay goes
 *     on there.
 */
#include "replay_day.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "heap.h"
#include "util.h"

#define RD_SEED       0x637371726570ULL /* the record's ids are not hostile */
#define RD_NEVER      UINT64_MAX
#define RD_DRAWN_TIE  (1ULL << 62) /* after the record's actions of a ms */
#define RD_KEEPALIVE  (6ULL * 3600 * 1000) /* ms between re-heartbeats */
#define RD_HANDLE_DEF 300000               /* ms, when nothing is known */
#define RD_USED_BITS  64 /* offers of a stay matched to the record's */

/* RD_SENT: sent away by its queue's policy (a closing's or nobody's
 * release): csq's doing, so only a lower bound of its patience. */
enum rd_end { RD_OPEN, RD_SERVED, RD_LEFT, RD_EXPIRED, RD_SENT };
enum rd_answer { RD_PENDING, RD_ACCEPT, RD_DECLINE, RD_TIMEOUT };

struct rd_conv {
	uint64_t start_ms, len_ms;
	uint64_t end_id; /* the released's id: the order of its release */
	char queue[CSQ_ID_MAX + 1];
	int cut, open;
	/* The wrap-up after it: from its wrapup to its ready; wrap_ms
	 * RD_NEVER when the record has none (or no end of it). */
	uint64_t wrap_start, wrap_ms, wrap_id;
	/* Ended by TRANSFER (its released's by): to where, with what. */
	int xfer;
	char xfer_queue[CSQ_ID_MAX + 1];
	char xfer_needs[CSQ_NEEDS_TEXT_MAX];
	char xfer_prefer[CSQ_ID_MAX + 1];
	uint32_t xfer_prefer_s;
};

struct rd_offer {
	uint32_t servicer; /* index in the day's servicers */
	uint64_t ts, delay_ms, reply_id;
	enum rd_answer answer;
};

/* A re-ENQUEUE of a waiting user: what it changed, when. */
struct rd_again {
	uint64_t ts, id;
	int has_tier, has_queue, has_needs;
	uint32_t tier;
	char queue[CSQ_ID_MAX + 1];
	char needs[CSQ_NEEDS_TEXT_MAX];
};

struct rd_visit {
	char user[CSQ_ID_MAX + 1]; /* the replay's id: "u:2" a reused one */
	char queue[CSQ_ID_MAX + 1];
	uint32_t tier;
	char needs[CSQ_NEEDS_TEXT_MAX]; /* at its arrival; "" none */
	char prefer[CSQ_ID_MAX + 1];    /* its window's servicer; "" */
	uint32_t prefer_s;              /* and its length */
	uint64_t arrive_ms, arrive_id;
	enum rd_end end;
	uint64_t end_ms, end_id;
	uint64_t censor_ms; /* served or open: waited at least this */
	struct rd_conv *convs;
	uint32_t nconvs;
	struct rd_offer *offers;
	uint32_t noffers;
	struct rd_again *agains;
	uint32_t nagains;
	/* The record's tier and needs in force as it goes: what a
	 * re-ENQUEUE changed is told from them. */
	uint32_t rec_tier;
	char rec_needs[CSQ_NEEDS_TEXT_MAX];
};

struct rd_answer_rec {
	uint64_t delay_ms;
	enum rd_answer answer;
};

struct rd_servicer {
	char id[CSQ_ID_MAX + 1];
	int has_offer, has_wrapup;
	uint32_t offer_s, wrapup_s;
	struct rd_answer_rec *answers;
	size_t nanswers, capanswers;
};

enum rd_sv_kind {
	RD_SV_UP,
	RD_SV_DOWN,
	RD_SV_PAUSE,
	RD_SV_RESUME,
	RD_SV_UPDATE, /* servicer_updated: a HEARTBEAT's change */
};

struct rd_sv_action {
	enum rd_sv_kind kind;
	uint32_t servicer;
	uint64_t ts, id;
	uint32_t capacity;
	char *queues; /* UP, UPDATE: "a,b" */
	char *skills; /* UP, UPDATE: "de:5,fr:1"; "" none */
};

/* A queue's observations: patience (with censoring), conversations. */
struct rd_obs {
	uint64_t ms;
	int event; /* 1 left; 0 censored */
};

struct rd_queue {
	struct rd_obs *pat;
	size_t npat, cappat;
	uint64_t *handle; /* completed conversations, sorted at the end */
	size_t nhandle, caphandle;
	uint64_t *wrap; /* wrap-ups with their end */
	size_t nwrap, capwrap;
	/* Kaplan-Meier: the distinct times of leaving and the share still
	 * waiting just after each. */
	uint64_t *km_t;
	double *km_s;
	size_t nkm;
	/* Beyond the estimate's last drop: an exponential tail, at the
	 * rate of leaving over the whole time waited (the censored
	 * exponential's estimate), per ms; 0: never leaves. */
	double tail_rate;
};

struct csq_replay_day {
	struct rd_visit *visits;
	size_t nvisits, capvisits;
	struct rd_servicer *servicers;
	size_t nservicers, capservicers;
	struct rd_sv_action *sv;
	size_t nsv, capsv;
	struct csq_dict *sv_by_id;  /* id -> index + 1 */
	struct csq_dict *active;    /* user id -> visit index + 1 */
	struct csq_dict *away;      /* transferred in a stay the record lacks */
	struct csq_dict *seen;      /* user id -> stays so far */
	struct csq_dict *queues;    /* name -> struct rd_queue */
	struct csq_dict *room_conv; /* room -> its last conversation, packed */
	struct rd_queue all;        /* every queue's conversations */
	struct rd_answer_rec *answers; /* every servicer's */
	size_t nanswers, capanswers;
	uint64_t first_ms, last_ms;
	int started, ended;
};

#define RD_GROW(arr, n, cap)                                                   \
	do {                                                                   \
		if ((n) == (cap)) {                                            \
			(cap) = (cap) ? (cap)*2 : 16;                          \
			(arr) = csq_xrealloc((arr), (cap) * sizeof(*(arr)));   \
		}                                                              \
	} while (0)

struct csq_replay_day *
csq_replay_day_new(void)
{
	struct csq_replay_day *d = csq_xcalloc(1, sizeof(*d));

	d->sv_by_id = csq_dict_new(RD_SEED);
	d->active = csq_dict_new(RD_SEED);
	d->away = csq_dict_new(RD_SEED);
	d->seen = csq_dict_new(RD_SEED);
	d->queues = csq_dict_new(RD_SEED);
	d->room_conv = csq_dict_new(RD_SEED);
	return d;
}

static void
rd_free_val(void *arg, const char *key, size_t len, void *val)
{
	(void)arg, (void)key, (void)len;
	free(val);
}

static void
rd_free_queue(void *arg, const char *key, size_t len, void *val)
{
	struct rd_queue *q = val;

	(void)arg, (void)key, (void)len;
	free(q->pat);
	free(q->handle);
	free(q->wrap);
	free(q->km_t);
	free(q->km_s);
	free(q);
}

void
csq_replay_day_free(struct csq_replay_day *d)
{
	size_t i;

	if (d == NULL)
		return;
	for (i = 0; i < d->nvisits; i++) {
		free(d->visits[i].convs);
		free(d->visits[i].offers);
		free(d->visits[i].agains);
	}
	for (i = 0; i < d->nservicers; i++)
		free(d->servicers[i].answers);
	for (i = 0; i < d->nsv; i++) {
		free(d->sv[i].queues);
		free(d->sv[i].skills);
	}
	csq_dict_each(d->queues, rd_free_queue, NULL);
	csq_dict_free(d->queues);
	csq_dict_free(d->sv_by_id);
	csq_dict_free(d->active);
	csq_dict_free(d->away);
	csq_dict_free(d->seen);
	csq_dict_free(d->room_conv);
	free(d->all.handle);
	free(d->visits);
	free(d->servicers);
	free(d->sv);
	free(d->answers);
	free(d);
}

static struct rd_queue *
rd_queue(struct csq_replay_day *d, const char *name)
{
	size_t len = strlen(name);
	struct rd_queue *q = csq_dict_get(d->queues, name, len);

	if (q == NULL) {
		q = csq_xcalloc(1, sizeof(*q));
		csq_dict_put(d->queues, name, len, q);
	}
	return q;
}

static uint32_t
rd_servicer(struct csq_replay_day *d, const char *id)
{
	size_t len = strlen(id);
	uintptr_t k = (uintptr_t)csq_dict_get(d->sv_by_id, id, len);
	struct rd_servicer *s;

	if (k != 0)
		return (uint32_t)(k - 1);
	RD_GROW(d->servicers, d->nservicers, d->capservicers);
	s = &d->servicers[d->nservicers];
	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", id);
	csq_dict_put(d->sv_by_id, id, len, (void *)(uintptr_t)++d->nservicers);
	return (uint32_t)(d->nservicers - 1);
}

static struct rd_visit *
rd_active(struct csq_replay_day *d, const char *user)
{
	uintptr_t k = (uintptr_t)csq_dict_get(d->active, user, strlen(user));

	return k != 0 ? &d->visits[k - 1] : NULL;
}

/* A window's seconds from the ms it had left at an event (whole seconds
 * when it opened), within PREFER's range. */
static uint32_t
rd_window_s(uint64_t ms)
{
	uint64_t sec = (ms + 999) / 1000;

	return sec < 1                ? 1
	       : sec > CSQ_PREFER_MAX ? CSQ_PREFER_MAX
	                              : (uint32_t)sec;
}

/* A new stay of ev's user, arrived at ev. */
static struct rd_visit *
rd_arrive(struct csq_replay_day *d, const struct csq_event *ev,
          const char *queue)
{
	size_t len = strlen(ev->user);
	uintptr_t n = (uintptr_t)csq_dict_get(d->seen, ev->user, len);
	struct rd_visit *v;

	RD_GROW(d->visits, d->nvisits, d->capvisits);
	v = &d->visits[d->nvisits];
	memset(v, 0, sizeof(*v));
	/* A reused id gets a name of its own in the replay, so that its
	 * stays never meet there. */
	if (n == 0 || len + 12 > CSQ_ID_MAX)
		snprintf(v->user, sizeof(v->user), "%s", ev->user);
	else {
		char suffix[24];
		int sl = snprintf(suffix, sizeof(suffix), ":%" PRIuPTR, n + 1);

		memcpy(v->user, ev->user, len);
		memcpy(v->user + len, suffix, (size_t)sl + 1);
	}
	csq_dict_put(d->seen, ev->user, len, (void *)(n + 1));
	snprintf(v->queue, sizeof(v->queue), "%s", queue);
	v->tier = v->rec_tier = ev->tier;
	snprintf(v->needs, sizeof(v->needs), "%s", ev->needs);
	snprintf(v->rec_needs, sizeof(v->rec_needs), "%s", ev->needs);
	if (ev->type == CSQ_EV_QUEUED && ev->prefer[0] != '\0') {
		snprintf(v->prefer, sizeof(v->prefer), "%s", ev->prefer);
		v->prefer_s = rd_window_s(ev->prefer_ms);
	}
	v->arrive_ms = ev->ts_ms;
	v->arrive_id = ev->id;
	v->end = RD_OPEN;
	rd_queue(d, queue);
	csq_dict_put(d->active, ev->user, len, (void *)(uintptr_t)++d->nvisits);
	return v;
}

static void
rd_close(struct csq_replay_day *d, struct rd_visit *v, const char *user,
         enum rd_end end, const struct csq_event *ev)
{
	v->end = end;
	v->end_ms = ev->ts_ms;
	v->end_id = ev->id;
	csq_dict_del(d->active, user, strlen(user));
}

static struct rd_offer *
rd_pending_offer(struct rd_visit *v)
{
	if (v->noffers > 0 && v->offers[v->noffers - 1].answer == RD_PENDING)
		return &v->offers[v->noffers - 1];
	return NULL;
}

static void
rd_answer(struct csq_replay_day *d, struct rd_offer *o, enum rd_answer a,
          const struct csq_event *ev)
{
	struct rd_servicer *s = &d->servicers[o->servicer];
	struct rd_answer_rec rec;

	o->answer = a;
	o->delay_ms = ev->ts_ms - o->ts;
	o->reply_id = ev->id;
	rec.delay_ms = o->delay_ms;
	rec.answer = a;
	RD_GROW(s->answers, s->nanswers, s->capanswers);
	s->answers[s->nanswers++] = rec;
	RD_GROW(d->answers, d->nanswers, d->capanswers);
	d->answers[d->nanswers++] = rec;
}

/* The conversation under way of v, if any. */
static struct rd_conv *
rd_open_conv(struct rd_visit *v)
{
	if (v->nconvs > 0 && v->convs[v->nconvs - 1].open)
		return &v->convs[v->nconvs - 1];
	return NULL;
}

static void
rd_end_conv(struct rd_visit *v, const struct csq_event *ev, int cut)
{
	struct rd_conv *cv = rd_open_conv(v);

	if (cv == NULL)
		return;
	cv->open = 0;
	cv->cut = cut;
	cv->len_ms = ev->ts_ms - cv->start_ms;
	cv->end_id = ev->id;
}

static void
rd_sv_action(struct csq_replay_day *d, enum rd_sv_kind kind,
             const struct csq_event *ev)
{
	struct rd_sv_action *a;

	RD_GROW(d->sv, d->nsv, d->capsv);
	a = &d->sv[d->nsv++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->servicer = rd_servicer(d, ev->servicer);
	a->ts = ev->ts_ms;
	a->id = ev->id;
	if (kind == RD_SV_UP || kind == RD_SV_UPDATE) {
		a->capacity = ev->capacity ? ev->capacity : 1;
		a->queues = csq_xstrndup(ev->queues, strlen(ev->queues));
		a->skills = csq_xstrndup(ev->skills, strlen(ev->skills));
	}
}

/* The queues of a servicer_up into the day's queues. */
static void
rd_note_queues(struct csq_replay_day *d, const char *list)
{
	char name[CSQ_ID_MAX + 1];
	const char *p = list, *comma;
	size_t len;

	while (*p != '\0') {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (len > 0 && len <= CSQ_ID_MAX) {
			memcpy(name, p, len);
			name[len] = '\0';
			rd_queue(d, name);
		}
		if (comma == NULL)
			break;
		p = comma + 1;
	}
}

/* A conversation as a dict value: (visit index + 1) << 24 | its index. */
#define RD_CONV_BITS 24
#define RD_PACK(v, k)                                                          \
	((void *)(uintptr_t)((((uint64_t)(v) + 1) << RD_CONV_BITS) | (k)))

static struct rd_conv *
rd_unpack(const struct csq_replay_day *d, void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	uint64_t v = x >> RD_CONV_BITS, k = x & ((1u << RD_CONV_BITS) - 1);

	if (v == 0 || v > d->nvisits || k >= d->visits[v - 1].nconvs)
		return NULL;
	return &d->visits[v - 1].convs[k];
}

/* The record's tier and needs in force of v after ev (an event that
 * carries needs: absent, none). */
static void
rd_rec_state(struct rd_visit *v, const struct csq_event *ev, int needs)
{
	v->rec_tier = ev->tier;
	if (needs)
		snprintf(v->rec_needs, sizeof(v->rec_needs), "%s", ev->needs);
}

/*
 * ev says that v's user, waiting, re-ENQUEUEd: a rescored of reason
 * enqueue, or a matched or offered of reason enqueue (a re-ENQUEUE that a
 * free room took at once: protocol.md section 4), or, in a record of a
 * csq before that reason, a matched or offered whose needs are not those
 * in force (a NEEDS that a free room took at once: section 3c). What it
 * changed, told from the record's state before it, is kept to be played
 * at its time; nothing when it changed nothing the replay plays. A
 * matched or offered with from_queue and no reason is an overflow's, or
 * a re-ENQUEUE's of a csq before the reason: taken as an overflow (the
 * replay's configuration moves the user, or not).
 */
static void
rd_again(struct rd_visit *v, const struct csq_event *ev)
{
	int told =
	    ev->type == CSQ_EV_RESCORED || ev->reason == CSQ_REASON_ENQUEUE;
	int tier = told && ev->tier != v->rec_tier;
	int queue = told && ev->from_queue[0] != '\0' &&
	            strcmp(ev->from_queue, ev->queue) != 0;
	int needs = strcmp(ev->needs, v->rec_needs) != 0;
	struct rd_again *g;

	if (!tier && !queue && !needs)
		return;
	v->agains =
	    csq_xrealloc(v->agains, (v->nagains + 1) * sizeof(*v->agains));
	g = &v->agains[v->nagains++];
	memset(g, 0, sizeof(*g));
	g->ts = ev->ts_ms;
	g->id = ev->id;
	g->has_tier = tier;
	g->tier = ev->tier;
	g->has_queue = queue;
	snprintf(g->queue, sizeof(g->queue), "%s", ev->queue);
	g->has_needs = needs;
	snprintf(g->needs, sizeof(g->needs), "%s", ev->needs);
}

void
csq_replay_day_event(struct csq_replay_day *d, const struct csq_event *ev)
{
	struct rd_visit *v = NULL;
	struct rd_offer *o;
	struct rd_conv *cv;
	uint32_t s;

	if (d->ended)
		return;
	if (!d->started || ev->ts_ms < d->first_ms)
		d->first_ms = ev->ts_ms;
	if (ev->ts_ms > d->last_ms)
		d->last_ms = ev->ts_ms;
	d->started = 1;
	if (ev->user[0] != '\0') {
		if (csq_dict_get(d->away, ev->user, strlen(ev->user)) != NULL) {
			/* Transferred: not replayed until it is gone. */
			if (ev->type == CSQ_EV_LEFT ||
			    (ev->type == CSQ_EV_RELEASED &&
			     ev->reason != CSQ_REASON_BY_TRANSFER))
				csq_dict_del(d->away, ev->user,
				             strlen(ev->user));
			return;
		}
		v = rd_active(d, ev->user);
	}
	switch (ev->type) {
	case CSQ_EV_QUEUED:
		if (v == NULL && ev->queue[0] != '\0')
			rd_arrive(d, ev, ev->queue);
		break;
	case CSQ_EV_OFFERED:
	case CSQ_EV_MATCHED:
		if (ev->user[0] == '\0' || ev->queue[0] == '\0' ||
		    ev->servicer[0] == '\0')
			break;
		if (v == NULL) {
			/* Moved by its queue's policy: it arrived in the
			 * queue it came from. A re-ENQUEUE's move (reason
			 * enqueue) is where the record first has it. */
			v = rd_arrive(d, ev,
			              ev->from_queue[0] != '\0' &&
			                      ev->reason != CSQ_REASON_ENQUEUE
			                  ? ev->from_queue
			                  : ev->queue);
			/* Matched after a wait the record did not see (it
			 * began later): it arrived when its wait began, or
			 * at the record's start. */
			if (ev->type == CSQ_EV_MATCHED && ev->waited_ms > 0)
				v->arrive_ms =
				    ev->ts_ms - d->first_ms > ev->waited_ms
				        ? ev->ts_ms - ev->waited_ms
				        : d->first_ms;
		} else if (rd_pending_offer(v) == NULL &&
		           rd_open_conv(v) == NULL)
			rd_again(v, ev); /* waiting: new needs took it? */
		rd_rec_state(v, ev, 1);
		s = rd_servicer(d, ev->servicer);
		if (ev->type == CSQ_EV_OFFERED) {
			if ((o = rd_pending_offer(v)) != NULL)
				rd_answer(d, o, RD_TIMEOUT, ev); /* unseen */
			v->offers = csq_xrealloc(
			    v->offers, (v->noffers + 1) * sizeof(*v->offers));
			o = &v->offers[v->noffers++];
			memset(o, 0, sizeof(*o));
			o->servicer = s;
			o->ts = ev->ts_ms;
			if (!d->servicers[s].has_offer &&
			    ev->expires_ms > ev->ts_ms) {
				d->servicers[s].has_offer = 1;
				d->servicers[s].offer_s =
				    (uint32_t)((ev->expires_ms - ev->ts_ms +
				                500) /
				               1000);
			}
			break;
		}
		if ((o = rd_pending_offer(v)) != NULL)
			rd_answer(d, o, RD_ACCEPT, ev);
		rd_end_conv(v, ev, 1);
		v->convs =
		    csq_xrealloc(v->convs, (v->nconvs + 1) * sizeof(*v->convs));
		cv = &v->convs[v->nconvs++];
		memset(cv, 0, sizeof(*cv));
		cv->start_ms = ev->ts_ms;
		cv->open = 1;
		cv->wrap_ms = RD_NEVER;
		snprintf(cv->queue, sizeof(cv->queue), "%s", ev->queue);
		v->censor_ms = ev->ts_ms - v->arrive_ms;
		break;
	case CSQ_EV_DECLINED:
		if (v != NULL)
			rd_rec_state(v, ev, 0);
		if (v != NULL && (o = rd_pending_offer(v)) != NULL)
			rd_answer(d, o,
			          ev->reason == CSQ_REASON_TIMEOUT ? RD_TIMEOUT
			                                           : RD_DECLINE,
			          ev);
		break;
	case CSQ_EV_REQUEUED:
		if (v != NULL) {
			rd_end_conv(v, ev, 1);
			rd_rec_state(v, ev, 0);
		}
		break;
	case CSQ_EV_RELEASED:
		if (v == NULL)
			break;
		if (rd_open_conv(v) != NULL && ev->room[0] != '\0' &&
		    v->nconvs < (1u << RD_CONV_BITS))
			csq_dict_put(d->room_conv, ev->room, strlen(ev->room),
			             RD_PACK(v - d->visits, v->nconvs - 1));
		if (ev->reason == CSQ_REASON_BY_TRANSFER &&
		    (cv = rd_open_conv(v)) != NULL) {
			/* Handed on: the stay goes on in the new queue
			 * (transferred, next, says which). */
			rd_end_conv(v, ev, 0);
			cv->xfer = 1;
			break;
		}
		rd_end_conv(v, ev, 0);
		rd_close(d, v, ev->user, RD_SERVED, ev);
		if (ev->reason == CSQ_REASON_BY_TRANSFER)
			csq_dict_put(d->away, ev->user, strlen(ev->user), d);
		break;
	case CSQ_EV_LEFT:
		if (v == NULL)
			break;
		if ((o = rd_pending_offer(v)) != NULL)
			rd_answer(d, o, RD_TIMEOUT, ev);
		rd_end_conv(v, ev, 1);
		if (ev->reason == CSQ_REASON_CLOSED ||
		    ev->reason == CSQ_REASON_NOBODY) {
			/* Released by a policy (business hours, nobody):
			 * the replay's csq does it again where its policy
			 * says; the user waited at least this long. */
			v->censor_ms = ev->ts_ms - v->arrive_ms;
			rd_close(d, v, ev->user, RD_SENT, ev);
			break;
		}
		rd_close(d, v, ev->user,
		         ev->reason == CSQ_REASON_TIMEOUT ? RD_EXPIRED
		                                          : RD_LEFT,
		         ev);
		break;
	case CSQ_EV_SERVICER_UP:
	case CSQ_EV_SERVICER_UPDATED:
		if (ev->servicer[0] == '\0')
			break;
		rd_sv_action(
		    d, ev->type == CSQ_EV_SERVICER_UP ? RD_SV_UP : RD_SV_UPDATE,
		    ev);
		rd_note_queues(d, ev->queues);
		break;
	case CSQ_EV_SERVICER_DOWN:
		if (ev->servicer[0] != '\0')
			rd_sv_action(d, RD_SV_DOWN, ev);
		break;
	case CSQ_EV_SERVICER_PAUSED:
		/* A pause for missed offers is csq's own doing: the replay's
		 * csq decides it. */
		if (ev->servicer[0] != '\0' &&
		    ev->reason != CSQ_REASON_MISSED_OFFERS)
			rd_sv_action(d, RD_SV_PAUSE, ev);
		break;
	case CSQ_EV_SERVICER_RESUMED:
		if (ev->servicer[0] != '\0')
			rd_sv_action(d, RD_SV_RESUME, ev);
		break;
	case CSQ_EV_WRAPUP:
		if (ev->servicer[0] == '\0')
			break;
		if (ev->room[0] != '\0' &&
		    (cv = rd_unpack(d, csq_dict_get(d->room_conv, ev->room,
		                                    strlen(ev->room)))) != NULL)
			cv->wrap_start = ev->ts_ms;
		s = rd_servicer(d, ev->servicer);
		if (!d->servicers[s].has_wrapup && ev->until_ms >= ev->ts_ms) {
			d->servicers[s].has_wrapup = 1;
			d->servicers[s].wrapup_s =
			    (uint32_t)((ev->until_ms - ev->ts_ms + 500) / 1000);
		}
		break;
	case CSQ_EV_READY:
		/* The wrap-up's length: READY early, or its deadline. */
		if (ev->room[0] != '\0' &&
		    (cv = rd_unpack(d, csq_dict_del(d->room_conv, ev->room,
		                                    strlen(ev->room)))) !=
		        NULL &&
		    cv->wrap_start != 0 && ev->ts_ms >= cv->wrap_start) {
			cv->wrap_ms = ev->ts_ms - cv->wrap_start;
			cv->wrap_id = ev->id;
		}
		break;
	case CSQ_EV_TRANSFERRED:
		/* Where the conversation released by the transfer went. */
		if (v != NULL)
			rd_rec_state(v, ev, 1);
		if (v != NULL && v->nconvs > 0 &&
		    (cv = &v->convs[v->nconvs - 1])->xfer &&
		    cv->xfer_queue[0] == '\0' && ev->queue[0] != '\0') {
			snprintf(cv->xfer_queue, sizeof(cv->xfer_queue), "%s",
			         ev->queue);
			snprintf(cv->xfer_needs, sizeof(cv->xfer_needs), "%s",
			         ev->needs);
			if (ev->prefer[0] != '\0') {
				snprintf(cv->xfer_prefer,
				         sizeof(cv->xfer_prefer), "%s",
				         ev->prefer);
				cv->xfer_prefer_s = rd_window_s(ev->prefer_ms);
			}
		}
		break;
	case CSQ_EV_RESCORED:
		/* A re-ENQUEUE's (reason enqueue; a v1 record's has none)
		 * is played; aging is the configuration's doing. */
		if (v == NULL)
			break;
		if (ev->reason != CSQ_REASON_AGING)
			rd_again(v, ev);
		rd_rec_state(v, ev, 1);
		break;
	case CSQ_EV_OVERFLOWED:
	case CSQ_EV_RELAXED:
		/* The configuration's doing: its tier, and the needs that a
		 * relax step left, as the record goes on. */
		if (v != NULL)
			rd_rec_state(v, ev, ev->type == CSQ_EV_RELAXED);
		break;
	case CSQ_EV_PREFER_ENDED:
	case CSQ_EV_OPENED: /* business hours: a queue's, no user's */
	case CSQ_EV_CLOSED:
		/* The configuration's doing, or not replayed (docs/day.md). */
		break;
	}
}

static int
rd_cmp_obs(const void *a, const void *b)
{
	const struct rd_obs *x = a, *y = b;

	if (x->ms != y->ms)
		return x->ms < y->ms ? -1 : 1;
	return y->event - x->event; /* leaving before censored at a tie */
}

static int
rd_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
rd_obs(struct rd_queue *q, uint64_t ms, int event)
{
	RD_GROW(q->pat, q->npat, q->cappat);
	q->pat[q->npat].ms = ms;
	q->pat[q->npat++].event = event;
}

static void
rd_handle_obs(struct rd_queue *q, uint64_t ms)
{
	RD_GROW(q->handle, q->nhandle, q->caphandle);
	q->handle[q->nhandle++] = ms;
}

/* The Kaplan-Meier estimate of a queue's patience. */
static void
rd_km(void *arg, const char *key, size_t len, void *val)
{
	struct rd_queue *q = val;
	size_t i = 0, j, at_risk = q->npat, left, leaves = 0;
	double s = 1, exposure = 0;

	(void)arg, (void)key, (void)len;
	if (q->npat > 1)
		qsort(q->pat, q->npat, sizeof(*q->pat), rd_cmp_obs);
	if (q->nhandle > 1)
		qsort(q->handle, q->nhandle, sizeof(*q->handle), rd_cmp_u64);
	q->km_t = csq_xcalloc(q->npat ? q->npat : 1, sizeof(*q->km_t));
	q->km_s = csq_xcalloc(q->npat ? q->npat : 1, sizeof(*q->km_s));
	while (i < q->npat) {
		left = 0;
		for (j = i; j < q->npat && q->pat[j].ms == q->pat[i].ms; j++)
			left += (size_t)q->pat[j].event;
		if (left > 0) {
			s *= 1.0 - (double)left / (double)at_risk;
			q->km_t[q->nkm] = q->pat[i].ms;
			q->km_s[q->nkm++] = s;
		}
		at_risk -= j - i;
		leaves += left;
		i = j;
	}
	for (i = 0; i < q->npat; i++)
		exposure += (double)q->pat[i].ms;
	q->tail_rate =
	    leaves > 0 && exposure > 0 ? (double)leaves / exposure : 0;
}

void
csq_replay_day_end(struct csq_replay_day *d)
{
	struct rd_visit *v;
	struct rd_conv *cv;
	size_t i;
	uint32_t k;

	if (d->ended)
		return;
	d->ended = 1;
	for (i = 0; i < d->nvisits; i++) {
		v = &d->visits[i];
		if ((cv = rd_open_conv(v)) != NULL) {
			cv->open = 0;
			cv->cut = 1;
			cv->len_ms = d->last_ms - cv->start_ms;
			cv->end_id = UINT64_MAX;
		} else if (v->end == RD_OPEN)
			v->censor_ms = d->last_ms - v->arrive_ms;
		if (v->noffers > 0 &&
		    v->offers[v->noffers - 1].answer == RD_PENDING)
			v->offers[v->noffers - 1].answer = RD_TIMEOUT;
		if (v->end == RD_LEFT || v->end == RD_EXPIRED)
			rd_obs(rd_queue(d, v->queue), v->end_ms - v->arrive_ms,
			       1);
		else
			rd_obs(rd_queue(d, v->queue), v->censor_ms, 0);
		for (k = 0; k < v->nconvs; k++) {
			struct rd_queue *q = rd_queue(d, v->convs[k].queue);

			if (!v->convs[k].cut) {
				rd_handle_obs(q, v->convs[k].len_ms);
				rd_handle_obs(&d->all, v->convs[k].len_ms);
			}
			if (v->convs[k].wrap_ms != RD_NEVER) {
				RD_GROW(q->wrap, q->nwrap, q->capwrap);
				q->wrap[q->nwrap++] = v->convs[k].wrap_ms;
			}
		}
	}
	csq_dict_each(d->queues, rd_km, NULL);
	if (d->all.nhandle > 1)
		qsort(d->all.handle, d->all.nhandle, sizeof(*d->all.handle),
		      rd_cmp_u64);
}

void
csq_replay_day_period(const struct csq_replay_day *d, uint64_t *first_ms,
                      uint64_t *last_ms)
{
	*first_ms = d->first_ms;
	*last_ms = d->last_ms;
}

/* The dict's keys are not NUL-terminated: names copied. */
struct rd_names {
	char (*v)[CSQ_ID_MAX + 1];
	size_t n, cap;
};

static void
rd_name(void *arg, const char *key, size_t len, void *val)
{
	struct rd_names *a = arg;

	(void)val;
	RD_GROW(a->v, a->n, a->cap);
	snprintf(a->v[a->n++], CSQ_ID_MAX + 1, "%.*s", (int)len, key);
}

static int
rd_cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

void
csq_replay_day_queues(const struct csq_replay_day *d, char *out, size_t len)
{
	struct rd_names a = {NULL, 0, 0};
	size_t i, at = 0;
	int n;

	if (len == 0)
		return;
	out[0] = '\0';
	csq_dict_each(d->queues, rd_name, &a);
	if (a.n > 1)
		qsort(a.v, a.n, sizeof(*a.v), rd_cmp_str);
	for (i = 0; i < a.n && i < CSQ_SERVICER_QUEUES; i++) {
		n = snprintf(out + at, len - at, "%s%s", i ? "," : "", a.v[i]);
		if (n < 0 || (size_t)n >= len - at) {
			out[at] = '\0';
			break;
		}
		at += (size_t)n;
	}
	free(a.v);
}

/* ---- The run. ---- */

enum rd_act_kind {
	RD_A_ARRIVE,
	RD_A_GIVE_UP,
	RD_A_RELEASE,
	RD_A_ACCEPT,
	RD_A_DECLINE,
	RD_A_SV,        /* the record's servicer action idx */
	RD_A_REMOVE,    /* change idx begins */
	RD_A_RESTORE,   /* change idx ends: back as the record has it */
	RD_A_ADD,       /* change idx: logged in */
	RD_A_ADD_END,   /* change idx: logged out */
	RD_A_KEEPALIVE, /* every servicer heartbeats */
	RD_A_READY,     /* room: its wrap-up ends early */
	RD_A_AGAIN,     /* stay idx re-ENQUEUEs: its gen-th rd_again */
};

struct rd_act {
	struct csq_heap_node node;
	enum rd_act_kind kind;
	uint32_t idx;
	uint32_t gen; /* RELEASE, ACCEPT, DECLINE: the stay's state then;
	                 AGAIN: which of the stay's re-ENQUEUEs */
	char room[CSQ_ROOM_MAX + 1];
};

/* The conversation a room last ended, for the wrap-up after it. */
struct rd_ended {
	uint32_t idx, k; /* the stay, and its conversation */
	char queue[CSQ_ID_MAX + 1];
};

/* What the run knows of a stay. */
struct rd_live {
	uint32_t gen; /* one more at each change of the stay's place */
	uint32_t matches;
	uint64_t used; /* the record's offers already answered */
	uint64_t patience_ms;
	int done, expired;
};

/* A servicer as the record has it, whatever the changes do. */
struct rd_svstate {
	int up, paused;
	uint32_t capacity;
	const char *queues;
	const char *skills;
};

struct rd_run {
	const struct csq_replay_day *d;
	const struct csq_replay_config *cfg;
	struct csq *c;
	struct csq_heap heap;
	uint64_t seq, now;
	struct rd_live *live;
	struct csq_dict *byuser; /* replay id -> visit index + 1 */
	struct csq_dict *ended;  /* room -> struct rd_ended, its last */
	struct rd_svstate *sv;
	csq_emit_fn *emit;
	void *arg;
	struct csq_replay_stats st;
	int leaving_expired;
	char every_queue[CSQ_QUEUE_LIST_MAX];
};

static uint64_t
rd_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* A draw in [0, 1) for (who, what, k): the same whatever else happens. */
static double
rd_draw(const struct rd_run *r, const char *who, uint64_t what, uint64_t k)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const unsigned char *p;

	for (p = (const unsigned char *)who; *p != '\0'; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	h = rd_mix(h ^ rd_mix(r->cfg->seed ^ rd_mix(what * 0x10001 + k)));
	return (double)(h >> 11) / 9007199254740992.0;
}

static void
rd_push(struct rd_run *r, enum rd_act_kind kind, uint64_t ts, uint64_t tie,
        uint32_t idx, uint32_t gen, const char *room)
{
	struct rd_act *a = csq_xcalloc(1, sizeof(*a));

	csq_heap_node_init(&a->node);
	a->kind = kind;
	a->idx = idx;
	a->gen = gen;
	if (room != NULL)
		snprintf(a->room, sizeof(a->room), "%s", room);
	csq_heap_set(&r->heap, &a->node, ts, tie);
}

static uint64_t
rd_drawn_tie(struct rd_run *r)
{
	return RD_DRAWN_TIE + r->seq++;
}

/*
 * A patience drawn beyond c from the queue's estimate: the Kaplan-Meier
 * steps, then the exponential tail from the last step (or from c, past
 * it); RD_NEVER when nobody of the queue ever left.
 */
static uint64_t
rd_patience(const struct rd_queue *q, uint64_t c, double u)
{
	double sc = 1, target, extra;
	uint64_t from = c;
	size_t i;

	for (i = 0; i < q->nkm && q->km_t[i] <= c; i++)
		sc = q->km_s[i];
	target = sc * (1.0 - u);
	for (; i < q->nkm; i++) {
		if (q->km_s[i] <= target)
			return q->km_t[i];
		from = q->km_t[i];
		sc = q->km_s[i];
	}
	if (q->tail_rate <= 0 || sc <= 0)
		return RD_NEVER;
	/* S(from + x) = sc e^(-rate x) = target */
	extra = log(sc / target) / q->tail_rate;
	if (extra >= (double)(RD_NEVER - from) / 2)
		return RD_NEVER;
	return from + (uint64_t)extra + 1;
}

static const struct rd_queue *
rd_queue_of(const struct csq_replay_day *d, const char *name)
{
	return csq_dict_get(d->queues, name, strlen(name));
}

/* The length of the k-th conversation of v in the replay, in queue q. */
static uint64_t
rd_handle(struct rd_run *r, const struct rd_visit *v, uint32_t k,
          const char *queue, uint64_t *tie)
{
	const struct rd_queue *q = rd_queue_of(r->d, queue);
	const uint64_t *h;
	uint64_t above = 0;
	size_t n, i;

	if (k < v->nconvs && !v->convs[k].cut) {
		*tie = v->convs[k].end_id << 1;
		return v->convs[k].len_ms;
	}
	*tie = rd_drawn_tie(r);
	r->st.drawn_handle++;
	if (k < v->nconvs)
		above = v->convs[k].len_ms;
	if (q == NULL || q->nhandle == 0)
		q = &r->d->all;
	h = q->handle;
	n = q->nhandle;
	if (n == 0)
		return above + RD_HANDLE_DEF;
	for (i = 0; i < n && h[i] <= above; i++)
		;
	if (i == n) /* nothing longer on record: the cut and a median */
		return above + h[n / 2];
	return h[i + (size_t)(rd_draw(r, v->user, 2, k) * (double)(n - i))];
}

static struct rd_visit *
rd_visit_of(struct rd_run *r, const char *user, uint32_t *idx)
{
	uintptr_t k = (uintptr_t)csq_dict_get(r->byuser, user, strlen(user));

	if (k == 0)
		return NULL;
	*idx = (uint32_t)(k - 1);
	return &r->d->visits[k - 1];
}

/* The answer to an offer of v (live l) to servicer sid at the event. */
static void
rd_offered(struct rd_run *r, const struct rd_visit *v, uint32_t idx,
           struct rd_live *l, const struct csq_event *ev)
{
	uintptr_t si = (uintptr_t)csq_dict_get(r->d->sv_by_id, ev->servicer,
	                                       strlen(ev->servicer));
	const struct rd_answer_rec *pool = NULL;
	struct rd_answer_rec ans = {0, RD_ACCEPT};
	size_t npool = 0;
	uint64_t tie = 0;
	uint32_t k;
	int found = 0;

	for (k = 0; si != 0 && k < v->noffers && k < RD_USED_BITS; k++)
		if (v->offers[k].servicer == si - 1 &&
		    !(l->used & (1ULL << k))) {
			l->used |= 1ULL << k;
			ans.delay_ms = v->offers[k].delay_ms;
			ans.answer = v->offers[k].answer;
			tie = v->offers[k].reply_id << 1;
			found = 1;
			break;
		}
	if (!found) {
		r->st.drawn_offers++;
		if (si != 0 && r->d->servicers[si - 1].nanswers > 0) {
			pool = r->d->servicers[si - 1].answers;
			npool = r->d->servicers[si - 1].nanswers;
		} else {
			pool = r->d->answers;
			npool = r->d->nanswers;
		}
		if (npool > 0)
			ans = pool[(size_t)(rd_draw(r, v->user, 3, l->gen) *
			                    (double)npool)];
		tie = rd_drawn_tie(r);
	}
	if (ans.answer == RD_ACCEPT || ans.answer == RD_DECLINE)
		rd_push(r, ans.answer == RD_ACCEPT ? RD_A_ACCEPT : RD_A_DECLINE,
		        ev->ts_ms + ans.delay_ms, tie, idx, l->gen, ev->room);
	/* RD_TIMEOUT: csq runs the offer out. */
}

/* A wrap-up began in ev's room: it ends as the record's after that
 * conversation did, or as one of the queue's drawn, when that is before
 * its deadline (the servicer's READY); else csq ends it. */
static void
rd_wrapup(struct rd_run *r, const struct csq_event *ev)
{
	const struct rd_ended *e =
	    csq_dict_get(r->ended, ev->room, strlen(ev->room));
	const struct rd_visit *v;
	const struct rd_queue *q;
	uint64_t len, tie;

	if (e == NULL || ev->until_ms <= ev->ts_ms)
		return;
	v = &r->d->visits[e->idx];
	if (e->k < v->nconvs && v->convs[e->k].wrap_ms != RD_NEVER) {
		len = v->convs[e->k].wrap_ms;
		tie = v->convs[e->k].wrap_id << 1;
	} else {
		q = rd_queue_of(r->d, e->queue);
		if (q == NULL || q->nwrap == 0)
			return;
		len = q->wrap[(size_t)(rd_draw(r, v->user, 4, e->k) *
		                       (double)q->nwrap)];
		tie = rd_drawn_tie(r);
		r->st.drawn_wrapups++;
	}
	if (ev->ts_ms + len < ev->until_ms)
		rd_push(r, RD_A_READY, ev->ts_ms + len, tie, 0, 0, ev->room);
}

static void
rd_note_ended(struct rd_run *r, const struct csq_event *ev, uint32_t idx,
              uint32_t k)
{
	struct rd_ended *e = csq_dict_get(r->ended, ev->room, strlen(ev->room));

	if (e == NULL) {
		e = csq_xcalloc(1, sizeof(*e));
		csq_dict_put(r->ended, ev->room, strlen(ev->room), e);
	}
	e->idx = idx;
	e->k = k;
	snprintf(e->queue, sizeof(e->queue), "%s", ev->queue);
}

static void
rd_emit(void *arg, const struct csq_event *ev)
{
	struct rd_run *r = arg;
	struct rd_visit *v = NULL;
	struct rd_live *l = NULL;
	struct csq_event copy;
	uint64_t len, tie;
	uint32_t idx = 0;

	r->st.events++;
	if (ev->user[0] != '\0' && (v = rd_visit_of(r, ev->user, &idx)) != NULL)
		l = &r->live[idx];
	switch (ev->type) {
	case CSQ_EV_MATCHED:
		if (l == NULL)
			break;
		l->gen++;
		len = rd_handle(r, v, l->matches++, ev->queue, &tie);
		rd_push(r, RD_A_RELEASE, ev->ts_ms + len, tie, idx, l->gen,
		        ev->room);
		break;
	case CSQ_EV_OFFERED:
		if (l == NULL)
			break;
		l->gen++;
		rd_offered(r, v, idx, l, ev);
		break;
	case CSQ_EV_REQUEUED:
		if (l == NULL)
			break;
		l->gen++;
		/* Back in line after its patience ran out in the room: it
		 * goes now (patience counts from the arrival). */
		if (l->patience_ms != RD_NEVER &&
		    ev->ts_ms >= v->arrive_ms + l->patience_ms)
			rd_push(r, RD_A_GIVE_UP, ev->ts_ms, rd_drawn_tie(r),
			        idx, 0, NULL);
		break;
	case CSQ_EV_DECLINED:
	case CSQ_EV_TRANSFERRED:
		if (l != NULL)
			l->gen++;
		break;
	case CSQ_EV_WRAPUP:
		if (ev->room[0] != '\0')
			rd_wrapup(r, ev);
		break;
	case CSQ_EV_RELEASED:
	case CSQ_EV_LEFT:
		if (l == NULL)
			break;
		if (ev->type == CSQ_EV_RELEASED && ev->room[0] != '\0' &&
		    l->matches > 0)
			rd_note_ended(r, ev, idx, l->matches - 1);
		l->gen++;
		/* A transfer's release: the stay goes on (transferred). */
		if (!(ev->type == CSQ_EV_RELEASED &&
		      ev->reason == CSQ_REASON_BY_TRANSFER))
			l->done = 1;
		if (ev->type == CSQ_EV_LEFT && r->leaving_expired &&
		    ev->reason == CSQ_REASON_LEAVE) {
			/* It went for its TTL in the record: so here. */
			copy = *ev;
			copy.reason = CSQ_REASON_TIMEOUT;
			if (r->emit != NULL)
				r->emit(r->arg, &copy);
			return;
		}
		break;
	default:
		break;
	}
	if (r->emit != NULL)
		r->emit(r->arg, ev);
}

/* The settings of servicer sid at a login, after the overrides. */
static void
rd_settings(const struct rd_run *r, const char *sid, uint32_t *capacity,
            uint32_t *offer_s, uint32_t *wrapup_s, const char **queues,
            const char **skills)
{
	const struct csq_replay_override *o;
	size_t i;

	for (i = 0; i < r->cfg->noverrides; i++) {
		o = &r->cfg->overrides[i];
		if (o->servicer[0] != '\0' && strcmp(o->servicer, sid) != 0)
			continue;
		if (o->has_capacity)
			*capacity = o->capacity;
		if (o->has_offer)
			*offer_s = o->offer_s;
		if (o->has_wrapup)
			*wrapup_s = o->wrapup_s;
		if (o->has_queues)
			*queues = o->queues;
		if (o->has_skills)
			*skills = o->skills;
	}
}

/* A login (or a change) of sid with its queues "a,b" and skills, as
 * HEARTBEAT. */
static void
rd_login(struct rd_run *r, const char *sid, uint32_t capacity,
         const char *queues, const char *skills)
{
	char names[CSQ_SERVICER_QUEUES][CSQ_ID_MAX + 1];
	struct csq_heartbeat_args a;
	struct csq_servicer_info info;
	uintptr_t si =
	    (uintptr_t)csq_dict_get(r->d->sv_by_id, sid, strlen(sid));
	const struct rd_servicer *s = si ? &r->d->servicers[si - 1] : NULL;
	const char *p, *comma;
	size_t len;

	memset(&a, 0, sizeof(a));
	a.servicer = sid;
	a.has_capacity = a.has_ttl = a.has_offer = a.has_wrapup = 1;
	a.capacity = capacity;
	a.ttl_s = CSQ_TTL_MAX;
	/* A servicer the record never shows offering or wrapping up: the
	 * configuration's default for a new servicer. */
	a.offer_s = s != NULL && s->has_offer ? s->offer_s
	                                      : r->cfg->limits.offer_timeout_s;
	a.wrapup_s =
	    s != NULL && s->has_wrapup ? s->wrapup_s : r->cfg->limits.wrapup_s;
	rd_settings(r, sid, &a.capacity, &a.offer_s, &a.wrapup_s, &queues,
	            &skills);
	a.has_skills = 1;
	a.skills = skills != NULL ? skills : "";
	p = queues;
	while (p != NULL && *p != '\0' && a.nqueues < CSQ_SERVICER_QUEUES) {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (len > 0 && len <= CSQ_ID_MAX) {
			memcpy(names[a.nqueues], p, len);
			names[a.nqueues][len] = '\0';
			a.queues[a.nqueues] = names[a.nqueues];
			a.nqueues++;
		}
		p = comma != NULL ? comma + 1 : NULL;
	}
	a.has_queues = a.nqueues > 0;
	(void)csq_heartbeat(r->c, r->now, &a, &info);
}

static void
rd_logout(struct rd_run *r, const char *sid)
{
	uint64_t n;

	(void)csq_logout(r->c, r->now, sid, &n);
}

static int
rd_removed(const struct rd_run *r, const char *sid, uint64_t ts)
{
	const struct csq_replay_change *ch;
	size_t i;

	for (i = 0; i < r->cfg->nchanges; i++) {
		ch = &r->cfg->changes[i];
		if (ch->kind == CSQ_REPLAY_REMOVE &&
		    strcmp(ch->servicer, sid) == 0 && ch->from_ms <= ts &&
		    ts < ch->to_ms)
			return 1;
	}
	return 0;
}

static void
rd_run_sv(struct rd_run *r, uint32_t i)
{
	const struct rd_sv_action *a = &r->d->sv[i];
	struct rd_svstate *s = &r->sv[a->servicer];
	const char *sid = r->d->servicers[a->servicer].id;
	int gone = rd_removed(r, sid, r->now);

	switch (a->kind) {
	case RD_SV_UP:
	case RD_SV_UPDATE:
		/* (An update of a servicer the record never showed log in:
		 * it was logged in.) */
		if (a->kind == RD_SV_UP || !s->up)
			s->paused = 0;
		s->up = 1;
		s->capacity = a->capacity;
		s->queues = a->queues;
		s->skills = a->skills;
		if (!gone)
			rd_login(r, sid, a->capacity, a->queues, a->skills);
		break;
	case RD_SV_DOWN:
		s->up = 0;
		if (!gone)
			rd_logout(r, sid);
		break;
	case RD_SV_PAUSE:
		s->paused = 1;
		if (!gone)
			(void)csq_pause(r->c, r->now, sid);
		break;
	case RD_SV_RESUME:
		s->paused = 0;
		if (!gone)
			(void)csq_resume(r->c, r->now, sid);
		break;
	}
}

/* The change idx ends: the servicer as the record has it now. */
static void
rd_restore(struct rd_run *r, uint32_t idx)
{
	const char *sid = r->cfg->changes[idx].servicer;
	uintptr_t si =
	    (uintptr_t)csq_dict_get(r->d->sv_by_id, sid, strlen(sid));
	const struct rd_svstate *s;

	if (si == 0 || rd_removed(r, sid, r->now))
		return;
	s = &r->sv[si - 1];
	if (!s->up)
		return;
	rd_login(r, sid, s->capacity, s->queues, s->skills);
	if (s->paused)
		(void)csq_pause(r->c, r->now, sid);
}

static void
rd_keepalive(struct rd_run *r)
{
	struct csq_servicer_info *all;
	struct csq_heartbeat_args a;
	struct csq_servicer_info info;
	size_t n, i;

	all = csq_servicers(r->c, r->now, &n);
	for (i = 0; i < n; i++) {
		memset(&a, 0, sizeof(a));
		a.servicer = all[i].id;
		(void)csq_heartbeat(r->c, r->now, &a, &info);
	}
	free(all);
}

/* The end of a's conversation: as the record's (by its index) ended, a
 * RELEASE, or a TRANSFER to where the record's agent handed it on (a
 * transfer the replay's csq refuses, a queue that refuses it, is a
 * RELEASE). */
static void
rd_release(struct rd_run *r, const struct rd_act *a, const struct rd_live *l)
{
	const struct rd_visit *v = &r->d->visits[a->idx];
	const struct rd_conv *cv = l->matches > 0 && l->matches - 1 < v->nconvs
	                               ? &v->convs[l->matches - 1]
	                               : NULL;
	struct csq_transfer_args t;
	struct csq_user_info info;
	int done;

	if (cv != NULL && cv->xfer && cv->xfer_queue[0] != '\0') {
		memset(&t, 0, sizeof(t));
		t.room = a->room;
		t.queue = cv->xfer_queue;
		t.has_needs = 1;
		t.needs = cv->xfer_needs;
		if (cv->xfer_prefer[0] != '\0') {
			t.prefer.has_prefer = 1;
			t.prefer.servicer = cv->xfer_prefer;
			t.prefer.seconds = cv->xfer_prefer_s;
		}
		if (csq_transfer(r->c, r->now, &t, &info) == CSQ_OK) {
			r->st.transfers++;
			return;
		}
	}
	(void)csq_release(r->c, r->now, a->room, &done);
}

/*
 * The record's user re-ENQUEUEd while it waited: the same ENQUEUE, with
 * what it changed, when the replay's user waits too. One that is in a
 * room, offered (csq would apply none of it), gone or not yet there
 * asked nothing in this day.
 */
static void
rd_play_again(struct rd_run *r, const struct rd_act *a)
{
	const struct rd_visit *v = &r->d->visits[a->idx];
	const struct rd_again *g;
	struct csq_enqueue_args e;
	struct csq_user_info info;

	if (a->gen >= v->nagains || r->live[a->idx].done ||
	    csq_where(r->c, r->now, v->user, &info) != CSQ_OK ||
	    info.state != CSQ_USER_WAITING)
		return;
	g = &v->agains[a->gen];
	memset(&e, 0, sizeof(e));
	e.user = v->user;
	e.has_tier = g->has_tier;
	e.tier = g->tier;
	e.has_queue = g->has_queue;
	e.queue = g->queue;
	e.has_needs = g->has_needs;
	e.needs = g->needs;
	if (csq_enqueue(r->c, r->now, &e, &info) == CSQ_OK)
		r->st.reenqueued++;
}

static void
rd_act(struct rd_run *r, struct rd_act *a)
{
	const struct rd_visit *v;
	struct rd_live *l;
	struct csq_enqueue_args e;
	struct csq_user_info info;
	const struct csq_replay_change *ch;
	int done;

	r->st.actions++;
	switch (a->kind) {
	case RD_A_ARRIVE:
		v = &r->d->visits[a->idx];
		memset(&e, 0, sizeof(e));
		e.user = v->user;
		e.has_queue = e.has_tier = 1;
		e.queue = v->queue;
		e.tier = v->tier;
		e.has_needs = v->needs[0] != '\0';
		e.needs = v->needs;
		if (v->prefer[0] != '\0') {
			e.prefer.has_prefer = 1;
			e.prefer.servicer = v->prefer;
			e.prefer.seconds = v->prefer_s;
		}
		csq_dict_put(r->byuser, v->user, strlen(v->user),
		             (void *)(uintptr_t)(a->idx + 1));
		if (csq_enqueue(r->c, r->now, &e, &info) != CSQ_OK) {
			r->st.refused++;
			r->live[a->idx].done = 1;
		}
		break;
	case RD_A_AGAIN:
		rd_play_again(r, a);
		break;
	case RD_A_GIVE_UP:
		v = &r->d->visits[a->idx];
		l = &r->live[a->idx];
		if (l->done ||
		    csq_where(r->c, r->now, v->user, &info) != CSQ_OK ||
		    (info.state != CSQ_USER_WAITING &&
		     info.state != CSQ_USER_OFFERED))
			break;
		r->leaving_expired = l->expired;
		(void)csq_leave(r->c, r->now, v->user, &done);
		r->leaving_expired = 0;
		break;
	case RD_A_RELEASE:
	case RD_A_ACCEPT:
	case RD_A_DECLINE:
		l = &r->live[a->idx];
		if (l->done || l->gen != a->gen)
			break;
		if (a->kind == RD_A_RELEASE)
			rd_release(r, a, l);
		else if (a->kind == RD_A_ACCEPT)
			(void)csq_accept(r->c, r->now, a->room, &done);
		else
			(void)csq_decline(r->c, r->now, a->room, &done);
		break;
	case RD_A_SV:
		rd_run_sv(r, a->idx);
		break;
	case RD_A_REMOVE:
		rd_logout(r, r->cfg->changes[a->idx].servicer);
		break;
	case RD_A_RESTORE:
		rd_restore(r, a->idx);
		break;
	case RD_A_ADD:
		ch = &r->cfg->changes[a->idx];
		rd_login(r, ch->servicer, ch->capacity,
		         ch->queues[0] != '\0' ? ch->queues : r->every_queue,
		         "");
		break;
	case RD_A_ADD_END:
		rd_logout(r, r->cfg->changes[a->idx].servicer);
		break;
	case RD_A_READY:
		(void)csq_ready(r->c, r->now, a->room, &done);
		break;
	case RD_A_KEEPALIVE:
		rd_keepalive(r);
		if (r->now + RD_KEEPALIVE <= r->d->last_ms)
			rd_push(r, RD_A_KEEPALIVE, r->now + RD_KEEPALIVE, 0, 0,
			        0, NULL);
		break;
	}
}

static int
rd_check(const struct csq_replay_config *cfg)
{
	const struct csq_replay_change *ch;
	const struct csq_replay_override *o;
	struct csq_skill_list skills;
	size_t i;

	if (cfg->nchanges > CSQ_REPLAY_CHANGES_MAX ||
	    cfg->noverrides > CSQ_REPLAY_CHANGES_MAX)
		return -1;
	for (i = 0; i < cfg->nchanges; i++) {
		ch = &cfg->changes[i];
		if (!csq_valid_id(ch->servicer, strlen(ch->servicer)) ||
		    ch->from_ms >= ch->to_ms ||
		    (ch->kind == CSQ_REPLAY_ADD &&
		     (ch->capacity < 1 || ch->capacity > CSQ_CAPACITY_MAX)))
			return -1;
	}
	for (i = 0; i < cfg->noverrides; i++) {
		o = &cfg->overrides[i];
		if ((o->servicer[0] != '\0' &&
		     !csq_valid_id(o->servicer, strlen(o->servicer))) ||
		    (o->has_capacity &&
		     (o->capacity < 1 || o->capacity > CSQ_CAPACITY_MAX)) ||
		    (o->has_offer && o->offer_s > CSQ_OFFER_MAX) ||
		    (o->has_wrapup && o->wrapup_s > CSQ_WRAPUP_MAX) ||
		    (o->has_queues && o->queues[0] == '\0') ||
		    (o->has_skills &&
		     csq_skills_parse(o->skills, CSQ_SERVICER_SKILLS,
		                      &skills) != CSQ_OK))
			return -1;
	}
	return 0;
}

/* Every action the record and the changes fix in advance. */
static void
rd_plan(struct rd_run *r)
{
	const struct csq_replay_day *d = r->d;
	const struct csq_replay_change *ch;
	const struct rd_visit *v;
	const struct rd_queue *q;
	struct rd_live *l;
	size_t i;
	uint32_t k;

	for (i = 0; i < d->nvisits; i++) {
		v = &d->visits[i];
		l = &r->live[i];
		rd_push(r, RD_A_ARRIVE, v->arrive_ms, v->arrive_id << 1,
		        (uint32_t)i, 0, NULL);
		for (k = 0; k < v->nagains; k++)
			rd_push(r, RD_A_AGAIN, v->agains[k].ts,
			        v->agains[k].id << 1, (uint32_t)i, k, NULL);
		if (v->end == RD_LEFT || v->end == RD_EXPIRED) {
			l->patience_ms = v->end_ms - v->arrive_ms;
			l->expired = v->end == RD_EXPIRED;
			rd_push(r, RD_A_GIVE_UP, v->end_ms, v->end_id << 1,
			        (uint32_t)i, 0, NULL);
			continue;
		}
		q = rd_queue_of(d, v->queue);
		l->patience_ms = q != NULL
		                     ? rd_patience(q, v->censor_ms,
		                                   rd_draw(r, v->user, 1, 0))
		                     : RD_NEVER;
		r->st.drawn_patience++;
		if (l->patience_ms != RD_NEVER &&
		    v->arrive_ms + l->patience_ms <= d->last_ms)
			rd_push(r, RD_A_GIVE_UP, v->arrive_ms + l->patience_ms,
			        rd_drawn_tie(r), (uint32_t)i, 0, NULL);
	}
	for (i = 0; i < d->nsv; i++)
		rd_push(r, RD_A_SV, d->sv[i].ts, d->sv[i].id << 1, (uint32_t)i,
		        0, NULL);
	for (i = 0; i < r->cfg->nchanges; i++) {
		ch = &r->cfg->changes[i];
		/* Before the record's actions of the same ms. */
		rd_push(r, ch->kind == CSQ_REPLAY_ADD ? RD_A_ADD : RD_A_REMOVE,
		        ch->from_ms, 1, (uint32_t)i, 0, NULL);
		rd_push(
		    r, ch->kind == CSQ_REPLAY_ADD ? RD_A_ADD_END : RD_A_RESTORE,
		    ch->to_ms, 1, (uint32_t)i, 0, NULL);
	}
	rd_push(r, RD_A_KEEPALIVE, d->first_ms + RD_KEEPALIVE, 0, 0, 0, NULL);
}

static void
rd_free_acts(struct csq_heap *h)
{
	struct csq_heap_node *n;

	while ((n = csq_heap_top(h)) != NULL) {
		csq_heap_remove(h, n);
		free(csq_container_of(n, struct rd_act, node));
	}
	csq_heap_free(h);
}

enum csq_status
csq_replay_day_run(const struct csq_replay_day *d,
                   const struct csq_replay_config *cfg, csq_emit_fn *emit,
                   void *arg, struct csq_replay_stats *stats)
{
	struct csq_limits limits = cfg->limits;
	struct rd_run r;
	struct csq_heap_node *top;
	struct rd_act *a;
	uint64_t dl;

	if (rd_check(cfg) != 0)
		return CSQ_ERANGE;
	memset(&r, 0, sizeof(r));
	r.d = d;
	r.cfg = cfg;
	r.emit = emit;
	r.arg = arg;
	r.now = d->first_ms;
	/* Users go by their patience, servicers by the record. */
	limits.user_ttl_s = 0;
	limits.servicer_ttl_s = CSQ_TTL_MAX;
	r.c = csq_new(&limits, cfg->seed ^ RD_SEED, rd_emit, &r);
	if (cfg->npolicies > 0 && csq_set_policies(r.c, r.now, cfg->policies,
	                                           cfg->npolicies) != CSQ_OK) {
		csq_free(r.c);
		return CSQ_ERANGE;
	}
	r.byuser = csq_dict_new(RD_SEED);
	r.ended = csq_dict_new(RD_SEED);
	r.live = csq_xcalloc(d->nvisits ? d->nvisits : 1, sizeof(*r.live));
	r.sv = csq_xcalloc(d->nservicers ? d->nservicers : 1, sizeof(*r.sv));
	csq_replay_day_queues(d, r.every_queue, sizeof(r.every_queue));
	csq_heap_init(&r.heap);
	rd_plan(&r);
	r.st.visits = d->nvisits;
	r.st.start_ms = d->first_ms;
	r.st.end_ms = d->last_ms;
	for (;;) {
		top = csq_heap_top(&r.heap);
		dl = csq_next_deadline(r.c);
		if (dl != UINT64_MAX && dl <= d->last_ms &&
		    (top == NULL || dl <= top->key)) {
			if (dl > r.now)
				r.now = dl;
			csq_expire(r.c, r.now);
			continue;
		}
		if (top == NULL || top->key > d->last_ms)
			break;
		csq_heap_remove(&r.heap, top);
		a = csq_container_of(top, struct rd_act, node);
		if (top->key > r.now)
			r.now = top->key;
		rd_act(&r, a);
		free(a);
	}
	rd_free_acts(&r.heap);
	csq_free(r.c);
	csq_dict_each(r.ended, rd_free_val, NULL);
	csq_dict_free(r.ended);
	csq_dict_free(r.byuser);
	free(r.live);
	free(r.sv);
	if (stats != NULL)
		*stats = r.st;
	return CSQ_OK;
}
