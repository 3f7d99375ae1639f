"""The gateway port against whoever can reach it: raw HTTP/2 written by hand (no client
library that would refuse to misbehave) — CONTINUATION floods, rapid resets, streams opened
past the stated limit before the SETTINGS are acknowledged, headers past their bound, bytes
that are no HTTP/2, a call without the token — each held while another gateway's calls are
answered and the node's memory stays where it was. Run by tests/rls/run."""
import os
import socket
import tempfile
import threading
import time
import unittest
import uuid

import grpc
from envoy.service.rate_limit_quota.v3 import rlqs_pb2

import rls_test as base

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST, SETTINGS, PING, GOAWAY, CONTINUATION = 0, 1, 3, 4, 6, 7, 9
END_STREAM, END_HEADERS, ACK = 1, 4, 1
RLS_PATH = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
RLQS_PATH = "/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas"


def frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + \
        stream.to_bytes(4, "big") + payload


def hpack_int(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def literal(name, value):
    """A header field as HPACK's literal without indexing, new name (no Huffman)."""
    n, v = name.encode(), value.encode() if isinstance(value, str) else value
    return b"\x00" + hpack_int(len(n), 7) + n + hpack_int(len(v), 7) + v


def call_headers(token=None, path=RLS_PATH):
    block = literal(":method", "POST") + literal(":scheme", "http") + \
        literal(":path", path) + literal(":authority", "x") + \
        literal("content-type", "application/grpc") + literal("te", "trailers")
    if token:
        block += literal("authorization", "Bearer " + token)
    return block


class Raw:
    """One HTTP/2 connection written by hand (from `source`, an address of 127/8)."""

    def __init__(self, port, settings_ack=True, source="127.0.0.1"):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5,
                                          source_address=(source, 0))
        self.s.sendall(PREFACE + frame(SETTINGS, 0, 0))
        self.buf = b""
        self.settings_ack = settings_ack

    def send(self, data):
        try:
            self.s.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
            return False

    def frames(self, wait=0.5):
        """The frames that arrive within `wait` seconds; None once the connection closed."""
        self.s.settimeout(wait)
        out, until = [], time.time() + wait
        while time.time() < until:
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                break
            except (ConnectionResetError, OSError):
                return None if not out else out + [None]
            if not chunk:
                return None if not out else out + [None]
            self.buf += chunk
            while len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + n:
                    break
                f = (self.buf[3], self.buf[4], int.from_bytes(self.buf[5:9], "big") & 0x7fffffff,
                     self.buf[9:9 + n])
                self.buf = self.buf[9 + n:]
                if f[0] == SETTINGS and not (f[1] & ACK) and self.settings_ack:
                    self.send(frame(SETTINGS, ACK, 0))
                out.append(f)
        return out

    def call(self, sid, message, token=None):
        """A unary ShouldRateLimit call on stream `sid`; its answer (a RateLimitResponse), or
        None when none came."""
        body = message.SerializeToString()
        self.send(frame(HEADERS, END_HEADERS, sid, call_headers(token)) +
                  frame(DATA, END_STREAM, sid, b"\x00" + len(body).to_bytes(4, "big") + body))
        data = b""
        for _ in range(20):
            got = self.frames(0.25)
            if got is None:
                return None
            for f in got:
                if f and f[0] == DATA and f[2] == sid:
                    data += f[3]
            if len(data) >= 5 and len(data) >= 5 + int.from_bytes(data[1:5], "big"):
                return base.rls_pb2.RateLimitResponse.FromString(data[5:])
        return None

    def close(self):
        self.s.close()


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Attacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="h2-")
        cls.domain = "h" + uuid.uuid4().hex[:8]
        with open(os.path.join(cls.dir, "rls.yaml"), "w") as f:
            f.write(f"domain: {cls.domain}\ndescriptors:\n  - key: k\n    rate_limit: "
                    "{unit: hour, requests_per_unit: 1000000}\n")
        with open(os.path.join(cls.dir, "token"), "w") as f:
            f.write("s3cret\n")
        cls.node = base.Node(cls.dir, ["--rls-token-file", os.path.join(cls.dir, "token"),
                                       "--query-deadline-ms", "3000"])
        cls.node.wait_serving()
        cls.md = [("authorization", "Bearer s3cret")]

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def gateway_answered(self):
        """Another gateway's call, answered within its 2 s."""
        try:
            r = self.node.call(base.request(self.domain, [("k", "v")], hits=1), timeout=2,
                               metadata=self.md)
            return r.overall_code == base.OK
        except grpc.RpcError:
            return False

    def under_attack(self, attack, seconds):
        """Runs `attack(stop)` in a thread for `seconds` while a real gateway calls every
        50 ms: how many of its calls were answered, of how many, and the node's RSS growth."""
        before = rss_kb(self.node.proc.pid)
        stop = threading.Event()
        t = threading.Thread(target=attack, args=(stop,))
        t.start()
        answered = asked = 0
        peak = before
        until = time.time() + seconds
        while time.time() < until:
            asked += 1
            answered += 1 if self.gateway_answered() else 0
            peak = max(peak, rss_kb(self.node.proc.pid))
            time.sleep(0.05)
        stop.set()
        t.join(10)
        self.assertIsNone(self.node.proc.poll(), "the node died")
        return answered, asked, peak - before

    def test_a_continuation_flood_is_cut_off_before_the_token_is_read(self):
        """HEADERS without END_HEADERS, then CONTINUATION frames without end (CVE-2023-33953,
        CVE-2024-28182): the connection is closed after a few frames, again and again."""
        closed = [0]

        def attack(stop):
            while not stop.is_set():
                r = Raw(self.node.rls_port)
                r.send(frame(HEADERS, 0, 1, call_headers()))
                junk = literal("x-pad", "a" * 16000)
                for _ in range(2000):
                    if stop.is_set() or not r.send(frame(CONTINUATION, 0, 1, junk)):
                        break
                if r.frames(0.2) is None or not r.send(frame(CONTINUATION, 0, 1, junk)):
                    closed[0] += 1
                r.close()

        answered, asked, grew_kb = self.under_attack(attack, 6)
        self.assertGreater(closed[0], 3)
        self.assertGreaterEqual(answered, asked - 1)
        self.assertLess(grew_kb, 64 * 1024)  # (was 2.4 GB on one connection)

    def test_a_rapid_reset_flood_gets_a_goaway(self):
        """Streams opened and reset at once, by the thousand (CVE-2023-44487): GOAWAY, and the
        other gateway goes on being answered."""
        goaways = [0]

        def attack(stop):
            while not stop.is_set():
                r = Raw(self.node.rls_port)
                sid, batch = 1, b""
                for _ in range(5000):
                    batch += frame(HEADERS, END_HEADERS, sid, call_headers("s3cret")) + \
                        frame(RST, 0, sid, (8).to_bytes(4, "big"))
                    sid += 2
                    if len(batch) > 64 * 1024:
                        if not r.send(batch):
                            break
                        batch = b""
                got = r.frames(1) or []
                if any(f and f[0] == GOAWAY for f in got):
                    goaways[0] += 1
                r.close()

        answered, asked, grew_kb = self.under_attack(attack, 6)
        self.assertGreater(goaways[0], 0)
        self.assertGreaterEqual(answered, asked - 1)
        self.assertLess(grew_kb, 64 * 1024)  # (was +1.3 GB)

    def test_streams_past_the_limit_are_refused_before_the_settings_are_acknowledged(self):
        """A client that never acknowledges the server's SETTINGS still has at most 1000
        streams open (5,000 a connection were opened before)."""
        r = Raw(self.node.rls_port, settings_ack=False)
        sid, batch = 1, b""
        for _ in range(3000):  # (open: no END_STREAM, no DATA)
            batch += frame(HEADERS, END_HEADERS, sid, call_headers("s3cret"))
            sid += 2
        r.send(batch)
        got = r.frames(2) or []
        refused = sum(1 for f in got if f and f[0] == RST)
        goaway = any(f and f[0] == GOAWAY for f in got)
        r.close()
        self.assertTrue(refused >= 2000 or goaway, (refused, goaway))
        self.assertTrue(self.gateway_answered())

    def test_headers_past_their_bound_reset_the_stream(self):
        r = Raw(self.node.rls_port)
        block = call_headers("s3cret") + literal("x-big", "b" * 15000) + \
            literal("x-big2", "c" * 15000)
        # (split in frames of 16 KB: HEADERS, then CONTINUATION)
        parts = [block[i:i + 16000] for i in range(0, len(block), 16000)]
        data = frame(HEADERS, END_HEADERS if len(parts) == 1 else 0, 1, parts[0])
        for i, p in enumerate(parts[1:], 1):
            data += frame(CONTINUATION, END_HEADERS if i == len(parts) - 1 else 0, 1, p)
        r.send(data)
        got = r.frames(1) or []
        r.close()
        self.assertTrue(any(f and f[0] in (RST, GOAWAY) for f in got), got)
        self.assertTrue(self.gateway_answered())

    def test_bytes_that_are_no_http2_close_the_connection(self):
        s = socket.create_connection(("127.0.0.1", self.node.rls_port), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 10)
        s.settimeout(3)
        try:
            rest = s.recv(65536)
            while rest:
                rest = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            pass
        s.close()
        self.assertTrue(self.gateway_answered())
        self.assertGreater(base.metric(self.node.metrics(), "floodgate_rls_refused_total",
                                       'reason="protocol"'), 0)

    def test_a_call_without_the_token_ends_its_connection(self):
        """Checked when the call's headers are whole, before its message is read: answered
        UNAUTHENTICATED, and the connection gets GOAWAY (nothing further is served on it)."""
        r = Raw(self.node.rls_port)
        r.send(frame(HEADERS, END_HEADERS, 1, call_headers()))
        got = r.frames(1)
        # (then a call with the token on the same connection: never answered)
        r.send(frame(HEADERS, END_HEADERS, 3, call_headers("s3cret")) +
               frame(DATA, END_STREAM, 3, b"\x00\x00\x00\x00\x00"))
        later = r.frames(1) or []
        r.close()
        self.assertIsNotNone(got)
        # The answer: trailers only (one HEADERS frame that ends the stream)...
        heads = [f for f in got if f and f[0] == HEADERS and f[2] == 1]
        self.assertTrue(heads and heads[0][1] & END_STREAM, got)
        # ...then GOAWAY, and nothing for the next call.
        self.assertTrue(any(f and f[0] == GOAWAY for f in got) or got[-1] is None, got)
        self.assertFalse([f for f in later if f and f[2] == 3], later)
        # (its words, through a real client: UNAUTHENTICATED, naming the token it wants)
        try:
            self.node.call(base.request(self.domain, [("k", "v")]), timeout=2)
            self.fail("answered without the token")
        except grpc.RpcError as e:
            self.assertEqual(e.code(), grpc.StatusCode.UNAUTHENTICATED)
            self.assertIn("Bearer", e.details())

    def test_its_connections_are_clients_with_their_memory_counted(self):
        r = Raw(self.node.rls_port)
        # Half a message of 1 MiB, held while it arrives: counted in the client's memory.
        body = (1 << 20).to_bytes(4, "big")
        r.send(frame(HEADERS, END_HEADERS, 1, call_headers("s3cret")) +
               frame(DATA, 0, 1, b"\x00" + body + b"x" * 16000) +
               frame(DATA, 0, 1, b"x" * 16000) + frame(DATA, 0, 1, b"x" * 16000))
        r.frames(0.5)
        lines = [l for l in base.cli(self.node.port, "CLIENT", "LIST").splitlines()
                 if "door=rls" in l]
        r.close()
        self.assertTrue(lines)
        mem = max(int(l.split("tot-mem=")[1].split()[0]) for l in lines)
        self.assertGreater(mem, 40000)


def report(domain, buckets):
    """A RateLimitQuotaUsageReports naming `buckets` (dicts), gRPC-framed."""
    r = rlqs_pb2.RateLimitQuotaUsageReports(domain=domain)
    for n, b in enumerate(buckets):
        u = r.bucket_quota_usages[n + 1]  # (upstream's map, keyed by the id's hash)
        u.bucket_id.bucket.update(b)
        u.num_requests_allowed = 1
    body = r.SerializeToString()
    return b"\x00" + len(body).to_bytes(4, "big") + body


class Quota(unittest.TestCase):
    """The quota service's streams against a gateway that never reads: what the node holds
    for one is bounded, whatever it reports."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="h2-quota-")
        cls.domain = "q" + uuid.uuid4().hex[:8]
        with open(os.path.join(cls.dir, "rls.yaml"), "w") as f:
            f.write(f"domain: {cls.domain}\nbuckets:\n  - bucket: {{name: api, tenant: \"*\"}}\n"
                    "    rate_limit: {unit: second, requests_per_unit: 1000000}\n")
        cls.node = base.Node(cls.dir, ["--rls-max-keys-per-domain", "1000000"])
        cls.node.wait_serving()

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def flood(self, make_buckets, seconds):
        """One connection's stream sent reports `make_buckets(i)` for `seconds`, never
        reading: the node's RSS growth (KB), and whether the stream was ended."""
        before = rss_kb(self.node.proc.pid)
        peak = before
        r = Raw(self.node.rls_port)
        r.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        r.send(frame(HEADERS, END_HEADERS, 1, call_headers(path=RLQS_PATH)))
        until, i, sent = time.time() + seconds, 0, True
        while time.time() < until and sent:
            msg = report(self.domain, make_buckets(i))
            for at in range(0, len(msg), 16000):
                sent = sent and r.send(frame(DATA, 0, 1, msg[at:at + 16000]))
            i += 1
            peak = max(peak, rss_kb(self.node.proc.pid))
            time.sleep(0.05)
        time.sleep(1.5)  # (a period's extensions made for every bucket, not written)
        peak = max(peak, rss_kb(self.node.proc.pid))
        r.close()
        return peak - before

    def test_a_stream_that_never_reads_holds_one_action_a_bucket(self):
        """Two hundred buckets of 3.9 KB ids, assigned and extended every period, to a gateway
        that reads nothing: each bucket's newest action replaces the one not written, so what
        the connection holds stays put from period to period (it was 1 GB in 3 s, every
        period's answer queued)."""
        tenants = [uuid.uuid4().hex * 122 for _ in range(200)]  # (3.9 KB each: 780 KB)
        r = Raw(self.node.rls_port)
        r.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        r.send(frame(HEADERS, END_HEADERS, 1, call_headers(path=RLQS_PATH)))
        msg = report(self.domain, [{"name": "api", "tenant": t} for t in tenants])
        for at in range(0, len(msg), 16000):
            r.send(frame(DATA, 0, 1, msg[at:at + 16000]))

        def held():
            lines = [l for l in base.cli(self.node.port, "CLIENT", "LIST").splitlines()
                     if "door=rls" in l]
            return max(int(l.split("tot-mem=")[1].split()[0]) for l in lines)

        time.sleep(2.5)
        first = held()
        time.sleep(3)  # (three more periods: every bucket extended three times)
        later = held()
        r.close()
        self.assertGreater(first, 1 << 20)  # (its ids and answers, counted)
        self.assertLess(later - first, 1 << 20, (first, later))
        self.assertIsNone(self.node.proc.poll())

    def test_abandons_never_pile_up(self):
        """Fresh unknown buckets in every report (each answered with an abandon echoing its
        id), never read: within the connection's 32 MB, then the stream ends."""
        grew = self.flood(lambda i: [{"name": "nope", "x": uuid.uuid4().hex * 60}
                                     for _ in range(500)], 4)
        self.assertLess(grew, 96 * 1024, "KB")

    def test_a_bucket_id_past_4kb_and_the_17th_stream_are_refused(self):
        ch = grpc.insecure_channel(f"127.0.0.1:{self.node.rls_port}")
        stream = ch.stream_stream(RLQS_PATH,
                                  request_serializer=rlqs_pb2.RateLimitQuotaUsageReports.SerializeToString,
                                  response_deserializer=rlqs_pb2.RateLimitQuotaResponse.FromString)
        big = rlqs_pb2.RateLimitQuotaUsageReports(domain=self.domain)
        big.bucket_quota_usages[1].bucket_id.bucket.update({"name": "api", "tenant": "t" * 5000})
        with self.assertRaises(grpc.RpcError) as e:
            for _ in stream(iter([big]), timeout=5):
                pass
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("4096 bytes", e.exception.details())
        ch.close()
        r = Raw(self.node.rls_port)
        data = b""
        for i in range(17):
            data += frame(HEADERS, END_HEADERS, 1 + 2 * i, call_headers(path=RLQS_PATH))
        r.send(data)
        got = r.frames(1) or []
        r.close()
        ended = [f for f in got if f and f[0] == HEADERS and f[2] == 33 and f[1] & END_STREAM]
        self.assertTrue(ended, got)  # (the 17th: trailers only, RESOURCE_EXHAUSTED)


class Keys(unittest.TestCase):
    """A domain's counters bounded per caller: one gateway making counters with a year's
    window as fast as it can fills the domain, then churns its own; the others' counters stay,
    and a new client is served (its peer address is its identity: sources of 127/8)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="h2-keys-")
        cls.domain = "k" + uuid.uuid4().hex[:8]
        with open(os.path.join(cls.dir, "rls.yaml"), "w") as f:
            f.write(f"domain: {cls.domain}\ndescriptors:\n  - key: own\n    rate_limit: "
                    "{unit: hour, requests_per_unit: 5}\n")
        cls.node = base.Node(cls.dir, ["--rls-max-keys-per-domain", "50"])
        cls.node.wait_serving()

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def own(self, value):  # a descriptor with a limit of its own (5 a YEAR): its own counter
        return base.request(self.domain, {"entries": [("own", value)], "limit": (5, 6)}, hits=1)

    def test_a_caller_filling_its_domain_churns_its_own_counters(self):
        good = Raw(self.node.rls_port, source="127.0.0.3")
        for i in range(5):  # (the good gateway's counters: each used once)
            r = good.call(1 + 2 * i, self.own(f"good{i}"))
            self.assertIsNotNone(r)
            self.assertEqual(r.overall_code, base.OK)
        for i in range(300):  # the attacker: fresh values, a year each
            self.node.call(self.own(f"x{i}"), timeout=5)
        newcomer = Raw(self.node.rls_port, source="127.0.0.2")
        r = newcomer.call(1, self.own("new"))
        self.assertIsNotNone(r)
        self.assertEqual(r.overall_code, base.OK)  # (served: not refused for a year)
        # The good gateway's counters kept their counts: four more each, then over.
        sid = 11
        for i in range(5):
            for n in range(5):
                r = good.call(sid, self.own(f"good{i}"))
                sid += 2
                self.assertEqual(r.overall_code, base.OK if n < 4 else base.OVER, (i, n))
        good.close()
        newcomer.close()
        self.assertGreater(base.metric(self.node.metrics(), "floodgate_rls_keys_evicted_total", ""),
                           240)


if __name__ == "__main__":
    unittest.main()
