"""Gateways deciding from the quota service's assignments as fast as they can: `filters`
models of Envoy's rate_limit_quota filter (tests/rls/envoy_filter.py) on one bucket, each
deciding in a loop for `seconds`, streaming to the nodes given in turn. Prints
"decisions N allowed A assignments S". Run by tests/bench/run-rlqs-bench."""
import sys
import threading
import time

import grpc

from envoy_filter import Filter


class Node:
    def __init__(self, target):
        self.channel = grpc.insecure_channel(target)


def main():
    targets, domain, bucket = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    filters, seconds = int(sys.argv[4]), float(sys.argv[5])
    nodes = [Node(t) for t in targets]
    fs = [Filter(nodes, i, domain, {"name": bucket}) for i in range(filters)]
    for f in fs:
        f.thread.start()
        f.decide(time.time())  # (the first request makes the bucket and opens its stream)
    deadline = time.time() + 10
    while time.time() < deadline and not all(f.assignments for f in fs):
        time.sleep(0.05)
    counts = [0] * filters

    def decide(i):
        f, end, n = fs[i], time.time() + seconds, 0
        while True:
            for _ in range(1000):
                f.decide(time.time())
            n += 1000
            if time.time() >= end:
                break
        counts[i] = n

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(filters)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for f in fs:
        f.stop.set()
    allowed = sum(len(f.admitted) for f in fs)
    print("decisions %d allowed %d assignments %d" % (
        sum(counts), allowed, sum(len(f.assignments) for f in fs)))
    for f in fs:
        f.thread.join(2)


if __name__ == "__main__":
    main()
