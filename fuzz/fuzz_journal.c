/*
 * A whole journal file read by csqd's own journal_open (daemon/journal.h),
 * as at every start: the framing, the checksums, the torn tail that is cut
 * and the damage that is refused, the records and snapshot items replayed.
 *
 * Whatever the file holds, journal_open must either refuse it or give a
 * state that keeps every invariant (csq_check); and a file it accepted
 * (and cut, if its tail was torn) must be accepted again at the next
 * start, to the same state.
 *
 * The first byte of the input says whether the checksums are made right
 * (bit 0: a fuzzer cannot compute them, and damage is the rest of the
 * bits' business); the rest is the file after its header. Records are
 * framed as in lib/record.h.
 */
#include <sys/mman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "engine.h"
#include "fuzz.h"
#include "journal.h"
#include "log.h"
#include "record.h"
#include "snapshot.h"
#include "util.h"

#define FUZZ_MAGIC     "CSQJOURNAL1\n" /* daemon/journal.c's header */
#define FUZZ_CHECK_MAX 256
#define FUZZ_NOW_MS    1700000000000ULL

static struct event_base *base;

static uint64_t
fixed_clock(void *arg)
{
	return *(const uint64_t *)arg;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	/* Refusals and torn tails are what this target is about: their log
	 * lines would be most of its output. */
	if (getenv("FUZZ_LOG") == NULL)
		log_set_level((enum log_level)(LOG_LVL_ERROR + 1));
	base = event_base_new();
	return 0;
}

static void
le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t
le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Writes the right checksum into every record that fits in the file. */
static void
fix_checksums(uint8_t *body, size_t size)
{
	size_t off = 0, len;

	while (size - off >= CSQ_RECORD_HEADER) {
		len = le32_get(body + off);
		if (len > size - off - CSQ_RECORD_HEADER)
			break;
		le32_put(body + off + 4,
		         csq_crc32c(body + off + CSQ_RECORD_HEADER, len));
		off += CSQ_RECORD_HEADER + len;
	}
}

struct items {
	uint8_t (*v)[CSQ_RECORD_MAX];
	size_t n, cap;
};

/* Collects the items with their tie-breakers cleared: a second start
 * rearms the deadlines once more, which draws new ones in the same
 * order. */
static void
collect(void *arg, const struct csq_snap_item *it)
{
	struct items *x = arg;
	struct csq_snap_item c = *it;

	c.u.state.tie = 0;
	if (c.kind == CSQ_SNAP_SERVICER)
		c.u.servicer.deadline_tie = 0;
	if (c.kind == CSQ_SNAP_USER)
		c.u.user.deadline_tie = 0;
	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 8;
		x->v = csq_xrealloc(x->v, x->cap * sizeof(*x->v));
	}
	memset(x->v[x->n], 0, CSQ_RECORD_MAX);
	csq_record_encode_snap(&c, x->v[x->n]);
	x->n++;
}

static int
item_cmp(const void *a, const void *b)
{
	return memcmp(a, b, CSQ_RECORD_MAX);
}

static void
snapshot_sorted(struct csq_engine *e, struct items *x)
{
	csq_engine_memory_snapshot(e, collect, x);
	qsort(x->v, x->n, sizeof(*x->v), item_cmp);
}

/* Opens the journal in path into a new engine; NULL when refused. */
static struct csq_engine *
start(const char *path, uint64_t *now, uint64_t seed)
{
	struct csq_limits limits;
	struct csq_engine *e;
	struct journal *j;
	char why[FUZZ_CHECK_MAX];

	csq_limits_default(&limits);
	e = csq_engine_memory_new(&limits, seed, fixed_clock, now, NULL, NULL);
	if ((j = journal_open(base, path, CONFIG_FSYNC_NO, e)) == NULL) {
		e->ops->free(e);
		return NULL;
	}
	journal_close(j);
	if (csq_check(csq_engine_memory_state(e), why, sizeof(why)) != 0)
		fuzz_fail("after the journal's replay: %s", why);
	return e;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct items first = {0}, second = {0};
	struct csq_engine *e1, *e2;
	char path[64];
	uint8_t *file;
	uint64_t now = FUZZ_NOW_MS;
	size_t len;
	int fd;

	if (size < 1)
		return 0;
	len = strlen(FUZZ_MAGIC) + size - 1;
	file = csq_xmalloc(len);
	memcpy(file, FUZZ_MAGIC, strlen(FUZZ_MAGIC));
	memcpy(file + strlen(FUZZ_MAGIC), data + 1, size - 1);
	if (data[0] & 1)
		fix_checksums(file + strlen(FUZZ_MAGIC), size - 1);
	if ((fd = memfd_create("journal", MFD_CLOEXEC)) < 0 ||
	    write(fd, file, len) != (ssize_t)len)
		fuzz_fail("cannot write the journal into a memfd");
	free(file);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	if ((e1 = start(path, &now, 1)) != NULL) {
		if ((e2 = start(path, &now, 2)) == NULL)
			fuzz_fail("a journal accepted once is refused next");
		snapshot_sorted(e1, &first);
		snapshot_sorted(e2, &second);
		if (first.n != second.n ||
		    memcmp(first.v, second.v, first.n * sizeof(*first.v)) != 0)
			fuzz_fail("a journal gives another state at the next "
			          "start");
		e1->ops->free(e1);
		e2->ops->free(e2);
		free(first.v);
		free(second.v);
	}
	close(fd);
	return 0;
}
