/*
 * csq-day report's three forms of lib/report.h's rows: a text table for a
 * terminal, CSV for a spreadsheet, and a self-contained HTML page with a
 * chart per queue (inline SVG, no script, no fetch).
 */
#ifndef CSQD_DAY_REPORT_H
#define CSQD_DAY_REPORT_H

#include <stdio.h>

#include "report.h"

void day_report_table(FILE *, const struct csq_report_row *, size_t n);
void day_report_csv(FILE *, const struct csq_report_row *, size_t n);
void day_report_html(FILE *, const struct csq_report_row *, size_t n,
                     uint64_t interval_ms);

/*
 * Reports of several runs of one record side by side (csq-day replay:
 * what happened, or the replay under the record's configuration, beside
 * the what-if), each under its label ([A-Za-z-], no escaping): the table
 * pairs each figure of a queue and interval; the CSV has a leading run
 * column; the page has each run's charts side by side and the table with
 * a run column.
 */
struct day_run {
	const char *label;
	const struct csq_report_row *rows;
	size_t n;
};
#define DAY_RUNS_MAX 2

void day_report_table_runs(FILE *, const struct day_run *, int nruns);
void day_report_csv_runs(FILE *, const struct day_run *, int nruns);
void day_report_html_runs(FILE *, const struct day_run *, int nruns,
                          uint64_t interval_ms);

#endif
