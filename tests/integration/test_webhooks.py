#!/usr/bin/env python3
"""Webhooks (docs/protocol.md, "Webhooks"): csqd POSTs its events to HTTP
receivers that this test runs (http.server in threads) and that record what
they get. One csqd with five webhooks: a receiver that answers 200 (order,
the event id header, the HMAC signature), one behind a channel glob (the
filter), one that is down at first (events arrive once it is up, in
order), one that answers 500 until told otherwise (retried, then
delivered), and one that stalls with a backlog of 3 (matching is not
slowed; the oldest waiting are dropped and counted in /metrics). Then
`csqd -n` on bad webhooks entries: each a clear error.

Memory engine only: the webhooks take events from csqd's one emit path,
whichever engine made them.
"""
import hashlib
import hmac
import http.server
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from admin_harness import Csqd, free_ports, wait_until  # noqa: E402

CSQD = sys.argv[1] if len(sys.argv) > 1 else "csqd"
HERE = os.path.dirname(os.path.abspath(__file__))
SECRET = "s3cret"


class Receiver:
    """An HTTP server on port that records each POST (headers, body). Its
    answer is self.status; while self.stall is clear, a POST waits."""

    def __init__(self, port, tls=None):
        """tls: (certificate, key) files: an https receiver."""
        self.got = []
        self.status = 200
        self.stall = threading.Event()
        self.stall.set()
        self.connections = 0  # accepted (and, with tls, handshaken)
        self.close_next = False  # answer the next POST "Connection: close"
        self.open = []  # the connections' sockets, to cut them
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                rec.connections += 1
                rec.open.append(self.connection)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                rec.stall.wait(60)
                status = rec.status
                if status == 200:
                    rec.got.append((dict(self.headers), body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                if rec.close_next:
                    rec.close_next = False
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", port),
                                                   Handler)
        self.srv.daemon_threads = True
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.srv.socket = ctx.wrap_socket(self.srv.socket,
                                              server_side=True)
        self.thread = threading.Thread(target=self.srv.serve_forever,
                                       daemon=True)
        self.thread.start()

    def events(self):
        return [json.loads(b) for _, b in self.got]

    def cut(self):
        """Closes every connection, as a receiver that times idle ones
        out does."""
        for sock in self.open:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.open = []

    def close(self):
        self.stall.set()
        self.srv.shutdown()
        self.srv.server_close()


def metric(text, name, url):
    m = re.search(r'^%s\{url="%s"\} (\d+)$' % (name, re.escape(url)), text,
                  re.M)
    return int(m.group(1)) if m else None


class Webhooks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = tempfile.mkdtemp(prefix="csq-webhooks-")
        ports = free_ports(5)
        cls.urls = ["http://127.0.0.1:%d/hook/%d?x=1" % (p, i)
                    for i, p in enumerate(ports)]
        cls.ports = ports
        cls.rx = {i: Receiver(ports[i]) for i in (0, 1, 3, 4)}
        cls.rx[3].status = 500
        cls.rx[4].stall.clear()
        conf = ('webhooks = (\n'
                '  { url = "%s"; secret = "%s"; },\n'
                '  { url = "%s"; channels = "queue:sales"; },\n'
                '  { url = "%s"; timeout_ms = 2000; },\n'
                '  { url = "%s"; },\n'
                '  { url = "%s"; max_backlog = 3; timeout_ms = 60000; }\n'
                ');\n' % (cls.urls[0], SECRET, cls.urls[1], cls.urls[2],
                          cls.urls[3], cls.urls[4]))
        cls.csqd = Csqd(CSQD, cls.d, extra=conf)
        cls.c = cls.csqd.client()

    @classmethod
    def tearDownClass(cls):
        rc = cls.csqd.stop()
        for r in cls.rx.values():
            r.close()
        if rc != 0:
            raise AssertionError("csqd exited %d: %s"
                                 % (rc, cls.csqd.read_log()))

    def scrape(self):
        u = "http://127.0.0.1:%d/metrics" % self.csqd.http_port
        with urllib.request.urlopen(u, timeout=10) as r:
            return r.read().decode()

    def test_all(self):
        c = self.c
        for i in range(5):
            c.execute_command("ENQUEUE", "s%d" % i, "QUEUE", "sales")
            c.execute_command("ENQUEUE", "v%d" % i, "QUEUE", "vip")
        # Hook 4 stalls on its first event, with 3 more waiting: every
        # further event drops the oldest waiting, and csqd answers at once.
        wait_until("hook 4 backlog full", lambda: metric(
            self.scrape(), "csq_webhook_backlog", self.urls[4]) == 4)
        worst = 0.0
        for i in range(20):
            t = time.monotonic()
            c.execute_command("PING")
            c.execute_command("ENQUEUE", "w%d" % i, "QUEUE", "vip")
            worst = max(worst, time.monotonic() - t)
        print("worst PING+ENQUEUE round trip with a stalled receiver: "
              "%.1f ms" % (worst * 1000))
        self.assertLess(worst, 0.5)
        total = 30

        # Order, id header, signature.
        wait_until("hook 0 has all", lambda: len(self.rx[0].got) == total)
        ids = [e["id"] for e in self.rx[0].events()]
        self.assertEqual(ids, list(range(ids[0], ids[0] + total)))
        for h, body in self.rx[0].got:
            ev = json.loads(body)
            self.assertEqual(h["X-Csq-Event-Id"], str(ev["id"]))
            self.assertEqual(h["Content-Type"], "application/json")
            want = hmac.new(SECRET.encode(), body, hashlib.sha256)
            self.assertEqual(h["X-Csq-Signature"],
                             "sha256=" + want.hexdigest())
        self.assertEqual([e["user"] for e in self.rx[0].events()][:2],
                         ["s0", "v0"])
        # The filter: only queue:sales, and no signature without a secret.
        wait_until("hook 1 has sales", lambda: len(self.rx[1].got) == 5)
        self.assertEqual([e["user"] for e in self.rx[1].events()],
                         ["s%d" % i for i in range(5)])
        self.assertNotIn("X-Csq-Signature", self.rx[1].got[0][0])

        # Down at first: nothing delivered, attempts fail; once up, all
        # arrive in order.
        wait_until("hook 2 failed", lambda: (metric(
            self.scrape(), "csq_webhook_failed_attempts_total",
            self.urls[2]) or 0) >= 1)
        self.rx[2] = Receiver(self.ports[2])
        wait_until("hook 2 has all", lambda: len(self.rx[2].got) == total,
                   timeout=20)
        self.assertEqual([e["id"] for e in self.rx[2].events()], ids)

        # 500: retried, then delivered once it answers 200.
        wait_until("hook 3 retried", lambda: (metric(
            self.scrape(), "csq_webhook_failed_attempts_total",
            self.urls[3]) or 0) >= 2)
        self.assertEqual(self.rx[3].got, [])
        self.rx[3].status = 200
        wait_until("hook 3 has all", lambda: len(self.rx[3].got) == total,
                   timeout=20)
        self.assertEqual([e["id"] for e in self.rx[3].events()], ids)

        # Full backlog: the first (in flight) and the last 3 arrive; the
        # 26 between were dropped and counted.
        self.rx[4].stall.set()
        wait_until("hook 4 drained", lambda: len(self.rx[4].got) == 4)
        self.assertEqual([e["id"] for e in self.rx[4].events()],
                         [ids[0]] + ids[-3:])
        text = self.scrape()
        self.assertEqual(metric(text, "csq_webhook_dropped_total",
                                self.urls[4]), total - 4)
        self.assertEqual(metric(text, "csq_webhook_delivered_total",
                                self.urls[4]), 4)
        self.assertEqual(metric(text, "csq_webhook_backlog", self.urls[4]), 0)
        self.assertEqual(metric(text, "csq_webhook_delivered_total",
                                self.urls[0]), total)
        self.assertEqual(metric(text, "csq_webhook_dropped_total",
                                self.urls[0]), 0)
        self.assertIn("webhook %s: backlog full" % self.urls[4],
                      self.csqd.read_log())
        self.assertIn("webhook %s: delivering again" % self.urls[3],
                      self.csqd.read_log())
        # The families are documented (docs/operations.md).
        r = subprocess.run(
            [sys.executable, os.path.join(HERE, "metrics_check.py"),
             "http://127.0.0.1:%d/metrics" % self.csqd.http_port,
             "--doc=" + os.path.join(HERE, "..", "..", "docs",
                                     "operations.md"), "--webhooks"],
            capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        # A SIGHUP applies a change of the webhooks (issue 38): hook 4
        # changed (a new one, its counters from 0), hook 1 removed, the
        # others go on as they were (hook 0's count goes on).
        with open(self.csqd.conf) as f:
            conf = f.read()
        conf = conf.replace("max_backlog = 3;", "max_backlog = 4;")
        conf = conf.replace('  { url = "%s"; channels = "queue:sales"; },\n'
                            % self.urls[1], "")
        with open(self.csqd.conf, "w") as f:
            f.write(conf)
        self.csqd.proc.send_signal(signal.SIGHUP)
        wait_until("reload logged", lambda: re.search(
            r"configuration reloaded.*changed=[^ ]*webhooks",
            self.csqd.read_log()))
        self.assertNotIn("takes effect at the next start",
                         self.csqd.read_log())
        self.assertIn("webhook %s: removed by the reload" % self.urls[1],
                      self.csqd.read_log())
        text = self.scrape()
        self.assertIsNone(metric(text, "csq_webhook_delivered_total",
                                 self.urls[1]))
        self.assertEqual(metric(text, "csq_webhook_delivered_total",
                                self.urls[0]), total)
        self.assertEqual(metric(text, "csq_webhook_delivered_total",
                                self.urls[4]), 0)
        # And the kept ones deliver on, in order.
        c.execute_command("ENQUEUE", "after-reload", "QUEUE", "vip")
        wait_until("hook 0 after the reload",
                   lambda: len(self.rx[0].got) == total + 1)
        self.assertEqual(self.rx[0].events()[-1]["user"], "after-reload")
        wait_until("hook 4, new, delivers", lambda: metric(
            self.scrape(), "csq_webhook_delivered_total", self.urls[4]) == 1)

        # A stop with a POST in flight (hook 4 stalls again) and a retry
        # pending (hook 3 answers 500): csqd stops cleanly, under ASan's
        # leak check (tearDownClass wants exit status 0).
        self.rx[4].stall.clear()
        self.rx[3].status = 500
        failed = metric(self.scrape(), "csq_webhook_failed_attempts_total",
                        self.urls[3])
        c.execute_command("ENQUEUE", "last", "QUEUE", "sales")
        wait_until("hook 4 in flight", lambda: metric(
            self.scrape(), "csq_webhook_backlog", self.urls[4]) == 1)
        wait_until("hook 3 failing", lambda: metric(
            self.scrape(), "csq_webhook_failed_attempts_total",
            self.urls[3]) > failed)


class BadConfig(unittest.TestCase):
    """How we tried to break it: each bad entry is refused by csqd -n
    with its own message."""

    def check(self, text, want):
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
            f.write(text)
            f.flush()
            r = subprocess.run([CSQD, "-n", "-c", f.name],
                               capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(want, r.stdout + r.stderr)

    def test_bad(self):
        self.check('webhooks = ( { url = "ftp://a.example/x"; } );',
                   "only http:// and https:// URLs are supported")
        self.check('webhooks = ( { url = "http://a/"; ca = "/etc/hosts"; '
                   '} );', "ca is for an https:// url")
        self.check('webhooks = ( { url = "https://a/"; ca = "/nonexistent";'
                   ' } );', 'ca "/nonexistent": No such file or directory')
        self.check('webhooks = ( { url = "not a url"; } );', "not a URL")
        self.check('webhooks = ( { channels = "*"; } );',
                   "an entry needs a url")
        self.check('webhooks = ( { url = "http://a/"; max_backlog = 0; } );',
                   "max_backlog must be an integer between 1 and 1000000")
        self.check('webhooks = ( { url = "http://a/"; timeout_ms = "1"; } );',
                   "timeout_ms must be an integer")
        self.check('webhooks = ( { url = "http://a/"; colour = 1; } );',
                   "unknown key colour")
        self.check('webhooks = ( { url = "http://a/"; channels = ""; } );',
                   "channels must be 1 to")
        self.check('webhooks = { url = "http://a/"; };',
                   "webhooks must be a list of groups")

    def test_good(self):
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
            f.write('webhooks = ( { url = "http://127.0.0.1:9/x"; '
                    'channels = "queue:*"; secret = "k"; max_backlog = 5; '
                    'timeout_ms = 100; } );')
            f.flush()
            r = subprocess.run([CSQD, "-n", "-c", f.name],
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class Https(unittest.TestCase):
    """https:// URLs (issue 38): a receiver whose certificate the entry's
    ca vouches for gets every event, in order, signed; one whose
    certificate nothing vouches for (the system's CAs do not know it)
    gets none, and the attempts fail and are counted."""

    def test_https(self):
        d = tempfile.mkdtemp(prefix="csq-webhooks-tls-")
        certs = []
        for name in ("good", "unknown"):
            crt, key = (os.path.join(d, name + ".crt"),
                        os.path.join(d, name + ".key"))
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048",
                 "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                 "-addext", "subjectAltName=IP:127.0.0.1",
                 "-keyout", key, "-out", crt],
                check=True, capture_output=True)
            certs.append((crt, key))
        ports = free_ports(2)
        urls = ["https://127.0.0.1:%d/hook" % p for p in ports]
        rx = [Receiver(ports[i], tls=certs[i]) for i in range(2)]
        conf = ('webhooks = (\n'
                '  { url = "%s"; ca = "%s"; secret = "%s"; },\n'
                '  { url = "%s"; timeout_ms = 2000; }\n'
                ');\n' % (urls[0], certs[0][0], SECRET, urls[1]))
        csqd = Csqd(CSQD, d, extra=conf)
        try:
            c = csqd.client()
            for i in range(5):
                c.execute_command("ENQUEUE", "t%d" % i, "QUEUE", "sales")
            wait_until("the https receiver has all",
                       lambda: len(rx[0].got) == 5)
            self.assertEqual([e["user"] for e in rx[0].events()],
                             ["t%d" % i for i in range(5)])
            for h, body in rx[0].got:
                want = hmac.new(SECRET.encode(), body, hashlib.sha256)
                self.assertEqual(h["X-Csq-Signature"],
                                 "sha256=" + want.hexdigest())
            u = "http://127.0.0.1:%d/metrics" % csqd.http_port
            scrape = lambda: urllib.request.urlopen(u, timeout=10).read() \
                .decode()
            wait_until("the unknown certificate refused", lambda: (metric(
                scrape(), "csq_webhook_failed_attempts_total", urls[1])
                or 0) >= 2)
            self.assertEqual(rx[1].got, [])
            self.assertEqual(metric(scrape(), "csq_webhook_delivered_total",
                                    urls[1]), 0)
            self.assertIn("webhook %s: delivery of event" % urls[1],
                          csqd.read_log())
            # Keep-alive: the five events went over one connection.
            self.assertEqual(rx[0].connections, 1)
            # A receiver that answers "Connection: close", then one that
            # cuts every connection (an idle timeout): csqd connects
            # again, once each, and loses nothing.
            rx[0].close_next = True
            c.execute_command("ENQUEUE", "t5", "QUEUE", "sales")
            wait_until("t5", lambda: len(rx[0].got) == 6)
            c.execute_command("ENQUEUE", "t6", "QUEUE", "sales")
            c.execute_command("ENQUEUE", "t7", "QUEUE", "sales")
            wait_until("t7", lambda: len(rx[0].got) == 8)
            self.assertEqual(rx[0].connections, 2)
            rx[0].cut()
            for i in range(8, 11):
                c.execute_command("ENQUEUE", "t%d" % i, "QUEUE", "sales")
            wait_until("t10", lambda: len(rx[0].got) == 11)
            self.assertEqual([e["user"] for e in rx[0].events()],
                             ["t%d" % i for i in range(11)])
            self.assertEqual(rx[0].connections, 3)
        finally:
            rc = csqd.stop()
            for r in rx:
                r.close()
        self.assertEqual(rc, 0, csqd.read_log())
        self.assertNotIn("AddressSanitizer", csqd.read_log())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
