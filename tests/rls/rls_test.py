"""The gateway door (Envoy's rate-limit service) through Python's gRPC: every rule of
envoyproxy/ratelimit's configuration and answers, bad input, reloads, metrics, health, and a
3-node cluster drawing on one limit while its owner is killed. Run by tests/rls/run."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import uuid

import grpc
from envoy.service.ratelimit.v3 import rls_pb2
import health_pb2

BIN = sys.argv.pop(1)
RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
OK, OVER = rls_pb2.RateLimitResponse.OK, rls_pb2.RateLimitResponse.OVER_LIMIT
UNIT = rls_pb2.RateLimitResponse.RateLimit

CONFIG = """
domain: {d}
descriptors:
  - key: a
    rate_limit: {{unit: hour, requests_per_unit: 3}}
  - key: b
    rate_limit: {{unit: hour, requests_per_unit: 100}}
  - key: path
    rate_limit: {{unit: hour, requests_per_unit: 10}}
  - key: path
    value: /login
    rate_limit: {{unit: hour, requests_per_unit: 2, name: login}}
  - key: path
    value: /api/*
    rate_limit: {{unit: day, requests_per_unit: 4}}
  - key: tenant
    descriptors:
      - key: plan
        value: free
        shadow_mode: true
        rate_limit: {{unit: hour, requests_per_unit: 1}}
  - key: ten
    rate_limit: {{unit: hour, requests_per_unit: 10}}
  - key: general
    rate_limit: {{unit: hour, requests_per_unit: 1, name: general}}
  - key: specific
    rate_limit: {{unit: hour, requests_per_unit: 100, name: specific, replaces: [{{name: general}}]}}
  - key: free_pass
    rate_limit: {{unlimited: true}}
  - key: zero
    rate_limit: {{unit: minute, requests_per_unit: 0}}
  - key: q1
    quota_mode: true
    rate_limit: {{unit: hour, requests_per_unit: 1}}
  - key: q2
    quota_mode: true
    rate_limit: {{unit: hour, requests_per_unit: 1}}
  - key: user
    detailed_metric: true
    rate_limit: {{unit: hour, requests_per_unit: 5}}
  - key: api_key
    policy: rls_bucket
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cli(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True,
                         timeout=10)
    return out.stdout.strip()


class Node:
    """One floodgate process with the gateway door on."""

    def __init__(self, config_path, extra=(), port=None, rls_port=None):
        self.port = port or free_port()
        self.rls_port = rls_port or free_port()
        self.admin_port = free_port()
        self.args = [BIN, "--port", str(self.port), "--native-port", "0", "--admin-port",
                     str(self.admin_port), "--rls-port", str(self.rls_port), "--rls-config",
                     config_path, "--io-threads", "1", "--shard-threads", "1", *extra]
        self.log = tempfile.NamedTemporaryFile(prefix="rls-node-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.rls_port}")
        self.call = self.channel.unary_unary(
            RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
            response_deserializer=rls_pb2.RateLimitResponse.FromString)
        self.raw = self.channel.unary_unary(RLS)  # bytes in, bytes out
        self.check = self.channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString)

    def health(self, service=""):
        return self.check(health_pb2.HealthCheckRequest(service=service), timeout=2).status

    def wait_serving(self, timeout=30):
        until = time.time() + timeout
        while time.time() < until:
            if self.proc.poll() is not None:
                raise AssertionError("node exited: " + open(self.log.name).read())
            try:
                if self.health() == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
        raise AssertionError("the gateway door never said SERVING: " + open(self.log.name).read())

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.admin_port}/metrics", timeout=5) as r:
            return r.read().decode()

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.channel.close()


def request(domain, *descriptors, hits=0):
    """descriptors: lists of (key, value), or dicts with entries/hits/limit."""
    r = rls_pb2.RateLimitRequest(domain=domain, hits_addend=hits)
    for d in descriptors:
        if isinstance(d, list):
            d = {"entries": d}
        x = r.descriptors.add()
        for k, v in d["entries"]:
            x.entries.add(key=k, value=v)
        if "hits" in d:
            x.hits_addend.value = d["hits"]
        if "limit" in d:
            x.limit.requests_per_unit, x.limit.unit = d["limit"]
    return r


def codes(resp):
    return [s.code for s in resp.statuses]


class Standalone(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rls-test-")
        cls.domain = "d" + uuid.uuid4().hex[:8]
        cls.path = os.path.join(cls.dir, "rls.yaml")
        with open(cls.path, "w") as f:
            f.write(CONFIG.format(d=cls.domain))
        cls.node = Node(cls.dir, ["--rls-response-headers"])
        cls.node.wait_serving()
        # (the policy of the `api_key` descriptor: a token bucket of 2, refilled 1 a minute)
        assert cli(cls.node.port, "FG.POLICY", "SET", "rls_bucket", "token_bucket", "2", "1",
                   "60000") == "OK"

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def ask(self, *descriptors, hits=0, domain=None):
        return self.node.call(request(domain or self.domain, *descriptors, hits=hits), timeout=5)

    def fresh(self):
        return uuid.uuid4().hex[:10]

    def test_one_status_per_descriptor_in_order_and_over_if_any_is(self):
        v = self.fresh()
        for i in range(3):
            r = self.ask([("a", v)], [("b", v)], [("nothing", "here")])
            self.assertEqual(r.overall_code, OK)
            self.assertEqual(codes(r), [OK, OK, OK])
            self.assertEqual(r.statuses[0].limit_remaining, 2 - i)
            self.assertEqual(r.statuses[1].limit_remaining, 99 - i)
            # A descriptor that matches nothing: OK without current_limit.
            self.assertFalse(r.statuses[2].HasField("current_limit"))
        r = self.ask([("a", v)], [("b", v)], [("nothing", "here")])
        self.assertEqual(r.overall_code, OVER)
        self.assertEqual(codes(r), [OVER, OK, OK])
        self.assertEqual(r.statuses[0].current_limit.requests_per_unit, 3)
        self.assertEqual(r.statuses[0].current_limit.unit, UNIT.HOUR)

    def test_an_unknown_domain_limits_nothing(self):
        before = metric(self.node.metrics(), "floodgate_rls_domain_not_found_total", "")
        r = self.ask([("a", "x")], domain="no-such-domain")
        self.assertEqual(metric(self.node.metrics(), "floodgate_rls_domain_not_found_total", ""),
                         before + 1)
        self.assertEqual(r.overall_code, OK)
        self.assertEqual(codes(r), [OK])
        self.assertFalse(r.statuses[0].HasField("current_limit"))

    def test_the_most_specific_match_wins_and_a_bare_key_counts_each_value(self):
        for _ in range(2):
            self.assertEqual(self.ask([("path", "/login")]).statuses[0].current_limit.name, "login")
        r = self.ask([("path", "/login")])
        self.assertEqual(r.overall_code, OVER)
        # (the /login counter is shared by everyone; wildcards match before the bare key)
        r = self.ask([("path", "/api/" + self.fresh())])
        self.assertEqual(r.statuses[0].current_limit.unit, UNIT.DAY)
        self.assertEqual(r.statuses[0].current_limit.requests_per_unit, 4)
        v1, v2 = "/" + self.fresh(), "/" + self.fresh()
        for _ in range(10):
            self.assertEqual(self.ask([("path", v1)]).overall_code, OK)
        self.assertEqual(self.ask([("path", v1)]).overall_code, OVER)
        r = self.ask([("path", v2)])
        self.assertEqual(r.overall_code, OK)
        self.assertEqual(r.statuses[0].limit_remaining, 9)

    def test_a_limit_applies_at_the_depth_of_the_last_entry(self):
        r = self.ask([("tenant", self.fresh())])
        self.assertFalse(r.statuses[0].HasField("current_limit"))
        r = self.ask([("tenant", self.fresh()), ("plan", "free"), ("extra", "x")])
        self.assertFalse(r.statuses[0].HasField("current_limit"))

    def test_hits_addend_of_the_request_and_of_a_descriptor(self):
        v = self.fresh()
        r = self.ask([("ten", v)], hits=0)  # 0 means 1
        self.assertEqual(r.statuses[0].limit_remaining, 9)
        r = self.ask([("ten", v)], hits=4)
        self.assertEqual(r.statuses[0].limit_remaining, 5)
        # A descriptor's own hits_addend wins over the request's; 0 checks, consuming nothing.
        r = self.ask({"entries": [("ten", v)], "hits": 0}, hits=4)
        self.assertEqual(r.statuses[0].limit_remaining, 5)
        self.assertEqual(r.overall_code, OK)
        r = self.ask({"entries": [("ten", v)], "hits": 2}, hits=4)
        self.assertEqual(r.statuses[0].limit_remaining, 3)
        # Past the limit: OVER_LIMIT, and the hits count (as upstream's INCRBY counts them),
        # so a smaller one later is over too.
        r = self.ask([("ten", v)], hits=5)
        self.assertEqual(r.overall_code, OVER)
        self.assertEqual(r.statuses[0].limit_remaining, 0)
        self.assertEqual(self.ask([("ten", v)], hits=1).overall_code, OVER)
        self.assertEqual(self.ask({"entries": [("ten", v)], "hits": 0}).overall_code, OVER)

    def test_the_requests_limit_override(self):
        v = self.fresh()
        over = {"entries": [("b", v)], "limit": (2, 2)}  # 2 a minute instead of 100 an hour
        for i in range(2):
            r = self.ask(over)
            self.assertEqual(r.overall_code, OK)
            self.assertEqual(r.statuses[0].current_limit.requests_per_unit, 2)
            self.assertEqual(r.statuses[0].current_limit.unit, UNIT.MINUTE)
        self.assertEqual(self.ask(over).overall_code, OVER)
        bad = {"entries": [("b", v)], "limit": (2, 0)}
        with self.assertRaises(grpc.RpcError) as e:
            self.ask(bad)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_windows_are_aligned_as_upstreams(self):
        for key, unit_s in (("a", 3600), ("path", 3600)):
            r = self.ask([(key, self.fresh())])
            now = int(time.time())
            want = unit_s - now % unit_s
            self.assertLessEqual(abs(r.statuses[0].duration_until_reset.seconds - want), 1)
        r = self.ask([("path", "/api/" + self.fresh())])  # a day
        want = 86400 - int(time.time()) % 86400
        self.assertLessEqual(abs(r.statuses[0].duration_until_reset.seconds - want), 1)

    def test_shadow_mode_counts_but_never_denies(self):
        v = self.fresh()
        before = self.node.metrics()
        for _ in range(3):
            r = self.ask([("tenant", v), ("plan", "free")])
            self.assertEqual(r.overall_code, OK)
            self.assertEqual(codes(r), [OK])
        key = f'domain="{self.domain}",descriptor="tenant.plan_free"'
        self.assertEqual(metric(self.node.metrics(), "floodgate_rls_shadow_mode_total", key) -
                         metric(before, "floodgate_rls_shadow_mode_total", key), 2)

    def test_replaces_unlimited_and_zero(self):
        v = self.fresh()
        r = self.ask([("general", v)], [("specific", v)])
        self.assertFalse(r.statuses[0].HasField("current_limit"))  # replaced
        r = self.ask([("general", v)], [("specific", v)])
        self.assertEqual(r.overall_code, OK)
        r = self.ask([("free_pass", v)])
        self.assertEqual(r.overall_code, OK)
        self.assertEqual(r.statuses[0].limit_remaining, 2**32 - 1)
        self.assertFalse(r.statuses[0].HasField("current_limit"))
        r = self.ask([("zero", v)])
        self.assertEqual(r.overall_code, OVER)

    def test_quota_mode_is_over_only_when_every_quota_descriptor_is(self):
        v = self.fresh()
        self.ask([("q1", v)])
        r = self.ask([("q1", v)], [("q2", v)])
        self.assertEqual(codes(r), [OVER, OK])
        self.assertEqual(r.overall_code, OK)
        r = self.ask([("q1", v)], [("q2", v)])
        self.assertEqual(codes(r), [OVER, OVER])
        self.assertEqual(r.overall_code, OVER)

    def test_a_descriptor_may_name_a_floodgate_policy(self):
        v = self.fresh()
        self.assertEqual(self.ask([("api_key", v)]).overall_code, OK)
        r = self.ask([("api_key", v)])
        self.assertEqual(r.overall_code, OK)
        self.assertEqual(r.statuses[0].current_limit.requests_per_unit, 2)
        self.assertEqual(self.ask([("api_key", v)]).overall_code, OVER)
        # The policy changed at runtime is in force at once.
        self.assertEqual(cli(self.node.port, "FG.POLICY", "SET", "rls_bucket", "token_bucket",
                             "5", "1", "60000"), "OK")
        time.sleep(0.2)
        self.assertEqual(self.ask([("api_key", self.fresh())]).statuses[0].current_limit
                         .requests_per_unit, 5)

    def test_response_headers_name_the_descriptor_nearest_its_limit(self):
        v = self.fresh()
        r = self.ask([("b", v)], [("a", v)])
        h = {x.key: x.value for x in r.response_headers_to_add}
        self.assertEqual(h["RateLimit-Limit"], "3")
        self.assertEqual(h["RateLimit-Remaining"], "2")
        self.assertLessEqual(abs(int(h["RateLimit-Reset"]) - (3600 - int(time.time()) % 3600)), 1)

    def test_metrics_per_domain_and_descriptor(self):
        v = self.fresh()
        for _ in range(4):
            self.ask([("a", v)])
        self.ask([("user", "u-" + v)])
        m = self.node.metrics()
        key = f'domain="{self.domain}",descriptor="a"'
        self.assertGreaterEqual(metric(m, "floodgate_rls_total_hits_total", key), 4)
        self.assertGreaterEqual(metric(m, "floodgate_rls_over_limit_total", key), 1)
        self.assertGreaterEqual(metric(m, "floodgate_rls_within_limit_total", key), 3)
        self.assertIn("floodgate_rls_near_limit_total", m)
        # detailed_metric: the value in the name.
        self.assertEqual(metric(m, "floodgate_rls_total_hits_total",
                                f'domain="{self.domain}",descriptor="user_u-{v}"'), 1)

    def test_health_says_serving(self):
        self.assertEqual(self.node.health(), health_pb2.HealthCheckResponse.SERVING)
        self.assertEqual(self.node.health("envoy.service.ratelimit.v3.RateLimitService"),
                         health_pb2.HealthCheckResponse.SERVING)

    def test_bad_input_gets_a_clear_status_and_the_node_keeps_serving(self):
        def status(req, raw=False):
            try:
                (self.node.raw if raw else self.node.call)(req, timeout=5)
                return grpc.StatusCode.OK, ""
            except grpc.RpcError as e:
                return e.code(), e.details()
        self.assertEqual(status(request("", [("a", "b")])),
                         (grpc.StatusCode.INVALID_ARGUMENT, "rate limit domain must not be empty"))
        self.assertEqual(status(request(self.domain)),
                         (grpc.StatusCode.INVALID_ARGUMENT,
                          "rate limit descriptor list must not be empty"))
        many = request(self.domain, [("k%d" % i, "v") for i in range(10000)])
        self.assertEqual(status(many)[0], grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(status(request(self.domain, *[[("a", "x")]] * 10000))[0],
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(status(request(self.domain, [("a", "x" * 100000)]))[0],
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(status(request(self.domain, [("a", "x" * 2000000)]))[0],
                         grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(status(request(self.domain, {"entries": [("a", "x")],
                                                      "hits": 2**63}))[0],
                         grpc.StatusCode.INVALID_ARGUMENT)
        # Bytes that are no RateLimitRequest.
        code, _ = status(b"\xff\xff\xff\xff\x0f garbage", raw=True)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        # Not HTTP/2 at all, and an HTTP/2 preface followed by garbage.
        for junk in (b"GET / HTTP/1.1\r\n\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + os.urandom(4096)):
            with socket.create_connection(("127.0.0.1", self.node.rls_port), timeout=5) as s:
                s.sendall(junk)
                try:
                    s.recv(1024)
                except OSError:
                    pass
        self.assertEqual(self.ask([("b", self.fresh())]).overall_code, OK)

    def test_other_methods_are_unimplemented_and_the_node_keeps_serving(self):
        for method in ("/grpc.health.v1.Health/Watch", "/no.Such/Method",
                       "/envoy.service.ratelimit.v3.RateLimitService/Other"):
            call = self.node.channel.unary_unary(method)
            with self.assertRaises(grpc.RpcError) as e:
                call(b"", timeout=5)
            self.assertEqual(e.exception.code(), grpc.StatusCode.UNIMPLEMENTED, method)
        watch = self.node.channel.unary_stream("/grpc.health.v1.Health/Watch")
        with self.assertRaises(grpc.RpcError) as e:
            list(watch(b"", timeout=5))
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        # A call with no message at all is an empty RateLimitRequest: no domain.
        empty = self.node.channel.stream_unary(RLS)
        with self.assertRaises(grpc.RpcError) as e:
            empty(iter(()), timeout=5)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(self.ask([("b", self.fresh())]).overall_code, OK)

    def test_the_port_is_one_nodes_alone(self):
        # A second node given the same rls-port does not start (no shared SO_REUSEPORT port
        # splitting a gateway's connections between two nodes).
        other = subprocess.run([BIN, "--port", str(free_port()), "--native-port", "0",
                                "--admin-port", "0", "--rls-port", str(self.node.rls_port),
                                "--rls-config", self.node.args[self.node.args.index("--rls-config") + 1]],
                               capture_output=True, text=True, timeout=30)
        self.assertNotEqual(other.returncode, 0)
        self.assertIn(str(self.node.rls_port), other.stdout + other.stderr)
        self.assertEqual(self.ask([("b", self.fresh())]).overall_code, OK)

    def test_a_connection_may_open_at_most_1000_streams_at_once(self):
        # (the server's first HTTP/2 SETTINGS frame: SETTINGS_MAX_CONCURRENT_STREAMS, id 3)
        with socket.create_connection(("127.0.0.1", self.node.rls_port), timeout=5) as s:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
            head = b""
            while len(head) < 9:
                head += s.recv(9 - len(head))
            length, kind = int.from_bytes(head[:3], "big"), head[3]
            self.assertEqual(kind, 4)
            body = b""
            while len(body) < length:
                body += s.recv(length - len(body))
        params = {int.from_bytes(body[i:i + 2], "big"): int.from_bytes(body[i + 2:i + 6], "big")
                  for i in range(0, len(body), 6)}
        self.assertEqual(params.get(3), 1000)

    def test_fg_rls_config_shows_what_is_loaded_and_a_reload_keeps_the_last_good(self):
        out = cli(self.node.port, "FG.RLS", "CONFIG")
        self.assertIn(f"{self.domain}.a: unit=hour requests_per_unit=3", out)
        self.assertIn("rls.yaml", out)
        extra = os.path.join(self.dir, "extra.yaml")
        other = "o" + self.fresh()
        try:
            # A new file: in force within a couple of seconds, without a signal.
            with open(extra, "w") as f:
                f.write(f"domain: {other}\ndescriptors:\n  - key: k\n    rate_limit: "
                        "{unit: hour, requests_per_unit: 1}\n")
            self.assertTrue(wait_for(lambda: self.ask([("k", "v")], domain=other)
                                     .statuses[0].HasField("current_limit")))
            # A broken change is refused: the rules in force stay, the error is shown.
            with open(extra, "w") as f:
                f.write(f"domain: {other}\ndescriptors:\n  - key: k\n    ratelimit: {{}}\n")
            self.assertTrue(wait_for(lambda: "unknown key 'ratelimit'" in
                                     cli(self.node.port, "FG.RLS", "CONFIG")))
            self.assertEqual(self.ask([("k", "v")], domain=other).overall_code, OVER)
            # SIGHUP reads the files again too.
            with open(extra, "w") as f:
                f.write(f"domain: {other}\n")
            os.utime(extra, (time.time() - 100, time.time() - 100))  # (no mtime change seen)
            self.node.proc.send_signal(signal.SIGHUP)
            self.assertTrue(wait_for(lambda: not self.ask([("k", "v")], domain=other)
                                     .statuses[0].HasField("current_limit")))
        finally:
            os.remove(extra)
        self.assertEqual(cli(self.node.port, "FG.RLS", "RELOAD"), "OK")


class Refused(unittest.TestCase):
    """A bad rls-config stops the start (and --check-config says why), as upstream refuses
    to start on one."""

    def test_a_bad_file_refuses_the_start_and_the_check(self):
        d = tempfile.mkdtemp(prefix="rls-bad-")
        bad = os.path.join(d, "bad.yaml")
        with open(bad, "w") as f:
            f.write("domain: x\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight}\n")
        conf = os.path.join(d, "node.yaml")
        with open(conf, "w") as f:
            f.write(f"rls-port: {free_port()}\nrls-config: {bad}\n")
        out = subprocess.run([BIN, "--check-config", conf], capture_output=True, text=True,
                             timeout=30)
        self.assertEqual(out.returncode, 2)
        self.assertIn("rls-config: bad.yaml: invalid rate limit unit 'fortnight'", out.stderr)
        out = subprocess.run([BIN, "--config", conf, "--port", str(free_port())],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 2)
        self.assertIn("invalid rate limit unit 'fortnight'", out.stdout + out.stderr)


def metric(text, name, labels):
    """A sample's value: `name` with `labels` among its labels ("" for one without any)."""
    for line in text.splitlines():
        if labels and line.startswith(name + "{") and labels in line:
            return float(line.rsplit(" ", 1)[1])
        if not labels and line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def wait_for(f, timeout=10):
    until = time.time() + timeout
    while time.time() < until:
        try:
            if f():
                return True
        except grpc.RpcError:
            pass
        time.sleep(0.1)
    return False


class Users(unittest.TestCase):
    """rls-user: the door's requests run with that ACL user's rights, checked as the RESP
    door checks FG.TAKE, and changed at runtime with ACL SETUSER."""

    def test_the_doors_user_needs_its_rights(self):
        d = tempfile.mkdtemp(prefix="rls-users-")
        with open(os.path.join(d, "rls.yaml"), "w") as f:
            f.write("domain: u\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, "
                    "requests_per_unit: 100}\n")
        node = Node(d, ["--user", "gw on nopass ~rls:* +fg.take +fg.peek", "--rls-user", "gw"])
        try:
            node.wait_serving()
            def status(hits=1):
                try:
                    node.call(request("u", {"entries": [("k", "v")], "hits": hits}), timeout=5)
                    return grpc.StatusCode.OK, ""
                except grpc.RpcError as e:
                    return e.code(), e.details()
            self.assertEqual(status()[0], grpc.StatusCode.OK)
            self.assertEqual(status(0)[0], grpc.StatusCode.OK)
            self.assertEqual(cli(node.port, "ACL", "SETUSER", "gw", "resetkeys", "~other:*"), "OK")
            code, why = status()
            self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED)
            self.assertIn("no permissions to access", why)
            self.assertEqual(cli(node.port, "ACL", "SETUSER", "gw", "~rls:*", "-fg.take"), "OK")
            self.assertEqual(status(0)[0], grpc.StatusCode.OK)  # a check is a peek
            code, why = status()
            self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED)
            self.assertIn("'fg.take' command", why)
            self.assertIn("gateway door", cli(node.port, "ACL", "LOG"))
            self.assertEqual(cli(node.port, "ACL", "DELUSER", "gw"), "1")
            code, why = status()
            self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED)
            self.assertIn("does not exist", why)
        finally:
            node.stop()


class Bounds(unittest.TestCase):
    """What a caller can make the open door do is bounded: connections (rls-maxclients),
    connections that never begin (query-deadline), counters per domain
    (rls-max-keys-per-domain) and per call; and the door can want a token."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rls-bounds-")
        with open(os.path.join(cls.dir, "rls.yaml"), "w") as f:
            f.write("domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, "
                    "requests_per_unit: 100}\n")
        cls.token = os.path.join(cls.dir, "token")
        with open(cls.token, "w") as f:
            f.write("s3cret-gateway-token\n")
        # (a gRPC client may open its connection well before it speaks: a deadline of a few
        # seconds, not the default 30, but no shorter)
        cls.node = Node(cls.dir, ["--rls-maxclients", "20", "--query-deadline-ms", "5000",
                                  "--rls-max-keys-per-domain", "10", "--rls-token-file",
                                  cls.token])
        cls.node.wait_serving()
        cls.md = [("authorization", "Bearer s3cret-gateway-token")]

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def status(self, req, md=None):
        try:
            self.node.call(req, timeout=5, metadata=self.md if md is None else md)
            return grpc.StatusCode.OK, ""
        except grpc.RpcError as e:
            return e.code(), e.details()

    def test_a_token_is_wanted_when_one_is_set(self):
        req = request("b", [("k", "v")], hits=1)
        self.assertEqual(self.status(req)[0], grpc.StatusCode.OK)
        code, why = self.status(req, md=[])
        self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED)
        self.assertIn("Bearer", why)
        self.assertEqual(self.status(req, md=[("authorization", "Bearer wrong")])[0],
                         grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(self.node.health(), health_pb2.HealthCheckResponse.SERVING)  # (open)
        self.assertGreater(metric(self.node.metrics(), "floodgate_rls_refused_total",
                                  'reason="token"'), 0)

    def test_connections_past_the_cap_and_silent_ones_are_closed(self):
        held = []
        for _ in range(40):  # (silent: never a preface)
            s = socket.create_connection(("127.0.0.1", self.node.rls_port), timeout=5)
            held.append(s)
        def closed_within(s, seconds):  # (the server's SETTINGS read past, then its end)
            s.settimeout(seconds)
            try:
                while s.recv(4096):
                    pass
                return True
            except ConnectionResetError:
                return True
            except socket.timeout:
                return False
        closed = sum(1 for s in held[20:] if closed_within(s, 2))
        self.assertGreaterEqual(closed, 19)  # (past 20: refused at once)
        # The silent ones within the cap go after query-deadline (5 s).
        time.sleep(6)
        gone = sum(1 for s in held[:20] if closed_within(s, 1))
        for s in held:
            s.close()
        self.assertEqual(gone, 20)
        self.assertEqual(self.status(request("b", [("k", "v")], hits=1))[0], grpc.StatusCode.OK)
        m = self.node.metrics()
        self.assertGreater(metric(m, "floodgate_rls_refused_total", 'reason="maxclients"'), 0)
        # (the test's own gRPC connection is one of the 20)
        self.assertGreaterEqual(metric(m, "floodgate_rls_refused_total", 'reason="handshake"'), 19)

    def test_counters_are_bounded_per_domain_and_per_call(self):
        def own(i):  # a descriptor with a limit of its own: a counter of its own
            return {"entries": [("own", str(i))], "limit": (5, 6)}  # (6: YEAR)
        before = metric(self.node.metrics(), "floodgate_rls_keys_evicted_total", "")
        for i in range(10):
            self.assertEqual(self.status(request("free-for-all", own(i), hits=1))[0],
                             grpc.StatusCode.OK)
        # The domain is full: a new counter forgets the caller's least recently used one (and
        # resets it), rather than refusing a new client for a year (rls_keys.hpp).
        self.assertEqual(self.status(request("free-for-all", own(10), hits=1))[0],
                         grpc.StatusCode.OK)
        self.assertEqual(metric(self.node.metrics(), "floodgate_rls_keys_evicted_total", "") -
                         before, 1)
        self.assertEqual(self.status(request("free-for-all", own(3), hits=1))[0],
                         grpc.StatusCode.OK)  # (one it has: no new counter)
        self.assertEqual(metric(self.node.metrics(), "floodgate_rls_keys_evicted_total", "") -
                         before, 1)
        self.assertEqual(self.status(request("b", [("k", "other")], hits=1))[0],
                         grpc.StatusCode.OK)  # (a configured domain: its own allowance)
        code, why = self.status(request("b", *[{"entries": [("k", "m%d" % i)]}
                                               for i in range(65)], hits=1))
        self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("at most 64 new counters", why)


class Clients(unittest.TestCase):
    """The door's connections are clients of the node: CLIENT LIST shows each (door=rls)
    from its accept until it is gone, and maxclients counts them with every other door's."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rls-clients-")
        with open(os.path.join(cls.dir, "rls.yaml"), "w") as f:
            f.write("domain: c\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, "
                    "requests_per_unit: 100}\n")
        cls.node = Node(cls.dir, ["--maxclients", "4"])
        cls.node.wait_serving()

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def rls_clients(self):
        return [l for l in cli(self.node.port, "CLIENT", "LIST").splitlines() if "door=rls" in l]

    def test_its_connections_are_in_client_list_and_count_toward_maxclients(self):
        self.node.call(request("c", [("k", "v")], hits=1), timeout=5)
        mine = self.rls_clients()
        self.assertEqual(len(mine), 1, mine)  # (the test's own channel)
        self.assertIn("addr=127.0.0.1:", mine[0])
        self.assertIn("laddr=127.0.0.1:%d " % self.node.rls_port, mine[0])
        self.assertIn(" door=resp", cli(self.node.port, "CLIENT", "INFO"))
        # Three more (silent) make four: the node's maxclients, so a RESP client is refused.
        held = [socket.create_connection(("127.0.0.1", self.node.rls_port), timeout=5)
                for _ in range(2)]
        self.assertTrue(wait_for(lambda: len(self.rls_clients()) == 3))
        held.append(socket.create_connection(("127.0.0.1", self.node.rls_port), timeout=5))
        self.assertTrue(wait_for(lambda: "max number of clients" in cli(self.node.port, "PING")))
        for s in held:
            s.close()
        # Gone from the registry once gone (the door looks every second).
        self.assertTrue(wait_for(lambda: cli(self.node.port, "PING") == "PONG"))
        self.assertTrue(wait_for(lambda: len(self.rls_clients()) == 1))
        self.node.call(request("c", [("k", "v")], hits=1), timeout=5)

    def test_client_kill_closes_its_connections(self):
        """CLIENT KILL DOOR rls (or ID) closes the door's connections: gone from the
        list at once; a silent one's socket sees its end; a caller's channel connects anew."""
        self.node.call(request("c", [("k", "v")], hits=1), timeout=5)
        silent = socket.create_connection(("127.0.0.1", self.node.rls_port), timeout=5)
        self.assertTrue(wait_for(lambda: len(self.rls_clients()) == 2))
        self.assertEqual(cli(self.node.port, "CLIENT", "LIST", "DOOR", "rls").count("door=rls"), 2)
        self.assertNotIn("door=rls", cli(self.node.port, "CLIENT", "LIST", "DOOR", "resp"))
        self.assertEqual(cli(self.node.port, "CLIENT", "KILL", "DOOR", "rls"), "2")
        self.assertEqual(self.rls_clients(), [])
        silent.settimeout(5)
        while True:  # (the server's SETTINGS, then the end: closed by the node)
            got = silent.recv(100)
            if not got:
                break
        silent.close()
        # The caller's channel reconnects: a new connection, listed again; then by ID.
        self.assertTrue(wait_for(lambda: self.try_call()))
        mine = self.rls_clients()
        self.assertEqual(len(mine), 1, mine)
        ident = mine[0].split()[0].split("=")[1]
        self.assertEqual(cli(self.node.port, "CLIENT", "KILL", "ID", ident, "DOOR", "resp"), "0")
        self.assertEqual(cli(self.node.port, "CLIENT", "KILL", "ID", ident), "1")
        self.assertEqual(self.rls_clients(), [])
        self.assertTrue(wait_for(lambda: self.try_call()))

    def test_its_memory_counts_toward_maxmemory_clients(self):
        """A gateway connection's buffers (HTTP/2's, the calls' messages) are its memory as
        CLIENT LIST shows it, and maxmemory-clients evicts it as any client: a call that has
        sent 960 KB of a megabyte's message holds them, and with a cap of 512 KB it goes."""
        self.assertEqual(cli(self.node.port, "CONFIG", "SET", "maxmemory-clients", "512kb"), "OK")
        try:
            s = socket.create_connection(("127.0.0.1", self.node.rls_port), timeout=5)
            hdr = lambda kind, flags, sid, p: len(p).to_bytes(3, "big") + bytes([kind, flags]) + \
                sid.to_bytes(4, "big") + p
            lit = lambda n, v: b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v
            block = lit(b":method", b"POST") + lit(b":scheme", b"http") + \
                lit(b":path", RLS.encode()) + lit(b"content-type", b"application/grpc")
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + hdr(4, 0, 0, b"") +
                      hdr(1, 4, 1, block) +
                      b"".join(hdr(0, 0, 1, (b"\x00" + (1 << 20).to_bytes(4, "big") if i == 0
                                              else b"") + b"x" * 16000) for i in range(60)))
            s.settimeout(5)
            gone = False
            try:
                while s.recv(65536):
                    pass
                gone = True
            except (ConnectionResetError, socket.timeout):
                gone = True
            s.close()
            self.assertTrue(gone)
            self.assertTrue(wait_for(lambda: self.try_call()))
        finally:
            cli(self.node.port, "CONFIG", "SET", "maxmemory-clients", "0")

    def try_call(self):
        try:
            self.node.call(request("c", [("k", "v")], hits=1), timeout=2)
            return True
        except grpc.RpcError:
            return False


class Tls(unittest.TestCase):
    """tls-rls: the door speaks TLS only, with the node's certificate; with tls-auth-clients
    yes, a caller must show a certificate the CA signed."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rls-tls-")
        def sh(cmd):
            subprocess.run(cmd, shell=True, cwd=cls.dir, check=True, capture_output=True)
        sh("openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 "
           "-subj /CN=test-ca")
        for name in ("server", "client"):
            sh(f"openssl req -newkey rsa:2048 -nodes -keyout {name}.key -out {name}.csr "
               f"-subj /CN={name}")
            sh(f"printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > {name}.ext && "
               f"openssl x509 -req -in {name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
               f"-out {name}.crt -days 2 -extfile {name}.ext")
        with open(os.path.join(cls.dir, "rls.yaml"), "w") as f:
            f.write("domain: t\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, "
                    "requests_per_unit: 1}\n")
        d = cls.dir
        cls.node = Node(os.path.join(d, "rls.yaml"),
                        ["--tls-rls", "--tls-cert-file", f"{d}/server.crt", "--tls-key-file",
                         f"{d}/server.key", "--tls-ca-cert-file", f"{d}/ca.crt"])

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def read(self, name):
        with open(os.path.join(self.dir, name), "rb") as f:
            return f.read()

    def call(self, creds):
        ch = grpc.secure_channel(f"127.0.0.1:{self.node.rls_port}", creds) if creds else \
            grpc.insecure_channel(f"127.0.0.1:{self.node.rls_port}")
        try:
            f = ch.unary_unary(RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
                               response_deserializer=rls_pb2.RateLimitResponse.FromString)
            return f(request("t", [("k", uuid.uuid4().hex)]), timeout=5).overall_code
        except grpc.RpcError as e:
            return e.code()
        finally:
            ch.close()

    def test_only_tls_with_a_client_certificate_is_answered(self):
        mine = grpc.ssl_channel_credentials(self.read("ca.crt"), self.read("client.key"),
                                            self.read("client.crt"))
        self.assertTrue(wait_for(lambda: self.call(mine) == OK, 20))
        self.assertEqual(self.call(grpc.ssl_channel_credentials(self.read("ca.crt"))),
                         grpc.StatusCode.UNAVAILABLE)  # no client certificate
        self.assertEqual(self.call(None), grpc.StatusCode.UNAVAILABLE)  # plaintext
        # Its TLS connections are the node's clients too (CLIENT LIST, maxclients, memory).
        ch = grpc.secure_channel(f"127.0.0.1:{self.node.rls_port}", mine)
        f = ch.unary_unary(RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
                           response_deserializer=rls_pb2.RateLimitResponse.FromString)
        f(request("t", [("k", uuid.uuid4().hex)]), timeout=5)
        listed = [l for l in cli(self.node.port, "CLIENT", "LIST").splitlines() if "door=rls" in l]
        ch.close()
        self.assertEqual(len(listed), 1, listed)


class Cluster(unittest.TestCase):
    """Three nodes drawing on one limit through all three doors; the limit's owner killed
    mid-way, its counts kept by the replica that takes over."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rls-cluster-")
        cls.domain = "c" + uuid.uuid4().hex[:8]
        with open(os.path.join(cls.dir, "rls.yaml"), "w") as f:
            f.write(f"""domain: {cls.domain}
descriptors:
  - key: k
    rate_limit: {{unit: hour, requests_per_unit: 20}}
""")
        with open(os.path.join(cls.dir, "open.yaml"), "w") as f:
            f.write(f"""domain: {cls.domain}-open
on_unavailable: fail_open
descriptors:
  - key: k
    rate_limit: {{unit: hour, requests_per_unit: 20}}
""")
        ports = [free_port() for _ in range(3)]
        bus = [free_port() for _ in range(3)]
        seeds = ",".join(f"127.0.0.1:{b}" for b in bus[:2])
        cls.nodes = []
        for i in range(3):
            cls.nodes.append(Node(cls.dir, ["--cluster-enabled", "--node-id", f"rls-{i}",
                                            "--cluster-port", str(bus[i]), "--seeds", seeds],
                                  port=ports[i]))
        for n in cls.nodes:
            n.wait_serving(60)

    @classmethod
    def tearDownClass(cls):
        for n in cls.nodes:
            n.stop(signal.SIGKILL)

    def owner_of(self, key):
        slot = int(cli(self.nodes[0].port, "CLUSTER", "KEYSLOT", key))
        for line in cli(self.nodes[0].port, "CLUSTER", "NODES").splitlines():
            f = line.split()
            for r in f[8:]:
                lo, _, hi = r.partition("-")
                if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                    port = int(f[1].split(":")[1].split("@")[0])
                    return next(n for n in self.nodes if n.port == port)
        raise AssertionError("no owner for slot %d" % slot)

    def test_one_limit_through_every_node_and_its_owner_killed(self):
        v = uuid.uuid4().hex[:8]
        key = f"rls:{self.domain}_k_{v}_3600"
        owner = self.owner_of(key)
        allowed = 0
        for i in range(12):  # 4 through each node
            r = self.nodes[i % 3].call(request(self.domain, [("k", v)]), timeout=5)
            allowed += r.overall_code == OK
            self.assertEqual(r.statuses[0].limit_remaining, 20 - allowed)
        self.assertEqual(allowed, 12)
        time.sleep(0.5)  # (past the replication lag)
        owner.stop(signal.SIGKILL)
        survivors = [n for n in self.nodes if n is not owner]
        # Through the survivors, until the replica has taken the slot over: the 12 hits kept.
        answers = []
        deadline = time.time() + 30
        while len(answers) < 10 and time.time() < deadline:
            try:
                answers.append(survivors[len(answers) % 2].call(
                    request(self.domain, [("k", v)]), timeout=5))
            except grpc.RpcError as e:
                self.assertEqual(e.code(), grpc.StatusCode.UNAVAILABLE)
                time.sleep(0.2)
        self.assertEqual(len(answers), 10)
        self.assertEqual([a.overall_code for a in answers], [OK] * 8 + [OVER] * 2)
        self.assertEqual(answers[0].statuses[0].limit_remaining, 7)

        # Both copies of a slot gone (and the quorum): the domain's stated mode answers.
        other = next(n for n in survivors)
        last = next(n for n in survivors if n is not other)
        other.stop(signal.SIGKILL)
        v2 = uuid.uuid4().hex[:8]
        def status(domain):
            try:
                last.call(request(domain, [("k", v2)]), timeout=5)
                return grpc.StatusCode.OK
            except grpc.RpcError as e:
                return e.code()
        self.assertTrue(wait_for(lambda: status(self.domain) == grpc.StatusCode.UNAVAILABLE, 30))
        self.assertEqual(status(self.domain + "-open"), grpc.StatusCode.OK)
        # A node cut off from the cluster says so to health checkers.
        self.assertTrue(wait_for(lambda: last.health() ==
                                 health_pb2.HealthCheckResponse.NOT_SERVING, 10))


if __name__ == "__main__":
    unittest.main()
