/*
 * The record's line reader (lib/event_parse.h) on any bytes, as csq-day
 * reads a record of the day (docs/day.md) line by line.
 *
 * Nothing is read past the line's end (ASan: libFuzzer's input is a heap
 * block of exactly its size); a refused line says why, in err. A line
 * that parses prints (csq_event_json, the function the record writes its
 * lines with) into a line that parses to the same event: same type, id
 * and time, and the same line printed again, byte for byte; the line fits
 * the record's (event_record.c writes nothing longer than
 * FUZZ_RECORD_LINE_MAX). And csq_event_json cut short is snprintf's: the
 * same bytes up to the cut, NUL-terminated, and the same length returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csq.h"
#include "event_parse.h"
#include "fuzz.h"

#define FUZZ_LINE_MAX        16384
#define FUZZ_RECORD_LINE_MAX 4096 /* daemon/event_record.c RECORD_LINE_MAX */

static void
check_err(const char *err)
{
	if (memchr(err, '\0', CSQ_PARSE_ERR_MAX) == NULL)
		fuzz_fail("an error not terminated");
	if (err[0] == '\0')
		fuzz_fail("a line refused without a reason");
}

/* csq_event_json into len bytes gives the first len - 1 bytes of the
 * whole line, terminated, and the whole line's length. */
static void
check_cut(const struct csq_event *ev, const char *whole, int n, size_t len)
{
	char cut[FUZZ_LINE_MAX];
	size_t keep = len > 0 ? ((size_t)n < len - 1 ? (size_t)n : len - 1) : 0;

	memset(cut, 'X', sizeof(cut));
	if (csq_event_json(ev, len > 0 ? cut : NULL, len) != n)
		fuzz_fail("csq_event_json into %zu bytes counts otherwise",
		          len);
	if (len == 0)
		return;
	if (memcmp(cut, whole, keep) != 0 || cut[keep] != '\0')
		fuzz_fail("csq_event_json into %zu bytes is not a prefix", len);
	if (keep + 1 < sizeof(cut) && cut[keep + 1] != 'X')
		fuzz_fail("csq_event_json into %zu bytes writes past it", len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char one[FUZZ_LINE_MAX], two[FUZZ_LINE_MAX];
	char err[CSQ_PARSE_ERR_MAX];
	struct csq_event ev, back;
	enum csq_event_parse r;
	int n1, n2;

	r = csq_event_parse((const char *)data, size, &ev, err);
	if (r == CSQ_PARSE_ERROR) {
		check_err(err);
		return 0;
	}
	if (r != CSQ_PARSE_OK && r != CSQ_PARSE_UNKNOWN)
		fuzz_fail("csq_event_parse returned %d", (int)r);
	if (r == CSQ_PARSE_UNKNOWN)
		return 0;
	if ((unsigned)ev.type >= CSQ_EV_TYPES)
		fuzz_fail("a type %d out of range", (int)ev.type);
	n1 = csq_event_json(&ev, one, sizeof(one));
	if (n1 <= 0 || n1 >= FUZZ_RECORD_LINE_MAX)
		fuzz_fail("a %s event prints to %d bytes",
		          csq_event_name(ev.type), n1);
	if (csq_event_parse(one, (size_t)n1, &back, err) != CSQ_PARSE_OK)
		fuzz_fail("%s does not parse: %s", one, err);
	if (back.type != ev.type || back.id != ev.id || back.ts_ms != ev.ts_ms)
		fuzz_fail("%s parses to another event", one);
	n2 = csq_event_json(&back, two, sizeof(two));
	if (n1 != n2 || memcmp(one, two, (size_t)n1) != 0)
		fuzz_fail("%s prints again as %s", one, two);
	check_cut(&ev, one, n1, 0);
	check_cut(&ev, one, n1, 1);
	check_cut(&ev, one, n1, (size_t)n1);
	check_cut(&ev, one, n1, (size_t)n1 + 1);
	check_cut(&ev, one, n1, 1 + size % (size_t)n1);
	return 0;
}
