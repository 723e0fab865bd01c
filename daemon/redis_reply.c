/*
 * The Redis engine's replies: a CSQ.CALL's reply is a header (the
 * earliest deadline, Redis's time, the last event id, whether that
 * deadline is exact, the events' message) and then each operation's
 * answer in csq.so's binary form (lib/result.h). Each becomes the struct
 * csq_result of its call; a reply of any other shape is an error of the
 * call, never trusted.
 */
#include "redis_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "result.h"
#include "util.h"

#define ERROR_LOG_MS 1000 /* at most one error line per second */

static int64_t
reply_int(const redisReply *a, size_t i)
{
	if (i >= a->elements || a->element[i]->type != REDIS_REPLY_INTEGER)
		return INT64_MIN;
	return a->element[i]->integer;
}

/* The header of a call's reply: a deadline, Redis time, the last event id,
 * whether the deadline is the true earliest, the events' message. Returns
 * the last event id, or -1 for a reply of another shape. */
int64_t
redis_reply_header(struct redis_engine *r, const redisReply *a)
{
	int64_t next = reply_int(a, 0), now = reply_int(a, 1);
	int64_t last = reply_int(a, 2), exact = reply_int(a, 3);

	if (a->type != REDIS_REPLY_ARRAY || next == INT64_MIN ||
	    now == INT64_MIN || last == INT64_MIN || exact == INT64_MIN ||
	    a->elements < 5 || a->element[4]->type != REDIS_REPLY_STRING)
		return -1;
	r->skew_ms = now - (int64_t)r->clock(r->clock_arg);
	/* The reaper and the health check know the earliest deadline; other
	 * operations tell the earliest they set. One that was removed leaves
	 * the timer early: the reaper then finds nothing and says what is
	 * next. */
	if (exact)
		r->next_redis = next;
	else if (next >= 0 && (r->next_redis < 0 || next < r->next_redis))
		r->next_redis = next;
	return last < 0 ? 0 : last;
}

/*
 * An error Redis gave, for the log: one line a second at most, which says
 * how many were left out. A full Redis (OOM) refuses every call, and a
 * line for each would flood the log.
 */
void
redis_reply_log_error(struct redis_engine *r, const char *what)
{
	uint64_t now = redis_mono_ms();

	if (r->error_logged_ms != 0 &&
	    now - r->error_logged_ms < ERROR_LOG_MS) {
		r->errors_unlogged++;
		snprintf(r->error_last, sizeof(r->error_last), "%s", what);
		return;
	}
	if (r->errors_unlogged > 0)
		log_warnx("engine redis: %s (and %llu more errors in the "
		          "last %llu ms)",
		          what, (unsigned long long)r->errors_unlogged,
		          (unsigned long long)(now - r->error_logged_ms));
	else
		log_warnx("engine redis: %s", what);
	r->error_logged_ms = now;
	r->errors_unlogged = 0;
}

/* The errors held back at the end of a burst, logged by the tick once
 * their second is over rather than with the next error, which may never
 * come: the last of them, and how many. */
void
redis_reply_log_flush(struct redis_engine *r)
{
	uint64_t now = redis_mono_ms();

	if (r->errors_unlogged == 0 || now - r->error_logged_ms < ERROR_LOG_MS)
		return;
	log_warnx("engine redis: %s (the last of %llu errors in the %llu ms "
	          "after the line before)",
	          r->error_last, (unsigned long long)r->errors_unlogged,
	          (unsigned long long)(now - r->error_logged_ms));
	r->error_logged_ms = now;
	r->errors_unlogged = 0;
}

void
redis_reply_module(struct redis_call *k, const redisReply *reply, size_t i,
                   uint64_t last)
{
	const redisReply *a = i < reply->elements ? reply->element[i] : NULL;

	if (a == NULL || a->type != REDIS_REPLY_STRING ||
	    csq_result_decode(k->code, (const uint8_t *)a->str, a->len, &k->res,
	                      &k->owned) != 0) {
		log_warnx("engine redis: an answer of the module to operation "
		          "%d has an unexpected shape",
		          (int)k->code);
		redis_call_fail(k, CSQ_EUNSURE);
		return;
	}
	redis_call_ready(k, last);
}

/*
 * The objects hiredis builds of Redis's replies, one malloc each: a string
 * and its bytes together, an array and its elements' pointers together.
 * hiredis's own functions make a string of a calloc and a malloc, an array
 * of two callocs, and glibc serves no calloc from its per-thread cache:
 * 750 of the 3,000 instructions a match that reading and freeing the
 * replies took on the Redis engine (docs/benchmarks.md, "csqd's CPU a
 * match on the Redis engine"). The same struct redisReply, read the same
 * way; NULL when malloc fails, which hiredis reports as out of memory, as
 * with its own.
 *
 * An object of REPLY_SPARE_SIZE bytes or fewer (an integer, an answer of
 * the module, a header's array) takes a block of that size, and a block
 * freed is kept for the next one, REPLY_SPARE_MAX at most (64 KiB): a
 * CSQ.CALL's reply of a dozen answers made a dozen mallocs of a size, more
 * than glibc's per-thread cache keeps (7), and each went to its bins
 * (docs/benchmarks.md, "csqd linked whole"). A larger object (the events'
 * message) is its own malloc. The size of an object is known again when
 * it is freed from its fields, which nobody changes (reply_extra). csqd
 * runs one thread: the spares are the process's, given back when the
 * engine stops (redis_reply_spares_free).
 */
#define REPLY_SPARE_SIZE 256
#define REPLY_SPARE_MAX  256

struct reply_spare {
	struct reply_spare *next;
};

static struct reply_spare *reply_spares;
static size_t reply_nspares;

/* The bytes r holds after its struct: its string's, or its elements'
 * pointers. */
static size_t
reply_extra(const redisReply *r)
{
	if (r->type == REDIS_REPLY_ARRAY)
		return r->elements * sizeof(redisReply *);
	return r->str != NULL ? r->len + 1 : 0;
}

static void *
reply_object(const redisReadTask *task, int type, size_t extra)
{
	redisReply *r, *parent;
	struct reply_spare *s = reply_spares;

	if (extra > REPLY_SPARE_SIZE - sizeof(*r)) {
		r = malloc(sizeof(*r) + extra);
	} else if (s != NULL) {
		reply_spares = s->next;
		reply_nspares--;
		r = (redisReply *)(void *)s;
	} else {
		r = malloc(REPLY_SPARE_SIZE);
	}
	if (r == NULL)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->type = type;
	if (task->parent != NULL) {
		parent = task->parent->obj;
		parent->element[task->idx] = r;
	}
	return r;
}

/* r, whose elements are freed, back to the spares or to malloc. */
static void
reply_object_free(redisReply *r)
{
	struct reply_spare *s;

	if (reply_extra(r) > REPLY_SPARE_SIZE - sizeof(*r) ||
	    reply_nspares >= REPLY_SPARE_MAX) {
		free(r);
		return;
	}
	s = (struct reply_spare *)(void *)r;
	s->next = reply_spares;
	reply_spares = s;
	reply_nspares++;
}

void
redis_reply_spares_free(void)
{
	struct reply_spare *s;

	while ((s = reply_spares) != NULL) {
		reply_spares = s->next;
		free(s);
	}
	reply_nspares = 0;
}

static void *
reply_string(const redisReadTask *task, char *str, size_t len)
{
	redisReply *r = reply_object(task, task->type, len + 1);

	if (r == NULL)
		return NULL;
	r->str = (char *)(r + 1);
	memcpy(r->str, str, len);
	r->str[len] = '\0';
	r->len = len;
	return r;
}

static void *
reply_array(const redisReadTask *task, int elements)
{
	size_t n = elements > 0 ? (size_t)elements : 0;
	redisReply *r =
	    reply_object(task, REDIS_REPLY_ARRAY, n * sizeof(redisReply *));

	if (r == NULL)
		return NULL;
	if (n > 0) {
		/* An element not read yet (a reply cut short) is NULL. */
		r->element = (redisReply **)(r + 1);
		memset(r->element, 0, n * sizeof(redisReply *));
	}
	r->elements = n;
	return r;
}

static void *
reply_integer(const redisReadTask *task, long long value)
{
	redisReply *r = reply_object(task, REDIS_REPLY_INTEGER, 0);

	if (r != NULL)
		r->integer = value;
	return r;
}

static void *
reply_nil(const redisReadTask *task)
{
	return reply_object(task, REDIS_REPLY_NIL, 0);
}

static void
reply_free(void *obj)
{
	redisReply *r = obj;
	size_t i;

	if (r == NULL)
		return;
	if (r->type == REDIS_REPLY_ARRAY)
		for (i = 0; i < r->elements; i++)
			reply_free(r->element[i]);
	reply_object_free(r);
}

static redisReplyObjectFunctions reply_functions = {
    .createString = reply_string,
    .createArray = reply_array,
    .createInteger = reply_integer,
    .createNil = reply_nil,
    .freeObject = reply_free,
};

void
redis_reply_reader(redisReader *reader)
{
	reader->fn = &reply_functions;
}

void
redis_reply_objects(redisAsyncContext *ac)
{
	redis_reply_reader(ac->c.reader);
}
