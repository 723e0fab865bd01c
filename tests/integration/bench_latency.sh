#!/bin/sh
# scripts/bench-latency (issue 34's latency rows) refuses what it cannot
# run, before it builds or starts anything: each bad argument exits 2 with
# a word of what is wrong. Its runs themselves are the lead's, on a quiet
# machine (docs/benchmarks.md); a timed run here would measure nothing.
# Given a build directory (with csqd, csq.so, csq-bench and csq-fwd), it
# also runs two short rounds of one row there with --bench-b (that build's
# csq-bench as b): their figures mean nothing, their lines must come out.
# Usage: bench_latency.sh <source dir> [<build dir>]. Exit 77 (skip)
# without bash, or, given a build directory, without redis-server,
# redis-cli or python3.
set -u

SRC=${1:?usage: bench_latency.sh <source dir> [<build dir>]}
BIN=${2-}
# shellcheck source=script_test.sh
. "$SRC/tests/integration/script_test.sh"
script_test_need bash
[ -z "$BIN" ] || script_test_need redis-server redis-cli python3
script_test_tmp bench-latency

# How it was broken: zero, negative, over the range, not a number, empty,
# unknown, a --csqd-b or --bench-b that is no program (missing, or a
# directory), a --bin that is no directory, and a --conf-b with no line in
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
check "--csqd-b: $tmp is not an executable" --csqd-b "$tmp" --no-build
check "--bench-b: $tmp/none is not an executable" --bench-b "$tmp/none" --no-build
check "--bench-b: $tmp is not an executable" --bench-b "$tmp" --no-build
: >"$tmp/plain"
check "--bench-b: $tmp/plain is not an executable" --bench-b "$tmp/plain" --no-build
check "--bin: $tmp/none is not a directory" --bin "$tmp/none"
check "--conf-b: no configuration line" --conf-b "" --no-build
check "--conf-b: no configuration line" --conf-b " 	" --no-build
bash "$SRC/scripts/bench-latency" --help >"$tmp/out" 2>"$tmp/err" ||
	fail "--help exited $?"
grep -q -- "--csqd-b PATH" "$tmp/err" || fail "--help: no word of --csqd-b"
grep -q -- "--conf-b TEXT" "$tmp/err" || fail "--help: no word of --conf-b"
grep -q -- "--bench-b PATH" "$tmp/err" || fail "--help: no word of --bench-b"
grep -q -- "--bin DIR" "$tmp/err" || fail "--help: no word of --bin"
[ -n "$BIN" ] || { echo "bench-latency: ok (refusals only)"; exit 0; }

# Two rounds (b after a in the first, before it in the second) of the
# 1-servicer row, with the build's csq-bench as b too: every round line
# with both builds' fields, each one's summary.
bash "$SRC/scripts/bench-latency" --bin "$BIN" --rounds 2 --seconds 1 \
	--servicers 1 --bench-b "$BIN/bench/csq-bench" >"$tmp/out" 2>"$tmp/err" ||
	fail "bench-latency --bench-b exited $?"
grep -q "^bench-latency: csq-bench a: $BIN/bench/csq-bench, csq-bench b: $BIN/bench/csq-bench\$" "$tmp/out" ||
	fail "no line naming the two csq-bench"
for r in 1 2; do
	grep -Eq "^round $r n=1 ping_p99_us=[0-9.]+ fwd_p99_us=[0-9.]+ match_p50_us=[0-9.]+ match_p99_us=[0-9.]+ bench_cpu_us=[0-9.]+ pingb_p99_us=[0-9.]+ benchb_match_p50_us=[0-9.]+ benchb_match_p99_us=[0-9.]+ benchb_cpu_us=[0-9.]+ load=[0-9.]+\$" "$tmp/out" ||
		fail "no round line $r with both csq-bench's fields"
done
grep -Eq '^match p99 \(redis, 1 servicer\(s\)\) / PING p99 \(1\): median [0-9.]+ ' "$tmp/out" ||
	fail "no summary of the row"
grep -Eq "^  csq-bench's CPU a match: median [0-9.]+ us; rounds: [0-9.]+ [0-9.]+\$" "$tmp/out" ||
	fail "no CPU a match of csq-bench a"
grep -Eq '^  csq-bench b: match p99 / its PING p99: median [0-9.]+ \([0-2] of 2 rounds <= 3.0\); b / a by round: match p99 median [0-9.]+ .*CPU a match: a [0-9.]+ us, b [0-9.]+ us' "$tmp/out" ||
	fail "no summary of csq-bench b"
for l in "b: match / PING:" "b / a, match p99:" "b / a, PING p99:" "b's CPU a match:"; do
	grep -Eq "^  rounds, $l +[0-9.]+ [0-9.]+\$" "$tmp/out" || fail "no rounds of '$l'"
done
echo "bench-latency: ok"
