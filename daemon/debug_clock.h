/*
 * The test clock (tests only): DEBUG CLOCK <ms> sets the time that csqd
 * and both engines run at, so that a test can let time pass at will and
 * two daemons see the same times. Compiled in only with CSQ_TEST_CLOCK
 * (CMake's option of that name, on by default in a Debug build with the
 * tests, off in every other build): a release csqd has no such command,
 * and its time is the system's and Redis's. docs/protocol.md, "DEBUG
 * CLOCK".
 */
#ifndef CSQD_DEBUG_CLOCK_H
#define CSQD_DEBUG_CLOCK_H

#ifdef CSQ_TEST_CLOCK

#include <stdint.h>

struct client;
struct resp_request;

/* The test clock in ms since the epoch; 0 while no test has set it. */
uint64_t debug_clock_ms(void);
/* DEBUG CLOCK <ms>: the clock goes to ms (never back), then every
 * deadline passed is acted on before the reply. */
void cmd_debug(struct client *, const struct resp_request *);

#endif
#endif
