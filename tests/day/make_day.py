#!/usr/bin/python3
"""Makes a record of a simulated day on a real csqd (a test build, for
DEBUG CLOCK), driven by redis-py from a fixed seed, and the csqd.conf it
ran under: the days on which csq-day replay is validated
(tests/integration/test_replay_day.py, scripts/bench-replay; docs/day.md,
"What-if replay").

    tests/day/make_day.py CSQD RECORD CONF [--shape steady|peak|burst]
        [--strategy longest_idle|least_busy] [--overflow] [--offers]
        [--hours H] [--rate PER_HOUR] [--seed N] [--without AGENT]
        [--skills]

Two queues, sales and support, from 09:00 UTC on 2026-11-27:
  - customers arrive at RATE an hour in each queue (steady), or rising to
    2.5 times that at the middle of the day and back (peak), or at RATE
    with a burst of four times RATE for the first ten minutes of every
    hour (burst); one in ten is a VIP at tier 1; each has a patience of 1
    to 15 minutes and leaves (LEAVE) when it runs out while waiting; a
    conversation lasts 1 to 7 minutes;
  - a1 serves both queues all day; a2 both, and is lost (no heartbeat)
    for 20 minutes at a third of the day; a3 support only, with 30 s of
    wrap-up (ended early, READY after 10 s, one time in three), and
    with --offers takes its users by offer (OFFER 20),
    declining one in four and letting one in ten run out; a4 sales only,
    from a quarter of the day, paused for half an hour at the middle (its
    lunch) and logged out (LOGOUT) at five sixths;
  - --overflow: a sales customer waiting 2 minutes goes to support;
  - --without AGENT: that agent never logs in;
  - --skills (issue 35 in the record, issue 36): a1 has SKILLS de:5,en:3,
    a2 en:4 (de:3,en:4 from the middle of the day, and a1 a third room
    then: servicer_updated), a3 de:2, a4 none; a customer NEEDS de, en:2,
    de:4 or nothing (a quarter each), one sales customer in eight
    prefers a1 for a minute (PREFER), one sales conversation in six is
    handed on to support at its end (TRANSFER ... NEEDS de); support
    relaxes (after 60 s every level lower by 2, after 180 s nothing
    needed), sales too (after 90 s nothing needed); a customer still
    waiting after 30 s asks again one time in four (a re-ENQUEUE:
    NEEDS "" or TIER 1, half each), which the replay plays.
The clock moves in steps of 10 s; every action happens on a step. Each
customer's tier, patience and conversations, and each answer to an
offer, are drawn from a generator of its own (seeded by the seed and the
customer's number), and the arrivals from another: the same seed without
an agent is the same day with one agent fewer, the what-if that
csq-day replay --remove models (scripts/bench-replay compares them)."""
import argparse
import os
import random
import socket
import subprocess
import tempfile
import time

import redis

T0 = 1795770000000  # 2026-11-27T09:00:00Z
STEP_MS = 10000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rate_at(shape, rate, frac, minute_of_hour):
    """Arrivals an hour in one queue at a fraction of the day."""
    if shape == "peak":
        return rate * (1 + 1.5 * (1 - abs(2 * frac - 1)))
    if shape == "burst":
        return rate * (4 if minute_of_hour < 10 else 1)
    return rate


def config_text(port, record, strategy, overflow, skills=False):
    text = ('listen = ["127.0.0.1:%d"];\nhttp: { listen = ""; };\n'
            'servicer_ttl = 60;\nuser_ttl = 0;\nstrategy = "%s";\n'
            'record: { path = "%s"; rotate_daily = false; };\n'
            % (port, strategy, record))
    sales = []
    if overflow:
        sales.append('overflow_after = 120; overflow_to = "support";')
    if skills:
        sales.append('relax = ( { after = 90; drop = "*"; } );')
    queues = []
    if sales:
        queues.append('{ name = "sales"; %s }' % " ".join(sales))
    if skills:
        queues.append('{ name = "support"; relax = ( { after = 60; '
                      'lower = 2; }, { after = 180; drop = "*"; } ); }')
    if queues:
        text += 'queues = ( %s );\n' % ", ".join(queues)
    return text


def make_day(csqd, record_out, conf_out, shape="steady",
             strategy="longest_idle", overflow=False, offers=False, hours=2,
             rate=20, seed=1, without=(), skills=False, needs_out=None):
    """Runs the day; writes the record to record_out and the
    configuration (without its listen and record lines' meaning) to
    conf_out. Returns the number of customers. needs_out (a dict): each
    customer's NEEDS, with --skills."""
    rnd = random.Random(seed)
    users = {}  # user -> its own generator
    answers = {}  # user -> offers answered so far
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "day.record")
    conf = os.path.join(tmp, "csqd.conf")
    day_ms = int(hours * 3600000)
    n = 0
    proc = None
    try:
        # A free port may be taken by another test before csqd binds it:
        # csqd then exits, and the day starts again on another port.
        for _ in range(5):
            port = free_port()
            with open(conf, "w") as f:
                f.write(config_text(port, path, strategy, overflow, skills))
            proc = subprocess.Popen([csqd, "-c", conf],
                                    stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            r = redis.Redis(port=port, decode_responses=True)
            for _ in range(200):
                try:
                    r.ping()
                    break
                except redis.ConnectionError:
                    if proc.poll() is not None:
                        break
                    time.sleep(0.05)
            if proc.poll() is None:
                break
            if os.path.exists(path):
                os.unlink(path)
        now = T0
        r.execute_command("DEBUG", "CLOCK", now)
        agents = {"a1": "sales,support", "a2": "sales,support",
                  "a3": "support", "a4": "sales"}
        talking = {}   # user -> (room, end ms)
        waiting = {}   # user -> give-up ms
        give_up = {}   # user -> give-up ms
        arrived = {}   # user -> arrival ms (--skills: asks again)
        readies = {}   # room -> when its wrap-up ends early
        a4_out = False
        while now < T0 + day_ms:
            frac = (now - T0) / day_ms
            p = r.pipeline(transaction=False)
            for a, qs in agents.items():
                if a in without:
                    continue
                if a == "a2" and 1 / 3 <= frac < 1 / 3 + 1200000 / day_ms:
                    continue  # lost, back 20 minutes later
                if a == "a4" and (frac < 0.25 or a4_out):
                    continue
                cap = 2 if a == "a1" else 1
                if skills and a == "a1" and frac >= 0.5:
                    cap = 3
                args = ["HEARTBEAT", a, "CAPACITY", cap, "TTL", 60,
                        "QUEUES", qs]
                if skills:
                    args += ["SKILLS", {
                        "a1": "de:5,en:3",
                        "a2": "en:4" if frac < 0.5 else "de:3,en:4",
                        "a3": "de:2", "a4": ""}[a]]
                if a == "a3":
                    args += ["WRAPUP", 30]
                    if offers:
                        args += ["OFFER", 20]
                p.execute_command(*args)
            p.execute()
            lunch = T0 + day_ms // 2
            if "a4" not in without:
                if now == lunch - lunch % STEP_MS:
                    r.execute_command("PAUSE", "a4")
                if now == lunch - lunch % STEP_MS + 1800000:
                    r.execute_command("RESUME", "a4")
                if not a4_out and frac >= 5 / 6:
                    r.execute_command("LOGOUT", "a4")
                    a4_out = True
            minute = ((now - T0) // 60000) % 60
            for q in ("sales", "support"):
                per_step = rate_at(shape, rate, frac, minute) * STEP_MS / 3.6e6
                if rnd.random() < per_step:
                    n += 1
                    u = "c%04d" % n
                    users[u] = ru = random.Random(seed * 1000003 + n)
                    tier = 1 if ru.random() < 0.1 else 0
                    args = ["ENQUEUE", u, "QUEUE", q, "TIER", tier]
                    if skills:
                        # Draws of their own: the day's others stay.
                        rs = random.Random("%d needs %s" % (seed, u))
                        needs = rs.choice(("de", "en:2", "de:4", ""))
                        args += ["NEEDS", needs]
                        if q == "sales" and rs.random() < 1 / 8:
                            args += ["PREFER", "a1", 60]
                        if needs_out is not None:
                            needs_out[u] = needs
                    r.execute_command(*args)
                    waiting[u] = give_up[u] = now + ru.randint(60, 900) * 1000
                    arrived[u] = now
            for room, t in list(readies.items()):
                if now >= t:
                    del readies[room]
                    r.execute_command("READY", room)
            # A conversation ends when its time is up; a customer whose
            # agent went (requeued) is back in line with its patience,
            # and one matched again talks again.
            for u, (room, end) in list(talking.items()):
                w = r.execute_command("WHERE", u)
                info = dict(zip(w[::2], w[1::2]))
                if info.get("state") == "assigned" and info["room"] == room:
                    if now >= end:
                        del talking[u]
                        if (skills and info.get("queue") == "sales" and
                                random.Random("%d hand %s" % (seed, u))
                                .random() < 1 / 6):
                            r.execute_command("TRANSFER", room, "support",
                                              "NEEDS", "de")
                            waiting[u] = give_up[u]
                            continue
                        r.execute_command("RELEASE", room)
                        # a3 ends one wrap-up in three early: READY
                        # after 10 s of its 30.
                        if room.startswith("a3/") and random.Random(
                                "%d ready %s" % (seed, u)).random() < 1 / 3:
                            readies[room] = now + 10000
                    continue
                del talking[u]
                if info.get("state") in ("waiting", "offered", "assigned"):
                    waiting[u] = give_up[u]
            for u in list(waiting):
                w = r.execute_command("WHERE", u)
                info = dict(zip(w[::2], w[1::2]))
                state = info.get("state")
                if state == "assigned":
                    talking[u] = (info["room"],
                                  now + users[u].randint(60, 420) * 1000)
                    del waiting[u]
                elif state == "offered":
                    k = answers[u] = answers.get(u, 0) + 1
                    x = random.Random("%d %s %d" % (seed, u, k)).random()
                    if x < 0.25:
                        r.execute_command("DECLINE", info["room"])
                    elif x >= 0.35:
                        r.execute_command("ACCEPT", info["room"])
                elif state == "waiting" and now >= waiting[u]:
                    r.execute_command("LEAVE", u)
                    del waiting[u]
                elif (state == "waiting" and skills and u in arrived and
                      now >= arrived[u] + 30000):
                    # Once: anyone will do, or it is a VIP after all.
                    del arrived[u]
                    x = random.Random("%d again %s" % (seed, u)).random()
                    if x < 1 / 8:
                        r.execute_command("ENQUEUE", u, "NEEDS", "")
                    elif x < 1 / 4:
                        r.execute_command("ENQUEUE", u, "TIER", 1)
                elif state not in ("waiting", "offered"):
                    del waiting[u]
            now += STEP_MS
            r.execute_command("DEBUG", "CLOCK", now)
        proc.terminate()
        proc.wait(10)
        with open(path) as f, open(record_out, "w") as o:
            o.write(f.read())
        with open(conf_out, "w") as o:
            o.write(config_text(port, path, strategy, overflow, skills))
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csqd")
    ap.add_argument("record")
    ap.add_argument("conf")
    ap.add_argument("--shape", choices=("steady", "peak", "burst"),
                    default="steady")
    ap.add_argument("--strategy", choices=("longest_idle", "least_busy"),
                    default="longest_idle")
    ap.add_argument("--overflow", action="store_true")
    ap.add_argument("--offers", action="store_true")
    ap.add_argument("--hours", type=float, default=2)
    ap.add_argument("--rate", type=float, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--without", action="append", default=[],
                    choices=("a1", "a2", "a3", "a4"))
    ap.add_argument("--skills", action="store_true")
    a = ap.parse_args()
    n = make_day(a.csqd, a.record, a.conf, a.shape, a.strategy, a.overflow,
                 a.offers, a.hours, a.rate, a.seed, tuple(a.without),
                 a.skills)
    print("%d customers" % n)


if __name__ == "__main__":
    main()
