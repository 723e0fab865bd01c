#!/bin/sh
# docs/csqd.8, the hand-written manual page: groff formats it with every
# warning on and says nothing, mandoc's linter finds nothing down to its
# style messages, and it has not drifted from what it describes: its
# OPTIONS are exactly the options `csqd --help` lists (short and long
# names), and its CONFIGURATION names exactly the keys of the
# configuration table of docs/protocol.md.
#
# Exit 77 (skip) without groff or mandoc, once the rest has passed.
#
# usage: test_manpage.sh SOURCE_DIR /path/to/csqd
set -u

src=$1 csqd=$2
man=$src/docs/csqd.8
tmp=$(mktemp -d /tmp/csq-manpage.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0
missing=

fail()
{
	echo "FAIL: $*" >&2
	status=1
}

[ -f "$man" ] || {
	echo "FAIL: no $man" >&2
	exit 1
}

# Formatting: man(1) runs groff; -ww turns every warning on.
if command -v groff >/dev/null 2>&1; then
	groff -ww -z -man -Tutf8 "$man" >"$tmp/groff.err" 2>&1 ||
		fail "groff exited $?"
	[ -s "$tmp/groff.err" ] && fail "groff warns: $(cat "$tmp/groff.err")"
	# And it says something: the sections a manual page must have.
	groff -man -Tutf8 -P-cbou "$man" 2>/dev/null >"$tmp/man.txt"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS CONFIGURATION SIGNALS FILES \
		"EXIT STATUS" "SEE ALSO"; do
		grep -qx "$s" "$tmp/man.txt" || fail "no section $s"
	done
else
	missing="$missing groff"
fi
if command -v mandoc >/dev/null 2>&1; then
	mandoc -Tlint -Wstyle "$man" >"$tmp/mandoc.out" 2>&1
	[ -s "$tmp/mandoc.out" ] && fail "mandoc -Tlint: $(cat "$tmp/mandoc.out")"
else
	missing="$missing mandoc"
fi

# The tag lines (after .TP) of section SECTION of the page, one a line.
tags()
{
	awk -v want="$1" '
		/^\.SH/ { sub(/^\.SH */, ""); gsub(/"/, ""); section = $0; next }
		section == want && tp { print; tp = 0; next }
		section == want && /^\.TP/ { tp = 1 }' "$man"
}

# The options: "-c --config" pairs, sorted, from --help and from the page.
"$csqd" --help >"$tmp/help" 2>&1 || fail "csqd --help exited $?"
sed -n 's/^  \(-[a-zA-Z]\), \(--[a-z-]*\).*/\1 \2/p' "$tmp/help" |
	sort >"$tmp/help-options"
[ -s "$tmp/help-options" ] || fail "no options in csqd --help"
tags OPTIONS | sed -n 's/^\.BR \\\(-[a-zA-Z]\) ", " \\-\\\(-[a-z-]*\).*/\1 -\2/p' |
	sort >"$tmp/man-options"
if ! cmp -s "$tmp/help-options" "$tmp/man-options"; then
	fail "OPTIONS and csqd --help differ (< --help, > the page):
$(diff "$tmp/help-options" "$tmp/man-options" | grep '^[<>]')"
fi

# The configuration keys: protocol.md's table against the page's tags.
awk '/^### Configuration/ { on = 1; next } on && /^#/ { on = 0 }
	on && /^\| `[a-z_.]+` \|/ { split($0, f, "`"); print f[2] }' \
	"$src/docs/protocol.md" | sort >"$tmp/doc-keys"
[ -s "$tmp/doc-keys" ] || fail "no keys in docs/protocol.md's table"
tags CONFIGURATION | sed 's/^\.[A-Z]* //; s/"[^"]*"//g' | tr ' ' '\n' |
	grep . | sort >"$tmp/man-keys"
if ! cmp -s "$tmp/doc-keys" "$tmp/man-keys"; then
	fail "CONFIGURATION and docs/protocol.md's keys differ (< protocol.md, > the page):
$(diff "$tmp/doc-keys" "$tmp/man-keys" | grep '^[<>]')"
fi

if [ -n "$missing" ]; then
	echo "not found:$missing: the page not checked with them" >&2
	[ $status -eq 0 ] && exit 77
fi
[ $status -eq 0 ] && echo "manual page OK"
exit $status
