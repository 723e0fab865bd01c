/*
 * How long the unit tests' bulk and randomized loops run. The sanitized
 * suite runs them in full. Under valgrind (tests/valgrind/test_valgrind.sh)
 * a step costs 20 to 50 times as much, and $CSQ_TEST_SCALE divides them:
 * memcheck looks for reads of uninitialised or unowned bytes in the code a
 * step runs, and a tenth of the steps runs the same code. A count that a
 * check depends on (a dict's 16,384 buckets, a key space) is never scaled,
 * and a loop keeps the floor it is given: enough steps for what the test
 * says it saw.
 */
#ifndef CSQ_TEST_SCALE_H
#define CSQ_TEST_SCALE_H

#include <stddef.h>
#include <stdlib.h>

#define SCALE_ENV "CSQ_TEST_SCALE"
#define SCALE_MAX 1000 /* a larger divisor is a typo */

/* The divisor: $CSQ_TEST_SCALE, or 1 when it is unset or not 1 to 1000. */
static inline size_t
scale_divisor(void)
{
	const char *e = getenv(SCALE_ENV);
	char *end;
	long d;

	if (e == NULL || *e == '\0')
		return 1;
	d = strtol(e, &end, 10);
	return *end == '\0' && d >= 1 && d <= SCALE_MAX ? (size_t)d : 1;
}

/* n steps, divided by the divisor, and at least floor. */
static inline size_t
scale_steps(size_t n, size_t floor)
{
	size_t s = n / scale_divisor();

	return s < floor ? floor : s;
}

#endif
