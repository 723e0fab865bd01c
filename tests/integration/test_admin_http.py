#!/usr/bin/env python3
"""The admin view's HTTP API (protocol-v2 section 11) with real sockets:
GET /api/snapshot, GET /api/queue/<q>, GET /api/events (Server-Sent Events)
with Last-Event-ID resume and resync, Basic auth, bad paths and methods, a
snapshot and the events after it agreeing with a later snapshot under a
load of changes, and a client that never reads its stream (bounded memory,
closed, nobody else slowed). On the Redis engine, a daemon's stream carries
another daemon's events.

usage: test_admin_http.py CSQD
The engine is $CSQ_TEST_ENGINE (memory, or redis: a redis-server of its own
is started).
"""
import os
import random
import socket
import sys
import threading
import time
import unittest

import admin_harness as h

CSQD = sys.argv[1] if len(sys.argv) > 1 else "csqd"
ENGINE = os.environ.get("CSQ_TEST_ENGINE", "memory")


# A queue's estimates in the snapshot and the pages, as QSTATS gives them
# before any (both engines).
NO_ESTIMATE = {"eta_ms": -1, "service_level_pct": -1}


def metric(d, name):
    """A series without labels of d's /metrics."""
    _, _, body = h.Http(d.http_port).request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    raise AssertionError("no %s in /metrics" % name)


def read(path):
    with open(path) as f:
        return f.read()


class AdminHttpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = h.tempdir("csq-admin-http-")
        cls.redisd = h.Redisd(cls.dir) if ENGINE == "redis" else None
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        if cls.redisd is not None:
            cls.redisd.stop()
        h.rmtree(cls.dir)

    def setUp(self):
        self.daemons = []

    def start(self, extra="", http_extra="", prefix=None, **kw):
        AdminHttpTest.n += 1
        d = os.path.join(self.dir, "d%d" % AdminHttpTest.n)
        os.mkdir(d)
        c = h.Csqd(CSQD, d, extra=extra, http_extra=http_extra,
                   redisd=self.redisd,
                   prefix=prefix or "t%d" % AdminHttpTest.n, **kw)
        self.daemons.append(c)
        return c

    def tearDown(self):
        for c in self.daemons:
            if c.proc.poll() is None:
                self.assertEqual(c.stop(), 0, c.read_log())
            else:
                self.fail("csqd died: %s" % c.read_log())
            self.assertNotIn("AddressSanitizer", c.read_log())
            self.assertNotIn("runtime error", c.read_log())

    # The snapshot ---------------------------------------------------------

    def test_snapshot(self):
        d = self.start()
        c = d.client()
        api = h.Http(d.http_port)
        snap = api.json("/api/snapshot")
        # With QSTATS's counters, the page's abandon rate (issue 38).
        self.assertEqual(snap["queues"], [dict({
            "name": "default", "waiting": 0, "preferring": 0,
            "oldest_wait_ms": 0, "oldest_user": "", "servicers": 0,
            "needs_waiting": [], "matched_total": 0,
            "abandoned_total": 0}, **NO_ESTIMATE)])
        self.assertEqual(len(snap["history"]), 1)  # a sample at the start
        self.assertEqual(snap["history"][0][1:], [0, None])
        self.assertEqual(snap["servicers"], [])
        self.assertEqual(snap["stats"]["waiting"], 0)
        first = snap["id"]
        c.execute_command("HEARTBEAT", "s1", "CAPACITY", "2", "QUEUES",
                          "sales,default")
        c.execute_command("HEARTBEAT", "s2", "QUEUES", "vip")
        c.execute_command("PAUSE", "s2")
        c.execute_command("ENQUEUE", "u1", "QUEUE", "sales")
        c.execute_command("ENQUEUE", "u2", "QUEUE", "vip", "TIER", "2")
        c.execute_command("ENQUEUE", "u3", "QUEUE", "vip")
        # Held for s2 (paused, serving vip): waiting in vip, in no page.
        c.execute_command("ENQUEUE", "u4", "QUEUE", "vip", "PREFER", "s2",
                          "60")
        enqueued = time.time()
        # servicer_up s1, matched u1, servicer_up s2, paused, 3 queued:
        # waited for (the Redis engine's events come back through Redis),
        # not a fixed time; then the 300 ms that the oldest wait is to
        # show, counted from the ENQUEUE.
        h.wait_until("the 7 events in the snapshot", lambda: api.json(
            "/api/snapshot")["id"] >= first + 7)
        time.sleep(max(0.0, enqueued + 0.3 - time.time()))
        snap = api.json("/api/snapshot")
        self.assertEqual(snap["id"], first + 7)
        self.assertLess(abs(snap["ts"] - time.time() * 1000), 5000)
        self.assertEqual(snap["stats"]["waiting"], 3)
        self.assertEqual(snap["stats"]["matched_total"], 1)
        queues = {q["name"]: q for q in snap["queues"]}
        self.assertEqual(sorted(queues), ["default", "sales", "vip"])
        self.assertEqual(queues["vip"]["waiting"], 3)
        self.assertEqual(queues["vip"]["preferring"], 1)
        self.assertGreaterEqual(queues["vip"]["oldest_wait_ms"], 300)
        # u2 (tier 2) is ahead of u3, and came first.
        self.assertEqual(queues["vip"]["oldest_user"], "u2")
        self.assertEqual(queues["sales"]["waiting"], 0)
        # Who serves each (protocol.md 3c, issue 38): s2, paused, is
        # logged in, so it serves vip.
        self.assertEqual({q: queues[q]["servicers"] for q in queues},
                         {"default": 1, "sales": 1, "vip": 1})
        s1, s2 = snap["servicers"]
        self.assertEqual((s1["id"], s1["status"], s1["capacity"],
                          s1["active"], s1["queues"]),
                         ("s1", "ready", 2, 1, ["sales", "default"]))
        self.assertEqual(s1["rooms"][0]["room"], "s1/0")
        self.assertEqual(s1["rooms"][0]["state"], "assigned")
        self.assertEqual(s1["rooms"][0]["user"], "u1")
        self.assertEqual((s1["skills"], s1["rooms"][0]["needs"]), ("", ""))
        self.assertGreaterEqual(s1["rooms"][0]["since_ms"], 300)
        self.assertEqual(s1["rooms"][1], {"room": "s1/1", "state": "free",
                                          "user": "", "since_ms": 0,
                                          "needs": ""})
        self.assertEqual((s2["status"], s2["queues"], len(s2["rooms"])),
                         ("paused", ["vip"], 1))
        # Servicers that come and go between snapshots are found.
        c.execute_command("LOGOUT", "s1")
        c.execute_command("HEARTBEAT", "s0", "QUEUES", "sales")
        snap = api.json("/api/snapshot")
        self.assertEqual([s["id"] for s in snap["servicers"]], ["s0", "s2"])
        self.assertEqual(snap["servicers"][0]["rooms"][0]["user"], "u1")
        status, headers, body = api.request("HEAD", "/api/snapshot")
        self.assertEqual(status, 200)
        self.assertEqual(body, b"")
        self.assertEqual(headers["Content-Type"], "application/json")
        self.assertGreater(int(headers["Content-Length"]), 100)

    # Pages of a line ------------------------------------------------------

    # The chart's hour across a restart (protocol.md section 11a) --------

    def history(self, d):
        return h.Http(d.http_port, auth=None).json("/api/snapshot")["history"]

    def test_history_kept_across_restart(self):
        """Where the state is kept (memory with a journal: its samples
        beside it; csq.so: in http.history), a restarted csqd's chart still
        has the samples of the csqd before it."""
        d = self.start()
        if ENGINE == "memory":
            kept = 'memory: { journal = "%s/journal"; };' % d.d
            path, http_extra = d.d + "/journal.history", ""
        else:
            kept, path = "", d.d + "/history"
            http_extra = 'history = "%s";' % path
        self.assertEqual(d.stop(), 0)
        self.daemons.remove(d)
        a = self.start(extra=kept, http_extra=http_extra, prefix="hist")
        a.client().execute_command("ENQUEUE", "u1", "QUEUE", "q")
        h.wait_until("a first sample written",
                     lambda: os.path.exists(path))
        before = self.history(a)
        self.assertEqual(len(before), 1)
        self.assertEqual(a.stop(), 0)
        self.daemons.remove(a)
        with open(path) as f:
            self.assertEqual(f.read().splitlines()[0], "csq-history 1")
        b = self.start(extra=kept, http_extra=http_extra, prefix="hist")
        after = self.history(b)
        self.assertEqual(after[0], before[0])  # the old csqd's sample
        self.assertGreater(after[-1][0], before[0][0])  # and its own
        self.assertIn("kept 1 samples of the last hour", b.read_log())
        # Without a place for it, a restart starts the chart anew.
        if ENGINE == "memory":
            self.assertEqual(b.stop(), 0)
            self.daemons.remove(b)
            c = self.start()
            self.assertEqual(len(self.history(c)), 1)

    def test_history_bad_files(self):
        """How we tried to break it: a history file that csqd did not
        write (another magic, letters, a sign, times out of order or ahead
        of now, a line cut short or too long, more than an hour of
        samples, an empty file, a directory): each is a warning with its
        line and reason, csqd starts with an empty chart, and the next
        sample writes the file anew. Samples older than an hour are
        dropped without a word."""
        now = int(time.time() * 1000)
        ok = "csq-history 1\n"
        cases = [
            ("csq-history 2\n", "line 1: not a csq history"),
            (ok + "12 x 3\n", "line 2: not three numbers"),
            (ok + "-5 1 2\n", "line 2: not three numbers"),
            (ok + "%d 1 2 \n" % (now - 5000), "line 2: not three numbers"),
            (ok + "%d 1 2\n%d 1 2\n" % (now - 5000, now - 6000),
             "line 3: times not in order"),
            (ok + "%d 1 2\n" % (now + 3600000), "line 2: a time after now"),
            (ok + "%d 1 2" % (now - 5000), "line 2: line cut short"),
            (ok + "1" * 200 + "\n", "line 2: line too long"),
            (ok + "".join("%d 0 0\n" % (now - 400000 + i)
                          for i in range(400)),
             "line 363: more samples than an hour holds"),
            ("", "line 0: empty"),
            (ok + "99999999999999999999 1 2\n", "line 2: not three numbers"),
        ]
        base = self.start()
        path = base.d + "/hist"
        http_extra = 'history = "%s";' % path
        self.assertEqual(base.stop(), 0)
        self.daemons.remove(base)
        for text, why in cases:
            with open(path, "w") as f:
                f.write(text)
            c = self.start(http_extra=http_extra, prefix="bad")
            self.assertIn("admin history %s: %s" % (path, why),
                          c.read_log())
            self.assertEqual(len(self.history(c)), 1)
            first = "csq-history 1\n%d " % self.history(c)[0][0]
            h.wait_until("the file written anew",
                         lambda: read(path).startswith(first))
            self.assertEqual(c.stop(), 0)
            self.daemons.remove(c)
        # Older than an hour: dropped; in the hour: kept.
        with open(path, "w") as f:
            f.write(ok + "%d 7 1\n%d 8 2\n" % (now - 3700000, now - 5000))
        c = self.start(http_extra=http_extra, prefix="bad")
        self.assertEqual(self.history(c)[0], [now - 5000, 8, None])
        self.assertNotIn("warning: admin history", c.read_log())
        # A path csqd cannot write: said once, the chart still drawn.
        os.unlink(path)
        os.mkdir(path)
        d = self.start(http_extra=http_extra, prefix="bad")
        h.wait_until("the warning", lambda: "cannot write it" in
                     d.read_log())
        self.assertEqual(len(self.history(d)), 1)

    def test_queue_pages(self):
        d = self.start()
        c = d.client()
        api = h.Http(d.http_port)
        for i in range(50):
            c.execute_command("ENQUEUE", "u%02d" % i, "QUEUE", "a:b",
                              "TIER", str(i % 3))
        want = c.execute_command("QUEUE", "a:b", "10", "7")
        page = api.json("/api/queue/a%3Ab?offset=10&count=7")
        self.assertEqual(page["queue"], "a:b")
        self.assertEqual(page["total"], 50)
        self.assertEqual(page["offset"], 10)
        self.assertEqual([u["user"] for u in page["users"]],
                         [w[0] for w in want])
        self.assertEqual([u["tier"] for u in page["users"]],
                         [w[1] for w in want])
        self.assertEqual([u["position"] for u in page["users"]],
                         list(range(11, 18)))
        snap = api.json("/api/snapshot")
        self.assertEqual(page["id"], snap["id"])
        self.assertEqual(page["oldest_wait_ms"] // 1000,
                         [q for q in snap["queues"] if q["name"] == "a:b"][0]
                         ["oldest_wait_ms"] // 1000)
        page = api.json("/api/queue/a:b")  # defaults: 0, 20
        self.assertEqual((page["offset"], len(page["users"])), (0, 20))
        page = api.json("/api/queue/a:b?offset=45&count=1000")
        self.assertEqual(len(page["users"]), 5)
        page = api.json("/api/queue/a:b?offset=99")
        self.assertEqual((page["total"], page["users"]), (50, []))
        page = api.json("/api/queue/nobody?count=0")
        self.assertEqual((page["total"], page["oldest_wait_ms"],
                          page["oldest_user"], page["users"]),
                         (0, 0, "", []))
        # The first to come waits longest, whatever its tier: u00 (tier
        # 0), behind the tier-2 users.
        page = api.json("/api/queue/a:b?count=1")
        self.assertEqual((page["users"][0]["tier"], page["oldest_user"]),
                         (2, "u00"))
        for bad in ("a:b?offset=-1", "a:b?count=1001", "a:b?count=x",
                    "a:b?offset=", "a:b?offset=99999999999999999999",
                    "bad!id", "a%00b", "%zz"):
            status, headers, body = api.request("GET", "/api/queue/" + bad)
            self.assertEqual(status, 400, bad)
            self.assertEqual(headers["Content-Type"], "application/json")
            self.assertIn(b'"error"', body)

    def test_estimates(self):
        """The snapshot's queues and the pages of a line carry QSTATS's
        eta_ms and service_level_pct, of the same state, on both
        engines."""
        d = self.start()
        c = d.client()
        api = h.Http(d.http_port)

        def fields(o):
            return {k: o[k] for k in ("eta_ms", "service_level_pct")
                    if k in o}

        def check(queue):
            snap = api.json("/api/snapshot")
            page = api.json("/api/queue/%s?count=0" % queue)
            got = [q for q in snap["queues"] if q["name"] == queue][0]
            qs = c.execute_command("QSTATS", queue)
            want = {k: qs[qs.index(k) + 1]
                    for k in ("eta_ms", "service_level_pct")}
            self.assertEqual(fields(got), want)
            self.assertEqual(fields(page), want)
            return want

        # Nobody serves it: no estimate; no user done yet: no share.
        c.execute_command("ENQUEUE", "u1", "QUEUE", "sales")
        self.assertEqual(check("sales"), NO_ESTIMATE)
        # A free room: a new arrival waits 0; u1, matched at once, was
        # served within the service level.
        c.execute_command("HEARTBEAT", "s1", "CAPACITY", "2", "QUEUES",
                          "sales")
        self.assertEqual(check("sales"),
                         {"eta_ms": 0, "service_level_pct": 100})
        # A queue QSTATS has never seen has its defaults.
        self.assertEqual(check("default"), NO_ESTIMATE)

    # Bad paths and methods ------------------------------------------------

    def test_paths_and_methods(self):
        d = self.start()
        api = h.Http(d.http_port)
        for path in ("/api", "/api/", "/api/nope", "/api/queue/",
                     "/api/snapshot/x", "/api/events/x"):
            status, headers, body = api.request("GET", path)
            self.assertEqual(status, 404, path)
            self.assertEqual(headers["Content-Type"], "application/json")
        for path in ("/nope", "/assets/nope.js", "/assets/", "/index.html/",
                     "/assets/../index.html"):
            status, _, _ = api.request("GET", path)
            self.assertEqual(status, 404, path)
        for method, path in (("POST", "/api/snapshot"), ("DELETE", "/"),
                             ("PUT", "/api/queue/q"),
                             ("POST", "/api/events"), ("PATCH", "/nope"),
                             ("PROPFIND", "/api/snapshot"), ("FOO", "/")):
            status, headers, _ = api.request(method, path)
            self.assertEqual(status, 405, (method, path))
            self.assertEqual(headers["Allow"], "GET, HEAD")
        status, headers, body = api.request("GET", "/")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/html"))
        self.assertIn("default-src 'self'",
                      headers["Content-Security-Policy"])
        self.assertIn(b"<html", body)
        # The page's files, built in, and nothing named from elsewhere.
        status, headers, body2 = api.request("GET", "/assets/index.html")
        self.assertEqual((status, body2), (200, body))
        self.assertNotIn(b"http://", body)
        self.assertNotIn(b"https://", body)
        status, _, body = api.request("GET", "/healthz")
        self.assertEqual((status, body), (200, b"ok\n"))

    # Auth -----------------------------------------------------------------

    def test_auth(self):
        d = self.start(extra='requirepass = "s3cret";')
        anon = h.Http(d.http_port)
        for path in ("/", "/assets/admin.js", "/api/snapshot",
                     "/api/queue/default", "/api/events", "/nope"):
            status, headers, _ = anon.request("GET", path)
            self.assertEqual(status, 401, path)
            self.assertTrue(headers["WWW-Authenticate"].startswith(
                "Basic realm="))
        # Whatever the method, even one evhttp does not know (it said 501
        # to those before credentials, issue 37): 401 first.
        for method in ("POST", "DELETE", "PROPFIND", "FOO", "BREW"):
            for path in ("/api/snapshot", "/api/nope", "/"):
                status, headers, _ = anon.request(method, path)
                self.assertEqual(status, 401, (method, path))
                self.assertIn("WWW-Authenticate", headers)
        for auth in (h.basic("default", "wrong"), h.basic("admin", "s3cret"),
                     h.basic("default", "s3cret ") , "Basic !!!",
                     "Bearer s3cret", h.basic("default", "")):
            status, _, _ = h.Http(d.http_port, auth).request(
                "GET", "/api/snapshot")
            self.assertEqual(status, 401, auth)
        # /healthz and /metrics never ask.
        self.assertEqual(anon.request("GET", "/healthz")[0], 200)
        self.assertEqual(anon.request("GET", "/metrics")[0], 200)
        ok = h.Http(d.http_port, h.basic("default", "s3cret"))
        self.assertEqual(ok.request("GET", "/api/snapshot")[0], 200)
        self.assertEqual(ok.request("GET", "/")[0], 200)
        self.assertEqual(h.Http(d.http_port, h.basic("DEFAULT", "s3cret"))
                         .request("GET", "/")[0], 200)
        sse = h.Sse(d.http_port, auth=h.basic("default", "s3cret"))
        self.assertEqual(sse.head(), 200)
        sse.close()
        sse = h.Sse(d.http_port)
        self.assertEqual(sse.head(), 401)
        sse.close()

    def test_auth_users(self):
        """With users (protocol-v2 section 9): an admin, and nobody else;
        no anonymous access even without requirepass."""
        d = self.start(extra='users = ( '
                       '{ name = "ops"; password = "opspw"; role = "admin"; },'
                       '{ name = "agents"; password = "agpw"; '
                       'role = "servicer"; },'
                       '{ name = "web"; password = "webpw"; '
                       'role = "frontend"; } );',
                       user="ops", password="opspw")
        ok = h.Http(d.http_port, h.basic("ops", "opspw"))
        self.assertEqual(ok.request("GET", "/api/snapshot")[0], 200)
        for auth in (None, h.basic("agents", "agpw"), h.basic("web", "webpw"),
                     h.basic("ops", "agpw"), h.basic("OPS", "opspw"),
                     h.basic("default", ""), h.basic("default", "x")):
            status, headers, _ = h.Http(d.http_port, auth).request(
                "GET", "/api/snapshot")
            self.assertEqual(status, 401, auth)
        self.assertEqual(h.Http(d.http_port).request("GET", "/healthz")[0],
                         200)

    # Events ---------------------------------------------------------------

    def test_events(self):
        d = self.start()
        c = d.client()
        api = h.Http(d.http_port)
        sse = h.Sse(d.http_port)
        self.assertEqual(sse.head(), 200)
        self.assertEqual(sse.headers["content-type"], "text/event-stream")
        start = api.json("/api/snapshot")["id"]
        c.execute_command("HEARTBEAT", "s1")
        c.execute_command("ENQUEUE", "u1")
        c.execute_command("ENQUEUE", "u2", "QUEUE", "q", "TIER", "1")
        c.execute_command("LEAVE", "u2")
        c.execute_command("RELEASE", "s1/0")
        got = sse.until(lambda fs: len(fs) >= 5)
        self.assertEqual([f["event"] for f in got],
                         ["servicer_up", "matched", "queued", "left",
                          "released"])
        self.assertEqual([f["id"] for f in got],
                         list(range(start + 1, start + 6)))
        for f in got:
            self.assertEqual(f["data"]["event"], f["event"])
            if "id" in f["data"]:
                self.assertEqual(f["data"]["id"], f["id"])
        self.assertEqual(got[2]["data"]["position"], 1)
        self.assertEqual(api.json("/api/snapshot")["id"], start + 5)
        sse.close()

    def test_resume(self):
        d = self.start()
        c = d.client()
        api = h.Http(d.http_port)
        sse = h.Sse(d.http_port)
        sse.head()
        for i in range(10):
            c.execute_command("ENQUEUE", "u%d" % i)
        got = sse.until(lambda fs: len(fs) >= 10)
        sse.close()
        last = got[3]["id"]  # as if the rest had been lost
        for i in range(10, 20):
            c.execute_command("ENQUEUE", "u%d" % i)
        for how in ("header", "query"):
            end = api.json("/api/snapshot")["id"]
            if how == "header":
                sse = h.Sse(d.http_port, last_event_id=last)
            else:
                sse = h.Sse(d.http_port, query="last_event_id=%d" % last)
            again = sse.until(lambda fs: len(fs) >= end - last)
            self.assertEqual([f["id"] for f in again],
                             list(range(last + 1, end + 1)))
            self.assertEqual([f["data"]["user"] for f in again][:16],
                             ["u%d" % i for i in range(4, 20)])
            # Then live, with nothing twice.
            c.execute_command("LEAVE", "u%d" % (10 if how == "header" else 11))
            more = sse.until(lambda fs: len(fs) >= 1)
            self.assertEqual((more[0]["event"], more[0]["id"]),
                             ("left", end + 1))
            self.assertEqual(sse.frames(0.3), [])
            sse.close()
        # Resuming from the last id: nothing to catch up, then live.
        snap = api.json("/api/snapshot")
        sse = h.Sse(d.http_port, last_event_id=snap["id"])
        sse.head()
        self.assertEqual(sse.frames(0.3), [])
        c.execute_command("LEAVE", "u1")
        got = sse.until(lambda fs: len(fs) >= 1)
        self.assertEqual(got[0]["id"], snap["id"] + 1)
        sse.close()

    def test_resync(self):
        d = self.start(http_extra="event_history = 10;")
        c = d.client()
        base = h.Http(d.http_port).json("/api/snapshot")["id"]
        for i in range(30):
            c.execute_command("ENQUEUE", "u%d" % i)
        last = base + 30
        # Within the ring: resumed; before it, from the future, or no id
        # at all: resync, then live.
        sse = h.Sse(d.http_port, last_event_id=last - 10)
        got = sse.until(lambda fs: len(fs) >= 10)
        self.assertEqual(got[0]["id"], last - 9)
        sse.close()
        for bad in (last - 11, base, last + 5, "abc", "-1", "",
                    "99999999999999999999"):
            sse = h.Sse(d.http_port, last_event_id=bad)
            got = sse.until(lambda fs: len(fs) >= 1)
            self.assertEqual(got[0]["event"], "resync", bad)
            self.assertIsNone(got[0]["id"])
            self.assertEqual(got[0]["data"]["id"], last)
            self.assertEqual(sse.frames(0.2), [])
            c.execute_command("ENQUEUE", "x%s" % bad)
            got = sse.until(lambda fs: len(fs) >= 1)
            self.assertEqual(got[0]["event"], "queued")
            last = got[0]["id"]
            sse.close()
        d2 = self.start(http_extra="event_history = 0;")
        c2 = d2.client()
        snap = h.Http(d2.http_port).json("/api/snapshot")
        c2.execute_command("ENQUEUE", "v")
        sse = h.Sse(d2.http_port, last_event_id=snap["id"])
        got = sse.until(lambda fs: len(fs) >= 1)
        self.assertEqual(got[0]["event"], "resync")
        sse.close()

    def test_max_streams(self):
        d = self.start(http_extra="max_event_streams = 2;")
        a, b, c = (h.Sse(d.http_port) for _ in range(3))
        self.assertEqual((a.head(), b.head(), c.head()), (200, 200, 503))
        a.close()
        # csqd has seen the close (the count of streams it serves), rather
        # than a fixed time that a loaded machine may not give it.
        h.wait_until("the closed stream gone", lambda: metric(
            d, "csq_http_event_streams") < 2)
        e = h.Sse(d.http_port)
        self.assertEqual(e.head(), 200)
        for s in (b, c, e):
            s.close()

    # A snapshot, then the events after its id, agree with a later one ----

    def churn(self, c, stop, seed):
        rnd = random.Random(seed)
        queues = ["a", "b", "c"]
        while not stop.is_set():
            p = c.pipeline(transaction=False)
            for _ in range(20):
                k = rnd.randrange(10)
                u = "u%d" % rnd.randrange(300)
                s = "s%d" % rnd.randrange(6)
                if k < 4:
                    p.execute_command("ENQUEUE", u, "QUEUE",
                                      rnd.choice(queues), "TIER",
                                      str(rnd.randrange(3)))
                elif k < 6:
                    p.execute_command("LEAVE", u)
                elif k < 7:
                    p.execute_command("HEARTBEAT", s, "CAPACITY",
                                      str(1 + rnd.randrange(3)), "QUEUES",
                                      ",".join(rnd.sample(queues, 2)))
                elif k < 9:
                    p.execute_command("RELEASE", "%s/%d" %
                                      (s, rnd.randrange(3)))
                else:
                    p.execute_command("LOGOUT", s)
            p.execute(raise_on_error=False)

    def check_consistent(self, writer, reader):
        """Snapshot from reader under writer's load, then its events: the
        lines' lengths agree with a snapshot taken when the load stops."""
        stop = threading.Event()
        threads = [threading.Thread(target=self.churn,
                                    args=(writer.client(), stop, i))
                   for i in range(2)]
        for t in threads:
            t.start()
        try:
            # The snapshot is taken under load, and the load goes on for
            # 100 events more: counted, not timed (a loaded machine's
            # churn may be slow, a fixed time would then prove nothing).
            api = h.Http(reader.http_port)
            start = api.json("/api/snapshot")["id"]
            h.wait_until("the load under way", lambda: api.json(
                "/api/snapshot")["id"] > start + 30)
            s1 = api.json("/api/snapshot")
            sse = h.Sse(reader.http_port, last_event_id=s1["id"])
            waiting = {q["name"]: q["waiting"] for q in s1["queues"]}
            frames = sse.frames(0.05)
            h.wait_until("100 events after the snapshot", lambda: api.json(
                "/api/snapshot")["id"] > s1["id"] + 100)
        finally:
            stop.set()
            for t in threads:
                t.join()
        s2 = api.json("/api/snapshot")
        self.assertGreater(s2["id"], s1["id"] + 100)
        frames += sse.until(lambda fs: (frames + fs) and
                            (frames + fs)[-1]["id"] >= s2["id"])
        sse.close()
        ids = [f["id"] for f in frames]
        self.assertEqual(ids, list(range(s1["id"] + 1, s2["id"] + 1)))
        for f in frames:
            ev, e = f["event"], f["data"]
            if ev in ("queued", "requeued"):
                waiting[e["queue"]] = waiting.get(e["queue"], 0) + 1
            elif ev in ("matched", "left"):
                q = e.get("from_queue", e["queue"])
                waiting[q] = waiting.get(q, 0) - 1
            elif ev == "rescored" and "from_queue" in e:
                waiting[e["from_queue"]] -= 1
                waiting[e["queue"]] = waiting.get(e["queue"], 0) + 1
        want = {q["name"]: q["waiting"] for q in s2["queues"]}
        self.assertEqual({q: n for q, n in waiting.items() if n},
                         {q: n for q, n in want.items() if n})
        self.assertEqual(sum(waiting.values()), s2["stats"]["waiting"])

    def test_snapshot_then_events(self):
        d = self.start()
        self.check_consistent(d, d)

    # Two daemons share a state only through Redis: the memory engine's
    # run has no such test, rather than a skipped one.
    if ENGINE == "redis":
        def test_two_daemons(self):
            a = self.start(prefix="shared")
            b = self.start(prefix="shared")
            sse = h.Sse(b.http_port)
            sse.head()
            a.client().execute_command("ENQUEUE", "from-a")
            got = sse.until(lambda fs: len(fs) >= 1)
            self.assertEqual((got[0]["event"], got[0]["data"]["user"]),
                             ("queued", "from-a"))
            snap = h.Http(b.http_port).json("/api/snapshot")
            self.assertEqual(snap["id"], got[0]["id"])
            sse.close()
            self.check_consistent(a, b)

    # A line kept from the events alone ------------------------------------

    def test_line_from_events(self):
        d = self.start()
        c = d.client()
        api = h.Http(d.http_port)
        for i in range(300):
            c.execute_command("ENQUEUE", "w%d" % i, "QUEUE", "q",
                              "TIER", str(i % 4))
        model = h.Model()
        model.load(api, api.json("/api/snapshot"))
        sse = h.Sse(d.http_port, last_event_id=model.last_id)
        rnd = random.Random(7)
        p = c.pipeline(transaction=False)
        for i in range(3000):
            if rnd.random() < 0.5:
                p.execute_command("ENQUEUE", "w%d" % rnd.randrange(600),
                                  "QUEUE", rnd.choice(["q", "r"]), "TIER",
                                  str(rnd.randrange(4)))
            else:
                p.execute_command("LEAVE", "w%d" % rnd.randrange(600))
        p.execute(raise_on_error=False)
        end = api.json("/api/snapshot")["id"]
        for f in sse.until(lambda fs: fs and fs[-1]["id"] >= end):
            model.apply(f)
        sse.close()
        for q in ("q", "r"):
            want = []
            while True:
                page = c.execute_command("QUEUE", q, str(len(want)), "1000")
                if not page:
                    break
                want += [u[0] for u in page]
            self.assertEqual(model.lines.get(q, []), want, q)

    # A client that never reads --------------------------------------------

    def test_slow_reader(self):
        d = self.start(http_extra="event_stream_buffer = 1048576;")
        c = d.client()
        out = os.path.join(d.d, "fast.sse")
        fast = h.drain(d.http_port, out, 300)
        h.wait_until("the fast stream", lambda: os.path.exists(out) and
                     os.path.getsize(out) > 0)
        slow = h.Sse(d.http_port, rcvbuf=4096)
        slow.head()
        # What csqd holds for the streams, sampled while the load runs.
        peak = [0]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], metric(d, "csq_http_event_stream_bytes"))
                time.sleep(0.01)
        sampler = threading.Thread(target=sample)
        sampler.start()
        # 40,000 events of some 230 bytes: 9 MB, more than the slow
        # stream's buffer and the sockets' together.
        pad = "x" * 50
        for burst in range(20):
            p = c.pipeline(transaction=False)
            for i in range(1000):
                u = "%s-%d-%d" % (pad, burst, i)
                p.execute_command("ENQUEUE", u)
                p.execute_command("LEAVE", u)
            p.execute()
        done.set()
        sampler.join()
        h.drain_until(fast, out, 40000, 240)
        got = h.drain_frames(out)
        # The fast reader had everything, in order.
        self.assertEqual(len(got), 40000)
        self.assertEqual([f["id"] for f in got],
                         list(range(got[0]["id"], got[0]["id"] + 40000)))
        # The slow one was closed, once its unread bytes passed the cap.
        h.wait_until("the slow stream's close in the log",
                     lambda: "event stream of 127.0.0.1" in d.read_log())
        self.assertIn("http.event_stream_buffer (1048576)", d.read_log())
        slow.sock.settimeout(10)
        total = 0
        try:
            while True:
                data = slow.sock.recv(1 << 20)
                if not data:
                    break
                total += len(data)
        except OSError:
            # Reset, timed out, aborted: however the closed stream
            # ends on this machine, what counts is what came before.
            pass
        # It got at most what fits in the cap and the sockets' buffers.
        self.assertLess(total, 8 << 20)
        slow.close()
        # csqd never held much more than the buffer (and a loop turn's
        # events) for it, of the 9 MB it could not send.
        self.assertGreater(peak[0], 0)
        self.assertLess(peak[0], 2 << 20)
        self.assertEqual(metric(d, "csq_http_event_stream_disconnections_total"),
                         1)
        self.assertEqual(metric(d, "csq_http_event_streams"), 0)
        self.assertTrue(c.ping())


    # Views of every queue in slices (issue 37) ----------------------------

    def test_views_in_slices(self):
        """2,500 queues: more than one slice (1,000 queues a turn of the
        loop on the memory engine; one call on the Redis engine's Lua).
        The snapshot lists each once, in name order, with its line,
        while users come and go between its slices; /metrics sums the
        queues past metrics_max_queues under _other; a client that goes
        away while a snapshot is being made, and csqd stopped while one
        is, leak nothing (tearDown: ASan's exit status)."""
        nq = 2500
        d = self.start()
        c = d.client()
        names = ["q%04d" % i for i in range(nq)]
        p = c.pipeline(transaction=False)
        for i, q in enumerate(names):
            p.execute_command("ENQUEUE", "u%d" % i, "QUEUE", q)
        p.execute()
        api = h.Http(d.http_port)
        snap = api.json("/api/snapshot")
        self.assertEqual([q["name"] for q in snap["queues"]],
                         ["default"] + names)
        self.assertEqual(sum(q["waiting"] for q in snap["queues"]), nq)
        self.assertEqual(snap["queues"][1], dict({
            "name": "q0000", "waiting": 1, "preferring": 0,
            "oldest_wait_ms": snap["queues"][1]["oldest_wait_ms"],
            "oldest_user": "u0", "servicers": 0, "needs_waiting": [],
            "matched_total": 0, "abandoned_total": 0}, **NO_ESTIMATE))
        if ENGINE == "memory":
            _, _, body = api.request("GET", "/metrics")
            waiting = [line for line in body.decode().splitlines()
                       if line.startswith("csq_waiting_users{")]
            self.assertIn('csq_waiting_users{queue="_other"} 1500', waiting)
            self.assertEqual(sum(int(line.split()[1]) for line in waiting),
                             nq)
        # Users come and go between the slices: every snapshot lists
        # its queues once each, in order.
        done = threading.Event()

        def churn():
            w = d.client()
            k = 0
            while not done.is_set():
                w.execute_command("ENQUEUE", "x%d" % k, "QUEUE",
                                  "r%04d" % (k % 50))
                w.execute_command("LEAVE", "u%d" % (k % nq))
                w.execute_command("ENQUEUE", "u%d" % (k % nq), "QUEUE",
                                  names[k % nq])
                k += 1
        t = threading.Thread(target=churn)
        t.start()
        try:
            for _ in range(5):
                got = [q["name"] for q in api.json("/api/snapshot")["queues"]]
                self.assertEqual(got, sorted(set(got)))
                self.assertGreaterEqual(len(got), nq - 1)
        finally:
            done.set()
            t.join()
        # A client gone before its answer; then csqd stops while the
        # next is being made.
        for path in ("/api/snapshot", "/metrics", "/api/snapshot"):
            s = socket.create_connection(("127.0.0.1", d.http_port))
            s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" %
                       path).encode())
            s.close()
        self.assertTrue(c.ping())

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
