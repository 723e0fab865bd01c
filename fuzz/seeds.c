/*
 * csq-fuzz-seeds DIR: writes the binary seeds of the journal targets into
 * DIR/record, DIR/snapshot and DIR/journal, from a scenario run on a
 * memory engine (every operation that the journal records, the snapshot
 * items of the state it leaves). Run it again when the record or snapshot
 * format changes: fuzz/corpus holds its output.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "record.h"
#include "snapshot.h"

#define SEED_NOW_MS 1700000000000ULL
#define SEED_MAX    (1 << 20)

/* Records as the journal writes them. */
struct seed {
	uint8_t buf[SEED_MAX];
	size_t len;
};

static struct seed ops, items;
static uint64_t now_ms = SEED_NOW_MS;

static uint64_t
seed_clock(void *arg)
{
	(void)arg;
	return now_ms;
}

static int
seed_journal(void *arg, const struct csq_op *op, uint64_t now)
{
	struct seed *s = arg;

	s->len += csq_record_encode(op, now, s->buf + s->len);
	return 0;
}

static void
seed_item(void *arg, const struct csq_snap_item *it)
{
	struct seed *s = arg;

	s->len += csq_record_encode_snap(it, s->buf + s->len);
}

static void
seed_ignore(void *arg, const struct csq_result *r)
{
	(void)arg, (void)r;
}

static void
run(struct csq_engine *e, struct csq_op *op)
{
	csq_engine_call(e, op, seed_ignore, NULL);
	memset(op, 0, sizeof(*op));
	op->ttl_s = -1;
}

/* Every operation that the journal records, most of them more than once. */
static void
scenario(struct csq_engine *e)
{
	struct csq_limits limits;
	struct csq_op op;

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat =
	    (struct csq_heartbeat_args){.servicer = "s1",
	                                .has_capacity = 1,
	                                .capacity = 2,
	                                .has_queues = 1,
	                                .nqueues = 2,
	                                .queues = {"sales", "support"},
	                                .has_ttl = 1,
	                                .ttl_s = 30};
	run(e, &op);
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat = (struct csq_heartbeat_args){.servicer = "s2"};
	run(e, &op);
	op.code = CSQ_OP_PAUSE;
	op.id = "s2";
	run(e, &op);
	op.code = CSQ_OP_ENQUEUE;
	op.enqueue = (struct csq_enqueue_args){
	    .user = "u1", .has_queue = 1, .queue = "sales"};
	run(e, &op);
	op.code = CSQ_OP_ENQUEUE;
	op.enqueue = (struct csq_enqueue_args){.user = "u2",
	                                       .has_queue = 1,
	                                       .queue = "sales",
	                                       .has_tier = 1,
	                                       .tier = 3,
	                                       .has_ttl = 1,
	                                       .ttl_s = 60};
	run(e, &op);
	op.code = CSQ_OP_ENQUEUE;
	op.enqueue =
	    (struct csq_enqueue_args){.user = "u3", .has_tier = 1, .tier = 9};
	run(e, &op);
	op.code = CSQ_OP_ENQUEUE;
	op.enqueue = (struct csq_enqueue_args){
	    .user = "u4", .has_queue = 1, .queue = "support"};
	run(e, &op);
	op.code = CSQ_OP_TOUCH;
	op.id = "u3";
	op.ttl_s = 0;
	run(e, &op);
	now_ms += 1500;
	op.code = CSQ_OP_RELEASE;
	op.id = "s1/0";
	run(e, &op);
	op.code = CSQ_OP_RESUME;
	op.id = "s2";
	run(e, &op);
	op.code = CSQ_OP_LEAVE;
	op.id = "u4";
	run(e, &op);
	csq_limits_default(&limits);
	limits.max_tier = 15;
	limits.user_ttl_s = 0;
	e->ops->set_limits(e, &limits);
	op.code = CSQ_OP_ENQUEUE;
	op.enqueue = (struct csq_enqueue_args){.user = "u5",
	                                       .has_queue = 1,
	                                       .queue = "billing",
	                                       .has_tier = 1,
	                                       .tier = 15};
	run(e, &op);
	op.code = CSQ_OP_HEARTBEAT;
	op.heartbeat = (struct csq_heartbeat_args){.servicer = "s3",
	                                           .has_queues = 1,
	                                           .nqueues = 1,
	                                           .queues = {"billing"},
	                                           .has_capacity = 1,
	                                           .capacity = 1};
	run(e, &op);
	now_ms += 31000;
	e->ops->expire(e);
	op.code = CSQ_OP_LOGOUT;
	op.id = "s2";
	run(e, &op);
	csq_engine_memory_rearm(e);
}

static void
write_file(const char *dir, const char *sub, const char *name, const uint8_t *a,
           size_t alen, const uint8_t *b, size_t blen)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	if ((f = fopen(path, "wb")) == NULL || fwrite(a, 1, alen, f) != alen ||
	    (blen > 0 && fwrite(b, 1, blen, f) != blen) || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

int
main(int argc, char **argv)
{
	static const uint8_t fix_checksums = 1; /* fuzz_journal's flag */
	struct csq_limits limits;
	struct csq_engine *e;

	if (argc != 2) {
		fprintf(stderr, "usage: csq-fuzz-seeds DIR\n");
		return 2;
	}
	csq_limits_default(&limits);
	e = csq_engine_memory_new(&limits, 1, seed_clock, NULL, NULL, NULL);
	csq_engine_memory_set_journal(e, seed_journal, &ops);
	scenario(e);
	csq_engine_memory_snapshot(e, seed_item, &items);
	e->ops->free(e);

	write_file(argv[1], "record", "scenario", ops.buf, ops.len, NULL, 0);
	write_file(argv[1], "snapshot", "scenario", items.buf, items.len, NULL,
	           0);
	write_file(argv[1], "journal", "records", &fix_checksums, 1, ops.buf,
	           ops.len);
	/* A compacted journal: the snapshot, then what came after it. */
	write_file(argv[1], "journal", "snapshot", &fix_checksums, 1, items.buf,
	           items.len);
	return 0;
}
