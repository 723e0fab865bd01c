# shellcheck shell=bash
#
# Shared by scripts/run, scripts/test and scripts/fuzz: where the repository
# is, and the Debian packages csqd needs to build and test. Sourced, never
# executed.

# The Debian (bookworm) packages that building and running csqd needs, and
# nothing else: what scripts/run installs and checks (CMake's required
# pkg-config modules with CSQ_TESTS=OFF). libsystemd-dev is optional to the
# build (sd_notify for the unit) and a foreground csqd does without it;
# redis-server is needed only for engine = "redis", and redis-cli
# (redis-tools) only to talk to csqd by hand.
CSQ_RUN_PACKAGES=(cmake gcc make pkg-config libevent-dev libhiredis-dev
	libconfig-dev libssl-dev)

# The Debian (bookworm) packages of the tests, the fuzz targets, the
# benchmarks and the Redis engine, on top of CSQ_RUN_PACKAGES: what
# scripts/test, scripts/fuzz and scripts/bench install and check.
# systemd is there for systemd-analyze (install.tree verifies the unit with
# it); installing the package does not need systemd to run as PID 1.
# groff-base and mandoc check the manual page (install.manpage); debhelper,
# build-essential (which dpkg-buildpackage requires of every build) and
# lintian build and check the Debian package (install.deb). clang builds
# the fuzz targets (scripts/fuzz), libclang-rt-14-dev holds libFuzzer and
# the sanitizers' runtimes for it, and llvm's llvm-symbolizer puts function
# names and lines in their reports. chromium, chromium-driver and
# python3-selenium run the admin page in a headless browser
# (tests/integration/test_admin_page.py, scripts/bench-admin).
CSQ_PACKAGES=("${CSQ_RUN_PACKAGES[@]}" libcmocka-dev openssl redis-tools
	redis-server
	libsystemd-dev valgrind redis-sentinel
	python3-prometheus-client python3-redis systemd groff-base mandoc
	build-essential debhelper lintian clang libclang-rt-14-dev llvm
	chromium chromium-driver python3-selenium)

# Node.js and npm run the Node.js client tests and examples/frontend-js.
# Only a machine without them gets Debian's: one may have them from
# elsewhere (NodeSource's nodejs carries its own npm and conflicts with
# Debian's npm package).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	CSQ_PACKAGES+=(nodejs npm)
fi

# The directories whose npm packages csq_install_node_modules installs, as
# their package-lock.json pins them.
CSQ_NPM_DIRS=(tests/clients examples/frontend-js)

# Prints a message on stderr, prefixed with the script's name.
csq_say()
{
	printf '%s: %s\n' "${0##*/}" "$*" >&2
}

# A TCP port on 127.0.0.1 that no socket uses, not one of those given. It
# is taken below the kernel's range of ephemeral ports: a client's socket
# there, even one in TIME-WAIT for a minute after it closed, makes a
# server's bind fail with "Address already in use" (seen: a run that lost
# its csqd rows that way), and a listening probe cannot see it.
csq_free_port()
{
	local p q taken lo=32768 hi=60999 base span _
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || :
	if [ "$lo" -gt 12000 ]; then
		base=10000 span=$((lo - 10000))
	elif [ "$hi" -lt 64000 ]; then
		base=$((hi + 1)) span=$((65535 - hi))
	else
		base=20000 span=40000 # no room outside the range: hope
	fi
	for _ in $(seq 1 200); do
		p=$((base + RANDOM % span))
		taken=0
		for q in "$@"; do [ "$p" = "$q" ] && taken=1; done
		[ "$taken" -eq 1 ] && continue
		[ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ] || continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# Waits until the server on port $1 answers PING while pid $2 lives (10 s
# at most).
csq_wait_ready()
{
	local _
	for _ in $(seq 1 200); do
		kill -0 "$2" 2>/dev/null || return 1
		[ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ] && return 0
		sleep 0.05
	done
	return 1
}

# Redis's usec_per_call (INFO commandstats) of command $2 on the
# redis-server of port $1, since its last CONFIG RESETSTAT.
csq_redis_usec()
{
	redis-cli -p "$1" INFO commandstats | tr -d '\r' |
		sed -n "s/^cmdstat_$2:.*usec_per_call=\([0-9.]*\).*/\1/p"
}

# Changes to the repository root, found from this file's own path, so that the
# scripts work from any directory.
csq_cd_root()
{
	local here
	here=$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd) || return 1
	cd -- "$here/.." || return 1
}

# Prints, one a line, the packages named that are not installed.
csq_missing_packages()
{
	local p status
	for p in "$@"; do
		status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) ||
			status=
		[ "$status" = installed ] || printf '%s\n' "$p"
	done
}

# Installs the missing packages of those named (CSQ_RUN_PACKAGES or
# CSQ_PACKAGES) when it can: as root, or through sudo when it needs no password
# (a script must never stop at a prompt). Returns 1, naming the packages,
# when something is missing and cannot be installed.
csq_install_packages()
{
	local missing sudo=() wanted=("$@")

	if ! command -v dpkg-query >/dev/null 2>&1; then
		# Not Debian: nothing to check with; CMake's pkg-config checks will
		# name whatever is missing.
		csq_say "no dpkg-query; not checking for packages" \
			"(needed: ${wanted[*]})"
		return 0
	fi

	missing=$(csq_missing_packages "${wanted[@]}" | tr '\n' ' ')
	missing=${missing% }
	[ -z "$missing" ] && return 0

	if [ "$(id -u)" -eq 0 ]; then
		sudo=()
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		csq_say "missing packages: $missing"
		csq_say "install them as root: apt-get install -y" \
			"--no-install-recommends $missing"
		return 1
	fi

	csq_say "installing missing packages: $missing"
	# The output goes to stderr so that stdout stays csqd's own.
	# shellcheck disable=SC2086 # $missing is a list of words on purpose
	if ! { ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
		apt-get update &&
		${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends $missing; } >&2; then
		csq_say "apt-get failed"
	fi

	missing=$(csq_missing_packages "${wanted[@]}" | tr '\n' ' ')
	missing=${missing% }
	if [ -n "$missing" ]; then
		csq_say "still missing packages: $missing"
		return 1
	fi
	return 0
}

# Installs the npm packages of each CSQ_NPM_DIRS directory from its lock
# file (npm ci), when its node_modules is missing or older than the lock.
csq_install_node_modules()
{
	local dir
	if ! command -v npm >/dev/null 2>&1; then
		csq_say "npm not found: the Node.js client tests and examples need it"
		return 1
	fi
	for dir in "${CSQ_NPM_DIRS[@]}"; do
		if [ -d "$dir/node_modules" ] &&
			[ ! "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
			continue
		fi
		csq_say "installing the Node.js packages of $dir (npm ci)"
		npm ci --prefix "$dir" --no-audit --no-fund >&2 &&
			touch "$dir/node_modules" || return 1
	done
	return 0
}
