"""Starts the real csqd (and, for the Redis engine, a private redis-server)
on free ports of 127.0.0.1 for the client tests, and stops them at the end.

Usage from a test: with Daemons(csqd_path, engine) as d: d.port, d.redis...
The engine comes from CSQ_TEST_ENGINE (memory by default), as in the C
suite.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

WAIT_S = 10  # a process that is not up by then has failed


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _send(port, line, auth=None):
    """One inline command on a new connection (after AUTH user password
    when auth is that pair); the first line of its reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        before = "AUTH %s %s\r\n" % auth if auth else ""
        s.sendall((before + line + "\r\n").encode())
        f = s.makefile("rb")
        if auth:
            f.readline()
        return f.readline().decode().rstrip("\r\n")


def wait_answer(port, line, good, auth=None):
    """Waits until `line` gets a reply for which good(reply) is true."""
    deadline = time.monotonic() + WAIT_S
    last = None
    while time.monotonic() < deadline:
        try:
            last = _send(port, line, auth)
            if good(last):
                return last
        except OSError as e:
            last = str(e)
        time.sleep(0.05)
    raise RuntimeError(f"port {port}: no good reply to {line!r} (last {last!r})")


def redis_module_args():
    """The Redis engine is csq.so: redis-server loads the module that
    $CSQ_TEST_REDIS_MODULE names (ctest sets it)."""
    path = os.environ.get("CSQ_TEST_REDIS_MODULE", "")
    if not path:
        raise AssertionError("CSQ_TEST_REDIS_MODULE names no csq.so "
                             "(ctest sets it): the Redis engine is "
                             "the module")
    return ["--loadmodule", path]


class RedisServer:
    """redis-server with an append-only file, so that a restart keeps the
    state: an outage test can then tell "not applied" from "lost"."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "redis")
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.proc = None

    def start(self):
        self.log = open(os.path.join(self.dir, "log"), "ab")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "yes", "--appendfsync", "always",
             "--dir", self.dir] + redis_module_args(),
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_answer(self.port, "PING", lambda r: r == "+PONG")

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(WAIT_S)
            self.proc = None
            self.log.close()


class Daemons:
    def __init__(self, csqd, engine=None, extra_conf="", auth=None):
        self.csqd = csqd
        self.engine = engine or os.environ.get("CSQ_TEST_ENGINE", "memory")
        self.extra_conf = extra_conf
        # (user, password) when extra_conf has users: every connection,
        # the harness's own too, must log in.
        self.auth = auth
        self.redis = None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="csq-clients.")
        conf = ""
        if self.engine == "redis":
            self.redis = RedisServer(self.dir)
            self.redis.start()
            conf = ('engine = "redis";\nredis: { port = %d; prefix = "cl"; };\n'
                    % self.redis.port)
        self.port = free_port()
        conf += ('listen = [ "127.0.0.1:%d" ];\nhttp: { listen = ""; };\n%s\n'
                 % (self.port, self.extra_conf))
        self.conf_path = os.path.join(self.dir, "csqd.conf")
        with open(self.conf_path, "w") as f:
            f.write(conf)
        self.log_path = os.path.join(self.dir, "csqd.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([self.csqd, "-c", self.conf_path],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_engine()
        return self

    def wait_engine(self):
        """Until a state command no longer answers TRYAGAIN."""
        wait_answer(self.port, "QLEN default", lambda r: r.startswith(":"),
                    self.auth)

    def wait_engine_down(self):
        wait_answer(self.port, "QLEN default",
                    lambda r: r.startswith("-TRYAGAIN"))

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def __exit__(self, *exc):
        self.proc.terminate()
        status = self.proc.wait(WAIT_S)
        self.log.close()
        if self.redis is not None:
            self.redis.stop()
        if exc[0] is not None or status != 0:
            print("---- csqd log ----")
            print(self.log_text())
        shutil.rmtree(self.dir, ignore_errors=True)
        if status != 0 and exc[0] is None:
            raise RuntimeError(f"csqd exited with {status}")
        return False


class Runner:
    """Runs the test functions given, each with a fresh Daemons, and ends
    with the plain "N passed, N failed" line."""

    def __init__(self, csqd):
        self.csqd = csqd
        self.passed = self.failed = 0

    def run(self, tests, extra_conf="", auth=None):
        import traceback
        for t in tests:
            try:
                with Daemons(self.csqd, extra_conf=extra_conf,
                             auth=auth) as d:
                    t(d)
                self.passed += 1
                print(f"ok {t.__name__}")
            except Exception:
                self.failed += 1
                print(f"FAIL {t.__name__}")
                traceback.print_exc()

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
