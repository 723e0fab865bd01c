/*
 * csq_tzif_parse (business hours' zones, RFC 8536) on any bytes. What
 * it takes must hold together (csq_tz_check), give offsets within
 * their range, and transitions that come after the instant asked and
 * change the offset there; the zone must cross a POLICY record and come
 * back byte for byte; and business hours over it must say a next change
 * at which the answer differs, and the same answer at a few instants
 * before it (the change found is the first).
 *
 * The seeds are real zone files (Europe/Berlin, America/New_York,
 * Australia/Lord_Howe, Asia/Tokyo, a version 1 form).
 */
#include <string.h>

#include "fuzz.h"
#include "hours.h"
#include "record.h"
#include "tzif.h"

#define T_2026 1767225600LL /* 2026-01-01T00:00Z */
#define SPAN   (40LL * 365 * 86400)

static void
check_offsets(const struct csq_tz *z, int64_t t)
{
	int32_t off = csq_tz_offset(z, t);
	int64_t next;

	if (off > CSQ_TZ_OFFSET_MAX || off < -CSQ_TZ_OFFSET_MAX)
		fuzz_fail("offset %d at %lld", off, (long long)t);
	next = csq_tz_next_transition(z, t);
	if (next <= t)
		fuzz_fail("a next transition %lld not after %lld",
		          (long long)next, (long long)t);
}

static void
check_record(const struct csq_policy *p)
{
	static uint8_t buf[CSQ_RECORD_MAX], buf2[CSQ_RECORD_MAX];
	static struct csq_op op, back;
	struct csq_record_strings st;
	uint64_t now;
	size_t n;

	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_POLICY;
	op.count = 1;
	op.policy = *p;
	n = csq_record_encode(&op, 1, buf);
	if (csq_record_decode(buf + CSQ_RECORD_HEADER, n - CSQ_RECORD_HEADER,
	                      &back, &now, &st) != 0)
		fuzz_fail("a zone taken does not cross a record");
	if (memcmp(&back.policy.hours, &p->hours, sizeof(p->hours)) != 0 ||
	    csq_record_encode(&back, 1, buf2) != n || memcmp(buf, buf2, n))
		fuzz_fail("a zone comes back from its record changed");
}

static void
check_hours(struct csq_policy *p, struct fuzz_in *in)
{
	const char *err;
	uint64_t now, next, mid;
	int open, i;

	p->hours.on = 1;
	if (csq_hours_parse_week("mon-fri 09:00-17:00, sat 22:00-02:00",
	                         &p->hours, &err) != 0)
		fuzz_fail("the week: %s", err);
	now = (uint64_t)(T_2026 + (int64_t)fuzz_u32(in) % SPAN) * 1000;
	next = csq_hours_next(&p->hours, now, &open);
	if (next == UINT64_MAX)
		return; /* a zone may make no open time appear */
	if (next <= now ||
	    csq_hours_open_at(&p->hours, (int64_t)(next / 1000)) == open)
		fuzz_fail("a next change at %llu that changes nothing",
		          (unsigned long long)next);
	for (i = 1; i < 4; i++) {
		mid = now + (next - now) * (uint64_t)i / 4;
		if (mid / 1000 > now / 1000 && mid / 1000 < next / 1000 &&
		    csq_hours_open_at(&p->hours, (int64_t)(mid / 1000)) != open)
			fuzz_fail("a change before the next one found");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct csq_policy p;
	struct fuzz_in in;
	const char *err = NULL;
	int64_t t;
	int i;

	memset(&p, 0, sizeof(p));
	if (csq_tzif_parse(data, size, &p.hours.tz, &err) != 0) {
		if (err == NULL || err[0] == '\0')
			fuzz_fail("refused without a reason");
		return 0;
	}
	strcpy(p.hours.tz.name, "Fuzz/Zone");
	if (csq_tz_check(&p.hours.tz) != 0)
		fuzz_fail("a zone taken does not hold together");
	/* Choices from the input's tail. */
	fuzz_in_init(&in, data + size / 2, size - size / 2);
	for (i = 0; i < 8; i++) {
		t = T_2026 - SPAN + (int64_t)(fuzz_u64(&in) % (3 * SPAN));
		check_offsets(&p.hours.tz, t);
	}
	strcpy(p.name, "q");
	check_hours(&p, &in);
	check_record(&p);
	return 0;
}
