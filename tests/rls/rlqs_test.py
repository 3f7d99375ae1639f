"""The quota service (RLQS) as Envoy's rate_limit_quota filter uses it: a model of the filter
(its report interval, the local token bucket an assignment configures, its
no_assignment_behavior and expired_assignment_behavior) in Python over grpcio, ten of them
against a 3-node cluster with one global limit. Run by tests/rls/run."""
import os
import signal
import sys
import tempfile
import threading
import time
import unittest
import uuid

import grpc
from envoy.service.rate_limit_quota.v3 import rlqs_pb2
import health_pb2

import rls_test as base
from envoy_filter import ALLOW_ALL, DENY_ALL, RLQS, Filter, windows


def held_as_windows_begin(fs, width):
    """A watch (called every 10 ms) noting the tokens the filters hold in live slices as each
    window of `width` seconds begins — the last look before it — into the dict returned."""
    held_at_start, last = {}, [0]

    def watch(now):
        w = int(now // width)
        if w not in held_at_start:
            held_at_start[w] = last[0]
        last[0] = sum(f.held(now) for f in fs)

    return held_at_start, watch


class QuotaService(unittest.TestCase):
    """Ten gateways' filters against three nodes, one global limit."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rlqs-")
        cls.domain = "q" + uuid.uuid4().hex[:8]
        with open(os.path.join(cls.dir, "rls.yaml"), "w") as f:
            f.write(f"""domain: {cls.domain}
buckets:
  - bucket: {{name: api, tenant: "*"}}
    key: "quota:{{tenant}}"
    policy: gw
  - bucket: {{name: tb}}
    policy: gwtb
  - bucket: {{name: free}}
    rate_limit: {{unlimited: true}}
""")
        ports = [base.free_port() for _ in range(3)]
        bus = [base.free_port() for _ in range(3)]
        seeds = ",".join(f"127.0.0.1:{b}" for b in bus[:2])
        cls.nodes = []
        for i in range(3):
            cls.nodes.append(base.Node(cls.dir, ["--cluster-enabled", "--node-id", f"rlqs-{i}",
                                                 "--cluster-port", str(bus[i]), "--seeds", seeds,
                                                 "--rlqs-slice-ms", "1000"],
                                       port=ports[i]))
        for n in cls.nodes:
            n.wait_serving(60)
        for n in cls.nodes:  # (a policy set on one node reaches every node)
            base.cli(n.port, "FG.POLICY", "SET", "gw", "fixed_window", "100", "2000")
            base.cli(n.port, "FG.POLICY", "SET", "gwtb", "token_bucket", "1000", "500", "1000")

    @classmethod
    def tearDownClass(cls):
        for n in cls.nodes:
            n.stop(signal.SIGKILL)

    def filters(self, bucket, n=10, **kw):
        fs = [Filter(self.nodes, i, self.domain, bucket, **kw) for i in range(n)]
        for f in fs:
            f.thread.start()
        return fs

    def stop(self, fs):
        for f in fs:
            f.stop.set()
        for f in fs:
            f.thread.join(5)

    def run_traffic(self, fs, rate, seconds, watch=None):
        """Each filter at `rate` a second; `watch(now)` called every 10 ms meanwhile."""
        threads = [threading.Thread(target=f.traffic, args=(rate, seconds)) for f in fs]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            if watch:
                watch(time.time())
            time.sleep(0.01)

    def test_one_limit_across_ten_gateways_within_the_stated_bound(self):
        """Fixed window, 100 per 2 s (epoch-aligned), asked for 400 per window: each
        window admits at most the limit plus the slices outstanding at its start."""
        tenant = uuid.uuid4().hex[:8]
        fs = self.filters({"name": "api", "tenant": tenant})
        width = 2.0
        held_at_start, watch = held_as_windows_begin(fs, width)

        try:
            self.run_traffic(fs, 20, 7.0, watch)
        finally:
            self.stop(fs)
        admitted = windows([t for f in fs for t in f.admitted], width)
        full = sorted(admitted)[1:-1]  # (whole windows only)
        print("\n  admitted per window (limit 100, + held at its start):",
              ", ".join("%d (+%d)" % (admitted[w], held_at_start.get(w, 0)) for w in full),
              file=sys.stderr)
        self.assertGreaterEqual(len(full), 2, admitted)
        for w in full:
            self.assertLessEqual(admitted[w], 100 + held_at_start.get(w, 0),
                                 (w, admitted, held_at_start))
        # It serves: most of each window's limit is used.
        self.assertGreaterEqual(sum(admitted[w] for w in full), 0.6 * 100 * len(full), admitted)
        for n in self.nodes:
            m = n.metrics()
            self.assertIn("floodgate_rlqs_slices_total", m)
        # The counter is the cluster's like any other: a RESP client sees what they took.
        self.assertTrue(base.cli(self.nodes[0].port, "-c", "FG.PEEK", f"quota:{tenant}", "gw"))

    def test_a_policy_change_reaches_every_gateway_within_a_second(self):
        fs = self.filters({"name": "tb"}, n=10)
        try:
            self.assertTrue(base.wait_for(lambda: all(f.assignments for f in fs), 10))
            stop = threading.Event()
            threads = [threading.Thread(target=f.traffic, args=(50, 4.0)) for f in fs]
            for t in threads:
                t.start()
            time.sleep(1.5)
            t0 = time.time()
            base.cli(self.nodes[1].port, "FG.POLICY", "SET", "gwtb", "token_bucket", "20", "10",
                     "1000")
            time.sleep(1.2)
            for f in fs:
                seen = [s for at, s in f.assignments if at >= t0]
                self.assertTrue(seen, "no assignment after the change")
                first = [at for at, s in f.assignments if at >= t0][0]
                self.assertLess(first - t0, 1.0)
                s = seen[-1]
                if s.WhichOneof("strategy") == "token_bucket":
                    self.assertLessEqual(s.token_bucket.max_tokens, 20)
                else:
                    self.assertEqual(s.blanket_rule, DENY_ALL)
            for t in threads:
                t.join()
            stop.set()
        finally:
            self.stop(fs)
            for n in self.nodes:
                base.cli(n.port, "FG.POLICY", "SET", "gwtb", "token_bucket", "1000", "500", "1000")

    def test_unknown_unlimited_old_encoding_and_bad_input(self):
        # The encoding before upstream's map: the same bucket, served.
        f = Filter(self.nodes, 0, self.domain, {"name": "tb"}, old_encoding=True)
        g = Filter(self.nodes, 1, self.domain, {"name": "nope"})
        h = Filter(self.nodes, 2, self.domain, {"name": "free"})
        for x in (f, g, h):
            x.thread.start()
        try:
            self.assertTrue(base.wait_for(lambda: f.assignments and h.assignments and g.abandoned,
                                          10))
            self.assertEqual(f.assignments[0][1].WhichOneof("strategy"), "token_bucket")
            self.assertEqual(h.assignments[0][1].blanket_rule, ALLOW_ALL)
            self.assertFalse(h.assignments[0][1].HasField("token_bucket"))
        finally:
            self.stop([f, g, h])
        # Bytes that are no report end the stream with INVALID_ARGUMENT.
        call = self.nodes[0].channel.stream_stream(RLQS)
        with self.assertRaises(grpc.RpcError) as e:
            list(call(iter([b"\xff\xff"]), timeout=5))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        with self.assertRaises(grpc.RpcError) as e:
            list(call(iter([rlqs_pb2.RateLimitQuotaUsageReports().SerializeToString()]),
                      timeout=5))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        # A gateway that closes its side is answered OK.
        self.assertEqual(list(call(iter([]), timeout=5)), [])
        # Health knows the service by name.
        self.assertEqual(self.nodes[0].health("envoy.service.rate_limit_quota.v3."
                                              "RateLimitQuotaService"),
                         health_pb2.HealthCheckResponse.SERVING)

    def test_zz_a_killed_nodes_streams_go_on_through_another(self):
        """(last: it kills a node) The gateways on a killed node reconnect to another one
        and get slices there; the limit holds again once the cluster has settled."""
        tenant = uuid.uuid4().hex[:8]
        fs = self.filters({"name": "api", "tenant": tenant})
        victim = self.nodes[0]
        on_victim = [f for i, f in enumerate(fs) if i % 3 == 0]
        width = 2.0
        held_at_start, watch = held_as_windows_begin(fs, width)

        killed = []

        def traffic_and_kill():
            self.run_traffic(fs, 20, 16.0, watch)

        t = threading.Thread(target=traffic_and_kill)
        t.start()
        time.sleep(3.0)
        victim.stop(signal.SIGKILL)
        killed.append(time.time())
        t.join()
        self.stop(fs)
        for f in on_victim:
            self.assertGreaterEqual(f.reconnects, 1)
            self.assertTrue([at for at, s in f.assignments if at > killed[0] + 0.5],
                            "no slice after the kill")
        admitted = windows([x for f in fs for x in f.admitted], width)
        # Windows wholly after the cluster settled (the kill's detection and the slot's
        # hand-over take a few seconds): the limit and the bound hold again.
        after = [w for w in sorted(admitted)[:-1] if w * width > killed[0] + 6.0]
        print("\n  admitted per window:", ", ".join(
            "%s%d (+%d)" % ("*" if w in after else "", admitted[w], held_at_start.get(w, 0))
            for w in sorted(admitted)), "(* settled after the kill)", file=sys.stderr)
        self.assertTrue(after, admitted)
        for w in after:
            self.assertLessEqual(admitted[w], 100 + held_at_start.get(w, 0),
                                 (w, admitted, held_at_start))
        self.assertGreaterEqual(sum(admitted[w] for w in after), 0.5 * 100 * len(after))


class Token(unittest.TestCase):
    def test_a_stream_without_the_token_is_refused(self):
        d = tempfile.mkdtemp(prefix="rlqs-token-")
        with open(os.path.join(d, "rls.yaml"), "w") as f:
            f.write("domain: t\nbuckets:\n  - bucket: {name: x}\n"
                    "    rate_limit: {unit: second, requests_per_unit: 5}\n")
        with open(os.path.join(d, "token"), "w") as f:
            f.write("sesame\n")
        node = base.Node(os.path.join(d, "rls.yaml"),
                         ["--rls-token-file", os.path.join(d, "token")])
        try:
            node.wait_serving(30)
            bad = Filter([node], 0, "t", {"name": "x"})
            good = Filter([node], 0, "t", {"name": "x"}, token="sesame")
            for x in (bad, good):
                x.thread.start()
            self.assertTrue(base.wait_for(lambda: bad.errors and good.assignments, 10),
                            (bad.errors, good.errors, good.assignments, good.abandoned))
            self.assertEqual(bad.errors[0], grpc.StatusCode.UNAUTHENTICATED)
            tb = good.assignments[0][1].token_bucket
            self.assertGreaterEqual(tb.max_tokens, 1)
            self.assertLessEqual(tb.max_tokens, 5)
            self.stop_all([bad, good])
        finally:
            node.stop(signal.SIGKILL)

    @staticmethod
    def stop_all(fs):
        for f in fs:
            f.stop.set()
        for f in fs:
            f.thread.join(5)


if __name__ == "__main__":
    unittest.main()
