#!/bin/sh
# scripts/bench-latency (issue 34's latency rows) refuses what it cannot
# run, before it builds or starts anything: each bad argument exits 2 with
# a word of what is wrong. Its runs themselves are the lead's, on a quiet
# machine (docs/benchmarks.md); a timed run here would measure nothing.
# Usage: bench_latency.sh <source dir>. Exit 77 (skip) without bash.
set -u

SRC=${1:?usage: bench_latency.sh <source dir>}
# shellcheck source=script_test.sh
. "$SRC/tests/integration/script_test.sh"
script_test_need bash
script_test_tmp bench-latency

# How it was broken: zero, negative, over the range, not a number, empty,
# unknown, a --csqd-b that is no program, and a --conf-b with no line in
# it. Each with the words its refusal must carry. (A --conf-b that csqd
# refuses is csqd -n's to find, once csqd is built: bench-latency says so
# and exits 2 before anything starts.)
check() {
	want=$1
	shift
	bash "$SRC/scripts/bench-latency" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "bench-latency $* exited $rc, not 2"
	grep -q -- "$want" "$tmp/err" || fail "bench-latency $*: no word of $want"
	[ ! -d "$SRC/build-bench" ] || [ "$(find "$SRC/build-bench" -newer "$tmp/out" | head -1)" = "" ] ||
		fail "bench-latency $*: built something"
}
check "--rounds: 1 or more" --rounds 0 --no-build
check "whole numbers" --rounds -1 --no-build
check "whole numbers" --rounds x --no-build
check "--seconds: 1 to 3600" --seconds 0 --no-build
check "--seconds: 1 to 3600" --seconds 3601 --no-build
check "--servicers: no row" --servicers " " --no-build
check "--servicers: 0 is not" --servicers "1 0" --no-build
check "--servicers: 1000001 is not" --servicers 1000001 --no-build
check "whole numbers" --servicers "1,10" --no-build
check "unknown argument: --bogus" --bogus
check "is not an executable" --csqd-b "$tmp/none" --no-build
check "--conf-b: no configuration line" --conf-b "" --no-build
check "--conf-b: no configuration line" --conf-b " 	" --no-build
bash "$SRC/scripts/bench-latency" --help >"$tmp/out" 2>"$tmp/err" ||
	fail "--help exited $?"
grep -q -- "--csqd-b PATH" "$tmp/err" || fail "--help: no word of --csqd-b"
grep -q -- "--conf-b TEXT" "$tmp/err" || fail "--help: no word of --conf-b"
echo "bench-latency: ok"
