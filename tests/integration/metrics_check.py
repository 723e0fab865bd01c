#!/usr/bin/env python3
"""Fetches csqd's /metrics, parses it with prometheus_client's text parser
(the reference parser of the Prometheus text format), checks the families
csqd must export and the histograms' shape, then checks expectations.

usage: metrics_check.py URL [--doc=FILE] [--journal] [--outcomes] [EXPECT ...]
  --doc=FILE the metrics table of FILE (docs/operations.md) lists every
             family of the scrape with its type, and only families that
             csqd must export
  --journal  the daemon runs with a journal: its families are required
  --webhooks csqd has webhooks: their families are required
  --outcomes a queue has had a match or an abandon: the service level's
             share is required (memory engine)
  EXPECT is  name{label="v",...}=value   the sample exists with this value
          or name{label="v",...}>=value  the sample is at least value
          or !name{label="v",...}        no such sample
Exit 0 when all holds, 1 when not, 77 (skip) without prometheus_client.
"""
import os
import re
import sys
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("prometheus_client is not installed (python3-prometheus-client)")
    sys.exit(77)

# Family name (as the parser names it: counters lose "_total") -> type.
REQUIRED = {
    "csq_build_info": "gauge",
    "csq_engine_up": "gauge",
    "csq_waiting_users": "gauge",
    "csq_waiting_users_all": "gauge",
    "csq_servicers": "gauge",
    "csq_rooms": "gauge",
    "csq_enqueued": "counter",
    "csq_matched": "counter",
    "csq_abandoned": "counter",
    "csq_requeued": "counter",
    "csq_servicers_lost": "counter",
    "csq_offers": "counter",
    "csq_offers_declined": "counter",
    "csq_offers_missed": "counter",
    "csq_transferred": "counter",
    "csq_wait_seconds": "histogram",
    "csq_offer_accept_seconds": "histogram",
    "csq_queue_wait_seconds": "histogram",
    "csq_connected_clients": "gauge",
    "csq_output_limit_disconnections": "counter",
    "csq_input_limit_disconnections": "counter",
    "csq_input_bytes": "gauge",
    "csq_http_event_streams": "gauge",
    "csq_http_event_stream_bytes": "gauge",
    "csq_http_event_stream_disconnections": "counter",
    "csq_commands": "counter",
    "csq_command_errors": "counter",
    "csq_command_duration_seconds": "histogram",
}

# What a scrape shows while the engine is down.
ENGINE_DOWN_FAMILIES = {"csq_build_info", "csq_engine_up", "csq_wait_seconds",
                        "csq_offer_accept_seconds",
                        "csq_queue_wait_seconds",
                        "csq_connected_clients",
                        "csq_output_limit_disconnections",
                        "csq_input_limit_disconnections", "csq_input_bytes",
                        "csq_http_event_streams",
                        "csq_http_event_stream_bytes",
                        "csq_http_event_stream_disconnections",
                        "csq_commands",
                        "csq_command_errors", "csq_command_duration_seconds"}

# The memory engine with a journal shows it (--journal).
JOURNAL = {
    "csq_journal_write_errors": "counter",
    "csq_journal_written_bytes": "counter",
    "csq_journal_fsync_seconds": "histogram",
    "csq_journal_last_compaction_timestamp_seconds": "gauge",
}

# The Redis engine also shows its round trip (while it is up).
REDIS_ONLY = {"csq_redis_rtt_seconds": "gauge"}
# Each queue's numbers (QSTATS), on both engines. The service level's share
# appears once a queue has an outcome (--outcomes).
QUEUE_NUMBERS = {
    "csq_queue_oldest_wait_seconds": "gauge",
    "csq_queue_matched": "counter",
    "csq_queue_abandoned": "counter",
    "csq_queue_overflowed": "counter",
    "csq_queue_service_level_seconds": "gauge",
}
OUTCOMES = {"csq_queue_service_level_ratio": "gauge"}
# With webhooks configured (--webhooks).
WEBHOOKS = {
    "csq_webhook_delivered": "counter",
    "csq_webhook_failed_attempts": "counter",
    "csq_webhook_dropped": "counter",
    "csq_webhook_backlog": "gauge",
}
REQUIRED.update(QUEUE_NUMBERS)
if os.environ.get("CSQ_TEST_ENGINE") == "redis":
    REQUIRED.update(REDIS_ONLY)

EXPECT_RE = re.compile(r'^(!?)([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?(?:(=|>=)(.+))?$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')


def key(name, labels):
    return (name, tuple(sorted(labels.items())))


def check_histograms(families, errors):
    for fam in families:
        if fam.type != "histogram":
            continue
        series = {}
        for s in fam.samples:
            rest = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            series.setdefault(rest, {"buckets": [], "count": None})
            if s.name.endswith("_bucket"):
                series[rest]["buckets"].append((float(s.labels["le"]), s.value))
            elif s.name.endswith("_count"):
                series[rest]["count"] = s.value
        for rest, h in series.items():
            b = sorted(h["buckets"])
            vals = [v for _, v in b]
            if vals != sorted(vals):
                errors.append("%s%s: buckets not cumulative" % (fam.name, rest))
            if not b or b[-1][0] != float("inf") or b[-1][1] != h["count"]:
                errors.append("%s%s: +Inf bucket != count" % (fam.name, rest))


# A row of the metrics table: | `name` | type | ...
DOC_ROW_RE = re.compile(r'^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|\s*([a-z]+)\s*\|')


def exposed_name(fam):
    """The name a family's samples carry: a counter's ends in _total."""
    return fam.name + "_total" if fam.type == "counter" else fam.name


def check_doc(path, families, errors):
    """The table documents what the scrape shows, and nothing csqd may
    leave out: each documented family is required on some engine."""
    documented = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = DOC_ROW_RE.match(line)
            if m and m.group(2) in ("gauge", "counter", "histogram"):
                documented[m.group(1)] = m.group(2)
    if not documented:
        errors.append("%s: no metrics table" % path)
        return
    for fam in families:
        name = exposed_name(fam)
        if name not in documented:
            errors.append("%s is exported but not documented in %s"
                          % (name, path))
        elif documented[name] != fam.type:
            errors.append("%s is a %s, documented as a %s"
                          % (name, fam.type, documented[name]))
    required = {}
    for fam_name, typ in (list(REQUIRED.items()) + list(REDIS_ONLY.items())
                          + list(JOURNAL.items())
                          + list(QUEUE_NUMBERS.items())
                          + list(OUTCOMES.items())
                          + list(WEBHOOKS.items())):
        required[fam_name + "_total" if typ == "counter" else fam_name] = typ
    for name in documented:
        if name not in required:
            errors.append("%s is documented in %s but no test requires it"
                          % (name, path))


def main():
    doc = None
    while len(sys.argv) > 2 and sys.argv[2].startswith("--"):
        opt = sys.argv.pop(2)
        if opt.startswith("--doc="):
            doc = opt[len("--doc="):]
        elif opt == "--journal":
            REQUIRED.update(JOURNAL)
        elif opt == "--webhooks":
            REQUIRED.update(WEBHOOKS)
        elif opt == "--outcomes":
            if os.environ.get("CSQ_TEST_ENGINE") != "redis":
                REQUIRED.update(OUTCOMES)
        else:
            print(__doc__)
            return 2
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        ctype = r.headers.get("Content-Type", "")
        text = r.read().decode("utf-8")
    errors = []
    if not ctype.startswith("text/plain; version=0.0.4"):
        errors.append("Content-Type %r" % ctype)
    families = list(text_string_to_metric_families(text))
    types = {f.name: f.type for f in families}
    # With the engine down its series are left out, by design.
    engine_down = any(s.name == "csq_engine_up" and s.value == 0
                      for f in families for s in f.samples)
    for name, typ in REQUIRED.items():
        if engine_down and name not in ENGINE_DOWN_FAMILIES:
            continue
        if types.get(name) != typ:
            errors.append("family %s: type %s, want %s" % (name, types.get(name), typ))
    check_histograms(families, errors)
    if doc is not None:
        check_doc(doc, families, errors)
    samples = {}
    for f in families:
        for s in f.samples:
            samples[key(s.name, s.labels)] = s.value
    for e in sys.argv[2:]:
        m = EXPECT_RE.match(e)
        if not m:
            print("bad expectation %r" % e)
            return 2
        neg, name, labels, op, value = m.groups()
        k = key(name, dict(LABEL_RE.findall(labels or "")))
        got = samples.get(k)
        if neg:
            if got is not None:
                errors.append("%s: present (%s), want absent" % (e, got))
        elif got is None:
            errors.append("%s: absent" % e)
        elif op == "=" and got != float(value):
            errors.append("%s: got %s" % (e, got))
        elif op == ">=" and got < float(value):
            errors.append("%s: got %s" % (e, got))
    for e in errors:
        print("metrics_check: " + e)
    if errors:
        print("---- /metrics ----\n" + text)
        return 1
    print("metrics_check: %d families, %d samples, %d expectations OK"
          % (len(families), len(samples), len(sys.argv) - 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
