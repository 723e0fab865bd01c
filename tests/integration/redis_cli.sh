#!/bin/sh
# The README tour with the real redis-cli: csqd must work with an unmodified
# Redis client (inline arguments, RESP2 replies, pub/sub).
# Usage: redis_cli.sh /path/to/csqd [redis-cli]. Exit 77 (skip) without
# redis-cli. The engine comes from $CSQ_TEST_ENGINE (default memory).
set -u

CSQD=${1:?usage: redis_cli.sh /path/to/csqd [redis-cli]}
CLI=${2:-redis-cli}
ENGINE=${CSQ_TEST_ENGINE:-memory}

if ! command -v "$CLI" >/dev/null 2>&1; then
	echo "redis-cli not found: skipped"
	exit 77
fi

tmp=$(mktemp -d /tmp/csqd-cli.XXXXXX)
pid=
subpid=
redispid=
cleanup() {
	[ -n "$subpid" ] && kill "$subpid" 2>/dev/null
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	[ -n "$redispid" ] && kill -9 "$redispid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	echo "---- csqd log ----"
	cat "$tmp/csqd.log" 2>/dev/null
	exit 1
}

# Compares the output of a redis-cli call with what is expected.
expect() {
	want=$1
	shift
	got=$("$CLI" -p "$port" "$@" 2>&1)
	if [ "$got" != "$want" ]; then
		printf 'redis-cli %s\n--- expected\n%s\n--- got\n%s\n' "$*" \
		    "$want" "$got"
		fail "unexpected output"
	fi
}

# The same for commands that redis-cli reads from its standard input, one a
# line, all on one connection (as a transaction needs).
expect_stdin() {
	want=$1
	input=$2
	got=$(printf '%s' "$input" | "$CLI" -p "$port" --no-raw 2>&1)
	if [ "$got" != "$want" ]; then
		printf 'redis-cli <<%s\n--- expected\n%s\n--- got\n%s\n' \
		    "$input" "$want" "$got"
		fail "unexpected output"
	fi
}

# A random port that is probably free.
random_port() {
	echo $(( 20000 + ($$ * 7 + $1 * 7919 + $(date +%N | sed 's/^0*//;s/^$/0/') ) % 40000 ))
}

# The Redis engine: a private redis-server on a free port, loading csq.so
# (CSQ_TEST_REDIS_MODULE, which ctest sets).
redisconf=
if [ "$ENGINE" = "redis" ]; then
	command -v redis-server >/dev/null 2>&1 || fail "redis-server not found"
	[ -n "${CSQ_TEST_REDIS_MODULE:-}" ] ||
		fail "CSQ_TEST_REDIS_MODULE names no csq.so"
	for attempt in 1 2 3 4 5 6 7 8; do
		rport=$(random_port "$attempt")
		redis-server --port "$rport" --bind 127.0.0.1 --save "" \
		    --appendonly no --dir "$tmp" \
		    --loadmodule "$CSQ_TEST_REDIS_MODULE" >"$tmp/redis.log" 2>&1 &
		redispid=$!
		i=0
		while [ $i -lt 50 ]; do
			kill -0 "$redispid" 2>/dev/null || break
			[ "$("$CLI" -p "$rport" PING 2>/dev/null)" = "PONG" ] && break
			sleep 0.1
			i=$((i + 1))
		done
		kill -0 "$redispid" 2>/dev/null && break
		redispid=
	done
	[ -n "$redispid" ] || fail "redis-server did not start"
	redisconf="redis: { host = \"127.0.0.1\"; port = $rport; };"
fi

# A free port: try a few random ones until csqd starts and answers.
started=0
for attempt in 1 2 3 4 5 6 7 8; do
	port=$(random_port "$attempt")
	cat >"$tmp/csqd.conf" <<EOF
listen = [ "127.0.0.1:$port" ];
engine = "$ENGINE";
http: { listen = ""; };
$redisconf
EOF
	"$CSQD" -c "$tmp/csqd.conf" >"$tmp/csqd.log" 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 100 ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		if [ "$("$CLI" -p "$port" PING 2>/dev/null)" = "PONG" ]; then
			started=1
			break
		fi
		sleep 0.1
		i=$((i + 1))
	done
	[ $started -eq 1 ] && break
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=
done
[ $started -eq 1 ] || fail "csqd did not start"

# The subscriber, in the background, writing to a file.
"$CLI" -p "$port" SUBSCRIBE events >"$tmp/sub.out" 2>&1 &
subpid=$!
i=0
until grep -q '^events$' "$tmp/sub.out" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 50 ] && fail "subscriber not ready: $(cat "$tmp/sub.out")"
	sleep 0.1
done

# redis-cli right-aligns the indexes of a 10-element array.
expect ' 1) "servicer"
 2) "agent1"
 3) "status"
 4) "ready"
 5) "capacity"
 6) (integer) 2
 7) "active"
 8) (integer) 0
 9) "ttl"
10) (integer) 30' --no-raw HEARTBEAT agent1 CAPACITY 2

expect '1) "state"
2) "assigned"
3) "queue"
4) "default"
5) "room"
6) "agent1/0"
7) "servicer"
8) "agent1"' --no-raw ENQUEUE u1

# Raw output (stdout not a terminal), as scripts see it.
expect 'state
waiting
queue
support
position
1
eta_ms
-1' ENQUEUE u2 QUEUE support

expect '(integer) 1' --no-raw QLEN support
expect '(integer) 1' --no-raw RELEASE agent1/0
expect '(integer) 0' --no-raw RELEASE agent1/0
expect '(error) ERR invalid room id' --no-raw RELEASE agent1
expect '(error) NOTFOUND no such servicer or room' --no-raw RELEASE agent2/0
expect '1) "state"
2) "none"' --no-raw WHERE u1
# RESP3 (redis-cli -3 opens with HELLO 3): a map, as redis-cli shows one.
expect '1# "state" => "waiting"
2# "queue" => "support"
3# "position" => (integer) 1
4# "eta_ms" => (integer) -1' -3 --no-raw ENQUEUE u2 QUEUE support
expect '1# "state" => "none"' -3 --no-raw WHERE u1
expect 'OK' --no-raw PAUSE agent1

# The README's second agent, who accepts (protocol-v2 section 1), on
# either engine.
"$CLI" -p "$port" HEARTBEAT agent2 OFFER 30 TTL 3600 >/dev/null
expect ' 1) "state"
 2) "offered"
 3) "queue"
 4) "default"
 5) "tier"
 6) (integer) 0
 7) "servicer"
 8) "agent2"
 9) "room"
10) "agent2/0"
11) "expires_in_ms"
12) (integer) 30000
13) "eta_ms"
14) (integer) 0' --no-raw ENQUEUE u3
expect '(integer) 1' --no-raw ACCEPT agent2/0
expect '(integer) 0' --no-raw ACCEPT agent2/0
expect "(error) ERR unknown command 'NOPE'" --no-raw NOPE

# Transactions (protocol-v2 section 8): a block runs whole, with a failure
# that depends on the state in its place; an error while queueing aborts
# it; DISCARD drops it.
expect_stdin 'OK
QUEUED
QUEUED
QUEUED
1) 1) "state"
   2) "waiting"
   3) "queue"
   4) "tx"
   5) "position"
   6) (integer) 1
   7) "eta_ms"
   8) (integer) -1
2) PONG
3) (error) NOTFOUND no such servicer or room
OK
QUEUED
(error) ERR wrong number of arguments for '\''enqueue'\'' command
(error) EXECABORT Transaction discarded because of previous errors.
1) "state"
2) "none"
OK
QUEUED
(error) ERR MULTI calls can not be nested
(error) ERR Command not allowed inside a transaction
OK
1) "state"
2) "none"' 'MULTI
ENQUEUE t1 QUEUE tx
PING
RELEASE nobody/0
EXEC
MULTI
ENQUEUE t2 QUEUE tx
ENQUEUE
EXEC
WHERE t2
MULTI
ENQUEUE t3 QUEUE tx
MULTI
AUTH default x
DISCARD
WHERE t3
'

# redis-cli --stat reads INFO: every column is a number csqd has (a field
# it lacked showed as -9223372036854775808), the keys column what csq holds.
keys=$(printf 'INFO keyspace\n' | "$CLI" -p "$port" | sed -n 's/^db0:keys=\([0-9]*\),.*/\1/p')
[ -n "$keys" ] || fail "no db0:keys in INFO keyspace"
stat=$(timeout 2 stdbuf -o0 "$CLI" -p "$port" --stat -i 0.3 2>&1)
line=$(printf '%s\n' "$stat" | sed -n 3p)
printf '%s\n' "$line" |
	grep -Eq "^$keys +[0-9.]+[BKMG] +[0-9]+ +0 +[0-9]+ \(\+[0-9]+\) +[0-9]+ *\$" ||
	fail "redis-cli --stat: $stat"
case $stat in *-9223372036854775808*) fail "redis-cli --stat: $stat" ;; esac

# The subscriber saw the login, the match, the release and the pause, and
# the offer (the last one waited for: once it is there, so are the
# others).
last=offered
i=0
until grep -q "\"event\": *\"$last\"" "$tmp/sub.out" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 50 ] && fail "no $last event: $(cat "$tmp/sub.out")"
	sleep 0.1
done
events_seen="servicer_up matched queued released servicer_paused offered"
for ev in $events_seen; do
	grep -q "\"event\": *\"$ev\"" "$tmp/sub.out" ||
	    fail "no $ev event in: $(cat "$tmp/sub.out")"
done
grep -q '"room": *"agent1/0"' "$tmp/sub.out" ||
    fail "no room in events: $(cat "$tmp/sub.out")"

kill "$subpid" 2>/dev/null
wait "$subpid" 2>/dev/null
subpid=

# SIGTERM: exit 0 (also no sanitizer report).
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
[ $rc -eq 0 ] || fail "csqd exited $rc after SIGTERM"
echo "redis-cli tour: OK"
exit 0
