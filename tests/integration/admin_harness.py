"""What the admin view's tests share (test_admin_http.py, test_admin_page.py,
scripts/bench-admin): csqd started as a process on free ports with a private
configuration, a private redis-server for the Redis engine, a client of the
HTTP API and of the event stream (Server-Sent Events), and a model of the
queues that follows the events.
"""
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import redis

START_TIMEOUT = 10.0
START_TRIES = 5  # starts of a process whose free port was taken meanwhile


def free_port():
    return free_ports(1)[0]


def free_ports(n):
    """n free ports, all different: each socket is held until all are
    picked (two picked one after the other may be the same)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_until(what, fn, timeout=10.0, step=0.02):
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > deadline:
            raise AssertionError("not within %.1f s: %s" % (timeout, what))
        time.sleep(step)


def redis_module_args(debug_clock=True):
    """The Redis engine is csq.so: redis-server loads the module that
    $CSQ_TEST_REDIS_MODULE names (ctest sets it). With debug_clock, as
    harness_process.c loads it unless REDISD_MODULE_CLOCK: its time is the
    one csqd's DEBUG CLOCK sets (a test build's), and csqd's reaper acts on
    the deadlines instead of the module's timer. Without, Redis's own clock
    and timer (the benchmarks: what a deployment runs)."""
    path = os.environ.get("CSQ_TEST_REDIS_MODULE", "")
    if not path:
        raise AssertionError("CSQ_TEST_REDIS_MODULE names no csq.so")
    return ["--loadmodule", path] + (["debug-clock"] if debug_clock else [])


class Redisd:
    """A private redis-server for the Redis engine, on a free port, with
    csq.so loaded (debug_clock: redis_module_args)."""

    def __init__(self, d, debug_clock=True):
        self.d = d
        self.debug_clock = debug_clock
        # A free port may be taken by another test's process before
        # redis-server binds it: then it exits, and starts on another.
        for attempt in range(START_TRIES):
            self.port = free_port()
            try:
                self._start()
                return
            except AssertionError:
                if self.proc.poll() is None or attempt + 1 == START_TRIES:
                    raise

    def _start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.d]
            + redis_module_args(self.debug_clock),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until("redis-server answers", self._ping)

    def restart(self):
        """A new, empty redis-server on the same port: Redis's state went
        back to nothing, and its event ids with it."""
        self.stop()
        self._start()

    def _ping(self):
        if self.proc.poll() is not None:
            raise AssertionError("redis-server exited (%d) on port %d"
                                 % (self.proc.returncode, self.port))
        try:
            return redis.Redis(port=self.port).ping()
        except redis.exceptions.ConnectionError:
            return False

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Csqd:
    """csqd on free ports (RESP and HTTP), memory engine or redisd's."""

    def __init__(self, binary, d, extra="", redisd=None, prefix=None,
                 http_extra="", user=None, password=None, ports=None):
        """ports: (RESP, HTTP) to listen on, those of a csqd stopped
        before, to start it again where its clients look for it."""
        self.d = d
        self.conf = os.path.join(d, "csqd.conf")
        self.log = os.path.join(d, "csqd.log")
        engine = 'engine = "memory";\n'
        if redisd is not None:
            engine = ('engine = "redis";\nredis: { port = %d; prefix = '
                      '"%s"; };\n' % (redisd.port, prefix or "admin"))
        # Every answer fresh, as the tests compare them with what they
        # just did (http.cache_ms, which shares one for a second by
        # default, has its own cases).
        if "cache_ms" not in http_extra:
            http_extra = "cache_ms = 0; " + http_extra
        self.user, self.password = user, password
        for line in extra.splitlines():
            if line.strip().startswith("requirepass") and password is None:
                self.password = line.split('"')[1]
        # Free ports may be taken by another test's process before csqd
        # binds them: then csqd exits, and starts again on others (not
        # when the ports were given).
        for attempt in range(START_TRIES):
            self.port, self.http_port = ports or free_ports(2)
            with open(self.conf, "w") as f:
                f.write('listen = [ "127.0.0.1:%d" ];\n%s'
                        'http: { listen = "127.0.0.1:%d"; %s };\n%s\n'
                        % (self.port, engine, self.http_port, http_extra,
                           extra))
            self.logf = open(self.log, "w")
            self.proc = subprocess.Popen([binary, "-c", self.conf],
                                         stdout=self.logf, stderr=self.logf)
            try:
                wait_until("csqd ready:\n" + self.log, self._ready)
                return
            except AssertionError:
                if (ports is not None or self.proc.poll() is None
                        or attempt + 1 == START_TRIES
                        or "Address already in use" not in self.read_log()):
                    raise
                self.logf.close()

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("csqd exited: %s" % self.read_log())
        try:
            c = self.client()
            return c.execute_command("QLEN", "default") is not None
        except redis.exceptions.RedisError:
            return False

    def client(self):
        return redis.Redis(port=self.port, username=self.user,
                           password=self.password, decode_responses=True,
                           socket_timeout=30)

    def read_log(self):
        with open(self.log) as f:
            return f.read()

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=20)
        self.logf.close()
        return rc


def basic(user, password):
    raw = ("%s:%s" % (user, password)).encode()
    return "Basic " + base64.b64encode(raw).decode()


class Http:
    """Requests to csqd's HTTP endpoint, one connection each."""

    def __init__(self, port, auth=None):
        self.port = port
        self.auth = auth

    def request(self, method, path, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h = dict(headers or {})
        if self.auth is not None and "Authorization" not in h:
            h["Authorization"] = self.auth
        c.request(method, path, headers=h)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, dict(r.getheaders()), body

    def json(self, path):
        status, _, body = self.request("GET", path)
        if status != 200:
            raise AssertionError("GET %s: %d %r" % (path, status, body))
        return json.loads(body)


class Sse:
    """A reader of /api/events over a raw socket: frames as dicts with
    "event", "id" (or None) and "data" (parsed when JSON)."""

    def __init__(self, port, last_event_id=None, query=None, auth=None,
                 rcvbuf=None, path="/api/events", headers=None):
        self.sock = socket.socket()
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", port))
        path += "?" + query if query else ""
        req = "GET %s HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n" \
            % path
        if last_event_id is not None:
            req += "Last-Event-ID: %s\r\n" % last_event_id
        if auth is not None:
            req += "Authorization: %s\r\n" % auth
        for k, v in (headers or {}).items():
            req += "%s: %s\r\n" % (k, v)
        self.sock.sendall((req + "\r\n").encode())
        self.buf = b""
        self.status = None
        self.headers = {}
        self.closed = False
        self.chunked = False
        self.raw = b""  # body bytes, chunking removed

    def _recv(self, timeout):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except OSError:  # reset, aborted...: the stream is closed
            data = b""
        if not data:
            self.closed = True
            return False
        self.buf += data
        return True

    def _parse_head(self):
        if self.status is not None or b"\r\n\r\n" not in self.buf:
            return
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        for line in lines[1:]:
            k, v = line.split(":", 1)
            self.headers[k.strip().lower()] = v.strip()
        self.chunked = self.headers.get("transfer-encoding") == "chunked"

    def _dechunk(self):
        if self.status is None:
            return
        if not self.chunked:
            self.raw += self.buf
            self.buf = b""
            return
        while b"\r\n" in self.buf:
            size_line, rest = self.buf.split(b"\r\n", 1)
            size = int(size_line, 16)
            if len(rest) < size + 2:
                return
            self.raw += rest[:size]
            self.buf = rest[size + 2:]

    def head(self, timeout=5.0):
        deadline = time.time() + timeout
        while self.status is None and not self.closed:
            self._recv(max(0.01, deadline - time.time()))
            self._parse_head()
            if time.time() > deadline:
                raise AssertionError("no answer from /api/events")
        return self.status

    def frames(self, timeout=0.2, at_most=1.0):
        """The frames that came within timeout of each other, read for no
        longer than at_most seconds: under a steady load frames never pause
        for timeout, and a reader must still come back to its caller."""
        out = []
        stop = time.time() + at_most
        while True:
            got = self._recv(timeout)
            self._parse_head()
            self._dechunk()
            blocks = self.raw.split(b"\n\n")
            self.raw = blocks.pop()
            for block in blocks:
                f = {"event": "message", "id": None, "data": None,
                     "comment": False}
                lines = block.decode().split("\n")
                for line in lines:
                    if line.startswith(":"):
                        f["comment"] = True
                        continue
                    k, _, v = line.partition(":")
                    v = v[1:] if v.startswith(" ") else v
                    if k == "event":
                        f["event"] = v
                    elif k == "id":
                        f["id"] = int(v)
                    elif k == "data":
                        try:
                            f["data"] = json.loads(v)
                        except ValueError:
                            f["data"] = v
                    elif k == "retry":
                        f["event"] = "retry"
                if not f["comment"] and f["event"] != "retry":
                    out.append(f)
            if not got or time.time() > stop:
                return out

    def until(self, pred, timeout=10.0):
        """Frames until pred(all frames so far) holds."""
        got = []
        deadline = time.time() + timeout
        while not pred(got):
            if time.time() > deadline or self.closed:
                raise AssertionError("stream: not within %.1f s (%d frames,"
                                     " closed=%s)" % (timeout, len(got),
                                                      self.closed))
            got += self.frames(0.05)
        return got

    def close(self):
        self.sock.close()


class Model:
    """The waiting lines as the events tell them: each queue's users in
    service order, from a snapshot and its pages, then every event after
    the snapshot's id (the page does the same in admin.js)."""

    def __init__(self):
        self.lines = {}
        self.last_id = None

    def load(self, http, snapshot):
        self.last_id = snapshot["id"]
        for q in snapshot["queues"]:
            users = []
            while len(users) < q["waiting"]:
                page = http.json("/api/queue/%s?offset=%d&count=1000"
                                 % (q["name"], len(users)))
                assert page["id"] == snapshot["id"], (page["id"],
                                                      snapshot["id"])
                users += [u["user"] for u in page["users"]]
            self.lines[q["name"]] = users

    def _remove(self, q, user):
        line = self.lines.setdefault(q, [])
        if user in line:
            line.remove(user)
            return True
        return False

    def _insert(self, q, user, position):
        self.lines.setdefault(q, []).insert(position - 1, user)

    def apply(self, f):
        ev, d = f["event"], f["data"]
        if f["id"] is None or f["id"] <= self.last_id:
            return
        assert f["id"] == self.last_id + 1, (self.last_id, f["id"])
        self.last_id = f["id"]
        if ev == "queued":
            self._insert(d["queue"], d["user"], d["position"])
        elif ev in ("rescored", "requeued", "declined", "transferred",
                    "overflowed"):
            self._remove(d.get("from_queue", d["queue"]), d["user"])
            self._remove(d["queue"], d["user"])
            self._insert(d["queue"], d["user"], d["position"])
        elif ev in ("matched", "offered"):
            self._remove(d.get("from_queue", d["queue"]), d["user"])
            self._remove(d["queue"], d["user"])
        elif ev == "left":
            self._remove(d["queue"], d["user"])


def drain(port, path, seconds):
    """An event stream read as fast as the socket gives it, into path,
    for at most seconds or until a file path + ".stop" exists: a reader
    in a process of its own, which no thread of the test's holds up.
    A test that needs a count of frames waits for it (drain_until) and
    then stops the reader: on a loaded machine the frames may take far
    longer than they do alone, so the reader's time is only a bound."""
    return subprocess.Popen([sys.executable, os.path.abspath(__file__),
                             "drain", str(port), path, str(seconds)])


def drain_until(proc, path, count, timeout):
    """Waits until the drain into path has count frames, then stops it."""
    try:
        wait_until("%d frames on the drained stream" % count,
                   lambda: len(drain_frames(path)) >= count,
                   timeout=timeout, step=0.25)
    finally:
        open(path + ".stop", "w").close()
        proc.wait(30)


def drain_frames(path):
    """The frames a drain wrote."""
    with open(path, "rb") as f:
        data = f.read()
    sse = Sse.__new__(Sse)
    sse.buf, sse.status, sse.headers = data, None, {}
    sse.closed, sse.chunked, sse.raw = True, False, b""
    sse._recv = lambda timeout: False
    return sse.frames(0)


def tempdir(prefix):
    return tempfile.mkdtemp(prefix=prefix)


def rmtree(d):
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "drain":
    _s = Sse(int(sys.argv[2]))
    _end = time.time() + float(sys.argv[4])
    with open(sys.argv[3], "wb") as _out:
        _s.sock.settimeout(0.1)
        while time.time() < _end and not os.path.exists(sys.argv[3] + ".stop"):
            try:
                _data = _s.sock.recv(1 << 20)
            except socket.timeout:
                continue
            if not _data:
                break
            _out.write(_data)
            _out.flush()
