"""Writes the scale report from floodgate-sim --scale's lines (scale-report runs it).

Python's standard library only. Per cluster size: the median over seeds of each figure,
and detection's p50 and p99 (nearest rank over the seeds' values); the growth of each
figure read off a least-squares line through log(figure) against log(N) over the sizes
from 10 up (N^k: k near 0 is flat or log N, near 1 is N, near 2 is N^2).
"""
import datetime
import math
import sys


def read(path):
    rows = []
    with open(path) as f:
        header = f.readline().split()
        for line in f:
            parts = line.split()
            if not parts or not parts[0].isdigit():
                continue
            # (an error is a quoted phrase: the fields after it are the wall time)
            if '"' in line:
                head, _, rest = line.partition('"')
                err, _, tail = rest.partition('"')
                parts = head.split() + [err] + tail.split()
            rows.append(dict(zip(header, parts)))
    return rows


def num(row, key):
    try:
        return float(row[key])
    except (KeyError, ValueError):
        return float("nan")


def median(xs):
    xs = sorted(x for x in xs if not math.isnan(x))
    if not xs:
        return float("nan")
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def rank(xs, p):
    xs = sorted(x for x in xs if not math.isnan(x))
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, max(0, math.ceil(p * len(xs)) - 1))]


def fmt(v):
    if math.isnan(v):
        return "-"
    return "{:,.0f}".format(v) if abs(v) >= 100 else "%.3g" % v


def growth(ns, ys):
    pts = [(math.log(n), math.log(y)) for n, y in zip(ns, ys) if n >= 10 and y > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else float("nan")


def reading(k):
    if math.isnan(k):
        return "-"
    if k < -0.75:
        return "falls as 1/N (N^%.2f)" % k
    if k < -0.15:
        return "falls (N^%.2f)" % k
    if k < 0.15:
        return "flat (N^%.2f)" % k
    if k < 0.45:
        return "slowly: log N or N^%.2f" % k
    if k < 0.8:
        return "N^%.2f" % k
    if k < 1.3:
        return "about N (N^%.2f)" % k
    if k < 1.75:
        return "N^%.2f" % k
    return "about N^2 (N^%.2f)" % k


def svg(path, title, unit, ns, series):
    """A log-log plot: x the cluster size, one polyline per (name, values)."""
    w, h, l, r, t, b = 640, 400, 80, 170, 40, 50
    ys = [y for _, vals in series for y in vals if y > 0 and not math.isnan(y)]
    if not ys:
        return
    lo, hi = math.log10(min(ys)), math.log10(max(ys))
    if hi - lo < 1:
        lo, hi = lo - 0.5, hi + 0.5
    nlo, nhi = math.log10(min(ns)), math.log10(max(ns))
    if nhi == nlo:
        nhi = nlo + 1

    def x(n):
        return l + (math.log10(n) - nlo) / (nhi - nlo) * (w - l - r)

    def y(v):
        return h - b - (math.log10(v) - lo) / (hi - lo) * (h - t - b)

    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14">%s</text>' % (l, title)]
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (l, h - b, w - r, h - b))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (l, t, l, h - b))
    for n in ns:
        out.append('<text x="%.0f" y="%d" text-anchor="middle">%d</text>' % (x(n), h - b + 16, n))
    out.append('<text x="%d" y="%d" text-anchor="middle">nodes (log)</text>'
               % ((l + w - r) / 2, h - 12))
    for e in range(math.floor(lo), math.ceil(hi) + 1):
        for m in ((1, 2, 5) if hi - lo < 3 else (1,)):
            v = m * 10 ** e
            if lo <= math.log10(v) <= hi:
                out.append('<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#ddd"/>'
                           % (l, y(v), w - r, y(v)))
                out.append('<text x="%d" y="%.0f" text-anchor="end">%g</text>'
                           % (l - 6, y(v) + 4, v))
    out.append('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>'
               % ((t + h - b) / 2, (t + h - b) / 2, unit))
    for i, (name, vals) in enumerate(series):
        c = colours[i % len(colours)]
        pts = ["%.1f,%.1f" % (x(n), y(v)) for n, v in zip(ns, vals) if v > 0 and not math.isnan(v)]
        if not pts:
            continue
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                   % (c, " ".join(pts)))
        for p in pts:
            px, py = p.split(",")
            out.append('<circle cx="%s" cy="%s" r="3" fill="%s"/>' % (px, py, c))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (w - r + 8, t + 16 * (i + 1), c, name))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    src, outdir, command, machine = sys.argv[1:5]
    rows = read(src)
    failed = [r for r in rows if r.get("error", "-") != "-"]
    by_n = {}
    for r in rows:
        if r.get("error", "-") == "-":
            by_n.setdefault(int(r["nodes"]), []).append(r)
    ns = sorted(by_n)
    med = {k: [median([num(r, k) for r in by_n[n]]) for n in ns] for k in rows[0].keys()
           if k not in ("nodes", "seed", "error")} if rows else {}
    p50 = [rank([num(r, "detect_ms") for r in by_n[n]], 0.5) for n in ns]
    p99 = [rank([num(r, "detect_ms") for r in by_n[n]], 0.99) for n in ns]
    seeds = {n: len(by_n[n]) for n in ns}

    cols = [("gossip_rest", "gossip B/node/s, rest"), ("gossip_load", "gossip B/node/s, load"),
            ("peer_load", "peer B/node/s, load"), ("heap_per_node", "heap B/node"),
            ("cpu_rest_us", "CPU µs/node/s, rest"), ("cpu_load_us", "CPU µs/node/s, load"),
            ("failover_ms", "kill → failover table everywhere, ms"),
            ("view_s", "start → every node knows every node, s"),
            ("join_keys", "keys a join moves"), ("join_bytes", "bytes a join moves"),
            ("leave_keys", "keys a leave moves"), ("join_ms", "join → table everywhere, ms"),
            ("largest_datagram", "largest gossip datagram, bytes")]
    lines = ["# How a Floodgate cluster grows: the scale report", "",
             "Made %s by `%s` on %s (this file and its plots are its output; the raw lines "
             "are in `figures.txt`). Every figure is the simulator's: N real nodes in one "
             "process, in virtual time (`tests/sim/README` in `tests/README.md`, \"The "
             "simulator\"; the run is `tests/sim/scale.cpp`). Bytes are payloads on the "
             "in-memory networks (a UDP datagram adds 28 bytes of headers, a TCP peer frame "
             "a few); CPU is this process's real CPU per simulated second, divided by N "
             "(every node runs on one thread here, with 2 shards each); heap is the growth of "
             "malloc's in-use bytes from before the nodes started to the formed cluster, "
             "divided by N (a whole node: shards, tables, membership, buffers)."
             % (datetime.date.today().isoformat(), command, machine), "",
             "The load: 20,000 limiter keys (`fixed_window`, one day) made through every "
             "node, then 2,000 requests a second through random nodes on random keys (a "
             "light load on purpose: it is upkeep that grows with N, not the request path). "
             "Then the highest-numbered node is killed, a new node joins, and a random node "
             "leaves gracefully.", ""]
    lines.append("| nodes | seeds | " + " | ".join(c[1] for c in cols)
                 + " | detection p50 / p99, ms |")
    lines.append("|" + "---|" * (len(cols) + 3))
    for i, n in enumerate(ns):
        vals = [fmt(med[c[0]][i]) for c in cols]
        lines.append("| %d | %d | %s | %.0f / %.0f |" % (n, seeds[n], " | ".join(vals), p50[i], p99[i]))
    lines += ["", "## Growth, read off the table (sizes from 10 up)", "",
              "| figure | grows as |", "|---|---|"]
    for key, name in cols:
        lines.append("| %s | %s |" % (name, reading(growth(ns, med[key]))))
    lines.append("| detection p50, ms | %s |" % reading(growth(ns, p50)))
    if failed:
        lines += ["", "## Runs that did not finish", ""]
        for r in failed:
            lines.append("- %s nodes, seed %s: %s" % (r["nodes"], r["seed"], r["error"]))
    lines.append("")
    with open(outdir + "/REPORT.md", "w") as f:
        f.write("\n".join(lines))
    svg(outdir + "/bytes.svg", "Bytes per node per second", "bytes/node/s", ns,
        [("gossip, rest", med["gossip_rest"]), ("gossip, load", med["gossip_load"]),
         ("peer links, load", med["peer_load"])])
    svg(outdir + "/detection.svg", "A killed node: detection and failover", "ms", ns,
        [("detect p50", p50), ("detect p99", p99), ("failover table", med["failover_ms"])])
    svg(outdir + "/cpu.svg", "Cluster upkeep: CPU per node per second", "µs/node/s", ns,
        [("at rest", med["cpu_rest_us"]), ("under load", med["cpu_load_us"])])
    svg(outdir + "/memory.svg", "Heap per node, and the largest gossip datagram", "bytes", ns,
        [("heap per node", med["heap_per_node"]), ("largest datagram", med["largest_datagram"])])
    svg(outdir + "/moves.svg", "What a join and a leave move", "keys / bytes", ns,
        [("join keys", med["join_keys"]), ("join bytes", med["join_bytes"]),
         ("leave keys", med["leave_keys"])])


if __name__ == "__main__":
    main()
