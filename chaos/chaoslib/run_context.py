"""One scenario's life: a fresh cluster, load on a hot key (and counters, and leases),
faults marked on the history, then the common checks and the report."""
import os
import random
import shutil
import threading
import time

from . import checks, report
from .checks import Verdict
from .cluster import Cluster
from .load import History, LeaseClient, NativeLoad, TakeClient, join_clients, run_clients
from .resp import RespError

LIMIT, WINDOW_S = 40, 1.0  # the hot key: sliding log, at most LIMIT in any WINDOW_S
BURST, RATE = 10, 20       # the bucket key: token bucket, BURST + RATE per second
CONN_LIMIT, CAP_LIMIT, LEASE_TTL_S = 4, 2, 2.0
LAG_S = 0.005  # replication lag Δ (the node default)
# Client clocks bracket the node's decision; a replication round also waits its turn on a
# busy 2-core machine. Added to Δ when asking "was it admitted in the last Δ?".
SLACK_S = 0.050
DETECT_BOUND_S = 3.0
CONVERGE_BOUND_S = 30.0

CONFIG = """# written by chaos/run for one scenario
policies:
  chaos_log:      {kind: sliding_log, limit: %d, window: %dms, on_unavailable: fail_closed}
  chaos_tb:       {kind: token_bucket, capacity: %d, refill: %d, period: 1000ms,
                   on_unavailable: fail_closed}
  chaos_ctr:      {kind: fixed_window, limit: 1000000000, window: 3660d, on_unavailable: fail_closed}
  chaos_ctr_sync: {kind: fixed_window, limit: 1000000000, window: 3660d, replication: sync,
                   on_unavailable: fail_closed}
  chaos_conn:     {kind: concurrency, limit: %d, ttl: %dms, on_unavailable: fail_closed}
  chaos_cap:      {kind: concurrency, limit: %d, ttl: %dms}
""" % (LIMIT, WINDOW_S * 1000, BURST, RATE, CONN_LIMIT, LEASE_TTL_S * 1000, CAP_LIMIT, LEASE_TTL_S * 1000)


class SetupError(Exception):
    pass


class Run:
    def __init__(self, ctx, name, seed, nodes, proxy=False):
        self.ctx, self.name, self.seed = ctx, name, seed
        self.rng = random.Random(seed)
        self.workdir = os.path.join(ctx.out, "%s-%d" % (name, seed))
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        self.config = os.path.join(self.workdir, "floodgate.yaml")
        with open(self.config, "w") as f:
            f.write(CONFIG)
        self.cluster = Cluster(ctx.build, self.workdir, self.config, nodes, proxy)
        self.hist = History()
        self.verdict = Verdict()
        self.stop = threading.Event()
        self.clients = []
        self.tag = "s%d" % seed
        self.hot = "{%s}:log" % self.tag
        self.bucket = "{%s}:tb" % self.tag
        self.ctr = "{%s}:ctr" % self.tag
        self.ctr_sync = "{%s}:ctrs" % self.tag
        self.faults = []  # (start, end) of every fault window, for the healthy-window checks
        self.monitors = []
        self.load_started = None
        self.firewall = None  # set by scenarios that use one; healed whatever happens
        self.counter_reads = []
        self.written = {}

    # ------------------------------------------------------------------ lifecycle

    def start(self, converge_s=30):
        self.cluster.start_all()
        if self.cluster.wait_converged(converge_s) is None:
            raise SetupError("the cluster did not form within %ds" % converge_s)

    def load(self, clients=64, rate_hz=20, counters=True, timeout_s=6.0, native_clients=8):
        """Hot-key clients spread over every node (RESP, so non-owners forward) and through
        the native client (straight to the owner); bucket and counter clients likewise."""
        n = len(self.cluster.nodes)
        for i in range(clients):
            self.clients.append(TakeClient("take", self.hot, "chaos_log", "c%d" % i, self.cluster,
                                           i % n, self.hist, self.stop, rate_hz, timeout_s,
                                           self.rng.random()))
        n_bucket = clients // 4
        for i in range(n_bucket):
            self.clients.append(TakeClient("tb", self.bucket, "chaos_tb", "b%d" % i, self.cluster,
                                           i % n, self.hist, self.stop, rate_hz, timeout_s,
                                           self.rng.random()))
        if counters:
            for i in range(4):
                for kind, key, pol in (("ctr", self.ctr, "chaos_ctr"),
                                       ("ctrs", self.ctr_sync, "chaos_ctr_sync")):
                    self.clients.append(TakeClient(kind, key, pol, "%s%d" % (kind, i),
                                                   self.cluster, i % n, self.hist, self.stop,
                                                   40, timeout_s, self.rng.random()))
        run_clients(self.clients[-(clients + n_bucket + (8 if counters else 0)):])
        native = os.path.join(self.ctx.build, "chaos", "chaos-native-load")
        if native_clients and os.path.exists(native):
            seeds = ["%s:%d" % (n.host, n.native_port) for n in self.cluster.nodes]
            self.native = NativeLoad(native, seeds, self.hot, "chaos_log", self.hist,
                                     native_clients, rate_hz)
            self.clients += run_clients([self.native])
        self.load_started = self.hist.t()

    def lease_load(self, key, holders=8, hold_s=(0.02, 0.12)):
        n = len(self.cluster.nodes)
        cs = [LeaseClient(key, "chaos_conn", hold_s, "h%d" % i, self.cluster, i % n, self.hist,
                          self.stop, 30, 6.0, self.rng.random()) for i in range(holders)]
        self.clients += run_clients(cs)

    def sleep(self, s):
        time.sleep(s)

    def fault(self, label, start, end=None, target=None):
        self.hist.mark(label, start, end, target)
        self.faults.append((start, end if end is not None else start))

    def end_load(self):
        """Stops the clients; only then is the history complete enough to judge reads."""
        join_clients(self.clients, self.stop)
        self._judge_counters()

    def shutdown(self):
        if self.firewall:
            self.firewall.heal()
        join_clients(self.clients, self.stop)
        for m in self.monitors:
            m.join(5)
        self.cluster.stop_all()

    # ------------------------------------------------------------------ measurements

    def wait_converged(self, label="converged", timeout_s=CONVERGE_BOUND_S):
        t = self.cluster.wait_converged(timeout_s)
        self.verdict.check("%s within %ds" % (label, timeout_s), t is not None,
                           None if t is None else "%.1fs" % t, "%ds" % timeout_s)
        return t

    def watch_detection(self, victim, t_kill, exclude=()):
        """Polls every other node until each reports `victim` as not alive (`exclude`: nodes
        leaving meanwhile, which the others stop telling who died)."""
        seen = {}

        def poll():
            observers = [n for n in self.cluster.live() if n is not victim and n not in exclude]
            while time.monotonic() - self.hist.t0 - t_kill < 8 and len(seen) < len(observers):
                for o in observers:
                    if o.id in seen:
                        continue
                    st = self.cluster.node_states(o)
                    if st is not None and st.get(victim.id, "dead") in ("dead", "left"):
                        seen[o.id] = self.hist.t() - t_kill
                time.sleep(0.05)
            self.detection = (seen, len(observers))

        th = threading.Thread(target=poll, daemon=True)
        th.start()
        self.monitors.append(th)
        return th

    def check_detection(self, bound=True):
        seen, total = getattr(self, "detection", ({}, 0))
        worst = max(seen.values()) if len(seen) == total and seen else None
        self.verdict.figure("detection_s", None if worst is None else round(worst, 3))
        if not bound:
            return
        self.verdict.check("dead node detected by all", worst is not None and
                           worst <= DETECT_BOUND_S, None if worst is None else "%.2fs" % worst,
                           "%gs" % DETECT_BOUND_S, "%d of %d observers" % (len(seen), total))

    def watch_false_dead(self, until_s, ignore=()):
        """Records every time any node reports any running member dead (`ignore`: ids not
        to count, a container the scenario may add to as it kills on purpose)."""
        self.false_dead = []

        def poll():
            while self.hist.t() < until_s and not self.stop.is_set():
                for o in self.cluster.live():
                    if o.id in ignore:
                        continue
                    st = self.cluster.node_states(o) or {}
                    for nid, s in st.items():
                        if s == "dead" and nid != o.id and nid not in ignore:
                            self.false_dead.append((round(self.hist.t(), 2), o.id, nid))
                time.sleep(0.2)

        th = threading.Thread(target=poll, daemon=True)
        th.start()
        self.monitors.append(th)

    # ------------------------------------------------------------------ floods

    def _open_loop(self, args, timeout_s):
        """Runs tests/bench/open_loop (built with the tree) against every node; its figures."""
        import subprocess
        binary = os.path.join(self.ctx.build, "tests", "open_loop")
        if not os.path.exists(binary):
            raise SetupError("%s is not built" % binary)
        targets = ",".join("%s:%d" % (n.host, n.port) for n in self.cluster.live())
        out = subprocess.run([binary, "--ports", targets] + [str(a) for a in args],
                             capture_output=True, text=True, timeout=timeout_s)
        if out.returncode != 0:
            raise SetupError("open_loop failed: %s" % out.stderr.strip()[:200])
        f = out.stdout.split()
        return {f[i].rstrip(":"): f[i + 1] for i in range(0, len(f) - 1, 2)}

    def capacity(self, seconds=3):
        """Decisions a second the cluster serves to a closed loop (64 connections over every
        node, 128 in flight each — a cluster forwarding two thirds of its requests needs that many
        in flight to be saturated —, random keys): what a flood is sized from."""
        r = self._open_loop(["--conns", 64, "--pipeline", 128, "--rate", 1, "--seconds", seconds,
                             "--drain", 5, "--label", "capacity"], seconds + 30)
        return float(r["served_rate"])

    def flood(self, rate, seconds):
        """An open-loop flood at `rate` over every node for `seconds` (a thread); its figures
        land in self.flood_result."""
        self.flood_result = None

        def go():
            try:
                self.flood_result = self._open_loop(
                    ["--conns", 64, "--rate", int(rate), "--seconds", seconds, "--drain", 5,
                     "--label", "flood", "--seed", self.seed], seconds + 60)
            except Exception as e:  # judged by the scenario (no result)
                self.flood_error = str(e)

        th = threading.Thread(target=go, daemon=True)
        th.start()
        self.monitors.append(th)
        return th

    def read_counter(self, key, policy):
        """FG.PEEK through any live node: (start, end, count) or None."""
        for n in self.cluster.live():
            start = self.hist.t()
            try:
                r = n.resp(timeout_s=3)
                try:
                    reply = r.call("FG.PEEK", key, policy)
                finally:
                    r.close()
                if isinstance(reply, list) and len(reply) == 5:
                    return start, self.hist.t(), reply[1] - reply[2]
            except (OSError, ConnectionError, RespError):
                continue
        return None

    def write_keys(self, count, batch=200):
        """SET `count` keys spread over every slot, through one node (which forwards to the
        owners); each acknowledged key and its value is remembered for check_keys."""
        self.written = {}
        node = self.cluster.live()[0]
        r = node.resp(timeout_s=10)
        try:
            for lo in range(0, count, batch):
                keys = ["%s:w:%d" % (self.tag, i) for i in range(lo, min(count, lo + batch))]
                replies = r.pipeline([("SET", k, "v%d" % i) for i, k in enumerate(keys, lo)])
                for i, (k, rep) in enumerate(zip(keys, replies), lo):
                    if rep == "OK":
                        self.written[k] = "v%d" % i
        finally:
            r.close()
        self.verdict.figure("keys_written", len(self.written))

    def check_keys(self, batch=200):
        """Every key write_keys had acknowledged reads back with its value (no acknowledged
        write lost), read through each live node in turn."""
        keys = sorted(self.written)
        lost, unread = [], 0
        live = self.cluster.live()
        for b, lo in enumerate(range(0, len(keys), batch)):
            part = keys[lo:lo + batch]
            replies = None
            for k in range(len(live)):
                try:
                    r = live[(b + k) % len(live)].resp(timeout_s=10)
                    try:
                        replies = r.pipeline([("GET", key) for key in part])
                    finally:
                        r.close()
                    if not any(isinstance(x, RespError) for x in replies):
                        break
                except (OSError, ConnectionError):
                    replies = None
            if replies is None:
                unread += len(part)
                continue
            for key, rep in zip(part, replies):
                if isinstance(rep, RespError):
                    unread += 1
                elif rep != self.written[key]:
                    lost.append(key)
        self.verdict.figure("keys_lost", len(lost))
        self.verdict.check("every acknowledged SET reads back", not lost and not unread,
                           len(lost), 0, "%d unreadable; lost e.g. %s" % (unread, lost[:3]))

    def check_serving(self):
        """After healing: every live node answers a limiter command with a definite answer."""
        bad = []
        for n in self.cluster.live():
            try:
                r = n.resp(timeout_s=6)
                try:
                    reply = r.call("FG.TAKE", "{%s}:probe:%s" % (self.tag, n.id), "chaos_log")
                finally:
                    r.close()
                if not (isinstance(reply, list) and len(reply) == 5):
                    bad.append("%s: %r" % (n.id, reply))
            except (OSError, ConnectionError, RespError) as e:
                bad.append("%s: %s" % (n.id, e))
        self.verdict.check("every node serves after healing", not bad, detail="; ".join(bad))

    def check_false_dead(self):
        fd = getattr(self, "false_dead", [])
        self.verdict.figure("false_dead_reports", len(fd))
        self.verdict.check("no running node declared dead", not fd, len(fd), 0,
                           "; ".join("%s saw %s dead at %ss" % (o, n, t) for t, o, n in fd[:3]))

    def check_counters(self, t_loss_at=None, expect_no_loss=False, report_only=False):
        """Reads both counters now (load still running); `end_load` judges the reads against
        the complete history: nothing counted that nobody asked for; the async counter loses
        at most what was admitted in the last Δ before the fault (nothing with sync
        replication, nothing when no owner died)."""
        for kind, key, pol in (("ctr", self.ctr, "chaos_ctr"),
                               ("ctrs", self.ctr_sync, "chaos_ctr_sync")):
            read = None
            deadline = self.hist.t() + 5
            while read is None and self.hist.t() < deadline:
                read = self.read_counter(key, pol)
                if read is None:
                    time.sleep(0.2)
            self.counter_reads.append((kind, read, t_loss_at, expect_no_loss, report_only))

    def _judge_counters(self):
        for kind, read, t_loss_at, expect_no_loss, report_only in self.counter_reads:
            ops = self.hist.of(kind)
            sync = kind == "ctrs"
            label = "sync counter" if sync else "async counter"
            if read is None:
                self.verdict.check("%s readable after the fault" % label, False)
                continue
            lower, upper = checks.counter_bounds(ops, read[0], read[1])
            count = read[2]
            loss = max(0, lower - count)
            if t_loss_at is None or expect_no_loss or sync:
                bound = 0
            else:
                bound = checks.possible_admissions(ops, t_loss_at - LAG_S - SLACK_S, t_loss_at)
            self.verdict.figure("%s_loss" % kind, loss)
            self.verdict.check("%s counts nothing unasked" % label, count <= upper, count, upper)
            if report_only:
                continue
            self.verdict.check("%s loss" % label, loss <= bound, loss, bound,
                               "read %d, acknowledged before the read %d" % (count, lower))
        self.counter_reads = []

    def check_admission(self, fault_bound=None, fault_bound_label=""):
        """No over-admission in healthy stretches; during faults, the measured figure
        (held to `fault_bound` when one is stated)."""
        ops = self.hist.of("take")
        t_end = self.hist.t()
        healthy = []
        cursor = self.load_started or 0.0
        for s, e in sorted(self.faults):
            if s > cursor:
                healthy.append((cursor, s))
            cursor = max(cursor, e + getattr(self, "settle_s", 0.0))
        healthy.append((cursor, t_end))
        worst_h = worst_b = 0
        bucket = self.hist.of("tb")
        for a, b in healthy:
            worst_h = max(worst_h, checks.over_admission(ops, LIMIT, WINDOW_S, a, b)[0])
            worst_b = max(worst_b, checks.bucket_over_admission(bucket, BURST, RATE, a, b)[0])
        self.verdict.check("no over-admission while healthy", worst_h == 0, worst_h, 0,
                           "sliding log, %d per %gs" % (LIMIT, WINDOW_S))
        if bucket:
            self.verdict.check("token bucket within B + R*tau while healthy", worst_b == 0,
                               worst_b, 0, "B %d, R %d/s" % (BURST, RATE))
            self.verdict.figure("bucket_admitted", sum(1 for o in bucket if o[6] == "ok"))
        worst_all, at = checks.over_admission(ops, LIMIT, WINDOW_S, 0.0, t_end)
        self.verdict.figure("max_over_admission", worst_all)
        if at is not None:
            self.verdict.figure("max_over_admission_at_s", round(at, 3))
        if fault_bound is not None:
            self.verdict.check("over-admission during faults", worst_all <= fault_bound,
                               worst_all, fault_bound, fault_bound_label)
        if self.faults:
            f0 = min(s for s, _ in self.faults)
            self.verdict.figure("unavailability_s",
                                round(checks.unavailability(ops, f0, t_end), 3))
        self.verdict.figure("admitted", sum(1 for o in ops if o[6] == "ok"))
        self.verdict.figure("native_requests", sum(1 for o in ops if o[3] == -1))
        self.verdict.figure("requests", len(ops))

    # ------------------------------------------------------------------ report

    def result(self, started):
        t_end = self.hist.t()
        res = {"scenario": self.name, "seed": self.seed, "pass": self.verdict.passed,
               "duration_s": round(time.monotonic() - started, 1), "checks": self.verdict.checks,
               "figures": self.verdict.figures, "faults": self.hist.events,
               "limit": LIMIT, "window_s": WINDOW_S,
               "replay": self.ctx.replay(self.name, self.seed), "logs": self.workdir}
        jpath, spath = report.report_paths(self.ctx.out, "%s-%d" % (self.name, self.seed))
        series = checks.admitted_series(self.hist.of("take"), WINDOW_S, t_end)
        report.write_svg(spath, "%s (seed %d)" % (self.name, self.seed), series, LIMIT, WINDOW_S,
                         self.hist.events, max(t_end, 1.0), res["pass"])
        res["svg"], res["json"] = spath, jpath
        with open(os.path.join(self.workdir, "history.tsv"), "w") as f:
            f.write("kind\tkey\tclient\tnode\tstart_s\tend_s\toutcome\tvalue\n")
            for o in self.hist.ops:
                f.write("\t".join(str(x) for x in o) + "\n")
        report.write_json(jpath, res)
        return res
