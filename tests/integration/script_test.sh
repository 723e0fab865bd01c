# The preamble the tests of scripts/bench-* share, sourced by each after it
# has read its arguments:
#	script_test_need TOOL...	exit 77 (skip) when one is missing
#	script_test_tmp NAME		$tmp, a directory removed at exit
#	fail MESSAGE			the test fails, showing $tmp/out and
#					$tmp/err (what the script printed)

script_test_need()
{
	for t in "$@"; do
		if ! command -v "$t" >/dev/null 2>&1; then
			echo "$t not found: skipped"
			exit 77
		fi
	done
}

script_test_tmp()
{
	tmp=$(mktemp -d "/tmp/csq-$1-test.XXXXXX") || exit 1
	trap 'rm -rf "$tmp"' EXIT
}

fail()
{
	echo "FAIL: $*"
	cat "$tmp/out" "$tmp/err" 2>/dev/null
	exit 1
}
