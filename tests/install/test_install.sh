#!/bin/sh
# Installs csq into a DESTDIR with `cmake --install`, checks the tree, runs the
# installed csqd on the installed configuration, checks that a second install
# keeps an edited configuration, and verifies the installed unit with
# `systemd-analyze verify` (77 when systemd-analyze is missing: ctest shows a
# skip, or a failure with CSQ_TEST_SKIPS=OFF, as scripts/test builds it).
#
# usage: test_install.sh BUILD_DIR PREFIX UNIT_DIR CONF_DIR DOC_DIR MAN_DIR
set -u

build=$1 prefix=$2 unitdir=$3 confdir=$4 docdir=$5 mandir=$6
dest=$(mktemp -d /tmp/csq-install.XXXXXX) || exit 1
trap 'rm -rf "$dest"' EXIT
status=0

fail()
{
	echo "FAIL: $*" >&2
	status=1
}

DESTDIR=$dest cmake --install "$build" >"$dest.log" 2>&1 ||
	{ cat "$dest.log" >&2; rm -f "$dest.log"; echo "FAIL: cmake --install" >&2; exit 1; }
rm -f "$dest.log"

# The tree.
[ -x "$dest$prefix/sbin/csqd" ] || fail "no executable $prefix/sbin/csqd"
[ -f "$dest$unitdir/csqd.service" ] || fail "no $unitdir/csqd.service"
[ -f "$dest$confdir/csqd.conf" ] || fail "no $confdir/csqd.conf"
for f in README.md operations.md protocol.md design.md day.md examples/csqd.conf; do
	[ -f "$dest$docdir/$f" ] || fail "no $docdir/$f"
done
# csq-day, the record's tool, and its page in section 1.
[ -x "$dest$prefix/bin/csq-day" ] || fail "no executable $prefix/bin/csq-day"
"$dest$prefix/bin/csq-day" -h | grep -q '^usage: csq-day audit' ||
	fail "the installed csq-day -h"
cmp -s "$dest$mandir/man1/csq-day.1" "$(dirname "$0")/../../docs/csq-day.1" ||
	fail "no $mandir/man1/csq-day.1, or not docs/csq-day.1"
# The manual page, where man looks for section 8, as written.
cmp -s "$dest$mandir/man8/csqd.8" "$(dirname "$0")/../../docs/csqd.8" ||
	fail "no $mandir/man8/csqd.8, or not docs/csqd.8"
# Readable by the unit's dynamic user.
[ "$(stat -c %a "$dest$confdir/csqd.conf")" = 644 ] ||
	fail "$confdir/csqd.conf mode $(stat -c %a "$dest$confdir/csqd.conf")"
# The installed unit runs the installed binary on the installed file.
grep -qx "ExecStart=$prefix/sbin/csqd -c $confdir/csqd.conf" \
	"$dest$unitdir/csqd.service" || fail "ExecStart does not name the installed paths"

# Every setting of the unit comes right after a comment that says why.
bare=$(awk '/^[A-Za-z]/ && prev !~ /^#/ { print FILENAME ":" NR ": " $0 }
	{ prev = $0 }' "$dest$unitdir/csqd.service")
[ -z "$bare" ] || fail "settings without a comment above them:
$bare"

# The installed configuration journals the memory engine in the unit's
# StateDirectory; the example in the docs keeps the built-in defaults.
grep -q '^[[:space:]]*journal = "/var/lib/csqd/journal";' "$dest$confdir/csqd.conf" ||
	fail "$confdir/csqd.conf: no journal in /var/lib/csqd"
grep -q '^[[:space:]]*journal = "";' "$dest$docdir/examples/csqd.conf" ||
	fail "$docdir/examples/csqd.conf is not the built-in defaults"
grep -q '^StateDirectory=csqd$' "$dest$unitdir/csqd.service" ||
	fail "the unit has no StateDirectory for the journal"

# The installed daemon accepts the installed configuration.
out=$("$dest$prefix/sbin/csqd" -n -c "$dest$confdir/csqd.conf" 2>&1)
[ "$out" = "configuration OK" ] || fail "csqd -n: $out"
out=$("$dest$prefix/sbin/csqd" -v) || fail "csqd -v exited $?"
case $out in "csqd "?*) ;; *) fail "csqd -v: $out" ;; esac

# A site's configuration survives a reinstall.
echo '# edited by the site' >>"$dest$confdir/csqd.conf"
DESTDIR=$dest cmake --install "$build" >/dev/null 2>&1 || fail "second install"
grep -q 'edited by the site' "$dest$confdir/csqd.conf" ||
	fail "a reinstall overwrote $confdir/csqd.conf"

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "systemd-analyze not found: unit not verified" >&2
	[ $status -eq 0 ] && exit 77
	exit $status
fi
# verify checks that ExecStart's binary exists: a copy of the unit names the
# DESTDIR's binary and configuration. Unknown keys are only warned about, so
# any line about the unit fails the test too.
mkdir "$dest/verify"
sed -e "s|^ExecStart=$prefix/sbin/csqd -c $confdir/|ExecStart=$dest$prefix/sbin/csqd -c $dest$confdir/|" \
	"$dest$unitdir/csqd.service" >"$dest/verify/csqd.service"
out=$(systemd-analyze verify --man=no "$dest/verify/csqd.service" 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "systemd-analyze verify exited $rc"
if printf '%s\n' "$out" | grep -q 'csqd\.service'; then
	fail "systemd-analyze verify complained"
fi
[ -n "$out" ] && printf '%s\n' "$out" >&2
[ $status -eq 0 ] && echo "install tree and unit OK"
exit $status
