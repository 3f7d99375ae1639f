"""Bounded load from concurrent clients, and the history of every operation they made.

An operation is recorded as (kind, key, client, node, start_s, end_s, outcome, value):
outcome "ok" (admitted / granted), "deny", "fail" (known not to have happened: the
connection was refused) or "info" (unknown: timed out, cut off, or an error that may have
been counted). "info" counts only toward upper bounds, as in Jepsen's counter checker."""
import random
import socket
import subprocess
import threading
import time

from .resp import Resp, RespError


class History:
    def __init__(self):
        self.t0 = time.monotonic()
        self.ops = []  # list.append is atomic under the GIL
        self.events = []  # (t_s, label) faults and phases, for the report

    def t(self):
        return time.monotonic() - self.t0

    def add(self, *op):
        self.ops.append(op)

    def mark(self, label, start, end=None, target=None):
        self.events.append({"label": label, "start": start, "end": end, "target": target})

    def of(self, kind):
        return [o for o in self.ops if o[0] == kind]


def classify_take(reply):
    if not isinstance(reply, list) or len(reply) < 5:
        return "info", repr(reply)
    mode = reply[5] if len(reply) > 5 else None
    return ("ok" if reply[0] == 1 else "deny"), mode


class Client(threading.Thread):
    """Sends one kind of command at a steady rate through one node, moving to the next node
    when its node refuses connections (as a real client's node list would)."""

    def __init__(self, name, cluster, node_idx, hist, stop, rate_hz, timeout_s, seed):
        super().__init__(daemon=True, name=name)
        self.cluster, self.node_idx, self.hist, self.stop = cluster, node_idx, hist, stop
        self.rate_hz, self.timeout_s = rate_hz, timeout_s
        self.rng = random.Random(seed)
        self.conn = None

    def node(self):
        return self.cluster.nodes[self.node_idx % len(self.cluster.nodes)]

    def connect(self):
        n = self.node()
        try:
            self.conn = Resp(n.host, n.port, self.timeout_s)
            return True
        except OSError:
            self.conn = None
            self.node_idx += 1
            return False

    def call(self, kind, key, args, classify=classify_take):
        """One recorded operation; returns (outcome, value)."""
        start = self.hist.t()
        if self.conn is None and not self.connect():
            self.hist.add(kind, key, self.name, self.node_idx, start, self.hist.t(), "fail", None)
            time.sleep(0.05)
            return "fail", None
        node = self.node_idx % len(self.cluster.nodes)
        try:
            outcome, value = classify(self.conn.call(*args))
        except RespError as e:
            outcome, value = "info", str(e)
        except (OSError, ConnectionError, socket.timeout) as e:
            outcome, value = "info", type(e).__name__
            self.conn.close()
            self.conn = None
        self.hist.add(kind, key, self.name, node, start, self.hist.t(), outcome, value)
        return outcome, value

    def pace(self, next_t):
        next_t = max(next_t + 1.0 / self.rate_hz, time.monotonic())
        delay = next_t - time.monotonic()
        if delay > 0:
            self.stop.wait(delay)
        return next_t

    def close(self):
        if self.conn:
            self.conn.close()


class TakeClient(Client):
    """FG.TAKE on one key with a named policy, as fast as its rate allows."""

    def __init__(self, kind, key, policy, *a, **kw):
        super().__init__(*a, **kw)
        self.kind, self.key, self.policy = kind, key, policy

    def run(self):
        next_t = time.monotonic() + self.rng.random() / self.rate_hz
        while not self.stop.is_set():
            self.call(self.kind, self.key, ["FG.TAKE", self.key, self.policy])
            next_t = self.pace(next_t)
        self.close()


def classify_acquire(reply):
    if not isinstance(reply, list) or len(reply) < 5:
        return "info", repr(reply)
    return ("ok", reply[1]) if reply[0] == 1 else ("deny", None)


def classify_int(reply):
    return ("ok" if reply == 1 else "deny"), reply


class LeaseClient(Client):
    """Takes a permit as holder `name`, keeps it a random while, gives it back."""

    def __init__(self, key, policy, hold_s, *a, **kw):
        super().__init__(*a, **kw)
        self.key, self.policy, self.hold_s = key, policy, hold_s

    def run(self):
        next_t = time.monotonic()
        while not self.stop.is_set():
            out, lease = self.call("acq", self.key,
                                   ["FG.ACQUIRE", self.key, self.policy, "HOLDER", self.name],
                                   classify_acquire)
            if out == "ok":
                self.stop.wait(self.rng.uniform(*self.hold_s))
                self.call("rel", self.key, ["FG.RELEASE", self.key, lease], classify_int)
            next_t = self.pace(next_t)
        self.close()


def run_clients(clients):
    for c in clients:
        c.start()
    return clients


def join_clients(clients, stop, timeout_s=15):
    stop.set()
    deadline = time.monotonic() + timeout_s
    for c in clients:
        c.join(max(0.0, deadline - time.monotonic()))


class NativeLoad(threading.Thread):
    """Load through the native client (chaos-native-load, built with the tree): routed to
    owners and retried across failover by floodgate::Client. Its history lines join ours;
    closing its stdin stops it."""

    def __init__(self, binary, seeds, key, policy, hist, clients, rate_hz, name="n"):
        super().__init__(daemon=True, name="native-load")
        self.args = [binary, "--seeds", ",".join(seeds), "--key", key, "--policy", policy,
                     "--clients", str(clients), "--rate", str(rate_hz), "--name", name,
                     "--max-seconds", "3600"]
        self.hist = hist
        self.proc = None
        self.lines = 0

    def run(self):
        from .cluster import _die_with_parent
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        t0 = self.hist.t0
        for raw in self.proc.stdout:
            f = raw.decode(errors="replace").rstrip("\n").split("\t")
            if len(f) != 8:
                continue
            self.hist.add("take", f[1], f[2], -1, float(f[4]) - t0, float(f[5]) - t0, f[6],
                          None if f[7] == "None" else f[7])
            self.lines += 1
        self.proc.wait()

    def join(self, timeout=None):
        if self.proc and self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        super().join(timeout)
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
