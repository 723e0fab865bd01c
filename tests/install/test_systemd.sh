#!/bin/sh
# The documented ways from a source tree to a csqd supervised by systemd,
# under a real systemd: PID 1 of its own PID, mount, network, UTS, IPC and
# cgroup namespaces, on an overlay of / so that nothing it installs or
# writes reaches the real file system. Inside, it runs what
# docs/operations.md says, one of two ways:
#   source  cmake, cmake --install, systemctl daemon-reload, systemctl
#           enable --now csqd ("Install from source");
#   deb     dpkg-buildpackage -b -us -uc on a copy of the tree, lintian on
#           what it built, dpkg -i of the .deb, which must enable and start
#           csqd itself ("Install from the Debian package");
# then checks what the unit promises: READY and STATUS, the user and the
# hardening, the journal's priorities, a reload (good and bad), the watchdog
# and Restart=on-failure, exit 78 not restarted, the state and runtime
# directories, a clean stop. The deb way also checks what the package
# promises: the system user csqd, the configuration root:csqd 0640, the
# manual page, an upgrade that keeps the site's file and the waiting users,
# and what removal and purge leave.
#
# It needs root, unshare, nsenter, overlayfs and systemd, and refuses to run
# where systemd already runs the machine (/run/systemd/system): a test
# never touches a real service manager. Otherwise it exits 77. A tool of
# the test itself that is missing (cmake, dpkg-buildpackage, lintian, ...)
# is a skip too, unless CSQ_TEST_SKIPS is OFF (scripts/test): then it fails.
#
# usage: test_systemd.sh SOURCE_DIR [source|deb]
set -u

src=$(cd "$1" && pwd) || exit 1
mode=${2:-source}
case $mode in source | deb) ;; *)
	echo "usage: test_systemd.sh SOURCE_DIR [source|deb]" >&2
	exit 2
	;;
esac
SYSTEMD=/lib/systemd/systemd
BOOT_S=30 # longest wait for the namespace's systemd to be up
WAIT_S=10 # longest wait for a state of csqd.service

skip()
{
	echo "skipped: $*" >&2
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root"
[ -d /run/systemd/system ] && skip "systemd runs this machine; not starting another"
for t in unshare nsenter mount pgrep ps systemctl journalctl; do
	command -v $t >/dev/null 2>&1 || skip "no $t"
done
# The tools of the test and of the way it installs: scripts/lib.sh
# installs them, so where it ran, one missing is a failure.
tools="redis-cli python3 cmake"
[ "$mode" = deb ] && tools="$tools dpkg-buildpackage dh lintian dpkg-statoverride redis-server"
for t in $tools; do
	command -v "$t" >/dev/null 2>&1 && continue
	[ "${CSQ_TEST_SKIPS:-ON}" = OFF ] && {
		echo "FAIL: no $t (scripts/lib.sh installs it)" >&2
		exit 1
	}
	skip "no $t"
done
[ -x $SYSTEMD ] || skip "no $SYSTEMD (Debian: systemd)"
grep -qw overlay /proc/filesystems || skip "no overlayfs"

tmp=$(mktemp -d /tmp/csq-systemd.XXXXXX) || exit 1
status=0
nspid=
upid=

fail()
{
	echo "FAIL: $*" >&2
	status=1
}

# What a person would look at when a step failed: the unit's status and
# csqd's journal (with systemd's own lines about the unit), so that a CI
# log says why, not only what; once, at the end (cleanup). Nothing before
# the namespace is up.
unit_report()
{
	[ -n "$nspid" ] || return 0
	echo "--- systemctl status csqd" >&2
	in_ns systemctl status --no-pager --full csqd >&2
	echo "--- journalctl -u csqd" >&2
	in_ns journalctl --no-pager -o short-precise -n 60 -u csqd >&2
	echo "---" >&2
}

# A cgroup of the test's own in every cgroup hierarchy, which the
# namespace's systemd takes for its root. A cgroup namespace is rooted at
# the cgroup its creator is in, but the /sys/fs/cgroup it would see through
# a bind of /sys shows every hierarchy from the top: without this, two of
# these tests at once (install.systemd and install.deb side by side in one
# ctest run, or two engineers' runs) manage one system.slice/csqd.service,
# and one's stop removes the cgroup the other's csqd is being started in
# (exit 219/CGROUP: "control process exited with error code"). So unshare
# goes into the test's cgroups, and the namespace sees only those (each
# bound over its hierarchy's mount point: boot.sh).
cg_name=${tmp##*/}
cgroups=
cgroup_binds=
# The mount point of every cgroup hierarchy (v1 and v2), and this
# process's cgroup directory there: /proc/self/mountinfo gives each
# hierarchy's mount point and the cgroup mounted there, /proc/self/cgroup
# the cgroup this process is in.
own_cgroup_dirs()
{
	awk '
	FILENAME == "/proc/self/cgroup" {
		i = index($0, ":")
		rest = substr($0, i + 1)
		j = index(rest, ":")
		cg[substr(rest, 1, j - 1)] = substr(rest, j + 1)
		next
	}
	{
		for (k = 7; k <= NF && $k != "-"; k++)
			;
		type = $(k + 1)
		if (type == "cgroup2" && ("" in cg))
			path = cg[""]
		else if (type == "cgroup") {
			path = ""
			n = split($(k + 3), opts, ",")
			for (c in cg) {
				if (c == "")
					continue
				m = split(c, want, ",")
				hit = 0
				for (x = 1; x <= m; x++)
					for (y = 1; y <= n; y++)
						if (want[x] == opts[y])
							hit++
				if (hit == m)
					path = cg[c]
			}
			if (path == "")
				next
		} else
			next
		root = $4
		if (root != "/") {
			if (index(path, root) != 1)
				next
			path = substr(path, length(root) + 1)
		}
		if (path == "/")
			path = ""
		print $5, $5 path
	}' /proc/self/cgroup /proc/self/mountinfo
}
while read -r mp d; do
	mkdir "$d/$cg_name" 2>/dev/null || continue
	cgroups="$cgroups $d/$cg_name"
	cgroup_binds="$cgroup_binds
[ -d $d/$cg_name ] && mount --bind $d/$cg_name \$R$mp"
done <<EOF
$(own_cgroup_dirs)
EOF

cleanup()
{
	rc=$?
	[ $rc -ne 0 ] || [ $status -ne 0 ] && unit_report
	if [ -n "$upid" ]; then
		# SIGKILL of a PID namespace's init kills the namespace.
		[ -n "$nspid" ] && kill -KILL "$nspid" 2>/dev/null
		kill -KILL "$upid" 2>/dev/null
		wait "$upid" 2>/dev/null
	fi
	# The namespace's processes take a moment to go, and a cgroup with
	# one in it cannot be removed: deepest first, until none of the
	# test's own is left (never a cgroup of anyone else's).
	n=0
	while [ $n -lt 50 ]; do
		left=0
		for d in $cgroups; do
			[ -d "$d" ] || continue
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
			[ -d "$d" ] && left=1
		done
		[ $left -eq 0 ] && break
		n=$((n + 1))
		sleep 0.1
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The namespace's root: an overlay of /, with private /run, /tmp and /dev,
# /sys and /proc/sys read-only (no udev, no sysctl of the real machine), and
# the source tree read-only at its own path.
# /dev/console is /dev/null and there is no /dev/kmsg: systemd's own lines
# go to its journal, never to the machine's console or kernel log.
mkdir "$tmp/upper" "$tmp/work" "$tmp/root"
cat >"$tmp/boot.sh" <<EOF
set -e
R=$tmp/root
mount --make-rprivate /
mount -t overlay overlay -o lowerdir=/,upperdir=$tmp/upper,workdir=$tmp/work \$R
mount -t proc proc \$R/proc
mount --bind \$R/proc/sys \$R/proc/sys
mount -o remount,bind,ro \$R/proc/sys
mount --rbind /sys \$R/sys
mount -o remount,bind,ro \$R/sys
$cgroup_binds
mount -t tmpfs -o mode=755 tmpfs \$R/run
mount -t tmpfs -o mode=1777 tmpfs \$R/tmp
mount -t tmpfs -o mode=755 tmpfs \$R/dev
for n in null zero full random urandom tty; do
	touch \$R/dev/\$n
	mount --bind /dev/\$n \$R/dev/\$n
done
touch \$R/dev/console
mount --bind /dev/null \$R/dev/console
mkdir \$R/dev/pts \$R/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts \$R/dev/pts
ln -s pts/ptmx \$R/dev/ptmx
mount -t tmpfs -o mode=1777 tmpfs \$R/dev/shm
ln -s /proc/self/fd \$R/dev/fd
mkdir -p \$R$src
mount --bind $src \$R$src
mount -o remount,bind,ro \$R$src
cd \$R
mkdir -p .old-root
pivot_root . .old-root
umount -l /.old-root
rmdir /.old-root
export container=csq-test
exec $SYSTEMD --system --unit=basic.target --log-target=journal --show-status=no
EOF
# unshare goes into the test's cgroups first, so that its cgroup namespace
# is rooted there. A v1 cpuset takes no process before it has CPUs:
# that one goes, and the namespace shares the machine's (systemd uses no
# v1 cpuset).
# shellcheck disable=SC2016,SC2086 # $$ is the inner shell's; one word each
sh -c 'for d; do echo $$ >"$d/cgroup.procs" || rmdir "$d"; done 2>/dev/null
	exec unshare --pid --fork --kill-child --mount --uts --ipc --net \
		--cgroup sh "'"$tmp"'/boot.sh"' sh $cgroups \
	>"$tmp/boot.log" 2>&1 </dev/null &
upid=$!

# Runs a command inside the namespaces, in the overlay's root.
in_ns()
{
	nsenter -t "$nspid" -m -u -i -n -p -C -r -w env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C.UTF-8 "$@"
}

i=0
while :; do
	nspid=$(pgrep -P "$upid" 2>/dev/null | head -n 1)
	if [ -n "$nspid" ] && [ "$(readlink /proc/"$nspid"/exe 2>/dev/null)" = \
		"$(readlink -f $SYSTEMD)" ]; then
		state=$(in_ns systemctl is-system-running 2>/dev/null)
		case $state in running | degraded) break ;; esac
	fi
	if ! kill -0 "$upid" 2>/dev/null; then
		cat "$tmp/boot.log" >&2
		# No namespaces here (an unprivileged container): not a failure
		# of csqd.
		grep -q 'unshare failed\|Operation not permitted' "$tmp/boot.log" &&
			skip "cannot create namespaces"
		echo "FAIL: systemd in a namespace did not start" >&2
		exit 1
	fi
	i=$((i + 1))
	[ $i -gt $((BOOT_S * 10)) ] && {
		echo "FAIL: systemd not up in ${BOOT_S} s (${state:-no state})" >&2
		exit 1
	}
	sleep 0.1
done
echo "systemd $(in_ns systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') up in a namespace"

# Waits until `systemctl show -p PROP --value csqd` is VALUE. The steps
# build on each other: without that state, the test ends here, with the
# unit's status and journal.
wait_prop()
{
	n=0
	while [ "$(in_ns systemctl show -p "$1" --value csqd)" != "$2" ]; do
		n=$((n + 1))
		if [ $n -gt $((WAIT_S * 10)) ]; then
			fail "csqd.service $1 is not '$2' but '$(in_ns systemctl show -p "$1" --value csqd)'"
			exit 1
		fi
		sleep 0.1
	done
}

# A message of csqd's in the journal with its priority: "6 listening on ...",
# waited for up to WAIT_S. journald takes a stream's lines asynchronously,
# and tags each with the sender's _COMM from /proc when it takes it: the
# last line of a csqd that exits at once (a refused start) may come after
# systemd has seen the exit, and without _COMM, so SYSLOG_IDENTIFIER
# (the unit's "csqd") names the sender too.
journal_has()
{
	n=0
	until in_ns journalctl -u csqd -o json --no-pager | python3 -c '
import json, sys
want = sys.argv[1]
for line in sys.stdin:
    j = json.loads(line)
    if "csqd" in (j.get("_COMM"), j.get("SYSLOG_IDENTIFIER")) and \
            ("%s %s" % (j.get("PRIORITY"), j.get("MESSAGE"))).startswith(want):
        sys.exit(0)
sys.exit(1)' "$1"; do
		n=$((n + 1))
		[ $n -le $((WAIT_S * 10)) ] || return 1
		sleep 0.1
	done
}

# Sends a signal to csqd's main process, never to a process group: with
# csqd down MainPID is 0, and `kill 0` would signal this script's own.
kill_main()
{
	p=$(in_ns systemctl show -p MainPID --value csqd)
	case $p in
	'' | 0 | *[!0-9]*)
		fail "no main process to send SIG$1 to"
		return 1
		;;
	esac
	in_ns kill -"$1" "$p"
}

cli()
{
	in_ns redis-cli -p 7878 "$@"
}

# The documented commands (docs/operations.md, "Install from source" and
# "Run under systemd"), the build directory outside the source tree.
install_source()
{
	if ! in_ns sh -c "cd '$src' &&
		cmake -S . -B /root/build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCSQ_TESTS=OFF &&
		cmake --build /root/build -j\"\$(nproc)\" &&
		cmake --install /root/build" >"$tmp/build.log" 2>&1; then
		cat "$tmp/build.log" >&2
		echo "FAIL: build and install" >&2
		exit 1
	fi
	in_ns systemctl daemon-reload || fail "daemon-reload"
	in_ns systemctl enable --now csqd || fail "systemctl enable --now csqd"
}

# The package (docs/operations.md, "Install from the Debian package"),
# built from a copy of the tree as git sees it (tracked and untracked
# files, not the ignored build directories), or of all of it but build*
# where git cannot tell.
PKG=/root/pkg
install_deb()
{
	if ! in_ns sh -c "set -e
		mkdir -p $PKG/csq
		if git -C '$src' rev-parse --is-inside-work-tree >/dev/null 2>&1; then
			git -C '$src' ls-files -z --cached --others --exclude-standard |
				tar -C '$src' --null -T - --ignore-failed-read -cf - 2>/dev/null
		else
			tar -C '$src' --exclude='./build*' --exclude=./.git -cf - .
		fi | tar -C $PKG/csq -xf -
		cd $PKG/csq
		dpkg-buildpackage -b -us -uc -Jauto" >"$tmp/build.log" 2>&1; then
		cat "$tmp/build.log" >&2
		echo "FAIL: dpkg-buildpackage" >&2
		exit 1
	fi
	# Lintian clean: every tag it still has is overridden, with the reason,
	# in debian/csqd.lintian-overrides (and docs/operations.md).
	in_ns sh -c "lintian --pedantic --display-info --display-experimental \
		$PKG/csq_*.changes" >"$tmp/lintian.log" 2>&1 ||
		fail "lintian exited $?"
	if grep -v '^running with root privileges' "$tmp/lintian.log" | grep -q .; then
		fail "lintian: $(cat "$tmp/lintian.log")"
	fi
	deb=$(in_ns sh -c "ls $PKG/csqd_*.deb")
	# Docker's images carry a policy-rc.d that forbids starting services
	# (exit 101); a machine run by systemd has none. The overlay's copy
	# goes, so that dpkg starts csqd as it would there.
	in_ns rm -f /usr/sbin/policy-rc.d
	if ! in_ns dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1; then
		cat "$tmp/dpkg.log" >&2
		echo "FAIL: dpkg -i $deb" >&2
		exit 1
	fi
}

if [ "$mode" = source ]; then
	install_source
	unit=/usr/local/lib/systemd/system/csqd.service
else
	install_deb
	unit=/lib/systemd/system/csqd.service
fi
in_ns systemctl is-enabled csqd >/dev/null || fail "not enabled"
[ "$(in_ns systemctl show -p FragmentPath --value csqd)" = $unit ] ||
	fail "csqd.service is not $unit"
wait_prop ActiveState active
wait_prop StatusText "serving on 1 address, engine memory"
[ "$(cli PING)" = PONG ] || fail "PING"
[ "$(cli ENQUEUE u1 | head -n 2 | tail -n 1)" = waiting ] || fail "ENQUEUE u1"
in_ns python3 -c '
import urllib.request
with urllib.request.urlopen("http://127.0.0.1:7879/healthz") as r:
    assert r.status == 200
with urllib.request.urlopen("http://127.0.0.1:7879/metrics") as r:
    assert "\ncsq_enqueued_total 1\n" in r.read().decode()
' || fail "/healthz or /metrics"

# The dynamic user and the hardening, as the kernel sees them.
pid=$(in_ns systemctl show -p MainPID --value csqd)
[ "$(in_ns ps -o user= -p "$pid")" = csqd ] ||
	fail "csqd runs as $(in_ns ps -o user= -p "$pid"), not its dynamic user"
in_ns grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/"$pid"/status ||
	fail "csqd has capabilities"
in_ns grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/"$pid"/status ||
	fail "NoNewPrivileges not in force"
in_ns grep -q '^Seccomp:[[:space:]]*2$' /proc/"$pid"/status ||
	fail "no system call filter"
# The journal: priority prefixes parsed (6 is info).
journal_has "6 listening on 127.0.0.1:7878" || fail "journal: no info line"
# `systemctl help csqd` finds what the unit points to.
for d in $(in_ns systemctl show -p Documentation --value csqd | tr -d '"'); do
	case $d in
	man:csqd\(8\))
		in_ns sh -c 'for f in /usr/share/man/man8/csqd.8* \
			/usr/local/share/man/man8/csqd.8*; do
			[ -f "$f" ] && exit 0; done; exit 1' ||
			fail "no manual page for $d"
		;;
	file:*) in_ns test -f "${d#file:}" || fail "Documentation $d: no such file" ;;
	*) fail "unexpected Documentation $d" ;;
	esac
done

# What the package promises: the system user csqd, which systemd runs the
# DynamicUser unit as since it exists; the configuration readable by its
# group only, by a statoverride; the manual page; the version.
conf_owner()
{
	in_ns stat -c '%a %U %G' /etc/csqd/csqd.conf
}
if [ "$mode" = deb ]; then
	uid=$(in_ns getent passwd csqd | cut -d: -f3)
	[ -n "$uid" ] && [ "$uid" -lt 1000 ] ||
		fail "no system user csqd (uid '$uid')"
	[ "$(in_ns ps -o uid= -p "$pid" | tr -d ' ')" = "$uid" ] ||
		fail "csqd does not run as the static user csqd ($uid)"
	[ "$(conf_owner)" = "640 root csqd" ] ||
		fail "/etc/csqd/csqd.conf is $(conf_owner), not 640 root csqd"
	in_ns dpkg-statoverride --list /etc/csqd/csqd.conf >/dev/null ||
		fail "no statoverride for /etc/csqd/csqd.conf"
	in_ns sh -c 'zcat /usr/share/man/man8/csqd.8.gz' | cmp -s - "$src/docs/csqd.8" ||
		fail "/usr/share/man/man8/csqd.8.gz is not docs/csqd.8"
	[ "$(in_ns csqd --version)" = "csqd $(in_ns dpkg-query -W -f '${Version}' csqd)" ] ||
		fail "csqd --version is not the package's version"
	# csq.so, and the file redis.conf includes to load it: a
	# redis-server that includes it has the module.
	in_ns redis-server --port 7390 --bind 127.0.0.1 --save '' \
		--appendonly no --daemonize yes --logfile /tmp/redis-module.log \
		--include /etc/csqd/redis-module.conf ||
		fail "redis-server with /etc/csqd/redis-module.conf"
	for _ in $(seq 1 100); do
		[ "$(in_ns redis-cli -p 7390 PING 2>/dev/null)" = PONG ] && break
		sleep 0.05
	done
	[ "$(in_ns redis-cli -p 7390 CSQ.VERSION 2>&1 | head -n 1)" = csq ] ||
		fail "redis-server did not load csq.so: $(in_ns cat /tmp/redis-module.log)"
	# The installed csqd on that redis-server, engine "redis" (the
	# module): a user it enqueues is in csq.so's key.
	in_ns sh -c 'printf "%s\n" "listen = [ \"127.0.0.1:7391\" ];" \
		"engine = \"redis\";" "http: { listen = \"\"; };" \
		"redis: { host = \"127.0.0.1\"; port = 7390; };" \
		>/tmp/csqd-redis.conf'
	in_ns systemd-run --unit=csqd-redis /usr/sbin/csqd \
		-c /tmp/csqd-redis.conf >/dev/null 2>&1 ||
		fail "systemd-run csqd on engine redis"
	for _ in $(seq 1 $((WAIT_S * 10))); do
		[ "$(in_ns redis-cli -p 7391 ENQUEUE r1 2>/dev/null | head -n 2 |
			tail -n 1)" = waiting ] && break
		sleep 0.1
	done
	[ "$(in_ns redis-cli -p 7391 WHERE r1 | head -n 2 | tail -n 1)" = waiting ] ||
		fail "csqd on engine redis: r1 not waiting: $(in_ns journalctl -u csqd-redis --no-pager | tail -n 5)"
	[ "$(in_ns redis-cli -p 7390 EXISTS '{csq}:state')" = 1 ] ||
		fail "csqd on engine redis: no {csq}:state in redis-server"
	in_ns systemctl stop csqd-redis
	in_ns redis-cli -p 7390 SHUTDOWN NOSAVE >/dev/null 2>&1
fi

# A reload: a lower max_tier applies, the process stays; then an invalid
# file is refused with its line at warning priority, csqd serving on.
in_ns sed -i 's/^max_tier = 9;/max_tier = 3;/' /etc/csqd/csqd.conf
in_ns systemctl reload csqd || fail "systemctl reload"
wait_prop StatusText "serving (configuration reloaded)"
case $(cli ENQUEUE u2 TIER 4) in
*"out of range"*) ;;
*) fail "max_tier 3 not in force after the reload" ;;
esac
[ "$(in_ns systemctl show -p MainPID --value csqd)" = "$pid" ] ||
	fail "the reload restarted csqd"
in_ns sh -c 'echo "no_such_key = 1;" >>/etc/csqd/csqd.conf'
in_ns systemctl reload csqd || fail "systemctl reload (invalid file)"
wait_prop StatusText "serving (reload failed: invalid configuration, the running one kept)"
line=$(in_ns grep -c '' /etc/csqd/csqd.conf)
journal_has "4 /etc/csqd/csqd.conf:$line: unknown key no_such_key" ||
	fail "journal: no warning with the line of the error"
[ "$(cli PING)" = PONG ] || fail "PING after an invalid reload"

# The state and runtime directories: the installed configuration's journal
# in /var/lib/csqd and a Unix socket in /run/csqd, the only places csqd may
# write. u1, enqueued before any restart, is still waiting after one.
in_ns grep -q '^[[:space:]]*journal = "/var/lib/csqd/journal";' /etc/csqd/csqd.conf ||
	fail "the installed configuration has no journal in /var/lib/csqd"
in_ns sed -i -e '/^no_such_key/d' \
	-e 's|^listen = .*|listen = [ "127.0.0.1:7878", "unix:/run/csqd/csqd.sock" ];|' \
	/etc/csqd/csqd.conf
in_ns systemctl restart csqd || fail "restart with a journal"
wait_prop StatusText "serving on 2 addresses, engine memory"
[ "$(in_ns redis-cli -s /run/csqd/csqd.sock PING)" = PONG ] ||
	fail "PING on /run/csqd/csqd.sock"
[ "$(cli WHERE u1 | head -n 2 | tail -n 1)" = waiting ] ||
	fail "the installed configuration's journal did not keep u1 over a restart"
cli ENQUEUE kept >/dev/null
in_ns systemctl restart csqd || fail "restart"
wait_prop ActiveState active
[ "$(cli WHERE kept | head -n 2 | tail -n 1)" = waiting ] ||
	fail "the journal in /var/lib/csqd did not keep a user over a restart"

# Restart=on-failure after a kill, and the watchdog: a stopped loop is
# killed and csqd started again.
kill_main KILL
wait_prop NRestarts 1
wait_prop ActiveState active
in_ns mkdir -p /etc/systemd/system/csqd.service.d
# A stopped process keeps the watchdog's SIGABRT pending: SIGKILL after 1 s.
in_ns sh -c 'printf "[Service]\nWatchdogSec=1s\nTimeoutAbortSec=1s\n" >/etc/systemd/system/csqd.service.d/watchdog.conf'
in_ns systemctl daemon-reload
in_ns systemctl restart csqd
wait_prop ActiveState active
pid=$(in_ns systemctl show -p MainPID --value csqd)
kill_main STOP
wait_prop NRestarts 1
wait_prop ActiveState active
in_ns journalctl --no-pager -o cat | grep -q 'csqd.service: Watchdog timeout' ||
	fail "no watchdog timeout in the journal"
[ "$(in_ns systemctl show -p MainPID --value csqd)" != "$pid" ] ||
	fail "the watchdog did not restart csqd"

# A broken file at start: exit 78, and no restart loop.
in_ns sh -c 'echo "no_such_key = 1;" >>/etc/csqd/csqd.conf'
in_ns systemctl restart csqd 2>/dev/null && fail "started on an invalid file"
wait_prop ActiveState failed
wait_prop ExecMainStatus 78
journal_has "3 1 error in /etc/csqd/csqd.conf; not starting" ||
	fail "journal: no error line for a refused start"
sleep 3 # RestartSec=2s: a restart would have come
[ "$(in_ns systemctl show -p ActiveState --value csqd)" = failed ] ||
	fail "restarted after exit 78"

# A clean stop.
in_ns sed -i '/^no_such_key/d' /etc/csqd/csqd.conf
in_ns systemctl start csqd || fail "start after the fix"
wait_prop ActiveState active
in_ns systemctl stop csqd || fail "stop"
wait_prop ActiveState inactive
wait_prop Result success
journal_has "6 stopped" || fail "journal: no 'stopped'"

# The package's life after the first install: an upgrade (the same .deb
# again: dpkg runs it as one) restarts csqd, keeps the site's edited file
# with its owner and mode, and the journal keeps the waiting users; removal
# stops csqd and keeps the configuration; purge leaves neither it nor the
# state.
if [ "$mode" = deb ]; then
	in_ns systemctl start csqd || fail "start before the upgrade"
	wait_prop ActiveState active
	pid=$(in_ns systemctl show -p MainPID --value csqd)
	cli ENQUEUE before-upgrade >/dev/null
	in_ns sed -i 's/^max_tier = .*/max_tier = 4;/' /etc/csqd/csqd.conf
	if ! in_ns dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1; then
		cat "$tmp/dpkg.log" >&2
		fail "dpkg -i again (an upgrade)"
	fi
	wait_prop ActiveState active
	[ "$(in_ns systemctl show -p MainPID --value csqd)" != "$pid" ] ||
		fail "the upgrade did not restart csqd"
	[ "$(cli WHERE before-upgrade | head -n 2 | tail -n 1)" = waiting ] ||
		fail "a user waiting before the upgrade is gone after it"
	in_ns grep -q '^max_tier = 4;' /etc/csqd/csqd.conf ||
		fail "the upgrade replaced the site's /etc/csqd/csqd.conf"
	[ "$(conf_owner)" = "640 root csqd" ] ||
		fail "after the upgrade /etc/csqd/csqd.conf is $(conf_owner)"

	in_ns dpkg -r csqd >"$tmp/dpkg.log" 2>&1 || fail "dpkg -r csqd"
	[ "$(in_ns systemctl show -p ActiveState --value csqd)" = inactive ] ||
		fail "csqd still runs after dpkg -r"
	in_ns test -f /etc/csqd/csqd.conf || fail "dpkg -r removed the configuration"
	in_ns test -e /usr/sbin/csqd && fail "dpkg -r left /usr/sbin/csqd"
	in_ns dpkg -P csqd >"$tmp/dpkg.log" 2>&1 || fail "dpkg -P csqd"
	for f in /etc/csqd /var/lib/csqd /var/lib/private/csqd; do
		in_ns sh -c "[ -e $f ] || [ -L $f ]" && fail "dpkg -P left $f"
	done
	in_ns dpkg-statoverride --list /etc/csqd/csqd.conf >/dev/null &&
		fail "dpkg -P left the statoverride"
	[ "$(in_ns systemctl show -p LoadState --value csqd)" = not-found ] ||
		fail "dpkg -P left csqd.service loadable"
fi

[ $status -eq 0 ] && echo "csqd under systemd, installed by $mode: OK"
exit $status
