#!/bin/sh
#
# The unit tests under valgrind. The suite's own build has AddressSanitizer,
# which valgrind cannot run beside, and ASan misses what valgrind sees in a
# plain build (an uninitialised read, a read past a key that was never
# NUL-terminated but happens to be followed by one in ASan's redzone). So
# this builds the unit tests once more, plain Debug, in its own tree under
# the suite's build directory, and runs each under memcheck: any error
# or leak fails.
#
# Usage: test_valgrind.sh SOURCE_DIR BUILD_DIR
# Exits 77 (skipped, where skips are allowed) when valgrind is missing.

set -eu

src=$1
build=$2/valgrind

if ! command -v valgrind >/dev/null 2>&1; then
	echo "test_valgrind: valgrind is not installed" >&2
	exit 77
fi

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCSQ_SANITIZE=OFF \
	-DCSQ_TESTS=ON -DCSQ_BENCH=OFF -DCSQ_IT_REDIS=OFF >/dev/null
# The unit tests only (and what they link): the integration programs and
# the daemon are the sanitized suite's.
targets=$(cd "$src/tests/unit" && ls test_*.c | sed 's/\.c$//')
# shellcheck disable=SC2086 # one word per target, on purpose
cmake --build "$build" -j"$(nproc)" --target $targets >/dev/null

# The long loops a tenth as long (tests/unit/scale.h): each step costs 20 to
# 50 times as much under memcheck, which looks for bad reads in the code a
# step runs, and the first tenth of the steps runs that code too. The
# sanitized suite runs them in full.
export CSQ_TEST_SCALE=10

failed=0
for t in $targets; do
	# --error-exitcode: a memcheck error fails the test even when the
	# program's own checks pass; definite and indirect leaks count as
	# errors (--errors-for-leak-kinds), reachable ones do not.
	if valgrind --quiet --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect \
		"$build/tests/$t" >"$build/$t.log" 2>&1; then
		echo "ok: $t"
	else
		echo "FAILED: $t (valgrind exit $?)"
		cat "$build/$t.log"
		failed=1
	fi
done
exit $failed
