/*
 * The state of libcsq, shared by the files that implement it (csq.c, the
 * public operations; servicer.c, servicers and their rooms; matcher.c, who
 * gets which room). Not part of the public interface.
 *
 * Ownership: struct csq owns every queue, user and servicer through its
 * dicts. A queue is freed when nothing refers to it any more (no user in it,
 * no servicer serving it), except the default queue, which always exists.
 */
#ifndef CSQ_STATE_H
#define CSQ_STATE_H

#include "csq.h"
#include "dict.h"
#include "heap.h"
#include "line.h"

struct csq_queue {
	struct csq_line *line;
	/* Ready servicers with a free room that serve this queue, keyed by
	 * the order of their last login or assignment: top = longest idle. */
	struct csq_heap avail;
	uint64_t refs; /* users in it + servicers serving it */
	size_t namelen;
	char name[];
};

enum csq_deadline_kind { CSQ_DL_USER, CSQ_DL_SERVICER };

/* A TTL deadline, embedded in the user or servicer it belongs to. */
struct csq_deadline {
	struct csq_heap_node node; /* key = deadline in ms */
	enum csq_deadline_kind kind;
};

struct csq_servicer;

/* A servicer's place in the avail heap of one queue it serves. */
struct csq_avail {
	struct csq_heap_node node; /* key = the servicer's last_order */
	struct csq_servicer *servicer;
};

/*
 * A user costs one allocation: the users dict links it through link (whose
 * len is the id's length) and keys it by id, stored here only. A waiting
 * user never has a room and an assigned one never has a deadline, so the
 * two share their storage: which one is live is in state.
 */
struct csq_user {
	struct csq_dict_node link; /* in csq->users */
	struct csq_queue *queue;
	uint64_t key; /* packed order key: tier and arrival sequence */
	uint64_t arrival_ms;
	uint32_t ttl_s; /* 0 = never expires while waiting */
	enum csq_user_state state;
	union {
		/* waiting: in the deadlines heap when ttl_s > 0 */
		struct csq_deadline deadline;
		struct { /* assigned: U2R */
			struct csq_servicer *servicer;
			uint64_t assigned_ms;
			uint32_t room;
		};
	};
	char id[];
};

#define csq_user_idlen(u) ((size_t)(u)->link.len)

struct csq_servicer {
	enum csq_servicer_status status;
	uint32_t capacity;
	uint32_t ttl_s;
	uint32_t active; /* busy rooms */
	/* S2R and R2U: rooms[i] is the user in room i or NULL. nrooms is
	 * max(capacity, highest busy room + 1): busy rooms above a lowered
	 * capacity live on until released. */
	uint32_t nrooms;
	struct csq_user **rooms;
	uint32_t nqueues;
	struct csq_queue *queues[CSQ_SERVICER_QUEUES];
	struct csq_avail avail[CSQ_SERVICER_QUEUES]; /* in queues[i]->avail */
	uint64_t last_order; /* event order of login or last new user */
	uint64_t last_ms;    /* its time, for idle_ms */
	struct csq_deadline deadline;
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
	struct csq_heap deadlines;
	uint64_t seed;  /* csq_new's: of the tables and the lines */
	uint64_t seq;   /* last order-key sequence handed out */
	uint64_t order; /* last servicer event order */
	uint64_t tie;   /* last deadline tie-breaker */
	struct csq_stats stats;
};

/* csq.c */
struct csq_queue *csq_queue_get(struct csq *, const char *name, size_t len,
                                int create);
void csq_queue_ref(struct csq_queue *);
void csq_queue_unref(struct csq *, struct csq_queue *);
void csq_deadline_set(struct csq *, struct csq_deadline *, uint64_t at_ms);
void csq_deadline_clear(struct csq *, struct csq_deadline *);
void csq_event_begin(struct csq_event *, enum csq_event_type, uint64_t now);
void csq_event_user(struct csq_event *, const struct csq_user *);
void csq_emit(struct csq *, const struct csq_event *);
void csq_user_free(struct csq *, struct csq_user *);
/* Makes u a waiting user with no deadline (its room fields go). */
void csq_user_set_waiting(struct csq_user *);
uint64_t csq_user_position(const struct csq_user *);

/* servicer.c: every change to a servicer's readiness, capacity, queues or
 * rooms sits between unaccount and account, which keep rooms_free and the
 * queues' avail heaps true. */
void csq_servicer_unaccount(struct csq *, struct csq_servicer *);
void csq_servicer_account(struct csq *, struct csq_servicer *);
int csq_servicer_has_free(const struct csq_servicer *);
uint32_t csq_servicer_free_room(const struct csq_servicer *);
int csq_servicer_room_exists(const struct csq_servicer *, uint32_t index);
void csq_servicer_set_capacity(struct csq_servicer *, uint32_t capacity);
void csq_servicer_trim(struct csq_servicer *);
void csq_room_name(const struct csq_servicer *, uint32_t index,
                   char out[CSQ_ROOM_MAX + 1]);
/* Users put back in line, to be matched (csq_rematch). */
struct csq_users {
	struct csq_user **v;
	size_t n, cap;
};
/* Requeues every user in s's rooms and removes s (logout or loss); drop
 * leaves the matching of its users to csq_rematch, remove does it. */
uint64_t csq_servicer_drop(struct csq *, struct csq_servicer *, uint64_t now,
                           enum csq_reason, struct csq_users *back);
void csq_rematch(struct csq *, struct csq_users *back, uint64_t now);
uint64_t csq_servicer_remove(struct csq *, struct csq_servicer *, uint64_t now,
                             enum csq_reason);

/* matcher.c */
/* from: the queue a user moved from just now (ENQUEUE QUEUE), else NULL. */
int csq_match_user(struct csq *, struct csq_user *,
                   const struct csq_queue *from, uint64_t now);
void csq_match_servicer(struct csq *, struct csq_servicer *, uint64_t now);
void csq_assign(struct csq *, struct csq_user *, struct csq_servicer *,
                uint32_t room, const struct csq_queue *from, uint64_t now);

#endif
