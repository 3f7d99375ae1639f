"""A model of Envoy's rate_limit_quota filter (envoy.filters.http.rate_limit_quota) over
Python's gRPC, for the quota service's tests and bench: one bucket, its report interval, the
local token bucket an assignment configures, no_assignment_behavior and
expired_assignment_behavior, the stream opened again on another node when it breaks."""
import queue
import threading
import time

import grpc
from envoy.service.rate_limit_quota.v3 import rlqs_pb2
from envoy.type.v3 import ratelimit_strategy_pb2
from floodgate import rlqs_wire_pb2

RLQS = "/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas"
ALLOW_ALL = ratelimit_strategy_pb2.RateLimitStrategy.ALLOW_ALL
DENY_ALL = ratelimit_strategy_pb2.RateLimitStrategy.DENY_ALL


class Filter:
    """One Envoy's rate_limit_quota filter with one bucket: requests matched into the bucket
    are admitted by its active assignment (a token bucket, or a blanket rule), by
    `no_assignment` ("allow" | "deny") before any, and once one expires by `expired`
    ("reuse": the last one goes on; or ("allow"|"deny", seconds) then no_assignment). Usage
    goes up the stream every `interval` seconds (and at once for a new bucket), as Envoy's
    reporting_interval; a broken stream is opened again on the next node, as Envoy's
    cluster would, and reports go on there."""

    def __init__(self, nodes, first, domain, bucket, interval=0.2, no_assignment="deny",
                 expired=("deny", 1.0), token=None, old_encoding=False):
        self.nodes, self.at = nodes, first
        self.domain, self.bucket = domain, dict(bucket)
        self.interval, self.no_assignment, self.expired = interval, no_assignment, expired
        self.token, self.old_encoding = token, old_encoding
        self.lock = threading.Lock()
        self.assignment = None  # (strategy, expires_at or None, received_at)
        self.tokens = 0.0
        self.last_fill = 0.0
        self.expired_at = None
        self.allowed = self.denied = 0  # since the last report
        self.last_report = time.time()
        self.admitted = []  # times of admitted requests
        self.assignments = []  # (time, strategy) received
        self.abandoned = 0
        self.reconnects = 0
        self.errors = []
        self.stop = threading.Event()
        self.outbox = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    # -- the data path: one request matched into the bucket --
    def decide(self, now):
        with self.lock:
            ok = self._decide(now)
            if ok:
                self.allowed += 1
                self.admitted.append(now)
            else:
                self.denied += 1
            return ok

    def _decide(self, now):
        a = self.assignment
        if a is not None and a[1] is not None and now >= a[1]:
            # Expired: the expired_assignment_behavior, for its time; then no assignment.
            if self.expired == "reuse":
                pass
            else:
                if self.expired_at is None:
                    self.expired_at = a[1]
                if now < self.expired_at + self.expired[1]:
                    return self.expired[0] == "allow"
                self.assignment = a = None
        if a is None:
            return self.no_assignment == "allow"
        strategy = a[0]
        which = strategy.WhichOneof("strategy")
        if which == "blanket_rule" or which is None:
            return strategy.blanket_rule == ALLOW_ALL
        tb = strategy.token_bucket
        fill = tb.fill_interval.seconds + tb.fill_interval.nanos / 1e9
        per_fill = tb.tokens_per_fill.value if tb.HasField("tokens_per_fill") else 1
        if fill > 0:
            fills = int((now - self.last_fill) / fill)
            if fills:
                self.tokens = min(tb.max_tokens, self.tokens + fills * per_fill)
                self.last_fill += fills * fill
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    def held(self, now):
        """Tokens of an active slice not yet spent (what this gateway may still admit)."""
        with self.lock:
            a = self.assignment
            if a is None or (a[1] is not None and now >= a[1]):
                return 0
            if a[0].WhichOneof("strategy") != "token_bucket":
                return 0
            return int(self.tokens)

    # -- the stream --
    def apply(self, action):
        now = time.time()
        with self.lock:
            if action.HasField("abandon_action"):
                self.abandoned += 1
                self.assignment = None
                return
            q = action.quota_assignment_action
            ttl = None
            if q.HasField("assignment_time_to_live"):
                ttl = q.assignment_time_to_live.seconds + q.assignment_time_to_live.nanos / 1e9
            s = q.rate_limit_strategy
            old = self.assignment
            active = old is not None and (old[1] is None or now < old[1])
            if active and old[0] == s:
                # The same strategy while active: its time extended, its bucket kept.
                self.assignment = (s, None if ttl is None else now + ttl, old[2])
            else:
                self.assignment = (s, None if ttl is None else now + ttl, now)
                if s.WhichOneof("strategy") == "token_bucket":
                    self.tokens = float(s.token_bucket.max_tokens)
                    self.last_fill = now
            self.expired_at = None
            self.assignments.append((now, s))

    def report(self):
        now = time.time()
        with self.lock:
            u = rlqs_pb2.RateLimitQuotaUsageReports.BucketQuotaUsage()
            for k, v in self.bucket.items():
                u.bucket_id.bucket[k] = v
            elapsed = max(now - self.last_report, 0.001)
            u.time_elapsed.seconds = int(elapsed)
            u.time_elapsed.nanos = int((elapsed % 1) * 1e9)
            u.num_requests_allowed, u.num_requests_denied = self.allowed, self.denied
            self.allowed = self.denied = 0
            self.last_report = now
        if self.old_encoding:
            w = rlqs_wire_pb2.UsageReportsWire(domain=self.domain)
            w.bucket_quota_usages.append(u.SerializeToString())
            return w.SerializeToString()
        r = rlqs_pb2.RateLimitQuotaUsageReports(domain=self.domain)
        r.bucket_quota_usages[hash(tuple(sorted(self.bucket.items()))) & (2**64 - 1)].CopyFrom(u)
        return r.SerializeToString()

    def run(self):
        while not self.stop.is_set():
            node = self.nodes[self.at % len(self.nodes)]  # (anything with a `channel`)
            box = queue.Queue()

            def requests():
                while True:
                    m = box.get()
                    if m is None:
                        return
                    yield m

            md = [("authorization", "Bearer " + self.token)] if self.token else None
            stream = node.channel.stream_stream(RLQS)(requests(), metadata=md)
            box.put(self.report())  # (the first report: the bucket's subscription)

            def reporter():
                while not self.stop.wait(self.interval):
                    if stream.done():
                        return
                    box.put(self.report())
                box.put(None)

            t = threading.Thread(target=reporter, daemon=True)
            t.start()
            try:
                for raw in stream:
                    resp = rlqs_pb2.RateLimitQuotaResponse.FromString(raw)
                    for action in resp.bucket_action:
                        self.apply(action)
            except grpc.RpcError as e:
                if self.stop.is_set():
                    return
                self.errors.append(e.code())
                if e.code() in (grpc.StatusCode.UNAUTHENTICATED,
                                grpc.StatusCode.INVALID_ARGUMENT):
                    return
            box.put(None)
            if self.stop.is_set():
                return
            # Another node, as Envoy's cluster picks another host.
            self.at += 1
            self.reconnects += 1
            time.sleep(0.05)

    def traffic(self, rate, seconds):
        """Requests at `rate` a second for `seconds` (bounded)."""
        end = time.time() + seconds
        step = 1.0 / rate
        nxt = time.time()
        while time.time() < end and not self.stop.is_set():
            self.decide(time.time())
            nxt += step
            delay = nxt - time.time()
            if delay > 0:
                time.sleep(delay)


def windows(times, width):
    out = {}
    for t in times:
        out[int(t // width)] = out.get(int(t // width), 0) + 1
    return out
