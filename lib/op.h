/*
 * The table of operations: every operation of csq, one row each. The row
 * is the operation's whole declaration; each file that handles
 * operations expands the columns it needs (CSQ_OPS(X) with an X of its
 * own), so that none of them keeps a switch over the opcodes:
 *
 *   CODE    the opcode, CSQ_OP_<CODE> (enum csq_opcode, engine.h)
 *   name    the command's name (csqd's, lower case; the module's is
 *           "csq." name), and the memory engine's apply_<name>
 *   number  the journal's record number: fixed by the journals written,
 *           never reused nor renumbered (lib/record.c)
 *   arity   csqd's, in Redis's way (n exactly, -n at least); 0: not a
 *           command, an operation of the engine's own
 *   roles   who may send it besides admin: CSQ_ROLE_* bits, 0 admin
 *   id      what its first argument names, CSQ_ID_OF_<id>: a USER, a
 *           SERVICER, a ROOM ("<servicer>/<index>") or a QUEUE; NONE
 *           when it names none. A user bound to ids (csqd's users' ids
 *           key) acts for its own only by it (daemon/auth.c), and the
 *           HTTP API calls the field by it (daemon/http_api.c)
 *   mutates 1 when it may change the state: journaled, replicated
 *   record  its arguments' form in a record: put_<record>/get_<record>
 *           (lib/record.c)
 *   args    its arguments' form: the words parsed by args_<args>
 *           (daemon/op_args.c), the checks apart from the state by
 *           check_<args> (lib/validate.c)
 *   reply   what its answer carries: CSQ_REPLY_<reply>, which the result
 *           bytes (lib/result.c) and the replies (daemon/op_reply.c)
 *           follow
 *
 * Adding an operation: a row here, at the next number, and its
 * apply_<name> in lib/engine_memory.c (a new form of record, check or
 * reply only when none of those there fits).
 */
#ifndef CSQ_OP_H
#define CSQ_OP_H

#include <stddef.h>

/* Who may send an operation besides admin (csqd's roles). */
#define CSQ_ROLE_FRONTEND 0x1
#define CSQ_ROLE_SERVICER 0x2

#define CSQ_OP_F  CSQ_ROLE_FRONTEND
#define CSQ_OP_S  CSQ_ROLE_SERVICER
#define CSQ_OP_FS (CSQ_ROLE_FRONTEND | CSQ_ROLE_SERVICER)
#define CSQ_OP_A  0 /* admin alone (or nobody: not a command) */

/* clang-format off */
#define CSQ_OPS(X)                                                           \
	/* CODE     name      n  arity roles id mut record args reply */      \
	X(HEARTBEAT, heartbeat, 0, -2, CSQ_OP_S, SERVICER, 1, heartbeat,      \
	  heartbeat, SERVICER)                                               \
	X(PAUSE, pause, 1, 2, CSQ_OP_S, SERVICER, 1, id, servicer, OK)        \
	X(RESUME, resume, 2, 2, CSQ_OP_S, SERVICER, 1, id, servicer, OK)      \
	X(LOGOUT, logout, 3, 2, CSQ_OP_S, SERVICER, 1, id, servicer, N)       \
	X(RELEASE, release, 4, 2, CSQ_OP_S, ROOM, 1, id, room, N)             \
	X(ENQUEUE, enqueue, 5, -2, CSQ_OP_F, USER, 1, enqueue, enqueue, USER) \
	X(TOUCH, touch, 6, -2, CSQ_OP_F, USER, 1, touch, touch, N)            \
	X(LEAVE, leave, 7, 2, CSQ_OP_F, USER, 1, id, user, N)                 \
	X(WHERE, where, 8, 2, CSQ_OP_FS, USER, 0, id, user, USER_DETAIL)      \
	X(QUEUE, queue, 9, -2, CSQ_OP_S, QUEUE, 0, range, range, ENTRIES)     \
	X(QLEN, qlen, 10, 2, CSQ_OP_FS, QUEUE, 0, id, queue, N)               \
	X(SERVICERS, servicers, 11, 1, CSQ_OP_A, NONE, 0, view, view,         \
	  SERVICERS)                                                         \
	X(STATS, stats, 12, 1, CSQ_OP_A, NONE, 0, none, none, STATS)          \
	/* Not commands: changes of state that a journal replays too. */     \
	X(EXPIRE, expire, 13, 0, CSQ_OP_A, NONE, 1, none, none, NONE)         \
	X(LIMITS, limits, 14, 0, CSQ_OP_A, NONE, 1, limits, none, NONE)       \
	X(REARM, rearm, 15, 0, CSQ_OP_A, NONE, 1, none, none, NONE)           \
	/* Routing (protocol-v2). */                                         \
	X(ACCEPT, accept, 16, 2, CSQ_OP_S, ROOM, 1, id, room, N)              \
	X(DECLINE, decline, 17, 2, CSQ_OP_S, ROOM, 1, id, room, N)            \
	X(READY, ready, 18, 2, CSQ_OP_S, ROOM, 1, id, room, N)                \
	X(TRANSFER, transfer, 19, -3, CSQ_OP_S, ROOM, 1, transfer, transfer,  \
	  USER_DETAIL)                                                       \
	/* The admin's overview: id NULL, every one (by slices; SERVICERS  \
	 * too, issue 37). */                                                \
	X(QUEUES, queues, 20, 1, CSQ_OP_A, NONE, 0, slice, slice, QUEUES)     \
	X(ROOMS, rooms, 21, 2, CSQ_OP_S, SERVICER, 0, slice, rooms, ROOMS)    \
	/* Queue policies (offset of count: the last applies them all) and \
	 * numbers (protocol-v2 sections 4 to 6). */                        \
	X(POLICY, policy, 22, 0, CSQ_OP_A, NONE, 1, policy_set, policy, NONE) \
	X(QSTATS, qstats, 23, 2, CSQ_OP_FS, QUEUE, 0, slice, slice, QSTATS)
/* clang-format on */

/* What an operation's first argument names (the table's id column). */
enum csq_id_of {
	CSQ_ID_OF_NONE,     /* none, or no argument */
	CSQ_ID_OF_USER,     /* a user */
	CSQ_ID_OF_SERVICER, /* a servicer */
	CSQ_ID_OF_ROOM,     /* a servicer's room, "<servicer>/<index>" */
	CSQ_ID_OF_QUEUE,    /* a queue */
};

/* What an operation's answer carries (the table's reply column). */
enum csq_reply {
	CSQ_REPLY_NONE,        /* nothing: the engine's own operations */
	CSQ_REPLY_OK,          /* +OK */
	CSQ_REPLY_N,           /* the integer n */
	CSQ_REPLY_SERVICER,    /* the servicer */
	CSQ_REPLY_USER,        /* the user */
	CSQ_REPLY_USER_DETAIL, /* the user, with WHERE's detail */
	CSQ_REPLY_ENTRIES,     /* an array: a queue's entries */
	CSQ_REPLY_SERVICERS,   /* an array: servicers, and the next slice's */
	CSQ_REPLY_QUEUES,      /* an array: queues, and the next slice's */
	CSQ_REPLY_ROOMS,       /* an array: rooms, and the next slice's */
	CSQ_REPLY_STATS,       /* the counters */
	CSQ_REPLY_QSTATS,      /* an array: queues' numbers, and the next */
};

/* An operation's row, for those who read it at run time. */
struct csq_op_def {
	const char *name;  /* lower case */
	int arity;         /* 0: not a command */
	int roles;         /* CSQ_ROLE_* bits; 0: admin alone */
	enum csq_id_of id; /* what argv[1] names */
	int mutates;
	enum csq_reply reply;
};

#endif
