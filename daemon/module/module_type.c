/*
 * The module's data type, "csq-state": a key's whole csq state. Its RDB
 * form, its AOF rewrite (CSQ.LOAD) and its digest all come from one dump:
 * the limits and the queue policies as journal records, then the snapshot
 * items (lib/snapshot.h), each a whole record with its header, as the
 * journal's compaction writes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "snapshot.h"

#include "module_state.h"

/* The RDB encoding's version: 1, the seed then the dump as one string. */
#define TYPE_ENCVER 1
/* Nine characters, as Redis requires of a module type's name. */
#define TYPE_NAME "csq-state"

RedisModuleType *module_type;

static void
dump_record(struct csq_wbuf *w, const struct csq_op *op)
{
	uint8_t rec[CSQ_RECORD_MAX];

	csq_put_bytes(w, rec, csq_record_encode(op, 0, rec));
}

static void
dump_item(void *arg, const struct csq_snap_item *it)
{
	uint8_t rec[CSQ_RECORD_MAX];

	csq_put_bytes(arg, rec, csq_record_encode_snap(it, rec));
}

void
module_state_dump(struct module_state *st, struct csq_wbuf *w)
{
	struct csq *csq = csq_engine_memory_state(st->engine);
	const struct csq_policy *pol;
	struct csq_op op;
	size_t n, i;

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_LIMITS;
	op.limits = *csq_get_limits(csq);
	dump_record(w, &op);
	pol = csq_get_policies(csq, &n);
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	op.count = (uint32_t)n;
	for (i = 0; i < n; i++) {
		op.offset = i;
		op.policy = pol[i];
		dump_record(w, &op);
	}
	csq_snapshot(csq, dump_item, w);
}

/* Records compared by their bytes, for the digest's order. */
struct dump_rec {
	const uint8_t *p;
	size_t len;
};

static int
rec_cmp(const void *a_, const void *b_)
{
	const struct dump_rec *a = a_, *b = b_;
	int c = memcmp(a->p, b->p, a->len < b->len ? a->len : b->len);

	return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

/*
 * The digest: CRC-32C over the dump's records in the order of their
 * bytes, since the order of the items of one kind follows the hash
 * tables' history (a state loaded from a dump lists its users in another
 * order than the one that made them), and only what they hold matters.
 */
uint32_t
module_state_digest(struct module_state *st, size_t *len)
{
	struct csq_wbuf w = {0}, sorted = {0};
	struct dump_rec *v = NULL;
	size_t n = 0, cap = 0, i, plen;
	uint32_t crc;

	module_state_dump(st, &w);
	for (i = 0; i + CSQ_RECORD_HEADER <= w.len;
	     i += CSQ_RECORD_HEADER + plen) {
		plen = (size_t)w.p[i] | (size_t)w.p[i + 1] << 8 |
		       (size_t)w.p[i + 2] << 16 | (size_t)w.p[i + 3] << 24;
		if (n == cap) {
			cap = cap != 0 ? 2 * cap : 64;
			v = RM_Realloc(v, cap * sizeof(*v));
		}
		v[n].p = w.p + i;
		v[n++].len = CSQ_RECORD_HEADER + plen;
	}
	if (n > 0)
		qsort(v, n, sizeof(*v), rec_cmp);
	for (i = 0; i < n; i++)
		csq_put_bytes(&sorted, v[i].p, v[i].len);
	crc = csq_crc32c(sorted.p, sorted.len);
	*len = sorted.len;
	RM_Free(v);
	csq_wbuf_free(&sorted);
	csq_wbuf_free(&w);
	return crc;
}

struct module_state *
module_state_load(uint64_t seed, const uint8_t *p, size_t len)
{
	struct module_state *st = module_state_new(seed);
	struct csq_record_strings strs;
	struct csq_snap_item it;
	struct csq_op op;
	uint32_t plen;
	uint64_t now;
	int bad = 0, items = 0;

	module_state_begin(st, NULL, 0);
	while (len > 0 && !bad) {
		if (len < CSQ_RECORD_HEADER) {
			bad = 1;
			break;
		}
		plen = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
		       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		if (plen > len - CSQ_RECORD_HEADER ||
		    csq_crc32c(p + CSQ_RECORD_HEADER, plen) !=
		        ((uint32_t)p[4] | (uint32_t)p[5] << 8 |
		         (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24)) {
			bad = 1;
			break;
		}
		if (csq_record_is_snap(p + CSQ_RECORD_HEADER, plen)) {
			items = 1;
			bad = csq_record_decode_snap(p + CSQ_RECORD_HEADER,
			                             plen, &it) != 0 ||
			      csq_engine_memory_restore(st->engine, &it) != 0;
		} else if (items ||
		           csq_record_decode(p + CSQ_RECORD_HEADER, plen, &op,
		                             &now, &strs) != 0 ||
		           (op.code != CSQ_OP_LIMITS &&
		            op.code != CSQ_OP_POLICY)) {
			bad = 1; /* only limits and policies come first */
		} else {
			csq_engine_memory_replay(st->engine, &op, now);
		}
		p += CSQ_RECORD_HEADER + plen;
		len -= CSQ_RECORD_HEADER + plen;
	}
	if (!bad && csq_engine_memory_restore_end(st->engine) != 0)
		bad = 1;
	module_state_end(st, NULL);
	if (bad) {
		module_state_free(st);
		return NULL;
	}
	return st;
}

static void *
type_rdb_load(RedisModuleIO *io, int encver)
{
	struct module_state *st;
	uint64_t seed;
	size_t len;
	char *buf;

	if (encver != TYPE_ENCVER) {
		RM_LogIOError(io, "warning",
		              "csq: a state of encoding %d, which this csq.so "
		              "does not know",
		              encver);
		return NULL;
	}
	seed = RM_LoadUnsigned(io);
	buf = RM_LoadStringBuffer(io, &len);
	if (RM_IsIOError(io) || buf == NULL) {
		RM_Free(buf);
		return NULL;
	}
	st = module_state_load(seed, (const uint8_t *)buf, len);
	RM_Free(buf);
	if (st == NULL) {
		RM_LogIOError(io, "warning", "csq: a state that does not load");
		return NULL;
	}
	/* Its key, for the deadlines (the timer acts once loading ends). */
	{
		const RedisModuleString *k = RM_GetKeyNameFromIO(io);
		size_t klen;
		const char *s = k != NULL ? RM_StringPtrLen(k, &klen) : NULL;

		if (s != NULL) {
			st->key = RM_CreateString(NULL, s, klen);
			st->db = RM_GetDbIdFromIO(io);
			module_timer_note(st);
		}
	}
	return st;
}

static void
type_rdb_save(RedisModuleIO *io, void *value)
{
	struct module_state *st = value;
	struct csq_wbuf w = {0};

	module_state_dump(st, &w);
	RM_SaveUnsigned(io, st->seed);
	RM_SaveStringBuffer(io, w.len > 0 ? (const char *)w.p : "", w.len);
	csq_wbuf_free(&w);
}

static void
type_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
	struct module_state *st = value;
	struct csq_wbuf w = {0};

	module_state_dump(st, &w);
	RM_EmitAOF(aof, "CSQ.LOAD", "slb", key, (long long)st->seed,
	           w.len > 0 ? (const char *)w.p : "", w.len);
	csq_wbuf_free(&w);
}

static size_t
type_mem_usage(const void *value)
{
	const struct module_state *st = value;

	return sizeof(*st) + st->bytes;
}

static void
type_digest(RedisModuleDigest *md, void *value)
{
	char buf[32];
	size_t len;
	uint32_t crc = module_state_digest(value, &len);
	int n = snprintf(buf, sizeof(buf), "%08x:%zu", crc, len);

	RM_DigestAddStringBuffer(md, buf, (size_t)n);
	RM_DigestEndSequence(md);
}

static void
type_free(void *value)
{
	module_state_free(value);
}

int
module_type_register(RedisModuleCtx *ctx)
{
	struct rm_type_methods tm;

	memset(&tm, 0, sizeof(tm));
	tm.version = RM_TYPE_METHOD_VERSION;
	tm.rdb_load = type_rdb_load;
	tm.rdb_save = type_rdb_save;
	tm.aof_rewrite = type_aof_rewrite;
	tm.mem_usage = type_mem_usage;
	tm.digest = type_digest;
	tm.free = type_free;
	module_type = RM_CreateDataType(ctx, TYPE_NAME, TYPE_ENCVER, &tm);
	return module_type != NULL ? RM_OK : RM_ERR;
}
