#!/bin/sh
# csq-day audit, the program (docs/day.md): the shipped sample record of a
# real csqd passes; each deliberate fault of tests/day/faults (an
# out-of-order match, a double offer, a lost user, a preference window
# claimed for the servicer that passed its user over) is caught with the ids
# of its events (exit 1); a line that is not an event is reported with
# its place (exit 1); an unreadable file exits 2, a usage error 64; and a
# benchmark-style run (csq-bench match with offers, 10 servicers) on a
# csqd with the record passes the audit.
#
# usage: csq_day.sh SOURCE_DIR CSQ_DAY CSQD CSQ_BENCH
set -u

src=$1 day=$2 csqd=$3 bench=$4
tmp=$(mktemp -d /tmp/csq-day.XXXXXX) || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
status=0

fail()
{
	echo "FAIL: $*" >&2
	status=1
}

# expect STATUS TEXT FILE...: csq-day audit FILE... exits STATUS and
# prints TEXT.
expect()
{
	want=$1 text=$2
	shift 2
	"$day" audit "$@" >"$tmp/out" 2>&1
	got=$?
	[ "$got" -eq "$want" ] || fail "audit $*: exit $got, not $want: $(cat "$tmp/out")"
	grep -qF -- "$text" "$tmp/out" || fail "audit $*: no \"$text\" in: $(cat "$tmp/out")"
}

expect 0 "audit: OK" "$src/tests/day/sample.jsonl"
expect 1 "overtaken: events 2 3 4: c001" "$src/tests/day/faults/out_of_order.jsonl"
expect 1 "two_offers: events 3 4: user c001" "$src/tests/day/faults/double_offer.jsonl"
expect 1 "lost: events 2 3: user c001" "$src/tests/day/faults/lost_user.jsonl"
# c001 waited for a1 itself (prefer): a1 taking c002 is not excused by it.
expect 1 "overtaken: events 2 3 4 2: c001" "$src/tests/day/faults/prefer_claimed.jsonl"
# Read as one record with the sample: the ids go back, which is a finding.
expect 1 "gap: events" "$src/tests/day/sample.jsonl" "$src/tests/day/faults/lost_user.jsonl"
printf '{"event":"queued","id":1,"ts":1}\nnot json\n' >"$tmp/bad.jsonl"
expect 1 "bad.jsonl:2: not an event" "$tmp/bad.jsonl"
expect 2 "No such file" "$tmp/none.jsonl"
# A line whose time is 5,600 years after the first (a clock set wrong, a
# corrupt ts): report and replay leave it out with its place, instead of
# keeping figures for every hour between (they grew to 640 MB in 10 s).
printf '%s\n%s\n' \
	'{"event":"servicer_up","id":1,"ts":1795770000000,"servicer":"a1","capacity":1,"queues":["sales"]}' \
	'{"event":"released","id":2,"ts":179577090800000,"user":"c013","queue":"sales","tier":0,"position":3}' \
	>"$tmp/far.jsonl"
for cmd in report replay; do
	timeout 60 "$day" "$cmd" "$tmp/far.jsonl" >"$tmp/out" 2>&1
	got=$?
	[ "$got" -eq 1 ] || fail "$cmd far.jsonl: exit $got, not 1: $(head -c 2000 "$tmp/out")"
	grep -qF "far.jsonl:2: left out: ts 179577090800000 is over 100000 intervals" "$tmp/out" ||
		fail "$cmd far.jsonl: not left out: $(head -c 2000 "$tmp/out")"
done
# One interval less far is still read: 100,000 hours after the first.
printf '%s\n%s\n' \
	'{"event":"servicer_up","id":1,"ts":1795770000000,"servicer":"a1","capacity":1,"queues":["sales"]}' \
	'{"event":"servicer_down","id":2,"ts":2155770000000,"servicer":"a1","reason":"logout"}' \
	>"$tmp/long.jsonl"
timeout 60 "$day" report -f csv "$tmp/long.jsonl" >"$tmp/out" 2>&1 ||
	fail "report long.jsonl: exit $?: $(head -c 2000 "$tmp/out")"
grep -q "left out" "$tmp/out" && fail "report long.jsonl left a line out"
"$day" >/dev/null 2>&1
[ $? -eq 64 ] || fail "no arguments: not exit 64"
"$day" audit - <"$src/tests/day/sample.jsonl" | grep -q "audit: OK" ||
	fail "standard input"

# A benchmark-style run: csq-bench's match scenario with offers. csqd must
# say it is ready (its listeners open) within START_S, a deadline for a
# hang. (The wait was for "csq-bench ping -d 0", which always fails, as
# csq-bench takes no duration of 0: a fixed 5 s, and then the run went on
# regardless.) A free port may be taken by another test's process before
# csqd binds it: then csqd exits, and starts again on another.
START_S=30
up=0
for _ in 1 2 3 4 5; do
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	rm -f "$tmp/day.jsonl"
	cat >"$tmp/csqd.conf" <<EOC
listen = ["127.0.0.1:$port"];
http: { listen = ""; };
record: { path = "$tmp/day.jsonl"; };
EOC
	"$csqd" -c "$tmp/csqd.conf" >"$tmp/csqd.log" 2>&1 &
	pid=$!
	i=0
	while [ $i -lt $((START_S * 20)) ] && kill -0 "$pid" 2>/dev/null; do
		if grep -q ' ready, engine ' "$tmp/csqd.log"; then
			up=1
			break
		fi
		sleep 0.05
		i=$((i + 1))
	done
	[ $up -eq 1 ] && break
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=
	grep -q "Address already in use" "$tmp/csqd.log" || break
done
if [ $up -ne 1 ]; then
	fail "csqd did not answer on port $port: $(cat "$tmp/csqd.log")"
	exit $status
fi
"$bench" -p "$port" match --servicers 10 --offer 5 -d 2 >"$tmp/bench.out" 2>&1 ||
	fail "csq-bench match: $(cat "$tmp/bench.out")"
kill "$pid"
wait "$pid"
pid=
n=$(wc -l <"$tmp/day.jsonl")
[ "$n" -gt 100 ] || fail "the benchmark run recorded $n events"
expect 0 "audit: OK" "$tmp/day.jsonl"
echo "benchmark-style run: $n events audited" >&2
exit $status
