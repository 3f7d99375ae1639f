"""A model of Envoy's rate_limit_quota filter written from Envoy's code, not from the proto's
comments: each clause names the upstream function it mirrors (envoyproxy/envoy,
source/extensions/filters/http/rate_limit_quota/: filter.cc, global_client_impl.cc,
filter_persistence.cc, and source/common/common/token_bucket_impl.cc's AtomicTokenBucketImpl).
One bucket per filter, over Python's gRPC; for the quota service's tests and bench."""
import math
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
# filter_persistence.cc, initTlsStore: "all usage is reported on a hardcoded interval".
REPORTING_INTERVAL_S = 5.0


class TokenBucket:
    """token_bucket_impl.cc, AtomicTokenBucketImpl: refilled continuously at `fill_rate` a
    second up to `max_tokens`, starting with `initial` tokens; consume(1) takes a whole one."""

    def __init__(self, max_tokens, fill_rate, initial, now):
        self.max_tokens, self.fill_rate = float(max_tokens), fill_rate
        self.tokens, self.at = float(initial), now

    def remaining(self, now):
        if self.fill_rate == math.inf:
            return self.max_tokens
        return min(self.max_tokens, self.tokens + (now - self.at) * self.fill_rate)

    def consume(self, now):
        self.tokens, self.at = self.remaining(now), now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


def proto_token_buckets_eq(new, old):
    """global_client_impl.cc, protoTokenBucketsEq: max_tokens, tokens_per_fill and the fill
    interval's *nanos* — its seconds and the strategy's name are not compared."""
    return (new.max_tokens == old.max_tokens and
            new.tokens_per_fill.value == old.tokens_per_fill.value and
            new.fill_interval.nanos == old.fill_interval.nanos)


def create_token_bucket(strategy, existing, now):
    """global_client_impl.cc, createTokenBucketFromAction: the rate is tokens_per_fill over
    the fill interval's *whole seconds* (absl::ToInt64Seconds; under a second divides by
    zero); a bucket replacing one starts at the old one's fill ratio, else full."""
    tb = strategy.token_bucket
    seconds = int(tb.fill_interval.seconds + tb.fill_interval.nanos / 1e9)
    rate = math.inf if seconds == 0 else tb.tokens_per_fill.value / seconds
    initial = tb.max_tokens
    if existing is not None:
        initial = tb.max_tokens * (existing.remaining(now) / existing.max_tokens)
    return TokenBucket(tb.max_tokens, rate, initial, now)


class Filter:
    """One Envoy's rate_limit_quota filter with one bucket. `no_assignment`: the bucket's
    no_assignment_behavior fallback ("allow" | "deny" | None: unset, which is ALLOW_ALL);
    `expired`: expired_assignment_behavior (None: unset; or ("allow"|"deny", seconds))."""

    def __init__(self, nodes, first, domain, bucket, no_assignment=None, expired=None,
                 token=None, map_encoding=False, interval=REPORTING_INTERVAL_S):
        self.nodes, self.at = nodes, first
        self.domain, self.bucket = domain, dict(bucket)
        self.no_assignment, self.expired = no_assignment, expired
        self.token, self.map_encoding, self.interval = token, map_encoding, interval
        self.lock = threading.Lock()
        # The cached bucket (quota_bucket_cache.h CachedBucket): None until the first request.
        self.exists = False
        self.cached_action = None  # a BucketAction's strategy, or None
        self.action_expires = None  # when the action expiration timer fires
        self.fallback_until = None  # an expired action's fallback, until then
        self.token_bucket = None
        self.allowed = self.denied = 0  # quota_usage, since the last report
        self.last_report = None
        self.admitted = []  # times of admitted requests
        self.assignments = []  # (time, strategy) received
        self.abandoned = 0
        self.reconnects = 0
        self.errors = []
        self.stop = threading.Event()
        self.box = None  # the open stream's outbox
        self.started = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    # -- the data path --
    def default_action(self):
        """filter.cc, recordBucketUsage: no_assignment_behavior's fallback_rate_limit, or
        ALLOW_ALL when unset."""
        return {"allow": ALLOW_ALL, "deny": DENY_ALL, None: ALLOW_ALL}[self.no_assignment]

    def _timers(self, now):
        """global_client_impl.cc, onActionExpirationTimer / onFallbackExpirationTimer: the
        action's timer ends it (to the fallback for its time, if configured; else to the
        default action, its token bucket dropped)."""
        if self.action_expires is not None and now >= self.action_expires:
            self.action_expires = None
            if self.expired is None:
                self.cached_action, self.token_bucket = None, None
            else:
                self.cached_action = ("blanket", ALLOW_ALL if self.expired[0] == "allow"
                                      else DENY_ALL)
                self.token_bucket = None
                self.fallback_until = now + int(self.expired[1])  # (whole seconds)
        if self.fallback_until is not None and now >= self.fallback_until:
            self.fallback_until = None
            self.cached_action, self.token_bucket = None, None

    def decide(self, now):
        with self.lock:
            self._timers(now)
            if not self.exists:
                # filter.cc, recordBucketUsage: a new bucket; its first request allowed unless
                # the default is DENY_ALL; global_client_impl.cc, createBucketImpl: an
                # immediate report of this bucket, the stream and the report timer started.
                ok = self.default_action() != DENY_ALL
                self.exists = True
                self.last_report = now
                self._count(ok, now)
                self._send_report(now)
                self.started.set()
                return ok
            ok = self._should_allow(now)
            self._count(ok, now)
            return ok

    def _count(self, ok, now):
        if ok:
            self.allowed += 1
            self.admitted.append(now)
        else:
            self.denied += 1

    def _should_allow(self, now):
        """filter.cc, shouldAllowRequest: the cached action, else the default action; a token
        bucket consumes one."""
        if self.cached_action is None:
            return self.default_action() != DENY_ALL
        kind, value = self.cached_action
        if kind == "blanket":
            return value == ALLOW_ALL
        return self.token_bucket.consume(now)

    def held(self, now):
        """Tokens the bucket holds now (what it may admit at once)."""
        with self.lock:
            self._timers(now)
            if self.cached_action is None or self.cached_action[0] != "bucket":
                return 0
            return int(self.token_bucket.remaining(now))

    # -- the stream --
    def apply(self, action):
        """global_client_impl.cc, onQuotaResponseImpl."""
        now = time.time()
        with self.lock:
            if action.HasField("abandon_action"):
                # (the bucket erased: the next request makes it anew, with an immediate report)
                self.abandoned += 1
                self.exists = False
                self.cached_action, self.token_bucket = None, None
                self.action_expires = self.fallback_until = None
                return
            s = action.quota_assignment_action.rate_limit_strategy
            which = s.WhichOneof("strategy")
            if which == "blanket_rule":
                self.cached_action, self.token_bucket = ("blanket", s.blanket_rule), None
            elif which == "token_bucket":
                old = self.cached_action
                if old is None or old[0] != "bucket" or not proto_token_buckets_eq(
                        s.token_bucket, old[1].token_bucket):
                    self.token_bucket = create_token_bucket(s, self.token_bucket, now)
                self.cached_action = ("bucket", s)
            else:
                return  # (requests_per_time_unit, unset: logged and skipped)
            self.fallback_until = None
            # startActionExpirationTimer: the time to live's *seconds* alone.
            self.action_expires = now + action.quota_assignment_action.assignment_time_to_live.seconds
            self.assignments.append((now, s))

    def _usage(self, now):
        """global_client_impl.cc, getUsageFromBucket: the counts since the last report (reset),
        time_elapsed in whole seconds."""
        u = rlqs_pb2.RateLimitQuotaUsageReports.BucketQuotaUsage()
        for k, v in self.bucket.items():
            u.bucket_id.bucket[k] = v
        u.num_requests_allowed, u.num_requests_denied = self.allowed, self.denied
        self.allowed = self.denied = 0
        u.time_elapsed.seconds = int(now - self.last_report)
        self.last_report = now
        return u

    def _report_bytes(self, u):
        # buildReports: report.add_bucket_quota_usages() — the repeated encoding.
        if self.map_encoding:
            r = rlqs_pb2.RateLimitQuotaUsageReports(domain=self.domain)
            r.bucket_quota_usages[hash(tuple(sorted(self.bucket.items()))) & (2**64 - 1)].CopyFrom(u)
            return r.SerializeToString()
        w = rlqs_wire_pb2.UsageReportsWire(domain=self.domain)
        w.bucket_quota_usages.append(u.SerializeToString())
        return w.SerializeToString()

    def _send_report(self, now):
        box = self.box
        if box is not None:  # (sendUsageReportImpl: dropped when the stream is closed)
            box.put(self._report_bytes(self._usage(now)))

    def run(self):
        """onSendReportsTimer every REPORTING_INTERVAL_S: a closed stream is started again
        (startStreamImpl; Envoy's cluster picks a host: here, the next node) and the report
        goes on it."""
        while not self.started.wait(0.1):  # (the stream starts with the first request)
            if self.stop.is_set():
                return
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
            with self.lock:
                self.box = box
                if self.exists and self.reconnects + len(self.errors) > 0:
                    box.put(self._report_bytes(self._usage(time.time())))
                elif self.exists and not self.assignments:
                    # (the bucket's immediate report was dropped before the stream was up)
                    box.put(self._report_bytes(self._usage(time.time())))

            def reporter():
                while not self.stop.wait(self.interval):
                    if stream.done():
                        return
                    with self.lock:
                        if self.exists:
                            box.put(self._report_bytes(self._usage(time.time())))
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
            with self.lock:
                self.box = None  # onRemoteClose: stream_ = nullptr
            box.put(None)
            if self.stop.is_set():
                return
            # The stream is started again at the next report tick, on another host.
            self.at += 1
            self.reconnects += 1
            if self.stop.wait(self.interval):
                return

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
