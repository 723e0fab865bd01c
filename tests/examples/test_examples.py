#!/usr/bin/env python3
"""The examples (examples/agent-python, examples/frontend-js) run against a
real csqd: each case starts csqd on a free port (on the Redis engine, a
private redis-server too), runs the example as a newcomer would, and checks
what really happened, on csq's own channels and with WHERE / SERVICERS, as
well as what the example printed.

usage: test_examples.py CSQD GROUP     (GROUP: see GROUPS at the end)
environment: CSQ_TEST_ENGINE  memory (default) or redis
             CSQ_NODE         node for the JavaScript example (default: node)
Exit 0 when every case of the group passed, 1 when one failed, 77 (skip)
without redis-py, node or the frontend's node_modules (scripts/test
installs them all: there, 77 is a failure).
"""

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

try:
    import redis
except ImportError:
    print("redis-py is not installed (Debian: python3-redis)")
    sys.exit(77)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# csqd and its redis-server are started as for the client tests.
sys.path.insert(0, os.path.join(ROOT, "tests", "clients"))
from csqd_proc import Runner  # noqa: E402
AGENT = os.path.join(ROOT, "examples", "agent-python", "agent.py")
FRONTEND_DIR = os.path.join(ROOT, "examples", "frontend-js")
FRONTEND = os.path.join(FRONTEND_DIR, "frontend.js")

# How long anything the test waits for may take: csqd is built with the
# sanitizers, and the machine may be busy with other builds.
WAIT_SECONDS = 15.0


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def wait_until(pred, what, timeout=WAIT_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise Failure("timed out waiting for " + what)


def fields(reply):
    return dict(zip(reply[0::2], reply[1::2]))


class Events:
    """A subscription of the test's own, to see what csqd really did."""

    def __init__(self, r, *channels):
        self.pubsub = r.pubsub()
        self.pubsub.subscribe(*channels)
        # Once the last confirmation is read, csqd publishes to us
        # whatever happens next.
        self.seen = []
        confirmed = 0
        deadline = time.monotonic() + WAIT_SECONDS
        while confirmed < len(channels):
            check(time.monotonic() < deadline, "no SUBSCRIBE confirmation")
            msg = self.pubsub.get_message(timeout=0.1)
            if msg and msg["type"] == "subscribe":
                confirmed += 1

    def expect(self, what, timeout=WAIT_SECONDS, **want):
        """The first event not yet taken whose fields have these values."""
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.seen):
                if all(ev.get(k) == v for k, v in want.items()):
                    del self.seen[i]
                    return ev
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure("no event %s %s; saw %s" % (what, want,
                                                           self.seen))
            msg = self.pubsub.get_message(timeout=min(left, 0.2))
            if msg and msg["type"] == "message":
                self.seen.append(json.loads(msg["data"]))

    def none(self, seconds, **want):
        """No event with these field values comes within the time."""
        try:
            ev = self.expect("", timeout=seconds, **want)
        except Failure:
            return
        raise Failure("unexpected event %s" % ev)

    def close(self):
        self.pubsub.close()


class Example:
    """An example program running; its output read line by line."""

    def __init__(self, argv, name):
        self.name = name
        self.lines = []
        self.fresh = queue.Queue()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            self.fresh.put(line)

    def mark(self):
        """Where the output is now, for expect(since=...)."""
        return len(self.lines)

    def expect(self, pattern, timeout=WAIT_SECONDS, since=0):
        """Waits for a line that matches, from line `since` on; returns the
        match."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        checked = since
        while True:
            for line in self.lines[checked:]:
                m = rx.search(line)
                if m:
                    return m
            checked = len(self.lines)
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure("%s printed no line like %r" % (self.name,
                                                               pattern))
            try:
                self.fresh.get(timeout=min(left, 0.2))
            except queue.Empty:
                pass

    def exited(self, timeout=WAIT_SECONDS):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure("%s did not exit" % self.name) from None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def output(self):
        return "\n".join(self.lines)


class Case:
    """What a case gets: csqd (csqd_proc.Daemons, fresh for each case), a
    redis-py client of it, and the examples to start on it."""

    def __init__(self, daemons):
        self.port = daemons.port
        # The test's own client logs in as the admin with roles (ROLES).
        user, password = daemons.auth or (None, None)
        self.r = redis.Redis(port=self.port, username=user,
                             password=password, decode_responses=True)
        self.examples = []
        self.subscriptions = []

    def events(self, *channels):
        ev = Events(self.r, *channels)
        self.subscriptions.append(ev)
        return ev

    def agent(self, *args):
        ex = Example([sys.executable, "-u", AGENT, "--port", str(self.port)] +
                     list(args), "agent.py")
        self.examples.append(ex)
        return ex

    def frontend(self, *args):
        ex = Example([NODE, FRONTEND, "--port", str(self.port)] + list(args),
                     "frontend.js")
        self.examples.append(ex)
        return ex

    def where(self, user):
        return fields(self.r.execute_command("WHERE", user))

    def servicers(self):
        return [row[0] for row in self.r.execute_command("SERVICERS")]

    def finish(self, failed):
        for ex in self.examples:
            ex.stop()
            if failed:
                print("---- %s output ----\n%s" % (ex.name, ex.output()))
        for ev in self.subscriptions:
            ev.close()
        # A client still connected would hold csqd's stop up to 2 s
        # (docs/operations.md, "Stop and restart").
        self.r.connection_pool.disconnect()


def with_case(fn):
    """fn(Case) as a test of csqd_proc.Runner, which starts csqd for it."""
    def test(daemons):
        t = Case(daemons)
        failed = True
        try:
            fn(t)
            failed = False
        finally:
            t.finish(failed)
    test.__name__ = fn.__name__
    return test


# -- the agent (examples/agent-python) -----------------------------------------

def agent_serves_user(t):
    """The agent logs in, gets a waiting user, ends the conversation after
    --hold, and after --conversations 1 logs out and exits 0."""
    t.r.execute_command("ENQUEUE", "u1")
    ev = t.events("user:u1", "servicer:a1")
    agent = t.agent("--servicer", "a1", "--hold", "0.3", "--conversations",
                    "1")
    m = ev.expect("matched", event="matched", user="u1")
    check(m["servicer"] == "a1" and m["room"] == "a1/0", "matched %s" % m)
    agent.expect(r"conversation with u1 in a1/0 from queue default")
    ev.expect("released", event="released", user="u1", by="servicer",
              room="a1/0")
    agent.expect(r"released a1/0 user u1$")
    check(agent.exited() == 0, "agent exit status")
    ev.expect("servicer_down", event="servicer_down", servicer="a1",
              reason="logout")
    check(t.where("u1") == {"state": "none"}, "u1 is gone")
    check("a1" not in t.servicers(), "a1 logged out")


def agent_pauses_before_leaving(t):
    """Two users wait; the agent ends its one conversation: it PAUSEs
    before the RELEASE, so the room freed is not given u2 only to take it
    back at the LOGOUT (it used to be: `matched` u2, then `requeued` u2
    with reason logout, 1 ms later)."""
    t.r.execute_command("ENQUEUE", "u1")
    t.r.execute_command("ENQUEUE", "u2")
    ev = t.events("servicer:a1", "user:u2")
    agent = t.agent("--servicer", "a1", "--hold", "0.3", "--conversations",
                    "1")
    ev.expect("matched u1", event="matched", user="u1", servicer="a1")
    ev.expect("servicer_paused", event="servicer_paused", servicer="a1")
    ev.expect("released u1", event="released", user="u1", by="servicer")
    check(agent.exited() == 0, "agent exit status")
    ev.expect("servicer_down", event="servicer_down", servicer="a1",
              reason="logout")
    # Every event of the run has been read (servicer_down is the last):
    # none of them gave u2 a room.
    for e in ev.seen:
        check(e.get("user") != "u2" or
              e.get("event") not in ("matched", "offered", "requeued"),
              "u2 given a room: %s" % e)
    ev.none(0.2, user="u2", event="matched")
    where = t.where("u2")
    check(where["state"] == "waiting" and where["position"] == 1,
          "u2 still first in line: %s" % where)


def agent_heartbeats(t):
    """With a TTL of 1 s the agent stays logged in for 3 s only by its
    heartbeat loop; SIGTERM logs it out and puts its user back in line."""
    ev = t.events("servicer:a1", "user:u2")
    agent = t.agent("--servicer", "a1", "--ttl", "1", "--hold", "60",
                    "--queues", "sales,default", "--capacity", "2")
    agent.expect(r"logged in as a1 status ready capacity 2 "
                 r"queues sales,default ttl 1")
    ev.expect("servicer_up", event="servicer_up", servicer="a1")
    ev.none(3.0, event="servicer_down")
    check(t.servicers() == ["a1"], "a1 still logged in")
    t.r.execute_command("ENQUEUE", "u2", "QUEUE", "sales")
    ev.expect("matched", event="matched", user="u2", servicer="a1")
    agent.signal(signal.SIGTERM)
    check(agent.exited() == 0, "agent exit status after SIGTERM")
    ev.expect("requeued", event="requeued", user="u2", reason="logout")
    ev.expect("servicer_down", event="servicer_down", servicer="a1",
              reason="logout")
    agent.expect(r"logged out; 1 user\(s\) went back in line")
    where = t.where("u2")
    check(where["state"] == "waiting" and where["queue"] == "sales",
          "u2 back in line: %s" % where)


def agent_user_leaves(t):
    """A user who leaves mid-conversation frees the room: the agent sees it
    on its channel, counts the conversation and takes the next user."""
    ev = t.events("servicer:a1")
    agent = t.agent("--servicer", "a1", "--hold", "60", "--conversations",
                    "2")
    ev.expect("servicer_up", event="servicer_up", servicer="a1")
    t.r.execute_command("ENQUEUE", "u1")
    t.r.execute_command("ENQUEUE", "u2")
    ev.expect("matched u1", event="matched", user="u1", room="a1/0")
    agent.expect(r"conversation with u1 in a1/0")
    check(t.r.execute_command("LEAVE", "u1") == 1, "LEAVE u1")
    ev.expect("released u1", event="released", user="u1", by="user")
    agent.expect(r"u1 left the conversation in a1/0")
    ev.expect("matched u2", event="matched", user="u2", room="a1/0")
    agent.expect(r"conversation with u2 in a1/0")
    check(t.r.execute_command("LEAVE", "u2") == 1, "LEAVE u2")
    check(agent.exited() == 0, "agent exit status after 2 conversations")
    ev.expect("servicer_down", event="servicer_down", reason="logout")


def agent_lost_and_back(t):
    """An agent that stops (SIGSTOP) past its TTL is declared lost and its
    user requeued; when it goes on, its next heartbeat logs it in again
    and it takes the user back."""
    ev = t.events("servicer:a1", "user:u1")
    agent = t.agent("--servicer", "a1", "--ttl", "1", "--hold", "60")
    ev.expect("servicer_up", event="servicer_up", servicer="a1")
    t.r.execute_command("ENQUEUE", "u1")
    ev.expect("matched", event="matched", user="u1", servicer="a1")
    agent.signal(signal.SIGSTOP)
    ev.expect("requeued", event="requeued", user="u1", reason="lost")
    ev.expect("servicer_down", event="servicer_down", reason="lost")
    mark = agent.mark()
    agent.signal(signal.SIGCONT)
    ev.expect("servicer_up again", event="servicer_up", servicer="a1")
    ev.expect("matched again", event="matched", user="u1", servicer="a1")
    agent.expect(r"csqd logged us out: lost", since=mark)
    agent.expect(r"conversation with u1 in a1/0", since=mark)
    where = t.where("u1")
    check(where["state"] == "assigned" and where["servicer"] == "a1",
          "u1 back with a1: %s" % where)


# -- offers (protocol-v2 section 1) ------------------------------------------
# Registered in tests/examples/CMakeLists.txt as examples.agent_offers and
# examples.redis.agent_offers: both engines have offers.
def agent_offers(t):
    """With --offer the agent asks for offers (HEARTBEAT ... OFFER 30) and
    ACCEPTs each: the user is offered, then matched with offered_ms; the
    frontend example shows both states."""
    ev = t.events("user:u1", "servicer:a1")
    agent = t.agent("--servicer", "a1", "--offer", "30", "--hold", "0.5",
                    "--conversations", "1")
    ev.expect("servicer_up", event="servicer_up", servicer="a1")
    front = t.frontend("--user", "u1", "--ttl", "30")
    o = ev.expect("offered", event="offered", user="u1")
    check(o["servicer"] == "a1" and o["room"] == "a1/0", "offered %s" % o)
    check(o["expires_ms"] > time.time() * 1000, "expires_ms in the future")
    agent.expect(r"offered u1 in a1/0")
    agent.expect(r"accepted u1 in a1/0")
    m = ev.expect("matched", event="matched", user="u1", servicer="a1")
    check("offered_ms" in m, "matched after an offer has offered_ms: %s" % m)
    front.expect(r"u1: offered to agent a1 \(room a1/0\)")
    front.expect(r"u1: matched with agent a1 in room a1/0")
    ev.expect("released", event="released", user="u1", by="servicer")
    front.expect(r"u1: conversation ended by servicer")
    check(agent.exited() == 0, "agent exit status")
    check(front.exited() == 0, "frontend exit status")


# -- transactions (protocol-v2 section 8) ------------------------------------
def pipeline_transaction(t):
    """redis-py's pipeline() is a MULTI/EXEC transaction by default: an
    agent logs in and two users arrive in one block, and the replies come
    back as a list. A command refused while queueing aborts the block:
    nothing of it is applied."""
    with t.r.pipeline() as pipe:
        pipe.execute_command("HEARTBEAT", "a1", "CAPACITY", "2")
        pipe.execute_command("ENQUEUE", "u1")
        pipe.execute_command("ENQUEUE", "u2")
        pipe.execute_command("WHERE", "u2")
        beat, u1, u2, where = pipe.execute()
    check(fields(beat)["active"] == 0, "HEARTBEAT ran first: %s" % beat)
    check(fields(u1)["room"] == "a1/0", "u1: %s" % u1)
    check(fields(u2)["room"] == "a1/1", "u2: %s" % u2)
    check(fields(where)["state"] == "assigned", "WHERE u2: %s" % where)
    with t.r.pipeline() as pipe:
        pipe.execute_command("ENQUEUE", "u3")
        pipe.execute_command("ENQUEUE")  # wrong number of arguments
        try:
            pipe.execute()
        except redis.ResponseError as err:
            check("wrong number of arguments" in str(err), str(err))
        else:
            raise Failure("a block with a bad command ran")
    check(t.where("u3") == {"state": "none"}, "the aborted block did nothing")


# -- the frontend (examples/frontend-js) ---------------------------------------

def frontend_waits_and_is_matched(t):
    """The frontend shows the position as the line moves (WHERE at each
    TOUCH), then the match, then the end of the conversation."""
    t.r.execute_command("ENQUEUE", "w0")
    t.r.execute_command("ENQUEUE", "w1")
    ev = t.events("user:u1")
    front = t.frontend("--user", "u1", "--ttl", "3")
    ev.expect("queued", event="queued", position=3)
    front.expect(r"u1: waiting in default, position 3")
    # The estimate, when csqd gives one (protocol v2 eta_ms), is shown.
    if "eta_ms" in t.where("u1"):
        front.expect(r"u1: waiting in default, position 3, "
                     r"(estimated wait \d+ s|no wait estimate yet)")
    t.r.execute_command("LEAVE", "w0")
    front.expect(r"u1: waiting in default, position 2")
    t.r.execute_command("HEARTBEAT", "s1")   # takes w1, the first in line
    front.expect(r"u1: waiting in default, position 1")
    t.r.execute_command("HEARTBEAT", "s1", "CAPACITY", "2")
    m = ev.expect("matched", event="matched", user="u1")
    check(m["room"] == "s1/1", "matched %s" % m)
    front.expect(r"u1: matched with agent s1 in room s1/1 after \d+ ms")
    check(t.r.execute_command("RELEASE", "s1/1") == 1, "RELEASE s1/1")
    front.expect(r"u1: conversation ended by servicer")
    check(front.exited() == 0, "frontend exit status")


def frontend_requeued(t):
    """The agent leaves mid-conversation: the customer goes back in line
    (requeued), the frontend shows it waiting again and touches it again
    (its TTL of 1 s restarts), and the next agent takes it."""
    t.r.execute_command("HEARTBEAT", "s1")
    ev = t.events("user:u1")
    front = t.frontend("--user", "u1", "--ttl", "1")
    ev.expect("matched", event="matched", user="u1", servicer="s1")
    front.expect(r"u1: matched with agent s1 in room s1/0")
    mark = front.mark()
    check(t.r.execute_command("LOGOUT", "s1") == 1, "LOGOUT s1")
    ev.expect("requeued", event="requeued", user="u1", reason="logout")
    front.expect(r"u1: waiting in default, position 1", since=mark)
    ev.none(3.0, event="left")
    t.r.execute_command("HEARTBEAT", "s2")
    ev.expect("matched s2", event="matched", user="u1", servicer="s2")
    front.expect(r"u1: matched with agent s2 in room s2/0")
    check(t.r.execute_command("RELEASE", "s2/0") == 1, "RELEASE s2/0")
    front.expect(r"u1: conversation ended by servicer")
    check(front.exited() == 0, "frontend exit status")


def frontend_touches(t):
    """With a TTL of 1 s the user stays in line for 3 s only by the
    frontend's TOUCH; SIGTERM (the window closed) is a LEAVE."""
    ev = t.events("user:u1")
    front = t.frontend("--user", "u1", "--ttl", "1")
    ev.expect("queued", event="queued", user="u1")
    ev.none(3.0, event="left")
    check(t.where("u1")["state"] == "waiting", "u1 still waiting")
    front.signal(signal.SIGTERM)
    ev.expect("left", event="left", user="u1", reason="leave")
    front.expect(r"u1: left the line \(leave\)")
    check(front.exited() == 0, "frontend exit status after SIGTERM")
    check(t.where("u1") == {"state": "none"}, "u1 is gone")


def frontend_gives_up(t):
    """--give-up: no agent in time, the frontend LEAVEs."""
    ev = t.events("user:u1")
    front = t.frontend("--user", "u1", "--queue", "sales", "--tier", "2",
                       "--give-up", "1")
    q = ev.expect("queued", event="queued", user="u1")
    check(q["queue"] == "sales" and q["tier"] == 2, "queued %s" % q)
    front.expect(r"u1: no agent in time: leaving")
    ev.expect("left", event="left", user="u1", reason="leave")
    check(front.exited() == 0, "frontend exit status")


def frontend_ends_chat(t):
    """--chat: the customer ends the conversation: LEAVE of an assigned
    user frees the room (released, by user)."""
    t.r.execute_command("HEARTBEAT", "s1")
    ev = t.events("user:u1", "servicer:s1")
    front = t.frontend("--user", "u1", "--chat", "0.5")
    ev.expect("matched", event="matched", user="u1", servicer="s1")
    front.expect(r"u1: matched with agent s1 in room s1/0")
    ev.expect("released", event="released", user="u1", by="user")
    front.expect(r"u1: conversation ended by user")
    check(front.exited() == 0, "frontend exit status")
    check(fields(t.r.execute_command("STATS"))["rooms_free"] == 1,
          "the room is free again")


def agent_serves_frontend(t):
    """Both examples together: the Python agent takes the JavaScript
    frontend's customer and ends the conversation."""
    ev = t.events("servicer:a1")
    agent = t.agent("--servicer", "a1", "--queues", "sales", "--hold", "1",
                    "--conversations", "1")
    ev.expect("servicer_up", event="servicer_up", servicer="a1")
    front = t.frontend("--user", "u1", "--queue", "sales")
    front.expect(r"u1: matched with agent a1 in room a1/0")
    agent.expect(r"conversation with u1 in a1/0 from queue sales")
    front.expect(r"u1: conversation ended by servicer")
    agent.expect(r"released a1/0 user u1$")
    check(front.exited() == 0, "frontend exit status")
    check(agent.exited() == 0, "agent exit status")


# -- roles (docs/roles.md) -----------------------------------------------------
# Registered as examples.roles: csqd with a user per role, the agent logged
# in as the servicer user, the frontend as the frontend user, the test's own
# client as the admin (ROLES_CONF, ROLES_ADMIN).
ROLES_CONF = """users = (
  { name = "frontend"; password = "front-pass"; role = "frontend"; },
  { name = "agents"; password = "agent-pass"; role = "servicer"; },
  { name = "ops"; password = "ops-pass"; role = "admin"; }
);
"""
ROLES_ADMIN = ("ops", "ops-pass")


def roles_examples(t):
    """Each example logs in as its role's user and does its whole job
    under it: the agent heartbeats, follows servicer:a1, releases, pauses
    and logs out; the frontend enqueues, touches, follows user:u1."""
    ev = t.events("servicer:a1", "user:u1")
    agent = t.agent("--username", "agents", "--password", "agent-pass",
                    "--servicer", "a1", "--queues", "sales", "--hold", "0.5",
                    "--conversations", "1")
    ev.expect("servicer_up", event="servicer_up", servicer="a1")
    front = t.frontend("--username", "frontend", "--password", "front-pass",
                       "--user", "u1", "--queue", "sales", "--ttl", "5")
    ev.expect("matched", event="matched", user="u1", servicer="a1")
    front.expect(r"u1: matched with agent a1 in room a1/0")
    agent.expect(r"conversation with u1 in a1/0 from queue sales")
    ev.expect("released", event="released", user="u1", by="servicer")
    front.expect(r"u1: conversation ended by servicer")
    check(agent.exited() == 0, "agent exit status")
    check(front.exited() == 0, "frontend exit status")
    ev.expect("servicer_down", event="servicer_down", servicer="a1",
              reason="logout")
    for ex in (agent, front):
        check("NOPERM" not in ex.output(), "%s hit NOPERM" % ex.name)


def roles_wrong_user(t):
    """The agent's role user with the frontend's password, and the password
    alone (no requirepass: no `default` user), are refused: the agent says
    WRONGPASS and exits 1, and no servicer logged in."""
    for args in (["--username", "agents", "--password", "front-pass"],
                 ["--password", "agent-pass"]):
        agent = t.agent(*(args + ["--servicer", "a1"]))
        check(agent.exited() == 1, "agent exit status with %s" % args)
        agent.expect(r"WRONGPASS")
    check(t.servicers() == [], "nobody logged in")


# The library's own rule, without a csqd to race: a WHERE reply saying the
# customer is gone can overtake, on the command connection, the event that
# says how (released, left) on the subscription. The event decides; the
# reply alone ends it as "left (unknown)" only when no event comes within
# the library's wait (2 s). Seen on a loaded machine: RELEASE right after
# a keep-alive's WHERE printed "left the line (unknown)".
OVERTAKE_JS = r"""
import { Customer } from %s;
const stub = { forget() {}, refresh() {} };
function customer(ends) {
  const c = new Customer(stub, 'u9', { ttl: 1 });
  c.on('end', (w) => ends.push(w));
  c.onEvent({ event: 'matched', queue: 'default', servicer: 's1',
              room: 's1/0' });
  return c;
}
const a = [];
const ca = customer(a);
ca.onReply(['state', 'none'], ca.events);
ca.onEvent({ event: 'released', by: 'servicer' });
const b = [];
const cb = customer(b);
cb.onReply(['state', 'none'], cb.events);
const before = JSON.stringify(b);
await new Promise((r) => setTimeout(r, 2500));
console.log(JSON.stringify({ a, before, b }));
"""


def frontend_reply_overtakes_event(t):
    """A reply that says "none" before the event that explains it."""
    url = json.dumps("file://" + os.path.join(FRONTEND_DIR,
                                              "csq-frontend.js"))
    out = subprocess.run([NODE, "--input-type=module", "-e",
                          OVERTAKE_JS % url], capture_output=True,
                         text=True, timeout=60, check=False)
    check(out.returncode == 0, "node: %s" % out.stderr)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    check(got["a"] == [{"event": "released", "reason": "servicer"}],
          "the event decides: %s" % got["a"])
    check(got["before"] == "[]", "not ended at the reply: %s" %
          got["before"])
    check(got["b"] == [{"event": "left", "reason": "unknown"}],
          "no event: left (unknown) after the wait: %s" % got["b"])


GROUPS = {
    "agent_python": [agent_serves_user, agent_pauses_before_leaving,
                     agent_heartbeats, agent_user_leaves,
                     agent_lost_and_back],
    "frontend_js": [frontend_waits_and_is_matched, frontend_requeued,
                    frontend_reply_overtakes_event, frontend_touches,
                    frontend_gives_up, frontend_ends_chat,
                    agent_serves_frontend],
    "agent_offers": [agent_offers],
    "pipeline_transaction": [pipeline_transaction],
    "roles": [roles_examples, roles_wrong_user],
}
# The groups run on a csqd with users (the configuration, the admin's login).
GROUP_AUTH = {"roles": (ROLES_CONF, ROLES_ADMIN)}
NEEDS_NODE = {"frontend_js", "agent_offers", "roles"}
NODE = os.environ.get("CSQ_NODE") or shutil.which("node") or "node"


def main(argv):
    if len(argv) != 3 or argv[2] not in GROUPS:
        print(__doc__ + "groups: " + " ".join(GROUPS))
        return 64
    csqd, group = argv[1], argv[2]
    if group in NEEDS_NODE:
        if not shutil.which(NODE):
            print("node not found: skipped")
            return 77
        if not os.path.isdir(os.path.join(FRONTEND_DIR, "node_modules",
                                          "ioredis")):
            print("no node_modules in %s: run `npm ci` there "
                  "(scripts/test does): skipped" % FRONTEND_DIR)
            return 77
    if (os.environ.get("CSQ_TEST_ENGINE") == "redis" and
            not shutil.which("redis-server")):
        print("redis-server not found: skipped")
        return 77

    runner = Runner(csqd)
    conf, auth = GROUP_AUTH.get(group, ("", None))
    runner.run([with_case(fn) for fn in GROUPS[group]], extra_conf=conf,
               auth=auth)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
