/*
 * The what-if replay of a record of the day (docs/day.md, "What-if
 * replay"): the record's arrivals, patience, conversations, offers and
 * servicers' shifts, played again through libcsq on a clock of its own,
 * under a configuration that may differ from the one the record ran
 * under (servicers added or removed for a time range, capacities, offer
 * and wrap-up times, strategy, queue policies).
 *
 * Two steps. A day (csq_replay_day_new) is fed the record's events in
 * order, as the audit and the report are, and keeps what the replay
 * needs of each stay of a user and of each servicer. csq_replay_day_run
 * then plays it: one csq state, a min-heap of actions (the record's, and
 * those the replay's own events call for: a release when a conversation
 * has lasted its length, an answer to an offer), and csq's deadlines,
 * all on the same clock; every event csq emits goes to the caller's
 * emit, as csqd would publish it. Pure and deterministic: every draw
 * (a censored patience, the length of a conversation the record does not
 * have, the answer to an offer it does not have) is a hash of the seed
 * and of who is drawn for, so that a change elsewhere in the day does not
 * reshuffle them.
 */
#ifndef CSQ_REPLAY_DAY_H
#define CSQ_REPLAY_DAY_H

#include <stddef.h>
#include <stdint.h>

#include "csq.h"

/* What a what-if does to one servicer over [from_ms, to_ms). */
enum csq_replay_change_kind {
	CSQ_REPLAY_ADD,    /* logged in over the range, with queues and
	                      capacity (and the overrides' offer, wrap-up) */
	CSQ_REPLAY_REMOVE, /* logged out over the range: what the record
	                      has it do meanwhile does not happen */
};

struct csq_replay_change {
	enum csq_replay_change_kind kind;
	char servicer[CSQ_ID_MAX + 1];
	uint64_t from_ms, to_ms;         /* from < to */
	uint32_t capacity;               /* ADD: 1..CSQ_CAPACITY_MAX */
	char queues[CSQ_QUEUE_LIST_MAX]; /* ADD: "a,b"; "": every queue
	                                    of the record (the overrides
	                                    apply on top) */
};

/* Settings of a servicer ("" every one) at each of its logins. */
struct csq_replay_override {
	char servicer[CSQ_ID_MAX + 1];
	int has_capacity, has_offer, has_wrapup, has_queues, has_skills;
	uint32_t capacity;                /* 1..CSQ_CAPACITY_MAX */
	char queues[CSQ_QUEUE_LIST_MAX];  /* "a,b": those it serves */
	char skills[CSQ_SKILLS_TEXT_MAX]; /* a SKILLS list; "" none */
	uint32_t offer_s;  /* 0..CSQ_OFFER_MAX, 0: assigned, not offered */
	uint32_t wrapup_s; /* 0..CSQ_WRAPUP_MAX */
};

#define CSQ_REPLAY_CHANGES_MAX 256

struct csq_replay_config {
	/* strategy, max_tier, max_queue_length, offer_max_missed,
	 * offer_retry_s; the TTLs are the replay's own (users leave by
	 * their patience, servicers by the record). */
	struct csq_limits limits;
	const struct csq_policy *policies; /* checked by the caller */
	size_t npolicies;
	uint64_t seed;
	const struct csq_replay_change *changes;
	size_t nchanges;
	const struct csq_replay_override *overrides; /* later ones win */
	size_t noverrides;
};

/* What a run did, beside its events. */
struct csq_replay_stats {
	uint64_t visits;           /* users' stays played */
	uint64_t drawn_patience;   /* censored: drawn beyond the censoring */
	uint64_t drawn_handle;     /* conversations the record lacks */
	uint64_t drawn_offers;     /* answers to offers the record lacks */
	uint64_t drawn_wrapups;    /* wrap-ups after those, ended early */
	uint64_t refused;          /* arrivals csq refused (a full queue) */
	uint64_t transfers;        /* conversations handed on as recorded */
	uint64_t reenqueued;       /* re-ENQUEUEs played (a change of tier,
	                              queue or needs of a waiting user) */
	uint64_t actions;          /* actions played */
	uint64_t events;           /* events emitted */
	uint64_t start_ms, end_ms; /* the period played */
};

struct csq_replay_day;

struct csq_replay_day *csq_replay_day_new(void);
void csq_replay_day_free(struct csq_replay_day *);
/* The record's next event, in order (csq_event_parse's). */
void csq_replay_day_event(struct csq_replay_day *, const struct csq_event *);
/* The end of the record: what is still open is censored at its last
 * event. Events after it are ignored. */
void csq_replay_day_end(struct csq_replay_day *);

/*
 * Plays the day under cfg, emitting every event to emit (may be NULL);
 * fills *stats when not NULL. Returns CSQ_OK, or CSQ_ERANGE for a change
 * or an override out of its ranges (nothing played). The day is not
 * changed: it may be played again under another configuration.
 */
enum csq_status csq_replay_day_run(const struct csq_replay_day *,
                                   const struct csq_replay_config *,
                                   csq_emit_fn *emit, void *arg,
                                   struct csq_replay_stats *stats);

/* The record's first and last event's times. */
void csq_replay_day_period(const struct csq_replay_day *, uint64_t *first_ms,
                           uint64_t *last_ms);
/* Every queue the record names, "a,b,c", sorted, into out (len bytes). */
void csq_replay_day_queues(const struct csq_replay_day *, char *out,
                           size_t len);

#endif
