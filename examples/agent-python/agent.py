#!/usr/bin/env python3
"""A csq agent client: one servicer that logs in, keeps itself alive, takes
the users csqd gives it, and ends their conversations.

It shows the three things every agent client of csq has to do:

- a heartbeat loop: HEARTBEAT at a third of the servicer's TTL, so that one
  late or lost heartbeat does not make csqd declare the agent lost;
- follow the servicer's channel, servicer:<id>, for what happens to it:
  `matched` (a conversation starts in a room), `offered` (with offers on,
  the agent must ACCEPT before the user is its own), `released` (the user
  left, or the agent released), `requeued` (users given back to the line);
- RELEASE a room when a conversation is over.

A real agent's conversations end when a person closes them; this one ends
each after --hold seconds, so that it can run on its own. It is written with
redis-py (Debian: python3-redis), through its raw-command call
execute_command() and its pub/sub API: csqd speaks the Redis protocol.

    python3 agent.py --servicer agent1 --queues default,sales --capacity 2

With roles (docs/roles.md), it logs in as a servicer user:

    python3 agent.py --username agents --password ... --servicer agent1

SIGINT or SIGTERM pauses the agent (no new user for it), then logs it out
(its users go back to their places in line) and ends the program with
status 0. Ending after --conversations N pauses it before the last RELEASE,
so that the room freed is not given a user only to take it back.
"""

import argparse
import json
import signal
import sys
import time

import redis

# A heartbeat every TTL/HEARTBEATS_PER_TTL seconds: two can be lost or late
# before csqd declares the servicer lost.
HEARTBEATS_PER_TTL = 3

# How long to wait before trying again after csqd could not be reached or
# answered TRYAGAIN (its engine is unavailable for now).
RETRY_SECONDS = 1.0

# How long to wait for csqd to confirm the subscription to servicer:<id>.
SUBSCRIBE_TIMEOUT_SECONDS = 5.0

# The longest the loop waits for an event before it looks at the stop flag
# that SIGINT and SIGTERM set (Python resumes an interrupted wait).
STOP_POLL_SECONDS = 0.25


def fields(reply):
    """A csq reply that describes a thing, a flat field/value array as
    HGETALL's (RESP2), as a dict."""
    return dict(zip(reply[0::2], reply[1::2]))


def log(*words):
    """One line on stdout with the time: what the agent did and saw."""
    stamp = time.strftime("%H:%M:%S")
    print(stamp, *words, flush=True)


def is_tryagain(err):
    """csqd answers TRYAGAIN when its engine (Redis) is unavailable: nothing
    was changed, and the same command may be sent again later."""
    return str(err).startswith("TRYAGAIN")


class Agent:
    """One servicer: its settings, its rooms, and what to do on each event."""

    def __init__(self, conn, args):
        self.conn = conn
        self.id = args.servicer
        self.capacity = args.capacity
        self.queues = args.queues
        self.ttl = args.ttl
        self.offer = args.offer
        self.hold = args.hold
        self.conversations_left = args.conversations
        # room -> {"user": ..., "release_at": monotonic time}
        self.rooms = {}
        self.stopping = False

    # -- commands -----------------------------------------------------------

    def heartbeat(self):
        """Logs in (the first time) and stays alive. Sends every setting each
        time: a heartbeat after csqd declared the agent lost logs it in
        again with the same settings. Returns the servicer's state, or None
        when csqd could not be reached."""
        cmd = ["HEARTBEAT", self.id, "CAPACITY", self.capacity,
               "QUEUES", self.queues, "TTL", self.ttl]
        if self.offer is not None:
            # Offers (protocol v2): csqd reserves a room and waits up to
            # this many seconds for ACCEPT before the user is ours.
            cmd += ["OFFER", self.offer]
        try:
            return fields(self.conn.execute_command(*cmd))
        except redis.ConnectionError as err:
            log("heartbeat failed, csqd unreachable:", err)
        except redis.ResponseError as err:
            if not is_tryagain(err):
                raise
            log("heartbeat failed:", err)
        return None

    def release(self, room):
        """Ends the conversation in a room: the user leaves csq, the room
        gets the next user in line at once."""
        if self.conversations_left == 1:
            # The last one: the room this frees must not take the next
            # user in line, whom the LOGOUT would give back a moment later.
            self.pause()
        try:
            ended = self.conn.execute_command("RELEASE", room)
        except (redis.ResponseError, redis.ConnectionError) as err:
            if isinstance(err, redis.ResponseError) and not is_tryagain(err):
                # NOTFOUND: csqd lost us meanwhile (its servicer_down is
                # on its way) and the room is gone with the conversation.
                log("release of", room, "refused:", err)
                self.rooms.pop(room, None)
                return
            log("release of", room, "failed, will retry:", err)
            self.rooms[room]["release_at"] = time.monotonic() + RETRY_SECONDS
            return
        user = self.rooms.pop(room)["user"]
        # 0: the room was already free (the user left just before).
        log("released", room, "user", user if ended else user + " (had left)")
        self.conversation_ended()

    def accept(self, room, user):
        """Takes an offered user. `matched` follows on our channel."""
        try:
            taken = self.conn.execute_command("ACCEPT", room)
        except (redis.ResponseError, redis.ConnectionError) as err:
            # NOTFOUND: the room no longer exists (capacity lowered);
            # TRYAGAIN or no connection: the offer runs out and csqd gives
            # the user to the next agent.
            log("accept of", room, "failed:", err)
            return
        if taken:
            log("accepted", user, "in", room)
        else:
            # The offer is gone: it ran out, or the user left.
            log("offer of", user, "in", room, "is gone")

    def pause(self):
        """No new user for us: csqd keeps our busy rooms (and withdraws
        an offer under way). Before a LOGOUT, so that no room freed on the
        way out is given a user that the LOGOUT would then requeue."""
        try:
            self.conn.execute_command("PAUSE", self.id)
        except redis.RedisError as err:
            # NOTFOUND: csqd lost us meanwhile; nothing to pause.
            log("pause failed:", err)

    def logout(self):
        """Leaves now: csqd puts our users back in line at their places."""
        try:
            requeued = self.conn.execute_command("LOGOUT", self.id)
        except redis.RedisError as err:
            log("logout failed:", err)
            return
        log("logged out;", requeued, "user(s) went back in line")

    # -- events -------------------------------------------------------------

    def on_event(self, ev):
        """Handles one JSON event from servicer:<id>."""
        name = ev.get("event")
        room = ev.get("room")
        if name == "matched":
            self.rooms[room] = {"user": ev["user"],
                                "release_at": time.monotonic() + self.hold}
            log("conversation with", ev["user"], "in", room, "from queue",
                ev["queue"], "waited", ev["waited_ms"], "ms")
        elif name == "offered":
            log("offered", ev["user"], "in", room, "from queue", ev["queue"])
            self.accept(room, ev["user"])
        elif name == "released":
            # Our own RELEASE already forgot the room; still there, the
            # user left (by "user"), or someone else released it.
            if self.rooms.pop(room, None):
                if ev.get("by") == "user":
                    log(ev["user"], "left the conversation in", room)
                else:
                    log(ev["user"], "released from", room, "by someone else")
                self.conversation_ended()
        elif name == "requeued":
            # Our logout or loss put the user back in line.
            self.rooms.pop(room, None)
            log(ev["user"], "went back in line:", ev.get("reason"))
        elif name == "servicer_down":
            # Declared lost (heartbeats too late): csqd requeued our users.
            # The next heartbeat logs us in again, with free rooms.
            log("csqd logged us out:", ev.get("reason"))
            self.rooms.clear()
        elif name == "servicer_paused":
            # With offers, csqd pauses an agent that misses offer_max_missed
            # offers in a row: a person has to RESUME it.
            log("paused:", ev.get("reason", "pause"))
        elif name in ("servicer_up", "servicer_resumed"):
            log(name.replace("servicer_", ""))
        else:
            # Events a newer csqd may add (wrapup, ready, declined, ...).
            log("event", name, json.dumps(ev, sort_keys=True))

    def conversation_ended(self):
        if self.conversations_left is not None:
            self.conversations_left -= 1
            if self.conversations_left <= 0:
                self.stopping = True

    # -- the loop -----------------------------------------------------------

    def run(self):
        pubsub = self.conn.pubsub()
        channel = "servicer:" + self.id
        pubsub.subscribe(channel)
        # Wait for the confirmation: the first heartbeat may match a waiting
        # user at once, and its `matched` must not be published before csqd
        # knows we listen.
        deadline = time.monotonic() + SUBSCRIBE_TIMEOUT_SECONDS
        while True:
            msg = pubsub.get_message(timeout=deadline - time.monotonic())
            if msg and msg["type"] == "subscribe":
                break
            if time.monotonic() >= deadline:
                raise SystemExit("no confirmation of SUBSCRIBE " + channel)

        state = self.heartbeat()
        if state is None:
            raise SystemExit("cannot log in")
        log("logged in as", self.id, "status", state["status"], "capacity",
            state["capacity"], "queues", self.queues, "ttl", state["ttl"])
        interval = self.ttl / HEARTBEATS_PER_TTL
        next_heartbeat = time.monotonic() + interval

        while not self.stopping:
            now = time.monotonic()
            wake = min([next_heartbeat, now + STOP_POLL_SECONDS] +
                       [r["release_at"] for r in self.rooms.values()])
            msg = pubsub.get_message(ignore_subscribe_messages=True,
                                     timeout=max(0.0, wake - now))
            if msg:
                self.on_event(json.loads(msg["data"]))
            now = time.monotonic()
            if now >= next_heartbeat:
                ok = self.heartbeat() is not None
                next_heartbeat = now + (interval if ok else RETRY_SECONDS)
            for room in [r for r, c in self.rooms.items()
                         if c["release_at"] <= now]:
                if self.stopping:
                    break
                self.release(room)

        pubsub.close()


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="A csq agent: heartbeats, takes users, releases them.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7878)
    p.add_argument("--username", default=None,
                   help="the user to log in as, with --password, when csqd "
                        "has users with roles (docs/roles.md): one of role "
                        "servicer; without it, --password is csqd's "
                        "requirepass")
    p.add_argument("--password", default=None,
                   help="the password of --username, or csqd's "
                        "requirepass")
    p.add_argument("--servicer", required=True, help="the agent's id")
    p.add_argument("--capacity", type=int, default=1,
                   help="conversations at a time (default 1)")
    p.add_argument("--queues", default="default",
                   help="queues served, comma-separated (default: default)")
    p.add_argument("--ttl", type=int, default=30,
                   help="seconds csqd waits for a heartbeat (default 30)")
    p.add_argument("--offer", type=int, default=None, metavar="SECONDS",
                   help="ask for offers: csqd waits this long for ACCEPT "
                        "(protocol v2; default: direct assignment)")
    p.add_argument("--hold", type=float, default=5.0, metavar="SECONDS",
                   help="how long each conversation lasts (default 5)")
    p.add_argument("--conversations", type=int, default=None, metavar="N",
                   help="log out and exit after N conversations ended")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    # With a username, redis-py sends AUTH <username> <password>.
    conn = redis.Redis(host=args.host, port=args.port,
                       username=args.username, password=args.password,
                       decode_responses=True)
    agent = Agent(conn, args)

    def stop(signum, _frame):
        log("signal", signal.Signals(signum).name + ": stopping")
        agent.stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        agent.run()
    except redis.RedisError as err:
        # csqd unreachable at the start, or an error reply: a bad option
        # (OFFER on a csqd without offers), a wrong password, ...
        print("agent:", err, file=sys.stderr)
        return 1
    agent.pause()
    agent.logout()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
