/*
 * libcsq: the customer-service queue matcher as a deterministic state machine.
 *
 * No sockets, no clock reads, no global state: every call that depends on time
 * takes now_ms, and every effect other than the return value comes out as a
 * struct csq_event through the emit callback given to csq_new(), in causal
 * order, before the call returns.
 */
#ifndef CSQ_H
#define CSQ_H

#include <stddef.h>
#include <stdint.h>

#include "tzif.h"

#define CSQ_VERSION "0.1.0"

#define CSQ_ID_MAX             64 /* bytes in a user, servicer or queue id */
#define CSQ_ROOM_MAX           (CSQ_ID_MAX + 1 + 4) /* "<servicer>/<index>" */
#define CSQ_TIER_LIMIT         15    /* max_tier may be at most this */
#define CSQ_CAPACITY_MAX       1000  /* rooms per servicer */
#define CSQ_SERVICER_QUEUES    32    /* queues one servicer may serve */
#define CSQ_TTL_MAX            86400 /* seconds, for users and servicers */
#define CSQ_RANGE_COUNT_MAX    1000  /* entries in one QUEUE reply */
#define CSQ_RANGE_COUNT_DEF    20
#define CSQ_DEFAULT_QUEUE      "default"
#define CSQ_OFFER_MAX          600  /* seconds a servicer may take to accept */
#define CSQ_WRAPUP_MAX         3600 /* seconds of wrap-up after a conversation */
#define CSQ_RETRY_MAX          3600 /* seconds without offers after a decline */
#define CSQ_MISSED_MAX         1000 /* offer_max_missed */
#define CSQ_DEFAULT_MAX_MISSED 3
#define CSQ_DEFAULT_RETRY      10   /* seconds */
#define CSQ_PREFER_MAX         3600 /* seconds of a preference window */
#define CSQ_POLICY_SECONDS_MAX                                                 \
	86400                          /* overflow_after, aging_every,         \
	                                  service_level */
#define CSQ_DEFAULT_SERVICE_LEVEL 20   /* seconds */
#define CSQ_OUTCOMES              1000 /* service_level_pct: the last ones */
#define CSQ_QUEUE_LENGTH_MAX      100000000 /* max_length at most */
#define CSQ_QUEUES_LIMIT          100000000 /* max_queues at most */
#define CSQ_DEFAULT_MAX_QUEUES    100000    /* max_queues */
#define CSQ_POLICIES_MAX          1000      /* entries of the queues list */
/* Skills (protocol.md section 3c): "name[:level],..." lists. */
#define CSQ_SKILL_NAME_MAX  32  /* bytes of a skill's name */
#define CSQ_SKILL_LEVEL_MAX 100 /* levels are 1..this; left out: 1 */
#define CSQ_SERVICER_SKILLS 32  /* skills of one servicer */
#define CSQ_USER_NEEDS      8   /* needs of one user */
#define CSQ_NEEDSETS_MAX    256 /* distinct need-sets in use at once */
/* A skill list as text, with its NUL: "name:100," per entry. */
#define CSQ_SKILLS_TEXT_MAX (CSQ_SERVICER_SKILLS * (CSQ_SKILL_NAME_MAX + 5))
#define CSQ_NEEDS_TEXT_MAX  (CSQ_USER_NEEDS * (CSQ_SKILL_NAME_MAX + 5))
#define CSQ_QSTATS_GROUPS   8 /* need-sets QSTATS lists, the largest */
/* A queue's relax policy: its steps, and the bytes of a step's drop
 * list with its NUL (a policy is copied whole, a configuration holds
 * 1000 of them: both kept small). */
#define CSQ_RELAX_STEPS    4
#define CSQ_RELAX_DROP_MAX 100

/* A servicer's queues as one string, "a,b,c", with its NUL. */
#define CSQ_QUEUE_LIST_MAX (CSQ_SERVICER_QUEUES * (CSQ_ID_MAX + 1))

/* Results of every operation; the daemon turns them into error replies. */
enum csq_status {
	CSQ_OK = 0,
	CSQ_EUSER,        /* invalid user id */
	CSQ_ESERVICER,    /* invalid servicer id */
	CSQ_EQUEUE,       /* invalid queue id */
	CSQ_EROOM,        /* invalid room id */
	CSQ_ERANGE,       /* an argument is out of its range */
	CSQ_ENOTFOUND,    /* no such servicer or room */
	CSQ_EFULL,        /* queue at its maximum length */
	CSQ_ETRYAGAIN,    /* engine unavailable, nothing changed */
	CSQ_EEXHAUSTED,   /* the order-key sequence is used up */
	CSQ_EUNSURE,      /* engine lost while the command was out: it may have
	                     been applied (a TRYAGAIN too) */
	CSQ_ENOCONV,      /* TRANSFER of a room that holds no assigned user */
	CSQ_ESKILL,       /* a SKILLS or NEEDS list that is not one */
	CSQ_ENEEDSETS,    /* CSQ_NEEDSETS_MAX distinct need-sets in use */
	CSQ_EUNSUPPORTED, /* the Lua engine's refusal of skills: none now;
	                   * kept, as results number the statuses */
	CSQ_EQUEUES,      /* a new queue beyond max_queues */
	CSQ_ENOBODY,      /* nobody serves the queue, which refuses (3c) */
	CSQ_ECLOSED,      /* the queue is closed and refuses (section 3c) */
	CSQ_EOOM,         /* the Redis engine's Redis is over its maxmemory:
	                   * a change refused, nothing changed (reads go on) */
};

const char *csq_status_text(enum csq_status);

/*
 * How matching picks among the free servicers of a queue: the one whose
 * login or last new user (its last offer, with offers on) is oldest, or
 * the one with the fewest busy rooms (offered + assigned + wrap-up), ties
 * to the longest idle.
 */
enum csq_strategy {
	CSQ_STRATEGY_LONGEST_IDLE,
	CSQ_STRATEGY_LEAST_BUSY,
};

/* Limits and defaults that the configuration may change at run time. */
struct csq_limits {
	uint32_t servicer_ttl_s; /* 1..CSQ_TTL_MAX */
	uint32_t user_ttl_s;     /* 0..CSQ_TTL_MAX, 0 = never */
	uint32_t max_tier;       /* 0..CSQ_TIER_LIMIT */
	uint64_t max_queue_length;
	uint32_t offer_timeout_s; /* 0..CSQ_OFFER_MAX: a new servicer's OFFER */
	uint32_t offer_max_missed; /* 0..CSQ_MISSED_MAX, 0 = never paused */
	uint32_t offer_retry_s;    /* 0..CSQ_RETRY_MAX */
	uint32_t wrapup_s; /* 0..CSQ_WRAPUP_MAX: a new servicer's WRAPUP */
	enum csq_strategy strategy;
	uint64_t
	    max_queues; /* 1..CSQ_QUEUES_LIMIT: queues that exist at once */
};

void csq_limits_default(struct csq_limits *);

enum csq_event_type {
	CSQ_EV_QUEUED,
	CSQ_EV_RESCORED,
	CSQ_EV_MATCHED,
	CSQ_EV_LEFT,
	CSQ_EV_RELEASED,
	CSQ_EV_REQUEUED,
	CSQ_EV_SERVICER_UP,
	CSQ_EV_SERVICER_DOWN,
	CSQ_EV_SERVICER_PAUSED,
	CSQ_EV_SERVICER_RESUMED,
	CSQ_EV_OFFERED,
	CSQ_EV_DECLINED,
	CSQ_EV_TRANSFERRED,
	CSQ_EV_WRAPUP,
	CSQ_EV_READY,
	CSQ_EV_OVERFLOWED,
	CSQ_EV_PREFER_ENDED,
	CSQ_EV_RELAXED, /* section 3c: a user's needs widened */
	CSQ_EV_OPENED,  /* section 3c: a queue's business hours began */
	CSQ_EV_CLOSED,  /* ... and ended */
	CSQ_EV_SERVICER_UPDATED, /* a HEARTBEAT changed capacity, queues or
	                            skills */
};
#define CSQ_EV_TYPES (CSQ_EV_SERVICER_UPDATED + 1)

enum csq_reason {
	CSQ_REASON_NONE,
	CSQ_REASON_LEAVE,
	CSQ_REASON_TIMEOUT,
	CSQ_REASON_LOGOUT,
	CSQ_REASON_LOST,
	CSQ_REASON_BY_SERVICER, /* released or declined by */
	CSQ_REASON_BY_USER,
	CSQ_REASON_BY_TRANSFER,
	CSQ_REASON_PAUSE,         /* requeued, servicer_paused */
	CSQ_REASON_MISSED_OFFERS, /* servicer_paused */
	CSQ_REASON_ENQUEUE,       /* rescored by ENQUEUE */
	CSQ_REASON_AGING,         /* rescored by the queue's aging */
	CSQ_REASON_QUEUES,        /* prefer_ended: the queue no longer served */
	CSQ_REASON_NOBODY,   /* left, overflowed: nobody served the queue */
	CSQ_REASON_CLOSED,   /* left, overflowed: the queue closed */
	CSQ_REASON_OVERFLOW, /* matched, offered: an overflow's move */
};
/* The last reason csq_reason_name knows. */
#define CSQ_REASON_LAST CSQ_REASON_OVERFLOW

/*
 * One event. Strings are copies owned by the event, valid during the emit
 * callback only. Fields that do not apply to the type are empty / zero.
 */
struct csq_event {
	enum csq_event_type type;
	uint64_t id; /* one more than the event before it, per csq state */
	uint64_t ts_ms;
	char user[CSQ_ID_MAX + 1];
	char queue[CSQ_ID_MAX + 1];
	char from_queue[CSQ_ID_MAX + 1]; /* rescored, matched, offered after a
	                                    move; overflowed */
	char servicer[CSQ_ID_MAX + 1];
	char room[CSQ_ROOM_MAX + 1];
	uint32_t tier;
	uint64_t position;
	uint64_t waited_ms;
	uint64_t offered_ms; /* matched after an ACCEPT: offer to accept */
	int has_offered_ms;
	uint64_t expires_ms; /* offered: epoch ms the offer runs out */
	uint64_t until_ms;   /* wrapup: epoch ms the wrap-up ends; declined:
	                        the retry window (0: none); opened, closed:
	                        the next change (0: none) */
	uint32_t capacity;   /* servicer_up */
	char queues[CSQ_SERVICER_QUEUES * (CSQ_ID_MAX + 1)]; /* "a,b,c" */
	/* Its reason or by; matched, offered: what placed a waiting user
	 * at once (enqueue, overflow, nobody, closed), none otherwise. */
	enum csq_reason reason;
	/* relaxed: the needs in force after it, the names it dropped
	 * ("a,b"), and by how much it lowered the levels. */
	char needs[CSQ_NEEDS_TEXT_MAX];
	char dropped[CSQ_NEEDS_TEXT_MAX];
	uint32_t lowered;
	/* queued: the user's wait estimate then, as ENQUEUE's reply gives
	 * it (-1: none yet); has_eta: the event carries one (a record of an
	 * older csq's does not). */
	int64_t eta_ms;
	int has_eta;
	/* For the record's readers (docs/day.md): a servicer's skills
	 * (servicer_up, servicer_updated; canonical, "" for none); a
	 * waiting user's preferred servicer and its window's time left
	 * (queued, transferred; "" for none). The user's needs in force
	 * go in needs (queued, rescored, matched, offered, transferred). */
	char skills[CSQ_SKILLS_TEXT_MAX];
	char prefer[CSQ_ID_MAX + 1];
	uint64_t prefer_ms;
};

typedef void csq_emit_fn(void *arg, const struct csq_event *);

/* Formats ev as one JSON object; returns its length like snprintf. A
 * buffer of CSQ_EVENT_JSON_MAX bytes is written straight into (whatever
 * ev holds, the line is shorter); a shorter one gets a copy. */
int csq_event_json(const struct csq_event *ev, char *buf, size_t len);
#define CSQ_EVENT_JSON_MAX                                                     \
	(3 * sizeof(struct csq_event) + 1024) /* queues' commas: 3 bytes */
const char *csq_event_name(enum csq_event_type);
/* strlen(csq_event_name(type)), known without counting. */
size_t csq_event_name_len(enum csq_event_type);
/* A reason as events name it ("leave", "lost", ...); "" for none. */
const char *csq_reason_name(enum csq_reason);

/*
 * The channels an event goes to, in the order given by the protocol:
 * user:<id>, servicer:<id>, queue:<q>, queue:<from>, events. Returns how many
 * were written to out (at most CSQ_EVENT_CHANNELS).
 */
#define CSQ_EVENT_CHANNELS 5
#define CSQ_CHANNEL_MAX    (CSQ_ID_MAX + 16)
int csq_event_channels(const struct csq_event *,
                       char out[CSQ_EVENT_CHANNELS][CSQ_CHANNEL_MAX]);

/* Identifiers: 1..64 bytes of [A-Za-z0-9._:@-]. */
int csq_valid_id(const char *s, size_t len);
/* Splits "<servicer>/<index>"; 0 when well formed. */
int csq_parse_room(const char *s, size_t len, char sid[CSQ_ID_MAX + 1],
                   uint32_t *index);

enum csq_servicer_status {
	CSQ_SERVICER_READY,
	CSQ_SERVICER_PAUSED,
};

struct csq_servicer_info {
	char id[CSQ_ID_MAX + 1];
	enum csq_servicer_status status;
	uint32_t capacity;
	uint32_t active; /* busy rooms: offered, assigned, in wrap-up */
	uint32_t ttl_s;
	uint64_t idle_ms;  /* since login or last new user */
	uint32_t offer_s;  /* 0: users are assigned, not offered */
	uint32_t wrapup_s; /* 0: no wrap-up */
	uint32_t missed;   /* offers run out in a row */
	/* Paused: why, CSQ_REASON_PAUSE (by hand) or
	 * CSQ_REASON_MISSED_OFFERS (offer_max_missed); else
	 * CSQ_REASON_NONE. */
	enum csq_reason paused_by;
	/* Resting after a DECLINE (offer_retry): ms until it takes new
	 * users again; 0 when it is not resting. */
	uint64_t resting_ms;
	/* Conversations it ended since its login, and their time in all
	 * (from the offer or assignment): the mean handle time. */
	uint64_t handled_total, handle_ms_total;
	char queues[CSQ_QUEUE_LIST_MAX];  /* those it serves: "a,b,c" */
	char skills[CSQ_SKILLS_TEXT_MAX]; /* canonical; "" for none */
};

/* The values are those of the journal's snapshots: never renumbered. */
enum csq_user_state {
	CSQ_USER_NONE,
	CSQ_USER_WAITING,
	CSQ_USER_ASSIGNED,
	CSQ_USER_OFFERED,
};

struct csq_user_info {
	enum csq_user_state state;
	char queue[CSQ_ID_MAX + 1];
	uint64_t position; /* waiting: 1-based rank */
	uint32_t tier;
	uint64_t waited_ms;            /* since original arrival */
	char room[CSQ_ROOM_MAX + 1];   /* offered, assigned */
	char servicer[CSQ_ID_MAX + 1]; /* offered, assigned */
	uint64_t since_ms;      /* assigned: time in the room; offered: since
	                           the offer */
	uint64_t expires_in_ms; /* offered: until the offer runs out */
	/* waiting for a preferred servicer: who, and the window left */
	char prefer[CSQ_ID_MAX + 1];
	uint64_t prefer_ms;
	int64_t eta_ms; /* waiting: the estimate, -1 none; offered: 0 */
	char needs[CSQ_NEEDS_TEXT_MAX]; /* in force, canonical; "" none */
	int64_t relax_ms;  /* waiting: until its next relax step; -1 none */
	uint64_t opens_ms; /* CSQ_ECLOSED only: when the queue opens, 0
	                      never (not in the engines' results: their n) */
};

struct csq_queue_entry {
	char user[CSQ_ID_MAX + 1];
	uint32_t tier;
	uint64_t waited_ms;
	char needs[CSQ_NEEDS_TEXT_MAX]; /* in force (section 3c); "" none */
};

/* A queue that exists (QUEUES): its name and its line. */
struct csq_queue_info {
	char name[CSQ_ID_MAX + 1];
	uint64_t waiting;        /* as QLEN: in line and held (preferring) */
	uint64_t preferring;     /* held for a preferred servicer, in no line */
	uint64_t oldest_wait_ms; /* the longest wait in line; 0: nobody */
	char oldest_user[CSQ_ID_MAX + 1]; /* who waited it; "": nobody */
};

/* A room's state (ROOMS; lib/state.h keeps the busy ones). The values
 * are those of the journal's snapshots: never renumbered. */
enum csq_room_state {
	CSQ_ROOM_FREE,
	CSQ_ROOM_OFFERED,
	CSQ_ROOM_ASSIGNED,
	CSQ_ROOM_WRAPUP,
};

/* One room of a servicer (ROOMS). */
struct csq_room_info {
	char room[CSQ_ROOM_MAX + 1];
	enum csq_room_state state;
	char user[CSQ_ID_MAX + 1];      /* "" when free or in wrap-up */
	uint64_t since_ms;              /* time in this state; 0 when free */
	char needs[CSQ_NEEDS_TEXT_MAX]; /* the user's; "" for none */
	/* Free: why it takes no user (issue 38), as its servicer's
	 * csq_servicer_info says: paused_by, resting_ms. */
	enum csq_reason paused_by;
	uint64_t resting_ms;
};

struct csq_stats {
	uint64_t waiting;
	uint64_t servicers;
	uint64_t rooms_busy;
	uint64_t rooms_free;
	uint64_t enqueued_total;
	uint64_t matched_total;
	uint64_t abandoned_total;
	uint64_t requeued_total;
	uint64_t servicers_lost_total;
	uint64_t offers_total;
	uint64_t offers_declined_total;
	uint64_t offers_missed_total;
	uint64_t transferred_total;
};

/* Options of HEARTBEAT; a has_ flag of 0 keeps the previous value. */
struct csq_heartbeat_args {
	const char *servicer;
	int has_capacity, has_queues, has_ttl, has_offer, has_wrapup;
	int has_skills;
	const char *skills; /* a skill list (section 3c); "" clears */
	uint32_t capacity;
	uint32_t ttl_s;
	uint32_t offer_s;  /* 0..CSQ_OFFER_MAX */
	uint32_t wrapup_s; /* 0..CSQ_WRAPUP_MAX */
	size_t nqueues;
	const char *queues[CSQ_SERVICER_QUEUES];
};

/* PREFER <servicer> <seconds> of ENQUEUE and TRANSFER (section 5). */
struct csq_prefer_args {
	int has_prefer;
	const char *servicer;
	uint32_t seconds; /* 1..CSQ_PREFER_MAX */
};

struct csq_enqueue_args {
	const char *user;
	int has_queue, has_tier, has_ttl;
	const char *queue;
	uint32_t tier;
	uint32_t ttl_s;
	struct csq_prefer_args prefer; /* checked last */
	int has_needs;
	const char *needs; /* a skill list; "" clears */
};

/* PREFER's arguments alone: CSQ_ESERVICER, CSQ_ERANGE, or CSQ_OK (also
 * when there is no PREFER). */
enum csq_status csq_prefer_check(const struct csq_prefer_args *);

/* TRANSFER's arguments: PREFER is checked after the queue. */
struct csq_transfer_args {
	const char *room;
	const char *queue;
	struct csq_prefer_args prefer;
	int has_needs; /* without: the user keeps its needs */
	const char *needs;
};

/*
 * A skill list parsed: names (1..CSQ_SKILL_NAME_MAX bytes of
 * [A-Za-z0-9._-]) with levels (1..CSQ_SKILL_LEVEL_MAX, 1 when left out),
 * sorted by name, no name twice. csq_skills_parse: CSQ_OK or CSQ_ESKILL,
 * for at most max entries; "" is the empty list.
 */
struct csq_skill_list {
	uint32_t n;
	struct {
		char name[CSQ_SKILL_NAME_MAX + 1];
		uint32_t level;
	} v[CSQ_SERVICER_SKILLS];
};
enum csq_status csq_skills_parse(const char *s, uint32_t max,
                                 struct csq_skill_list *out);
/* The canonical text: "a:1,b:3", sorted by name; "" for none. */
void csq_skills_text(const struct csq_skill_list *,
                     char out[CSQ_SKILLS_TEXT_MAX]);

/*
 * Business hours (section 3c): when a queue is open, in a time zone, and
 * what happens while it is closed and when it closes. ranges are minutes
 * of the week (Monday 00:00 is 0), start < end <= CSQ_WEEK_MINUTES,
 * sorted and apart; closed are local dates (days since 1970-01-01),
 * sorted, each once. A queue without hours is always open.
 */
#define CSQ_WEEK_MINUTES   10080
#define CSQ_HOURS_RANGES   28  /* weekly ranges */
#define CSQ_HOURS_CLOSED   64  /* closed dates */
#define CSQ_HOURS_WEEK_MAX 512 /* bytes of a week's text */
enum csq_when_closed {
	CSQ_CLOSED_WAIT,     /* ENQUEUE waits; nobody is matched */
	CSQ_CLOSED_REFUSE,   /* ENQUEUE is refused (CSQ_ECLOSED) */
	CSQ_CLOSED_FALLBACK, /* ENQUEUE goes to the fallback queue */
};
enum csq_at_close {
	CSQ_AT_CLOSE_KEEP,    /* the users waiting stay */
	CSQ_AT_CLOSE_MOVE,    /* they move to move_to (overflowed, closed) */
	CSQ_AT_CLOSE_RELEASE, /* they leave (left, closed) */
};
struct csq_hours {
	uint32_t on; /* 0: no hours (the rest is zero) */
	uint32_t nranges, nclosed;
	struct {
		uint16_t start, end;
	} range[CSQ_HOURS_RANGES];
	int32_t closed[CSQ_HOURS_CLOSED];
	uint32_t when_closed;          /* enum csq_when_closed */
	uint32_t at_close;             /* enum csq_at_close */
	char fallback[CSQ_ID_MAX + 1]; /* when_closed fallback: the queue */
	char move_to[CSQ_ID_MAX + 1];  /* at_close move: the queue */
	struct csq_tz tz;
};

/*
 * A queue's policy (protocol-v2 section 4), the configuration's `queues`
 * entry. A queue without one has the defaults: the global max length and
 * strategy, no overflow, no aging, a service level of 20 s.
 */
struct csq_policy {
	char name[CSQ_ID_MAX + 1];
	int has_max_length, has_strategy, has_aging_max_tier;
	uint64_t max_length; /* 1..CSQ_QUEUE_LENGTH_MAX */
	enum csq_strategy strategy;
	/* Both or neither: 1..CSQ_POLICY_SECONDS_MAX, and another queue. */
	uint32_t overflow_after_s;
	char overflow_to[CSQ_ID_MAX + 1];
	uint32_t aging_every_s;   /* 0 = no aging; else 1..86400 */
	uint32_t aging_max_tier;  /* <= max_tier; default max_tier */
	uint32_t service_level_s; /* 1..86400; 0 in the struct: the default */
	/* Which eligible free servicer an arrival with needs goes to:
	 * CSQ_SKILL_ORDER_* (section 3c). */
	uint32_t skill_order;
	/* How a waiting user's needs widen (section 3c): nrelax steps, each
	 * after_s after it joined the line (growing, 1..86400), dropping
	 * the needs named in drop ("a,b": names only) or all of them
	 * (drop_all), then lowering every level by lower (0..100, never
	 * below 1). A step drops or lowers. */
	uint32_t nrelax;
	struct csq_relax_step {
		uint32_t after_s;
		uint32_t lower;
		uint32_t drop_all;
		char drop[CSQ_RELAX_DROP_MAX];
	} relax[CSQ_RELAX_STEPS];
	/* When nobody serves the queue (section 3c, nobody.c): on = 0, the
	 * defaults (arrivals wait, users waiting stay). */
	struct csq_nobody_policy {
		uint32_t on;
		uint32_t counts;      /* CSQ_NOBODY_LOGGED_IN, _READY */
		uint32_t when_nobody; /* CSQ_NOBODY_WAIT, _REFUSE, _FALLBACK */
		uint32_t at_nobody;   /* CSQ_NOBODY_KEEP, _MOVE, _RELEASE */
		uint32_t grace_s;     /* at_nobody not keep: 1..86400 */
		char fallback[CSQ_ID_MAX + 1]; /* when_nobody fallback */
		char move_to[CSQ_ID_MAX + 1];  /* at_nobody move */
	} nobody;
	struct csq_hours hours; /* business hours (section 3c) */
};
#define CSQ_QSTATS_NO_NOBODY (-2)
/* Who counts as somebody: a servicer serving the queue logged in, or
 * one that is ready (logged in, not paused). */
#define CSQ_NOBODY_LOGGED_IN 0
#define CSQ_NOBODY_READY     1
/* An arrival (ENQUEUE, a move by ENQUEUE, TRANSFER) while nobody: */
#define CSQ_NOBODY_WAIT     0 /* waits, as always */
#define CSQ_NOBODY_REFUSE   1 /* refused, CSQ_ENOBODY */
#define CSQ_NOBODY_FALLBACK 2 /* goes to the fallback queue */
/* The users waiting when nobody has been there for grace_s: */
#define CSQ_NOBODY_KEEP          0 /* stay */
#define CSQ_NOBODY_MOVE          1 /* move to move_to (overflowed, nobody) */
#define CSQ_NOBODY_RELEASE       2 /* leave (left, nobody) */
#define CSQ_SKILL_ORDER_STRATEGY 0 /* the queue's strategy alone */
#define CSQ_SKILL_ORDER_LEVEL    1 /* the highest levels first */

/* What csq_policies_check found wrong, and in which entry. */
enum csq_policy_error {
	CSQ_POLICY_OK,
	CSQ_POLICY_NAME,        /* not a valid queue id */
	CSQ_POLICY_DUPLICATE,   /* a second policy for the queue */
	CSQ_POLICY_MAX_LENGTH,  /* out of 1..CSQ_QUEUE_LENGTH_MAX */
	CSQ_POLICY_OVERFLOW_TO, /* not a valid queue id, or the queue itself */
	CSQ_POLICY_OVERFLOW_AFTER, /* out of range */
	CSQ_POLICY_OVERFLOW_PAIR,  /* overflow_after without overflow_to, or
	                              the reverse */
	CSQ_POLICY_CYCLE,          /* the overflow chain comes back */
	CSQ_POLICY_AGING_EVERY,    /* out of range */
	CSQ_POLICY_AGING_MAX_TIER, /* above max_tier */
	CSQ_POLICY_SERVICE_LEVEL,  /* out of range */
	CSQ_POLICY_SKILL_ORDER,    /* not one of CSQ_SKILL_ORDER_* */
	CSQ_POLICY_RELAX,          /* a relax step out of its ranges */
	CSQ_POLICY_NOBODY,         /* nobody: a value out of its range, a
	                              queue missing, bad or the queue itself */
	CSQ_POLICY_NOBODY_CYCLE,   /* nobody's fallbacks come back */
	CSQ_POLICY_HOURS,          /* hours out of their ranges */
	CSQ_POLICY_HOURS_QUEUE,    /* fallback or move_to: not a queue id, the
	                              queue itself, or missing */
};

const char *csq_policy_error_text(enum csq_policy_error);

/* QSTATS (section 6): one queue's line, servicers and numbers. */
struct csq_queue_stats {
	char queue[CSQ_ID_MAX + 1];
	uint64_t waiting; /* in its line and held for a preferred servicer */
	uint64_t oldest_wait_ms;
	int64_t eta_ms;      /* for a new arrival; -1: no estimate */
	uint64_t servicers;  /* logged in and serving it */
	uint64_t free_rooms; /* that would take a user of it now */
	uint64_t matched_total;
	uint64_t abandoned_total; /* leave + timeout */
	uint64_t abandoned_leave, abandoned_timeout;
	uint64_t overflowed_total; /* moved out of it by its overflow */
	uint64_t wait_ms_sum;      /* of the matched: waited_ms */
	uint64_t avg_wait_ms;      /* wait_ms_sum / matched_total, 0 */
	uint32_t service_level_s;
	int32_t service_level_pct;          /* 0..100, -1 before the first */
	uint32_t outcomes, outcomes_within; /* in the ring: the share's parts */
	/* Section 3c, a queue with a nobody policy: how long nobody (as
	 * it counts) has served it, -1 while somebody does; the others
	 * CSQ_QSTATS_NO_NOBODY (not shown). */
	int64_t nobody_ms;
	/* Business hours: 1 when the queue has them; then open (1/0) and
	 * the next change (epoch ms, 0: none). */
	uint32_t hours, open;
	uint64_t next_change_ms;
	/* Users with needs waiting, by need-set: the largest groups, at
	 * most CSQ_QSTATS_GROUPS, sorted by need-set. */
	uint32_t ngroups;
	struct {
		char needs[CSQ_NEEDS_TEXT_MAX];
		uint64_t waiting;
	} groups[CSQ_QSTATS_GROUPS];
};

struct csq;

/*
 * Takes a copy of limits; emit may be NULL. Dies on out of memory. seed is
 * the hash seed of the id tables and the seed of the lines' node levels: a
 * daemon passes a random one, so that no client can choose ids that all
 * fall in one chain of a table (lib/dict.c's hash can be inverted), or know
 * which of its users to take out of line to leave a line without shortcuts.
 * Nothing csq answers or emits depends on it.
 */
struct csq *csq_new(const struct csq_limits *, uint64_t seed, csq_emit_fn *emit,
                    void *arg);
void csq_free(struct csq *);
void csq_set_limits(struct csq *, const struct csq_limits *);
const struct csq_limits *csq_get_limits(const struct csq *);

enum csq_status csq_heartbeat(struct csq *, uint64_t now_ms,
                              const struct csq_heartbeat_args *,
                              struct csq_servicer_info *out);
enum csq_status csq_pause(struct csq *, uint64_t now_ms, const char *sid);
enum csq_status csq_resume(struct csq *, uint64_t now_ms, const char *sid);
enum csq_status csq_logout(struct csq *, uint64_t now_ms, const char *sid,
                           uint64_t *requeued);
/*
 * *ended: 1 a conversation ended, 0 the room held none (free, offered or
 * in wrap-up: nothing changes).
 */
enum csq_status csq_release(struct csq *, uint64_t now_ms, const char *room,
                            int *ended);
/* The same for a room parsed already (csq_parse_room): its servicer's id
 * is sid's first sidlen bytes, its index index. csq_release parses room
 * and calls it, so that a RELEASE parsed once (csq_op_check) and one
 * parsed here run the same. */
enum csq_status csq_release_at(struct csq *, uint64_t now_ms, const char *sid,
                               size_t sidlen, uint32_t index, int *ended);
/* ACCEPT, DECLINE: *done 1 the room held an offer, 0 it held none. */
enum csq_status csq_accept(struct csq *, uint64_t now_ms, const char *room,
                           int *done);
enum csq_status csq_decline(struct csq *, uint64_t now_ms, const char *room,
                            int *done);
/* READY: *done 1 the room was in wrap-up, 0 it was not. */
enum csq_status csq_ready(struct csq *, uint64_t now_ms, const char *room,
                          int *done);
/* TRANSFER: out is the user's state after it, as WHERE's. */
enum csq_status csq_transfer(struct csq *, uint64_t now_ms,
                             const struct csq_transfer_args *,
                             struct csq_user_info *out);

enum csq_status csq_enqueue(struct csq *, uint64_t now_ms,
                            const struct csq_enqueue_args *,
                            struct csq_user_info *out);
/* *known: 1 waiting or assigned, 0 unknown. ttl_s < 0: keep the TTL. */
enum csq_status csq_touch(struct csq *, uint64_t now_ms, const char *uid,
                          int64_t ttl_s, int *known);
enum csq_status csq_leave(struct csq *, uint64_t now_ms, const char *uid,
                          int *known);
enum csq_status csq_where(struct csq *, uint64_t now_ms, const char *uid,
                          struct csq_user_info *out);

/*
 * Waiting users of queue q in service order, from offset, at most count
 * (<= CSQ_RANGE_COUNT_MAX) into out; *n gets how many.
 */
enum csq_status csq_queue_range(struct csq *, uint64_t now_ms, const char *q,
                                uint64_t offset, uint32_t count,
                                struct csq_queue_entry *out, size_t *n);
enum csq_status csq_qlen(struct csq *, const char *q, uint64_t *len);
/*
 * QSTATS. A queue keeps its numbers while it exists: while a user waits in
 * it or a servicer serves it, and always when it has a policy. One that
 * does not exist answers zeros (and the defaults' service level).
 */
enum csq_status csq_queue_stats(struct csq *, uint64_t now_ms, const char *q,
                                struct csq_queue_stats *out);
/* Every queue that exists, as QSTATS, sorted by name; *n their count. The
 * caller frees the array. */
struct csq_queue_stats *csq_queues_stats(struct csq *, uint64_t now_ms,
                                         size_t *n);
/*
 * A slice of it (issue 37: a view of every queue in bounded steps): the
 * queues whose names sort after `after` ("" or NULL: from the first), at
 * most count of them (0: all the rest); *next is the name to resume after,
 * NULL when none is left (it lives until the state next changes).
 */
struct csq_queue_stats *csq_queues_stats_slice(struct csq *, uint64_t now_ms,
                                               const char *after, size_t count,
                                               size_t *n, const char **next);

/*
 * Queue policies. check: CSQ_POLICY_OK, or the first error and *bad the
 * index of its entry. set: replaces every policy (check first: an error
 * changes nothing); users already waiting in a queue whose overflow or
 * aging changed get their clocks from the new policy, measured from when
 * they joined their line; the steps that makes due (an overflow, a
 * relax step, a nobody's grace) act in the set, before it returns.
 */
enum csq_policy_error csq_policies_check(const struct csq_policy *, size_t n,
                                         const struct csq_limits *,
                                         size_t *bad);
/* Entry i of the n alone: its own values, a name that an earlier entry
 * has, a cycle through it (so that a configuration's every bad entry is
 * reported, each at its line). */
enum csq_policy_error csq_policy_check_entry(const struct csq_policy *,
                                             size_t n, size_t i,
                                             const struct csq_limits *);
enum csq_status csq_set_policies(struct csq *, uint64_t now_ms,
                                 const struct csq_policy *, size_t n);
/* The policies in force, sorted by name; *n their count (not owned). */
const struct csq_policy *csq_get_policies(const struct csq *, size_t *n);

/*
 * All servicers ordered by id. Returns a malloc'd array the caller frees, *n
 * its length.
 */
struct csq_servicer_info *csq_servicers(struct csq *, uint64_t now_ms,
                                        size_t *n);
/*
 * A slice of it (issue 37): the servicers whose ids sort after `after`
 * ("" or NULL: from the first), at most count of them (0: all the rest);
 * *next is the id to resume after, NULL when none is left (it lives until
 * the state next changes). A servicer present from the first slice to the
 * last is in exactly one of them; one that logs in or out meanwhile is in
 * one or in none.
 */
struct csq_servicer_info *csq_servicers_slice(struct csq *, uint64_t now_ms,
                                              const char *after, size_t count,
                                              size_t *n, const char **next);
void csq_stats(const struct csq *, struct csq_stats *);

/*
 * The queues that exist now: those with a waiting user or served by a
 * servicer, and the default queue, sorted by name (QUEUES). Returns a
 * malloc'd array the caller frees, *n its length.
 */
struct csq_queue_info *csq_queues(struct csq *, uint64_t now_ms, size_t *n);
/* A slice of it: those listed among the count queues after `after`, as
 * csq_queues_stats_slice visits them (the same *next). */
struct csq_queue_info *csq_queues_slice(struct csq *, uint64_t now_ms,
                                        const char *after, size_t count,
                                        size_t *n, const char **next);
/* One queue's line, as csq_queues gives it (nobody waits in a queue that
 * does not exist). */
enum csq_status csq_queue_info(struct csq *, uint64_t now_ms, const char *q,
                               struct csq_queue_info *out);
/*
 * The rooms of servicer sid in index order (ROOMS): those below its
 * capacity, and busy ones above it; with sid NULL, those of every
 * servicer, by servicer id. *out is a malloc'd array the caller frees (or
 * NULL), *n its length; CSQ_ESERVICER, CSQ_ENOTFOUND for a bad sid.
 */
enum csq_status csq_rooms(struct csq *, uint64_t now_ms, const char *sid,
                          struct csq_room_info **out, size_t *n);
/* Those of every servicer by slices: the rooms of the servicers that
 * csq_servicers_slice lists with the same after and count (the same
 * *next), by servicer id. *out as csq_rooms's. */
void csq_rooms_slice(struct csq *, uint64_t now_ms, const char *after,
                     size_t count, struct csq_room_info **out, size_t *n,
                     const char **next);

/* Earliest deadline in ms, or UINT64_MAX when there is none. */
uint64_t csq_next_deadline(const struct csq *);
/*
 * Acts on every deadline <= now_ms: abandoned users, offers run out, lost
 * servicers, wrap-ups ended, offer-retry windows ended; in that order of
 * kinds, each kind by deadline, then by id (docs/design.md, "Deadlines").
 */
void csq_expire(struct csq *, uint64_t now_ms);
/*
 * Moves every deadline forward so that each runs its whole length again
 * from now_ms: TTLs, offers, wrap-ups, retry windows (after a restart:
 * nobody is lost, and no offer runs out, for the time the daemon was down).
 */
void csq_rearm_deadlines(struct csq *, uint64_t now_ms);
/* The id of the last event emitted, 0 before the first. */
uint64_t csq_last_event_id(const struct csq *);

/*
 * Checks every invariant: each user in exactly one place, each room in one
 * state (free, offered, assigned, wrap-up), the maps agree in both
 * directions, the deadlines are those of the states, counters match, and
 * no free room of a ready servicer outside its retry window sits beside a
 * waiting user of a queue it serves. Returns 0, or -1 with a description
 * in buf.
 */
int csq_check(const struct csq *, char *buf, size_t len);

#endif
