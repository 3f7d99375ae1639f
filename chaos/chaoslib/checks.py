"""Checkers over a recorded history. Client timestamps bracket the moment a node decided:
an admission counts toward a window only when both its start and end fall inside it, and an
operation with an unknown outcome ("info") counts only toward upper bounds."""
import bisect

OK, DENY, FAIL, INFO = "ok", "deny", "fail", "info"
# A node's clock follows a stepped wall clock by slewing up to 500 ppm (actors/clock.hpp),
# as NTP does: a limit of L per W then holds in node time, i.e. within W * (1 - 500e-6) of
# real time. Windows are judged at that length.
CLOCK_RATE_TOLERANCE = 500e-6


def maybe_counted(o):
    """Could this operation have changed a limiter? Admissions, unknown outcomes, and the
    fail_open / fail_closed answers a node gives when a forward to the owner timed out (the
    owner may have counted it)."""
    return o[6] in (OK, INFO) or o[7] in ("fail_closed", "fail_open")


def over_admission(ops, limit, window_s, t_from, t_to):
    """Most definite admissions in any window of `window_s` inside [t_from, t_to], minus
    `limit` (0 when the limit held), and where that window starts."""
    window_s *= 1 - CLOCK_RATE_TOLERANCE
    adm = sorted((o[4], o[5]) for o in ops if o[6] == OK and o[4] >= t_from and o[5] <= t_to)
    starts = [a[0] for a in adm]
    worst, at = 0, None
    for i, (t, _) in enumerate(adm):
        j_end = bisect.bisect_left(starts, t + window_s, lo=i)
        n = sum(1 for k in range(i, j_end) if adm[k][1] < t + window_s)
        if n - limit > worst:
            worst, at = n - limit, t
    return worst, at


def bucket_over_admission(ops, burst, rate_per_s, t_from, t_to, horizon_s=10.0):
    """Token bucket: at most burst + rate * tau admissions in any interval of length tau.
    Returns the largest excess (0 when it held) over intervals up to `horizon_s` long that
    start at an admission's start and end at another's end, inside [t_from, t_to]."""
    adm = sorted((o[4], o[5]) for o in ops if o[6] == OK and o[4] >= t_from and o[5] <= t_to)
    rate = rate_per_s * (1 + CLOCK_RATE_TOLERANCE)
    worst, at = 0, None
    for i, (t1, _) in enumerate(adm):
        ends = sorted(e for s, e in adm[i:] if s < t1 + horizon_s)
        for n, t2 in enumerate(ends, start=1):
            excess = n - (burst + int(rate * (t2 - t1)))
            if excess > worst:
                worst, at = excess, t1
    return worst, at


def possible_admissions(ops, t_from, t_to):
    """Upper bound on what was counted within [t_from, t_to]: every operation that may have
    been counted whose interval meets it."""
    return sum(1 for o in ops if maybe_counted(o) and o[4] <= t_to and o[5] >= t_from)


def counter_bounds(ops, read_start, read_end):
    """What a counter read must lie between: definite admissions completed before the read
    began, and every admission that may have happened before it ended."""
    lower = sum(1 for o in ops if o[6] == OK and o[5] < read_start)
    upper = sum(1 for o in ops if maybe_counted(o) and o[4] < read_end)
    return lower, upper


def unavailability(ops, t_from, t_to):
    """Longest stretch inside [t_from, t_to] with no definite answer from the cluster
    (errors, timeouts, refused connections and fail_closed replies do not count)."""
    ends = sorted(o[5] for o in ops if o[6] in (OK, DENY) and o[7] is None and
                  t_from <= o[5] <= t_to)
    points = [t_from] + ends + [t_to]
    return max((b - a for a, b in zip(points, points[1:])), default=0.0)


def lease_overlap(ops, limit):
    """Most permits definitely held at once: a granted lease is live from the end of its
    acquire to the start of its release (or to the end of the run when never released)."""
    by_client = {}
    for o in sorted(ops, key=lambda o: o[4]):
        if o[0] in ("acq", "rel"):
            by_client.setdefault(o[2], []).append(o)
    marks = []
    for seq in by_client.values():
        for i, o in enumerate(seq):
            if o[0] != "acq" or o[6] != OK:
                continue
            rel = next((r for r in seq[i + 1:] if r[0] == "rel"), None)
            end = rel[4] if rel else float("inf")
            if end > o[5]:
                marks += [(o[5], 1), (end, -1)]
    live = worst = 0
    at = None
    for t, d in sorted(marks, key=lambda m: (m[0], m[1])):
        live += d
        if live > worst:
            worst, at = live, t
    return worst, at


def admitted_series(ops, window_s, t_end, step_s=0.1):
    """(t, admissions certainly inside the trailing window) every step, for the picture:
    the same count the checker uses, so the line crosses the limit only on a real
    over-admission (counting by reply time alone would, whenever replies bunch up)."""
    adm = sorted((o[4], o[5]) for o in ops if o[6] == OK)
    starts = [a[0] for a in adm]
    w = window_s * (1 - CLOCK_RATE_TOLERANCE)
    out, t = [], window_s
    while t <= t_end:
        lo, hi = bisect.bisect_left(starts, t - w), bisect.bisect_right(starts, t)
        out.append((round(t, 2), sum(1 for k in range(lo, hi) if adm[k][1] <= t)))
        t += step_s
    return out


class Verdict:
    """The checks of one scenario: each a name, pass/fail, the measured figure and the
    bound it was held to."""

    def __init__(self):
        self.checks = []
        self.figures = {}

    def check(self, name, ok, figure=None, bound=None, detail=""):
        self.checks.append({"name": name, "pass": bool(ok), "figure": figure, "bound": bound,
                            "detail": detail})
        return ok

    def figure(self, name, value):
        self.figures[name] = value

    @property
    def passed(self):
        return all(c["pass"] for c in self.checks)
