#!/bin/sh
# scripts/bench-calls (issue 34's CPU-per-match row, replayed), run as the
# lead runs it but for a 1 s capture and one replay a round on this
# build's csq.so, csqd and csq-bench: its figures mean nothing here; its
# capture (as many CSQ.CALLs as redis-server counted, matches), its
# replays (every reply and no error), its summary, its saved capture
# replayed again, and its refusals must come out.
# Usage: bench_calls.sh <source dir> <build dir> <csq.so>. Exit 77 (skip)
# without redis-server, redis-cli, python3 or bash.
set -u

SRC=${1:?usage: bench_calls.sh <source dir> <build dir> <csq.so>}
BIN=${2:?usage: bench_calls.sh <source dir> <build dir> <csq.so>}
SO=${3:?usage: bench_calls.sh <source dir> <build dir> <csq.so>}
# shellcheck source=script_test.sh
. "$SRC/tests/integration/script_test.sh"
script_test_need bash redis-server redis-cli python3
script_test_tmp bench-calls

# How it was broken: arguments it cannot use are refused before anything
# starts (2); a csq.so or a saved capture that is not there (1).
for bad in "--rounds 0" "--rounds x" "--replays 0" "--replays 101" \
	"--seconds 0" "--seconds 31" "--servicers 0" "--servicers 1001" \
	"--servicers x" "--save $tmp/a --calls $tmp/b" "--bogus"; do
	# shellcheck disable=SC2086 # the words of $bad are the arguments
	bash "$SRC/scripts/bench-calls" $bad --no-build --bin "$BIN" \
		--module "$SO" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "bench-calls $bad exited $rc, not 2"
done
bash "$SRC/scripts/bench-calls" --rounds 1 --no-build --bin "$BIN" \
	--module "$tmp/none.so" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "bench-calls with no csq.so exited $rc, not 1"
grep -q 'none.so is missing' "$tmp/err" || fail "no csq.so: no word of it"
bash "$SRC/scripts/bench-calls" --rounds 1 --no-build --calls "$tmp/none" \
	--module "$SO" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "bench-calls with no saved capture exited $rc, not 1"

# Two csq.so (the same one twice, as a before and an after): each
# replays the capture (of 2 servicers), which is saved.
bash "$SRC/scripts/bench-calls" --rounds 1 --replays 1 --seconds 1 \
	--servicers 2 --no-build --bin "$BIN" --module "$SO" --module "$SO" \
	--save "$tmp/calls" >"$tmp/out" 2>"$tmp/err" || fail "bench-calls exited $?"
grep -q '^bench-calls: capturing csq-bench match --servicers 2 -d 1; load average: ' "$tmp/out" ||
	fail "no head line with the load average"
line=$(grep -E '^capture: [0-9]+ matches, [0-9]+ commands \([0-9]+ CSQ.CALL, [0-9.]+ a match\), [0-9]+ bytes$' "$tmp/out") ||
	fail "no capture line"
matches=$(echo "$line" | sed 's/^capture: \([0-9]*\) .*/\1/')
[ "$matches" -gt 0 ] || fail "no matches captured"
read -r m c k <"$tmp/calls.count" || fail "no saved count"
if [ "$m" != "$matches" ] || [ "$c" -lt "$k" ] || [ "$k" -le 0 ]; then
	fail "saved count '$m $c $k' against the capture line '$line'"
fi
[ -s "$tmp/calls" ] || fail "no saved capture"
for so in 0 1; do
	grep -q "^so=$so $SO\$" "$tmp/out" || fail "no line naming csq.so $so"
	grep -Eq "^round 1 so=$so replays=1 ticks=[0-9]+ us_per_match=[0-9.]+ load=[0-9.]+\$" "$tmp/out" ||
		fail "no round line for csq.so $so"
done
grep -Eq '^so=0: medians of 1 rounds: us_per_match [0-9.]+$' "$tmp/out" ||
	fail "no summary for csq.so 0"
grep -Eq '^so=1: medians of 1 rounds: us_per_match [0-9.]+; over so=0: us ' "$tmp/out" ||
	fail "no summary for csq.so 1 against 0"
grep -q '^load average after: ' "$tmp/out" || fail "no load average after"

# The saved capture, replayed again: no csqd, no csq-bench.
bash "$SRC/scripts/bench-calls" --rounds 1 --replays 1 --calls "$tmp/calls" \
	--no-build --bin "$tmp/nothing-here" --module "$SO" >"$tmp/out" 2>"$tmp/err" ||
	fail "bench-calls --calls exited $?"
grep -q "^bench-calls: the capture $tmp/calls; load average: " "$tmp/out" ||
	fail "no head line naming the saved capture"
grep -Eq "^capture: $matches matches, " "$tmp/out" || fail "the saved capture's matches differ"
grep -Eq '^so=0: medians of 1 rounds: us_per_match [0-9.]+$' "$tmp/out" ||
	fail "no summary on the saved capture"
echo "bench-calls: ok"
