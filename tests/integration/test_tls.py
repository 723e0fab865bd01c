#!/usr/bin/env python3
"""TLS (protocol-v2 section 10), driven by real clients: redis-cli --tls
and redis-py with ssl=True against csqd's tls.listen port, a plain-text
client on that port (refused, nothing crashes), TLS 1.1 refused, an
expired certificate, a wrong CA, client certificates (verify_clients), a
certificate renewed in place and reloaded by SIGHUP, and the HTTP
endpoint over TLS (http.tls). Every certificate is made here with the
openssl command.

usage: test_tls.py CSQD REDIS_CLI
The engine is $CSQ_TEST_ENGINE (memory, or redis: a redis-server of its
own is started).
"""
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import warnings

import redis

from admin_harness import free_port, free_ports

CSQD = sys.argv[1] if len(sys.argv) > 1 else "csqd"
REDIS_CLI = sys.argv[2] if len(sys.argv) > 2 else "redis-cli"
ENGINE = os.environ.get("CSQ_TEST_ENGINE", "memory")
START_TIMEOUT = 10.0


def run(*args, check=True, **kw):
    return subprocess.run(args, check=check, capture_output=True, text=True,
                          timeout=60, **kw)


class Certs:
    """A CA, a second CA that csqd does not trust, and certificates:
    the server's (127.0.0.1), an expired one, a client's of each CA."""

    def __init__(self, d):
        self.d = d
        self.ca = self._ca("ca")
        self.other = self._ca("other")
        self.server = self._signed("server", "ca", server=True)
        self.server2 = self._signed("server2", "ca", server=True)
        self.client = self._signed("client", "ca")
        self.stranger = self._signed("stranger", "other")
        self.expired = self._expired("expired")

    def path(self, name, ext):
        return os.path.join(self.d, name + "." + ext)

    def _key(self, name):
        run("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout",
            "-out", self.path(name, "key"))

    def _ca(self, name):
        self._key(name)
        run("openssl", "req", "-x509", "-new", "-key", self.path(name, "key"),
            "-subj", "/CN=csq test %s" % name, "-days", "30",
            "-out", self.path(name, "crt"))
        return self.path(name, "crt")

    def _csr(self, name, server):
        self._key(name)
        ext = self.path(name, "ext")
        with open(ext, "w") as f:
            if server:
                f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                        "extendedKeyUsage=serverAuth\n")
            else:
                f.write("extendedKeyUsage=clientAuth\n")
        run("openssl", "req", "-new", "-key", self.path(name, "key"),
            "-subj", "/CN=%s" % name, "-out", self.path(name, "csr"))
        return ext

    def _signed(self, name, ca, server=False):
        ext = self._csr(name, server)
        run("openssl", "x509", "-req", "-in", self.path(name, "csr"),
            "-CA", self.path(ca, "crt"), "-CAkey", self.path(ca, "key"),
            "-CAcreateserial", "-days", "30", "-extfile", ext,
            "-out", self.path(name, "crt"))
        return self.path(name, "crt")

    def _expired(self, name):
        """Valid for one day in 2020: openssl ca sets both dates."""
        ext = self._csr(name, True)
        db = os.path.join(self.d, "ca-db")
        os.makedirs(db, exist_ok=True)
        open(os.path.join(db, "index.txt"), "w").close()
        with open(os.path.join(db, "serial"), "w") as f:
            f.write("1000\n")
        cnf = os.path.join(self.d, "ca.cnf")
        with open(cnf, "w") as f:
            f.write("[ca]\ndefault_ca = test\n[test]\n"
                    "database = %s/index.txt\nserial = %s/serial\n"
                    "new_certs_dir = %s\ndefault_md = sha256\n"
                    "policy = any\ncopy_extensions = copy\n"
                    "[any]\ncommonName = supplied\n" % (db, db, db))
        run("openssl", "ca", "-batch", "-config", cnf, "-notext",
            "-startdate", "20200101000000Z", "-enddate", "20200102000000Z",
            "-cert", self.ca, "-keyfile", self.path("ca", "key"),
            "-extfile", ext, "-in", self.path(name, "csr"),
            "-out", self.path(name, "crt"))
        return self.path(name, "crt")


class Redisd:
    """A private redis-server for the Redis engine, loading csq.so (which
    $CSQ_TEST_REDIS_MODULE names: ctest sets it)."""

    def __init__(self, d):
        self.port = free_port()
        module = os.environ.get("CSQ_TEST_REDIS_MODULE", "")
        if not module:
            raise AssertionError("CSQ_TEST_REDIS_MODULE names no csq.so")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", d,
             "--loadmodule", module],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + START_TIMEOUT
        while True:
            try:
                if redis.Redis(port=self.port).ping():
                    return
            except redis.exceptions.ConnectionError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Csqd:
    """csqd with a plain port, a TLS port and HTTP over TLS."""

    def __init__(self, d, certs, cert=None, key=None, extra="", redisd=None,
                 top=""):
        self.d = d
        self.port, self.tls_port, self.http_port = free_ports(3)
        self.conf = os.path.join(d, "csqd.conf")
        self.log = os.path.join(d, "csqd.log")
        self.cert = os.path.join(d, "csqd.crt")
        self.key = os.path.join(d, "csqd.key")
        shutil.copy(cert or certs.server, self.cert)
        shutil.copy(key or certs.path("server", "key"), self.key)
        self.extra = extra
        self.top = top  # settings outside the tls group
        self.redisd = redisd
        self.write_conf()
        self.logf = open(self.log, "w")
        self.proc = subprocess.Popen([CSQD, "-c", self.conf],
                                     stdout=self.logf, stderr=self.logf)
        self.wait_ready()

    def write_conf(self, extra=None):
        if extra is not None:
            self.extra = extra
        engine = 'engine = "memory";\n'
        if self.redisd is not None:
            engine = ('engine = "redis";\nredis: { port = %d; prefix = '
                      '"tls%d"; };\n' % (self.redisd.port, self.tls_port))
        with open(self.conf, "w") as f:
            f.write('listen = [ "127.0.0.1:%d" ];\n%s'
                    'http: { listen = "127.0.0.1:%d"; tls = true; };\n'
                    'tls: { listen = [ "127.0.0.1:%d" ]; cert = "%s"; '
                    'key = "%s"; %s };\n%s\n'
                    % (self.port, engine, self.http_port, self.tls_port,
                       self.cert, self.key, self.extra, self.top))

    def wait_ready(self):
        deadline = time.time() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("csqd exited: %s" % self.read_log())
            try:
                c = redis.Redis(port=self.port)
                if c.execute_command("QLEN", "default") is not None:
                    return
            except redis.exceptions.RedisError:
                pass
            if time.time() > deadline:
                raise AssertionError("csqd not ready: %s" % self.read_log())
            time.sleep(0.05)

    def read_log(self):
        with open(self.log) as f:
            return f.read()

    def wait_log(self, text, count=1):
        deadline = time.time() + START_TIMEOUT
        while self.read_log().count(text) < count:
            if time.time() > deadline:
                raise AssertionError("no %r in:\n%s" % (text, self.read_log()))
            time.sleep(0.05)

    def alive(self):
        return self.proc.poll() is None and \
            redis.Redis(port=self.port).ping()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=10)
        self.logf.close()
        return rc


def tls_client(csqd, certs, **kw):
    opts = dict(port=csqd.tls_port, ssl=True, ssl_ca_certs=certs.ca,
                socket_timeout=5)
    opts.update(kw)
    return redis.Redis(**opts)


def cli(csqd, *args, cacert=None, extra=()):
    return run(REDIS_CLI, "-p", str(csqd.tls_port), "--tls", "--cacert",
               cacert, *extra, *args, check=False)


class TLSTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="csq-tls-")
        cls.certs = Certs(cls.dir)
        cls.redisd = Redisd(cls.dir) if ENGINE == "redis" else None

    @classmethod
    def tearDownClass(cls):
        if cls.redisd is not None:
            cls.redisd.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def start(self, **kw):
        d = tempfile.mkdtemp(dir=self.dir)
        self.csqd = Csqd(d, self.certs, redisd=self.redisd, **kw)
        return self.csqd

    def tearDown(self):
        if getattr(self, "csqd", None) is not None:
            if self.csqd.proc.poll() is None:
                self.assertEqual(self.csqd.stop(), 0, self.csqd.read_log())
            else:
                self.fail("csqd died: %s" % self.csqd.read_log())
            self.assertNotIn("AddressSanitizer", self.csqd.read_log())

    def test_redis_cli(self):
        d = self.start()
        out = cli(d, "PING", cacert=self.certs.ca)
        self.assertEqual((out.returncode, out.stdout), (0, "PONG\n"), out)
        out = cli(d, "ENQUEUE", "u1", cacert=self.certs.ca)
        self.assertEqual(out.stdout.split("\n")[:2], ["state", "waiting"],
                         out)
        # The same state on the plain port.
        self.assertEqual(
            redis.Redis(port=d.port).execute_command("QLEN", "default"), 1)

    def test_redis_py(self):
        d = self.start()
        c = tls_client(d, self.certs)
        self.assertTrue(c.ping())
        reply = c.execute_command("HEARTBEAT", "s1", "CAPACITY", "2")
        self.assertEqual(reply[:4], [b"servicer", b"s1", b"status", b"ready"])
        # Pub/sub over TLS: the match reaches a subscriber.
        p = tls_client(d, self.certs).pubsub()
        p.subscribe("servicer:s1")
        self.assertEqual(p.get_message(timeout=5)["type"], "subscribe")
        c.execute_command("ENQUEUE", "u1")
        msg = p.get_message(timeout=5)
        self.assertIsNotNone(msg)
        self.assertIn(b'"event":"matched"', msg["data"])
        # A pipeline of 200 over TLS, replies in order.
        pipe = c.pipeline(transaction=False)
        for i in range(200):
            pipe.execute_command("ENQUEUE", "p%d" % i)
        replies = pipe.execute()
        self.assertEqual(len(replies), 200)
        self.assertEqual(c.execute_command("QLEN", "default"), 199)
        # TLS 1.2 at least: what a default client negotiates now.
        with socket.create_connection(("127.0.0.1", d.tls_port)) as raw:
            ctx = ssl.create_default_context(cafile=self.certs.ca)
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                self.assertIn(s.version(), ("TLSv1.2", "TLSv1.3"))

    def test_tls11_refused(self):
        d = self.start()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(self.certs.ca)
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ctx.minimum_version = ssl.TLSVersion.TLSv1
            ctx.maximum_version = ssl.TLSVersion.TLSv1_1
        with socket.create_connection(("127.0.0.1", d.tls_port)) as raw:
            with self.assertRaises(ssl.SSLError) as e:
                ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        # The server's refusal (an alert), not the client's own.
        self.assertIn("ALERT_PROTOCOL_VERSION", str(e.exception))
        self.assertTrue(tls_client(d, self.certs).ping())

    def test_plain_client_on_tls_port(self):
        d = self.start()
        for payload in (b"PING\r\n", b"*1\r\n$4\r\nPING\r\n",
                        b"GET / HTTP/1.0\r\n\r\n", os.urandom(100000)):
            with socket.create_connection(("127.0.0.1", d.tls_port)) as s:
                s.settimeout(5)
                try:
                    s.sendall(payload)
                    got = s.recv(4096)
                except OSError:  # reset, broken pipe, timeout...
                    got = b""
                # No reply in clear: an alert at most, then the close.
                self.assertNotIn(b"PONG", got)
                self.assertNotIn(b"-ERR", got)
                try:
                    while s.recv(4096):
                        pass
                except OSError:
                    pass
        # A connection that says nothing is no harm either.
        idle = socket.create_connection(("127.0.0.1", d.tls_port))
        self.assertTrue(d.alive())
        self.assertTrue(tls_client(d, self.certs).ping())
        idle.close()

    def test_handshake_deadline(self):
        """A connection that does not finish its handshake within
        auth_timeout (1 s here) is closed, even where no AUTH is needed:
        the audit's 600 connections that sent 6 bytes of a ClientHello
        kept every new client at max_clients. One that finished its
        handshake before stays."""
        d = self.start(top="auth_timeout = 1;")
        good = tls_client(d, self.certs)
        self.assertTrue(good.ping())
        t0 = time.time()
        stuck = []
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", d.tls_port))
            s.sendall(b"\x16\x03\x01\x02\x00\x01")  # a ClientHello's start
            s.settimeout(5)
            stuck.append(s)
        for s in stuck:
            try:
                while s.recv(4096):
                    pass
            except ConnectionResetError:
                pass
            s.close()
        took = time.time() - t0
        self.assertGreaterEqual(took, 0.9)
        self.assertLess(took, 4.0)
        d.wait_log("within auth_timeout (1 s)")
        self.assertTrue(good.ping())
        self.assertTrue(tls_client(d, self.certs).ping())

    def test_expired_certificate(self):
        d = self.start(cert=self.certs.expired,
                       key=self.certs.path("expired", "key"))
        out = cli(d, "PING", cacert=self.certs.ca)
        self.assertNotEqual(out.stdout, "PONG\n", out)
        # redis-cli does not say why; redis-py does.
        self.assertIn("certificate verify failed", out.stderr + out.stdout)
        with self.assertRaises(redis.exceptions.ConnectionError) as e:
            tls_client(d, self.certs).ping()
        self.assertIn("certificate has expired", str(e.exception))
        self.assertTrue(d.alive())

    def test_wrong_ca(self):
        d = self.start()
        out = cli(d, "PING", cacert=self.certs.other)
        self.assertNotEqual(out.stdout, "PONG\n", out)
        self.assertIn("certificate verify failed", out.stderr + out.stdout)
        with self.assertRaises(redis.exceptions.ConnectionError) as e:
            tls_client(d, self.certs, ssl_ca_certs=self.certs.other).ping()
        self.assertIn("certificate verify failed", str(e.exception))
        self.assertTrue(d.alive())

    def test_client_certificates(self):
        d = self.start(extra='ca = "%s"; verify_clients = true;'
                       % self.certs.ca)
        ok = cli(d, "PING", cacert=self.certs.ca,
                 extra=("--cert", self.certs.client,
                        "--key", self.certs.path("client", "key")))
        self.assertEqual(ok.stdout, "PONG\n", ok)
        c = tls_client(d, self.certs, ssl_certfile=self.certs.client,
                       ssl_keyfile=self.certs.path("client", "key"))
        self.assertTrue(c.ping())
        # Without a certificate, or with one of a CA csqd does not trust.
        for kw in ({}, {"ssl_certfile": self.certs.stranger,
                        "ssl_keyfile": self.certs.path("stranger", "key")}):
            with self.assertRaises(redis.exceptions.ConnectionError):
                tls_client(d, self.certs, **kw).ping()
        bad = cli(d, "PING", cacert=self.certs.ca,
                  extra=("--cert", self.certs.stranger,
                         "--key", self.certs.path("stranger", "key")))
        self.assertNotEqual(bad.stdout, "PONG\n", bad)
        self.assertTrue(d.alive())
        self.assertTrue(c.ping())  # the good one is still served

    def peer_serial(self, d):
        with socket.create_connection(("127.0.0.1", d.tls_port)) as raw:
            ctx = ssl.create_default_context(cafile=self.certs.ca)
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                return s.getpeercert()["serialNumber"]

    def test_reload_certificate(self):
        d = self.start()
        first = self.peer_serial(d)
        kept = tls_client(d, self.certs)
        self.assertTrue(kept.ping())
        # Renewed in place, then SIGHUP: new connections get the new one.
        shutil.copy(self.certs.server2, d.cert)
        shutil.copy(self.certs.path("server2", "key"), d.key)
        d.proc.send_signal(signal.SIGHUP)
        d.wait_log("configuration reloaded")
        second = self.peer_serial(d)
        self.assertNotEqual(first, second)
        self.assertTrue(kept.ping())  # an open connection goes on
        # A broken file at a reload: the running certificate stays.
        with open(d.key, "w") as f:
            f.write("not a key\n")
        d.proc.send_signal(signal.SIGHUP)
        d.wait_log("tls: reload failed; keeping the certificate in use")
        self.assertEqual(self.peer_serial(d), second)
        self.assertTrue(tls_client(d, self.certs).ping())

    def test_https(self):
        d = self.start()
        ctx = ssl.create_default_context(cafile=self.certs.ca)
        url = "https://127.0.0.1:%d/healthz" % d.http_port
        with urllib.request.urlopen(url, context=ctx, timeout=5) as r:
            self.assertEqual((r.status, r.read()), (200, b"ok\n"))
        url = "https://127.0.0.1:%d/metrics" % d.http_port
        with urllib.request.urlopen(url, context=ctx, timeout=5) as r:
            self.assertIn(b"csq_engine_up 1", r.read())
        # Plain HTTP on that port gets no answer in clear.
        with self.assertRaises(Exception):
            urllib.request.urlopen("http://127.0.0.1:%d/healthz"
                                   % d.http_port, timeout=5).read()
        self.assertTrue(d.alive())

    def test_config_errors(self):
        conf = os.path.join(self.dir, "bad.conf")
        with open(conf, "w") as f:
            f.write('tls: { listen = [ "127.0.0.1:7880" ]; '
                    'verify_clients = true; };\n')
        out = run(CSQD, "-n", "-c", conf, check=False)
        self.assertEqual(out.returncode, 78, out)
        self.assertIn("tls: cert and key are needed for tls.listen",
                      out.stdout + out.stderr)
        self.assertIn("tls: verify_clients needs ca", out.stdout + out.stderr)
        with open(conf, "w") as f:
            f.write('tls: { listen = [ "127.0.0.1:%d" ]; cert = "%s"; '
                    'key = "%s"; };\n'
                    % (free_port(), self.certs.server,
                       self.certs.path("client", "key")))
        out = run(CSQD, "-c", conf, check=False)
        self.assertNotEqual(out.returncode, 0, out)
        self.assertIn("key values mismatch", out.stdout + out.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
