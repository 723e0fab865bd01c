"""csq-day replay (docs/day.md, "What-if replay") on a day recorded from a
real csqd: tests/day/make_day.py drives a test build (DEBUG CLOCK) with
redis-py through 90 simulated minutes of two queues under least_busy,
with an overflow, a servicer taking users by offer (declining some), a
wrap-up (ended early by READY at times), a lunch pause, a lost servicer
and a LOGOUT (the unit test, tests/unit/test_replay_day.c, has a
requeue). Replayed under its own configuration (-c, the csqd.conf it ran
under), the report must agree with the record's within 5 % on every
queue's service level, wait p50 and p90, and abandons (it agrees exactly
today: the replay plays every recorded input back). Then what-ifs: a
servicer added for an hour serves more and loses fewer; the what-if's own
events (-e) are a record that csq-day audit passes; the page, in
headless Chromium (as test_day_report.py), has each queue's charts of
both runs side by side, each bar its run's figure. And bad arguments: usage errors (64), nothing written.

A second day (SkillsDay) has skills (issue 35): make_day.py --skills, with
SKILLS, NEEDS, relax steps, a PREFER, a HEARTBEAT that changes a
servicer's capacity and skills, TRANSFER ... NEEDS, and customers who ask
again while they wait (a re-ENQUEUE with NEEDS "" or TIER 1). Its record
must carry each customer's needs, the servicers' skills, the change
(servicer_updated), the window, the transfer's needs and the re-ENQUEUEs'
changes (rescored, protocol.md §6), and csq-day replay under its own
configuration must give back its report within 5 % (exactly today),
playing those re-ENQUEUEs; a what-if without relaxation, or with a
servicer given skills (--skills), changes it. csq-day audit passes the
record, with its overtakes excused by skills checked against the
recorded skills and needs. How it was tried to break:
a record with garbage in each new field (a skill list csq refuses, a
level out of range, a window's servicer out of an id's syntax, a negative
window): csq-day names the file, line and field's fault, exits 1, and
does not crash; --skills with a bad list is a usage error (64).

usage: test_replay_day.py CSQ_DAY SOURCE_DIR CSQD"""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

DAY = sys.argv[1]
SRC = sys.argv[2]
CSQD = sys.argv[3]
sys.path.insert(0, os.path.join(SRC, "tests", "day"))
import make_day  # noqa: E402

TOLERANCE = 0.05
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def replay(*args):
    p = subprocess.run([DAY, "replay"] + list(args), capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def rows_of(text):
    """(run, queue) -> the row, of a one-interval CSV."""
    return {(r["run"], r["queue"]): r
            for r in csv.DictReader(io.StringIO(text))}


def close(a, b):
    a, b = float(a), float(b)
    return abs(a - b) <= TOLERANCE * abs(a)


class ReplayDay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.record = os.path.join(cls.tmp, "day.record")
        cls.conf = os.path.join(cls.tmp, "csqd.conf")
        cls.customers = make_day.make_day(
            CSQD, cls.record, cls.conf, shape="burst",
            strategy="least_busy", overflow=True, offers=True, hours=1.5,
            rate=14, seed=11)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_own_configuration(self):
        with open(self.record) as f:
            text = f.read()
        # The day has what the replay must model.
        for kind in ("offered", "declined", "overflowed", "left", "wrapup",
                     "ready", "servicer_paused", "servicer_down"):
            self.assertTrue('"event":"%s"' % kind in text, kind)
        code, out, err = replay("-c", self.conf, "-i", "24h", "-f", "csv",
                                self.record)
        self.assertEqual(code, 0, err)
        rows = rows_of(out)
        queues = sorted({q for (_, q) in rows})
        self.assertEqual(queues, ["", "sales", "support"])
        for q in queues:
            rec, rep = rows[("record", q)], rows[("what-if", q)]
            self.assertEqual(rec["arrivals"], rep["arrivals"])
            self.assertGreater(int(rec["abandoned"]), 0)
            for col in ("sl_pct", "wait_p50_s", "wait_p90_s", "abandoned",
                        "matched"):
                self.assertTrue(close(rec[col], rep[col]),
                                "%s %s: record %s, replay %s"
                                % (q or "(all)", col, rec[col], rep[col]))
        self.assertIn("recorded hours in", err)
        # -b replay: the replay on the left too, the same figures.
        code, out2, _ = replay("-c", self.conf, "-b", "replay", "-i", "24h",
                               "-f", "csv", self.record)
        self.assertEqual(code, 0)
        self.assertEqual(out2.replace("replay,", "record,"), out)

    def test_added_servicer(self):
        code, out, err = replay("-c", self.conf, "--add", "x9@09:15-10:15",
                                "--capacity", "x9=2", "-i", "24h", "-f",
                                "csv", "-e", os.path.join(self.tmp, "ev"),
                                self.record)
        self.assertEqual(code, 0, err)
        rows = rows_of(out)
        rec, rep = rows[("record", "")], rows[("what-if", "")]
        self.assertGreater(int(rep["matched"]), int(rec["matched"]))
        self.assertLess(int(rep["abandoned"]), int(rec["abandoned"]))
        with open(os.path.join(self.tmp, "ev")) as f:
            events = f.read()
        self.assertIn('"servicer":"x9","capacity":2', events)
        audit = subprocess.run([DAY, "audit", os.path.join(self.tmp, "ev")],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(audit.returncode, 0, audit.stdout)
        self.assertIn("audit: OK", audit.stdout)

    def test_what_ifs_change_something(self):
        _, base, _ = replay("-c", self.conf, "-i", "24h", "-f", "csv",
                            self.record)
        for args in (["--remove", "a1@09:30-10:00"],
                     ["--strategy", "longest_idle", "--capacity", "a2=2"],
                     ["--offer", "0", "--wrapup", "0"],
                     ["-C", os.path.join(SRC, "conf", "csqd.conf")]):
            code, out, err = replay(*(["-c", self.conf] + args +
                                      ["-i", "24h", "-f", "csv",
                                       self.record]))
            self.assertEqual(code, 0, err)
            self.assertNotEqual(out, base, args)

    def test_hours_what_if(self):
        """Business hours in the what-if (-C): support closes at 09:08
        (the record's day is a Friday), refusing arrivals and releasing
        those waiting; or opens only at 09:30, its users waiting till
        then. The replay's own events say so (closed, opened, left with
        reason closed), and the report changes."""
        _, base, _ = replay("-c", self.conf, "-i", "24h", "-f", "csv",
                            self.record)
        for week, when, at, kind in (
                ("fri 00:00-09:08", "refuse", "release", "closed"),
                ("fri 09:30-23:00", "wait", "keep", "opened")):
            conf = os.path.join(self.tmp, "hours.conf")
            with open(conf, "w") as f:
                f.write('queues = ( { name = "sales"; overflow_after = 120; '
                        'overflow_to = "support"; }, { name = "support"; '
                        'hours = { zone = "UTC"; week = "%s"; '
                        'when_closed = "%s"; at_close = "%s"; }; } );\n'
                        % (week, when, at))
            ev = os.path.join(self.tmp, "hours.events")
            code, out, err = replay("-c", self.conf, "-C", conf, "-e", ev,
                                    "-i", "24h", "-f", "csv", self.record)
            self.assertEqual(code, 0, err)
            self.assertNotEqual(out, base, week)
            with open(ev) as f:
                events = [json.loads(line) for line in f]
            changes = [e for e in events if e["event"] in ("opened",
                                                           "closed")]
            # Closed at 09:00 (the replay's start) until 09:30: the
            # policy takes its state at once, with its event.
            want = [("closed", "support", 1795770000000 + 8 * 60000)] \
                if kind == "closed" else \
                [("closed", "support", 1795770000000),
                 ("opened", "support", 1795770000000 + 30 * 60000)]
            self.assertEqual([(e["event"], e["queue"], e["ts"])
                              for e in changes], want)
            if kind == "closed":
                left = [e for e in events if e["event"] == "left" and
                        e.get("reason") == "closed"]
                self.assertGreater(len(left), 0)
                self.assertRegex(err, r"[1-9][0-9]* arrivals refused")
            else:
                self.assertFalse(any(
                    e["event"] == "matched" and e["queue"] == "support" and
                    e["ts"] < 1795770000000 + 30 * 60000 for e in events))

    def test_forms(self):
        code, out, _ = replay("-c", self.conf, "--add", "x9@09:00-09:30",
                              self.record)
        self.assertEqual(code, 0)
        lines = out.splitlines()
        self.assertIn("record  what-if", lines[1])
        page = os.path.join(self.tmp, "replay.html")
        code, _, _ = replay("-c", self.conf, "-f", "html", "-o", page,
                            self.record)
        self.assertEqual(code, 0)
        with open(page) as f:
            html = f.read()
        self.assertIn('data-run="record"', html)
        self.assertIn('data-run="what-if"', html)
        self.assertIn("<h1>csq replay</h1>", html)

    def test_page_in_chromium(self):
        """Each queue's charts of both runs side by side, each bar the
        figure of its run's CSV, the table with a row per run."""
        args = ["-c", self.conf, "--add", "x9@09:15-10:15", "--capacity",
                "x9=2", "-i", "30m"]
        _, text, _ = replay(*(args + ["-f", "csv", self.record]))
        want = {}
        for r in csv.DictReader(io.StringIO(text)):
            want[(r["run"], r["queue"], r["interval"])] = r
        page = os.path.join(self.tmp, "whatif.html")
        code, _, _ = replay(*(args + ["-f", "html", "-o", page,
                                      self.record]))
        self.assertEqual(code, 0)
        o = Options()
        o.binary_location = CHROMIUM
        for arg in ("--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--no-first-run", "--window-size=1400,1100",
                    "--user-data-dir=" + os.path.join(self.tmp, "profile")):
            o.add_argument(arg)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=o)
        try:
            d.get("file://" + page)
            for q in ("sales", "support", ""):
                sec = d.find_element(
                    By.CSS_SELECTOR, "section[data-queue='%s']" % q)
                runs = sec.find_elements(By.CSS_SELECTOR, "div.run")
                self.assertEqual([r.get_attribute("data-run") for r in runs],
                                 ["record", "what-if"])
                boxes = []
                for run in runs:
                    label = run.get_attribute("data-run")
                    svg = run.find_element(By.CSS_SELECTOR, "svg.volume")
                    self.assertTrue(svg.is_displayed())
                    boxes.append(svg.rect)
                    bars = svg.find_elements(By.CSS_SELECTOR, "rect.bar")
                    self.assertGreater(len(bars), 0)
                    for b in bars:
                        start = int(b.get_attribute("data-start")) // 1000
                        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                            time.gmtime(start))
                        row = want[(label, q, iso)]
                        kind = b.get_attribute("class").split()[1]
                        v = int(row[kind]) if kind != "abandoned" else \
                            int(row["abandoned"]) + int(row["expired"])
                        self.assertEqual(int(b.get_attribute("data-value")),
                                         v, (label, q, iso, kind))
                # Side by side: the what-if's chart right of the record's.
                self.assertEqual(boxes[0]["y"], boxes[1]["y"])
                self.assertGreater(boxes[1]["x"],
                                   boxes[0]["x"] + boxes[0]["width"] - 1)
            trs = d.find_elements(By.CSS_SELECTOR, "#report tbody tr")
            self.assertEqual(len(trs), len(want))
            self.assertEqual({t.get_attribute("data-run") for t in trs},
                             {"record", "what-if"})
            errors = [m for m in d.get_log("browser")
                      if m["level"] == "SEVERE"]
            self.assertEqual(errors, [])
            d.save_screenshot(os.path.join(
                os.environ.get("CSQ_SCREENSHOT_DIR", self.tmp),
                "day-replay.png"))
        finally:
            d.quit()

    def test_bad_skills_argument(self):
        out = os.path.join(self.tmp, "never")
        for args in (["--skills", "a1=de:0"], ["--skills", "a1=de,,en"],
                     ["--skills", "bad id=de"]):
            code, _, err = replay(*(args + ["-o", out, self.record]))
            self.assertEqual(code, 64, "%s: %s" % (args, err))
            self.assertFalse(os.path.exists(out), args)

    def test_bad_arguments(self):
        out = os.path.join(self.tmp, "never")
        for args in (["--add", "x@10:00"], ["--add", "x@10:00-09:00"],
                     ["--add", "bad id@09:00-10:00"],
                     ["--remove", "a1@9-10"], ["--strategy", "fastest"],
                     ["--capacity", "0"], ["--capacity", "a1=1001"],
                     ["--offer", "601"], ["--wrapup", "x=-1"],
                     ["--queues", "sales"], ["-s", "-1"],
                     ["-b", "neither"], ["-c", os.path.join(self.tmp, "no")],
                     ["--capacity"]):
            code, _, err = replay(*(args + ["-o", out, self.record]))
            self.assertEqual(code, 64, "%s: %s" % (args, err))
            self.assertFalse(os.path.exists(out), args)
        code, _, _ = replay(os.path.join(self.tmp, "missing"))
        self.assertEqual(code, 2)


class SkillsDay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.record = os.path.join(cls.tmp, "skills.record")
        cls.conf = os.path.join(cls.tmp, "csqd.conf")
        cls.needs = {}
        make_day.make_day(
            CSQD, cls.record, cls.conf, shape="burst",
            strategy="least_busy", overflow=True, offers=True, hours=1.5,
            rate=14, seed=11, skills=True, needs_out=cls.needs)
        with open(cls.record) as f:
            cls.lines = f.read().splitlines()
        cls.events = [json.loads(line) for line in cls.lines]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_record_has_them(self):
        canon = {"de": "de:1", "en:2": "en:2", "de:4": "de:4", "": None}
        first = {}
        for e in self.events:
            if e.get("user") and e["user"] not in first:
                first[e["user"]] = e
        self.assertEqual(set(first), set(self.needs))
        for u, need in self.needs.items():
            # Its first event (queued, or matched / offered at once).
            self.assertEqual(first[u].get("needs"), canon[need], u)
        ups = [e for e in self.events if e["event"] == "servicer_up"]
        a1 = [e for e in ups if e["servicer"] == "a1"]
        self.assertEqual(a1[0]["skills"], "de:5,en:3")
        self.assertNotIn("skills", [e for e in ups
                                    if e["servicer"] == "a4"][0])
        upd = [e for e in self.events if e["event"] == "servicer_updated"]
        self.assertTrue(any(e["servicer"] == "a1" and e["capacity"] == 3 and
                            e["skills"] == "de:5,en:3" for e in upd), upd)
        xfer = [e for e in self.events if e["event"] == "transferred"]
        self.assertGreater(len(xfer), 0)
        for e in xfer:
            self.assertEqual((e["queue"], e["needs"]), ("support", "de:1"))
        pref = [e for e in self.events if e.get("prefer")]
        self.assertGreater(len(pref), 0)
        for e in pref:
            self.assertEqual((e["event"], e["prefer"], e["prefer_ms"]),
                             ("queued", "a1", 60000))
        self.assertTrue(any(e["event"] == "relaxed" for e in self.events))
        # The re-ENQUEUEs: a change of needs alone (NEEDS "") publishes
        # rescored without needs; TIER 1, rescored at tier 1.
        again = [e for e in self.events if e["event"] == "rescored"]
        self.assertTrue(all(e["reason"] == "enqueue" for e in again), again)
        self.assertTrue(any(e["tier"] == 1 for e in again), again)
        self.assertTrue(any(e["tier"] == 0 and "needs" not in e
                            for e in again), again)
        # The record of a user without needs, of a servicer without
        # skills, is as before: no empty field (relaxed's needs, the
        # needs left in force, were there before and may be "").
        for e in self.events:
            if e["event"] not in ("servicer_updated", "relaxed"):
                self.assertNotIn('""', [json.dumps(e.get(k)) for k in
                                        ("needs", "skills", "prefer")])

    def test_own_configuration(self):
        code, out, err = replay("-c", self.conf, "-i", "24h", "-f", "csv",
                                self.record)
        self.assertEqual(code, 0, err)
        rows = rows_of(out)
        for q in ("sales", "support", ""):
            rec, rep = rows[("record", q)], rows[("what-if", q)]
            self.assertEqual(rec["arrivals"], rep["arrivals"])
            for col in ("sl_pct", "wait_p50_s", "wait_p90_s", "abandoned",
                        "matched", "handled"):
                self.assertTrue(close(rec[col], rep[col]),
                                "%s %s: record %s, replay %s"
                                % (q or "(all)", col, rec[col], rep[col]))
        self.assertGreater(int(rows[("record", "")]["abandoned"]), 0)
        self.assertRegex(err, r" [1-9][0-9]* re-ENQUEUEs played")

    def test_audit(self):
        p = subprocess.run([DAY, "audit", self.record], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("audit: OK", p.stdout)
        # A what-if without a1, where a3 and a4 have no skills: lines
        # build up, and its own events (libcsq's, as csqd's) pass the
        # audit with overtakes that the skills excuse, checked against
        # the skills and needs those events carry.
        ev = os.path.join(self.tmp, "noskills.events")
        code, _, err = replay("-c", self.conf, "--remove", "a1@09:00-10:30",
                              "--skills", "a3=", "--skills", "a4=",
                              "-e", ev, self.record)
        self.assertEqual(code, 0, err)
        p = subprocess.run([DAY, "audit", ev], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"excused:.* [1-9][0-9]* skills")

    def test_what_ifs(self):
        _, base, _ = replay("-c", self.conf, "-i", "24h", "-f", "csv",
                            self.record)
        # The day's configuration without its relax steps.
        rigid = os.path.join(self.tmp, "rigid.conf")
        with open(rigid, "w") as o:
            o.write(make_day.config_text(7878, "x", "least_busy", True))
        for args in (["-C", rigid], ["--skills", "a4=de:5,en:5"],
                     ["--skills", ""]):
            code, out, err = replay(*(["-c", self.conf] + args +
                                      ["-i", "24h", "-f", "csv",
                                       self.record]))
            self.assertEqual(code, 0, err)
            self.assertNotEqual(out, base, args)

    def test_garbage_in_new_fields(self):
        # Each: the first line with the field, its value replaced.
        for field, bad in (('"needs":"', '"needs":"de::5"'),
                           ('"needs":"', '"needs":"de:101"'),
                           ('"skills":"', '"skills":"de:5,de:4"'),
                           ('"prefer":"', '"prefer":"a 1"'),
                           ('"prefer_ms":', '"prefer_ms":-1')):
            at = next(i for i, line in enumerate(self.lines)
                      if field in line)
            line = self.lines[at]
            k = line.index(field)
            end = line.index(",", k + len(field)) \
                if "," in line[k + len(field):] else line.index("}", k)
            if field.endswith('"'):
                end = line.index('"', k + len(field)) + 1
            lines = list(self.lines)
            lines[at] = line[:k] + bad + line[end:]
            path = os.path.join(self.tmp, "garbage.record")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            for cmd in ("replay", "report", "audit"):
                p = subprocess.run([DAY, cmd, path], capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual(p.returncode, 1, (bad, cmd, p.stderr))
                self.assertIn("garbage.record:%d: " % (at + 1),
                              p.stderr + p.stdout, (bad, cmd))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
