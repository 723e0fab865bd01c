"""csq-day report (docs/day.md) on the shipped sample record, checked
against figures this test computes from the record itself: the CSV's
numbers, and the HTML page as headless Chromium shows it (Debian's
chromium, chromium-driver and python3-selenium, as test_admin_page.py
drives them): its period, its table's cells, a chart per queue whose bars
carry the figures with heights in proportion and whose service-level
points sit where the rates say, and no error in the browser's console.
Then bad arguments: a usage error (64) and an unreadable file (2). And
the admin page's link to the last day's report: csqd serves the page
record.report names at /report, the admin page links to it, and without
one /report says what to do.

usage: test_day_report.py CSQ_DAY SOURCE_DIR CSQD"""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

import admin_harness as h

DAY = sys.argv[1]
SRC = sys.argv[2]
CSQD = sys.argv[3]
SAMPLE = os.path.join(SRC, "tests", "day", "sample.jsonl")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
HOUR = 3600000
TARGET_MS = 20000


def expected():
    """(queue, hour start) -> figures, from the record's lines alone; the
    sample's users arrive once each."""
    rows, seen = {}, set()

    def row(q, ts):
        return rows.setdefault((q, ts - ts % HOUR), {
            "arrivals": 0, "matched": 0, "abandoned": 0, "expired": 0,
            "within": 0, "waits": []})
    with open(SAMPLE) as f:
        for line in f:
            ev = json.loads(line)
            kind, user = ev["event"], ev.get("user")
            if kind in ("queued", "offered", "matched") and user not in seen:
                seen.add(user)
                row(ev["queue"], ev["ts"])["arrivals"] += 1
            if kind == "matched":
                r = row(ev["queue"], ev["ts"])
                r["matched"] += 1
                r["waits"].append(ev["waited_ms"])
                r["within"] += ev["waited_ms"] <= TARGET_MS
            if kind == "left":
                r = row(ev["queue"], ev["ts"])
                r["expired" if ev["reason"] == "timeout" else "abandoned"] += 1
    for r in rows.values():
        ended = r["matched"] + r["abandoned"] + r["expired"]
        r["sl"] = "%.1f" % (100.0 * r["within"] / ended) if ended else "-"
        w = sorted(r["waits"])
        r["p90"] = "%.1f" % (w[(len(w) * 90 + 99) // 100 - 1] / 1000) \
            if w else "0.0"
    return rows


def run(*args):
    return subprocess.run([DAY] + list(args), capture_output=True,
                          text=True)


class DayReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="csq-day-report-")
        cls.want = expected()
        o = Options()
        o.binary_location = CHROMIUM
        for arg in ("--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--no-first-run", "--window-size=1400,1100",
                    "--user-data-dir=" + os.path.join(cls.dir, "profile")):
            o.add_argument(arg)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        cls.chromium = webdriver.Chrome(service=Service(CHROMEDRIVER),
                                        options=o)

    @classmethod
    def tearDownClass(cls):
        cls.chromium.quit()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_csv(self):
        p = run("report", "-f", "csv", SAMPLE)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = list(csv.DictReader(io.StringIO(p.stdout)))
        queues = [r for r in got if r["queue"]]
        self.assertEqual(len(queues), len(self.want))
        for r in queues:
            hour = r["interval"]
            w = [v for (q, ts), v in self.want.items()
                 if q == r["queue"] and self.iso(ts) == hour]
            self.assertEqual(len(w), 1, r)
            w = w[0]
            for k in ("arrivals", "matched", "abandoned", "expired"):
                self.assertEqual(int(r[k]), w[k], (r, k))
            self.assertEqual(r["sl_pct"], w["sl"], r)
            self.assertEqual(r["wait_p90_s"], w["p90"], r)
        # The "all queues" rows add up, and have an occupancy.
        for r in got:
            if r["queue"]:
                continue
            same = [q for q in queues if q["interval"] == r["interval"]]
            self.assertEqual(int(r["arrivals"]),
                             sum(int(q["arrivals"]) for q in same))
            self.assertTrue(0 < float(r["occupancy_pct"]) <= 100, r)

    @staticmethod
    def iso(ts):
        import datetime
        return datetime.datetime.fromtimestamp(
            ts / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def test_html_in_chromium(self):
        page = os.path.join(self.dir, "report.html")
        p = run("report", "-f", "html", "-o", page, SAMPLE)
        self.assertEqual(p.returncode, 0, p.stderr)
        d = self.chromium
        d.get("file://" + page)
        self.assertIn("csq report", d.title)
        self.assertEqual(d.find_element(By.ID, "period").text,
                         "2026-11-27 09:00 to 2026-11-27 11:00 UTC, per 60 min")
        # The table: a row per queue and hour, and one per hour for all.
        rows = d.find_elements(By.CSS_SELECTOR, "#report tbody tr")
        hours = {ts for (_, ts) in self.want}
        self.assertEqual(len(rows), len(self.want) + len(hours))
        for tr in rows:
            q, start = tr.get_attribute("data-queue"), int(
                tr.get_attribute("data-start"))
            cells = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            if not q:
                self.assertEqual(cells[1], "(all)")
                continue
            w = self.want[(q, start)]
            self.assertEqual(cells[1], q)
            self.assertEqual([int(c) for c in cells[2:6]],
                             [w["arrivals"], w["matched"], w["abandoned"],
                              w["expired"]])
            self.assertEqual(cells[6], w["sl"])
            self.assertEqual(cells[8], w["p90"])
        # A chart per queue: three bars an hour, their figures, heights
        # in proportion to them, and drawn (not zero wide, on screen).
        for q in ("sales", "support"):
            svg = d.find_element(
                By.CSS_SELECTOR, "svg.volume[data-queue='%s']" % q)
            self.assertTrue(svg.is_displayed())
            bars = svg.find_elements(By.CSS_SELECTOR, "rect.bar")
            mine = {ts: v for (qq, ts), v in self.want.items() if qq == q}
            self.assertEqual(len(bars), 3 * len(mine))
            heights = {}
            for b in bars:
                start = int(b.get_attribute("data-start"))
                value = int(b.get_attribute("data-value"))
                kind = b.get_attribute("class").split()[1]
                w = mine[start]
                want = w[kind] if kind != "abandoned" else \
                    w["abandoned"] + w["expired"]
                self.assertEqual(value, want, (q, start, kind))
                box = d.execute_script(
                    "const r = arguments[0].getBoundingClientRect();"
                    "return [r.width, r.height];", b)
                self.assertGreater(box[0], 0)
                heights[(start, kind)] = (value, box[1])
            peak = max(v for v, _ in heights.values())
            tallest = max(h for _, h in heights.values())
            for v, h in heights.values():
                self.assertAlmostEqual(h, tallest * v / peak, delta=1.0)
            points = d.find_elements(
                By.CSS_SELECTOR,
                "svg.service-level[data-queue='%s'] circle.point" % q)
            self.assertEqual(
                sorted(p.get_attribute("data-value") for p in points),
                sorted(w["sl"] for w in mine.values() if w["sl"] != "-"))
        errors = [m for m in d.get_log("browser") if m["level"] == "SEVERE"]
        self.assertEqual(errors, [])
        d.save_screenshot(os.path.join(
            os.environ.get("CSQ_SCREENSHOT_DIR", self.dir),
            "day-report.png"))

    def test_admin_page_links_to_the_report(self):
        page = os.path.join(self.dir, "last-day.html")
        self.assertEqual(run("report", "-f", "html", "-o", page,
                             SAMPLE).returncode, 0)
        d = h.tempdir("csq-day-report-csqd-")
        csqd = h.Csqd(CSQD, d, extra='record: { report = "%s"; };' % page)
        try:
            b = self.chromium
            b.get("http://127.0.0.1:%d/" % csqd.http_port)
            link = b.find_element(By.ID, "report-link")
            self.assertEqual(link.text, "last day's report")
            link.click()
            h.wait_until("the report page", lambda: "csq report" in b.title)
            self.assertEqual(
                b.find_element(By.ID, "period").text,
                "2026-11-27 09:00 to 2026-11-27 11:00 UTC, per 60 min")
            self.assertEqual(len(b.find_elements(
                By.CSS_SELECTOR, "svg.volume rect.bar")), 18)
            errors = [m for m in b.get_log("browser")
                      if m["level"] == "SEVERE"]
            self.assertEqual(errors, [])
            # A report rewritten by the next day's timer is served as it
            # is now.
            with open(page, "w") as f:
                f.write("<!DOCTYPE html><title>csq report next</title>")
            b.get("http://127.0.0.1:%d/report" % csqd.http_port)
            self.assertEqual(b.title, "csq report next")
        finally:
            self.assertEqual(csqd.stop(), 0)
        # Without record.report: a 404 that says what to do.
        csqd = h.Csqd(CSQD, d)
        try:
            status, _, body = h.Http(csqd.http_port).request("GET",
                                                             "/report")
            self.assertEqual(status, 404)
            self.assertIn(b"csq-day report -f html", body)
        finally:
            self.assertEqual(csqd.stop(), 0)
            h.rmtree(d)

    def test_bad_arguments(self):
        self.assertEqual(run("report").returncode, 64)
        self.assertEqual(run("report", "-i", "0", SAMPLE).returncode, 64)
        self.assertEqual(run("report", "-i", "1x", SAMPLE).returncode, 64)
        self.assertEqual(run("report", "-t", "a b=3", SAMPLE).returncode, 64)
        self.assertEqual(run("report", "-f", "pdf", SAMPLE).returncode, 64)
        p = run("report", os.path.join(self.dir, "none.jsonl"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("No such file", p.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
