/*
 * csq-shape.so: a Redis module of one command that does nothing of csq's
 * but what Redis charges CSQ.ENQUEUE for (issue 34's direct row), so that
 * scripts/bench-direct can measure, on the same redis-server, what any
 * module command of that shape reaches against ZADD: the ceiling of the
 * row on that machine and that Redis. Built only with CSQ_BENCH; never
 * loaded by csqd, the package or the tests' servers but bench-direct's.
 *
 *	SHP.ENQUEUE <key> <user> [<word>...]
 *
 * is CSQ.ENQUEUE's calls to Redis, one for one (daemon/module/module.c,
 * module_text.c), with the same byte sizes:
 *   - its key opened for writing, a key of this module's own type (made
 *     when empty), its type checked, the key's name compared with the
 *     one the value keeps;
 *   - a reply of the same map of 4 pairs, "state" "waiting" "queue"
 *     "default" "position" <n> "eta_ms" -1 (6 bulk strings, 2 integers:
 *     CSQ.ENQUEUE's own bytes, n the key's count of users);
 *   - RM_Replicate of SHP.APPLY (its name as long as CSQ.APPLY's) with
 *     the key the value keeps, a 19-digit seed kept as a string, and a
 *     record of 30 bytes + the user's length (CSQ.APPLY's for one
 *     ENQUEUE);
 *   - RM_PublishMessage of a message of 33 bytes + the user's + the
 *     count written twice as msgpack writes an integer (the last event's
 *     id and the position), on "<{...}>:events", the channel CSQ.ENQUEUE
 *     publishes on, made once per key; the message made and freed each
 *     time, as csq.so must.
 * Nothing else: no user table, no line, no parse, no check, no timer. The
 * users are counted, not kept (a user given twice counts twice).
 *
 *	SHP.APPLY <key> <seed> <record>
 *
 * is what a replica or the AOF runs: the key's count becomes the record's
 * first 8 bytes (little-endian). A record shorter than 8 bytes or a key
 * of another type is an error that changes nothing.
 */
#include <stdint.h>
#include <string.h>

#include "module_api.h"

#define SHAPE_TYPE    "csq-shape" /* 9 characters, as Redis wants */
#define SHAPE_ENCVER  0
#define SHAPE_SEED    "2532547982039386352" /* 19 digits, as csq.so's */
#define RECORD_FIXED  30 /* an ENQUEUE record's bytes but the user's */
#define MESSAGE_FIXED 33 /* its events' message's but the user's and 2 ints */
#define USER_MAX      512
#define WRONGTYPE_ERR                                                          \
	"WRONGTYPE Operation against a key holding the wrong kind of value"

static RedisModuleType *shape_type;
static RedisModuleString *shape_seed;

struct shape {
	uint64_t count;
	RedisModuleString *key, *channel;
};

static struct shape *
shape_new(uint64_t count)
{
	struct shape *s = RM_Calloc(1, sizeof(*s));

	s->count = count;
	return s;
}

static void
shape_free(void *v)
{
	struct shape *s = v;

	if (s->key != NULL)
		RM_FreeString(NULL, s->key);
	if (s->channel != NULL)
		RM_FreeString(NULL, s->channel);
	RM_Free(s);
}

static void *
shape_rdb_load(RedisModuleIO *io, int encver)
{
	uint64_t n;

	if (encver != SHAPE_ENCVER)
		return NULL;
	n = RM_LoadUnsigned(io);
	return RM_IsIOError(io) ? NULL : shape_new(n);
}

static void
shape_rdb_save(RedisModuleIO *io, void *v)
{
	RM_SaveUnsigned(io, ((struct shape *)v)->count);
}

static void
put_le64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
shape_aof_rewrite(RedisModuleIO *io, RedisModuleString *key, void *v)
{
	uint8_t rec[8];

	put_le64(rec, ((struct shape *)v)->count);
	RM_EmitAOF(io, "SHP.APPLY", "scb", key, SHAPE_SEED, (const char *)rec,
	           sizeof(rec));
}

static size_t
shape_mem_usage(const void *v)
{
	(void)v;
	return sizeof(struct shape);
}

/* The key open for writing and its value, made when the key is empty;
 * NULL with WRONGTYPE replied for a key of another type. */
static struct shape *
shape_open(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey **kp)
{
	RedisModuleKey *key = RM_OpenKey(ctx, name, RM_READ | RM_WRITE);
	int type = RM_KeyType(key);
	struct shape *s;
	const char *a, *b;
	size_t alen, blen;

	*kp = key;
	if (type != RM_KEYTYPE_EMPTY &&
	    (type != RM_KEYTYPE_MODULE ||
	     RM_ModuleTypeGetType(key) != shape_type)) {
		RM_ReplyWithError(ctx, WRONGTYPE_ERR);
		return NULL;
	}
	if (type == RM_KEYTYPE_EMPTY) {
		s = shape_new(0);
		RM_ModuleTypeSetValue(key, shape_type, s);
	} else {
		s = RM_ModuleTypeGetValue(key);
	}
	/* The key's name kept, as csq.so keeps its state's (renamed keys
	 * make it anew), and with it the channel. */
	a = RM_StringPtrLen(name, &alen);
	if (s->key != NULL) {
		b = RM_StringPtrLen(s->key, &blen);
		if (alen == blen && memcmp(a, b, alen) == 0)
			return s;
		RM_FreeString(NULL, s->key);
	}
	if (s->channel != NULL) {
		RM_FreeString(NULL, s->channel);
		s->channel = NULL;
	}
	s->key = RM_CreateString(NULL, a, alen);
	return s;
}

/* "<{tag}>:events" for a key "{tag}...", or "<key>:events": csq.so's
 * channel, made once per key. */
static RedisModuleString *
shape_channel(struct shape *s)
{
	char buf[USER_MAX + 16];
	const char *k, *end;
	size_t len, n;

	if (s->channel != NULL)
		return s->channel;
	k = RM_StringPtrLen(s->key, &len);
	end = len > 0 && k[0] == '{' ? memchr(k, '}', len) : NULL;
	n = end != NULL ? (size_t)(end - k + 1) : len;
	if (n > 400) /* a name's first 400 bytes: buf holds them */
		n = 400;
	memcpy(buf, k, n);
	memcpy(buf + n, ":events", 7);
	s->channel = RM_CreateString(NULL, buf, n + 7);
	return s->channel;
}

/* The bytes msgpack writes an unsigned integer in (daemon/msgpack.c's
 * sizes): what the message's last id and position take. */
static size_t
msgpack_uint_len(uint64_t v)
{
	return v < 128           ? 1
	       : v < 256         ? 2
	       : v < 65536       ? 3
	       : v <= UINT32_MAX ? 5
	                         : 9;
}

static void
reply_bulk(RedisModuleCtx *ctx, const char *s)
{
	RM_ReplyWithStringBuffer(ctx, s, strlen(s));
}

static int
cmd_enqueue(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	uint8_t rec[RECORD_FIXED + USER_MAX];
	uint8_t msg[MESSAGE_FIXED + USER_MAX + 18];
	RedisModuleString *body;
	RedisModuleKey *key;
	struct shape *s;
	const char *user;
	size_t ulen, mlen;

	if (argc < 3)
		return RM_WrongArity(ctx);
	user = RM_StringPtrLen(argv[2], &ulen);
	if (ulen == 0 || ulen > USER_MAX)
		return RM_ReplyWithError(ctx, "ERR bad user: 1 to 512 bytes");
	if ((s = shape_open(ctx, argv[1], &key)) == NULL) {
		RM_CloseKey(key);
		return RM_OK;
	}
	(void)RM_Milliseconds(); /* csq.so's "now", read once a command */
	s->count++;
	RM_ReplyWithArray(ctx, 8);
	reply_bulk(ctx, "state");
	reply_bulk(ctx, "waiting");
	reply_bulk(ctx, "queue");
	reply_bulk(ctx, "default");
	reply_bulk(ctx, "position");
	RM_ReplyWithLongLong(ctx, (long long)s->count);
	reply_bulk(ctx, "eta_ms");
	RM_ReplyWithLongLong(ctx, -1);

	memset(rec, 0, RECORD_FIXED);
	put_le64(rec, s->count);
	memcpy(rec + RECORD_FIXED, user, ulen);
	if (shape_seed == NULL)
		shape_seed =
		    RM_CreateString(NULL, SHAPE_SEED, strlen(SHAPE_SEED));
	RM_Replicate(ctx, "SHP.APPLY", "ssb", s->key, shape_seed,
	             (const char *)rec, RECORD_FIXED + ulen);

	mlen = MESSAGE_FIXED + ulen + 2 * msgpack_uint_len(s->count);
	memset(msg, 0, mlen);
	memcpy(msg + MESSAGE_FIXED, user, ulen);
	body = RM_CreateString(ctx, (const char *)msg, mlen);
	RM_PublishMessage(ctx, shape_channel(s), body);
	RM_FreeString(ctx, body);
	RM_CloseKey(key);
	return RM_OK;
}

static int
cmd_apply(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	RedisModuleKey *key;
	struct shape *s;
	const uint8_t *r;
	uint64_t n = 0;
	size_t len;
	int i;

	if (argc != 4)
		return RM_WrongArity(ctx);
	r = (const uint8_t *)RM_StringPtrLen(argv[3], &len);
	if (len < 8)
		return RM_ReplyWithError(ctx, "ERR bad record: under 8 bytes");
	for (i = 7; i >= 0; i--)
		n = n << 8 | r[i];
	if ((s = shape_open(ctx, argv[1], &key)) == NULL) {
		RM_CloseKey(key);
		return RM_OK;
	}
	s->count = n;
	RM_CloseKey(key);
	return RM_ReplyWithSimpleString(ctx, "OK");
}

/* The one symbol Redis looks for (the others are hidden). */
__attribute__((visibility("default"))) int
RedisModule_OnLoad(RedisModuleCtx *, RedisModuleString **, int);

__attribute__((visibility("default"))) int
RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	struct rm_type_methods tm = {
	    .version = RM_TYPE_METHOD_VERSION,
	    .rdb_load = shape_rdb_load,
	    .rdb_save = shape_rdb_save,
	    .aof_rewrite = shape_aof_rewrite,
	    .mem_usage = shape_mem_usage,
	    .free = shape_free,
	};

	(void)argv;
	(void)argc;
	if (module_api_init(ctx) != RM_OK)
		return RM_ERR;
	if (RM_IsModuleNameBusy("csqshape"))
		return RM_ERR;
	RM_SetModuleAttribs(ctx, "csqshape", 1, RM_APIVER_1);
	shape_type = RM_CreateDataType(ctx, SHAPE_TYPE, SHAPE_ENCVER, &tm);
	if (shape_type == NULL ||
	    RM_CreateCommand(ctx, "shp.enqueue", cmd_enqueue,
	                     "write deny-oom fast", 1, 1, 1) != RM_OK ||
	    RM_CreateCommand(ctx, "shp.apply", cmd_apply, "write", 1, 1, 1) !=
	        RM_OK)
		return RM_ERR;
	return RM_OK;
}
