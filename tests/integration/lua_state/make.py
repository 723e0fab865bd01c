#!/usr/bin/env python3
"""Makes the fixture of test_import.c: a state written by the Lua engine.

Run once, from a build of a commit that still has the Lua engine
(daemon/lua/, redis.module = false): it starts a redis-server and a csqd
(a test build, for DEBUG CLOCK) on engine = "redis" with the Lua script,
drives a representative state through csqd at fixed times, and writes
beside itself:

  keys.resp    every key of the prefix as Redis commands in RESP (HSET,
               ZADD, SADD, RPUSH, SET), exact bytes (some fields are
               binary): a test loads it into a fresh redis-server with
               no Lua by writing it to a connection
  script.txt   what that engine answered then: every view of the state
               (WHERE of each user, SERVICERS, ROOMS, QUEUES, QSTATS, QLEN,
               QUEUE, STATS), then at later times (deadlines acting) the
               views again, and requests that match users; a line
               "@ <ms>" sets DEBUG CLOCK, "> REQUEST" is sent and the next
               line is its reply as the harness's reply_repr prints it
  config       the csqd configuration it ran under (the test's csqd on
               the module runs under the same)
  made-on      the commit and the time

This script will not run once the Lua engine is deleted (issue 34): the
fixture is what it made, kept.

Usage: make.py <csqd binary> [redis-server binary]
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PREFIX = "lua"
T0 = 1_700_000_000_000  # the fixture's first time, ms (DEBUG CLOCK)
HERE = os.path.dirname(os.path.abspath(__file__))

CONFIG = """servicer_ttl = 60;
user_ttl = 600;
queues = (
  { name = "sales"; overflow_after = 120; overflow_to = "support"; },
  { name = "vip"; aging_every = 90; aging_max_tier = 5; service_level = 30;
    strategy = "least_busy"; },
  { name = "support"; max_length = 50; }
);
"""


class Resp:
    """A RESP2 connection: commands out, replies in (bytes kept)."""

    def __init__(self, port):
        for _ in range(200):
            try:
                self.s = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("nothing listens on %d" % port)
        self.buf = b""

    def _fill(self):
        d = self.s.recv(65536)
        if not d:
            raise SystemExit("connection closed")
        self.buf += d

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        v, self.buf = self.buf[:n], self.buf[n + 2:]
        return v

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return ("status", rest)
        if t == b"-":
            return ("error", rest)
        if t == b":":
            return ("int", int(rest))
        if t == b"$":
            n = int(rest)
            return ("nil", None) if n < 0 else ("bulk", self._exact(n))
        if t == b"*":
            n = int(rest)
            if n < 0:
                return ("nil", None)
            return ("array", [self.read() for _ in range(n)])
        raise SystemExit("bad reply %r" % line)

    def call(self, *args):
        self.s.sendall(encode(args))
        return self.read()


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = b"%d" % a
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def repr_str(b, quoted):
    """As tests/integration/harness_assert.c's repr_str."""
    out = []
    for i, c in enumerate(b):
        if i == 300:
            out.append("...")
            break
        ch = chr(c)
        if quoted and ch in "'\\":
            out.append("\\" + ch)
        elif c < 0x20 or c >= 0x7F:
            out.append("\\x%02x" % c)
        else:
            out.append(ch)
    return "".join(out)


def reply_repr(r):
    """As the harness's reply_repr."""
    t, v = r
    if t == "status":
        return "+" + repr_str(v, False)
    if t == "error":
        return "-" + repr_str(v, False)
    if t == "int":
        return ":%d" % v
    if t == "nil":
        return "nil"
    if t == "bulk":
        return "'" + repr_str(v, True) + "'"
    return "[" + ",".join(reply_repr(e) for e in v) + "]"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    csqd = sys.argv[1]
    redis_bin = sys.argv[2] if len(sys.argv) > 2 else "redis-server"
    tmp = tempfile.mkdtemp(prefix="csq-lua-fixture-")
    rport, cport = free_port(), free_port()
    redis = subprocess.Popen(
        [redis_bin, "--port", str(rport), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no", "--dir", tmp],
        stdout=subprocess.DEVNULL)
    conf = os.path.join(tmp, "csqd.conf")
    with open(conf, "w") as f:
        f.write('listen = [ "127.0.0.1:%d" ];\nengine = "redis";\n' % cport)
        f.write('redis: { host = "127.0.0.1"; port = %d; prefix = "%s"; '
                'module = false; };\nhttp: { listen = ""; };\n' % (rport, PREFIX))
        f.write(CONFIG)
    log = open(os.path.join(tmp, "csqd.log"), "w")
    d = subprocess.Popen([csqd, "-c", conf], stdout=log, stderr=log)
    try:
        run(rport, cport)
    finally:
        d.terminate()
        d.wait()
        redis.terminate()
        redis.wait()
        sys.stderr.write(open(os.path.join(tmp, "csqd.log")).read()[-2000:])
        shutil.rmtree(tmp, ignore_errors=True)


def run(rport, cport):
    c = Resp(cport)
    for _ in range(200):
        if c.call("QLEN", "default")[0] == "int":
            break
        time.sleep(0.05)
    now = [T0]

    def at(ms):
        now[0] = T0 + ms
        r = c.call("DEBUG", "CLOCK", str(now[0]))
        assert r == ("status", b"OK"), r

    def do(*args, expect=None):
        r = c.call(*args)
        if r[0] == "error" and expect != "error":
            raise SystemExit("%s: %r" % (" ".join(args), r))
        return r

    at(0)
    # Servicers: a1 two rooms on sales and support with wrap-ups, a2 one
    # room on vip with offers, a3 on support (paused later), a4 three
    # rooms on sales and vip.
    do("HEARTBEAT", "a1", "CAPACITY", "2", "QUEUES", "sales,support",
       "TTL", "300", "WRAPUP", "40")
    do("HEARTBEAT", "a2", "CAPACITY", "1", "QUEUES", "vip", "TTL", "300",
       "OFFER", "45")
    do("HEARTBEAT", "a3", "CAPACITY", "1", "QUEUES", "support", "TTL",
       "300")
    do("HEARTBEAT", "a4", "CAPACITY", "3", "QUEUES", "sales,vip", "TTL",
       "300")
    # History for the queues' numbers and rings: users matched at once,
    # conversations ended, users who left.
    t = 1000
    for i in range(6):
        at(t)
        do("ENQUEUE", "h%d" % i, "QUEUE", ["sales", "vip", "support"][i % 3],
           "TIER", str(i % 3))
        t += 700
    at(t)
    do("ACCEPT", "a2/0", expect="error")  # offered to a2: taken
    t += 2000
    # Free every room again (a1's go to wrap-up; a3's has a user).
    for room in ("a1/0", "a1/1", "a2/0", "a3/0", "a4/0", "a4/1", "a4/2"):
        at(t)
        do("RELEASE", room, expect="error")
        t += 300
    # a1's wrap-ups run out; a3 pauses.
    t += 41000
    at(t)
    do("PAUSE", "a3")
    # Users who wait and leave: abandons in the rings.
    for i in range(3):
        at(t)
        do("HEARTBEAT", "a1", "TTL", "300")
        t += 500
    at(t)
    # Fill every ready room: a1 2, a2 1 (offered), a4 3.
    for i in range(7):
        at(t)
        do("ENQUEUE", "f%d" % i, "QUEUE", ["sales", "vip"][i % 2], "TIER",
           str(i % 2), "TTL", "900")
        t += 450
    at(t)
    # Now everyone waits: several queues and tiers.
    waiting = [("w1", "sales", 0), ("w2", "sales", 2), ("w3", "vip", 1),
               ("w4", "support", 0), ("w5", "sales", 0), ("w6", "vip", 0),
               ("w7", "support", 3), ("w8", "default", 0),
               ("w9", "sales", 1), ("l1", "sales", 0), ("l2", "vip", 0)]
    for uid, q, tier in waiting:
        at(t)
        do("ENQUEUE", uid, "QUEUE", q, "TIER", str(tier))
        t += 830
    # A user held for a3 (paused: it keeps its windows).
    at(t)
    do("ENQUEUE", "p1", "QUEUE", "support", "PREFER", "a3", "600")
    t += 400
    # A user without a TTL.
    at(t)
    do("ENQUEUE", "n1", "QUEUE", "vip", "TTL", "0")
    t += 900
    # Two leave (the rings' abandons).
    at(t)
    do("LEAVE", "l1")
    do("LEAVE", "l2")
    t += 1500
    # One of a4's conversations ends: its room takes the next (sales or
    # vip, least busy), and one of a1's goes to wrap-up.
    at(t)
    r = do("ROOMS", "a1")
    do("RELEASE", "a1/0")
    t += 1200
    at(t)
    do("RELEASE", "a4/1")
    t += 700
    at(t)
    # The servicers keep alive; time passes so aging ticks once for vip.
    for s in ("a1", "a2", "a3", "a4"):
        do("HEARTBEAT", s)
    t += 30000
    at(t)
    do("HEARTBEAT", "a1")
    do("HEARTBEAT", "a2")
    do("HEARTBEAT", "a4")
    do("HEARTBEAT", "a3")
    # a2's retry window ends (an offer to it ran out): it is offered f1,
    # accepts (the room's taking noted), gets a second room, offered w3.
    t = 109000
    at(t)
    do("HEARTBEAT", "a2")
    t += 1000
    at(t)
    do("ACCEPT", "a2/0")
    t += 1000
    at(t)
    do("HEARTBEAT", "a2", "CAPACITY", "2")
    t += 500
    at(t)
    do("RELEASE", "a1/1")  # a wrap-up of 40 s
    t += 500
    at(t)
    r = Resp(rport)
    out = ["@ %d\n" % (T0 + t)]
    views(c, r, out, t)
    # The state as it is now is the fixture; what follows is what that
    # engine answered from it, which the module must answer the same.
    dump(r, t)
    # Deadlines: w3's offer runs out (a2 missed it, a retry window),
    # f6 overflows from sales to support, vip's users age.
    t = 180000
    script(c, out, t, [])
    views(c, r, out, t)
    # Conversations end: who is matched next, in which order.
    t += 1000
    script(c, out, t, [("RELEASE", "a4/0"), ("RELEASE", "a4/1"),
                       ("RELEASE", "a1/1"), ("RESUME", "a3"),
                       ("ENQUEUE", "x1", "QUEUE", "vip", "TIER", "4"),
                       ("RELEASE", "a4/2"), ("LEAVE", "w5")])
    t += 50000
    script(c, out, t, [("HEARTBEAT", "a1"), ("ACCEPT", "a2/1"),
                       ("RELEASE", "a2/0"), ("RELEASE", "a1/0")])
    views(c, r, out, t)
    with open(os.path.join(HERE, "script.txt"), "w") as f:
        f.write("".join(out))


def script(c, out, t, cmds):
    """At time t: the commands, each with its reply."""
    r = c.call("DEBUG", "CLOCK", str(T0 + t))
    assert r == ("status", b"OK"), r
    out.append("@ %d\n" % (T0 + t))
    for cmd in cmds:
        out.append("> %s\n%s\n" % (" ".join(cmd), reply_repr(c.call(*cmd))))


def views(c, r, out, t):
    """Every view of the state at time t."""
    def view(*args):
        out.append("> %s\n%s\n" % (" ".join(args),
                                    reply_repr(c.call(*args))))

    out.append("# the views at %d\n" % (T0 + t))
    _, ulist = r.call("HKEYS", "{%s}:users" % PREFIX)
    for u in sorted(u[1].decode() for u in ulist):
        view("WHERE", u)
    view("SERVICERS")
    for s in ("a1", "a2", "a3", "a4"):
        view("ROOMS", s)
    view("QUEUES")
    _, qlist = c.call("QUEUES")
    for q in qlist:
        name = q[1].decode()
        view("QSTATS", name)
        view("QLEN", name)
        view("QUEUE", name)
    view("STATS")


def dump(r, t):
    keys, cursor = [], b"0"
    while True:
        _, (cur, found) = r.call("SCAN", cursor, "MATCH",
                                 "{%s}:*" % PREFIX, "COUNT", "1000")
        cursor = cur[1]
        keys += [k[1] for k in found[1]]
        if cursor == b"0":
            break
    cmds = []
    for k in sorted(set(keys)):
        ttl = r.call("PTTL", k)[1]
        assert ttl == -1, (k, ttl)
        kind = r.call("TYPE", k)[1]
        if kind == b"hash":
            _, flat = r.call("HGETALL", k)
            vals = [e[1] for e in flat]
            pairs = sorted(zip(vals[0::2], vals[1::2]))
            cmds.append([b"HSET", k] + [x for p in pairs for x in p])
        elif kind == b"zset":
            _, flat = r.call("ZRANGE", k, "0", "-1", "WITHSCORES")
            vals = [e[1] for e in flat]
            args = []
            for m, s in zip(vals[0::2], vals[1::2]):
                args += [s, m]
            cmds.append([b"ZADD", k] + args)
        elif kind == b"set":
            _, ms = r.call("SMEMBERS", k)
            cmds.append([b"SADD", k] + sorted(e[1] for e in ms))
        elif kind == b"list":
            _, ms = r.call("LRANGE", k, "0", "-1")
            cmds.append([b"RPUSH", k] + [e[1] for e in ms])
        elif kind == b"string":
            cmds.append([b"SET", k, r.call("GET", k)[1]])
        else:
            raise SystemExit("key %r of type %r" % (k, kind))
    with open(os.path.join(HERE, "keys.resp"), "wb") as f:
        for cmd in cmds:
            f.write(encode(cmd))
    with open(os.path.join(HERE, "config"), "w") as f:
        f.write(CONFIG)
    def git(*args):
        return subprocess.run(["git", "-C", HERE] + list(args),
                              capture_output=True, text=True).stdout.strip()
    with open(os.path.join(HERE, "made-on"), "w") as f:
        f.write("commit %s, whose daemon/lua/ is that of %s (the last "
                "commit that changed it)\n" %
                (git("rev-parse", "HEAD"),
                 git("log", "-1", "--format=%H", "--", "../../../daemon/lua")))
        f.write("made %s UTC by make.py; keys %d; state at %d ms\n" %
                (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), len(cmds),
                 T0 + t))


if __name__ == "__main__":
    main()
