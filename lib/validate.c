/*
 * The input checks of an operation, apart from the state it runs on. The
 * memory engine makes them inside each libcsq call; an engine that keeps its
 * state elsewhere (Redis) makes them here first, so that a bad request is
 * refused the same way and never reaches the store. The order of the checks
 * is the order of the libcsq calls: the first error wins in both.
 */
#include "engine.h"

#include <string.h>

static int
valid(const char *s)
{
	return s != NULL && csq_valid_id(s, strnlen(s, CSQ_ID_MAX + 1));
}

/* The checks of the table's args column (op.h), one for each form. */
typedef enum csq_status check_fn(const struct csq_op *,
                                 const struct csq_limits *);

static enum csq_status
check_heartbeat(const struct csq_op *op, const struct csq_limits *limits)
{
	const struct csq_heartbeat_args *a = &op->heartbeat;
	struct csq_skill_list skills;
	size_t i;

	(void)limits;
	if (!valid(a->servicer))
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
	if (!a->has_queues)
		return CSQ_OK;
	if (a->nqueues < 1 || a->nqueues > CSQ_SERVICER_QUEUES)
		return CSQ_ERANGE;
	for (i = 0; i < a->nqueues; i++)
		if (!valid(a->queues[i]))
			return CSQ_EQUEUE;
	return CSQ_OK;
}

/* PREFER, then NEEDS (the count of need-sets is the state's). */
static enum csq_status
validate_needs(int has_needs, const char *needs,
               const struct csq_prefer_args *prefer)
{
	struct csq_skill_list l;
	enum csq_status st;

	if ((st = csq_prefer_check(prefer)) != CSQ_OK)
		return st;
	if (has_needs && csq_skills_parse(needs, CSQ_USER_NEEDS, &l) != CSQ_OK)
		return CSQ_ESKILL;
	return CSQ_OK;
}

static enum csq_status
check_enqueue(const struct csq_op *op, const struct csq_limits *limits)
{
	const struct csq_enqueue_args *a = &op->enqueue;

	if (!valid(a->user))
		return CSQ_EUSER;
	if (a->has_queue && !valid(a->queue))
		return CSQ_EQUEUE;
	if (a->has_tier && a->tier > limits->max_tier)
		return CSQ_ERANGE;
	if (a->has_ttl && a->ttl_s > CSQ_TTL_MAX)
		return CSQ_ERANGE;
	return validate_needs(a->has_needs, a->needs, &a->prefer);
}

/* 1 when room is one, its parse in *out (csq_op_room). */
static int
parse_room(const char *room, struct csq_op_room *out)
{
	char sid[CSQ_ID_MAX + 1];

	if (room == NULL ||
	    csq_parse_room(room, strlen(room), sid, &out->index) != 0)
		return 0;
	out->of = room;
	out->sidlen = (uint32_t)strlen(sid);
	return 1;
}

static int
valid_room(const char *room)
{
	struct csq_op_room parsed;

	return parse_room(room, &parsed);
}

static enum csq_status
check_none(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)op, (void)limits;
	return CSQ_OK;
}

static enum csq_status
check_servicer(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	return valid(op->id) ? CSQ_OK : CSQ_ESERVICER;
}

static enum csq_status
check_room(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	return valid_room(op->id) ? CSQ_OK : CSQ_EROOM;
}

static enum csq_status
check_transfer(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	if (!valid_room(op->transfer.room))
		return CSQ_EROOM;
	if (!valid(op->transfer.queue))
		return CSQ_EQUEUE;
	return validate_needs(op->transfer.has_needs, op->transfer.needs,
	                      &op->transfer.prefer);
}

static enum csq_status
check_touch(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	if (!valid(op->id))
		return CSQ_EUSER;
	return op->ttl_s > CSQ_TTL_MAX ? CSQ_ERANGE : CSQ_OK;
}

static enum csq_status
check_user(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	return valid(op->id) ? CSQ_OK : CSQ_EUSER;
}

static enum csq_status
check_range(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	if (!valid(op->id))
		return CSQ_EQUEUE;
	return op->count > CSQ_RANGE_COUNT_MAX ? CSQ_ERANGE : CSQ_OK;
}

static enum csq_status
check_queue(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	return valid(op->id) ? CSQ_OK : CSQ_EQUEUE;
}

/* A slice's cursor: an id, or none (the first slice). */
static int
valid_after(const struct csq_op *op)
{
	return op->after == NULL || op->after[0] == '\0' || valid(op->after);
}

/* A view's id, or every one (NULL), and its slice's cursor. */
static int
valid_view(const struct csq_op *op)
{
	return (op->id == NULL || valid(op->id)) && valid_after(op);
}

/* QUEUES, QSTATS: one queue, or every one by slices. */
static enum csq_status
check_slice(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	return valid_view(op) ? CSQ_OK : CSQ_EQUEUE;
}

/* ROOMS: one servicer's, or every one's by slices. */
static enum csq_status
check_rooms(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	return valid_view(op) ? CSQ_OK : CSQ_ESERVICER;
}

/* SERVICERS: every one by slices (it has no id: one is not read). */
static enum csq_status
check_view(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	return valid_after(op) ? CSQ_OK : CSQ_ESERVICER;
}

/* The set is checked whole when it applies. */
static enum csq_status
check_policy(const struct csq_op *op, const struct csq_limits *limits)
{
	(void)limits;
	return op->count <= CSQ_POLICIES_MAX && op->offset < op->count ? CSQ_OK
	       : op->count == 0 && op->offset == 0                     ? CSQ_OK
	                                           : CSQ_ERANGE;
}

#define CHECK_ROW(code, name, number, arity, roles, id, mutates, record, args, \
                  reply)                                                       \
	[CSQ_OP_##code] = check_##args,

static check_fn *const checks[CSQ_OP_COUNT] = {CSQ_OPS(CHECK_ROW)};

enum csq_status
csq_op_validate(const struct csq_op *op, const struct csq_limits *limits)
{
	if ((unsigned)op->code >= CSQ_OP_COUNT)
		return CSQ_ERANGE;
	return checks[op->code](op, limits);
}

enum csq_status
csq_op_check(struct csq_op *op, const struct csq_limits *limits)
{
	op->room.of = NULL;
	if ((unsigned)op->code < CSQ_OP_COUNT && checks[op->code] == check_room)
		return parse_room(op->id, &op->room) ? CSQ_OK : CSQ_EROOM;
	return csq_op_validate(op, limits);
}
