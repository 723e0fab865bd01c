/*
 * What the tests of protocol-v2 sections 4 to 6 share (test_policies.c,
 * test_prefer.c, test_qstats.c, and test_journal.c's restart with
 * policies): the fixture's policies and the polls that wait for a timed
 * rule with a bound, never a fixed sleep that a slow machine could outrun.
 */
#ifndef CSQ_TEST_POLICY_HARNESS_H
#define CSQ_TEST_POLICY_HARNESS_H

#include "harness.h"

#define FULL    "-FULL queue is at its maximum length"
#define RANGE   "-ERR value is not an integer or out of range"
#define SYNTAX  "-ERR syntax error"
#define WAIT_MS 5000

/* The fixture's policies: an overflow, an aging line, a short line, and
 * one that ages before it overflows. */
#define POLICIES                                                               \
	"queues = (\n"                                                         \
	"  { name = \"vip\"; overflow_after = 1; overflow_to = \"general\";\n" \
	"    service_level = 5; },\n"                                          \
	"  { name = \"general\"; aging_every = 1; aging_max_tier = 2; },\n"    \
	"  { name = \"small\"; max_length = 2; strategy = \"least_busy\"; "    \
	"},\n"                                                                 \
	"  { name = \"ag\"; aging_every = 2; aging_max_tier = 3;\n"            \
	"    overflow_after = 3; overflow_to = \"general\"; }\n"               \
	");\n"

/* A fixture daemon with POLICIES (cmocka setup). */
int policy_setup(void **state);
/* Polls WHERE user until field is value; fails after WAIT_MS. */
void where_until_at(const char *file, int line, redisContext *c,
                    const char *user, const char *field, const char *value);
/* The same for an integer field. */
void where_until_int_at(const char *file, int line, redisContext *c,
                        const char *user, const char *field, long long value);
/* A second connection subscribed to channel. */
redisContext *subscriber(struct csqd *d, const char *channel);
/* The payload of the first message of m whose event is ev from user. */
const char *event_of(const struct msgs *m, const char *ev, const char *user);
/* Polls QSTATS queue until its service_level is level. */
void level_until_at(const char *file, int line, redisContext *c,
                    const char *queue, long long level);
/* A configuration file of text in a temporary directory; its path in out. */
void conf_file(char *out, size_t len, const char *text);

#define WHERE_UNTIL(c, u, f, v) where_until_at(__FILE__, __LINE__, c, u, f, v)
#define WHERE_UNTIL_INT(c, u, f, v)                                            \
	where_until_int_at(__FILE__, __LINE__, c, u, f, v)
#define LEVEL_UNTIL(c, q, l) level_until_at(__FILE__, __LINE__, c, q, l)

#endif
