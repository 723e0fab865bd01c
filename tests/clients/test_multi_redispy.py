"""Transactions through redis-py (Debian's python3-redis): its default
pipeline() is MULTI ... EXEC. Usage: test_multi_redispy.py /path/to/csqd;
the engine comes from CSQ_TEST_ENGINE."""

import os
import sys
import threading

import redis

from csqd_proc import Runner

BLOCK_N = 1500  # more than the Redis engine's batches in flight (8 of 128)
WRITER_N = 1500


def client(d):
    return redis.Redis(host="127.0.0.1", port=d.port, decode_responses=True)


def expect_raises(exc, fn, text):
    try:
        fn()
    except exc as e:
        assert text in str(e), f"{text!r} not in {e!r}"
        return e
    raise AssertionError(f"{exc.__name__} not raised")


def test_default_pipeline(d):
    r = client(d)
    p = r.pipeline()  # transaction=True
    p.execute_command("ENQUEUE", "u1", "QUEUE", "sales")
    p.execute_command("HEARTBEAT", "s1", "QUEUES", "sales")
    p.execute_command("WHERE", "u1")
    p.ping()
    got = p.execute()
    assert got[0] == ["state", "waiting", "queue", "sales", "position", 1,
                      "eta_ms", -1], got
    assert got[1][:6] == ["servicer", "s1", "status", "ready",
                          "capacity", 1], got
    assert got[2][:6] == ["state", "assigned", "queue", "sales",
                          "room", "s1/0"], got
    assert got[3] is True, got
    # The context manager form, and a block with a failure that depends on
    # the state: the error takes its place, the rest runs.
    with r.pipeline() as p:
        p.execute_command("RELEASE", "nobody/0")
        p.execute_command("RELEASE", "s1/0")
        got = p.execute(raise_on_error=False)
    assert isinstance(got[0], redis.ResponseError), got
    assert str(got[0]) == "NOTFOUND no such servicer or room", got
    assert got[1] == 1, got
    # raise_on_error (the default) raises the first, after the block ran.
    p = r.pipeline()
    p.execute_command("ENQUEUE", "u2")
    p.execute_command("RELEASE", "nobody/0")
    expect_raises(redis.ResponseError, p.execute, "no such servicer")
    assert r.execute_command("WHERE", "u2")[:2] == ["state", "waiting"]


def test_execabort(d):
    r = client(d)
    for bad, text in [
        (("FROB", "x"), "unknown command 'FROB'"),
        (("ENQUEUE",), "wrong number of arguments for 'enqueue' command"),
        (("ENQUEUE", "bad!id"), "invalid user id"),
        (("SUBSCRIBE", "events"), "Command not allowed inside a transaction"),
    ]:
        p = r.pipeline()
        p.execute_command("ENQUEUE", "u1")
        p.execute_command(*bad)
        p.execute_command("HEARTBEAT", "s1")
        e = expect_raises(redis.ResponseError, p.execute, text)
        assert "Transaction discarded" in str(e) or text in str(e), e
        assert r.execute_command("WHERE", "u1") == ["state", "none"]
        assert r.execute_command("SERVICERS") == []


def test_discard_nested_watch(d):
    r = client(d)
    # One connection for the raw commands: a transaction is a connection's.
    r = redis.Redis(host="127.0.0.1", port=d.port, decode_responses=True,
                    single_connection_client=True)
    assert r.execute_command("MULTI") == "OK"
    assert r.execute_command("ENQUEUE", "u1") == "QUEUED"
    expect_raises(redis.ResponseError, lambda: r.execute_command("MULTI"),
                  "MULTI calls can not be nested")
    assert r.execute_command("DISCARD") == "OK"
    assert r.execute_command("WHERE", "u1") == ["state", "none"]
    expect_raises(redis.ResponseError, lambda: r.execute_command("EXEC"),
                  "EXEC without MULTI")
    expect_raises(redis.ResponseError, lambda: r.execute_command("DISCARD"),
                  "DISCARD without MULTI")
    # WATCH is refused; the pipeline's own reset (UNWATCH) is harmless.
    p = r.pipeline()
    expect_raises(redis.ResponseError, lambda: p.watch("u1"),
                  "WATCH is not supported")
    p.reset()
    assert r.execute_command("UNWATCH") is True  # redis-py's for +OK


def test_exec_while_another_writes(d):
    """Another connection writes while the block runs: its users come
    before or after the block's, never among them."""
    r = client(d)
    w = client(d)
    p = r.pipeline()
    for i in range(BLOCK_N):
        p.execute_command("ENQUEUE", "a%04d" % i)
    started = threading.Event()

    def writer():
        q = w.pipeline(transaction=False)
        for i in range(WRITER_N):
            q.execute_command("ENQUEUE", "b%04d" % i)
        started.set()
        q.execute()

    t = threading.Thread(target=writer)
    t.start()
    started.wait()
    got = p.execute()
    t.join()
    assert len(got) == BLOCK_N
    line = []
    for off in range(0, BLOCK_N + WRITER_N, 1000):
        line += [e[0] for e in r.execute_command("QUEUE", "default", off, 1000)]
    assert len(line) == BLOCK_N + WRITER_N, len(line)
    first = next(i for i, u in enumerate(line) if u.startswith("a"))
    assert line[first:first + BLOCK_N] == ["a%04d" % i for i in range(BLOCK_N)]


def test_outage(d):
    """The Redis engine: during an outage the whole block answers
    TRYAGAIN and none of it is applied."""
    r = client(d)
    r.execute_command("ENQUEUE", "before")
    p = r.pipeline()
    p.execute_command("ENQUEUE", "m1")
    p.execute_command("HEARTBEAT", "s1")
    p.execute_command("QLEN", "default")
    d.redis.stop()
    d.wait_engine_down()
    e = expect_raises(redis.ResponseError, p.execute,
                      "TRYAGAIN engine unavailable, nothing was changed")
    d.redis.start()
    d.wait_engine()
    assert r.execute_command("WHERE", "before")[:2] == ["state", "waiting"]
    assert r.execute_command("WHERE", "m1") == ["state", "none"], e
    assert r.execute_command("SERVICERS") == []
    # The same block, now that Redis is back: s1 takes "before", the
    # first in line, and m1 waits behind it.
    p = r.pipeline()
    p.execute_command("ENQUEUE", "m1")
    p.execute_command("HEARTBEAT", "s1")
    p.execute_command("QLEN", "default")
    got = p.execute()
    assert got[0][:6] == ["state", "waiting", "queue", "default",
                          "position", 2], got
    assert got[2] == 1, got
    assert r.execute_command("WHERE", "before")[:2] == ["state", "assigned"]


def test_prefer_qstats(d):
    """PREFER and QSTATS in a block (protocol-v2 sections 5 and 6), the
    same on both engines."""
    r = client(d)
    p = r.pipeline()
    p.execute_command("HEARTBEAT", "sp", "QUEUES", "pq")
    p.execute_command("ENQUEUE", "busy", "QUEUE", "pq")
    p.execute_command("ENQUEUE", "fan", "QUEUE", "pq", "PREFER", "sp", "60")
    p.execute_command("QSTATS", "pq")
    got = p.execute(raise_on_error=False)
    assert got[1][:2] == ["state", "assigned"], got
    fan = dict(zip(got[2][::2], got[2][1::2]))
    assert fan["state"] == "waiting" and fan["prefer"] == "sp", got
    assert 55000 < fan["prefer_ms"] <= 60000, got
    qs = dict(zip(got[3][::2], got[3][1::2]))
    assert got[3][:2] == ["queue", "pq"], got
    assert qs["waiting"] == 1 and qs["servicers"] == 1, got
    assert qs["free_rooms"] == 0 and qs["matched_total"] == 1, got
    assert qs["service_level"] == 20 and qs["service_level_pct"] == 100, got
    # The room frees: the fan gets its agent.
    assert r.execute_command("RELEASE", "sp/0") == 1
    assert r.execute_command("WHERE", "fan")[:6] == [
        "state", "assigned", "queue", "pq", "room", "sp/0"]


def main():
    run = Runner(sys.argv[1])
    tests = [test_default_pipeline, test_execabort, test_discard_nested_watch,
             test_exec_while_another_writes, test_prefer_qstats]
    # The outage is the Redis engine's: the memory engine has no store to
    # lose.
    if os.environ.get("CSQ_TEST_ENGINE") == "redis":
        tests.append(test_outage)
    run.run(tests)
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
