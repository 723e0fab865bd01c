/*
 * The HTTP API's operations against the table of operations (lib/op.h):
 * every operation the API serves is a command of the table with an id
 * first (its rows are keyed by the table's opcodes, so one the table
 * lacks does not build), and its positional fields are the words the
 * table's arity counts, with options only where the arity is "at
 * least". What requests do is tests/integration/test_http_api.py's.
 * How it was broken to see it fail: an option on QLEN (its arity is
 * exact), EXPIRE served (no command, no id); each named its operation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "http_api.h"

static void
test_fits_the_table(void **state)
{
	char why[160] = "";

	(void)state;
	if (http_api_check(why, sizeof(why)) != 0)
		fail_msg("%s", why);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fits_the_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
