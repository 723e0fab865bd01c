#!/usr/bin/env python3
"""README's redis-cli examples, run against a real csqd: the front door
cannot go stale without this test failing.

README marks nothing but what a reader sees. In its indented blocks:
- a line `$ redis-cli -p 7878 ARGS` is a command: it is run, in README's
  order, with the real redis-cli (--no-raw, as on a terminal) on csqd's
  port, and its output must be the lines under it, up to the next blank
  line or command (a command with no lines under it is run, not compared);
- a SUBSCRIBE command runs in the background for the whole tour; its lines
  are what the subscription printed first;
- a block that starts with `1) "message"` holds events the subscriber gets:
  every one of them must come, in README's order (others may come between:
  README leaves some out), with the same fields, ids included; the values
  of the time fields (ts, expires_ms, waited_ms, offered_ms) aside.

usage: readme_tour.py CSQD REDIS-CLI [README]
environment: CSQ_TEST_ENGINE memory (default) or redis
Exit 0 when every example matched, 1 when one did not, 77 without
redis-cli (or redis-server for the Redis engine).
"""

import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "clients"))
from csqd_proc import Daemons  # noqa: E402

PROMPT = "$ redis-cli -p 7878 "
TIME_FIELDS = re.compile(r'(\\"(?:ts|expires_ms|waited_ms|offered_ms)\\":)'
                         r'\d+')
WAIT_SECONDS = 15.0


def examples(path):
    """README's commands [(args, expected lines)] and its event blocks
    [[three lines], ...], in order."""
    commands, events = [], []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("    " + PROMPT):
            args = line[4 + len(PROMPT):].split()
            want = []
            i += 1
            while (i < len(lines) and lines[i].startswith("    ") and
                   not lines[i].startswith("    $ ")):
                want.append(lines[i][4:])
                i += 1
            commands.append((args, want))
            continue
        if line == '    1) "message"':
            while i + 2 < len(lines) and lines[i] == '    1) "message"':
                events.append([x[4:] for x in lines[i:i + 3]])
                i += 3
            continue
        i += 1
    return commands, events


def normal(line):
    return TIME_FIELDS.sub(r"\1N", line)


def tour(d, cli, commands, events):
    base = [cli, "--no-raw", "-p", str(d.port)]
    sub = None
    failures = []
    try:
        for args, want in commands:
            if args[0].upper() == "SUBSCRIBE":
                out = open(os.path.join(d.dir, "sub.out"), "w")
                sub = subprocess.Popen(base + args, stdout=out,
                                       stderr=subprocess.STDOUT)
                path = out.name
                deadline = time.monotonic() + WAIT_SECONDS
                while len(open(path).read().split("\n")) <= len(want):
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                got = open(path).read().split("\n")[:len(want)]
            else:
                run = subprocess.run(base + args, capture_output=True,
                                     text=True, timeout=WAIT_SECONDS)
                got = (run.stdout + run.stderr).rstrip("\n").split("\n")
            if want and got != want:
                failures.append("redis-cli %s\n--- README\n%s\n--- got\n%s"
                                % (" ".join(args), "\n".join(want),
                                   "\n".join(got)))
        # Every event README shows, in its order, in what the subscriber
        # got (it may have more).
        wanted = [[normal(x) for x in ev] for ev in events]
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            got = open(path).read().split("\n") if sub else []
            rest = iter([normal(x) for x in got])
            missing = [ev for ev in wanted
                       if not all(x in rest for x in ev)]
            if not missing or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if missing:
            failures.append("events README shows that the subscriber did "
                            "not get (in this order):\n%s\n--- got\n%s"
                            % ("\n".join("\n".join(ev) for ev in missing),
                               "\n".join(got)))
    finally:
        if sub:
            sub.kill()
            sub.wait()
    return failures


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__)
        return 64
    csqd, cli = argv[1], argv[2]
    readme = argv[3] if len(argv) == 4 else os.path.join(ROOT, "README.md")
    if not shutil.which(cli):
        print("redis-cli not found: skipped")
        return 77
    if (os.environ.get("CSQ_TEST_ENGINE") == "redis" and
            not shutil.which("redis-server")):
        print("redis-server not found: skipped")
        return 77
    commands, events = examples(readme)
    # A README that lost its examples must not pass for one that matches.
    if len(commands) < 5 or not events:
        print("FAIL: %d commands and %d events found in %s"
              % (len(commands), len(events), readme))
        return 1
    with Daemons(csqd) as d:
        failures = tour(d, cli, commands, events)
    for f in failures:
        print("FAIL: " + f + "\n")
    print("%d commands, %d events of %s: %d failure(s)"
          % (len(commands), len(events), os.path.relpath(readme, ROOT),
             len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
