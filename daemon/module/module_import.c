/*
 * CSQ.IMPORT <key> [DRYRUN] [REPLACE] [DELETE]: the state that the Lua
 * engine (csqd before the module, daemon/lua/ until issue 34) kept under
 * a prefix, in its own key layout (docs/design.md, "The Redis engine",
 * "Keys"), made into the module's one key {<prefix>}:state.
 *
 * The keys are read with RedisModule_Call and turned into what the
 * journal's compaction writes (the limits and policies as records, then
 * the snapshot items of lib/snapshot.h); that dump is loaded by
 * module_state_load, the path of CSQ.LOAD and the RDB, so the import is
 * checked as any load is, and replicated as CSQ.LOAD of the same bytes: a
 * replica ends with the master's state, digest for digest. Nothing is
 * written unless every key reads and the whole state loads.
 *
 * What the Lua layout holds and the state does not is derived, or checked
 * against what the items made of it (its counters of waiting users,
 * servicers and busy rooms); what the state holds and the layout does not
 * is given its default (docs/protocol.md, section 11b, "CSQ.IMPORT").
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "orderkey.h"
#include "record.h"
#include "snapshot.h"
#include "state.h" /* the deadline kinds of a snapshot's clock */
#include "util.h"

#include "module_state.h"

#define IMPORT_PREFIX_MAX 256 /* bytes of a prefix, braces included */
#define IMPORT_KEY_MAX    (IMPORT_PREFIX_MAX + 2 * CSQ_ID_MAX + 16)
#define IMPORT_ERR_MAX    1536
#define IMPORT_LABEL_MAX  (CSQ_ROOM_MAX + 40)
#define RING_SLOTS        CSQ_OUTCOMES
#define TIER_TOP          15 /* the Lua's tiers: 0..15 */
/* The numbers of a queue's qstat hash: 14 little-endian doubles. */
#define QSTAT_NUMBERS 14
#define SCAN_COUNT    "1000"

/* A deadline of {p}:deadlines: its member, its time, the tie it gets. */
struct import_dl {
	const char *member;
	size_t len;
	uint64_t at, tie;
	int used;
};

struct import {
	RedisModuleCtx *ctx;
	char p[IMPORT_PREFIX_MAX + 2]; /* "{<prefix>}:" */
	size_t plen;
	uint64_t now;
	/* The deadlines, sorted by member; their reply holds the bytes. */
	RedisModuleCallReply *dl_reply;
	struct import_dl *dls;
	size_t ndl;
	/* The dump, and a label for each record (for a clear error). */
	struct csq_wbuf dump;
	char (*labels)[IMPORT_LABEL_MAX];
	size_t nrec, caprec;
	struct csq_limits limits;
	struct csq_snap_item it;
	uint64_t seq;
	/* What {p}:stats says, to check against what the items make. */
	uint64_t lua_waiting, lua_servicers, lua_busy;
	int has_lua_waiting, has_lua_servicers, has_lua_busy;
	/* Counted as read: the reply. */
	uint64_t users, waiting, offered, assigned, preferring;
	uint64_t servicers, wrapups, room_users, queues, policies;
	char err[IMPORT_ERR_MAX];
};

/* The first failure is the one told; -1. */
static int fail(struct import *im, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
fail(struct import *im, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (im->err[0] != '\0')
		return -1;
	n = snprintf(im->err, sizeof(im->err),
	             "ERR the Lua engine's state "
	             "under %.*s: ",
	             (int)(im->plen - 1), im->p);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(im->err))
		vsnprintf(im->err + n, sizeof(im->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* "{p}:" what, then a (alen bytes), into buf; its length. */
static size_t
key_of(const struct import *im, char *buf, const char *what, const char *a,
       size_t alen)
{
	int n =
	    snprintf(buf, IMPORT_KEY_MAX, "%s%s%.*s", im->p, what,
	             (int)(alen < IMPORT_KEY_MAX ? alen : IMPORT_KEY_MAX), a);

	return n < 0                        ? 0
	       : (size_t)n < IMPORT_KEY_MAX ? (size_t)n
	                                    : IMPORT_KEY_MAX - 1;
}

/* A digits-only text as an integer (no sign, no spaces, no overflow). */
static int
parse_u64(const char *s, size_t len, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (len == 0 || len > 20)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (x > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*v = x;
	return 0;
}

static int
parse_u32(const char *s, size_t len, uint32_t max, uint32_t *v)
{
	uint64_t x;

	if (parse_u64(s, len, &x) != 0 || x > max)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* An id (user, servicer, queue) of len bytes, as the protocol's. */
static int
id_copy(char *out, const char *s, size_t len)
{
	if (len > CSQ_ID_MAX || !csq_valid_id(s, len) ||
	    memchr(s, '\0', len) != NULL)
		return -1;
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

/* A reply's string (a bulk or a status), or NULL. */
static const char *
reply_str(RedisModuleCallReply *r, size_t *len)
{
	if (r == NULL || RM_CallReplyType(r) != RM_REPLY_STRING)
		return NULL;
	return RM_CallReplyStringPtr(r, len);
}

/* A command's reply, an error of Redis's told as the import's. */
static RedisModuleCallReply *
called(struct import *im, RedisModuleCallReply *r, const char *cmd,
       const char *key)
{
	const char *s;
	size_t len = 0;

	if (r == NULL) {
		fail(im, "%s %s failed", cmd, key);
		return NULL;
	}
	if (RM_CallReplyType(r) == RM_REPLY_ERROR) {
		s = RM_CallReplyStringPtr(r, &len);
		fail(im, "%s %s: %.*s", cmd, key, (int)(len < 80 ? len : 80),
		     s != NULL ? s : "");
		RM_FreeCallReply(r);
		return NULL;
	}
	return r;
}

/* HGETALL of a key: an array of fields and values (empty: no key). */
static RedisModuleCallReply *
hgetall(struct import *im, const char *key, size_t klen)
{
	RedisModuleCallReply *r = called(
	    im, RM_Call(im->ctx, "HGETALL", "b", key, klen), "HGETALL", key);

	if (r != NULL && RM_CallReplyType(r) != RM_REPLY_ARRAY) {
		RM_FreeCallReply(r);
		fail(im, "%s is not a hash", key);
		return NULL;
	}
	return r;
}

/* Field name of a hash's HGETALL: its value, or NULL. */
static const char *
hash_field(RedisModuleCallReply *h, const char *name, size_t *len)
{
	size_t n = RM_CallReplyLength(h), i, flen, nlen = strlen(name);
	const char *f;

	for (i = 0; i + 1 < n; i += 2) {
		f = reply_str(RM_CallReplyArrayElement(h, i), &flen);
		if (f != NULL && flen == nlen && memcmp(f, name, nlen) == 0)
			return reply_str(RM_CallReplyArrayElement(h, i + 1),
			                 len);
	}
	return NULL;
}

/* A number field of a hash; absent: def, or an error if required. */
static int
hash_u64(struct import *im, RedisModuleCallReply *h, const char *key,
         const char *name, int required, uint64_t def, uint64_t *v)
{
	size_t len;
	const char *s = hash_field(h, name, &len);

	if (s == NULL) {
		if (required)
			return fail(im, "%s has no field %s", key, name);
		*v = def;
		return 0;
	}
	if (parse_u64(s, len, v) != 0)
		return fail(im, "%s's %s is not a number: '%.*s'", key, name,
		            (int)(len < 24 ? len : 24), s);
	return 0;
}

/* HGET key field: its value (the reply to free in *r), or NULL. */
static const char *
hget(struct import *im, const char *key, size_t klen, const char *f,
     size_t flen, RedisModuleCallReply **r, size_t *len)
{
	*r = called(im, RM_Call(im->ctx, "HGET", "bb", key, klen, f, flen),
	            "HGET", key);
	return *r != NULL ? reply_str(*r, len) : NULL;
}

static int
dl_cmp(const void *a_, const void *b_)
{
	const struct import_dl *a = a_, *b = b_;
	int c = memcmp(a->member, b->member, a->len < b->len ? a->len : b->len);

	return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

/*
 * {p}:deadlines, every timer by its member ("u:<id>", "s:<id>",
 * "o:<servicer>/<i>", ...). Each gets the tie of its place in Redis's
 * order (score, then member): the order the Lua engine acted on them in,
 * which the memory engine's heap keeps by (time, tie).
 */
static int
read_deadlines(struct import *im)
{
	char key[IMPORT_KEY_MAX];
	size_t klen = key_of(im, key, "deadlines", "", 0), n, i, slen;
	RedisModuleCallReply *r;
	const char *s;

	r = called(im,
	           RM_Call(im->ctx, "ZRANGE", "bccc", key, klen, "0", "-1",
	                   "WITHSCORES"),
	           "ZRANGE", key);
	if (r == NULL)
		return -1;
	im->dl_reply = r;
	if (RM_CallReplyType(r) != RM_REPLY_ARRAY)
		return fail(im, "%s is not a sorted set", key);
	n = RM_CallReplyLength(r) / 2;
	im->dls = RM_Calloc(n + 1, sizeof(*im->dls));
	for (i = 0; i < n; i++) {
		struct import_dl *d = &im->dls[i];

		d->member =
		    reply_str(RM_CallReplyArrayElement(r, 2 * i), &d->len);
		s = reply_str(RM_CallReplyArrayElement(r, 2 * i + 1), &slen);
		if (d->member == NULL || s == NULL ||
		    parse_u64(s, slen, &d->at) != 0 || d->at == 0)
			return fail(im,
			            "%s has a member whose time is not a "
			            "number of ms",
			            key);
		d->tie = i + 1;
	}
	im->ndl = n;
	qsort(im->dls, n, sizeof(*im->dls), dl_cmp);
	return 0;
}

/* The deadline kind:a, taken (each is taken once); NULL if none. */
static struct import_dl *
dl_take(struct import *im, char kind, const char *a)
{
	char m[IMPORT_KEY_MAX];
	struct import_dl k, *d;
	int n = snprintf(m, sizeof(m), "%c:%s", kind, a);

	k.member = m;
	k.len = (size_t)n;
	d = bsearch(&k, im->dls, im->ndl, sizeof(*im->dls), dl_cmp);
	if (d == NULL || d->used)
		return NULL;
	d->used = 1;
	return d;
}

/* The remaining seconds of a window ending at at, within 1..max. */
static uint32_t
seconds_left(const struct import *im, uint64_t at, uint32_t max)
{
	uint64_t s = at > im->now ? (at - im->now + 999) / 1000 : 1;

	return s < 1 ? 1 : s > max ? max : (uint32_t)s;
}

/* One record of the dump, with what it is (for an error). */
static void
add_record(struct import *im, const uint8_t *rec, size_t len, const char *label)
{
	if (im->nrec == im->caprec) {
		im->caprec = im->caprec != 0 ? 2 * im->caprec : 64;
		im->labels =
		    RM_Realloc(im->labels, im->caprec * sizeof(*im->labels));
	}
	snprintf(im->labels[im->nrec++], IMPORT_LABEL_MAX, "%s", label);
	csq_put_bytes(&im->dump, rec, len);
}

static void
add_item(struct import *im, const char *label)
{
	uint8_t rec[CSQ_RECORD_MAX];

	add_record(im, rec, csq_record_encode_snap(&im->it, rec), label);
}

static void
add_op(struct import *im, const struct csq_op *op, const char *label)
{
	uint8_t rec[CSQ_RECORD_MAX];

	add_record(im, rec, csq_record_encode(op, 0, rec), label);
}

/*
 * {p}:stats: the counters the state item takes (seq, order, event id,
 * the totals), the strategy the free servicers were ranked by, and the
 * live counts to check the items against.
 */
static int
read_stats(struct import *im, struct csq_snap_state *o)
{
	static const struct {
		const char *name;
		size_t off;
	} totals[] = {
	    {"matched_total", offsetof(struct csq_stats, matched_total)},
	    {"abandoned_total", offsetof(struct csq_stats, abandoned_total)},
	    {"requeued_total", offsetof(struct csq_stats, requeued_total)},
	    {"servicers_lost_total",
	     offsetof(struct csq_stats, servicers_lost_total)},
	    {"offers_total", offsetof(struct csq_stats, offers_total)},
	    {"offers_declined_total",
	     offsetof(struct csq_stats, offers_declined_total)},
	    {"offers_missed_total",
	     offsetof(struct csq_stats, offers_missed_total)},
	    {"transferred_total",
	     offsetof(struct csq_stats, transferred_total)},
	};
	char key[IMPORT_KEY_MAX];
	size_t klen = key_of(im, key, "stats", "", 0), i, len;
	RedisModuleCallReply *h = hgetall(im, key, klen);
	uint64_t reaping, v;
	const char *s;
	int rc = -1;

	if (h == NULL)
		return -1;
	if (RM_CallReplyLength(h) == 0) {
		fail(im, "no such state (%s does not exist)", key);
		goto out;
	}
	if (hash_u64(im, h, key, "reaping", 0, 0, &reaping) != 0)
		goto out;
	if (reaping != 0) {
		fail(im,
		     "a reap of more than 1000 deadlines is under way "
		     "(%s's reaping is 1): stop every csqd of the Lua "
		     "engine once it ends, then import",
		     key);
		goto out;
	}
	memset(o, 0, sizeof(*o));
	if (hash_u64(im, h, key, "seq", 0, 0, &o->seq) != 0 ||
	    hash_u64(im, h, key, "order", 0, 0, &o->order) != 0 ||
	    hash_u64(im, h, key, "event_id", 0, 0, &o->event_id) != 0)
		goto out;
	if (o->seq > CSQ_KEY_SEQ_MAX) {
		fail(im, "%s's seq is out of range", key);
		goto out;
	}
	/* seq is also enqueued_total (a new user takes the next one). */
	o->stats.enqueued_total = o->seq;
	for (i = 0; i < sizeof(totals) / sizeof(totals[0]); i++) {
		if (hash_u64(im, h, key, totals[i].name, 0, 0, &v) != 0)
			goto out;
		memcpy((char *)&o->stats + totals[i].off, &v, sizeof(v));
	}
	im->has_lua_waiting = hash_field(h, "waiting", &len) != NULL;
	im->has_lua_servicers = hash_field(h, "servicers", &len) != NULL;
	im->has_lua_busy = hash_field(h, "rooms_busy", &len) != NULL;
	if (hash_u64(im, h, key, "waiting", 0, 0, &im->lua_waiting) != 0 ||
	    hash_u64(im, h, key, "servicers", 0, 0, &im->lua_servicers) != 0 ||
	    hash_u64(im, h, key, "rooms_busy", 0, 0, &im->lua_busy) != 0)
		goto out;
	/* "0", "1", or with queue policies "<0|1> <their SHA-1>". */
	s = hash_field(h, "strategy", &len);
	if (s != NULL && len >= 1 && (s[0] == '0' || s[0] == '1') &&
	    (len == 1 || s[1] == ' '))
		im->limits.strategy = s[0] == '1' ? CSQ_STRATEGY_LEAST_BUSY
		                                  : CSQ_STRATEGY_LONGEST_IDLE;
	else if (s != NULL) {
		fail(im, "%s's strategy is not 0 or 1: '%.*s'", key,
		     (int)(len < 24 ? len : 24), s);
		goto out;
	}
	im->seq = o->seq;
	rc = 0;
out:
	RM_FreeCallReply(h);
	return rc;
}

/* The text of one field of a policy (space-separated), or -1. */
static int
next_word(const char **s, const char *end, const char **w, size_t *wlen)
{
	const char *p = *s;

	if (p > end)
		return -1;
	*w = p;
	while (p < end && *p != ' ')
		p++;
	*wlen = (size_t)(p - *w);
	*s = p + 1;
	return 0;
}

/*
 * A policy as engine_redis.c packed it: "<strategy> <max_length>
 * <overflow_after> <aging_every> <aging_max_tier> <service_level>
 * <overflow_to>", -1 (strategy, aging_max_tier), 0 or "" for a key not
 * given.
 */
static int
parse_policy(struct import *im, const char *name, size_t nlen, const char *s,
             size_t len, struct csq_policy *p)
{
	const char *end = s + len, *w[7];
	size_t wl[7];
	uint64_t max;
	int i;

	memset(p, 0, sizeof(*p));
	if (id_copy(p->name, name, nlen) != 0)
		return fail(im, "a policy of a queue whose name is not an id");
	for (i = 0; i < 7; i++)
		if (next_word(&s, end, &w[i], &wl[i]) != 0)
			goto bad;
	if (s <= end) /* more than seven */
		goto bad;
	if (wl[0] == 2 && memcmp(w[0], "-1", 2) == 0)
		p->has_strategy = 0;
	else if (wl[0] == 1 && (w[0][0] == '0' || w[0][0] == '1')) {
		p->has_strategy = 1;
		p->strategy = w[0][0] == '1' ? CSQ_STRATEGY_LEAST_BUSY
		                             : CSQ_STRATEGY_LONGEST_IDLE;
	} else
		goto bad;
	if (parse_u64(w[1], wl[1], &max) != 0 ||
	    parse_u32(w[2], wl[2], CSQ_POLICY_SECONDS_MAX,
	              &p->overflow_after_s) != 0 ||
	    parse_u32(w[3], wl[3], CSQ_POLICY_SECONDS_MAX, &p->aging_every_s) !=
	        0 ||
	    parse_u32(w[5], wl[5], CSQ_POLICY_SECONDS_MAX,
	              &p->service_level_s) != 0)
		goto bad;
	p->has_max_length = max > 0;
	p->max_length = max;
	if (wl[4] == 2 && memcmp(w[4], "-1", 2) == 0)
		p->has_aging_max_tier = 0;
	else if (parse_u32(w[4], wl[4], CSQ_TIER_LIMIT, &p->aging_max_tier) ==
	         0)
		p->has_aging_max_tier = 1;
	else
		goto bad;
	if (wl[6] > 0 && id_copy(p->overflow_to, w[6], wl[6]) != 0)
		goto bad;
	return 0;
bad:
	return fail(im, "the policy of %s is not csq's: '%.*s'", p->name,
	            (int)(len < 64 ? len : 64), end - len);
}

static int
policy_cmp(const void *a, const void *b)
{
	return strcmp(((const struct csq_policy *)a)->name,
	              ((const struct csq_policy *)b)->name);
}

/* The limits (any tier the Lua allowed), then {p}:policy as POLICYs. */
static int
read_policies(struct import *im)
{
	char key[IMPORT_KEY_MAX], label[IMPORT_LABEL_MAX];
	size_t klen = key_of(im, key, "policy", "", 0), n, i, flen, vlen, bad;
	RedisModuleCallReply *h = hgetall(im, key, klen);
	struct csq_policy *v = NULL;
	enum csq_policy_error e;
	struct csq_op op;
	const char *f, *s;
	int rc = -1;

	if (h == NULL)
		return -1;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_LIMITS;
	op.limits = im->limits;
	add_op(im, &op, "the limits");
	n = RM_CallReplyLength(h) / 2;
	if (n > CSQ_POLICIES_MAX) {
		fail(im, "%s has more than %d policies", key, CSQ_POLICIES_MAX);
		goto out;
	}
	v = RM_Calloc(n + 1, sizeof(*v));
	for (i = 0; i < n; i++) {
		f = reply_str(RM_CallReplyArrayElement(h, 2 * i), &flen);
		s = reply_str(RM_CallReplyArrayElement(h, 2 * i + 1), &vlen);
		if (f == NULL || s == NULL ||
		    parse_policy(im, f, flen, s, vlen, &v[i]) != 0)
			goto out;
	}
	qsort(v, n, sizeof(*v), policy_cmp);
	if ((e = csq_policies_check(v, n, &im->limits, &bad)) !=
	    CSQ_POLICY_OK) {
		fail(im, "the policy of %s: %s", v[bad].name,
		     csq_policy_error_text(e));
		goto out;
	}
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	op.count = (uint32_t)n;
	for (i = 0; i < n; i++) {
		op.offset = i;
		op.policy = v[i];
		snprintf(label, sizeof(label), "the policy of %s", v[i].name);
		add_op(im, &op, label);
	}
	im->policies = n;
	rc = 0;
out:
	RM_Free(v);
	RM_FreeCallReply(h);
	return rc;
}

/* A servicer's wrap-up room (S2R's "!<start ms>"), as a ROOM item. */
static int
add_wrapup(struct import *im, const char *sid, uint32_t idx, const char *v,
           size_t vlen)
{
	struct csq_snap_room *o = &im->it.u.room;
	char m[CSQ_ROOM_MAX + 1], label[IMPORT_LABEL_MAX];
	struct import_dl *d;
	uint64_t since;

	memset(&im->it, 0, sizeof(im->it));
	im->it.kind = CSQ_SNAP_ROOM;
	snprintf(m, sizeof(m), "%s/%u", sid, idx);
	if (parse_u64(v + 1, vlen - 1, &since) != 0)
		return fail(im, "room %s's wrap-up start is not a number", m);
	if ((d = dl_take(im, 'w', m)) == NULL)
		return fail(im,
		            "room %s is in wrap-up without its deadline "
		            "w:%s",
		            m, m);
	strcpy(o->servicer, sid);
	o->index = idx;
	o->since_ms = since;
	o->length_s =
	    d->at > since ? (uint32_t)((d->at - since + 999) / 1000) : 1;
	if (o->length_s > CSQ_WRAPUP_MAX)
		o->length_s = CSQ_WRAPUP_MAX;
	o->deadline = d->at;
	o->deadline_tie = d->tie;
	snprintf(label, sizeof(label), "the wrap-up of room %s", m);
	add_item(im, label);
	im->wrapups++;
	return 0;
}

/*
 * A servicer: its hash ({p}:servicer:<id>), its deadlines (s:, and r:
 * while an offer-retry window runs), then its rooms in wrap-up from
 * {p}:S2R:<id>; the rooms with users come with the users.
 */
static int
add_servicer(struct import *im, const char *id, size_t idlen)
{
	struct csq_snap_servicer *o = &im->it.u.servicer;
	char key[IMPORT_KEY_MAX], sid[CSQ_ID_MAX + 1], label[IMPORT_LABEL_MAX];
	RedisModuleCallReply *h, *rooms = NULL;
	uint64_t capacity, ttl, active, last_order, last_ms, offer, wrapup,
	    missed, retry;
	const char *s, *q, *end, *f;
	struct import_dl *d;
	size_t klen, len, n, i, flen;
	uint32_t idx;
	int rc = -1;

	if (id_copy(sid, id, idlen) != 0)
		return fail(im, "a servicer whose id is not an id");
	klen = key_of(im, key, "servicer:", sid, idlen);
	if ((h = hgetall(im, key, klen)) == NULL)
		return -1;
	if (RM_CallReplyLength(h) == 0) {
		fail(im, "servicer %s is listed but %s does not exist", sid,
		     key);
		goto out;
	}
	memset(&im->it, 0, sizeof(im->it));
	im->it.kind = CSQ_SNAP_SERVICER;
	strcpy(o->id, sid);
	s = hash_field(h, "status", &len);
	if (s != NULL && len == 5 && memcmp(s, "ready", 5) == 0)
		o->status = CSQ_SERVICER_READY;
	else if (s != NULL && len == 6 && memcmp(s, "paused", 6) == 0)
		o->status = CSQ_SERVICER_PAUSED;
	else {
		fail(im, "%s's status is not ready or paused", key);
		goto out;
	}
	if (hash_u64(im, h, key, "capacity", 1, 0, &capacity) != 0 ||
	    hash_u64(im, h, key, "ttl", 1, 0, &ttl) != 0 ||
	    hash_u64(im, h, key, "active", 1, 0, &active) != 0 ||
	    hash_u64(im, h, key, "last_order", 1, 0, &last_order) != 0 ||
	    hash_u64(im, h, key, "last_ms", 1, 0, &last_ms) != 0 ||
	    hash_u64(im, h, key, "offer", 0, 0, &offer) != 0 ||
	    hash_u64(im, h, key, "wrapup", 0, 0, &wrapup) != 0 ||
	    hash_u64(im, h, key, "missed", 0, 0, &missed) != 0 ||
	    hash_u64(im, h, key, "retry", 0, 0, &retry) != 0)
		goto out;
	if (capacity < 1 || capacity > CSQ_CAPACITY_MAX || ttl < 1 ||
	    ttl > CSQ_TTL_MAX || offer > CSQ_OFFER_MAX ||
	    wrapup > CSQ_WRAPUP_MAX || retry > 1 || missed > UINT32_MAX ||
	    active > CSQ_CAPACITY_MAX) {
		fail(im, "%s has a number out of range", key);
		goto out;
	}
	o->capacity = (uint32_t)capacity;
	o->ttl_s = (uint32_t)ttl;
	o->offer_s = (uint32_t)offer;
	o->wrapup_s = (uint32_t)wrapup;
	o->missed = (uint32_t)missed;
	o->last_order = last_order;
	o->last_ms = last_ms;
	if ((q = hash_field(h, "queues", &len)) == NULL) {
		fail(im, "%s has no field queues", key);
		goto out;
	}
	for (end = q + len; q <= end && len > 0;) {
		s = memchr(q, ',', (size_t)(end - q));
		if (s == NULL)
			s = end;
		if (o->nqueues == CSQ_SERVICER_QUEUES ||
		    id_copy(o->queues[o->nqueues], q, (size_t)(s - q)) != 0) {
			fail(im, "%s's queues are not a list of queue ids",
			     key);
			goto out;
		}
		o->nqueues++;
		q = s + 1;
	}
	if ((d = dl_take(im, 's', sid)) == NULL) {
		fail(im, "servicer %s has no deadline s:%s", sid, sid);
		goto out;
	}
	o->deadline = d->at;
	o->deadline_tie = d->tie;
	if (retry) {
		if ((d = dl_take(im, 'r', sid)) == NULL) {
			fail(im,
			     "servicer %s has a retry window without its "
			     "deadline r:%s",
			     sid, sid);
			goto out;
		}
		o->has_retry = 1;
		o->retry = d->at;
		o->retry_tie = d->tie;
		o->retry_s = seconds_left(im, d->at, CSQ_RETRY_MAX);
	}
	snprintf(label, sizeof(label), "servicer %s", sid);
	add_item(im, label);
	im->servicers++;

	klen = key_of(im, key, "S2R:", sid, idlen);
	if ((rooms = hgetall(im, key, klen)) == NULL)
		goto out;
	n = RM_CallReplyLength(rooms) / 2;
	if (n != active) {
		fail(im,
		     "servicer %s has %llu busy rooms in %s, and active "
		     "%llu",
		     sid, (unsigned long long)n, key,
		     (unsigned long long)active);
		goto out;
	}
	for (i = 0; i < n; i++) {
		f = reply_str(RM_CallReplyArrayElement(rooms, 2 * i), &flen);
		s = reply_str(RM_CallReplyArrayElement(rooms, 2 * i + 1), &len);
		if (f == NULL || s == NULL ||
		    parse_u32(f, flen, CSQ_CAPACITY_MAX - 1, &idx) != 0 ||
		    len == 0) {
			fail(im, "%s has a room that is not an index", key);
			goto out;
		}
		if (s[0] == '!') {
			if (add_wrapup(im, sid, idx, s, len) != 0)
				goto out;
		} else {
			im->room_users++; /* its user says so (add_user) */
		}
	}
	rc = 0;
out:
	if (rooms != NULL)
		RM_FreeCallReply(rooms);
	RM_FreeCallReply(h);
	return rc;
}

static int
read_servicers(struct import *im)
{
	char key[IMPORT_KEY_MAX];
	size_t klen = key_of(im, key, "servicers", "", 0), n, i, len;
	RedisModuleCallReply *r;
	const char *id;
	int rc = 0;

	r = called(im, RM_Call(im->ctx, "ZRANGE", "bcc", key, klen, "0", "-1"),
	           "ZRANGE", key);
	if (r == NULL)
		return -1;
	n = RM_CallReplyLength(r);
	for (i = 0; i < n && rc == 0; i++) {
		id = reply_str(RM_CallReplyArrayElement(r, i), &len);
		rc = id != NULL ? add_servicer(im, id, len)
		                : fail(im, "%s is not a sorted set", key);
	}
	RM_FreeCallReply(r);
	return rc;
}

/* The score of member in a sorted set, as an integer; -1 none. */
static int
zscore(struct import *im, const char *key, size_t klen, const char *m,
       uint64_t *v)
{
	RedisModuleCallReply *r = called(
	    im, RM_Call(im->ctx, "ZSCORE", "bc", key, klen, m), "ZSCORE", key);
	const char *s;
	size_t len;
	int rc;

	if (r == NULL)
		return -1;
	s = reply_str(r, &len);
	rc = s != NULL && parse_u64(s, len, v) == 0 ? 0 : -1;
	RM_FreeCallReply(r);
	return rc;
}

/* Splits a user's record into up to 8 words; how many, -1 too many. */
static int
split_words(const char *s, size_t len, const char *w[8], size_t wl[8])
{
	const char *end = s + len;
	int n = 0;

	while (s <= end && len > 0) {
		if (n == 8)
			return -1;
		if (next_word(&s, end, &w[n], &wl[n]) != 0)
			break;
		n++;
	}
	return n;
}

/*
 * The wait of a user in line in a queue with clocks: when it joined
 * ({p}:clock) and its next step (m: its overflow, a: its aging).
 */
static int
add_clock(struct import *im, struct csq_snap_user *o)
{
	char key[IMPORT_KEY_MAX];
	size_t klen = key_of(im, key, "clock", "", 0), len;
	RedisModuleCallReply *r;
	struct import_dl *m, *a;
	const char *s;
	uint64_t joined;
	int rc = 0;

	s = hget(im, key, klen, o->id, strlen(o->id), &r, &len);
	if (r == NULL)
		return -1;
	m = dl_take(im, 'm', o->id);
	a = dl_take(im, 'a', o->id);
	if (s == NULL) {
		/* No clock: none to have (the restore checks the policy). */
		if (m != NULL || a != NULL)
			rc = fail(im,
			          "user %s has a clock deadline and no "
			          "join time in %s",
			          o->id, key);
	} else if (parse_u64(s, len, &joined) != 0) {
		rc = fail(im, "user %s's join time in %s is not a number",
		          o->id, key);
	} else if ((m == NULL) == (a == NULL)) {
		rc = fail(im, "user %s has %s of its deadlines m:%s and a:%s",
		          o->id, m == NULL ? "neither" : "both", o->id, o->id);
	} else {
		o->has_wait = 1;
		o->joined_ms = joined;
		o->clock_kind = m != NULL ? CSQ_DL_OVERFLOW : CSQ_DL_AGING;
		o->clock = (m != NULL ? m : a)->at;
		o->clock_tie = (m != NULL ? m : a)->tie;
	}
	RM_FreeCallReply(r);
	return rc;
}

/* An offered or assigned user's room: its servicer's S2R says so. */
static int
room_has(struct import *im, const struct csq_snap_user *o)
{
	char key[IMPORT_KEY_MAX], idx[16];
	size_t klen = key_of(im, key, "S2R:", o->servicer, strlen(o->servicer)),
	       len;
	RedisModuleCallReply *r;
	const char *s;
	int n = snprintf(idx, sizeof(idx), "%u", o->room), ok;

	s = hget(im, key, klen, idx, (size_t)n, &r, &len);
	if (r == NULL)
		return -1;
	ok = s != NULL && len == strlen(o->id) && memcmp(s, o->id, len) == 0;
	RM_FreeCallReply(r);
	return ok ? 0
	          : fail(im,
	                 "user %s is in room %s/%u, which %s does not "
	                 "give it",
	                 o->id, o->servicer, o->room, key);
}

/* When an accepted offer's room was taken ({p}:taken), else since. */
static int
taken_at(struct import *im, struct csq_snap_user *o)
{
	char key[IMPORT_KEY_MAX];
	size_t klen = key_of(im, key, "taken", "", 0), len;
	RedisModuleCallReply *r;
	const char *s = hget(im, key, klen, o->id, strlen(o->id), &r, &len);
	int rc = 0;

	if (r == NULL)
		return -1;
	o->taken_ms = o->since_ms;
	if (s != NULL && parse_u64(s, len, &o->taken_ms) != 0)
		rc = fail(im, "user %s's time in %s is not a number", o->id,
		          key);
	RM_FreeCallReply(r);
	return rc;
}

/*
 * A user from its record in {p}:users: "<queue> <key> <arrival> <ttl>
 * <state>[+][^]", then "<servicer> <window end>" for one held for a
 * preferred servicer, or "<servicer> <room> <since>" offered or
 * assigned; checked against its line, its room, its deadlines.
 */
static int
add_user(struct import *im, const char *id, size_t idlen, const char *rec,
         size_t reclen)
{
	struct csq_snap_user *o = &im->it.u.user;
	char key[IMPORT_KEY_MAX], label[IMPORT_LABEL_MAX];
	const char *w[8], *st;
	size_t wl[8], stlen, klen;
	uint64_t score, ttl;
	struct import_dl *d;
	int n;

	memset(&im->it, 0, sizeof(im->it));
	im->it.kind = CSQ_SNAP_USER;
	if (id_copy(o->id, id, idlen) != 0)
		return fail(im, "a user whose id is not an id");
	n = split_words(rec, reclen, w, wl);
	if (n < 5 || id_copy(o->queue, w[0], wl[0]) != 0 ||
	    parse_u64(w[1], wl[1], &o->key) != 0 ||
	    parse_u64(w[2], wl[2], &o->arrival_ms) != 0 ||
	    parse_u64(w[3], wl[3], &ttl) != 0 || ttl > CSQ_TTL_MAX)
		goto bad;
	o->ttl_s = (uint32_t)ttl;
	if (o->key >= CSQ_KEY_LIMIT || (o->key & CSQ_KEY_SEQ_MAX) == 0 ||
	    (o->key & CSQ_KEY_SEQ_MAX) > im->seq)
		return fail(im,
		            "user %s's order key %llu is not one the "
		            "state handed out",
		            o->id, (unsigned long long)o->key);
	st = w[4];
	stlen = wl[4];
	if (stlen > 0 && st[stlen - 1] == '^') {
		o->flags |= CSQ_USER_OVERFLOWED;
		stlen--;
	}
	if (stlen > 0 && st[stlen - 1] == '+') {
		o->flags |= CSQ_USER_TRANSFERRED;
		stlen--;
	}
	if (stlen == 7 && memcmp(st, "waiting", 7) == 0 && (n == 5 || n == 7))
		o->state = CSQ_USER_WAITING;
	else if (stlen == 7 && memcmp(st, "offered", 7) == 0 && n == 8)
		o->state = CSQ_USER_OFFERED;
	else if (stlen == 8 && memcmp(st, "assigned", 8) == 0 && n == 8)
		o->state = CSQ_USER_ASSIGNED;
	else
		goto bad;
	im->users++;
	/* Its TTL, while it waits or is offered. */
	if (o->state != CSQ_USER_ASSIGNED && o->ttl_s > 0) {
		if ((d = dl_take(im, 'u', o->id)) == NULL)
			return fail(im,
			            "user %s has a TTL and no deadline u:%s",
			            o->id, o->id);
		o->has_deadline = 1;
		o->deadline = d->at;
		o->deadline_tie = d->tie;
	}
	if (o->state == CSQ_USER_WAITING && n == 7) {
		/* Held for a preferred servicer until the window's end. */
		if (id_copy(o->prefer, w[5], wl[5]) != 0 ||
		    parse_u64(w[6], wl[6], &score) != 0)
			goto bad;
		if ((d = dl_take(im, 'p', o->id)) == NULL || d->at != score)
			return fail(im,
			            "user %s's window for %s has no "
			            "deadline p:%s at its end",
			            o->id, o->prefer, o->id);
		o->flags |= CSQ_USER_PREFERRING;
		o->has_wait = 1;
		o->clock_kind = CSQ_DL_PREFER;
		o->clock = d->at;
		o->clock_tie = d->tie;
		o->prefer_s = seconds_left(im, d->at, CSQ_PREFER_MAX);
		klen = key_of(im, key, "prefer:", o->prefer, strlen(o->prefer));
		klen += (size_t)snprintf(key + klen, sizeof(key) - klen, "/%s",
		                         o->queue);
		im->preferring++;
		im->waiting++;
	} else if (o->state == CSQ_USER_WAITING) {
		klen = key_of(im, key, "queue:", o->queue, strlen(o->queue));
		if (add_clock(im, o) != 0)
			return -1;
		im->waiting++;
	} else {
		if (id_copy(o->servicer, w[5], wl[5]) != 0 ||
		    parse_u32(w[6], wl[6], CSQ_CAPACITY_MAX - 1, &o->room) !=
		        0 ||
		    parse_u64(w[7], wl[7], &o->since_ms) != 0)
			goto bad;
		if (room_has(im, o) != 0)
			return -1;
		if (o->state == CSQ_USER_OFFERED) {
			char room[CSQ_ROOM_MAX + 1];

			snprintf(room, sizeof(room), "%s/%u", o->servicer,
			         o->room);
			if ((d = dl_take(im, 'o', room)) == NULL)
				return fail(im,
				            "user %s is offered room %s "
				            "with no deadline o:%s",
				            o->id, room, room);
			o->offer_s =
			    d->at > o->since_ms
			        ? (uint32_t)((d->at - o->since_ms + 999) / 1000)
			        : 1;
			if (o->offer_s > CSQ_OFFER_MAX)
				o->offer_s = CSQ_OFFER_MAX;
			o->offer_deadline = d->at;
			o->offer_deadline_tie = d->tie;
			o->taken_ms = o->since_ms;
			im->offered++;
		} else {
			if (taken_at(im, o) != 0)
				return -1;
			im->assigned++;
		}
		snprintf(label, sizeof(label), "user %s", o->id);
		add_item(im, label);
		return 0;
	}
	/* A waiting user is in its line at its key. */
	if (zscore(im, key, klen, o->id, &score) != 0 || score != o->key)
		return fail(im, "user %s waits but is not in %s at its key",
		            o->id, key);
	snprintf(label, sizeof(label), "user %s", o->id);
	add_item(im, label);
	return 0;
bad:
	return fail(im, "user %s's record is not csq's: '%.*s'", o->id,
	            (int)(reclen < 80 ? reclen : 80), rec);
}

static int
read_users(struct import *im)
{
	char key[IMPORT_KEY_MAX];
	size_t klen = key_of(im, key, "users", "", 0), n, i, idlen, reclen;
	RedisModuleCallReply *h = hgetall(im, key, klen);
	const char *id, *rec;
	int rc = 0;

	if (h == NULL)
		return -1;
	n = RM_CallReplyLength(h) / 2;
	for (i = 0; i < n && rc == 0; i++) {
		id = reply_str(RM_CallReplyArrayElement(h, 2 * i), &idlen);
		rec =
		    reply_str(RM_CallReplyArrayElement(h, 2 * i + 1), &reclen);
		rc = id != NULL && rec != NULL
		         ? add_user(im, id, idlen, rec, reclen)
		         : fail(im, "%s is not a hash", key);
	}
	RM_FreeCallReply(h);
	if (rc == 0 && im->offered + im->assigned != im->room_users)
		rc = fail(im,
		          "the servicers' rooms hold %llu users, and %llu "
		          "users say they are in one",
		          (unsigned long long)im->room_users,
		          (unsigned long long)(im->offered + im->assigned));
	return rc;
}

/* A double of the qstat numbers (little endian), as an exact integer. */
static int
qstat_number(const unsigned char *p, uint64_t *v)
{
	uint64_t bits = 0;
	double d;
	int i;

	for (i = 7; i >= 0; i--)
		bits = bits << 8 | p[i];
	memcpy(&d, &bits, sizeof(d));
	/* Integers below 2^53 only (NaN fails both comparisons). */
	if (!(d >= 0 && d < 9007199254740992.0) || d != (double)(uint64_t)d)
		return -1;
	*v = (uint64_t)d;
	return 0;
}

/* The tiers text: "<tier>:<count>:<mean gap>:<last>", space between. */
static int
qstat_tiers(struct csq_snap_queue *o, const char *s, size_t len)
{
	const char *end = s + len, *w;
	size_t wl, k;
	uint64_t v[4];
	const char *p;

	while (s < end) {
		if (next_word(&s, end, &w, &wl) != 0)
			return -1;
		for (k = 0, p = w; k < 4; k++) {
			const char *c = memchr(p, ':', (size_t)(w + wl - p));
			size_t n =
			    (size_t)((c != NULL && k < 3 ? c : w + wl) - p);

			if ((k < 3 && c == NULL) || parse_u64(p, n, &v[k]) != 0)
				return -1;
			p += n + 1;
		}
		if (p != w + wl + 1 || v[0] > TIER_TOP || v[1] > 128 ||
		    v[1] == 0)
			return -1;
		o->arrivals[v[0]] = (uint32_t)v[1];
		o->gap_ms[v[0]] = v[2];
		o->last_arrival_ms[v[0]] = v[3];
	}
	return 0;
}

/*
 * A queue's numbers ({p}:qstat:<q>) and its ring of outcomes
 * ({p}:qring:<q>, r0..r999: a matched user's wait in ms, or "a"), as a
 * QUEUE item and RING items. A queue whose numbers are all 0 has none.
 */
static int
add_queue(struct import *im, const char *name, size_t nlen)
{
	struct csq_snap_queue *o = &im->it.u.queue;
	char key[IMPORT_KEY_MAX], q[CSQ_ID_MAX + 1], label[IMPORT_LABEL_MAX];
	RedisModuleCallReply *h = NULL, *ring = NULL;
	uint64_t num[QSTAT_NUMBERS], total, len64, k;
	uint32_t *slots = NULL;
	const char *s, *f;
	size_t klen, len, flen, i, n;
	int rc = -1, any = 0;

	if (id_copy(q, name, nlen) != 0)
		return fail(im, "a queue of qstats whose name is not an id");
	klen = key_of(im, key, "qstat:", q, nlen);
	if ((h = hgetall(im, key, klen)) == NULL)
		return -1;
	memset(&im->it, 0, sizeof(im->it));
	im->it.kind = CSQ_SNAP_QUEUE;
	strcpy(o->name, q);
	memset(num, 0, sizeof(num));
	if ((s = hash_field(h, "n", &len)) != NULL) {
		if (len != 8 * QSTAT_NUMBERS) {
			fail(im, "%s's n is not %d numbers", key,
			     QSTAT_NUMBERS);
			goto out;
		}
		for (i = 0; i < QSTAT_NUMBERS; i++)
			if (qstat_number((const unsigned char *)s + 8 * i,
			                 &num[i]) != 0) {
				fail(im,
				     "%s's n holds a number that is not a "
				     "count",
				     key);
				goto out;
			}
	}
	/* users, servicers, ready (derived); matched, leave, timeout,
	 * overflowed_total, wait_sum, hold, holds, area, abandons; within,
	 * within_s (derived). */
	o->matched = num[3];
	o->abandoned_leave = num[4];
	o->abandoned_timeout = num[5];
	o->overflowed = num[6];
	o->wait_ms_sum = num[7];
	o->hold_ms = num[8];
	o->holds = num[9];
	o->wait_area_ms = num[10];
	o->abandons = num[11];
	s = hash_field(h, "tiers", &len);
	if (s != NULL && qstat_tiers(o, s, len) != 0) {
		fail(im, "%s's tiers are not csq's", key);
		goto out;
	}
	total = o->matched + o->abandoned_leave + o->abandoned_timeout;
	o->ring_next = (uint32_t)(total % RING_SLOTS);
	for (i = 3; i < 12; i++)
		any |= num[i] != 0;
	for (i = 0; i <= TIER_TOP; i++)
		any |= o->arrivals[i] != 0;
	if (!any) {
		rc = 0;
		goto out;
	}
	snprintf(label, sizeof(label), "the numbers of queue %s", q);
	add_item(im, label);
	im->queues++;
	/* Its ring: the last min(total, 1000) outcomes, every slot. */
	len64 = total < RING_SLOTS ? total : RING_SLOTS;
	if (len64 == 0) {
		rc = 0;
		goto out;
	}
	klen = key_of(im, key, "qring:", q, nlen);
	if ((ring = hgetall(im, key, klen)) == NULL)
		goto out;
	slots = RM_Calloc(RING_SLOTS, sizeof(*slots));
	n = RM_CallReplyLength(ring) / 2;
	for (i = 0; i < n; i++) {
		uint64_t at;

		f = reply_str(RM_CallReplyArrayElement(ring, 2 * i), &flen);
		s = reply_str(RM_CallReplyArrayElement(ring, 2 * i + 1), &len);
		if (f == NULL || s == NULL || flen < 2 || f[0] != 'r' ||
		    parse_u64(f + 1, flen - 1, &at) != 0 || at >= len64 ||
		    slots[at] != 0)
			goto bad_ring;
		if (len == 1 && s[0] == 'a')
			slots[at] = CSQ_OUTCOME_ABANDONED;
		else if (parse_u64(s, len, &k) == 0 &&
		         k < CSQ_OUTCOME_ABANDONED)
			slots[at] = (uint32_t)k + 1; /* 0: not seen yet */
		else
			goto bad_ring;
	}
	if (n != len64)
		goto bad_ring;
	memset(&im->it, 0, sizeof(im->it));
	im->it.kind = CSQ_SNAP_RING;
	strcpy(im->it.u.ring.queue, q);
	snprintf(label, sizeof(label), "the outcomes of queue %s", q);
	for (i = 0; i < len64; i += CSQ_SNAP_RING_CHUNK) {
		struct csq_snap_ring *r = &im->it.u.ring;

		r->offset = (uint32_t)i;
		r->n = (uint32_t)(len64 - i < CSQ_SNAP_RING_CHUNK
		                      ? len64 - i
		                      : CSQ_SNAP_RING_CHUNK);
		for (k = 0; k < r->n; k++)
			r->v[k] = slots[i + k] == CSQ_OUTCOME_ABANDONED
			              ? CSQ_OUTCOME_ABANDONED
			              : slots[i + k] - 1;
		add_item(im, label);
	}
	rc = 0;
	goto out;
bad_ring:
	fail(im, "%s is not the ring of the last %llu outcomes", key,
	     (unsigned long long)len64);
out:
	RM_Free(slots);
	if (ring != NULL)
		RM_FreeCallReply(ring);
	RM_FreeCallReply(h);
	return rc;
}

static int
read_queues(struct import *im)
{
	char key[IMPORT_KEY_MAX];
	size_t klen = key_of(im, key, "qstats", "", 0), n, i, len;
	RedisModuleCallReply *r;
	const char *q;
	int rc = 0;

	r = called(im, RM_Call(im->ctx, "SMEMBERS", "b", key, klen), "SMEMBERS",
	           key);
	if (r == NULL)
		return -1;
	n = RM_CallReplyLength(r);
	for (i = 0; i < n && rc == 0; i++) {
		q = reply_str(RM_CallReplyArrayElement(r, i), &len);
		rc = q != NULL ? add_queue(im, q, len)
		               : fail(im, "%s is not a set", key);
	}
	RM_FreeCallReply(r);
	return rc;
}

/*
 * Every key of the layout read into the dump, or -1 with im->err. The
 * order is the snapshot's: the state, the servicers with their wrap-ups,
 * the users, the queues' numbers; every deadline is taken by what it
 * times.
 */
static int
import_read(struct import *im)
{
	struct csq_snap_state state;
	char key[IMPORT_KEY_MAX];
	size_t i;

	csq_limits_default(&im->limits);
	/* Any tier a policy of the Lua engine's may name: the limits are
	 * csqd's, which its first call gives. */
	im->limits.max_tier = CSQ_TIER_LIMIT;
	if (read_stats(im, &state) != 0)
		return -1;
	/* A reap's leftovers: users and deadlines it held back. */
	for (i = 0; i < 3; i++) {
		static const char *const stash[] = {"rematch", "rematch:due",
		                                    "rematch:late"};
		size_t klen = key_of(im, key, stash[i], "", 0);
		RedisModuleCallReply *r =
		    called(im, RM_Call(im->ctx, "EXISTS", "b", key, klen),
		           "EXISTS", key);

		if (r == NULL)
			return -1;
		if (RM_CallReplyInteger(r) != 0) {
			RM_FreeCallReply(r);
			return fail(im,
			            "%s exists: a reap was cut short; run "
			            "a csqd of the Lua engine until it "
			            "ends, then import",
			            key);
		}
		RM_FreeCallReply(r);
	}
	if (read_policies(im) != 0 || read_deadlines(im) != 0)
		return -1;
	memset(&im->it, 0, sizeof(im->it));
	im->it.kind = CSQ_SNAP_STATE;
	im->it.u.state = state;
	im->it.u.state.tie = im->ndl;
	add_item(im, "the counters");
	if (read_servicers(im) != 0 || read_users(im) != 0 ||
	    read_queues(im) != 0)
		return -1;
	for (i = 0; i < im->ndl; i++)
		if (!im->dls[i].used)
			return fail(
			    im, "deadline %.*s times nothing there is",
			    (int)(im->dls[i].len < 80 ? im->dls[i].len : 80),
			    im->dls[i].member);
	return 0;
}

/*
 * The dump did not load: which record, loaded one by one into a state
 * of its own as module_state_load does, is the first that does not fit.
 */
static void
import_blame(struct import *im, uint64_t seed)
{
	struct module_state *st = module_state_new(seed);
	struct csq_record_strings strs;
	struct csq_snap_item *it = RM_Alloc(sizeof(*it));
	const uint8_t *p = im->dump.p;
	size_t i, plen;
	struct csq_op op;
	uint64_t now;
	int bad = 0;

	module_state_begin(st, NULL, 0);
	for (i = 0; i < im->nrec && !bad; i++) {
		plen = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 |
		       (size_t)p[3] << 24;
		if (csq_record_is_snap(p + CSQ_RECORD_HEADER, plen))
			bad = csq_record_decode_snap(p + CSQ_RECORD_HEADER,
			                             plen, it) != 0 ||
			      csq_engine_memory_restore(st->engine, it) != 0;
		else if (csq_record_decode(p + CSQ_RECORD_HEADER, plen, &op,
		                           &now, &strs) == 0)
			csq_engine_memory_replay(st->engine, &op, now);
		else
			bad = 1;
		if (!bad)
			p += CSQ_RECORD_HEADER + plen;
	}
	module_state_end(st, NULL);
	module_state_free(st);
	RM_Free(it);
	if (bad)
		fail(im, "%s does not fit the state made before it",
		     im->labels[i - 1]);
	else
		fail(im, "its items do not make a state together (a free "
		         "room of a ready servicer beside a user waiting in a "
		         "queue it serves, two users with one order key, a "
		         "queue's ring cut short)");
}

/* What the loaded state counts against what {p}:stats said. */
static int
import_counts(struct import *im, struct module_state *st)
{
	struct csq_stats s;
	char key[IMPORT_KEY_MAX];

	csq_stats(csq_engine_memory_state(st->engine), &s);
	key_of(im, key, "stats", "", 0);
	if (im->has_lua_waiting && s.waiting != im->lua_waiting)
		return fail(im, "%s counts %llu users waiting, and %llu wait",
		            key, (unsigned long long)im->lua_waiting,
		            (unsigned long long)s.waiting);
	if (im->has_lua_servicers && s.servicers != im->lua_servicers)
		return fail(im,
		            "%s counts %llu servicers, and %llu are logged "
		            "in",
		            key, (unsigned long long)im->lua_servicers,
		            (unsigned long long)s.servicers);
	if (im->has_lua_busy && s.rooms_busy != im->lua_busy)
		return fail(im, "%s counts %llu busy rooms, and %llu are busy",
		            key, (unsigned long long)im->lua_busy,
		            (unsigned long long)s.rooms_busy);
	return 0;
}

/* Deletes every key of the prefix but the state: how many. */
static long long
import_delete(struct import *im, const char *state, size_t slen)
{
	char pat[2 * IMPORT_PREFIX_MAX + 4], cursor[32] = "0";
	RedisModuleCallReply *r, *keys, *d;
	size_t n = 0, i, k, len;
	long long deleted = 0;
	const char *s;

	/* The prefix as a glob of itself, then "*". */
	for (i = 0; i < im->plen; i++) {
		if (strchr("*?[]\\", im->p[i]) != NULL)
			pat[n++] = '\\';
		pat[n++] = im->p[i];
	}
	pat[n++] = '*';
	pat[n] = '\0';
	do {
		r = called(im,
		           RM_Call(im->ctx, "SCAN", "ccccc", cursor, "MATCH",
		                   pat, "COUNT", SCAN_COUNT),
		           "SCAN", pat);
		if (r == NULL)
			break;
		s = RM_CallReplyLength(r) == 2
		        ? reply_str(RM_CallReplyArrayElement(r, 0), &len)
		        : NULL;
		if (s == NULL || len >= sizeof(cursor)) {
			RM_FreeCallReply(r);
			break;
		}
		memcpy(cursor, s, len);
		cursor[len] = '\0';
		keys = RM_CallReplyArrayElement(r, 1);
		for (k = 0; k < RM_CallReplyLength(keys); k++) {
			s = reply_str(RM_CallReplyArrayElement(keys, k), &len);
			if (s == NULL ||
			    (len == slen && memcmp(s, state, len) == 0))
				continue;
			/* "!": replicated, and in the AOF, after the load. */
			d = RM_Call(im->ctx, "DEL", "!b", s, len);
			if (d != NULL) {
				deleted += RM_CallReplyInteger(d);
				RM_FreeCallReply(d);
			}
		}
		RM_FreeCallReply(r);
	} while (strcmp(cursor, "0") != 0);
	return deleted;
}

/* "{<prefix>}:state" gives im its prefix "{<prefix>}:"; -1 otherwise. */
static int
import_prefix(struct import *im, const char *k, size_t len)
{
	const char *close = len > 0 && k[0] == '{' ? memchr(k, '}', len) : NULL;
	size_t plen;

	if (close == NULL || close == k + 1)
		return -1;
	plen = (size_t)(close - k) + 2; /* "{...}:" */
	if (plen > IMPORT_PREFIX_MAX || len != plen + 5 || close[1] != ':' ||
	    memcmp(close + 2, "state", 5) != 0 ||
	    memchr(k + 1, '{', plen - 3) != NULL)
		return -1;
	memcpy(im->p, k, plen);
	im->p[plen] = '\0';
	im->plen = plen;
	return 0;
}

static void
import_free(struct import *im)
{
	if (im->dl_reply != NULL)
		RM_FreeCallReply(im->dl_reply);
	RM_Free(im->dls);
	RM_Free(im->labels);
	csq_wbuf_free(&im->dump);
	RM_Free(im);
}

static void
reply_text(RedisModuleCtx *ctx, const char *s)
{
	RM_ReplyWithStringBuffer(ctx, s, strlen(s));
}

static void
reply_count(RedisModuleCtx *ctx, const char *name, uint64_t n)
{
	reply_text(ctx, name);
	RM_ReplyWithLongLong(ctx, (long long)n);
}

/* The reply: what was read (and written), as field/value pairs. */
static void
import_reply(RedisModuleCtx *ctx, const struct import *im, const char *done,
             const char *digest, long long deleted)
{
	RM_ReplyWithArray(ctx, 26);
	reply_text(ctx, "import");
	reply_text(ctx, done);
	reply_count(ctx, "servicers", im->servicers);
	reply_count(ctx, "users", im->users);
	reply_count(ctx, "waiting", im->waiting);
	reply_count(ctx, "preferring", im->preferring);
	reply_count(ctx, "offered", im->offered);
	reply_count(ctx, "assigned", im->assigned);
	reply_count(ctx, "wrapups", im->wrapups);
	reply_count(ctx, "policies", im->policies);
	reply_count(ctx, "queues_with_numbers", im->queues);
	reply_count(ctx, "deadlines", im->ndl);
	reply_text(ctx, "digest");
	reply_text(ctx, digest);
	reply_text(ctx, "old_keys");
	if (deleted < 0)
		reply_text(ctx, "kept");
	else
		RM_ReplyWithLongLong(ctx, deleted);
}

/*
 * CSQ.IMPORT <key> [DRYRUN] [REPLACE] [DELETE] (docs/protocol.md, 11b):
 * key is "{<prefix>}:state". DRYRUN reads and checks everything and
 * writes nothing; REPLACE lets it replace a state the key holds; DELETE
 * deletes the Lua engine's keys of the prefix once the state is written
 * (without it they stay, for a way back).
 */
int
module_cmd_import(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	struct import *im;
	struct module_state *st;
	RedisModuleKey *key;
	const char *k, *opt;
	size_t klen, len;
	int dryrun = 0, replace = 0, del = 0, i;
	long long deleted = -1;
	uint64_t seed;
	char digest[48];

	if (argc < 2 || argc > 5)
		return RM_WrongArity(ctx);
	for (i = 2; i < argc; i++) {
		opt = RM_StringPtrLen(argv[i], &len);
		if (len == 6 && strncasecmp(opt, "DRYRUN", 6) == 0)
			dryrun = 1;
		else if (len == 7 && strncasecmp(opt, "REPLACE", 7) == 0)
			replace = 1;
		else if (len == 6 && strncasecmp(opt, "DELETE", 6) == 0)
			del = 1;
		else
			return RM_ReplyWithError(ctx,
			                         "ERR syntax error (options: "
			                         "DRYRUN, REPLACE, DELETE)");
	}
	if (dryrun && del)
		return RM_ReplyWithError(ctx, "ERR DRYRUN deletes nothing: "
		                              "DELETE goes without it");
	im = RM_Calloc(1, sizeof(*im));
	im->ctx = ctx;
	im->now = (uint64_t)RM_Milliseconds();
	k = RM_StringPtrLen(argv[1], &klen);
	if (import_prefix(im, k, klen) != 0) {
		import_free(im);
		return RM_ReplyWithError(ctx, "ERR the key is not a state's: "
		                              "{<prefix>}:state");
	}
	/* The key first: nothing is read for a state that would not be
	 * written. */
	key = RM_OpenKey(ctx, argv[1], RM_READ | RM_WRITE);
	if (RM_KeyType(key) != RM_KEYTYPE_EMPTY &&
	    (RM_KeyType(key) != RM_KEYTYPE_MODULE ||
	     RM_ModuleTypeGetType(key) != module_type)) {
		RM_CloseKey(key);
		import_free(im);
		return RM_ReplyWithError(ctx, "WRONGTYPE the key holds "
		                              "something that is not a csq "
		                              "state");
	}
	if (RM_KeyType(key) != RM_KEYTYPE_EMPTY && !replace && !dryrun) {
		RM_CloseKey(key);
		import_free(im);
		return RM_ReplyWithError(ctx, "ERR the key holds a state "
		                              "already: REPLACE replaces it "
		                              "(and what it holds is lost)");
	}
	if (import_read(im) != 0) {
		RM_CloseKey(key);
		RM_ReplyWithError(ctx, im->err);
		import_free(im);
		return RM_OK;
	}
	if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
		seed = (uint64_t)RM_Milliseconds() * 0x9e3779b97f4a7c15u;
	st = module_state_load(seed, im->dump.p, im->dump.len);
	if (st == NULL || import_counts(im, st) != 0) {
		if (st == NULL)
			import_blame(im, seed);
		else
			module_state_free(st);
		RM_CloseKey(key);
		RM_ReplyWithError(ctx, im->err);
		import_free(im);
		return RM_OK;
	}
	{
		size_t dlen;
		uint32_t crc = module_state_digest(st, &dlen);

		snprintf(digest, sizeof(digest), "%08x:%zu", crc, dlen);
	}
	if (dryrun) {
		module_state_free(st);
		RM_CloseKey(key);
		import_reply(ctx, im, "dry run", digest, -1);
		import_free(im);
		return RM_OK;
	}
	RM_ModuleTypeSetValue(key, module_type, st); /* frees the old one */
	module_state_name(st, ctx, argv[1], RM_GetSelectedDb(ctx));
	RM_CloseKey(key);
	/* The replica and the AOF load the same bytes. */
	RM_Replicate(ctx, "CSQ.LOAD", "slb", argv[1], (long long)seed,
	             im->dump.len > 0 ? (const char *)im->dump.p : "",
	             im->dump.len);
	if (del)
		deleted = import_delete(im, k, klen);
	import_reply(ctx, im, "imported", digest, deleted);
	import_free(im);
	module_timer_update(ctx);
	return RM_OK;
}

int
module_import_refuse(RedisModuleCtx *ctx, RedisModuleString *name)
{
	struct import im;
	char key[IMPORT_KEY_MAX], err[IMPORT_ERR_MAX];
	RedisModuleString *s;
	RedisModuleKey *k;
	const char *n;
	size_t len;
	int lua;

	n = RM_StringPtrLen(name, &len);
	if ((RM_GetContextFlags(ctx) &
	     (RM_CTX_FLAGS_REPLICATED | RM_CTX_FLAGS_LOADING)) != 0 ||
	    import_prefix(&im, n, len) != 0)
		return 0;
	s = RM_CreateString(ctx, key, key_of(&im, key, "stats", "", 0));
	k = RM_OpenKey(ctx, s, RM_READ);
	lua = RM_KeyType(k) != RM_KEYTYPE_EMPTY;
	RM_CloseKey(k);
	RM_FreeString(ctx, s);
	if (!lua)
		return 0;
	snprintf(err, sizeof(err),
	         "ERR %.*s holds a state of the Lua engine (%s) and no %.*s: "
	         "import it first with CSQ.IMPORT %.*s (docs/operations.md, "
	         "Upgrading)",
	         (int)(im.plen - 1), im.p, key, (int)len, n, (int)len, n);
	RM_ReplyWithError(ctx, err);
	return 1;
}
