/*
 * The fairness audit (lib/audit.h) over a record of the day written by a
 * csqd under test: a test that runs csqd with record.path checks that
 * what csqd did was fair, on top of what it checks itself.
 */
#ifndef CSQ_TEST_RECORD_AUDIT_H
#define CSQ_TEST_RECORD_AUDIT_H

/*
 * Audits the files (a record and its rotated parts, in order; NULL ends
 * the list), prints every finding and the summary to stderr, and fails
 * the test on a finding or a line that is not an event. Returns the
 * number of events read.
 */
unsigned long long record_audit_at(const char *file, int line, const char *path,
                                   ...);
#define record_audit(...) record_audit_at(__FILE__, __LINE__, __VA_ARGS__)

#endif
