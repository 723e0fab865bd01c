#!/usr/bin/env python3
"""The admin page (GET /) in a real browser: headless Chromium driven by
Selenium (Debian's chromium, chromium-driver and python3-selenium). The
page shows the queues, the servicers and who is in their rooms; after a
burst of thousands of ENQUEUEs and LEAVEs its line, kept from the events
alone, is QUEUE's, row for row; scrolling the line loads its next page;
behind requirepass it asks for and takes Basic auth. The test saves a
screenshot (admin-page.png in $CSQ_SCREENSHOT_DIR, or the working
directory).

usage: test_admin_page.py CSQD
The engine is $CSQ_TEST_ENGINE (memory, or redis: a redis-server of its own
is started).
"""
import os
import random
import shutil
import sys
import tempfile
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

import admin_harness as h

CSQD = sys.argv[1] if len(sys.argv) > 1 else "csqd"
ENGINE = os.environ.get("CSQ_TEST_ENGINE", "memory")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = os.environ.get("CSQ_SCREENSHOT_DIR", os.getcwd())
PAGE = 100  # admin.js's PAGE: rows of a page of a line
BURST = 4000  # ENQUEUEs of the burst; about half leave again


def browser(profile):
    o = Options()
    o.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--no-first-run", "--user-data-dir=" + profile,
                "--window-size=1400,1100"):
        o.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=o)


def line_of(c, queue):
    """QUEUE's whole line."""
    users = []
    while True:
        page = c.execute_command("QUEUE", queue, str(len(users)), "1000")
        if not page:
            return users
        users += [u[0] for u in page]


class AdminPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = h.tempdir("csq-admin-page-")
        cls.redisd = h.Redisd(cls.dir) if ENGINE == "redis" else None

    @classmethod
    def tearDownClass(cls):
        if cls.redisd is not None:
            cls.redisd.stop()
        h.rmtree(cls.dir)

    def setUp(self):
        self.csqd = None
        self.driver = None

    def start(self, extra="", **kw):
        d = tempfile.mkdtemp(dir=self.dir)
        self.csqd = h.Csqd(CSQD, d, extra=extra, redisd=self.redisd,
                           prefix="page%d" % int(time.time() * 1000), **kw)
        self.driver = browser(os.path.join(d, "profile"))
        self.driver.set_script_timeout(30)
        return self.csqd

    def tearDown(self):
        if self.driver is not None:
            logs = self.driver.get_log("browser")
            self.driver.quit()
            # The page says nothing into the console but its reloads.
            errors = [e for e in logs if e["level"] == "SEVERE" and not
                      (self.refused and "status of 401" in e["message"])]
            self.assertEqual(errors, [])
        if self.csqd is not None:
            self.assertEqual(self.csqd.stop(), 0, self.csqd.read_log())
            self.assertNotIn("AddressSanitizer", self.csqd.read_log())

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def settled(self, c):
        """Waits until the page has applied every event csqd has made and
        has nothing on its way."""
        want = h.Http(self.csqd.http_port, self.auth).json(
            "/api/snapshot")["id"]
        h.wait_until("the page at event %d" % want, lambda: self.js(
            "return window.csqAdmin && csqAdmin.settled() && "
            "csqAdmin.lastId() >= arguments[0]", want), timeout=30)

    def text(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css).text

    def rows(self, queue):
        """The users of the rows the line of queue shows, in order."""
        return self.js(
            "const rows = Array.from(document.querySelectorAll("
            "'.queue[data-queue=\"' + arguments[0] + '\"] .row[data-user]'))"
            ".filter((r) => !r.hidden);"
            "rows.sort((a, b) => parseInt(a.style.top) - "
            "parseInt(b.style.top));"
            "return rows.map((r) => r.dataset.user);", queue)

    auth = None
    refused = False

    def test_page(self):
        d = self.start()
        c = d.client()
        c.execute_command("HEARTBEAT", "agent1", "CAPACITY", "2", "QUEUES",
                          "sales,default")
        c.execute_command("HEARTBEAT", "agent2", "QUEUES", "vip")
        c.execute_command("PAUSE", "agent2")
        c.execute_command("ENQUEUE", "alice", "QUEUE", "sales")
        c.execute_command("ENQUEUE", "bob", "QUEUE", "sales")
        for i in range(5):
            c.execute_command("ENQUEUE", "vip%d" % i, "QUEUE", "vip",
                              "TIER", str(i % 2))
        # A long line before the page loads: it gets the first page.
        rnd = random.Random(27)
        p = c.pipeline(transaction=False)
        for i in range(600):
            p.execute_command("ENQUEUE", "a%d" % i, "QUEUE", "burst",
                              "TIER", str(rnd.randrange(4)))
        p.execute()
        self.driver.get("http://127.0.0.1:%d/" % d.http_port)
        self.settled(c)
        # Queues, servicers, rooms and who is in them.
        h.wait_until("the queues drawn", lambda: self.text(
            '.queue[data-queue="vip"] .queue-facts').startswith("5 waiting"))
        self.assertTrue(self.text('.queue[data-queue="sales"] .queue-facts')
                        .startswith("0 waiting"))
        self.assertEqual(self.rows("vip"), line_of(c, "vip"))
        self.assertIn("agent1", self.text('tr[data-servicer="agent1"]'))
        self.assertIn("paused", self.text('tr[data-servicer="agent2"]'))
        chips = self.js("return Array.from(document.querySelectorAll("
                        "'tr[data-servicer=\"agent1\"] .room')).map("
                        "(r) => [r.dataset.room, r.dataset.state, "
                        "r.dataset.user])")
        self.assertEqual(chips, [["agent1/0", "assigned", "alice"],
                                 ["agent1/1", "assigned", "bob"]])
        # Live: a release frees a room, a new user takes it.
        c.execute_command("RELEASE", "agent1/0")
        c.execute_command("ENQUEUE", "carol", "QUEUE", "sales")
        self.settled(c)
        h.wait_until("carol in agent1/0", lambda: self.js(
            "const r = document.querySelector('[data-room=\"agent1/0\"]');"
            "return r !== null && r.dataset.user === 'carol';"))

        # Pages as far as a little below the view: not the whole line.
        got = self.js("return csqAdmin.line('burst')")
        self.assertGreaterEqual(len(got), PAGE)
        self.assertLess(len(got), 600)
        self.assertEqual(got, line_of(c, "burst")[:len(got)])
        # A burst of thousands of ENQUEUEs and LEAVEs, in several tiers.
        p = c.pipeline(transaction=False)
        for i in range(BURST):
            p.execute_command("ENQUEUE", "b%d" % i, "QUEUE", "burst",
                              "TIER", str(rnd.randrange(4)))
            if i % 2 == 1:
                p.execute_command("LEAVE", rnd.choice(
                    ["a%d" % rnd.randrange(600), "b%d" % rnd.randrange(i)]))
        p.execute(raise_on_error=False)
        self.settled(c)
        want = line_of(c, "burst")
        self.assertGreater(len(want), 1000)
        got = self.js("return csqAdmin.line('burst')")
        self.assertGreaterEqual(len(got), PAGE)
        self.assertEqual(got, want[:len(got)])
        self.assertEqual(self.js("return csqAdmin.waiting('burst')"),
                         len(want))
        h.wait_until("the burst's rows drawn",
                     lambda: self.rows("burst") ==
                     want[:len(self.rows("burst"))] and
                     len(self.rows("burst")) > 5)
        self.assertTrue(self.text('.queue[data-queue="burst"] .queue-facts')
                        .startswith("%d waiting" % len(want)))

        # Scrolling loads the next pages, and they join on exactly.
        before = len(got)
        self.js("const v = document.querySelector("
                "'.queue[data-queue=\"burst\"] .line');"
                "v.scrollTop = v.scrollHeight;")
        h.wait_until("the next page", lambda: self.js(
            "return csqAdmin.line('burst').length") > before)
        self.settled(c)
        got = self.js("return csqAdmin.line('burst')")
        self.assertEqual(got, want[:len(got)])
        h.wait_until("the rows at the bottom", lambda: self.rows("burst") ==
                     want[got.index(self.rows("burst")[0]):][
                         :len(self.rows("burst"))] if self.rows("burst")
                     else False)
        # Back to the top for the picture.
        self.js("document.querySelector('.queue[data-queue=\"burst\"] "
                ".line').scrollTop = 0;")
        time.sleep(0.5)
        path = os.path.join(SHOTS, "admin-page%s.png" %
                            ("" if ENGINE == "memory" else "-" + ENGINE))
        self.driver.save_screenshot(path)
        self.assertGreater(os.path.getsize(path), 10000)
        print("screenshot:", path)

    def test_auth(self):
        d = self.start(extra='requirepass = "pw";')
        self.auth = h.basic("default", "pw")
        d.client().execute_command("ENQUEUE", "u1")
        self.driver.get("http://127.0.0.1:%d/" % d.http_port)
        self.assertNotIn("csq", self.driver.title)
        self.refused = True  # that 401 is in the console
        # What a browser sends once its user gave the password: the
        # header on every request, the page's fetches and stream too.
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.setExtraHTTPHeaders",
                                    {"headers": {"Authorization": self.auth}})
        self.driver.get("http://127.0.0.1:%d/" % d.http_port)
        self.settled(d.client())
        h.wait_until("the page with credentials", lambda: self.text(
            '.queue[data-queue="default"] .queue-facts')
            .startswith("1 waiting"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
