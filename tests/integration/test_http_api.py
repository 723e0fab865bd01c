#!/usr/bin/env python3
"""The HTTP API for frontends and agents (docs/protocol.md section 11c),
with a real HTTP client (urllib) against csqd started as a process:
a frontend and an agent go through a whole conversation over JSON, every
reply compared with what RESP (redis-py) answers for the same state and
every error with RESP's error for the same arguments; then attempts to
break it: garbage bodies, random bytes, huge numbers, wrong types, unknown
and repeated fields, missing, wrong and garbled credentials, a role that
may not run the command, an id outside the user's binding, a body over
the limit, a body that never comes whole, a client that leaves before its
answer. Every refused request is checked to have changed nothing.

usage: test_http_api.py CSQD
The engine is $CSQ_TEST_ENGINE (memory, or redis: a redis-server of its own
is started, loading csq.so when $CSQ_TEST_REDIS_MODULE names it).
"""
import base64
import json
import os
import random
import socket
import subprocess
import sys
import unittest
import urllib.error
import urllib.request

import redis

import admin_harness as h

CSQD = sys.argv[1] if len(sys.argv) > 1 else "csqd"
ENGINE = os.environ.get("CSQ_TEST_ENGINE", "memory")

WEB_TOKEN = "tok-web-0123456789abcdef"
AGENT_TOKEN = "tok-agent7-0123456789abc"
USERS = """
users = (
  { name = "web"; password = "webpw"; role = "frontend"; ids = "web-*";
    token = "%s"; },
  { name = "agent7"; password = "a7pw"; role = "servicer"; ids = "agent7";
    token = "%s"; },
  { name = "agent8"; password = "a8pw"; role = "servicer"; ids = "agent8"; },
  { name = "boss"; password = "bosspw"; role = "admin"; }
);
max_queue_length = 3;
offer_max_missed = 1;
queues = ( { name = "unserved"; nobody = { when_nobody = "refuse"; }; },
           # A queue never open that refuses (business hours, section 3c).
           { name = "web-shut"; hours = { zone = "UTC"; week = "";
                                          when_closed = "refuse"; }; } );
""" % (WEB_TOKEN, AGENT_TOKEN)


def basic(user, password):
    return h.basic(user, password)


def bearer(token):
    return "Bearer " + token


WEB = basic("web", "webpw")
ORIGIN = "https://app.example.com"  # in http.cors_origins
AGENT = bearer(AGENT_TOKEN)
BOSS = basic("boss", "bosspw")


class HttpApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = h.tempdir("csq-http-api-")
        cls.redisd = h.Redisd(cls.dir) if ENGINE == "redis" else None
        d = os.path.join(cls.dir, "d")
        os.mkdir(d)
        extra = USERS
        if cls.redisd is None:
            # Replies held until the journal is on disk (fsync always):
            # the API's answers wait for it as RESP's do.
            extra += ('memory: { journal = "%s/journal"; fsync = "always";'
                      ' };\n' % d)
        elif os.environ.get("CSQ_TEST_REDIS_MODULE"):
            mods = redis.Redis(port=cls.redisd.port).module_list()
            assert [m for m in mods if m[b"name"] == b"csq"], mods
        cls.d = h.Csqd(CSQD, d, extra=extra, redisd=cls.redisd,
                       http_extra="request_timeout = 2; cors_origins = "
                       "[ \"%s\", \"http://127.0.0.1:8080\" ];" % ORIGIN,
                       user="boss", password="bosspw")
        cls.r = cls.d.client()
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        log = cls.d.read_log()
        if cls.redisd is not None:
            cls.redisd.stop()
        h.rmtree(cls.dir)
        assert rc == 0, log
        assert "AddressSanitizer" not in log, log
        assert "runtime error" not in log, log

    def setUp(self):
        self.assertIsNone(self.d.proc.poll(), self.d.read_log())
        HttpApiTest.n += 1
        self.q = "q%d" % HttpApiTest.n  # a queue of the test's own

    # Helpers --------------------------------------------------------------

    def post(self, cmd, body, auth=WEB, method="POST", raw=None):
        """(status, headers, parsed JSON body) of one request."""
        data = raw if raw is not None else json.dumps(body).encode()
        req = urllib.request.Request(
            "http://127.0.0.1:%d/api/v1/%s" % (self.d.http_port, cmd),
            data=data if method == "POST" else None, method=method)
        req.add_header("Content-Type", "application/json")
        if auth is not None:
            req.add_header("Authorization", auth)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.headers, json.loads(r.read())
        except urllib.error.HTTPError as e:
            payload = e.read()
            return e.code, e.headers, (json.loads(payload) if payload
                                       and e.code != 413 else None)

    def ok(self, cmd, body, auth=WEB):
        status, _, reply = self.post(cmd, body, auth)
        self.assertEqual(status, 200, reply)
        return reply

    def err(self, cmd, body, status, auth=WEB, raw=None):
        got, headers, reply = self.post(cmd, body, auth, raw=raw)
        self.assertEqual(got, status, reply)
        if reply is not None:
            self.assertEqual(set(reply), {"error", "code"}, reply)
            self.assertEqual(reply["code"], reply["error"].split()[0])
        return reply, headers

    def resp_error(self, *argv):
        """RESP's error text for argv, as sent on the wire (redis-py
        drops "ERR "), from an admin connection."""
        def bulk(a):
            a = a.encode() if isinstance(a, str) else a
            return b"$%d\r\n%s\r\n" % (len(a), a)
        s = socket.create_connection(("127.0.0.1", self.d.port))
        s.settimeout(30)
        s.sendall(b"*3\r\n" + bulk("AUTH") + bulk("boss") + bulk("bosspw")
                  + b"*%d\r\n" % len(argv) + b"".join(map(bulk, argv)))
        got = b""
        while got.count(b"\r\n") < 2:
            chunk = s.recv(4096)
            self.assertTrue(chunk, got)
            got += chunk
        s.close()
        ok, reply = got.split(b"\r\n")[:2]
        self.assertEqual(ok, b"+OK")
        self.assertTrue(reply.startswith(b"-"), (argv, reply))
        return reply[1:].decode()

    def state(self):
        """What a refused request must leave as it was."""
        stats = self.r.execute_command("STATS")
        stats = dict(zip(stats[::2], stats[1::2]))
        queues = sorted(self.r.execute_command("QUEUES"))
        return stats, queues, [self.r.execute_command("QUEUE", q, 0, 100)
                               for q in queues]

    @staticmethod
    def flat(reply):
        """A RESP2 field/value array as the dict that JSON carries."""
        return {k: (int(v) if isinstance(v, int) else v)
                for k, v in zip(reply[::2], reply[1::2])}

    # A whole conversation --------------------------------------------------

    def test_conversation(self):
        """A frontend enqueues, an agent logs in and is offered the user,
        accepts, transfers, releases; every reply as RESP gives it."""
        q, q2 = self.q, self.q + "b"
        got = self.ok("enqueue", {"user": "web-1", "queue": q, "tier": 2,
                                  "ttl": 600})
        self.assertEqual(got, self.flat(
            self.r.execute_command("ENQUEUE", "web-1", "QUEUE", q,
                                   "TIER", 2, "TTL", 600)))
        self.assertEqual(got["state"], "waiting")
        self.assertEqual(got["position"], 1)
        # The same user by bearer token: WHERE with its times.
        got = self.ok("where", {"user": "web-1"}, auth=bearer(WEB_TOKEN))
        self.assertEqual(got["state"], "waiting")
        self.assertEqual(got["tier"], 2)
        self.assertEqual(self.ok("touch", {"user": "web-1", "ttl": 900}), 1)
        # The agent logs in with an offer window: the user is offered.
        got = self.ok("heartbeat", {"servicer": "agent7",
                                    "queues": [q, q2], "capacity": 2,
                                    "offer": 30, "ttl": 60}, auth=AGENT)
        self.assertEqual(got, {"servicer": "agent7", "status": "ready",
                               "capacity": 2, "active": 1, "ttl": 60})
        rooms = self.ok("rooms", {"servicer": "agent7"}, auth=AGENT)
        self.assertEqual([(x["room"], x["state"], x["user"]) for x in rooms],
                         [("agent7/0", "offered", "web-1"),
                          ("agent7/1", "free", "")])
        resp_rooms = [self.flat(x) for x in
                      self.r.execute_command("ROOMS", "agent7")]
        for x in rooms + resp_rooms:  # a millisecond may pass between
            x.pop("since_ms")
        self.assertEqual(rooms, resp_rooms)
        self.assertEqual(self.ok("where", {"user": "web-1"})["state"],
                         "offered")
        self.assertEqual(self.ok("accept", {"room": "agent7/0"},
                                 auth=AGENT), 1)
        self.assertEqual(self.ok("accept", {"room": "agent7/0"},
                                 auth=AGENT), 0)
        got = self.ok("where", {"user": "web-1"})
        self.assertEqual((got["state"], got["room"]), ("assigned",
                                                      "agent7/0"))
        # Transferred to another queue the agent serves, with needs as a
        # list: the user's new state, as WHERE's.
        got = self.ok("transfer", {"room": "agent7/0", "queue": q2},
                      auth=AGENT)
        self.assertIn(got["state"], ("waiting", "offered"))
        self.assertEqual(got["queue"], q2)
        # Decline what is offered, then READY and RELEASE.
        rooms = self.ok("rooms", {"servicer": "agent7"}, auth=AGENT)
        offered = [x["room"] for x in rooms if x["state"] == "offered"]
        self.assertEqual(len(offered), 1, rooms)
        self.assertEqual(self.ok("decline", {"room": offered[0]},
                                 auth=AGENT), 1)
        self.assertEqual(self.ok("pause", {"servicer": "agent7"},
                                 auth=AGENT), "OK")
        self.assertEqual(self.ok("resume", {"servicer": "agent7"},
                                 auth=AGENT), "OK")
        h.wait_until("web-1 offered again", lambda: self.ok(
            "where", {"user": "web-1"})["state"] in ("offered",
                                                     "assigned"),
            timeout=30)
        room = self.ok("where", {"user": "web-1"})["room"]
        if self.ok("where", {"user": "web-1"})["state"] == "offered":
            self.assertEqual(self.ok("accept", {"room": room},
                                     auth=AGENT), 1)
        self.assertEqual(self.ok("release", {"room": room}, auth=AGENT), 1)
        self.assertEqual(self.ok("release", {"room": room}, auth=AGENT), 0)
        # Two conversations ended, the transfer's and the release's: the
        # page's handled count and their time (issue 38).
        s = self.snapshot_servicer("agent7")
        self.assertEqual(s["handled_total"], 2)
        self.assertGreaterEqual(s["handle_ms_total"], 0)
        self.assertEqual(self.ok("ready", {"room": room}, auth=AGENT), 0)
        self.assertEqual(self.ok("where", {"user": "web-1"}),
                         {"state": "none"})
        # LEAVE and LOGOUT, and the reads.
        self.ok("enqueue", {"user": "web-2", "queue": q,
                            "needs": ["de:2"]})
        self.assertEqual(self.ok("qlen", {"queue": q}), 1)
        st = self.ok("qstats", {"queue": q}, auth=BOSS)
        self.assertEqual(st["waiting"], 1)
        self.assertEqual(st["queue"], q)
        self.assertEqual(self.ok("leave", {"user": "web-2"}), 1)
        self.assertEqual(self.ok("leave", {"user": "web-2"}), 0)
        self.assertEqual(self.ok("logout", {"servicer": "agent7"},
                                 auth=AGENT), 0)
        # Each counted as a command, as RESP's are (the table's path).
        info = self.r.execute_command("INFO", "commandstats")
        self.assertIn("cmdstat_enqueue", info)

    # Errors are RESP's -----------------------------------------------------

    def test_errors_as_resp(self):
        """Bad values get RESP's very error for the same arguments, with
        the status of its code, and change nothing."""
        q = self.q
        before = self.state()
        cases = [
            # (command, body, the RESP argv, status)
            ("enqueue", {"user": "web-x", "queue": q, "tier": 99},
             ("ENQUEUE", "web-x", "QUEUE", q, "TIER", "99"), 400),
            ("enqueue", {"user": "web-x", "tier": 10 ** 30},
             ("ENQUEUE", "web-x", "TIER", str(10 ** 30)), 400),
            ("enqueue", {"user": "web-x", "tier": -1},
             ("ENQUEUE", "web-x", "TIER", "-1"), 400),
            ("enqueue", {"user": "web-x", "ttl": 1.5},
             ("ENQUEUE", "web-x", "TTL", "1.5"), 400),
            ("enqueue", {"user": "web-x", "ttl": 1e3},
             ("ENQUEUE", "web-x", "TTL", "1000.0"), 400),
            ("enqueue", {"user": "web-x", "queue": "no such!"},
             ("ENQUEUE", "web-x", "QUEUE", "no such!"), 400),
            ("enqueue", {"user": "web-x", "queue": "a" * 65},
             ("ENQUEUE", "web-x", "QUEUE", "a" * 65), 400),
            ("enqueue", {"user": "web-x", "prefer": "agent7"},
             ("ENQUEUE", "web-x", "PREFER", "agent7"), 400),
            ("enqueue", {"user": "web-x", "prefer_s": 5},
             ("ENQUEUE", "web-x", "5"), 400),
            ("enqueue", {"user": "web-x", "needs": ["de:0"]},
             ("ENQUEUE", "web-x", "NEEDS", "de:0"), 400),
            ("touch", {"user": "web-x", "ttl": 86401},
             ("TOUCH", "web-x", "TTL", "86401"), 400),
            ("heartbeat", {"servicer": "agent8", "capacity": 0},
             ("HEARTBEAT", "agent8", "CAPACITY", "0"), 400),
            ("heartbeat", {"servicer": "agent8",
                           "queues": ["q%d" % i for i in range(33)]},
             ("HEARTBEAT", "agent8", "QUEUES",
              ",".join("q%d" % i for i in range(33))), 400),
            ("accept", {"room": "nobody/0"}, ("ACCEPT", "nobody/0"), 404),
            ("transfer", {"room": "nobody/0", "queue": q},
             ("TRANSFER", "nobody/0", q), 404),
            ("pause", {"servicer": "nobody"}, ("PAUSE", "nobody"), 404),
        ]
        for cmd, body, argv, status in cases:
            auth = WEB if cmd in ("enqueue", "touch") else BOSS
            reply, _ = self.err(cmd, body, status, auth=auth)
            if argv is not None:
                self.assertEqual(reply["error"], self.resp_error(*argv),
                                 (cmd, body))
        self.assertEqual(self.state(), before)
        # A free room has no conversation to transfer: RESP's text.
        self.ok("heartbeat", {"servicer": "agent8", "queues": [q + "z"]},
                auth=basic("agent8", "a8pw"))
        reply, _ = self.err("transfer", {"room": "agent8/0", "queue": q},
                            400, auth=basic("agent8", "a8pw"))
        self.assertEqual(reply["error"], "ERR no conversation in room")
        self.ok("logout", {"servicer": "agent8"}, auth=BOSS)
        # A full queue (max_queue_length 3): 409, nothing more in line.
        for i in range(3):
            self.ok("enqueue", {"user": "web-f%d" % i, "queue": q})
        reply, _ = self.err("enqueue", {"user": "web-f3", "queue": q}, 409)
        self.assertEqual(reply["error"], self.resp_error(
            "ENQUEUE", "web-f3", "QUEUE", q))
        self.assertEqual(self.ok("qlen", {"queue": q}), 3)
        for i in range(3):
            self.ok("leave", {"user": "web-f%d" % i})
        # A queue nobody serves, whose policy refuses arrivals (section
        # 3c): 409 as a full one, RESP's -NOBODY, nobody in line.
        reply, _ = self.err("enqueue", {"user": "web-n0",
                                        "queue": "unserved"}, 409)
        self.assertEqual(reply["code"], "NOBODY")
        self.assertEqual(reply["error"], self.resp_error(
            "ENQUEUE", "web-n0", "QUEUE", "unserved"))
        self.assertEqual(self.ok("qlen", {"queue": "unserved"}), 0)
        # A queue closed by its business hours that refuses: 409 too.
        reply, _ = self.err("enqueue", {"user": "web-s1",
                                        "queue": "web-shut"}, 409)
        self.assertEqual(reply["error"], "CLOSED queue is closed; no "
                         "opening time is ahead")
        self.assertEqual(reply["code"], "CLOSED")
        self.assertEqual(self.ok("qlen", {"queue": "web-shut"}), 0)

    # Trying to break it ----------------------------------------------------

    def test_garbage(self):
        """Bodies that are not one JSON object of the command's fields,
        of the right types: each 400 with a clear error, nothing
        changed, csqd unharmed."""
        before = self.state()
        bodies = [
            b"", b" ", b"{", b"}", b"[]", b"null", b"1", b'"x"',
            b'{"user":"web-9"} x', b'{"user":"web-9",}', b'{,}',
            b'{"user" "web-9"}', b'{"user":}', b"{'user':'web-9'}",
            b'{"user":"web-9","user":"web-9"}',
            b'{"user":"web-9","x":1}', b'{"USER":"web-9"}',
            b'{"user":"web-9","tier":"1"}', b'{"user":"web-9","tier":true}',
            b'{"user":"web-9","tier":null}', b'{"user":"web-9","tier":[1]}',
            b'{"user":"web-9","tier":{"a":1}}', b'{"user":"web-9","tier":-}',
            b'{"user":"web-9","tier":01}', b'{"user":"web-9","tier":1.}',
            b'{"user":1}', b'{"user":null}', b'{"user":["web-9"]}',
            b'{"user":"web-9","needs":[1]}', b'{"user":"web-9","needs":[]}',
            b'{"user":"web-9","needs":["de:1,fr:1"]}',
            b'{"user":"web\\u0000-9"}', b'{"user":"web-9\\ud800"}',
            b'{"user":"web-9\\udc00x"}', b'{"user":"web-9\\x"}',
            b'{"user":"web-9\\u12"}', b'{"user":"web-\n9"}',
            b'{"user":"web-9', b'{"user":"web-9"',
            b'{"user":"\xff\xfe"}', b'{"user":"web-9\xc3"}',
            b'{"user":' + b"[" * 1000 + b"]" * 1000 + b"}",
            b'{"queue":"x"}',
        ]
        for raw in bodies:
            status, _, reply = self.post("enqueue", None, raw=raw)
            # A string that is JSON but no id gets RESP's answer: the
            # binding's NOPERM comes before the id's check (section 8).
            self.assertIn((status, reply["code"]),
                          ((400, "ERR"), (403, "NOPERM")), raw)
        # Random bytes and random mutations of a good body.
        rnd = random.Random(38)
        good = b'{"user":"web-9","queue":"%s","tier":1}' % self.q.encode()
        for _ in range(200):
            if rnd.random() < 0.5:
                raw = bytes(rnd.randrange(256)
                            for _ in range(rnd.randrange(1, 64)))
            else:
                raw = bytearray(good)
                for _ in range(rnd.randrange(1, 4)):
                    raw[rnd.randrange(len(raw))] = rnd.randrange(256)
                raw = bytes(raw)
            status, _, reply = self.post("enqueue", None, raw=raw)
            if status == 200:  # a mutation that is still a good request
                self.ok("leave", {"user": json.loads(raw)["user"]})
                continue
            self.assertIn(status, (400, 403), (raw, reply))
        self.ok("leave", {"user": "web-9"})
        after = self.state()
        self.assertEqual(after[1:], before[1:])
        self.assertEqual(after[0]["waiting"], before[0]["waiting"])
        self.assertTrue(self.r.ping())

    def test_auth(self):
        """No credentials, wrong ones, garbled ones: 401 for every
        command, known or not, whatever the method, and nothing told."""
        before = self.state()
        for auth in (None, basic("web", "wrong"), basic("nobody", "webpw"),
                     basic("default", ""), "Basic !!!!", "Basic",
                     "Basic " + base64.b64encode(b"nocolon").decode(),
                     bearer("wrong-token-0123456789"), "Bearer ",
                     bearer(WEB_TOKEN + "x"), bearer(WEB_TOKEN[:-1]),
                     "Digest x", "webpw"):
            for cmd in ("enqueue", "nosuchcommand"):
                reply, headers = self.err(cmd, {"user": "web-a"}, 401,
                                          auth=auth)
                self.assertIn(reply["code"], ("NOAUTH", "WRONGPASS"))
                self.assertEqual(headers["WWW-Authenticate"],
                                 'Basic realm="csq", charset="UTF-8"')
        status, _, _ = self.post("enqueue", None, auth=None, method="GET")
        self.assertEqual(status, 401)
        # Credentials, but another method or no such command.
        status, headers, reply = self.post("enqueue", None, method="GET")
        self.assertEqual((status, headers["Allow"]), (405, "POST"))
        reply, _ = self.err("nosuchcommand", {}, 404)
        self.assertEqual(reply["error"], "ERR unknown command 'nosuchcommand'")
        # A role that may not run the command: RESP's NOPERM, 403.
        for cmd, body, auth in (
                ("heartbeat", {"servicer": "web-a"}, WEB),
                ("accept", {"room": "agent7/0"}, WEB),
                ("enqueue", {"user": "agent7"}, AGENT),
                ("leave", {"user": "web-a"}, AGENT)):
            reply, _ = self.err(cmd, body, 403, auth=auth)
            self.assertEqual(reply["error"],
                             "NOPERM this user has no permissions to run "
                             "the '%s' command" % cmd)
        # Acting for an id outside the user's binding (issue 37's ids).
        for cmd, body, auth, the_id in (
                ("enqueue", {"user": "someone"}, WEB, "someone"),
                ("where", {"user": "xweb-1"}, bearer(WEB_TOKEN), "xweb-1"),
                ("leave", {"user": "other"}, WEB, "other"),
                ("heartbeat", {"servicer": "agent8"}, AGENT, "agent8"),
                ("pause", {"servicer": "agent8"}, AGENT, "agent8"),
                ("logout", {"servicer": "agent8"}, AGENT, "agent8"),
                ("accept", {"room": "agent8/0"}, AGENT, "agent8/0"),
                ("release", {"room": "agent8/0"}, AGENT, "agent8/0"),
                ("transfer", {"room": "agent8/0", "queue": "x"}, AGENT,
                 "agent8/0"),
                ("heartbeat", {"servicer": "agent8"},
                 basic("agent7", "a7pw"), "agent8")):
            reply, _ = self.err(cmd, body, 403, auth=auth)
            self.assertEqual(reply["error"],
                             "NOPERM this user has no permissions to act "
                             "for the id '%s'" % the_id)
        self.assertEqual(self.state(), before)

    # Events and CORS (section 11c) ----------------------------------------

    def stream(self, auth, last_event_id=None, headers=None):
        s = h.Sse(self.d.http_port, path="/api/v1/events", auth=auth,
                  last_event_id=last_event_id, headers=headers)
        self.assertEqual(s.head(), 200)
        self.assertEqual(s.headers["content-type"], "text/event-stream")
        return s

    def test_events(self):
        """GET /api/v1/events: a frontend bound to web-* hears its users'
        events only, a servicer bound to agent7 its own, an admin every
        event; each resumes after Last-Event-ID with its own events.
        How we tried to break it: another user's ids, POST and DELETE,
        no or wrong credentials, an id that is no id."""
        q, q2 = self.q, self.q + "b"
        web, agent, boss = (self.stream(WEB), self.stream(AGENT),
                            self.stream(BOSS))
        r = self.r
        r.execute_command("HEARTBEAT", "agent7", "QUEUES", q)
        r.execute_command("HEARTBEAT", "agent8", "QUEUES", q2)
        r.execute_command("ENQUEUE", "app-1", "QUEUE", q2)  # not web's
        r.execute_command("ENQUEUE", "web-1", "QUEUE", q)
        r.execute_command("LEAVE", "app-1")
        r.execute_command("LEAVE", "web-1")
        r.execute_command("LOGOUT", "agent7")
        r.execute_command("LOGOUT", "agent8")

        def kinds(frames, key):
            return [(f["event"], f["data"].get(key)) for f in frames]

        got = boss.until(lambda fs: sum(
            f["event"] == "servicer_down" for f in fs) == 2)
        # Every event for the admin, as /api/events; each of the others
        # exactly the admin's frames of its own ids.
        self.assertEqual({f["data"].get("user") for f in got},
                         {None, "app-1", "web-1"})
        mine = [f for f in got if f["data"].get("user") == "web-1"]
        got_web = web.until(lambda fs: len(fs) >= len(mine))
        self.assertEqual(got_web, mine)
        self.assertEqual(kinds(got_web, "user")[-1], ("released", "web-1"))
        ours = [f for f in got if f["data"].get("servicer") == "agent7"]
        got_agent = agent.until(lambda fs: len(fs) >= len(ours))
        self.assertEqual(got_agent, ours)
        self.assertEqual(kinds(got_agent, "servicer")[0],
                         ("servicer_up", "agent7"))
        self.assertIn(("released", "agent7"), kinds(got_agent, "servicer"))
        # Nothing more came for them: the others' events are not theirs.
        self.assertEqual(web.frames(0.2), [])
        self.assertEqual(agent.frames(0.2), [])
        # The same frames as the admin's, ids and all.
        by_id = {f["id"]: f for f in got}
        for f in got_web + got_agent:
            self.assertEqual(by_id[f["id"]], f)
        for s in (web, agent, boss):
            s.close()
        # Resumed after the first event: only its own again.
        first = got[0]["id"] - 1
        again = self.stream(WEB, last_event_id=first)
        self.assertEqual(again.until(lambda fs: len(fs) >= len(mine)),
                         got_web)
        self.assertEqual(again.frames(0.2), [])
        again.close()
        # Not an id: resync, as /api/events.
        bad = self.stream(AGENT, last_event_id="abc")
        self.assertEqual(bad.until(lambda fs: fs)[0]["event"], "resync")
        bad.close()
        # Another method: 405 after the credentials; none: 401.
        for method in ("POST", "DELETE"):
            status, headers, reply = self.post("events", {}, method=method,
                                               auth=WEB)
            self.assertEqual((status, headers["Allow"]), (405, "GET, HEAD"))
            self.assertEqual(reply["error"], "ERR the event stream takes GET")
        for auth in (None, basic("web", "nope"), bearer("x" * 24)):
            s = h.Sse(self.d.http_port, path="/api/v1/events", auth=auth)
            self.assertEqual(s.head(), 401)
            s.close()

    def cors(self, method, cmd, origin, extra=None, auth=None):
        """(status, headers, body) of a raw request with an Origin."""
        sock = socket.create_connection(("127.0.0.1", self.d.http_port))
        req = "%s /api/v1/%s HTTP/1.1\r\nHost: t\r\nOrigin: %s\r\n" % (
            method, cmd, origin)
        for k, v in (extra or {}).items():
            req += "%s: %s\r\n" % (k, v)
        body = b""
        if auth is not None:
            req += "Authorization: %s\r\n" % auth
        if method == "POST":
            body = json.dumps({"user": "web-cors"}).encode()
            req += "Content-Length: %d\r\n" % len(body)
        req += "Connection: close\r\n\r\n"
        sock.sendall(req.encode() + body)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        sock.close()
        head, _, payload = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        return int(lines[0].split()[1]), headers, payload

    def test_cors(self):
        """An origin of http.cors_origins gets its preflight answered
        (204, without credentials, as browsers send none) and every answer
        the headers that let its script read it; any other origin gets a
        403 preflight and no CORS header. How we tried to break it: an
        origin with a trailing slash, another case, another port, another
        scheme, "null", a prefix of a listed one; a non-preflight OPTIONS
        (credentials first, then 405)."""
        before = self.state()
        pre = {"Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization"}
        for origin in (ORIGIN, "http://127.0.0.1:8080"):
            status, hd, _ = self.cors("OPTIONS", "enqueue", origin, pre)
            self.assertEqual(status, 204)
            self.assertEqual(hd["access-control-allow-origin"], origin)
            self.assertEqual(hd["access-control-allow-credentials"], "true")
            self.assertIn("POST", hd["access-control-allow-methods"])
            self.assertIn("Authorization", hd["access-control-allow-headers"])
            self.assertIn("Last-Event-ID", hd["access-control-allow-headers"])
            self.assertEqual(hd["vary"], "Origin")
        for origin in (ORIGIN + "/", "https://APP.example.com",
                       "https://app.example.com:443", "http://app.example.com",
                       "null", "https://app.example.co",
                       "http://127.0.0.1:808"):
            status, hd, body = self.cors("OPTIONS", "enqueue", origin, pre)
            self.assertEqual(status, 403, origin)
            self.assertNotIn("access-control-allow-origin", hd)
            self.assertEqual(json.loads(body)["error"],
                             "ERR origin not allowed (http.cors_origins)")
            # A request still runs (CORS binds browsers, not csqd), but its
            # answer carries no header that lets a page's script read it.
            status, hd, _ = self.cors("POST", "where", origin, auth=WEB)
            self.assertEqual(status, 200)
            self.assertNotIn("access-control-allow-origin", hd)
        # Not a preflight: credentials first, then the method.
        status, hd, _ = self.cors("OPTIONS", "enqueue", ORIGIN)
        self.assertEqual(status, 401)
        self.assertEqual(hd["access-control-allow-origin"], ORIGIN)
        status, hd, _ = self.cors("OPTIONS", "enqueue", ORIGIN, auth=WEB)
        self.assertEqual((status, hd["allow"]), (405, "POST"))
        # Answers and errors of a listed origin can be read by its script.
        status, hd, body = self.cors("POST", "where", ORIGIN, auth=WEB)
        self.assertEqual(status, 200)
        self.assertEqual(hd["access-control-allow-origin"], ORIGIN)
        self.assertEqual(json.loads(body), {"state": "none"})
        status, hd, _ = self.cors("POST", "leave", ORIGIN, auth=AGENT)
        self.assertEqual(status, 403)
        self.assertEqual(hd["access-control-allow-origin"], ORIGIN)
        s = self.stream(WEB, headers={"Origin": ORIGIN})
        self.assertEqual(s.headers["access-control-allow-origin"], ORIGIN)
        s.close()
        self.assertEqual(self.state(), before)

    def test_cors_config(self):
        """http.cors_origins refuses what is no origin: csqd -n says why,
        with the line, and exits 78."""
        path = os.path.join(self.dir, "cors.conf")
        for bad in ('"*"', '"app.example.com"', '"https://"',
                    '"https://a.example.com/"', '"https://a.example.com/x"',
                    '"https://*.example.com"', '"ftp://a.example.com"',
                    '"https://u@a.example.com"', '"https://a b"'):
            with open(path, "w") as f:
                f.write("http: { cors_origins = [ %s ]; };\n" % bad)
            p = subprocess.run([CSQD, "-n", "-c", path],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 78, bad)
            self.assertIn("cors_origins", p.stdout + p.stderr)
            self.assertIn("not an origin", p.stdout + p.stderr)
        with open(path, "w") as f:
            f.write('http: { cors_origins = [ "https://a.example.com:8443",'
                    ' "http://localhost:3000" ]; };\n')
        p = subprocess.run([CSQD, "-n", "-c", path], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_limits(self):
        """A body over the limit is refused unread (413); a body that
        never comes whole is cut off at http.request_timeout; a client
        that leaves before its answer still has its command run."""
        before = self.state()
        status, _, _ = self.post("enqueue", None,
                                 raw=b'{"user":"web-big","queue":"'
                                 + b"a" * 9000 + b'"}')
        self.assertEqual(status, 413)
        self.assertEqual(self.state(), before)
        # Half a body, then nothing: closed within request_timeout (2 s).
        s = socket.create_connection(("127.0.0.1", self.d.http_port))
        s.settimeout(30)
        s.sendall(b"POST /api/v1/enqueue HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: " + WEB.encode() + b"\r\n"
                  b"Content-Length: 100\r\n\r\n{\"user\":")
        self.assertEqual(s.recv(4096), b"")  # the server closed it
        s.close()
        self.assertEqual(self.state(), before)
        # A client that sends its request and goes: the command runs.
        s = socket.create_connection(("127.0.0.1", self.d.http_port))
        body = json.dumps({"user": "web-gone", "queue": self.q}).encode()
        s.sendall(b"POST /api/v1/enqueue HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: " + WEB.encode() + b"\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        s.close()
        h.wait_until("web-gone waiting", lambda: self.r.execute_command(
            "WHERE", "web-gone")[1] == "waiting")
        self.assertEqual(self.ok("leave", {"user": "web-gone"}), 1)
        # Keep-alive: several requests on one connection.
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.d.http_port,
                                       timeout=30)
        for i in range(5):
            c.request("POST", "/api/v1/qlen",
                      body=json.dumps({"queue": self.q}),
                      headers={"Authorization": WEB})
            r = c.getresponse()
            self.assertEqual((r.status, json.loads(r.read())), (200, 0))
        c.close()

    # Visible states (issue 38, item 3) -------------------------------------

    def snapshot_servicer(self, sid):
        _, _, body = h.Http(self.d.http_port, BOSS).request(
            "GET", "/api/snapshot")
        for s in json.loads(body)["servicers"]:
            if s["id"] == sid:
                return s
        self.fail("no %s in the snapshot" % sid)

    def test_visible_states(self):
        """The snapshot says why a servicer is paused (by hand, or after
        offer_max_missed offers ran out: 1 here) and how long one rests
        after a DECLINE (offer_retry, 10 s by default)."""
        q, a8 = self.q, basic("agent8", "a8pw")
        self.ok("heartbeat", {"servicer": "agent8", "queues": [q],
                              "offer": 1}, auth=a8)
        s = self.snapshot_servicer("agent8")
        self.assertEqual((s["status"], s["paused_by"], s["resting_ms"]),
                         ("ready", "", 0))
        self.assertEqual(self.ok("pause", {"servicer": "agent8"}, auth=a8),
                         "OK")
        s = self.snapshot_servicer("agent8")
        self.assertEqual((s["status"], s["paused_by"]), ("paused", "pause"))
        self.ok("resume", {"servicer": "agent8"}, auth=a8)
        # Offered, declined: ready, resting about offer_retry.
        self.ok("enqueue", {"user": "web-s1", "queue": q})
        self.assertEqual(self.ok("decline", {"room": "agent8/0"}, auth=a8),
                         1)
        s = self.snapshot_servicer("agent8")
        self.assertEqual((s["status"], s["paused_by"]), ("ready", ""))
        self.assertTrue(8000 < s["resting_ms"] <= 10000, s)
        # RESUME ends the rest; the offer then runs out (1 s): paused
        # after one missed offer.
        self.ok("resume", {"servicer": "agent8"}, auth=a8)
        h.wait_until("agent8 paused for its missed offer",
                     lambda: self.snapshot_servicer("agent8")["status"]
                     == "paused")
        s = self.snapshot_servicer("agent8")
        self.assertEqual(s["paused_by"], "missed_offers")
        self.ok("leave", {"user": "web-s1"})
        self.ok("logout", {"servicer": "agent8"}, auth=a8)

    @unittest.skipIf(ENGINE != "redis", "the Redis engine's")
    def test_zz_tryagain(self):
        """Redis gone: TRYAGAIN, 503 with Retry-After, as RESP's error;
        back, the API serves again (last: Redis comes back empty)."""
        self.redisd.stop()
        try:
            reply, headers = self.err("enqueue", {"user": "web-t"}, 503)
            self.assertEqual(reply["code"], "TRYAGAIN")
            self.assertEqual(headers["Retry-After"], "1")
        finally:
            self.redisd.restart()
        h.wait_until("the API serves again", lambda: self.post(
            "qlen", {"queue": self.q})[0] == 200, timeout=30)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
