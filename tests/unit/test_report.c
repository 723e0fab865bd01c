/*
 * Reports over a record (lib/report.h) on records written by hand: each
 * figure of a row against what the events say, intervals that split a
 * busy room and a logged-in servicer between them, wrap-up counted as
 * busy, percentiles by nearest rank, per-queue targets, and rows in
 * order; events without what a figure needs change nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "csq.h"
#include "event_parse.h"
#include "report.h"

#define MIN 60000ULL

static struct csq_report *
run(const struct csq_report_config *cfg, const char *const *lines)
{
	struct csq_report *r = csq_report_new(cfg);
	char err[CSQ_PARSE_ERR_MAX];
	struct csq_event ev;

	for (; *lines != NULL; lines++) {
		if (csq_event_parse(*lines, strlen(*lines), &ev, err) !=
		    CSQ_PARSE_OK)
			fail_msg("%s: %s", *lines, err);
		csq_report_event(r, &ev);
	}
	csq_report_end(r);
	return r;
}

static const struct csq_report_row *
row_of(const struct csq_report *r, const char *q, uint64_t start)
{
	const struct csq_report_row *rows;
	size_t n, i;

	rows = csq_report_rows(r, &n);
	for (i = 0; i < n; i++)
		if (strcmp(rows[i].queue, q) == 0 && rows[i].start_ms == start)
			return &rows[i];
	fail_msg("no row %s at %llu", q, (unsigned long long)start);
	return NULL;
}

/* One servicer of 1 room over two 10-minute intervals: at 0 it logs
 * in, u1 arrives at 1 min and is matched at once, u2 arrives at 2 and
 * waits until u1 is released at 8 (wrap-up 1 min), matched at 9 after 7
 * min; u3 arrives at 3 and leaves at 4, u4 arrives at 12 and expires at
 * 19; u2 is released at 14; the servicer logs out at 16. */
static void
test_figures(void **state)
{
	static const char *const day[] = {
	    "{\"event\":\"servicer_up\",\"id\":1,\"ts\":0,\"servicer\":\"s1\","
	    "\"capacity\":1,\"queues\":[\"q\"]}",
	    "{\"event\":\"matched\",\"id\":2,\"ts\":60000,\"user\":\"u1\","
	    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s1\",\"room\":\"s1/0\","
	    "\"waited_ms\":0}",
	    "{\"event\":\"queued\",\"id\":3,\"ts\":120000,\"user\":\"u2\","
	    "\"queue\":\"q\",\"tier\":0,\"position\":1}",
	    "{\"event\":\"queued\",\"id\":4,\"ts\":180000,\"user\":\"u3\","
	    "\"queue\":\"q\",\"tier\":0,\"position\":2}",
	    "{\"event\":\"left\",\"id\":5,\"ts\":240000,\"user\":\"u3\","
	    "\"queue\":\"q\",\"reason\":\"leave\"}",
	    "{\"event\":\"released\",\"id\":6,\"ts\":480000,\"user\":\"u1\","
	    "\"queue\":\"q\",\"servicer\":\"s1\",\"room\":\"s1/0\",\"by\":"
	    "\"servicer\"}",
	    "{\"event\":\"wrapup\",\"id\":7,\"ts\":480000,\"servicer\":\"s1\","
	    "\"room\":\"s1/0\",\"until_ms\":540000}",
	    "{\"event\":\"ready\",\"id\":8,\"ts\":540000,\"servicer\":\"s1\","
	    "\"room\":\"s1/0\"}",
	    "{\"event\":\"matched\",\"id\":9,\"ts\":540000,\"user\":\"u2\","
	    "\"queue\":\"q\",\"tier\":0,\"servicer\":\"s1\",\"room\":\"s1/0\","
	    "\"waited_ms\":420000}",
	    "{\"event\":\"queued\",\"id\":10,\"ts\":720000,\"user\":\"u4\","
	    "\"queue\":\"q\",\"tier\":0,\"position\":1}",
	    "{\"event\":\"released\",\"id\":11,\"ts\":840000,\"user\":\"u2\","
	    "\"queue\":\"q\",\"servicer\":\"s1\",\"room\":\"s1/0\",\"by\":"
	    "\"user\"}",
	    "{\"event\":\"servicer_down\",\"id\":12,\"ts\":960000,"
	    "\"servicer\":\"s1\",\"reason\":\"logout\"}",
	    "{\"event\":\"left\",\"id\":13,\"ts\":1140000,\"user\":\"u4\","
	    "\"queue\":\"q\",\"reason\":\"timeout\"}",
	    NULL};
	struct csq_report_config cfg = {.interval_ms = 10 * MIN};
	struct csq_report *r = run(&cfg, day);
	const struct csq_report_row *a = row_of(r, "q", 0);
	const struct csq_report_row *b = row_of(r, "q", 10 * MIN);
	const struct csq_report_row *all = row_of(r, "", 0);
	const struct csq_report_row *all2 = row_of(r, "", 10 * MIN);
	size_t n;

	(void)state;
	csq_report_rows(r, &n);
	assert_int_equal(n, 4);
	assert_int_equal(a->arrivals, 3);
	assert_int_equal(a->matched, 2);
	assert_int_equal(a->abandoned, 1);
	assert_int_equal(a->within, 1);
	assert_int_equal(a->target_s, 20);
	/* 1 within of 2 matched + 1 abandoned */
	assert_true(a->service_level > 0.333 && a->service_level < 0.334);
	assert_int_equal(a->wait_p50_ms, 0);
	assert_int_equal(a->wait_p90_ms, 420000);
	assert_int_equal(a->wait_max_ms, 420000);
	assert_int_equal(a->handled, 1);
	assert_int_equal(a->handle_sum_ms, 7 * MIN);
	assert_int_equal(b->arrivals, 1);
	assert_int_equal(b->expired, 1);
	assert_int_equal(b->handled, 1);
	assert_int_equal(b->handle_sum_ms, 5 * MIN);
	assert_true(b->service_level == 0);
	assert_true(a->occupancy < 0); /* only the "all" rows */
	/* Busy 1-8 (talk), 8-9 (wrap-up), 9-10: 9 of 10 logged-in min;
	 * then 10-14 busy of 10-16 logged in: 4 of 6. */
	assert_true(all->occupancy > 0.899 && all->occupancy < 0.901);
	assert_true(all2->occupancy > 0.666 && all2->occupancy < 0.667);
	assert_int_equal(all->arrivals, 3);
	csq_report_free(r);
}

static void
test_targets_and_order(void **state)
{
	static const char *const day[] = {
	    "{\"event\":\"matched\",\"id\":1,\"ts\":3600000,\"user\":\"u1\","
	    "\"queue\":\"b\",\"tier\":0,\"servicer\":\"s1\",\"room\":\"s1/0\","
	    "\"waited_ms\":45000}",
	    "{\"event\":\"matched\",\"id\":2,\"ts\":10,\"user\":\"u2\","
	    "\"queue\":\"a\",\"tier\":0,\"servicer\":\"s2\",\"room\":\"s2/3\","
	    "\"waited_ms\":45000}",
	    "{\"event\":\"queued\",\"id\":3,\"ts\":20,\"queue\":\"a\"}", NULL};
	struct csq_report_config cfg = {.interval_ms = 3600000,
	                                .default_target_s = 30,
	                                .targets = {{"b", 60}},
	                                .ntargets = 1};
	struct csq_report *r = run(&cfg, day);
	const struct csq_report_row *rows;
	size_t n;

	(void)state;
	rows = csq_report_rows(r, &n);
	assert_int_equal(n, 4);
	assert_string_equal(rows[0].queue, "a");
	assert_string_equal(rows[1].queue, "");
	assert_string_equal(rows[2].queue, "b");
	assert_int_equal(rows[0].target_s, 30);
	assert_int_equal(rows[0].within, 0);
	assert_int_equal(rows[2].target_s, 60);
	assert_int_equal(rows[2].within, 1);
	/* The queued line without a user counted nothing. */
	assert_int_equal(rows[0].arrivals, 1);
	/* A servicer the record never showed logging in: from its first
	 * room on, with rooms enough (s2/3: 4 rooms). */
	assert_true(rows[1].occupancy > 0.249 && rows[1].occupancy < 0.251);
	csq_report_free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_figures),
	    cmocka_unit_test(test_targets_and_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
