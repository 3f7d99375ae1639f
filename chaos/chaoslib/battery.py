"""Bad input against a live node, while a well-behaved client keeps asking: the node answers
each attack with Redis's protocol errors, keeps serving the good client, and gives back the
memory the attack made it hold."""
import os
import random
import socket
import threading
import time

from .checks import Verdict
from .cluster import Node
from .resp import Resp, RespError
from .run_context import CONFIG

# (name, bytes sent, what the reply must start with, or None when any reply will do)
ATTACKS = [
    ("huge multibulk count", b"*99999999999\r\n", "-ERR Protocol error: invalid multibulk length"),
    ("huge bulk length", b"*1\r\n$99999999999\r\n", "-ERR Protocol error: invalid bulk length"),
    ("negative bulk length", b"*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length"),
    ("bulk beyond proto-max-bulk-len", b"*2\r\n$4\r\nPING\r\n$2000000\r\n",
     "-ERR Protocol error: invalid bulk length"),
    ("deep nesting", b"*1\r\n" * 100000, "-ERR Protocol error: expected '$', got '*'"),
    ("16 MB inline line", b"A" * (16 << 20), "-ERR Protocol error: too big inline request"),
    ("NUL and control bytes", bytes(range(0, 32)) * 1000, None),
]


class GoodClient(threading.Thread):
    def __init__(self, node, stop):
        super().__init__(daemon=True)
        self.node, self.stop = node, stop
        self.ops = self.errors = 0
        self.worst_s = 0.0
        self.last_error = ""

    def run(self):
        conn = None
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                if conn is None:
                    conn = Resp(self.node.host, self.node.port, 5)
                conn.call("FG.TAKE", "good:client", "chaos_log")
                self.ops += 1
            except (OSError, ConnectionError, RespError) as e:
                self.errors += 1
                self.last_error = str(e)
                conn = None
            self.worst_s = max(self.worst_s, time.monotonic() - t)
            self.stop.wait(0.01)


def _attack(node, payload, timeout_s=3.0):
    """Sends `payload` (the node may hang up midway), returns what came back."""
    s = socket.create_connection((node.host, node.port), timeout=timeout_s)
    got = b""
    try:
        try:
            s.sendall(payload)
        except OSError:
            pass
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
            if b"\r\n" in got:
                break
    finally:
        s.close()
    return got.decode(errors="replace")


def _hold(node, count, prefix, body_bytes):
    conns = []
    for _ in range(count):
        s = socket.create_connection((node.host, node.port), timeout=5)
        if prefix:
            s.sendall(prefix + b"x" * body_bytes)
        conns.append(s)
    return conns


def run_battery(ctx, seed):
    """Bad input against a live node: huge lengths, deep nesting, garbage, half-sent commands
    held open, thousands of idle connections; it serves everyone else and gives memory back."""
    started = time.monotonic()
    rng = random.Random(seed)
    name = "bad-input"
    workdir = os.path.join(ctx.out, "%s-%d" % (name, seed))
    os.makedirs(workdir, exist_ok=True)
    config = os.path.join(workdir, "floodgate.yaml")
    with open(config, "w") as f:
        f.write(CONFIG)
    v = Verdict()
    node = Node(0, ctx.build, workdir, config)
    node.start([], cluster=False)
    stop = threading.Event()
    good = GoodClient(node, stop)
    try:
        _wait_up(node)
        good.start()
        warm = node.resp()
        for i in range(2000):
            warm.call("FG.TAKE", "warm:%d" % (i % 50), "chaos_log")
        warm.close()
        time.sleep(1)
        base_kb = node.rss_kb()
        v.figure("rss_baseline_kb", base_kb)
        for label, payload, expect in ATTACKS:
            reply = _attack(node, payload)
            ok = reply.startswith(expect) if expect else node.running()
            v.check(label, ok and node.running(), reply.split("\r\n")[0][:80] or "(no reply)",
                    expect)
        garbage = [bytes(rng.getrandbits(8) for _ in range(1 << 16)) for _ in range(8)]
        for g in garbage:
            _attack(node, g, timeout_s=1.0)
        v.check("random garbage (8 x 64 KB)", node.running())
        half = _hold(node, 200, b"*3\r\n$7\r\nFG.TAKE\r\n$1048576\r\n", 900 * 1024)
        time.sleep(2)
        peak_kb = node.rss_kb()
        v.figure("rss_200_half_sent_1MB_kb", peak_kb)
        v.check("200 half-sent 1 MB commands held open: node alive", node.running(),
                "%d MB" % (peak_kb // 1024))
        for s in half:
            s.close()
        idle = _hold(node, 3000, b"", 0)
        time.sleep(2)
        idle_kb = node.rss_kb()
        v.figure("rss_3000_idle_kb", idle_kb)
        probe = node.resp()
        pong = probe.call("PING")
        probe.close()
        v.check("3000 idle connections: another client is served", pong == "PONG", pong)
        for s in idle:
            s.close()
        time.sleep(3)
        after_kb = node.rss_kb()
        v.figure("rss_after_kb", after_kb)
        bound_kb = base_kb + max(16 * 1024, base_kb // 4)
        v.check("memory back after the attacks", after_kb <= bound_kb, "%d KB" % after_kb,
                "%d KB" % bound_kb, "baseline %d KB" % base_kb)
        stop.set()
        good.join(10)
        v.figure("good_client_ops", good.ops)
        v.figure("good_client_worst_ms", round(good.worst_s * 1000, 1))
        v.check("the good client was served throughout", good.errors == 0 and good.ops > 100,
                "%d ops, %d errors" % (good.ops, good.errors), detail=good.last_error)
        v.check("and never waited a second", good.worst_s < 1.0,
                "%.0f ms" % (good.worst_s * 1000), "1000 ms")
    except Exception as e:
        v.check("battery ran to the end", False, detail="%s: %s" % (type(e).__name__, e))
    finally:
        stop.set()
        node.kill9()
    from . import report
    res = {"scenario": name, "seed": seed, "pass": v.passed,
           "duration_s": round(time.monotonic() - started, 1), "checks": v.checks,
           "figures": v.figures, "replay": ctx.replay(name, seed), "logs": workdir}
    jpath, _ = report.report_paths(ctx.out, "%s-%d" % (name, seed))
    report.write_json(jpath, res)
    res["json"] = jpath
    return res


def _wait_up(node, timeout_s=15):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            r = node.resp()
            r.call("PING")
            r.close()
            return
        except (OSError, ConnectionError, RespError):
            time.sleep(0.1)
    raise RuntimeError("node did not start")
