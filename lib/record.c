/* Journal records: encoding, decoding and their checksum. */
#include "record.h"

#include "hours.h"

#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) &&                              \
    (defined(__GNUC__) || defined(__clang__))
#define CSQ_CRC32C_X86 1
#include <nmmintrin.h> /* the crc32 instruction's intrinsics */
#endif

#define CRC32C_POLY 0x82f63b78u /* Castagnoli, reflected */

/* Eight bytes a step ("slicing by 8"): table[k] is table[0] run k more
 * bytes of zeros, so the eight lookups of a step are independent. A byte
 * at a time, this checksum was two thirds of the cost of encoding an
 * ENQUEUE's record (which each change of csq.so replicates). */
uint32_t
csq_crc32c_table(const void *data, size_t len)
{
	static uint32_t table[8][256];
	const uint8_t *p = data;
	uint32_t crc = 0xffffffffu, c, lo, hi;
	int i, k;

	if (table[0][1] == 0) {
		for (i = 0; i < 256; i++) {
			c = (uint32_t)i;
			for (k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
			table[0][i] = c;
		}
		for (k = 1; k < 8; k++)
			for (i = 0; i < 256; i++)
				table[k][i] = (table[k - 1][i] >> 8) ^
				              table[0][table[k - 1][i] & 0xff];
	}
	for (; len >= 8; p += 8, len -= 8) {
		lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
		            (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
		     (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
		      table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
		      table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
	}
	while (len-- > 0)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc ^ 0xffffffffu;
}

/*
 * The same sum by the CPU: SSE4.2's crc32 instruction computes exactly
 * CRC-32C (the Castagnoli polynomial, reflected), eight bytes an
 * instruction. Chosen at run time (csq_crc32c_hw_ok), so that one build
 * runs on any x86-64, and the table is the path of every other CPU. The
 * function is compiled for SSE4.2 alone (the target attribute), the rest
 * of the file for the build's baseline.
 */
#ifdef CSQ_CRC32C_X86
int
csq_crc32c_hw_ok(void)
{
	return __builtin_cpu_supports("sse4.2");
}

__attribute__((target("sse4.2"))) uint32_t
csq_crc32c_hw(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t crc = 0xffffffffu;
#ifdef __x86_64__
	uint64_t w, c = crc;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8); /* unaligned, little endian */
		c = _mm_crc32_u64(c, w);
	}
	crc = (uint32_t)c;
#endif
	for (; len >= 4; p += 4, len -= 4) {
		uint32_t v;

		memcpy(&v, p, 4);
		crc = _mm_crc32_u32(crc, v);
	}
	while (len-- > 0)
		crc = _mm_crc32_u8(crc, *p++);
	return crc ^ 0xffffffffu;
}
#else
int
csq_crc32c_hw_ok(void)
{
	return 0;
}

uint32_t
csq_crc32c_hw(const void *data, size_t len)
{
	return csq_crc32c_table(data, len);
}
#endif

uint32_t
csq_crc32c(const void *data, size_t len)
{
#ifdef CSQ_CRC32C_X86
	if (csq_crc32c_hw_ok())
		return csq_crc32c_hw(data, len);
#endif
	return csq_crc32c_table(data, len);
}

/* A cursor over a record's bytes; any overrun sets bad. */
struct cursor {
	uint8_t *w;       /* writing */
	const uint8_t *r; /* reading */
	size_t left;
	int bad;
};

/* Integers are little-endian. On a little-endian host a width of 2, 4
 * or 8 is one copy of the value's own bytes: GCC merged the loop's byte
 * stores into one store, but made the word it stored by shifts and ors
 * of each byte (some 25 instructions for an 8-byte time, 60 a record
 * with the header's length and CRC). Elsewhere, a byte at a time. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RECORD_LE 1
#else
#define RECORD_LE 0
#endif

/* Through a local pointer: a store through c->w itself may alias the
 * cursor (a uint8_t store may alias anything), so the compiler reloaded
 * c->w after each byte; with p it writes the value in one store. */
static inline __attribute__((always_inline)) void
put_u64(struct cursor *c, uint64_t v, int bytes)
{
	uint8_t *p = c->w;
	uint32_t v4;
	uint16_t v2;
	int i;

	if (RECORD_LE && bytes == 8) {
		memcpy(p, &v, 8);
	} else if (RECORD_LE && bytes == 4) {
		v4 = (uint32_t)v;
		memcpy(p, &v4, 4);
	} else if (RECORD_LE && bytes == 2) {
		v2 = (uint16_t)v;
		memcpy(p, &v2, 2);
	} else {
		for (i = 0; i < bytes; i++)
			p[i] = (uint8_t)(v >> (8 * i));
	}
	c->w = p + bytes;
}

static void
put_str(struct cursor *c, const char *s)
{
	size_t len = s != NULL ? strlen(s) : 0;

	*c->w++ = (uint8_t)len;
	memcpy(c->w, s, len);
	c->w += len;
}

/* As put_u64: a width of 2, 4 or 8 is one load on a little-endian
 * host. */
static inline __attribute__((always_inline)) uint64_t
get_u64(struct cursor *c, int bytes)
{
	uint64_t v = 0;
	uint32_t v4;
	uint16_t v2;
	int i;

	if (c->left < (size_t)bytes) {
		c->bad = 1;
		return 0;
	}
	if (RECORD_LE && bytes == 8) {
		memcpy(&v, c->r, 8);
	} else if (RECORD_LE && bytes == 4) {
		memcpy(&v4, c->r, 4);
		v = v4;
	} else if (RECORD_LE && bytes == 2) {
		memcpy(&v2, c->r, 2);
		v = v2;
	} else {
		for (i = 0; i < bytes; i++)
			v |= (uint64_t)c->r[i] << (8 * i);
	}
	c->r += bytes;
	c->left -= (size_t)bytes;
	return v;
}

/* A string of a length of width bytes (1, or 2 for a skill list). */
static const char *
get_lstr(struct cursor *c, char *out, size_t cap, int width)
{
	size_t len = (size_t)get_u64(c, width);

	if (c->bad || len >= cap || c->left < len) {
		c->bad = 1;
		out[0] = '\0';
		return out;
	}
	memcpy(out, c->r, len);
	out[len] = '\0';
	c->r += len;
	c->left -= len;
	return out;
}

static size_t record_seal(uint8_t *buf, struct cursor *c);

/* A skill list: u16 length + bytes, at most CSQ_SKILLS_TEXT_MAX (a
 * longer one, which no list is, is cut there: still no list). */
static void
put_text(struct cursor *c, const char *s)
{
	size_t len = s != NULL ? strnlen(s, CSQ_SKILLS_TEXT_MAX) : 0;

	put_u64(c, len, 2);
	memcpy(c->w, s, len);
	c->w += len;
}

static const char *
get_str(struct cursor *c, char *out, size_t cap)
{
	return get_lstr(c, out, cap, 1);
}

static const char *
get_text(struct cursor *c, char *out, size_t cap)
{
	return get_lstr(c, out, cap, 2);
}

/* The skills tail of ENQUEUE and TRANSFER: NEEDS, or a 0. */
static void
put_needs(struct cursor *c, int has, const char *needs)
{
	put_u64(c, (uint64_t)(has != 0), 1);
	if (has)
		put_text(c, needs);
}

static void
get_needs(struct cursor *c, int *has, const char **needs, char *buf, size_t cap)
{
	*has = 0;
	*needs = NULL;
	if (c->left == 0)
		return; /* written before skills */
	*has = (int)get_u64(c, 1);
	if (*has > 1)
		c->bad = 1;
	if (*has == 1)
		*needs = get_text(c, buf, cap);
}

/* The policies tail of ENQUEUE and TRANSFER: PREFER, or a 0. A record
 * written before has none. */
static void
put_prefer(struct cursor *c, const struct csq_prefer_args *p)
{
	put_u64(c, (uint64_t)(p->has_prefer != 0), 1);
	if (!p->has_prefer)
		return;
	put_str(c, p->servicer);
	put_u64(c, p->seconds, 4);
}

static void
get_prefer(struct cursor *c, struct csq_prefer_args *p, char *buf, size_t cap)
{
	memset(p, 0, sizeof(*p));
	if (c->left == 0)
		return; /* written before policies */
	p->has_prefer = (int)get_u64(c, 1);
	if (p->has_prefer > 1)
		c->bad = 1;
	if (!p->has_prefer)
		return;
	p->servicer = get_str(c, buf, cap);
	p->seconds = (uint32_t)get_u64(c, 4);
}

/* Business hours (section 3c): the policy's last tail, a 0 without. */
static void
put_hours(struct cursor *c, const struct csq_hours *h)
{
	const struct csq_tz *z = &h->tz;
	uint32_t i;

	put_u64(c, h->on != 0, 1);
	if (!h->on)
		return;
	put_u64(c, h->nranges, 1);
	for (i = 0; i < h->nranges && i < CSQ_HOURS_RANGES; i++) {
		put_u64(c, h->range[i].start, 2);
		put_u64(c, h->range[i].end, 2);
	}
	put_u64(c, h->nclosed, 1);
	for (i = 0; i < h->nclosed && i < CSQ_HOURS_CLOSED; i++)
		put_u64(c, (uint32_t)h->closed[i], 4);
	put_u64(c, h->when_closed, 1);
	put_u64(c, h->at_close, 1);
	put_str(c, h->fallback);
	put_str(c, h->move_to);
	put_str(c, z->name);
	put_u64(c, (uint32_t)z->base_off, 4);
	put_u64(c, z->ntypes, 1);
	for (i = 0; i < z->ntypes && i < CSQ_TZ_TYPES; i++)
		put_u64(c, (uint32_t)z->types[i], 4);
	put_u64(c, z->ntrans, 2);
	for (i = 0; i < z->ntrans && i < CSQ_TZ_TRANSITIONS; i++) {
		put_u64(c, z->at[i], 4);
		put_u64(c, z->type[i], 1);
	}
	put_str(c, z->rule_text);
}

/* -1 for hours that no configuration passes. */
static int
get_hours(struct cursor *c, struct csq_hours *h)
{
	struct csq_tz *z = &h->tz;
	uint32_t i;

	memset(h, 0, sizeof(*h));
	if (c->left == 0) /* written before business hours */
		return 0;
	h->on = (uint32_t)get_u64(c, 1);
	if (h->on == 0)
		return 0;
	if ((h->nranges = (uint32_t)get_u64(c, 1)) > CSQ_HOURS_RANGES)
		return -1;
	for (i = 0; i < h->nranges; i++) {
		h->range[i].start = (uint16_t)get_u64(c, 2);
		h->range[i].end = (uint16_t)get_u64(c, 2);
	}
	if ((h->nclosed = (uint32_t)get_u64(c, 1)) > CSQ_HOURS_CLOSED)
		return -1;
	for (i = 0; i < h->nclosed; i++)
		h->closed[i] = (int32_t)(uint32_t)get_u64(c, 4);
	h->when_closed = (uint32_t)get_u64(c, 1);
	h->at_close = (uint32_t)get_u64(c, 1);
	get_str(c, h->fallback, sizeof(h->fallback));
	get_str(c, h->move_to, sizeof(h->move_to));
	get_str(c, z->name, sizeof(z->name));
	z->base_off = (int32_t)(uint32_t)get_u64(c, 4);
	if ((z->ntypes = (uint32_t)get_u64(c, 1)) > CSQ_TZ_TYPES)
		return -1;
	for (i = 0; i < z->ntypes; i++)
		z->types[i] = (int32_t)(uint32_t)get_u64(c, 4);
	if ((z->ntrans = (uint32_t)get_u64(c, 2)) > CSQ_TZ_TRANSITIONS)
		return -1;
	for (i = 0; i < z->ntrans; i++) {
		z->at[i] = (uint32_t)get_u64(c, 4);
		z->type[i] = (uint8_t)get_u64(c, 1);
	}
	get_str(c, z->rule_text, sizeof(z->rule_text));
	if (c->bad)
		return -1;
	z->has_rule = z->rule_text[0] != '\0';
	if (z->has_rule && csq_tz_rule_parse(z->rule_text, &z->rule) != 0)
		return -1;
	return csq_hours_check(h);
}

/* A queue policy (POLICY): its fields, the optional ones flagged. */
static void
put_policy(struct cursor *c, const struct csq_policy *p)
{
	uint32_t i;

	put_str(c, p->name);
	put_u64(c,
	        (uint64_t)((p->has_max_length != 0) |
	                   (p->has_strategy != 0) << 1 |
	                   (p->has_aging_max_tier != 0) << 2),
	        1);
	put_u64(c, p->max_length, 8);
	put_u64(c, (uint64_t)p->strategy, 1);
	put_u64(c, p->overflow_after_s, 4);
	put_str(c, p->overflow_to);
	put_u64(c, p->aging_every_s, 4);
	put_u64(c, p->aging_max_tier, 1);
	put_u64(c, p->service_level_s, 4);
	put_u64(c, p->skill_order, 1); /* skills' tail */
	put_u64(c, p->nrelax, 1);
	for (i = 0; i < p->nrelax && i < CSQ_RELAX_STEPS; i++) {
		put_u64(c, p->relax[i].after_s, 4);
		put_u64(c, p->relax[i].lower, 1);
		put_u64(c, p->relax[i].drop_all, 1);
		put_text(c, p->relax[i].drop);
	}
	/* Nobody there (section 3c): its tail, or a 0. */
	put_u64(c, p->nobody.on, 1);
	if (p->nobody.on) {
		put_u64(c, p->nobody.counts, 1);
		put_u64(c, p->nobody.when_nobody, 1);
		put_u64(c, p->nobody.at_nobody, 1);
		put_u64(c, p->nobody.grace_s, 4);
		put_str(c, p->nobody.fallback);
		put_str(c, p->nobody.move_to);
	}
	put_hours(c, &p->hours); /* after nobody's: its tail, or a 0 */
}

/* -1 for a policy that no configuration passes (the set's check, which
 * needs the limits, comes when it applies). */
static int
get_policy(struct cursor *c, struct csq_policy *p)
{
	unsigned flags;
	uint32_t i;

	memset(p, 0, sizeof(*p));
	get_str(c, p->name, sizeof(p->name));
	flags = (unsigned)get_u64(c, 1);
	p->has_max_length = flags & 1;
	p->has_strategy = (flags >> 1) & 1;
	p->has_aging_max_tier = (flags >> 2) & 1;
	p->max_length = get_u64(c, 8);
	p->strategy = (enum csq_strategy)get_u64(c, 1);
	p->overflow_after_s = (uint32_t)get_u64(c, 4);
	get_str(c, p->overflow_to, sizeof(p->overflow_to));
	p->aging_every_s = (uint32_t)get_u64(c, 4);
	p->aging_max_tier = (uint32_t)get_u64(c, 1);
	p->service_level_s = (uint32_t)get_u64(c, 4);
	p->skill_order = 0;
	if (c->left > 0) { /* the skills tail */
		p->skill_order = (uint32_t)get_u64(c, 1);
		/* Written before relaxation: none. */
		p->nrelax = c->left > 0 ? (uint32_t)get_u64(c, 1) : 0;
		if (p->nrelax > CSQ_RELAX_STEPS)
			return -1;
		for (i = 0; i < p->nrelax; i++) {
			p->relax[i].after_s = (uint32_t)get_u64(c, 4);
			p->relax[i].lower = (uint32_t)get_u64(c, 1);
			p->relax[i].drop_all = (uint32_t)get_u64(c, 1);
			get_text(c, p->relax[i].drop, sizeof(p->relax[i].drop));
		}
	}
	/* Written before nobody policies: none. */
	p->nobody.on = c->left > 0 ? (uint32_t)get_u64(c, 1) : 0;
	if (p->nobody.on > 1)
		return -1;
	if (p->nobody.on) {
		p->nobody.counts = (uint32_t)get_u64(c, 1);
		p->nobody.when_nobody = (uint32_t)get_u64(c, 1);
		p->nobody.at_nobody = (uint32_t)get_u64(c, 1);
		p->nobody.grace_s = (uint32_t)get_u64(c, 4);
		get_str(c, p->nobody.fallback, sizeof(p->nobody.fallback));
		get_str(c, p->nobody.move_to, sizeof(p->nobody.move_to));
	}
	/* Written before business hours: none (get_hours). */
	if (get_hours(c, &p->hours) != 0)
		return -1;
	if (flags > 7 || p->skill_order > CSQ_SKILL_ORDER_LEVEL ||
	    p->strategy > CSQ_STRATEGY_LEAST_BUSY ||
	    p->aging_max_tier > CSQ_TIER_LIMIT)
		return -1;
	return 0;
}

/*
 * The arguments of each form of record (the table's record column, op.h):
 * put_<form> writes them, get_<form> reads them back into op (its strings
 * into st), -1 when they are no record csqd wrote. Each form grew tails
 * as csq did: a record written before has none.
 */
typedef void put_fn(struct cursor *, const struct csq_op *);
typedef int get_fn(struct cursor *, struct csq_op *,
                   struct csq_record_strings *);

static void
put_none(struct cursor *c, const struct csq_op *op)
{
	(void)c, (void)op;
}

static int
get_none(struct cursor *c, struct csq_op *op, struct csq_record_strings *st)
{
	(void)c, (void)op, (void)st;
	return 0;
}

/* PAUSE, RESUME, LOGOUT, RELEASE, LEAVE, ACCEPT, DECLINE, READY; WHERE,
 * QLEN (reads: the Redis module's calls): one id. */
static void
put_id(struct cursor *c, const struct csq_op *op)
{
	put_str(c, op->id);
}

static int
get_id(struct cursor *c, struct csq_op *op, struct csq_record_strings *st)
{
	op->id = get_str(c, st->id, sizeof(st->id));
	return 0;
}

static void
put_heartbeat(struct cursor *c, const struct csq_op *op)
{
	const struct csq_heartbeat_args *h = &op->heartbeat;
	size_t i;

	put_str(c, h->servicer);
	put_u64(c,
	        (uint64_t)(h->has_capacity | h->has_queues << 1 |
	                   h->has_ttl << 2 | h->has_offer << 3 |
	                   h->has_wrapup << 4 | h->has_skills << 5),
	        1);
	put_u64(c, h->capacity, 4);
	put_u64(c, h->ttl_s, 4);
	put_u64(c, h->has_queues ? h->nqueues : 0, 1);
	for (i = 0; h->has_queues && i < h->nqueues; i++)
		put_str(c, h->queues[i]);
	/* The routing tail: a record written before has none. */
	put_u64(c, h->offer_s, 4);
	put_u64(c, h->wrapup_s, 4);
	if (h->has_skills) /* the skills tail */
		put_text(c, h->skills);
}

static int
get_heartbeat(struct cursor *c, struct csq_op *op,
              struct csq_record_strings *st)
{
	struct csq_heartbeat_args *h = &op->heartbeat;
	unsigned flags;
	size_t i;

	h->servicer = op->id = get_str(c, st->id, sizeof(st->id));
	flags = (unsigned)get_u64(c, 1);
	h->has_capacity = flags & 1;
	h->has_queues = (flags >> 1) & 1;
	h->has_ttl = (flags >> 2) & 1;
	h->capacity = (uint32_t)get_u64(c, 4);
	h->ttl_s = (uint32_t)get_u64(c, 4);
	h->has_offer = (flags >> 3) & 1;
	h->has_wrapup = (flags >> 4) & 1;
	h->has_skills = (flags >> 5) & 1;
	if (flags > 63)
		return -1;
	h->nqueues = (size_t)get_u64(c, 1);
	if (h->nqueues > CSQ_SERVICER_QUEUES)
		return -1;
	for (i = 0; i < h->nqueues; i++)
		h->queues[i] = get_str(c, st->queues[i], sizeof(st->queues[i]));
	/* csq_record_decode leaves the queues to this form: the rest NULL,
	 * as a zeroed op had them (readers stop at nqueues). */
	memset(&h->queues[i], 0,
	       (CSQ_SERVICER_QUEUES - i) * sizeof(h->queues[0]));
	if (c->left == 0 && !h->has_offer && !h->has_wrapup && !h->has_skills)
		return 0; /* written before routing */
	h->offer_s = (uint32_t)get_u64(c, 4);
	h->wrapup_s = (uint32_t)get_u64(c, 4);
	if (h->has_skills)
		h->skills = get_text(c, st->skills, sizeof(st->skills));
	return 0;
}

static void
put_transfer(struct cursor *c, const struct csq_op *op)
{
	put_str(c, op->transfer.room);
	put_str(c, op->transfer.queue);
	put_prefer(c, &op->transfer.prefer);
	put_needs(c, op->transfer.has_needs, op->transfer.needs);
}

static int
get_transfer(struct cursor *c, struct csq_op *op, struct csq_record_strings *st)
{
	op->transfer.room = op->id = get_str(c, st->id, sizeof(st->id));
	op->transfer.queue = get_str(c, st->queue, sizeof(st->queue));
	get_prefer(c, &op->transfer.prefer, st->prefer, sizeof(st->prefer));
	get_needs(c, &op->transfer.has_needs, &op->transfer.needs, st->skills,
	          sizeof(st->skills));
	return 0;
}

static void
put_policy_set(struct cursor *c, const struct csq_op *op)
{
	put_u64(c, op->offset, 4);
	put_u64(c, op->count, 4);
	if (op->count > 0)
		put_policy(c, &op->policy);
}

static int
get_policy_set(struct cursor *c, struct csq_op *op,
               struct csq_record_strings *st)
{
	(void)st;
	memset(&op->policy, 0, sizeof(op->policy)); /* csq_record_decode */
	op->offset = get_u64(c, 4);
	op->count = (uint32_t)get_u64(c, 4);
	if (op->count > CSQ_POLICIES_MAX ||
	    (op->count > 0 ? op->offset >= op->count : op->offset != 0))
		return -1;
	if (op->count > 0 && get_policy(c, &op->policy) != 0)
		return -1;
	return 0;
}

static void
put_enqueue(struct cursor *c, const struct csq_op *op)
{
	const struct csq_enqueue_args *e = &op->enqueue;

	put_str(c, e->user);
	put_u64(c,
	        (uint64_t)(e->has_queue | e->has_tier << 1 | e->has_ttl << 2),
	        1);
	put_str(c, e->has_queue ? e->queue : "");
	put_u64(c, e->tier, 4);
	put_u64(c, e->ttl_s, 4);
	put_prefer(c, &e->prefer);
	put_needs(c, e->has_needs, e->needs);
}

static int
get_enqueue(struct cursor *c, struct csq_op *op, struct csq_record_strings *st)
{
	struct csq_enqueue_args *e = &op->enqueue;
	unsigned flags;

	e->user = op->id = get_str(c, st->id, sizeof(st->id));
	flags = (unsigned)get_u64(c, 1);
	e->has_queue = flags & 1;
	e->has_tier = (flags >> 1) & 1;
	e->has_ttl = (flags >> 2) & 1;
	e->queue = get_str(c, st->queue, sizeof(st->queue));
	e->tier = (uint32_t)get_u64(c, 4);
	e->ttl_s = (uint32_t)get_u64(c, 4);
	get_prefer(c, &e->prefer, st->prefer, sizeof(st->prefer));
	get_needs(c, &e->has_needs, &e->needs, st->skills, sizeof(st->skills));
	return 0;
}

static void
put_touch(struct cursor *c, const struct csq_op *op)
{
	put_str(c, op->id);
	put_u64(c, (uint64_t)op->ttl_s, 8);
}

static int
get_touch(struct cursor *c, struct csq_op *op, struct csq_record_strings *st)
{
	op->id = get_str(c, st->id, sizeof(st->id));
	op->ttl_s = (int64_t)get_u64(c, 8);
	return 0;
}

static void
put_limits(struct cursor *c, const struct csq_op *op)
{
	put_u64(c, op->limits.servicer_ttl_s, 4);
	put_u64(c, op->limits.user_ttl_s, 4);
	put_u64(c, op->limits.max_tier, 4);
	put_u64(c, op->limits.max_queue_length, 8);
	put_u64(c, op->limits.offer_timeout_s, 4);
	put_u64(c, op->limits.offer_max_missed, 4);
	put_u64(c, op->limits.offer_retry_s, 4);
	put_u64(c, op->limits.wrapup_s, 4);
	put_u64(c, (uint64_t)op->limits.strategy, 1);
	put_u64(c, op->limits.max_queues, 8);
}

static int
get_limits(struct cursor *c, struct csq_op *op, struct csq_record_strings *st)
{
	struct csq_limits *l = &op->limits;

	(void)st;
	l->servicer_ttl_s = (uint32_t)get_u64(c, 4);
	l->user_ttl_s = (uint32_t)get_u64(c, 4);
	l->max_tier = (uint32_t)get_u64(c, 4);
	l->max_queue_length = get_u64(c, 8);
	/* Limits that no configuration passes are no record csqd wrote: a
	 * max_tier of 16 would make order keys that do not fit their bits. */
	if (l->servicer_ttl_s < 1 || l->servicer_ttl_s > CSQ_TTL_MAX ||
	    l->user_ttl_s > CSQ_TTL_MAX || l->max_tier > CSQ_TIER_LIMIT ||
	    l->max_queue_length < 1)
		return -1;
	/* A journal written before routing: its defaults. */
	l->offer_max_missed = CSQ_DEFAULT_MAX_MISSED;
	l->offer_retry_s = CSQ_DEFAULT_RETRY;
	l->max_queues = CSQ_DEFAULT_MAX_QUEUES;
	if (c->left == 0)
		return 0;
	l->offer_timeout_s = (uint32_t)get_u64(c, 4);
	l->offer_max_missed = (uint32_t)get_u64(c, 4);
	l->offer_retry_s = (uint32_t)get_u64(c, 4);
	l->wrapup_s = (uint32_t)get_u64(c, 4);
	l->strategy = (enum csq_strategy)get_u64(c, 1);
	/* A record written before max_queues: its default. */
	if (c->left > 0)
		l->max_queues = get_u64(c, 8);
	if (l->max_queues < 1 || l->max_queues > CSQ_QUEUES_LIMIT ||
	    l->offer_timeout_s > CSQ_OFFER_MAX ||
	    l->offer_max_missed > CSQ_MISSED_MAX ||
	    l->offer_retry_s > CSQ_RETRY_MAX || l->wrapup_s > CSQ_WRAPUP_MAX ||
	    l->strategy > CSQ_STRATEGY_LEAST_BUSY)
		return -1;
	return 0;
}

/* QUEUE: a queue, an offset and a count. */
static void
put_range(struct cursor *c, const struct csq_op *op)
{
	put_str(c, op->id);
	put_u64(c, op->offset, 8);
	put_u64(c, op->count, 4);
}

static int
get_range(struct cursor *c, struct csq_op *op, struct csq_record_strings *st)
{
	op->id = get_str(c, st->id, sizeof(st->id));
	op->offset = get_u64(c, 8);
	op->count = (uint32_t)get_u64(c, 4);
	return 0;
}

/* QUEUES, QSTATS, ROOMS: flags (1: an id, 2: a slice), the id, and the
 * slice's after and count (issue 37). */
static void
put_slice(struct cursor *c, const struct csq_op *op)
{
	int slice = op->count > 0;

	put_u64(c, (uint64_t)(op->id != NULL) | (uint64_t)slice << 1, 1);
	if (op->id != NULL)
		put_str(c, op->id);
	if (slice) {
		put_str(c, op->after != NULL ? op->after : "");
		put_u64(c, op->count, 4);
	}
}

static int
get_slice(struct cursor *c, struct csq_op *op, struct csq_record_strings *st)
{
	unsigned flags = (unsigned)get_u64(c, 1);

	if (flags > 3)
		return -1;
	if (flags & 2) {
		if (flags & 1)
			op->id = get_str(c, st->id, sizeof(st->id));
		op->after = get_str(c, st->queue, sizeof(st->queue));
		op->count = (uint32_t)get_u64(c, 4);
		return op->count == 0 ? -1 : 0;
	}
	if (flags)
		op->id = get_str(c, st->id, sizeof(st->id));
	return 0;
}

/* SERVICERS: a slice's, without an id (it has none). */
static void
put_view(struct cursor *c, const struct csq_op *op)
{
	struct csq_op v = *op;

	v.id = NULL;
	put_slice(c, &v);
}

static int
get_view(struct cursor *c, struct csq_op *op, struct csq_record_strings *st)
{
	return get_slice(c, op, st) != 0 || op->id != NULL ? -1 : 0;
}

#define RECORD_ROW(code, name, number, arity, roles, id, mutates, record, ...) \
	[CSQ_OP_##code] = {put_##record, get_##record},

static const struct {
	put_fn *put;
	get_fn *get;
} forms[CSQ_OP_COUNT] = {CSQ_OPS(RECORD_ROW)};

size_t
csq_record_encode(const struct csq_op *op, uint64_t now,
                  uint8_t buf[CSQ_RECORD_MAX])
{
	struct cursor c = {buf + CSQ_RECORD_HEADER, NULL, 0, 0};

	put_u64(&c, op->code, 1);
	put_u64(&c, now, 8);
	if ((unsigned)op->code < CSQ_OP_COUNT)
		forms[op->code].put(&c, op);
	else /* no operation: as the id form wrote it */
		put_str(&c, op->id);
	return record_seal(buf, &c);
}

_Static_assert(offsetof(struct csq_op, policy) + sizeof(struct csq_policy) ==
                   sizeof(struct csq_op),
               "csq_record_decode zeroes a csq_op up to its policy, the last");

/* The parts of a csq_op csq_record_decode zeroes: all up to its policy but
 * the HEARTBEAT's queues, which get_heartbeat writes (the only reader of
 * them is a HEARTBEAT's check and apply). */
#define HB_QUEUES offsetof(struct csq_op, heartbeat.queues)
#define HB_QUEUES_END                                                          \
	(HB_QUEUES + sizeof(((struct csq_op *)NULL)->heartbeat.queues))

int
csq_record_decode(const uint8_t *payload, size_t len, struct csq_op *op,
                  uint64_t *now, struct csq_record_strings *st)
{
	struct cursor c = {NULL, payload, len, 0};
	uint64_t code;

	/* Zeroed but its policy, 2.8 KB of the 3.4 of a csq_op, which only a
	 * POLICY record holds (get_policy_set zeroes it) and only a POLICY
	 * reads (the op table's check and apply): the memset of all of it
	 * was half the instructions of decoding an ENQUEUE or a RELEASE.
	 * Nor the HEARTBEAT's 256 B of queue pointers: get_heartbeat writes
	 * them, and only a HEARTBEAT reads them. */
	memset(op, 0, HB_QUEUES);
	memset((char *)op + HB_QUEUES_END, 0,
	       offsetof(struct csq_op, policy) - HB_QUEUES_END);
	op->ttl_s = -1;
	code = get_u64(&c, 1);
	op->code = (enum csq_opcode)code;
	*now = get_u64(&c, 8);
	if (code >= CSQ_OP_COUNT || forms[code].get(&c, op, st) != 0)
		return -1; /* no operation, or not one csqd wrote */
	return c.bad || c.left != 0 ? -1 : 0;
}

int
csq_record_is_snap(const uint8_t *payload, size_t len)
{
	return len > 0 && payload[0] >= CSQ_RECORD_SNAP;
}

/* Writes the header of a record whose payload ends at c->w. */
static size_t
record_seal(uint8_t *buf, struct cursor *c)
{
	uint32_t len = (uint32_t)(c->w - buf - CSQ_RECORD_HEADER);
	uint32_t crc = csq_crc32c(buf + CSQ_RECORD_HEADER, len);

	c->w = buf;
	put_u64(c, len, 4);
	put_u64(c, crc, 4);
	return CSQ_RECORD_HEADER + len;
}

/*
 * Snapshot items grew fields as csq did: each item is its first form, then
 * a tail of what was added, which a record written before lacks. So an old
 * journal's snapshot still reads, its new fields zero (no offer, no
 * wrap-up, event ids from 0).
 */
static void
put_stats(struct cursor *c, const struct csq_stats *st)
{
	put_u64(c, st->enqueued_total, 8);
	put_u64(c, st->matched_total, 8);
	put_u64(c, st->abandoned_total, 8);
	put_u64(c, st->requeued_total, 8);
	put_u64(c, st->servicers_lost_total, 8);
}

/* The routing tail (offers, wrap-ups, transfers, event ids). */
static void
put_state_tail(struct cursor *c, const struct csq_snap_state *s)
{
	put_u64(c, s->event_id, 8);
	put_u64(c, s->stats.offers_total, 8);
	put_u64(c, s->stats.offers_declined_total, 8);
	put_u64(c, s->stats.offers_missed_total, 8);
	put_u64(c, s->stats.transferred_total, 8);
}

static void
get_state_tail(struct cursor *c, struct csq_snap_state *s)
{
	s->event_id = get_u64(c, 8);
	s->stats.offers_total = get_u64(c, 8);
	s->stats.offers_declined_total = get_u64(c, 8);
	s->stats.offers_missed_total = get_u64(c, 8);
	s->stats.transferred_total = get_u64(c, 8);
}

static void
put_servicer_tail(struct cursor *c, const struct csq_snap_servicer *s)
{
	put_u64(c, s->offer_s, 4);
	put_u64(c, s->wrapup_s, 4);
	put_u64(c, s->missed, 4);
	put_u64(c, s->has_retry, 1);
	put_u64(c, s->retry_s, 4);
	put_u64(c, s->retry, 8);
	put_u64(c, s->retry_tie, 8);
}

static void
get_servicer_tail(struct cursor *c, struct csq_snap_servicer *s)
{
	s->offer_s = (uint32_t)get_u64(c, 4);
	s->wrapup_s = (uint32_t)get_u64(c, 4);
	s->missed = (uint32_t)get_u64(c, 4);
	s->has_retry = (uint32_t)get_u64(c, 1);
	s->retry_s = (uint32_t)get_u64(c, 4);
	s->retry = get_u64(c, 8);
	s->retry_tie = get_u64(c, 8);
}

static void
put_user_tail(struct cursor *c, const struct csq_snap_user *u)
{
	put_u64(c, u->flags, 1);
	put_u64(c, u->offer_s, 4);
	put_u64(c, u->offer_deadline, 8);
	put_u64(c, u->offer_deadline_tie, 8);
}

static void
get_user_tail(struct cursor *c, struct csq_snap_user *u)
{
	u->flags = (uint32_t)get_u64(c, 1);
	u->offer_s = (uint32_t)get_u64(c, 4);
	u->offer_deadline = get_u64(c, 8);
	u->offer_deadline_tie = get_u64(c, 8);
}

/* The policies tail: a waiting user's clocks or window. */
static void
put_user_wait(struct cursor *c, const struct csq_snap_user *u)
{
	put_u64(c, u->has_wait, 1);
	if (!u->has_wait)
		return;
	put_u64(c, u->clock_kind, 1);
	put_u64(c, u->joined_ms, 8);
	put_u64(c, u->clock, 8);
	put_u64(c, u->clock_tie, 8);
	put_str(c, u->prefer);
	put_u64(c, u->prefer_s, 4);
}

static void
get_user_wait(struct cursor *c, struct csq_snap_user *u)
{
	u->has_wait = (uint32_t)get_u64(c, 1);
	if (!u->has_wait)
		return;
	u->clock_kind = (uint32_t)get_u64(c, 1);
	u->joined_ms = get_u64(c, 8);
	u->clock = get_u64(c, 8);
	u->clock_tie = get_u64(c, 8);
	get_str(c, u->prefer, sizeof(u->prefer));
	u->prefer_s = (uint32_t)get_u64(c, 4);
}

static void
put_queue(struct cursor *c, const struct csq_snap_queue *q)
{
	uint32_t t;

	put_str(c, q->name);
	put_u64(c, q->matched, 8);
	put_u64(c, q->abandoned_leave, 8);
	put_u64(c, q->abandoned_timeout, 8);
	put_u64(c, q->overflowed, 8);
	put_u64(c, q->wait_ms_sum, 8);
	put_u64(c, q->ring_next, 4);
	put_u64(c, q->hold_ms, 8);
	put_u64(c, q->holds, 8);
	put_u64(c, q->wait_area_ms, 8);
	put_u64(c, q->abandons, 8);
	for (t = 0; t <= CSQ_TIER_LIMIT; t++) {
		put_u64(c, q->last_arrival_ms[t], 8);
		put_u64(c, q->gap_ms[t], 8);
		put_u64(c, q->arrivals[t], 4);
	}
	put_u64(c, q->has_nobody, 1); /* section 3c: its tail, or a 0 */
	if (q->has_nobody) {
		put_u64(c, q->nobody_fired, 1);
		put_u64(c, q->nobody_since, 8);
		put_u64(c, q->nobody_grace, 8);
		put_u64(c, q->nobody_grace_tie, 8);
	}
	if (q->has_hours) { /* business hours' tail: only with them */
		put_u64(c, (uint64_t)(q->has_hours | q->closed << 1), 1);
		put_u64(c, q->hours_at, 8);
		put_u64(c, q->hours_tie, 8);
	}
}

static int
get_queue(struct cursor *c, struct csq_snap_queue *q)
{
	uint32_t t, flags;

	get_str(c, q->name, sizeof(q->name));
	q->matched = get_u64(c, 8);
	q->abandoned_leave = get_u64(c, 8);
	q->abandoned_timeout = get_u64(c, 8);
	q->overflowed = get_u64(c, 8);
	q->wait_ms_sum = get_u64(c, 8);
	q->ring_next = (uint32_t)get_u64(c, 4);
	q->hold_ms = get_u64(c, 8);
	q->holds = get_u64(c, 8);
	q->wait_area_ms = get_u64(c, 8);
	q->abandons = get_u64(c, 8);
	for (t = 0; t <= CSQ_TIER_LIMIT; t++) {
		q->last_arrival_ms[t] = get_u64(c, 8);
		q->gap_ms[t] = get_u64(c, 8);
		q->arrivals[t] = (uint32_t)get_u64(c, 4);
	}
	/* Written before nobody policies: none. */
	q->has_nobody = c->left > 0 ? (uint32_t)get_u64(c, 1) : 0;
	if (q->has_nobody) {
		q->nobody_fired = (uint32_t)get_u64(c, 1);
		q->nobody_since = get_u64(c, 8);
		q->nobody_grace = get_u64(c, 8);
		q->nobody_grace_tie = get_u64(c, 8);
	}
	if (c->left == 0)
		return 0; /* no business hours */
	flags = (uint32_t)get_u64(c, 1);
	q->has_hours = flags & 1;
	q->closed = (flags >> 1) & 1;
	q->hours_at = get_u64(c, 8);
	q->hours_tie = get_u64(c, 8);
	return flags == 1 || flags == 3 ? 0 : -1; /* written with them */
}

static void
put_ring(struct cursor *c, const struct csq_snap_ring *r)
{
	uint32_t i;

	put_str(c, r->queue);
	put_u64(c, r->offset, 4);
	put_u64(c, r->n, 4);
	for (i = 0; i < r->n && i < CSQ_SNAP_RING_CHUNK; i++)
		put_u64(c, r->v[i], 4);
}

static int
get_ring(struct cursor *c, struct csq_snap_ring *r)
{
	uint32_t i;

	get_str(c, r->queue, sizeof(r->queue));
	r->offset = (uint32_t)get_u64(c, 4);
	r->n = (uint32_t)get_u64(c, 4);
	if (r->n > CSQ_SNAP_RING_CHUNK)
		return -1;
	for (i = 0; i < r->n; i++)
		r->v[i] = (uint32_t)get_u64(c, 4);
	return 0;
}

size_t
csq_record_encode_snap(const struct csq_snap_item *it,
                       uint8_t buf[CSQ_RECORD_MAX])
{
	struct cursor c = {buf + CSQ_RECORD_HEADER, NULL, 0, 0};
	const struct csq_snap_servicer *s = &it->u.servicer;
	const struct csq_snap_user *u = &it->u.user;
	const struct csq_snap_room *r = &it->u.room;
	uint32_t i;

	put_u64(&c, CSQ_RECORD_SNAP + (uint64_t)it->kind, 1);
	put_u64(&c, 0, 8);
	switch (it->kind) {
	case CSQ_SNAP_STATE:
		put_u64(&c, it->u.state.seq, 8);
		put_u64(&c, it->u.state.order, 8);
		put_u64(&c, it->u.state.tie, 8);
		put_stats(&c, &it->u.state.stats);
		put_state_tail(&c, &it->u.state);
		break;
	case CSQ_SNAP_SERVICER:
		put_str(&c, s->id);
		put_u64(&c, s->status, 1);
		put_u64(&c, s->capacity, 4);
		put_u64(&c, s->ttl_s, 4);
		put_u64(&c, s->last_order, 8);
		put_u64(&c, s->last_ms, 8);
		put_u64(&c, s->deadline, 8);
		put_u64(&c, s->deadline_tie, 8);
		put_u64(&c, s->nqueues, 1);
		for (i = 0; i < s->nqueues; i++)
			put_str(&c, s->queues[i]);
		put_servicer_tail(&c, s);
		put_text(&c, s->skills);    /* the skills tail */
		put_u64(&c, s->handled, 8); /* the counters' tail */
		put_u64(&c, s->handle_ms, 8);
		break;
	case CSQ_SNAP_ROOM:
		put_str(&c, r->servicer);
		put_u64(&c, r->index, 4);
		put_u64(&c, r->length_s, 4);
		put_u64(&c, r->since_ms, 8);
		put_u64(&c, r->deadline, 8);
		put_u64(&c, r->deadline_tie, 8);
		break;
	case CSQ_SNAP_USER:
		put_str(&c, u->id);
		put_str(&c, u->queue);
		put_u64(&c, u->key, 8);
		put_u64(&c, u->arrival_ms, 8);
		put_u64(&c, u->ttl_s, 4);
		put_u64(&c, u->state, 1);
		put_u64(&c, u->has_deadline, 1);
		put_u64(&c, u->deadline, 8);
		put_u64(&c, u->deadline_tie, 8);
		put_str(&c, u->servicer);
		put_u64(&c, u->room, 4);
		put_u64(&c, u->since_ms, 8);
		put_user_tail(&c, u);
		put_user_wait(&c, u);
		put_u64(&c, u->taken_ms, 8);
		put_text(&c, u->needs); /* the skills tail */
		put_u64(&c, u->relax_step, 1);
		break;
	case CSQ_SNAP_QUEUE:
		put_queue(&c, &it->u.queue);
		break;
	case CSQ_SNAP_RING:
		put_ring(&c, &it->u.ring);
		break;
	}
	return record_seal(buf, &c);
}

int
csq_record_decode_snap(const uint8_t *payload, size_t len,
                       struct csq_snap_item *it)
{
	struct cursor c = {NULL, payload, len, 0};
	struct csq_snap_servicer *s = &it->u.servicer;
	struct csq_snap_user *u = &it->u.user;
	struct csq_snap_room *r = &it->u.room;
	struct csq_stats *st = &it->u.state.stats;
	uint64_t code;
	uint32_t i;

	memset(it, 0, sizeof(*it));
	code = get_u64(&c, 1);
	(void)get_u64(&c, 8);
	switch (code) {
	case CSQ_RECORD_SNAP + CSQ_SNAP_STATE:
		it->kind = CSQ_SNAP_STATE;
		it->u.state.seq = get_u64(&c, 8);
		it->u.state.order = get_u64(&c, 8);
		it->u.state.tie = get_u64(&c, 8);
		st->enqueued_total = get_u64(&c, 8);
		st->matched_total = get_u64(&c, 8);
		st->abandoned_total = get_u64(&c, 8);
		st->requeued_total = get_u64(&c, 8);
		st->servicers_lost_total = get_u64(&c, 8);
		if (c.left > 0)
			get_state_tail(&c, &it->u.state);
		break;
	case CSQ_RECORD_SNAP + CSQ_SNAP_SERVICER:
		it->kind = CSQ_SNAP_SERVICER;
		get_str(&c, s->id, sizeof(s->id));
		s->status = (uint32_t)get_u64(&c, 1);
		s->capacity = (uint32_t)get_u64(&c, 4);
		s->ttl_s = (uint32_t)get_u64(&c, 4);
		s->last_order = get_u64(&c, 8);
		s->last_ms = get_u64(&c, 8);
		s->deadline = get_u64(&c, 8);
		s->deadline_tie = get_u64(&c, 8);
		s->nqueues = (uint32_t)get_u64(&c, 1);
		if (s->nqueues > CSQ_SERVICER_QUEUES)
			return -1;
		for (i = 0; i < s->nqueues; i++)
			get_str(&c, s->queues[i], sizeof(s->queues[i]));
		if (c.left > 0)
			get_servicer_tail(&c, s);
		if (c.left > 0)
			get_text(&c, s->skills, sizeof(s->skills));
		if (c.left > 0) { /* the counters' tail (issue 38) */
			s->handled = get_u64(&c, 8);
			s->handle_ms = get_u64(&c, 8);
		}
		break;
	case CSQ_RECORD_SNAP + CSQ_SNAP_ROOM:
		it->kind = CSQ_SNAP_ROOM;
		get_str(&c, r->servicer, sizeof(r->servicer));
		r->index = (uint32_t)get_u64(&c, 4);
		r->length_s = (uint32_t)get_u64(&c, 4);
		r->since_ms = get_u64(&c, 8);
		r->deadline = get_u64(&c, 8);
		r->deadline_tie = get_u64(&c, 8);
		break;
	case CSQ_RECORD_SNAP + CSQ_SNAP_USER:
		it->kind = CSQ_SNAP_USER;
		get_str(&c, u->id, sizeof(u->id));
		get_str(&c, u->queue, sizeof(u->queue));
		u->key = get_u64(&c, 8);
		u->arrival_ms = get_u64(&c, 8);
		u->ttl_s = (uint32_t)get_u64(&c, 4);
		u->state = (uint32_t)get_u64(&c, 1);
		u->has_deadline = (uint32_t)get_u64(&c, 1);
		u->deadline = get_u64(&c, 8);
		u->deadline_tie = get_u64(&c, 8);
		get_str(&c, u->servicer, sizeof(u->servicer));
		u->room = (uint32_t)get_u64(&c, 4);
		u->since_ms = get_u64(&c, 8);
		if (c.left > 0)
			get_user_tail(&c, u);
		if (c.left > 0)
			get_user_wait(&c, u);
		/* Snapshots before taken_ms: the room taken at since_ms. */
		u->taken_ms = c.left > 0 ? get_u64(&c, 8) : u->since_ms;
		if (c.left > 0) {
			get_text(&c, u->needs, sizeof(u->needs));
			/* Written before relaxation: none passed. */
			if (c.left > 0)
				u->relax_step = (uint32_t)get_u64(&c, 1);
		}
		break;
	case CSQ_RECORD_SNAP + CSQ_SNAP_QUEUE:
		it->kind = CSQ_SNAP_QUEUE;
		if (get_queue(&c, &it->u.queue) != 0)
			return -1;
		break;
	case CSQ_RECORD_SNAP + CSQ_SNAP_RING:
		it->kind = CSQ_SNAP_RING;
		if (get_ring(&c, &it->u.ring) != 0)
			return -1;
		break;
	default:
		return -1;
	}
	return c.bad || c.left != 0 ? -1 : 0;
}
