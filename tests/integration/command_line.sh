#!/bin/sh
# csqd's command line, run as a person or a script would: --help and -h,
# each option by its short and its long name, the version, and every kind
# of bad command line (unknown, abbreviated, ambiguous, a value where none
# goes, a missing file name, an operand), each one exit 64 with a message
# on stderr that names the word and nothing on stdout. Then csqd serves on
# a Unix socket given by --config and stops on SIGTERM with exit 0.
#
# usage: command_line.sh /path/to/csqd VERSION [redis-cli]
# (VERSION: the project's, from CMake, which `csqd -v` must print.) Exit 77
# (skip) without redis-cli, once the rest has passed.
set -u

CSQD=${1:?usage: command_line.sh /path/to/csqd VERSION [redis-cli]}
VERSION=${2:?usage: command_line.sh /path/to/csqd VERSION [redis-cli]}
CLI=${3:-redis-cli}
START_S=10 # longest wait for csqd to answer on its socket

tmp=$(mktemp -d /tmp/csqd-cmdline.XXXXXX) || exit 1
pid=
cleanup()
{
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
status=0

fail()
{
	echo "FAIL: $*" >&2
	status=1
}

# Runs csqd with the arguments given: its stdout in $out, its stderr in
# $err, its exit status in $rc.
run()
{
	"$CSQD" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
}

# Expects exit 0, stdout WANT (a shell pattern), nothing on stderr.
expect_ok()
{
	want=$1
	shift
	run "$@"
	[ $rc -eq 0 ] || fail "csqd $*: exit $rc, not 0 ($err)"
	# shellcheck disable=SC2254 # want is a pattern on purpose
	case $out in $want) ;; *) fail "csqd $*: stdout '$out', not '$want'" ;; esac
	[ -z "$err" ] || fail "csqd $*: stderr '$err'"
}

# Expects a usage error: exit 64, stdout empty, stderr with MESSAGE and the
# pointer to --help.
expect_usage()
{
	message=$1
	shift
	run "$@"
	[ $rc -eq 64 ] || fail "csqd $*: exit $rc, not 64"
	[ -z "$out" ] || fail "csqd $*: stdout '$out' on a usage error"
	case $err in
	"csqd: $message"*"Try 'csqd --help' for more.") ;;
	*) fail "csqd $*: stderr '$err', not 'csqd: $message' ... --help" ;;
	esac
}

# --help and -h: the same text on stdout, every option in both its names.
expect_ok "usage: csqd *" --help
help=$out
expect_ok "usage: csqd *" -h
[ "$out" = "$help" ] || fail "-h and --help print different texts"
for o in "-c, --config FILE" "-n, --check" "-h, --help" "-v, --version"; do
	case $help in *"$o"*) ;; *) fail "--help does not list '$o'" ;; esac
done
# The exit statuses the help promises are the ones csqd uses (below).
case $help in *"64 for a bad command line, 78"*) ;;
*) fail "--help does not give the exit statuses" ;; esac
# --help wins over what follows it, as it does in every GNU tool.
expect_ok "usage: csqd *" --help --no-such-option

expect_ok "csqd $VERSION" -v
expect_ok "csqd $VERSION" --version

# --check and --config, alone, together, in their every spelling.
printf 'max_tier = 5;\n' >"$tmp/good.conf"
printf 'max_tier = 99;\n' >"$tmp/bad.conf"
expect_ok "configuration OK" -n
expect_ok "configuration OK" --check
expect_ok "configuration OK" -n -c "$tmp/good.conf"
expect_ok "configuration OK" --check --config "$tmp/good.conf"
expect_ok "configuration OK" --check --config="$tmp/good.conf"
expect_ok "configuration OK" --config "$tmp/good.conf" --check
expect_ok "configuration OK" -nc "$tmp/good.conf"
expect_ok "configuration OK" -n --
for args in "-n -c" "--check --config"; do
	# shellcheck disable=SC2086 # two words on purpose
	run $args "$tmp/bad.conf"
	[ $rc -eq 78 ] || fail "csqd $args bad.conf: exit $rc, not 78"
	case $err in
	"$tmp/bad.conf:1: max_tier must be between"*) ;;
	*) fail "csqd $args bad.conf: stderr '$err'" ;;
	esac
done

# Bad command lines.
expect_usage "unknown option '-Z'" -Z
expect_usage "unknown option '-Z'" -nZ
expect_usage "unknown option '--no-such-option'" --no-such-option
expect_usage "unknown option '--no-such-option'" --no-such-option=1
expect_usage "unknown option '--conf' (options are spelt in full: '--config')" \
	--conf "$tmp/good.conf"
expect_usage "unknown option '--vers' (options are spelt in full: '--version')" \
	--vers
expect_usage "ambiguous option '--c'" --c
expect_usage "option '--check' takes no value" --check=yes
expect_usage "option '--version' takes no value" --version=2
expect_usage "option '-c' needs a file name" -c
expect_usage "option '--config' needs a file name" -n --config
expect_usage "unexpected argument 'serve' (csqd takes none)" serve
expect_usage "unexpected argument 'x' (csqd takes none)" -n -c "$tmp/good.conf" x
expect_usage "unexpected argument '-n' (csqd takes none)" -- -n
# Options after an operand are not taken: the operand is the error.
expect_usage "unexpected argument 'x' (csqd takes none)" x --help

# Serving: --config names the file, the socket answers, SIGTERM stops it
# with exit 0. A Unix socket in the test's directory: no port to collide.
if command -v "$CLI" >/dev/null 2>&1; then
	printf 'listen = [ "unix:%s/csqd.sock" ];\nhttp: { listen = ""; };\n' \
		"$tmp" >"$tmp/serve.conf"
	"$CSQD" --config "$tmp/serve.conf" >"$tmp/csqd.log" 2>&1 &
	pid=$!
	i=0
	until [ "$("$CLI" -s "$tmp/csqd.sock" PING 2>/dev/null)" = PONG ]; do
		i=$((i + 1))
		if [ $i -gt $((START_S * 10)) ] || ! kill -0 "$pid" 2>/dev/null; then
			cat "$tmp/csqd.log" >&2
			fail "csqd --config did not answer on its socket"
			break
		fi
		sleep 0.1
	done
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	pid=
	[ $rc -eq 0 ] || fail "csqd --config: exit $rc after SIGTERM, not 0"
else
	echo "$CLI not found: csqd --config not run as a server" >&2
	[ $status -eq 0 ] && exit 77
fi

[ $status -eq 0 ] && echo "command line OK"
exit $status
