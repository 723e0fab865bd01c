#!/bin/sh
# scripts/bench-direct, issue 34's direct row (CSQ.ENQUEUE against ZADD on
# one redis-server), run as the lead runs it but for one round of 2,000
# requests a run on this build's csq.so: its figures mean nothing here; its
# runs, its checks (every user in line) and its summary must come out, and
# it must refuse what it cannot run.
# Usage: bench_direct.sh <source dir> <csq.so>. Exit 77 (skip) without
# redis-server, redis-cli, redis-benchmark or bash.
set -u

SRC=${1:?usage: bench_direct.sh <source dir> <csq.so>}
SO=${2:?usage: bench_direct.sh <source dir> <csq.so>}
for t in bash redis-server redis-cli redis-benchmark python3; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "$t not found: skipped"
		exit 77
	fi
done
tmp=$(mktemp -d /tmp/csq-bench-direct-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*"
	cat "$tmp/out" "$tmp/err" 2>/dev/null
	exit 1
}

# How it was broken: arguments it cannot use are refused before any
# redis-server starts (2), and a csq.so that is not there (1).
for bad in "--rounds 0" "--rounds x" "--requests 10" "--requests 100001" "--bogus"; do
	# shellcheck disable=SC2086 # the words of $bad are the arguments
	bash "$SRC/scripts/bench-direct" $bad --module "$SO" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "bench-direct $bad exited $rc, not 2"
done
bash "$SRC/scripts/bench-direct" --rounds 1 --module "$tmp/none.so" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "bench-direct with no csq.so exited $rc, not 1"
grep -q 'none.so is missing' "$tmp/err" || fail "no csq.so: no word of it"

# Two csq.so (the same one twice, as a before and an after): a
# redis-server each, both in each round.
bash "$SRC/scripts/bench-direct" --rounds 1 --requests 2000 --module "$SO" \
	--module "$SO" >"$tmp/out" 2>"$tmp/err" || fail "bench-direct exited $?"
for so in 0 1; do
	grep -q "^so=$so $SO\$" "$tmp/out" || fail "no line naming csq.so $so"
	for p in 16 1; do
		# Each run answered and all its users in line (qlen counts
		# them: 2,000 random users, a few the same by chance).
		line=$(grep "^round 1 P=$p so=$so zadd_rps=[0-9.]* enqueue_rps=[0-9.]* zadd_ticks=[0-9]* enqueue_ticks=[0-9]* zadd_usec=[0-9.]* enqueue_usec=[0-9.]* qlen=[0-9]*\$" "$tmp/out") ||
			fail "no round line at P=$p for csq.so $so"
		qlen=${line##*qlen=}
		[ "$qlen" -ge 1800 ] && [ "$qlen" -le 2000 ] ||
			fail "P=$p, csq.so $so: qlen $qlen of 2000"
		grep -Eq "^so=$so P=$p: CSQ.ENQUEUE / ZADD, medians of 1 rounds: rate [0-9.]+ .*(PASS|MISS); cpu .*; usec [0-9.]+ " "$tmp/out" ||
			fail "no summary at P=$p for csq.so $so"
	done
done
grep -q '^bench-direct: 1 rounds of 2000 requests a run, 50 clients; load average: ' "$tmp/out" ||
	fail "no head line with the load average"
grep -q '^load average after: ' "$tmp/out" || fail "no load average after"
echo "bench-direct: ok"
