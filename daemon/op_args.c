/* Operations' arguments from commands' words (op_args.h). */
#include "op_args.h"

#include <string.h>
#include <strings.h>

#define INT64_DIGITS_MAX 20
#define STR_(x)          #x
#define STR(x)           STR_(x)

int
op_args_arity_ok(int arity, int argc)
{
	return arity > 0 ? argc == arity : argc >= -arity;
}

int
op_args_parse_int(const char *s, size_t len, int64_t *out)
{
	uint64_t v = 0, limit;
	size_t i = 0;
	int neg = 0;

	if (len == 0 || len > INT64_DIGITS_MAX)
		return -1;
	if (s[0] == '-') {
		neg = 1;
		if (++i == len)
			return -1;
	}
	if (s[i] == '0' && (len - i > 1 || neg))
		return -1;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (limit - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

static int
word_is(const struct resp_request *req, int i, const char *word)
{
	return req->argvlen[i] == strlen(word) &&
	       strncasecmp(req->argv[i], word, req->argvlen[i]) == 0;
}

/* An integer word within [min, max]; NULL, or the error. */
static const char *
int_arg(const struct resp_request *req, int i, int64_t min, int64_t max,
        int64_t *out)
{
	if (op_args_parse_int(req->argv[i], req->argvlen[i], out) != 0 ||
	    *out < min || *out > max)
		return ERR_RANGE;
	return NULL;
}

/* A valid id; NULL, or invalid's error. */
static const char *
id_arg(const struct resp_request *req, int i, enum csq_status invalid)
{
	return csq_valid_id(req->argv[i], req->argvlen[i])
	           ? NULL
	           : csq_status_text(invalid);
}

/* Whether the first n of queues hold the id s (len bytes). */
static int
queue_listed(const char *const *queues, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(queues[i]) == len && memcmp(queues[i], s, len) == 0)
			return 1;
	return 0;
}

/*
 * QUEUES q1,q2,...: 1..32 distinct valid ids, a repeated one skipped (so
 * that "a,b,a" is "a,b" and counts 2). buf receives the ids NUL-separated;
 * queues[] points into it.
 */
static const char *
parse_queues(const char *s, size_t len, struct op_args_buf *buf,
             struct csq_heartbeat_args *hb)
{
	size_t start = 0, end, n = 0, off = 0;

	for (;;) {
		for (end = start; end < len && s[end] != ','; end++)
			;
		if (!csq_valid_id(s + start, end - start))
			return csq_status_text(CSQ_EQUEUE);
		if (queue_listed(hb->queues, n, s + start, end - start))
			goto next;
		if (n == CSQ_SERVICER_QUEUES)
			return "ERR too many queues (at most " STR(
			    CSQ_SERVICER_QUEUES) ")";
		memcpy(buf->queues + off, s + start, end - start);
		buf->queues[off + end - start] = '\0';
		hb->queues[n++] = buf->queues + off;
		off += end - start + 1;
	next:
		if (end == len)
			break;
		start = end + 1;
	}
	hb->nqueues = n;
	hb->has_queues = 1;
	return NULL;
}

/*
 * Options: "NAME value" pairs after the first arguments, names
 * case-insensitive, in any order, the last of a repeated name winning (as
 * Redis's SET does with EX). An integer option is checked against its
 * range; an id option against the id alphabet.
 */
/* OPT_PREFER takes two values: a servicer and seconds (1..max). */
/* OPT_SKILLS: a skill list (section 3c) of at most max entries. */
enum opt_kind { OPT_INT, OPT_ID, OPT_LIST, OPT_PREFER, OPT_SKILLS };

struct opt {
	const char *name;
	enum opt_kind kind;
	int64_t min, max;        /* OPT_INT */
	enum csq_status invalid; /* OPT_ID */
	int arg;                 /* index of its value; 0 when absent */
	int64_t num;
};

/* A skill list within max entries (a NUL inside is no list). */
static const char *
skills_arg(const struct resp_request *req, int i, uint32_t max)
{
	struct csq_skill_list l;

	if (strlen(req->argv[i]) != req->argvlen[i] ||
	    csq_skills_parse(req->argv[i], max, &l) != CSQ_OK)
		return csq_status_text(CSQ_ESKILL);
	return NULL;
}

/* NULL, or the error of the first bad option. */
static const char *
parse_options(const struct resp_request *req, int first, struct opt *opts,
              size_t nopts)
{
	const char *err = NULL;
	size_t k;
	int i, nvals;

	for (i = first; i < req->argc; i += 1 + nvals) {
		for (k = 0; k < nopts && !word_is(req, i, opts[k].name); k++)
			;
		nvals = k < nopts && opts[k].kind == OPT_PREFER ? 2 : 1;
		if (k == nopts || i + nvals >= req->argc)
			return ERR_SYNTAX;
		opts[k].arg = i + 1;
	}
	for (k = 0; k < nopts && err == NULL; k++) {
		if (opts[k].arg == 0)
			continue;
		if (opts[k].kind == OPT_INT)
			err = int_arg(req, opts[k].arg, opts[k].min,
			              opts[k].max, &opts[k].num);
		if (opts[k].kind == OPT_ID)
			err = id_arg(req, opts[k].arg, opts[k].invalid);
		if (opts[k].kind == OPT_PREFER &&
		    (err = id_arg(req, opts[k].arg, CSQ_ESERVICER)) == NULL)
			err = int_arg(req, opts[k].arg + 1, opts[k].min,
			              opts[k].max, &opts[k].num);
		if (opts[k].kind == OPT_SKILLS)
			err =
			    skills_arg(req, opts[k].arg, (uint32_t)opts[k].max);
	}
	return err;
}

/* PREFER <servicer> <seconds>, when given, into p. */
static void
prefer_option(const struct resp_request *req, const struct opt *o,
              struct csq_prefer_args *p)
{
	memset(p, 0, sizeof(*p));
	if (o->arg == 0)
		return;
	p->has_prefer = 1;
	p->servicer = req->argv[o->arg];
	p->seconds = (uint32_t)o->num;
}

/*
 * Room word i: a malformed one is an error; so is, after the checks that
 * come between (the queue of word queue, else 0), an index no servicer
 * has, answered here so that the engine (and the journal, whose records
 * hold CSQ_ROOM_MAX bytes of room id) only sees indexes of at most three
 * digits.
 */
static const char *
room_arg(const struct resp_request *req, int i, int queue)
{
	char sid[CSQ_ID_MAX + 1];
	const char *err;
	uint32_t idx;

	if (csq_parse_room(req->argv[i], req->argvlen[i], sid, &idx) != 0)
		return csq_status_text(CSQ_EROOM);
	if (queue > 0 && (err = id_arg(req, queue, CSQ_EQUEUE)) != NULL)
		return err;
	if (idx >= CSQ_CAPACITY_MAX)
		return csq_status_text(CSQ_ENOTFOUND);
	return NULL;
}

/*
 * The parsers of the args column (lib/op.h), one for each form: each
 * reads req into op (its code and ttl_s set, the rest zero).
 */
typedef const char *args_fn(const struct resp_request *, uint32_t max_tier,
                            struct csq_op *, struct op_args_buf *);

static const char *
args_heartbeat(const struct resp_request *req, uint32_t max_tier,
               struct csq_op *op, struct op_args_buf *buf)
{
	struct opt opts[] = {
	    {"capacity", OPT_INT, 1, CSQ_CAPACITY_MAX, CSQ_OK, 0, 0},
	    {"queues", OPT_LIST, 0, 0, CSQ_OK, 0, 0},
	    {"ttl", OPT_INT, 1, CSQ_TTL_MAX, CSQ_OK, 0, 0},
	    {"offer", OPT_INT, 0, CSQ_OFFER_MAX, CSQ_OK, 0, 0},
	    {"wrapup", OPT_INT, 0, CSQ_WRAPUP_MAX, CSQ_OK, 0, 0},
	    {"skills", OPT_SKILLS, 0, CSQ_SERVICER_SKILLS, CSQ_OK, 0, 0},
	};
	struct csq_heartbeat_args *hb = &op->heartbeat;
	const char *err;

	(void)max_tier;
	if ((err = id_arg(req, 1, CSQ_ESERVICER)) != NULL ||
	    (err = parse_options(req, 2, opts,
	                         sizeof(opts) / sizeof(opts[0]))) != NULL)
		return err;
	op->id = hb->servicer = req->argv[1];
	hb->has_capacity = opts[0].arg != 0;
	hb->capacity = (uint32_t)opts[0].num;
	if (opts[1].arg &&
	    (err = parse_queues(req->argv[opts[1].arg],
	                        req->argvlen[opts[1].arg], buf, hb)) != NULL)
		return err;
	hb->has_ttl = opts[2].arg != 0;
	hb->ttl_s = (uint32_t)opts[2].num;
	hb->has_offer = opts[3].arg != 0;
	hb->offer_s = (uint32_t)opts[3].num;
	hb->has_wrapup = opts[4].arg != 0;
	hb->wrapup_s = (uint32_t)opts[4].num;
	hb->has_skills = opts[5].arg != 0;
	hb->skills = opts[5].arg ? req->argv[opts[5].arg] : NULL;
	return NULL;
}

/* One id of the kind invalid names. */
static const char *
args_id(const struct resp_request *req, struct csq_op *op,
        enum csq_status invalid)
{
	const char *err = id_arg(req, 1, invalid);

	op->id = err == NULL ? req->argv[1] : NULL;
	return err;
}

/* PAUSE, RESUME, LOGOUT. */
static const char *
args_servicer(const struct resp_request *req, uint32_t max_tier,
              struct csq_op *op, struct op_args_buf *buf)
{
	(void)max_tier, (void)buf;
	return args_id(req, op, CSQ_ESERVICER);
}

/* LEAVE, WHERE. */
static const char *
args_user(const struct resp_request *req, uint32_t max_tier, struct csq_op *op,
          struct op_args_buf *buf)
{
	(void)max_tier, (void)buf;
	return args_id(req, op, CSQ_EUSER);
}

/* QLEN. */
static const char *
args_queue(const struct resp_request *req, uint32_t max_tier, struct csq_op *op,
           struct op_args_buf *buf)
{
	(void)max_tier, (void)buf;
	return args_id(req, op, CSQ_EQUEUE);
}

/* RELEASE, ACCEPT, DECLINE, READY: one room. */
static const char *
args_room(const struct resp_request *req, uint32_t max_tier, struct csq_op *op,
          struct op_args_buf *buf)
{
	const char *err = room_arg(req, 1, 0);

	(void)max_tier, (void)buf;
	op->id = err == NULL ? req->argv[1] : NULL;
	return err;
}

/*
 * TRANSFER room queue [PREFER servicer seconds] [NEEDS list]: the
 * preference window opens in the target queue as ENQUEUE's does
 * (protocol-v2 sections 1a and 5).
 */
static const char *
args_transfer(const struct resp_request *req, uint32_t max_tier,
              struct csq_op *op, struct op_args_buf *buf)
{
	struct opt opts[] = {
	    {"prefer", OPT_PREFER, 1, CSQ_PREFER_MAX, CSQ_OK, 0, 0},
	    {"needs", OPT_SKILLS, 0, CSQ_USER_NEEDS, CSQ_OK, 0, 0},
	};
	const char *err;

	(void)max_tier, (void)buf;
	/* The options first, as before PREFER any word after the queue
	 * was: then the room's form and the queue's. */
	if ((err = parse_options(req, 3, opts, 2)) != NULL ||
	    (err = room_arg(req, 1, 2)) != NULL)
		return err;
	op->id = op->transfer.room = req->argv[1];
	op->transfer.queue = req->argv[2];
	prefer_option(req, &opts[0], &op->transfer.prefer);
	op->transfer.has_needs = opts[1].arg != 0;
	op->transfer.needs = opts[1].arg ? req->argv[opts[1].arg] : NULL;
	return NULL;
}

/* ENQUEUE user [QUEUE q] [TIER t] [TTL s] [PREFER servicer seconds]
 * [NEEDS list]. */
static const char *
args_enqueue(const struct resp_request *req, uint32_t max_tier,
             struct csq_op *op, struct op_args_buf *buf)
{
	struct opt opts[] = {
	    {"queue", OPT_ID, 0, 0, CSQ_EQUEUE, 0, 0},
	    {"tier", OPT_INT, 0, max_tier, CSQ_OK, 0, 0},
	    {"ttl", OPT_INT, 0, CSQ_TTL_MAX, CSQ_OK, 0, 0},
	    {"prefer", OPT_PREFER, 1, CSQ_PREFER_MAX, CSQ_OK, 0, 0},
	    {"needs", OPT_SKILLS, 0, CSQ_USER_NEEDS, CSQ_OK, 0, 0},
	};
	struct csq_enqueue_args *a = &op->enqueue;
	const char *err;

	(void)buf;
	if ((err = id_arg(req, 1, CSQ_EUSER)) != NULL ||
	    (err = parse_options(req, 2, opts,
	                         sizeof(opts) / sizeof(opts[0]))) != NULL)
		return err;
	op->id = a->user = req->argv[1];
	a->has_queue = opts[0].arg != 0;
	a->queue = opts[0].arg ? req->argv[opts[0].arg] : NULL;
	a->has_tier = opts[1].arg != 0;
	a->tier = (uint32_t)opts[1].num;
	a->has_ttl = opts[2].arg != 0;
	a->ttl_s = (uint32_t)opts[2].num;
	prefer_option(req, &opts[3], &a->prefer);
	a->has_needs = opts[4].arg != 0;
	a->needs = opts[4].arg ? req->argv[opts[4].arg] : NULL;
	return NULL;
}

/* TOUCH user [TTL s]. */
static const char *
args_touch(const struct resp_request *req, uint32_t max_tier, struct csq_op *op,
           struct op_args_buf *buf)
{
	struct opt ttl = {"ttl", OPT_INT, 0, CSQ_TTL_MAX, CSQ_OK, 0, 0};
	const char *err;

	(void)max_tier, (void)buf;
	if ((err = id_arg(req, 1, CSQ_EUSER)) != NULL ||
	    (err = parse_options(req, 2, &ttl, 1)) != NULL)
		return err;
	op->id = req->argv[1];
	if (ttl.arg)
		op->ttl_s = ttl.num;
	return NULL;
}

/* QUEUE queue [offset [count]]. */
static const char *
args_range(const struct resp_request *req, uint32_t max_tier, struct csq_op *op,
           struct op_args_buf *buf)
{
	const char *err;
	int64_t v;

	(void)max_tier, (void)buf;
	if (req->argc > 4)
		return "ERR wrong number of arguments for 'queue' command";
	if ((err = id_arg(req, 1, CSQ_EQUEUE)) != NULL)
		return err;
	op->id = req->argv[1];
	op->count = CSQ_RANGE_COUNT_DEF;
	if (req->argc > 2) {
		if ((err = int_arg(req, 2, 0, INT64_MAX, &v)) != NULL)
			return err;
		op->offset = (uint64_t)v;
	}
	if (req->argc > 3) {
		if ((err = int_arg(req, 3, 0, CSQ_RANGE_COUNT_MAX, &v)) != NULL)
			return err;
		op->count = (uint32_t)v;
	}
	return NULL;
}

/* QUEUES (every queue) and QSTATS queue: a queue when one is named. */
static const char *
args_slice(const struct resp_request *req, uint32_t max_tier, struct csq_op *op,
           struct op_args_buf *buf)
{
	(void)max_tier, (void)buf;
	return req->argc > 1 ? args_id(req, op, CSQ_EQUEUE) : NULL;
}

/* ROOMS servicer. */
static const char *
args_rooms(const struct resp_request *req, uint32_t max_tier, struct csq_op *op,
           struct op_args_buf *buf)
{
	(void)max_tier, (void)buf;
	return req->argc > 1 ? args_id(req, op, CSQ_ESERVICER) : NULL;
}

/* STATS: no words. */
static const char *
args_none(const struct resp_request *req, uint32_t max_tier, struct csq_op *op,
          struct op_args_buf *buf)
{
	(void)req, (void)max_tier, (void)op, (void)buf;
	return NULL;
}

/* POLICY is no command (its arity is 0): no words make one. */
static const char *
args_policy(const struct resp_request *req, uint32_t max_tier,
            struct csq_op *op, struct op_args_buf *buf)
{
	(void)req, (void)max_tier, (void)op, (void)buf;
	return ERR_SYNTAX;
}

/* SERVICERS: no words either (a slice's cursor is csqd's own). */
static const char *
args_view(const struct resp_request *req, uint32_t max_tier, struct csq_op *op,
          struct op_args_buf *buf)
{
	return args_none(req, max_tier, op, buf);
}

#define ARGS_ROW(code, name, number, arity, roles, id, mutates, record, args,  \
                 reply)                                                        \
	[CSQ_OP_##code] = args_##args,

static args_fn *const parsers[CSQ_OP_COUNT] = {CSQ_OPS(ARGS_ROW)};

/* op_args_parse leaves the policy, the op's last member, as it was. */
_Static_assert(offsetof(struct csq_op, policy) +
                       sizeof(((struct csq_op *)0)->policy) ==
                   sizeof(struct csq_op),
               "the policy is the op's last member");

const char *
op_args_parse(enum csq_opcode code, const struct resp_request *req,
              uint32_t max_tier, struct csq_op *op, struct op_args_buf *buf)
{
	/* Zeroed up to its policy (2,832 of its 3,392 bytes), which no
	 * words make (POLICY is no command) and which only a POLICY reads
	 * (lib/record.c, lib/validate.c, lib/engine_memory.c). */
	memset(op, 0, offsetof(struct csq_op, policy));
	op->code = code;
	op->ttl_s = -1;
	if ((unsigned)code >= CSQ_OP_COUNT)
		return ERR_SYNTAX;
	return parsers[code](req, max_tier, op, buf);
}
