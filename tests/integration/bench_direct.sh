#!/bin/sh
# scripts/bench-direct, issue 34's direct row (CSQ.ENQUEUE against ZADD on
# one redis-server) and its bound (csq-shape.so's SHP.ENQUEUE), run as the
# lead runs it but for two rounds of 2,000 requests a run on this build's
# csq.so: its figures mean nothing here; its runs, their order (swapped
# in the second round), its checks (every user in line, every
# SHP.ENQUEUE counted) and its summaries must come out, and it must
# refuse what it cannot run.
# Usage: bench_direct.sh <source dir> <csq.so> <csq-shape.so>. Exit 77
# (skip) without redis-server, redis-cli, redis-benchmark or bash.
set -u

USAGE="usage: bench_direct.sh <source dir> <csq.so> <csq-shape.so>"
SRC=${1:?$USAGE}
SO=${2:?$USAGE}
SHAPE=${3:?$USAGE}
# shellcheck source=script_test.sh
. "$SRC/tests/integration/script_test.sh"
script_test_need bash redis-server redis-cli redis-benchmark python3
script_test_tmp bench-direct

# How it was broken: arguments it cannot use are refused before any
# redis-server starts (2), and a csq.so that is not there (1).
for bad in "--rounds 0" "--rounds x" "--requests 10" "--requests 100001" "--bogus"; do
	# shellcheck disable=SC2086 # the words of $bad are the arguments
	bash "$SRC/scripts/bench-direct" $bad --module "$SO" --shape "$SHAPE" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "bench-direct $bad exited $rc, not 2"
done
bash "$SRC/scripts/bench-direct" --rounds 1 --module "$tmp/none.so" --shape "$SHAPE" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "bench-direct with no csq.so exited $rc, not 1"
grep -q 'none.so is missing' "$tmp/err" || fail "no csq.so: no word of it"
bash "$SRC/scripts/bench-direct" --rounds 1 --module "$SO" --shape "$tmp/noshape.so" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "bench-direct with no csq-shape.so exited $rc, not 1"
grep -q 'noshape.so is missing' "$tmp/err" || fail "no csq-shape.so: no word of it"

# Two csq.so (the same one twice, as a before and an after): a
# redis-server each, both in each round, each with csq-shape.so.
bash "$SRC/scripts/bench-direct" --rounds 2 --requests 2000 --module "$SO" \
	--module "$SO" --shape "$SHAPE" >"$tmp/out" 2>"$tmp/err" || fail "bench-direct exited $?"
grep -q "^so=shape $SHAPE\$" "$tmp/out" || fail "no line naming csq-shape.so"
for so in 0 1; do
	grep -q "^so=$so $SO\$" "$tmp/out" || fail "no line naming csq.so $so"
	for p in 16 1; do
		for r in 1 2; do
			# Each run answered and all its users in line (qlen
			# counts them: 2,000 random users, a few the same by
			# chance), every SHP.ENQUEUE counted; the fields the
			# lead's notes quote first, as they were.
			line=$(grep "^round $r P=$p so=$so zadd_rps=[0-9.]* enqueue_rps=[0-9.]* zadd_ticks=[0-9]* enqueue_ticks=[0-9]* zadd_usec=[0-9.]* enqueue_usec=[0-9.]* qlen=[0-9]* zadd_ns=[0-9]* enqueue_ns=[0-9]* shape_rps=[0-9.]* shape_ticks=[0-9]* shape_usec=[0-9.]* shape_ns=[0-9]* shape_calls=2000 order=[zes]*\$" "$tmp/out") ||
				fail "no round line at round $r, P=$p for csq.so $so"
			qlen=${line##*qlen=}
			qlen=${qlen%% *}
			[ "$qlen" -ge 1800 ] && [ "$qlen" -le 2000 ] ||
				fail "round $r, P=$p, csq.so $so: qlen $qlen of 2000"
			# The order swaps: ZADD first, then ZADD last.
			want=zes
			[ "$r" -eq 2 ] && want=sez
			[ "${line##*order=}" = "$want" ] ||
				fail "round $r, P=$p, csq.so $so: order ${line##*order=}, not $want"
		done
		grep -Eq "^so=$so P=$p: CSQ.ENQUEUE / ZADD, medians of 2 rounds: rate [0-9.]+ .*(PASS|MISS); cpu .*; usec [0-9.]+ .*; ns [0-9.]+ " "$tmp/out" ||
			fail "no summary at P=$p for csq.so $so"
		grep -Eq "^so=$so P=$p: bound: a module command of CSQ.ENQUEUE's shape / ZADD, medians of 2 rounds: rate [0-9.]+ .*(PASS|MISS); cpu .*; usec [0-9.]+ .*; ns [0-9.]+ " "$tmp/out" ||
			fail "no bound at P=$p for csq.so $so"
	done
done
# The servers' order swaps too: so=0 first in round 1, so=1 in round 2.
[ "$(grep '^round 1 P=16 ' "$tmp/out" | head -n 1 | cut -d' ' -f4)" = so=0 ] ||
	fail "round 1 did not start with so=0"
[ "$(grep '^round 2 P=16 ' "$tmp/out" | head -n 1 | cut -d' ' -f4)" = so=1 ] ||
	fail "round 2 did not start with so=1"
grep -q '^bench-direct: 2 rounds of 2000 requests a run, 50 clients; load average: ' "$tmp/out" ||
	fail "no head line with the load average"
grep -q '^load average after: ' "$tmp/out" || fail "no load average after"

# How csq-shape.so was broken, on a redis-server of its own: each bad
# call an error that changes nothing, and the server still answers.
port=$(bash -c '. "$1/scripts/lib.sh" && csq_free_port' _ "$SRC") || fail "no free port"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
	--loadmodule "$SHAPE" >"$tmp/redis.log" 2>&1 &
rpid=$!
trap 'kill $rpid 2>/dev/null; rm -rf "$tmp"' EXIT
i=0
until [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ]; do
	i=$((i + 1))
	[ "$i" -lt 200 ] && kill -0 "$rpid" 2>/dev/null ||
		fail "redis-server with csq-shape.so did not start: $(tail -n 3 "$tmp/redis.log")"
	sleep 0.05
done
r() { redis-cli -p "$port" "$@" 2>&1; }
expect() { # expect <pattern> <words>...: the reply matches the pattern
	want=$1
	shift
	got=$(r "$@")
	# shellcheck disable=SC2254 # want is a pattern on purpose
	case $got in $want) ;; *) fail "$*: '$got', not '$want'" ;; esac
}
long=$(printf '%0513d' 0)
expect '*wrong number of arguments*' SHP.ENQUEUE k
expect '*wrong number of arguments*' SHP.APPLY k 1
expect 'ERR bad user*' SHP.ENQUEUE k ''
expect 'ERR bad user*' SHP.ENQUEUE k "$long"
expect 'ERR bad record*' SHP.APPLY k 1 short
expect 0 EXISTS k
r SET s x >/dev/null
expect 'WRONGTYPE*' SHP.ENQUEUE s u1
expect 'WRONGTYPE*' SHP.APPLY s 1 12345678
expect x GET s
# The count: each call's position, and SHP.APPLY's record sets it.
[ "$(r SHP.ENQUEUE k u1 | sed -n 6p)" = 1 ] || fail "first SHP.ENQUEUE not at 1"
expect 'WRONGTYPE*' GET k
printf '\007\000\000\000\000\000\000\000' | redis-cli -p "$port" -x SHP.APPLY k 1 >/dev/null
[ "$(r SHP.ENQUEUE k u1 | sed -n 6p)" = 8 ] || fail "SHP.APPLY did not set the count to 7"
# A key whose hash tag is longer than the channel's room.
[ "$(r SHP.ENQUEUE "{$(printf '%03000d' 0)}" u1 | sed -n 6p)" = 1 ] ||
	fail "a 3,000-byte hash tag"
expect PONG PING
echo "bench-direct: ok"
