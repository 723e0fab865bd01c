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

#endif
