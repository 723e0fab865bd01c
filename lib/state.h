/*
 * The state of libcsq, shared by the files that implement it (csq.c, the
 * public operations on users and servicers; servicer.c, servicers and
 * strategies; room.c, rooms, conversations and wrap-ups; offer.c, offers;
 * transfer.c, transfers; matcher.c, who gets which room; deadline.c, the
 * deadlines). Not part of the public interface.
 *
 * Ownership: struct csq owns every queue, user and servicer through its
 * dicts, and each servicer owns its busy rooms. A queue is freed when
 * nothing refers to it any more (no user in it, no servicer serving it),
 * except the default queue, which always exists.
 */
#ifndef CSQ_STATE_H
#define CSQ_STATE_H

#include "csq.h"
#include "dict.h"
#include "heap.h"
#include "line.h"
#include "nameset.h"

/*
 * A queue's numbers (QSTATS, qstats.c), kept while the queue exists. The
 * ring holds the last CSQ_OUTCOMES outcomes, each the wait in ms of a user
 * matched, or CSQ_OUTCOME_ABANDONED; within counts those in it matched
 * within within_s seconds, the service level it was counted against.
 */
#define CSQ_OUTCOME_ABANDONED UINT32_MAX
struct csq_queue_counts {
	uint64_t matched, abandoned_leave, abandoned_timeout, overflowed;
	uint64_t wait_ms_sum;
	uint32_t *ring; /* NULL until the first outcome */
	uint32_t ring_len, ring_next, within, within_s;
};

/*
 * What the wait estimator learns of a queue (estimate.c): how long a user
 * of it holds a room, and how often users of each tier arrive. Integers,
 * so that a replay of the journal learns exactly what the run learned.
 */
#define CSQ_TIERS (CSQ_TIER_LIMIT + 1)
struct csq_estimate {
	uint64_t hold_ms; /* mean room time per user, moving */
	uint64_t holds;   /* samples of it so far */
	uint64_t last_arrival_ms[CSQ_TIERS];
	uint64_t gap_ms[CSQ_TIERS];   /* mean time between arrivals, moving */
	uint32_t arrivals[CSQ_TIERS]; /* counted up to the moving window */
	/* Of the users who waited: the time they waited and how many of
	 * them gave up, both moving sums (abandons in 1/1024ths). */
	uint64_t wait_area_ms, abandons;
};

/*
 * Skills (skill.c). A skill's name is interned: every servicer's skill
 * and every need-set's need points at the one struct csq_skill_name of
 * its name, counted, so that two lists compare by pointer. Lists are
 * sorted by that pointer (for the merge of csq_skills_satisfy).
 */
struct csq_skill_name {
	uint32_t refs;
	uint32_t len;
	char name[CSQ_SKILL_NAME_MAX + 1];
};
struct csq_skill {
	const struct csq_skill_name *name;
	uint32_t level;
};

struct csq_needline;

#define CSQ_NEEDS_MEMO      256 /* NEEDS texts remembered (a hash each) */
#define CSQ_NEEDS_MEMO_TEXT 48  /* the longest remembered, its bytes */

/*
 * A need-set: a user's needs taken as a set, interned (skill.c) and
 * numbered 1..CSQ_NEEDSETS_MAX (0: no needs), the number a user holds.
 * refs counts the users that hold it, in any state; one that no user
 * holds stays, with its need-lines, until its slot is wanted.
 */
struct csq_needset {
	uint32_t refs;
	uint32_t gen; /* c->needset_gen when made: names it in caches */
	uint16_t index;
	uint32_t n;
	struct csq_skill v[CSQ_USER_NEEDS];
	struct csq_needline *lines; /* one per queue, by next_in_set */
	size_t textlen;
	char text[CSQ_NEEDS_TEXT_MAX]; /* canonical */
};

/*
 * The users of one queue with one need-set wait in the queue's
 * need-line of it (needline.c), in service order, and the free
 * servicers of the queue that satisfy the need-set are in its avail
 * heap (struct csq_navail nodes), ordered by the queue's strategy (and
 * skill_order): the best eligible servicer of an arrival is the top.
 */
struct csq_needline {
	struct csq_queue *queue;
	struct csq_needset *set;
	struct csq_line *line;
	struct csq_heap avail;
	struct csq_needline *next_in_set;
	uint32_t slot; /* in queue->nls */
};

/*
 * The need-lines of one queue that a servicer may take, so that a match
 * and a room set free read those (a few) and not every need-line of the
 * queue (up to 256). Built from queue->nls at the first use after it
 * changed: valid while queue and gen are the queue's and its nls_gen
 * (a new number, from c->nls_gen, at each need-line made or freed in it,
 * and at the queue's creation), and set to gen 0 when the servicer's
 * skills change.
 */
struct csq_takes {
	const struct csq_queue *queue;
	uint64_t gen;
	uint32_t n, cap;
	struct csq_needline **v;
};

/* A servicer's place in a need-line's avail heap. Allocated once each,
 * kept by the servicer (s->nav), and reused: never moved. */
struct csq_navail {
	struct csq_heap_node node;
	struct csq_servicer *servicer;
	struct csq_needline *nl;
};

/*
 * The kinds of deadlines, all in one heap (struct csq's deadlines). Their
 * values are the order in which csq_expire acts on the kinds that are due
 * together (deadline.c); never renumbered, the journal's snapshots hold
 * them.
 */
enum csq_deadline_kind {
	CSQ_DL_USER,     /* a waiting or offered user's TTL */
	CSQ_DL_OFFER,    /* an offer runs out (a room) */
	CSQ_DL_SERVICER, /* a servicer's TTL */
	CSQ_DL_WRAPUP,   /* a wrap-up ends (a room) */
	CSQ_DL_RETRY,    /* a servicer's offer-retry window ends */
	/* The queue's clocks of a user in line (policy.c), and the window of
	 * one held for a preferred servicer (prefer.c): acted on after the
	 * kinds above have settled, by deadline. */
	CSQ_DL_OVERFLOW, /* the user moves to the overflow queue */
	CSQ_DL_AGING,    /* the user's tier grows (and maybe overflow) */
	CSQ_DL_PREFER,   /* the preference window runs out */
	CSQ_DL_RELAX,    /* the user's needs widen (then maybe the rest) */
	CSQ_DL_NOBODY,   /* a queue's grace with nobody runs out (nobody.c) */
	CSQ_DL_HOURS,    /* a queue opens or closes (hours.c) */
	CSQ_DL_KINDS
};

/* A deadline, embedded in what it belongs to; its kind is the node's tag. */
struct csq_deadline {
	struct csq_heap_node node; /* key = deadline in ms */
};

struct csq_queue {
	/* Its users without needs, in service order; those with needs are
	 * in nls, one need-line per need-set. */
	struct csq_line *line;
	struct csq_needline **nls;
	uint32_t nnls, capnls;
	uint64_t nls_gen; /* nls changed: servicers' takes to build again */
	/* Every user of the need-lines again, in service order: for
	 * positions and pages in O(log n) (NULL until the first). */
	struct csq_line *needy;
	uint64_t needs_waiting; /* users in the need-lines */
	/* Ready servicers with a free room that serve this queue, outside
	 * their retry windows, ordered by the queue's strategy (servicer.c,
	 * avail_key): top = the one that gets the next user. */
	struct csq_heap avail;
	/* users in it + servicers serving it + 1 for its policy */
	uint64_t refs;
	const struct csq_policy *policy; /* NULL: the defaults */
	uint64_t preferring; /* its users held for a preferred servicer */
	/* Kept by csq_servicer_account: servicers serving it, the capacity
	 * of the ready ones, and the free rooms that would take its user. */
	uint64_t nservicers, rooms_ready, rooms_free;
	/* Its nobody policy's state (nobody.c), NULL without one. */
	struct csq_nobody *nobody;
	struct csq_queue_counts counts;
	struct csq_estimate est;
	/* Business hours (hours.c): closed now, and the next change in
	 * the deadlines while its policy has hours. */
	struct csq_deadline hours;
	uint8_t closed;
	size_t namelen;
	char name[];
};

/*
 * A queue's state under its nobody policy (section 3c), while it has
 * one: since when nobody (as the policy counts) has served it, 0 while
 * somebody does; the grace deadline, running from since while nobody is
 * there and the users waiting are to go; fired once it ran out in this
 * spell of nobody. dirty: in c->nobody_dirty, its counters changed in
 * the operation under way (csq_nobody_settle looks again).
 */
struct csq_nobody {
	struct csq_deadline grace;
	struct csq_queue *queue;
	uint64_t since;
	uint8_t fired, dirty;
};

struct csq_servicer;
struct csq_room;

/* A servicer's place in the avail heap of one queue it serves. */
struct csq_avail {
	struct csq_heap_node node; /* key, tie: avail_key() */
	struct csq_servicer *servicer;
};

/* flags */
#define CSQ_USER_TRANSFERRED 0x01 /* ENQUEUE keeps its queue */
#define CSQ_USER_OVERFLOWED                                                    \
	0x02                     /* ENQUEUE naming a queue it overflowed       \
	                            from keeps its queue */
#define CSQ_USER_PREFERRING 0x04 /* waiting in a servicer's prefer line */
/* In line with needs, past every relax step of its queue: no struct
 * csq_wait is kept for them (policy.c); cleared when it joins a line. */
#define CSQ_USER_RELAXED 0x08

struct csq_user;

/*
 * What a waiting user has beyond its place, only while it has it: the
 * clocks of a queue whose policy has overflow or aging (policy.c), or a
 * window for a preferred servicer (prefer.c). One allocation of its own,
 * so that a user of a queue without a policy pays nothing for it.
 */
struct csq_wait {
	/* In line: the overflow or aging step to come; preferring: the
	 * window's end. */
	struct csq_deadline clock;
	struct csq_user *user;
	uint64_t joined_ms; /* joined its line: the clocks run from there */
	struct csq_servicer *prefer; /* preferring: the servicer; else NULL */
	uint32_t prefer_s;           /* preferring: the window's length */
	uint32_t relax_step; /* in line: its queue's relax steps passed */
};

/*
 * A user costs one allocation: the users dict links it through link (whose
 * len is the id's length) and keys it by id, stored here only. 80 bytes
 * before the id: what an offer or a conversation needs beyond the room
 * pointer lives in the room (struct csq_room), and what a policy's clocks
 * or a preferred servicer need in a struct csq_wait, so that the million
 * users who wait pay nothing for either. A waiting user is in its queue's
 * line, or, with CSQ_USER_PREFERRING, in the prefer line of the servicer
 * it waits for (prefer.c): never both.
 */
struct csq_user {
	struct csq_dict_node link; /* in csq->users */
	struct csq_queue *queue;
	uint64_t key; /* packed order key: tier and arrival sequence */
	uint64_t arrival_ms;
	uint32_t ttl_s; /* 0 = never expires while waiting or offered */
	uint8_t state;  /* enum csq_user_state */
	uint8_t flags;  /* CSQ_USER_* */
	uint16_t needs; /* its need-set's number, 0: none (in what was
	                   padding: a user without needs costs nothing) */
	/* waiting, offered: in the deadlines heap when ttl_s > 0 */
	struct csq_deadline deadline;
	union {
		struct csq_room *room; /* offered, assigned: U2R */
		struct csq_wait *wait; /* waiting: its clocks or window, or
		                          NULL when it has neither */
	};
	char id[];
};

#define csq_user_idlen(u) ((size_t)(u)->link.len)

/*
 * A busy room (enum csq_room_state, csq.h, but never CSQ_ROOM_FREE): a
 * free room has no struct csq_room (its slot in the servicer's rooms is
 * NULL); the others have one each, which exists only while the room is
 * busy.
 */
struct csq_room {
	struct csq_servicer *servicer;
	struct csq_user *user; /* offered, assigned: R2U; wrap-up: NULL */
	uint64_t since_ms; /* the offer, the assignment, the wrap-up's start */
	uint64_t taken_ms; /* offered or assigned first: the estimator's */
	/* offered: the offer runs out; wrap-up: it ends; assigned: none */
	struct csq_deadline deadline;
	uint32_t length_s; /* the deadline's whole length, for a rearm */
	uint32_t index;
	enum csq_room_state state;
};

struct csq_servicer {
	enum csq_servicer_status status;
	uint32_t capacity;
	uint32_t ttl_s;
	uint32_t active;   /* busy rooms: offered, assigned, in wrap-up */
	uint32_t offer_s;  /* 0: assigned at once */
	uint32_t wrapup_s; /* 0: a released room is free at once */
	uint32_t missed;   /* offers run out since the last ACCEPT or RESUME */
	uint32_t retry_s;  /* the retry window's whole length, for a rearm */
	/* Conversations it ended since its login, and their time from the
	 * offer or assignment to the end, all together (issue 38: the page's
	 * handled count and mean handle time). */
	uint64_t handled, handle_ms;
	/* S2R: rooms[i] is room i, NULL when free. nrooms is max(capacity,
	 * highest busy room + 1): busy rooms above a lowered capacity live on
	 * until they are free. */
	uint32_t nrooms;
	struct csq_room **rooms;
	uint32_t nqueues;
	struct csq_queue *queues[CSQ_SERVICER_QUEUES];
	struct csq_avail avail[CSQ_SERVICER_QUEUES]; /* in queues[i]->avail */
	/* The users of queues[i] who wait for this servicer only (prefer.c),
	 * in service order; NULL while there are none. */
	struct csq_line *prefer[CSQ_SERVICER_QUEUES];
	/* Its skills, sorted by name pointer (skill.c); and its places in
	 * the avail heaps of the need-lines it satisfies, nnav in use. */
	uint32_t nskills;
	struct csq_skill skills[CSQ_SERVICER_SKILLS];
	struct csq_navail **nav;
	uint32_t nnav, capnav;
	/* What csq_skills_satisfy found for need-set i: gen << 1 | may
	 * take, for the need-set of that gen (NULL without skills). */
	uint32_t *sat;
	/* takes[i]: the need-lines of queues[i] it may take (NULL without
	 * skills; needline.c, csq_needline_takes). */
	struct csq_takes *takes;
	uint64_t last_order; /* event order of login or last new user */
	uint64_t last_ms;    /* its time, for idle_ms */
	struct csq_deadline deadline; /* TTL */
	/* In the heap while an offer-retry window runs: no new user. */
	struct csq_deadline retry;
	size_t idlen;
	char id[];
};

struct csq {
	struct csq_limits limits;
	csq_emit_fn *emit;
	void *emit_arg;
	struct csq_dict *users;
	struct csq_dict *servicers;
	struct csq_dict *queues;
	struct csq_nameset *queue_names;  /* the queues by name (views) */
	struct csq_nameset *servicer_ids; /* the servicers by id (views) */
	struct csq_heap deadlines;
	uint64_t seed;     /* csq_new's: of the tables and the lines */
	uint64_t seq;      /* last order-key sequence handed out */
	uint64_t order;    /* last servicer event order */
	uint64_t tie;      /* last deadline tie-breaker */
	uint64_t event_id; /* last event's id */
	struct csq_stats stats;
	/* Skills: the interned names, and the need-sets by number. */
	struct csq_dict *skill_names;
	struct csq_needset *needsets[CSQ_NEEDSETS_MAX + 1];
	struct csq_dict *needset_texts; /* canonical text -> set */
	uint32_t needset_gen;           /* the last need-set's gen */
	uint64_t nls_gen;               /* the last queue->nls_gen */
	/* NEEDS texts as sent and the need-set each resolved to (skill.c):
	 * frontends send the same few, so most ENQUEUEs skip the parse. */
	struct csq_needs_memo {
		uint32_t gen; /* the need-set's; 0: empty */
		uint16_t index;
		uint8_t len;
		char text[CSQ_NEEDS_MEMO_TEXT];
	} needs_memo[CSQ_NEEDS_MEMO];
	/* The queue policies, sorted by name (policy.c). */
	struct csq_policy *policies;
	size_t npolicies;
	/* Queues with a nobody policy whose servicers changed in the
	 * operation under way (nobody.c). */
	struct csq_nobody **nobody_dirty;
	size_t nnobody_dirty, capnobody_dirty;
};

/*
 * What an operation put back in line and which servicers it gave free
 * rooms, to be matched once its changes are all made (csq_settle): a
 * user must not go into a room that the same operation is about to take
 * away, nor a freed room take a user before the users put back are in
 * line. Servicers are kept by id: one may be gone by then.
 */
struct csq_users {
	struct csq_user **v;
	size_t n, cap;
};
/* An operation puts back a user or two and frees a room or two (a
 * RELEASE frees one): the first CSQ_SETTLE_IN of each are kept in the
 * settle itself, and only more allocate (back.v and refill, NULL while
 * the inline arrays hold them all). A zeroed csq_settle is empty. */
#define CSQ_SETTLE_IN 2
struct csq_settle {
	struct csq_users back;
	char (*refill)[CSQ_ID_MAX + 1];
	size_t nrefill, caprefill;
	struct csq_user *back_in[CSQ_SETTLE_IN];
	char refill_in[CSQ_SETTLE_IN][CSQ_ID_MAX + 1];
};

/* csq.c */
struct csq_queue *csq_queue_get(struct csq *, const char *name, size_t len,
                                int create);
struct csq_queue *csq_queue_open(struct csq *, const char *name, size_t len);
void csq_queue_ref(struct csq_queue *);
void csq_queue_unref(struct csq *, struct csq_queue *);
void csq_event_begin(struct csq_event *, enum csq_event_type, uint64_t now);
void csq_event_user(struct csq_event *, const struct csq_user *);
void csq_event_needs(const struct csq *, struct csq_event *,
                     const struct csq_user *);
void csq_event_prefer(struct csq_event *, const struct csq_user *,
                      uint64_t now);
void csq_event_room(struct csq_event *, const struct csq_room *);
/* Gives ev the next event id and hands it to the emit callback. */
void csq_emit(struct csq *, struct csq_event *);
void csq_user_free(struct csq *, struct csq_user *);
uint32_t csq_user_tier(const struct csq_user *);
uint64_t csq_user_position(const struct csq_user *);
/* (Re)starts u's TTL from now, or clears it for a TTL of 0. */
void csq_user_deadline(struct csq *, struct csq_user *, uint64_t now);
/*
 * u, out of its room, goes back in its line at its old place (same key:
 * same tier and arrival; the queue's length limit does not apply) with
 * its TTL restarted; returns its position.
 */
uint64_t csq_user_requeue(struct csq *, struct csq_user *, uint64_t now);
/* A waiting or offered user gives up (LEAVE) or times out: event left. */
void csq_user_abandon(struct csq *, struct csq_user *, uint64_t now,
                      enum csq_reason, struct csq_settle *);
struct csq_servicer *csq_servicer_get(const struct csq *, const char *sid);
/* Resolves a room id: CSQ_EROOM, CSQ_ENOTFOUND, or CSQ_OK with *s, *idx. */
enum csq_status csq_room_lookup(const struct csq *, const char *room,
                                struct csq_servicer **s, uint32_t *idx);
void csq_user_info_at(const struct csq *, const struct csq_user *, uint64_t now,
                      uint64_t pos, struct csq_user_info *out);

/* deadline.c */
void csq_deadline_init(struct csq_deadline *, enum csq_deadline_kind);
void csq_deadline_set(struct csq *, struct csq_deadline *, uint64_t at_ms);
void csq_deadline_clear(struct csq *, struct csq_deadline *);
int csq_deadline_running(const struct csq_deadline *);
enum csq_deadline_kind csq_deadline_kind(const struct csq_deadline *);
uint64_t csq_ms(uint32_t seconds);

/* servicer.c: every change to a servicer's readiness, capacity, queues,
 * rooms, retry window or order sits between unaccount and account, which
 * keep rooms_free, rooms_busy and the queues' avail heaps true. */
void csq_servicer_unaccount(struct csq *, struct csq_servicer *);
void csq_servicer_account(struct csq *, struct csq_servicer *);
/* Ready, a free room below the capacity, no retry window running. */
int csq_servicer_has_free(const struct csq_servicer *);
uint32_t csq_servicer_free_count(const struct csq_servicer *);
void csq_servicer_set_capacity(struct csq_servicer *, uint32_t capacity);
/* The avail heaps again, keyed by the strategy now in the limits. */
void csq_servicers_rekey(struct csq *);
void csq_avail_key(const struct csq *, const struct csq_servicer *,
                   const struct csq_queue *, uint64_t *key, uint64_t *tie);
/* Removes s (logout or loss): every user in its rooms goes back in line
 * (requeued, to back), its wrap-ups end silently, then servicer_down. */
uint64_t csq_servicer_drop(struct csq *, struct csq_servicer *, uint64_t now,
                           enum csq_reason, struct csq_settle *);
/* The same, then matches its users. */
uint64_t csq_servicer_remove(struct csq *, struct csq_servicer *, uint64_t now,
                             enum csq_reason);
/* Why s takes no new user (issue 38): paused, by hand (CSQ_REASON_PAUSE)
 * or after missed offers (CSQ_REASON_MISSED_OFFERS), else
 * CSQ_REASON_NONE; and resting after a DECLINE, for this many ms more
 * (0: not resting). */
enum csq_reason csq_servicer_paused_by(const struct csq *,
                                       const struct csq_servicer *);
uint64_t csq_servicer_resting_ms(const struct csq_servicer *, uint64_t now);
/* PAUSE (reason pause) or an auto-pause (reason missed_offers). */
void csq_servicer_pause(struct csq *, struct csq_servicer *, uint64_t now,
                        enum csq_reason, struct csq_settle *);

/* room.c: rooms, their S2R / R2U maps, conversations and wrap-ups. */
int csq_room_exists(const struct csq_servicer *, uint32_t index);
/* The lowest free room below the capacity; only when one is free. */
uint32_t csq_room_free_index(const struct csq_servicer *);
void csq_room_name(const struct csq_servicer *, uint32_t index,
                   char out[CSQ_ROOM_MAX + 1]);
/* The room named room when it is busy in state; else NULL, and *status
 * says whether the name was an error (CSQ_EROOM, CSQ_ENOTFOUND). */
struct csq_room *csq_room_find(const struct csq *, const char *room,
                               enum csq_room_state, enum csq_status *status);
/*
 * Waiting u leaves its line for free room index of s, which becomes
 * offered or assigned (state); s's last new user is u. Accounted.
 */
struct csq_room *csq_room_take(struct csq *, struct csq_user *,
                               struct csq_servicer *, uint32_t index,
                               enum csq_room_state, uint64_t now);
/* Room index of s becomes busy (s->rooms[index], s->active), and a free
 * one again; both between csq_servicer_unaccount and _account. */
struct csq_room *csq_room_open(struct csq_servicer *, uint32_t index,
                               enum csq_room_state, struct csq_user *,
                               uint64_t now);
void csq_room_close(struct csq *, struct csq_room *);
void csq_room_trim(struct csq_servicer *);
/*
 * The user of offered or assigned room r goes back in line at its old
 * place (csq_user_requeue), r is free; event type (requeued, declined)
 * with reason, and the user to st. Between unaccount and account.
 */
void csq_room_return(struct csq *, struct csq_room *, uint64_t now,
                     enum csq_event_type, enum csq_reason, struct csq_settle *);
/*
 * The conversation in r ends (by: RELEASE, LEAVE, TRANSFER): the user
 * leaves it, event released, and the room goes into wrap-up (event
 * wrapup) or is free (s is then to be refilled). The user is not freed:
 * the caller frees it, or moves it (a transfer).
 */
void csq_room_end(struct csq *, struct csq_room *, uint64_t now,
                  enum csq_reason by, struct csq_settle *);
/* A wrap-up ends (READY, or its deadline): event ready, the room free. */
void csq_room_ready(struct csq *, struct csq_room *, uint64_t now,
                    struct csq_settle *);

/* offer.c */
/* Offers waiting user u the free room index of s (s->offer_s > 0). */
void csq_offer(struct csq *, struct csq_user *, struct csq_servicer *,
               uint32_t index, const struct csq_queue *from,
               enum csq_reason why, uint64_t now);
/* The offer in r runs out: declined by timeout, missed, maybe a pause. */
void csq_offer_expire(struct csq *, struct csq_room *, uint64_t now,
                      struct csq_settle *);
/* The offers of s go back (requeued with reason). */
void csq_offer_withdraw_all(struct csq *, struct csq_servicer *, uint64_t now,
                            enum csq_reason, struct csq_settle *);
/* s's retry window ends: it takes new users again. */
void csq_offer_retry_end(struct csq *, struct csq_servicer *,
                         struct csq_settle *);

/* csq.c: where a waiting user waits. */
/* u's struct csq_wait (u waiting), made when missing. */
struct csq_wait *csq_user_wait(struct csq_user *);
/* u's struct csq_wait goes, its deadline with it. */
void csq_user_wait_free(struct csq *, struct csq_user *);
/* u, in no line, joins its queue's line at its key; its queue's clocks
 * start (policy.c). Returns its position. */
uint64_t csq_user_join_line(struct csq *, struct csq_user *, uint64_t now);
/* u leaves the place it waits in: its queue's line (its clocks stop) or
 * its servicer's prefer line (the window ends, silently). */
void csq_user_leave_line(struct csq *, struct csq_user *);
/* u's position where it waits (a prefer line's, for a preferring user). */
uint64_t csq_user_wait_position(const struct csq_user *);

/* policy.c */
const struct csq_policy *csq_policy_find(const struct csq *, const char *name,
                                         size_t len);
uint64_t csq_queue_max_length(const struct csq *, const struct csq_queue *);
uint32_t csq_queue_service_level(const struct csq_queue *);
int csq_policy_has_clocks(const struct csq_queue *);
/* u in its queue's line has a clock: its queue's, or relax steps. */
int csq_policy_user_clocks(const struct csq_user *);
/* A waiting u's time to its next relax step; -1 when none comes. */
int64_t csq_policy_relax_ms(const struct csq_user *, uint64_t now);
/* u's needs changed in its line: its relax steps from the first, its
 * clocks armed anew from when it joined. */
void csq_policy_refresh(struct csq *, struct csq_user *, uint64_t now);
int csq_policy_clock_fits(const struct csq_queue *, uint64_t joined,
                          enum csq_deadline_kind, uint64_t at);
/* u joined its line now: joined_ms, and the first step of its clocks. */
void csq_policy_start(struct csq *, struct csq_user *, uint64_t now);
/* u's overflow or aging deadline passed: the step (an event, a move). */
void csq_policy_act(struct csq *, struct csq_user *, uint64_t now);
/* u's queue clock, when the operation under way left it due: acted on. */
void csq_policy_settle(struct csq *, struct csq_user *, uint64_t now);
/* Waiting u (in its queue's line) moves to queue to with its key: an
 * overflow (reason none), nobody's move (reason nobody) or a closing
 * time (reason closed). A free room
 * there takes it (matched or offered, from_queue), else overflowed. */
void csq_policy_move(struct csq *, struct csq_user *, const char *to,
                     enum csq_reason, uint64_t now);

/* nobody.c (section 3c) */
enum csq_policy_error csq_nobody_check(const struct csq_policy *v, size_t n,
                                       size_t i);
/* Nobody (as q's policy counts) serves q now. */
int csq_nobody_there(const struct csq_queue *);
/* q's servicer counters changed: looked at again by csq_nobody_settle. */
void csq_nobody_touch(struct csq *, struct csq_queue *);
/* The queues touched in this operation: their spells of nobody begin or
 * end (the grace armed or cleared). No event. */
void csq_nobody_settle(struct csq *, uint64_t now);
/* q's policy is now p's (NULL: none): its state made, kept or freed. */
void csq_nobody_policy(struct csq *, struct csq_queue *, uint64_t now);
void csq_nobody_free(struct csq *, struct csq_queue *);
/* The grace ran out: the users waiting move or leave, one event each. */
void csq_nobody_act(struct csq *, struct csq_nobody *, uint64_t now);
/* Where an arrival in *q goes while nobody serves *q: *q (wait), its
 * fallback (followed), or CSQ_ENOBODY. */
enum csq_status csq_nobody_route(struct csq *, struct csq_queue **q);
/* A restart: every spell of nobody begins now, its grace from now. */
void csq_nobody_rearm(struct csq *, struct csq_queue *, uint64_t now);
int csq_policy_overflowed_from(const struct csq *, const struct csq_user *,
                               const char *named, size_t len);

/* hours.c */
void csq_hours_init(struct csq_queue *);
void csq_hours_free(struct csq *, struct csq_queue *);
int csq_queue_closed(const struct csq_queue *);
/* Its next change, epoch ms, 0 for none. */
uint64_t csq_hours_next_ms(const struct csq_queue *);
/* q's policy changed, or its deadline passed: open or closed now, its
 * next change armed; on a change, its event and what it does. */
void csq_hours_apply(struct csq *, struct csq_queue *, uint64_t now);
/* Where an arrival in *q goes while *q is closed: *q itself (wait), its
 * fallback queue (followed), or CSQ_ECLOSED with *opens_ms. */
enum csq_status csq_hours_route(struct csq *, struct csq_queue **q,
                                uint64_t *opens_ms);

/* prefer.c */
int csq_servicer_queue_index(const struct csq_servicer *,
                             const struct csq_queue *);
/* The servicer PREFER names, if logged in and serving q; else NULL. */
struct csq_servicer *csq_prefer_target(const struct csq *,
                                       const struct csq_prefer_args *,
                                       const struct csq_queue *q,
                                       uint16_t needs);
/* u (in no line) into s's prefer line of its queue: its position. */
uint64_t csq_prefer_insert(struct csq *, struct csq_user *,
                           struct csq_servicer *);
void csq_prefer_remove(struct csq_user *);
uint64_t csq_prefer_position(const struct csq_user *);
/* Starts (or starts again) u's window of seconds. */
void csq_prefer_window(struct csq *, struct csq_user *, uint32_t seconds,
                       uint64_t now);
uint64_t csq_prefer_end(struct csq *, struct csq_user *, enum csq_reason,
                        uint64_t now);
void csq_prefer_expire(struct csq *, struct csq_user *, uint64_t now);
void csq_prefer_servicer_gone(struct csq *, struct csq_servicer *,
                              enum csq_reason, uint64_t now,
                              struct csq_settle *);
void csq_prefer_queues_change(struct csq *, struct csq_servicer *,
                              struct csq_queue *const *qs, uint32_t n,
                              struct csq_line **out, uint64_t now,
                              struct csq_settle *);

/* skill.c */
void csq_skills_init(struct csq *);
void csq_skills_free(struct csq *);
/* The servicer's skills become list (interned). */
void csq_servicer_set_skills(struct csq *, struct csq_servicer *,
                             const struct csq_skill_list *);
void csq_servicer_skills_free(struct csq *, struct csq_servicer *);
void csq_servicer_sat_free(struct csq_servicer *); /* s is going */
/* 1 when s has every need of n at its level; *sum (may be NULL) gets the
 * sum of s's levels on them. */
int csq_skills_satisfy(const struct csq_servicer *, const struct csq_needset *,
                       uint32_t *sum);
/* csq_skills_satisfy without a sum: the memo's answer inline when it
 * has one (a servicer's list of the need-lines it may take asks it for
 * every need-line of the queue, csq_needline_takes). */
static inline int
csq_may_take(const struct csq_servicer *s, const struct csq_needset *n)
{
	if (s->sat != NULL && s->sat[n->index] >> 1 == n->gen)
		return (int)(s->sat[n->index] & 1);
	return csq_skills_satisfy(s, n, NULL);
}
/* The need-set of list (interned, not yet held): its number in *index,
 * 0 for the empty list; CSQ_ENEEDSETS when none is free. */
enum csq_status csq_needset_get(struct csq *, const struct csq_skill_list *,
                                uint16_t *index);
/* Parses text and finds its need-set: CSQ_ESKILL, CSQ_ENEEDSETS. */
enum csq_status csq_needs_resolve(struct csq *, const char *text,
                                  uint16_t *index);
void csq_needset_hold(struct csq *, uint16_t index);
void csq_needset_release(struct csq *, uint16_t index);
/* The canonical text of need-set index ("" for 0). */
const char *csq_needset_text(const struct csq *, uint16_t index);
void csq_servicer_skills_text(const struct csq_servicer *,
                              char out[CSQ_SKILLS_TEXT_MAX]);

/* needline.c: a queue's lines, one without needs, one per need-set. */
/* The line u waits in, in its queue (not for a preferring user); with
 * create, its need-line is made when missing, else NULL then. */
struct csq_line *csq_needline_of(struct csq *, struct csq_user *, int create);
struct csq_needline *csq_needline_find(const struct csq *,
                                       const struct csq_queue *, uint16_t set);
/* u joins / leaves its line; join returns its position in the queue. */
uint64_t csq_needline_enter(struct csq *, struct csq_user *);
void csq_needline_leave(struct csq *, struct csq_user *);
/* u's position in its queue, over every line; 0 when in none. */
uint64_t csq_needline_position(const struct csq_user *);
/* 1 when a user of q's lines waits that s may take. */
int csq_needline_servable(const struct csq_servicer *,
                          const struct csq_queue *);
/* 1 when key is in one of q's lines. */
int csq_needline_has_key(const struct csq_queue *, uint64_t key);
/* The users in q's lines (without those held for a servicer). */
uint64_t csq_needline_count(const struct csq_queue *);
/* Line i of q: 0 its users without needs, 1 those with (NULL when
 * none yet), NULL past them: every user of q's lines once. */
struct csq_line *csq_needline_line(const struct csq_queue *, uint32_t i);
/* Frees q's need-lines (q is going). */
void csq_needline_free_queue(struct csq *, struct csq_queue *);
void csq_needline_free(struct csq *, struct csq_needline *);
/* QUEUE's page over every line, merged in service order. */
void csq_needline_range(const struct csq_queue *, uint64_t offset,
                        uint32_t count,
                        void (*fn)(void *, const struct csq_user *), void *arg);
/* account / unaccount's part: s's places in the need-lines' heaps. */
void csq_navail_unaccount(struct csq_servicer *);
void csq_navail_free(struct csq_servicer *); /* s is going */
void csq_navail_account(struct csq *, struct csq_servicer *);
void csq_navail_key(const struct csq *, const struct csq_servicer *,
                    const struct csq_needline *, uint64_t *key, uint64_t *tie);
/* The need-lines of s->queues[i] that s may take (s has skills). */
const struct csq_takes *csq_needline_takes(struct csq_servicer *, uint32_t i);
/* Its list is built again at its next use (its skills changed). */
void csq_needline_takes_forget(struct csq_servicer *);
/* A free servicer that may take a user of nl: the strategy's, or NULL. */
struct csq_servicer *csq_needline_best_servicer(const struct csq_needline *);

/* qstats.c */
void csq_qstats_matched(struct csq_queue *, uint64_t waited_ms);
void csq_qstats_abandoned(struct csq_queue *, enum csq_reason,
                          uint64_t waited_ms);
void csq_qstats_relevel(struct csq_queue *);
void csq_qstats_free(struct csq_queue *);
void csq_qstats_fill(const struct csq *, const struct csq_queue *, uint64_t now,
                     struct csq_queue_stats *);

/* estimate.c */
void csq_estimate_hold(struct csq_estimate *, uint64_t ms);
void csq_estimate_arrival(struct csq_estimate *, uint32_t tier, uint64_t now);
/* A user left the line: matched (abandoned 0) or gave up, after waited_ms. */
void csq_estimate_outcome(struct csq_estimate *, uint64_t waited_ms,
                          int abandoned);
int64_t csq_estimate_line(const struct csq_queue *, uint64_t pos, uint32_t tier,
                          uint64_t now);
int64_t csq_estimate_new_arrival(const struct csq *, const struct csq_queue *,
                                 uint64_t now);
/* A waiting user at pos (its wait position), or offered (0). */
int64_t csq_estimate_user(const struct csq_user *, uint64_t pos, uint64_t now);

/* matcher.c */
/* from: the queue a user moved from just now (ENQUEUE QUEUE, a policy's
 * move), else NULL; why: what placed a waiting user at once, for its
 * matched or offered (enqueue, overflow, nobody, closed; none for an
 * arrival or a freed room). */
int csq_match_user(struct csq *, struct csq_user *,
                   const struct csq_queue *from, enum csq_reason why,
                   uint64_t now);
void csq_match_servicer(struct csq *, struct csq_servicer *, uint64_t now);
/* Puts waiting user u into room index of s: assigned at once. */
void csq_assign(struct csq *, struct csq_user *, struct csq_servicer *,
                uint32_t index, const struct csq_queue *from,
                enum csq_reason why, uint64_t now);
void csq_settle_back(struct csq_settle *, struct csq_user *);
void csq_settle_refill(struct csq_settle *, const struct csq_servicer *);
/*
 * Matches what st collected, then empties it: the users put back, best
 * first, each while it heads its line; then the servicers with rooms
 * freed, in the order they were freed.
 */
void csq_settle(struct csq *, struct csq_settle *, uint64_t now);

#endif
