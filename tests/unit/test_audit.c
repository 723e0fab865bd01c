/*
 * The fairness audit (lib/audit.h) on records written by hand, each line
 * as csqd writes it: a fair day passes; an out-of-order match, a double
 * offer, a room given twice, a user lost with its servicer, a transfer
 * that never arrives, and missing ids are each caught, with the ids of
 * the events involved; documented reasons excuse an overtake and are
 * named, a preference window's end even after the fact. The skills
 * excuse is checked against the record: a servicer whose recorded skills
 * lacked the earlier user's needs passes; one that had them (at login,
 * or after a HEARTBEAT's change), or a relax step or a re-ENQUEUE that
 * made the earlier user one it could take, is caught with the events
 * that said the needs; a servicer the record never showed is excused
 * by that name. (The re-ENQUEUE case found that a rescored of the last
 * user of its line lost the line, and every later overtake in it.) The
 * preferred-servicer excuse is checked too: the earlier user's window on
 * record must have been for another servicer and still open; and a move
 * into a free room is an overflow's excuse only when its reason says so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "audit.h"
#include "csq.h"
#include "event_parse.h"
#include "scale.h"

/* Audits the lines (NULL-terminated); returns the audit, ended. */
static struct csq_audit *
run(const char *const *lines)
{
	struct csq_audit *a = csq_audit_new();
	char err[CSQ_PARSE_ERR_MAX];
	struct csq_event ev;

	for (; *lines != NULL; lines++) {
		enum csq_event_parse r =
		    csq_event_parse(*lines, strlen(*lines), &ev, err);

		if (r == CSQ_PARSE_ERROR)
			fail_msg("%s: %s", *lines, err);
		if (r == CSQ_PARSE_UNKNOWN)
			csq_audit_unknown(a, ev.id);
		else
			csq_audit_event(a, &ev);
	}
	csq_audit_end(a);
	return a;
}

/* Exactly one finding, of kind, naming these ids. */
static void
assert_one(struct csq_audit *a, enum csq_audit_kind kind, int nids, ...)
{
	const struct csq_audit_finding *f;
	va_list ap;
	size_t n;
	int i;

	f = csq_audit_findings(a, &n);
	if (n != 1)
		fail_msg("%zu findings, the first: %s", n,
		         n > 0 ? f[0].text : "");
	assert_string_equal(csq_audit_kind_name(f[0].kind),
	                    csq_audit_kind_name(kind));
	assert_int_equal(f[0].nids, nids);
	va_start(ap, nids);
	for (i = 0; i < nids; i++)
		assert_int_equal(f[0].ids[i], va_arg(ap, int));
	va_end(ap);
	assert_true(f[0].text[0] != '\0');
}

static void
assert_none(struct csq_audit *a)
{
	const struct csq_audit_finding *f;
	size_t n;

	f = csq_audit_findings(a, &n);
	if (n != 0)
		fail_msg("%zu findings, the first: %s", n, f[0].text);
}

#define UP(id, s)                                                              \
	"{\"event\":\"servicer_up\",\"id\":" #id ",\"ts\":1,\"servicer\":\"" s \
	"\",\"capacity\":1,\"queues\":[\"q\"]}"
/* Its position: its id, never fewer than the users ahead of it. */
#define QUEUED(id, u)                                                          \
	"{\"event\":\"queued\",\"id\":" #id ",\"ts\":1,\"user\":\"" u          \
	"\",\"queue\":\"q\",\"tier\":0,\"position\":" #id "}"
#define MATCHED(id, u, s)                                                      \
	"{\"event\":\"matched\",\"id\":" #id ",\"ts\":1,\"user\":\"" u         \
	"\",\"queue\":\"q\",\"tier\":0,\"servicer\":\"" s "\",\"room\":\"" s   \
	"/0\",\"waited_ms\":0}"
#define OFFERED(id, u, s)                                                      \
	"{\"event\":\"offered\",\"id\":" #id ",\"ts\":1,\"user\":\"" u         \
	"\",\"queue\":\"q\",\"tier\":0,\"servicer\":\"" s "\",\"room\":\"" s   \
	"/0\",\"expires_ms\":9}"
#define RELEASED(id, u, s)                                                     \
	"{\"event\":\"released\",\"id\":" #id ",\"ts\":1,\"user\":\"" u        \
	"\",\"queue\":\"q\",\"servicer\":\"" s "\",\"room\":\"" s              \
	"/0\",\"by\":\"servicer\"}"
#define DOWN(id, s)                                                            \
	"{\"event\":\"servicer_down\",\"id\":" #id                             \
	",\"ts\":1,\"servicer\":\"" s "\",\"reason\":\"lost\"}"

static void
test_fair_day(void **state)
{
	static const char *const day[] = {
	    UP(1, "s1"),
	    QUEUED(2, "u1"),
	    QUEUED(3, "u2"),
	    UP(4, "s2"),
	    MATCHED(5, "u1", "s2"),
	    RELEASED(6, "u1", "s2"),
	    MATCHED(7, "u2", "s2"),
	    "{\"event\":\"left\",\"id\":8,\"ts\":1,\"user\":\"u3\",\"queue\":"
	    "\"q\",\"reason\":\"timeout\"}",
	    QUEUED(9, "u4"),
	    "{\"event\":\"unwound\",\"id\":10,\"ts\":1,\"user\":\"u4\"}",
	    NULL};
	struct csq_audit *a = run(day);
	const struct csq_audit_summary *s = csq_audit_summary(a);

	(void)state;
	assert_none(a);
	assert_int_equal(s->events, 10);
	assert_int_equal(s->unknown_events, 1);
	assert_int_equal(s->arrivals, 3);
	assert_int_equal(s->before, 1); /* u3: only its end is here */
	assert_int_equal(s->matched, 2);
	assert_int_equal(s->expired, 1);
	assert_int_equal(s->still_waiting, 1);
	assert_int_equal(s->in_rooms, 1);
	csq_audit_free(a);
}

/* u2 arrived after u1, same queue and tier, and s1 took u2. */
static void
test_out_of_order_match(void **state)
{
	static const char *const day[] = {QUEUED(1, "u1"), QUEUED(2, "u2"),
	                                  UP(3, "s1"), MATCHED(4, "u2", "s1"),
	                                  NULL};
	struct csq_audit *a = run(day);

	(void)state;
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 3, 1, 2, 4);
	csq_audit_free(a);
}

/* The same, through an offer. */
static void
test_out_of_order_offer(void **state)
{
	static const char *const day[] = {QUEUED(1, "u1"), QUEUED(2, "u2"),
	                                  UP(3, "s1"), OFFERED(4, "u2", "s1"),
	                                  NULL};
	struct csq_audit *a = run(day);

	(void)state;
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 3, 1, 2, 4);
	csq_audit_free(a);
}

static void
test_double_offer(void **state)
{
	static const char *const day[] = {UP(1, "s1"), UP(2, "s2"),
	                                  OFFERED(3, "u1", "s1"),
	                                  OFFERED(4, "u1", "s2"), NULL};
	struct csq_audit *a = run(day);

	(void)state;
	assert_one(a, CSQ_AUDIT_TWO_OFFERS, 2, 3, 4);
	csq_audit_free(a);
}

static void
test_room_given_twice(void **state)
{
	static const char *const day[] = {UP(1, "s1"), MATCHED(2, "u1", "s1"),
	                                  MATCHED(3, "u2", "s1"), NULL};
	struct csq_audit *a = run(day);

	(void)state;
	assert_one(a, CSQ_AUDIT_TWO_USERS, 2, 2, 3);
	csq_audit_free(a);
}

/* s1 lost with u1 in its room, and no requeued for u1. */
static void
test_lost_user(void **state)
{
	static const char *const day[] = {UP(1, "s1"), MATCHED(2, "u1", "s1"),
	                                  DOWN(3, "s1"), NULL};
	static const char *const fair[] = {
	    UP(1, "s1"), MATCHED(2, "u1", "s1"),
	    "{\"event\":\"requeued\",\"id\":3,\"ts\":1,\"user\":\"u1\","
	    "\"queue\":\"q\",\"tier\":0,\"position\":1,\"servicer\":\"s1\","
	    "\"room\":\"s1/0\",\"reason\":\"lost\"}",
	    DOWN(4, "s1"), NULL};
	struct csq_audit *a = run(day);

	(void)state;
	assert_one(a, CSQ_AUDIT_LOST, 2, 2, 3);
	csq_audit_free(a);
	a = run(fair);
	assert_none(a);
	assert_int_equal(csq_audit_summary(a)->still_waiting, 1);
	csq_audit_free(a);
}

/* Released by a transfer, and never placed again. */
static void
test_lost_in_transfer(void **state)
{
	static const char *const day[] = {
	    UP(1, "s1"), MATCHED(2, "u1", "s1"),
	    "{\"event\":\"released\",\"id\":3,\"ts\":1,\"user\":\"u1\","
	    "\"queue\":\"q\",\"servicer\":\"s1\",\"room\":\"s1/0\",\"by\":"
	    "\"transfer\"}",
	    NULL};
	struct csq_audit *a = run(day);

	(void)state;
	assert_one(a, CSQ_AUDIT_LOST, 1, 2);
	csq_audit_free(a);
}

static void
test_gap(void **state)
{
	static const char *const day[] = {UP(1, "s1"), QUEUED(2, "u1"),
	                                  QUEUED(5, "u2"), NULL};
	struct csq_audit *a = run(day);

	(void)state;
	assert_one(a, CSQ_AUDIT_GAP, 2, 2, 5);
	csq_audit_free(a);
}

/* An earlier user that declined an offer, or was held for a servicer
 * (known only from its prefer_ended, later), may be passed: named. */
static void
test_excuses_named(void **state)
{
	static const char *const declined[] = {
	    UP(1, "s1"),
	    QUEUED(2, "u1"),
	    QUEUED(3, "u2"),
	    OFFERED(4, "u1", "s1"),
	    "{\"event\":\"declined\",\"id\":5,\"ts\":1,\"user\":\"u1\","
	    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s1\",\"room\":\"s1/0\","
	    "\"by\":\"servicer\",\"position\":1}",
	    UP(6, "s2"),
	    MATCHED(7, "u2", "s2"),
	    NULL};
	static const char *const prefer[] = {
	    UP(1, "s1"),
	    QUEUED(2, "u1"),
	    QUEUED(3, "u2"),
	    UP(4, "s2"),
	    MATCHED(5, "u2", "s2"),
	    "{\"event\":\"prefer_ended\",\"id\":6,\"ts\":1,\"user\":\"u1\","
	    "\"queue\":\"q\",\"servicer\":\"s1\",\"reason\":\"timeout\"}",
	    NULL};
	/* u2 arrives after u1 at position 1: u1 is not in the queue's
	 * line (held for a servicer), as the positions show. */
	static const char *const held[] = {
	    QUEUED(1, "u1"),
	    "{\"event\":\"queued\",\"id\":2,\"ts\":1,\"user\":\"u2\","
	    "\"queue\":\"q\",\"tier\":0,\"position\":1}",
	    UP(3, "s2"), MATCHED(4, "u2", "s2"), NULL};
	/* u1 needs a skill s2 lacks: its relax step says so, later. */
	static const char *const relaxed[] = {
	    QUEUED(1, "u1"),
	    QUEUED(2, "u2"),
	    UP(3, "s2"),
	    MATCHED(4, "u2", "s2"),
	    "{\"event\":\"relaxed\",\"id\":5,\"ts\":1,\"user\":\"u1\","
	    "\"queue\":\"q\",\"tier\":0,\"needs\":\"de:5\",\"dropped\":"
	    "\"billing\",\"lowered\":0,\"position\":1}",
	    NULL};
	static const char *const needs[] = {
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"user\":\"u1\","
	    "\"queue\":\"q\",\"tier\":0,\"position\":1,\"needs\":\"de:5\"}",
	    QUEUED(2, "u2"), UP(3, "s2"), MATCHED(4, "u2", "s2"), NULL};
	static const char *const prefers[] = {
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1,\"user\":\"u1\","
	    "\"queue\":\"q\",\"tier\":0,\"position\":1,\"prefer\":\"s1\","
	    "\"prefer_ms\":60000}",
	    QUEUED(2, "u2"), UP(3, "s2"), MATCHED(4, "u2", "s2"), NULL};
	struct csq_audit *a = run(declined);

	(void)state;
	assert_none(a);
	assert_int_equal(csq_audit_summary(a)->excused[CSQ_EXCUSE_DECLINED], 1);
	csq_audit_free(a);
	a = run(prefer);
	assert_none(a);
	assert_int_equal(csq_audit_summary(a)->excused[CSQ_EXCUSE_PREFER], 1);
	csq_audit_free(a);
	a = run(held);
	assert_none(a);
	assert_int_equal(csq_audit_summary(a)->excused[CSQ_EXCUSE_PREFER], 1);
	csq_audit_free(a);
	a = run(relaxed);
	assert_none(a);
	assert_int_equal(csq_audit_summary(a)->excused[CSQ_EXCUSE_SKILLS], 1);
	csq_audit_free(a);
	/* queued's needs and prefer say it at once, without a relax step
	 * or the window's end. */
	a = run(needs);
	assert_none(a);
	assert_int_equal(csq_audit_summary(a)->excused[CSQ_EXCUSE_SKILLS], 1);
	csq_audit_free(a);
	a = run(prefers);
	assert_none(a);
	assert_int_equal(csq_audit_summary(a)->excused[CSQ_EXCUSE_PREFER], 1);
	csq_audit_free(a);
}

/* A servicer with skills, and a user with needs (absent: none). */
#define UP_SK(id, s, sk)                                                       \
	"{\"event\":\"servicer_up\",\"id\":" #id ",\"ts\":1,\"servicer\":\"" s \
	"\",\"capacity\":1,\"queues\":[\"q\"],\"skills\":\"" sk "\"}"
#define UPDATED(id, s, sk)                                                     \
	"{\"event\":\"servicer_updated\",\"id\":" #id                          \
	",\"ts\":1,\"servicer\":\"" s                                          \
	"\",\"capacity\":1,\"queues\":[\"q\"],\"skills\":\"" sk "\"}"
#define QUEUED_N(id, u, n)                                                     \
	"{\"event\":\"queued\",\"id\":" #id ",\"ts\":1,\"user\":\"" u          \
	"\",\"queue\":\"q\",\"tier\":0,\"position\":" #id ",\"needs\":\"" n    \
	"\"}"
#define RELAXED(id, u, n)                                                      \
	"{\"event\":\"relaxed\",\"id\":" #id ",\"ts\":1,\"user\":\"" u         \
	"\",\"queue\":\"q\",\"tier\":0,\"needs\":\"" n                         \
	"\",\"dropped\":\"\",\"lowered\":2,\"position\":1}"

/* One overtake, excused by e (and nothing found). */
static void
assert_excused(const char *const *day, enum csq_audit_excuse e)
{
	struct csq_audit *a = run(day);
	const struct csq_audit_summary *s = csq_audit_summary(a);
	int i;

	assert_none(a);
	for (i = 0; i < CSQ_EXCUSES; i++)
		assert_int_equal(s->excused[i], i == (int)e ? 1 : 0);
	csq_audit_free(a);
}

/*
 * The skills excuse against the record. Genuine: s1 has de:5 and en:2,
 * u1 needs fr, then de:6, then en:3 (a skill missing, a level too low
 * each time). False: s1's skills met u1's needs when it took u2 (at its
 * login; after a HEARTBEAT gave it them; a relax step of u1 lowered its
 * need to what s1 has; a re-ENQUEUE took u1's needs away), each caught
 * with the ids of the arrivals, the placement and the event that said
 * u1's needs in force. How it was broken: the same days with the skill
 * one level short pass, so the check is the level's, not the name's.
 */
static void
test_skills_checked(void **state)
{
	static const char *const missing[] = {
	    UP_SK(1, "s1", "de:5,en:2"), QUEUED_N(2, "u1", "fr"),
	    QUEUED(3, "u2"), MATCHED(4, "u2", "s1"), NULL};
	static const char *const low[] = {
	    UP_SK(1, "s1", "de:5,en:2"), QUEUED_N(2, "u1", "de:6"),
	    QUEUED(3, "u2"), MATCHED(4, "u2", "s1"), NULL};
	static const char *const low2[] = {
	    UP_SK(1, "s1", "de:5,en:2"), QUEUED_N(2, "u1", "de:1,en:3"),
	    QUEUED(3, "u2"), OFFERED(4, "u2", "s1"), NULL};
	static const char *const had[] = {
	    UP_SK(1, "s1", "de:5,en:2"), QUEUED_N(2, "u1", "de:5,en:1"),
	    QUEUED(3, "u2"), MATCHED(4, "u2", "s1"), NULL};
	static const char *const updated[] = {UP(1, "s1"),
	                                      QUEUED_N(2, "u1", "de:3"),
	                                      QUEUED(3, "u2"),
	                                      UPDATED(4, "s1", "de:3"),
	                                      MATCHED(5, "u2", "s1"),
	                                      NULL};
	/* Taken before the relax step: rightly; after it: not. */
	static const char *const before_relax[] = {
	    UP_SK(1, "s1", "de:3"), QUEUED_N(2, "u1", "de:5"), QUEUED(3, "u2"),
	    MATCHED(4, "u2", "s1"), RELAXED(5, "u1", "de:3"),  NULL};
	static const char *const after_relax[] = {
	    UP_SK(1, "s1", "de:3"), QUEUED_N(2, "u1", "de:5"),
	    QUEUED(3, "u2"),        RELAXED(4, "u1", "de:3"),
	    MATCHED(5, "u2", "s1"), NULL};
	/* A re-ENQUEUE with NEEDS "": its rescored has no needs. */
	static const char *const cleared[] = {
	    UP(1, "s1"),
	    QUEUED_N(2, "u1", "fr"),
	    "{\"event\":\"rescored\",\"id\":3,\"ts\":1,\"user\":\"u1\","
	    "\"queue\":\"q\",\"tier\":0,\"position\":1,\"reason\":"
	    "\"enqueue\"}",
	    QUEUED(4, "u2"),
	    MATCHED(5, "u2", "s1"),
	    NULL};
	/* s1 logged in before the record began: its skills unknown. */
	static const char *const unknown[] = {QUEUED_N(1, "u1", "fr"),
	                                      QUEUED(2, "u2"),
	                                      MATCHED(3, "u2", "s1"), NULL};
	struct csq_audit *a;
	const struct csq_audit_finding *f;
	size_t n;

	(void)state;
	assert_excused(missing, CSQ_EXCUSE_SKILLS);
	assert_excused(low, CSQ_EXCUSE_SKILLS);
	assert_excused(low2, CSQ_EXCUSE_SKILLS);
	assert_excused(before_relax, CSQ_EXCUSE_SKILLS);
	assert_excused(unknown, CSQ_EXCUSE_UNRECORDED);

	a = run(had);
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 4, 2, 3, 4, 2);
	f = csq_audit_findings(a, &n);
	assert_non_null(strstr(f[0].text, "skills (event 1) met its needs "
	                                  "(event 2)"));
	assert_int_equal(csq_audit_summary(a)->excused[CSQ_EXCUSE_SKILLS], 0);
	csq_audit_free(a);
	a = run(updated);
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 4, 2, 3, 5, 2);
	f = csq_audit_findings(a, &n);
	assert_non_null(strstr(f[0].text, "skills (event 4)"));
	csq_audit_free(a);
	a = run(after_relax);
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 4, 2, 3, 5, 4);
	csq_audit_free(a);
	/* Without needs any more: an overtake like any other. */
	a = run(cleared);
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 3, 2, 4, 5);
	csq_audit_free(a);
	/* The name of the new excuse. */
	assert_non_null(
	    strstr(csq_audit_excuse_name(CSQ_EXCUSE_UNRECORDED), "skills"));
}

/* At ms ts: u waits in q at position pos, in a window for s of ms
 * (queued with prefer); a servicer's match; a window's end. */
#define QUEUED_AT(id, ts, u, pos)                                              \
	"{\"event\":\"queued\",\"id\":" #id ",\"ts\":" #ts ",\"user\":\"" u    \
	"\",\"queue\":\"q\",\"tier\":0,\"position\":" #pos "}"
#define QUEUED_P(id, ts, u, pos, s, ms)                                        \
	"{\"event\":\"queued\",\"id\":" #id ",\"ts\":" #ts ",\"user\":\"" u    \
	"\",\"queue\":\"q\",\"tier\":0,\"position\":" #pos ",\"prefer\":\"" s  \
	"\",\"prefer_ms\":" #ms "}"
#define MATCHED_AT(id, ts, u, s)                                               \
	"{\"event\":\"matched\",\"id\":" #id ",\"ts\":" #ts ",\"user\":\"" u   \
	"\",\"queue\":\"q\",\"tier\":0,\"servicer\":\"" s "\",\"room\":\"" s   \
	"/0\",\"waited_ms\":0}"
#define PREFER_ENDED(id, ts, u, s, why)                                        \
	"{\"event\":\"prefer_ended\",\"id\":" #id ",\"ts\":" #ts               \
	",\"user\":\"" u "\",\"queue\":\"q\",\"servicer\":\"" s                \
	"\",\"reason\":\"" why "\"}"

/*
 * The preferred-servicer excuse against the record (issue 36): u1 waits
 * in a window for s1 (queued with prefer, 60 s from 1000 ms) and u2, who
 * arrived after, is taken. Genuine: s2 takes u2 while the window is
 * open. Claimed wrongly, each caught with the ids of the arrivals, the
 * match and the event that opened the window: s1 itself takes u2 (u1
 * waited for s1: it comes first); s2 takes u2 after the window ran out
 * (a 5 s window), or after its prefer_ended (s1 logged out). A
 * prefer_ended after the match, later than the window's recorded end,
 * says it was open then (a re-ENQUEUE's PREFER renewed it, which
 * publishes nothing): excused; one for s1 does not excuse s1's own
 * match. The later user's window excuses only when it was for the
 * servicer that took it. How it was broken: before, any queued with
 * prefer excused every overtake of its user, by anyone, at any time.
 */
static void
test_prefer_checked(void **state)
{
	static const char *const genuine[] = {
	    QUEUED_P(1, 1000, "u1", 1, "s1", 60000),
	    QUEUED_AT(2, 2000, "u2", 1), UP(3, "s2"),
	    MATCHED_AT(4, 3000, "u2", "s2"), NULL};
	static const char *const same[] = {
	    QUEUED_P(1, 1000, "u1", 1, "s1", 60000),
	    QUEUED_AT(2, 2000, "u2", 1), UP(3, "s1"),
	    MATCHED_AT(4, 3000, "u2", "s1"), NULL};
	static const char *const ran_out[] = {
	    QUEUED_P(1, 1000, "u1", 1, "s1", 5000), QUEUED_AT(2, 2000, "u2", 1),
	    UP(3, "s2"), MATCHED_AT(4, 6000, "u2", "s2"), NULL};
	static const char *const ended[] = {
	    QUEUED_P(1, 1000, "u1", 1, "s1", 60000),
	    QUEUED_AT(2, 2000, "u2", 1),
	    PREFER_ENDED(3, 3000, "u1", "s1", "logout"),
	    UP(4, "s2"),
	    MATCHED_AT(5, 4000, "u2", "s2"),
	    NULL};
	static const char *const renewed[] = {
	    QUEUED_P(1, 1000, "u1", 1, "s1", 5000),
	    QUEUED_AT(2, 2000, "u2", 1),
	    UP(3, "s2"),
	    MATCHED_AT(4, 9000, "u2", "s2"),
	    PREFER_ENDED(5, 20000, "u1", "s1", "timeout"),
	    NULL};
	static const char *const same_renewed[] = {
	    QUEUED_P(1, 1000, "u1", 1, "s1", 60000),
	    QUEUED_AT(2, 2000, "u2", 1),
	    UP(3, "s1"),
	    MATCHED_AT(4, 3000, "u2", "s1"),
	    PREFER_ENDED(5, 20000, "u1", "s1", "timeout"),
	    NULL};
	static const char *const later_own[] = {
	    QUEUED_AT(1, 1000, "u1", 1),
	    QUEUED_P(2, 2000, "u2", 1, "s1", 60000), UP(3, "s1"),
	    MATCHED_AT(4, 3000, "u2", "s1"), NULL};
	static const char *const later_other[] = {
	    QUEUED_AT(1, 1000, "u1", 1),
	    QUEUED_P(2, 2000, "u2", 1, "s9", 60000), UP(3, "s1"),
	    MATCHED_AT(4, 3000, "u2", "s1"), NULL};
	const struct csq_audit_finding *f;
	struct csq_audit *a;
	size_t n;

	(void)state;
	assert_excused(genuine, CSQ_EXCUSE_PREFER);
	a = run(same);
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 4, 1, 2, 4, 1);
	f = csq_audit_findings(a, &n);
	assert_non_null(strstr(f[0].text, "window (event 1) was for s1"));
	csq_audit_free(a);
	a = run(ran_out);
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 4, 1, 2, 4, 1);
	f = csq_audit_findings(a, &n);
	assert_non_null(strstr(f[0].text, "had closed"));
	csq_audit_free(a);
	a = run(ended);
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 4, 1, 2, 5, 1);
	csq_audit_free(a);
	assert_excused(renewed, CSQ_EXCUSE_PREFER);
	a = run(same_renewed);
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 4, 1, 2, 4, 1);
	csq_audit_free(a);
	assert_excused(later_own, CSQ_EXCUSE_PREFER);
	a = run(later_other);
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 3, 1, 2, 4);
	csq_audit_free(a);
}

/* A matched with from_queue: an overflow's move is excused by name; a
 * re-ENQUEUE's (reason enqueue) is checked as any placement, for it
 * keeps its arrival as its rescored does; a record of a csq before the
 * reason is excused as an overflow, as before (issue 36). */
#define MOVED(id, why)                                                         \
	"{\"event\":\"matched\",\"id\":" #id ",\"ts\":1,\"user\":\"u2\","      \
	"\"queue\":\"q\",\"tier\":0,\"servicer\":\"s1\",\"room\":\"s1/0\","    \
	"\"waited_ms\":0,\"from_queue\":\"p\"" why "}"
#define QUEUED_IN_P(id, u)                                                     \
	"{\"event\":\"queued\",\"id\":" #id ",\"ts\":1,\"user\":\"" u          \
	"\",\"queue\":\"p\",\"tier\":0,\"position\":1}"

static void
test_move_reason(void **state)
{
	static const char *const enqueue[] = {
	    QUEUED(1, "u1"), QUEUED_IN_P(2, "u2"), UP(3, "s1"),
	    MOVED(4, ",\"reason\":\"enqueue\""), NULL};
	static const char *const overflow[] = {
	    QUEUED(1, "u1"), QUEUED_IN_P(2, "u2"), UP(3, "s1"),
	    MOVED(4, ",\"reason\":\"overflow\""), NULL};
	static const char *const older[] = {QUEUED(1, "u1"),
	                                    QUEUED_IN_P(2, "u2"), UP(3, "s1"),
	                                    MOVED(4, ""), NULL};
	struct csq_audit *a = run(enqueue);

	(void)state;
	assert_one(a, CSQ_AUDIT_OVERTAKEN, 3, 1, 2, 4);
	csq_audit_free(a);
	assert_excused(overflow, CSQ_EXCUSE_OVERFLOW);
	assert_excused(older, CSQ_EXCUSE_OVERFLOW);
}

/* The other tiers and queues are not "the same queue and tier". */
static void
test_other_tier_not_overtaken(void **state)
{
	static const char *const day[] = {
	    QUEUED(1, "u1"),
	    "{\"event\":\"queued\",\"id\":2,\"ts\":1,\"user\":\"vip\","
	    "\"queue\":"
	    "\"q\",\"tier\":5,\"position\":1}",
	    UP(3, "s1"),
	    "{\"event\":\"matched\",\"id\":4,\"ts\":1,\"user\":\"vip\","
	    "\"queue\":"
	    "\"q\",\"tier\":5,\"servicer\":\"s1\",\"room\":\"s1/0\","
	    "\"waited_ms\":0}",
	    NULL};
	struct csq_audit *a = run(day);

	(void)state;
	assert_none(a);
	csq_audit_free(a);
}

#define LONG_LINE 40000 /* users waiting in one line */
#define WINDOW_MS 1000  /* the first user's window, for s2 */

/*
 * A line 40,000 users long, each arrival's position checked against it:
 * the audit stays linear in the record. Checking the positions against
 * the windows on record walked the whole line at every arrival, windows
 * or none: 23 s of csq-day audit for this record on a Release build
 * (0.36 s at 10,000, 2.7 s at 20,000), 0.11 s without the walk. The
 * first user's window (1 s) is open for the first thousand arrivals, one
 * a millisecond: those are walked, the rest no longer. Counted, not
 * timed: the users walked past are at most those thousand arrivals'
 * lines (about 500,000; the quadratic walk was 800 million), and some.
 */
static void
test_long_line_linear(void **state)
{
	struct csq_audit *a = csq_audit_new();
	const struct csq_audit_summary *sum;
	size_t n = scale_steps(LONG_LINE, 4000), i;
	struct csq_event ev;

	(void)state;
	for (i = 0; i < n; i++) {
		memset(&ev, 0, sizeof(ev));
		ev.type = CSQ_EV_QUEUED;
		ev.id = i + 1;
		ev.ts_ms = 1000000 + i;
		snprintf(ev.user, sizeof(ev.user), "u%zu", i);
		strcpy(ev.queue, "q");
		ev.position = i + 1;
		ev.eta_ms = -1;
		if (i == 0) {
			strcpy(ev.prefer, "s2");
			ev.prefer_ms = WINDOW_MS;
		}
		csq_audit_event(a, &ev);
	}
	csq_audit_end(a);
	assert_none(a);
	sum = csq_audit_summary(a);
	print_message("%zu arrivals in one line: %llu users walked past\n", n,
	              (unsigned long long)sum->walked);
	assert_int_equal(sum->arrivals, n);
	assert_int_equal(sum->still_waiting, n);
	/* Walked while the window was open, and only then. */
	assert_true(sum->walked >= WINDOW_MS);
	assert_true(sum->walked <= (uint64_t)WINDOW_MS * (WINDOW_MS + 1));
	csq_audit_free(a);
}

/* Lines that parse but lack what the audit needs: a finding each, and
 * nothing else moves (no crash on garbage). */
static void
test_missing_fields(void **state)
{
	static const char *const day[] = {
	    "{\"event\":\"queued\",\"id\":1,\"ts\":1}",
	    "{\"event\":\"matched\",\"id\":2,\"ts\":1,\"user\":\"u\","
	    "\"queue\":\"q\"}",
	    "{\"event\":\"servicer_down\",\"id\":3,\"ts\":1}", NULL};
	struct csq_audit *a = run(day);
	size_t n;

	(void)state;
	csq_audit_findings(a, &n);
	assert_int_equal(n, 3);
	assert_int_equal(csq_audit_summary(a)->findings[CSQ_AUDIT_STRAY], 3);
	assert_int_equal(csq_audit_summary(a)->arrivals, 0);
	csq_audit_free(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fair_day),
	    cmocka_unit_test(test_out_of_order_match),
	    cmocka_unit_test(test_out_of_order_offer),
	    cmocka_unit_test(test_double_offer),
	    cmocka_unit_test(test_room_given_twice),
	    cmocka_unit_test(test_lost_user),
	    cmocka_unit_test(test_lost_in_transfer),
	    cmocka_unit_test(test_gap),
	    cmocka_unit_test(test_excuses_named),
	    cmocka_unit_test(test_skills_checked),
	    cmocka_unit_test(test_other_tier_not_overtaken),
	    cmocka_unit_test(test_prefer_checked),
	    cmocka_unit_test(test_move_reason),
	    cmocka_unit_test(test_long_line_linear),
	    cmocka_unit_test(test_missing_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
