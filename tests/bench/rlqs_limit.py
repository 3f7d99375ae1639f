"""Gateways on one global limit through the quota service, as Envoy's filter enforces it:
`n` models of its rate_limit_quota filter (tests/rls/envoy_filter.py, written from Envoy's
code) streaming to the nodes given in turn, one fixed window of LIMIT per WINDOW s, offered
`rates` requests a second each for `seconds`. Prints one line: the windows measured (whole
ones, after the first 6 s: the first reports), the most admitted in one against the limit,
the share of the limit admitted, and the least a light gateway (offered under an even
share) was served against what it asked. Run by tests/bench/run-rlqs-bench."""
import sys
import threading
import time

import grpc

from envoy_filter import Filter, windows

LIMIT, WINDOW = 100, 2.0


class Node:
    def __init__(self, target):
        self.channel = grpc.insecure_channel(target)


def main():
    targets, domain = sys.argv[1].split(","), sys.argv[2]
    rates = [float(r) for r in sys.argv[3].split(",")]
    seconds, default = float(sys.argv[4]), (sys.argv[5] if len(sys.argv) > 5 else None)
    nodes = [Node(t) for t in targets]
    tenant = "t%d" % int(time.time() * 1000)
    fs = [Filter(nodes, i, domain, {"name": "api", "tenant": tenant}, no_assignment=default)
          for i in range(len(rates))]
    for f in fs:
        f.thread.start()
    t0 = time.time()
    threads = [threading.Thread(target=f.traffic, args=(r, seconds)) for f, r in zip(fs, rates)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for f in fs:
        f.stop.set()
    since = t0 + 6.0
    admitted = windows([t for f in fs for t in f.admitted if t >= since], WINDOW)
    full = [w for w in sorted(admitted) if w * WINDOW >= since][:-1]
    span = WINDOW * len(full)
    even = LIMIT / WINDOW / len(rates)
    light = [len([t for t in f.admitted if since <= t < since + span]) / span / r
             for f, r in zip(fs, rates) if r < even] or [1.0]
    most = max(admitted[w] for w in full)
    used = sum(admitted[w] for w in full) / (LIMIT * len(full))
    print("windows %d most %d limit %d used %.3f light_served %.3f" % (
        len(full), most, LIMIT, used, min(light)))
    for f in fs:
        f.thread.join(2)


if __name__ == "__main__":
    main()
