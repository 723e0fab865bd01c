/*
 * The fairness audit: fed a record's events in order (csq_event_parse),
 * it follows every user, room and waiting line and proves what csq
 * promises, or names the events that break it:
 *
 * - every user accounted for: each arrival ends matched, left (by its
 *   reason) or expired, or is still waiting or in a room at the end; no
 *   user goes with its servicer without being requeued ("lost");
 * - no room with two users, no user offered twice or in two rooms;
 * - no user overtaken: when a servicer is offered or matched a user of a
 *   queue and tier, nobody of that queue and tier who arrived earlier is
 *   still waiting, unless a documented reason excuses it, which is named
 *   (a preferred servicer, skills, aging, overflow, a transfer, a
 *   declined or missed offer, a requeue, an arrival before the record
 *   began). Skills are checked against the record: it keeps each
 *   servicer's skills (servicer_up, servicer_updated) and each user's
 *   needs in force (queued, rescored, offered, matched, transferred,
 *   relaxed), and excuses an overtake by skills only when the
 *   servicer's skills did not meet the earlier user's needs then. A
 *   preference window on record (queued, transferred with prefer)
 *   excuses only when it was for another servicer than the one that
 *   took the later user and still open then; a move into a free room
 *   only when a policy made it (matched's reason; not enqueue);
 * - no event lost: the ids follow one another.
 *
 * Users and rooms that the record first shows in the middle of their
 * life (a record that starts after csqd did) are taken as they come.
 * Pure: no I/O; the caller reads the files (daemon/csq_day.c).
 */
#ifndef CSQ_AUDIT_H
#define CSQ_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "csq.h"

enum csq_audit_kind {
	CSQ_AUDIT_OVERTAKEN,  /* served out of turn, no reason */
	CSQ_AUDIT_TWO_USERS,  /* a room given to a second user */
	CSQ_AUDIT_TWO_OFFERS, /* a user offered (or placed) twice */
	CSQ_AUDIT_LOST,       /* a user gone without an event saying so */
	CSQ_AUDIT_STRAY,      /* an event that does not fit the user's state */
	CSQ_AUDIT_GAP,        /* ids missing: the record is not whole */
	CSQ_AUDIT_KINDS
};

/* The reasons an overtake may have, as counted in the summary. */
enum csq_audit_excuse {
	CSQ_EXCUSE_PREFER,
	CSQ_EXCUSE_SKILLS,
	CSQ_EXCUSE_AGING,
	CSQ_EXCUSE_OVERFLOW,
	CSQ_EXCUSE_TRANSFER,
	CSQ_EXCUSE_DECLINED,
	CSQ_EXCUSE_REQUEUE,
	CSQ_EXCUSE_BEFORE,
	CSQ_EXCUSE_UNRECORDED, /* the earlier user has needs, and the
	                          servicer's skills are not on record */
	CSQ_EXCUSES
};

#define CSQ_AUDIT_IDS      5
#define CSQ_AUDIT_TEXT_MAX 256

struct csq_audit_finding {
	enum csq_audit_kind kind;
	uint64_t ids[CSQ_AUDIT_IDS]; /* the events involved, in order */
	int nids;
	char text[CSQ_AUDIT_TEXT_MAX];
};

struct csq_audit_summary {
	uint64_t events, unknown_events; /* read; of types not known */
	uint64_t first_id, last_id;
	uint64_t arrivals; /* users the record saw arrive */
	uint64_t before;   /* users present before it began */
	uint64_t matched, left, expired, still_waiting, in_rooms;
	uint64_t checked; /* offers and matches checked for order */
	/* Users passed over to check an arrival's position against the
	 * windows on record: only while one may be open, so the audit
	 * stays linear in the record (tests count it). */
	uint64_t walked;
	uint64_t excused[CSQ_EXCUSES];
	uint64_t findings[CSQ_AUDIT_KINDS];
};

struct csq_audit;

struct csq_audit *csq_audit_new(void);
void csq_audit_free(struct csq_audit *);
/* One event, in the record's order. */
void csq_audit_event(struct csq_audit *, const struct csq_event *);
/* An event of a type this csq does not know (only its id counts). */
void csq_audit_unknown(struct csq_audit *, uint64_t id);
/* One line of a record (csq_event_parse, then one of the two above);
 * -1 with err set (CSQ_PARSE_ERR_MAX bytes) when it is not an event. */
int csq_audit_line(struct csq_audit *, const char *line, size_t len, char *err);
/* The end of the record: the users left waiting and in rooms. */
void csq_audit_end(struct csq_audit *);
const struct csq_audit_summary *csq_audit_summary(const struct csq_audit *);
/* The findings so far, in the order found. */
const struct csq_audit_finding *csq_audit_findings(const struct csq_audit *,
                                                   size_t *n);
const char *csq_audit_kind_name(enum csq_audit_kind);
const char *csq_audit_excuse_name(enum csq_audit_excuse);

#endif
