#!/usr/bin/python3
"""Makes tests/day/sample.jsonl, the sample record of docs/day.md: a
morning of two queues on a real csqd (a test build, for DEBUG CLOCK),
driven by redis-py on a simulated clock from 09:00 to 11:00 UTC on
2026-11-27, from a fixed seed.

    tests/day/make_sample.py build-test/daemon/csqd tests/day/sample.jsonl

Agents a1 and a2 serve sales and support, a3 support only and takes its
users by offer (OFFER 20), declining three in ten; users arrive about
every two and a half minutes in each queue (one in ten a VIP at tier 1),
wait with a patience of 2 to 20 minutes and leave when it runs out, and
talk for 1 to 7 minutes. a2 is lost at 10:00 (no heartbeat), and back at 10:20."""
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

import redis

T0 = 1795770000000  # 2026-11-27T09:00:00Z
STEP_MS = 10000
HOURS = 2


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    csqd, out = sys.argv[1], sys.argv[2]
    rnd = random.Random(20261127)
    tmp = tempfile.mkdtemp()
    port = free_port()
    path = os.path.join(tmp, "day.jsonl")
    conf = os.path.join(tmp, "csqd.conf")
    with open(conf, "w") as f:
        f.write('listen = ["127.0.0.1:%d"];\nhttp: { listen = ""; };\n'
                'servicer_ttl = 60;\nuser_ttl = 0;\n'
                'record: { path = "%s"; };\n' % (port, path))
    proc = subprocess.Popen([csqd, "-c", conf], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=port, decode_responses=True)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        now = T0
        r.execute_command("DEBUG", "CLOCK", now)
        agents = {"a1": "sales support", "a2": "sales support",
                  "a3": "support"}
        talking = {}   # room -> end ms
        waiting = {}   # user -> give-up ms
        n = 0
        while now < T0 + HOURS * 3600000:
            for a, qs in agents.items():
                if a == "a2" and T0 + 3600000 <= now < T0 + 4800000:
                    continue  # lost at 10:00, back at 10:20
                args = ["HEARTBEAT", a, "CAPACITY", 1, "TTL", 60,
                        "QUEUES", ",".join(qs.split())]
                if a == "a3":
                    args += ["OFFER", 20]
                r.execute_command(*args)
            for q in ("sales", "support"):
                if rnd.random() < STEP_MS / 150000.0:
                    n += 1
                    u = "c%03d" % n
                    tier = 1 if rnd.random() < 0.1 else 0
                    r.execute_command("ENQUEUE", u, "QUEUE", q, "TIER", tier)
                    waiting[u] = now + rnd.randint(120, 1200) * 1000
            for room, end in list(talking.items()):
                if now >= end:
                    del talking[room]
                    try:
                        r.execute_command("RELEASE", room)
                    except redis.ResponseError:
                        pass
            for u, give_up in list(waiting.items()):
                w = r.execute_command("WHERE", u)
                state = dict(zip(w[::2], w[1::2])).get("state")
                if state == "assigned":
                    room = dict(zip(w[::2], w[1::2]))["room"]
                    talking[room] = now + rnd.randint(60, 420) * 1000
                    del waiting[u]
                elif state == "offered":
                    room = dict(zip(w[::2], w[1::2]))["room"]
                    if rnd.random() < 0.3:
                        r.execute_command("DECLINE", room)
                    else:
                        r.execute_command("ACCEPT", room)
                elif state == "waiting" and now >= give_up:
                    r.execute_command("LEAVE", u)
                    del waiting[u]
                elif state not in ("waiting", "offered"):
                    del waiting[u]
            now += STEP_MS
            r.execute_command("DEBUG", "CLOCK", now)
        proc.terminate()
        proc.wait(10)
        with open(path) as f, open(out, "w") as o:
            o.write(f.read())
    finally:
        if proc.poll() is None:
            proc.kill()
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
