#!/usr/bin/env python3
"""The chaos checkers against hand-made histories: each must catch what it is for."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaoslib import checks  # noqa: E402


def op(start, end, outcome="ok", kind="take", client="c", value=None):
    return (kind, "k", client, 0, start, end, outcome, value)


class OverAdmission(unittest.TestCase):
    def test_limit_plus_one_inside_a_window_is_caught(self):
        ops = [op(i * 0.01, i * 0.01 + 0.001) for i in range(41)]
        self.assertEqual(checks.over_admission(ops, 40, 1.0, 0, 10)[0], 1)

    def test_exactly_the_limit_passes(self):
        ops = [op(i * 0.01, i * 0.01 + 0.001) for i in range(40)]
        self.assertEqual(checks.over_admission(ops, 40, 1.0, 0, 10)[0], 0)

    def test_an_admission_that_may_lie_outside_the_window_does_not_count(self):
        ops = [op(i * 0.01, i * 0.01 + 0.001) for i in range(40)]
        ops.append(op(0.5, 1.2))  # decided somewhere in [0.5, 1.2]: maybe a window later
        self.assertEqual(checks.over_admission(ops, 40, 1.0, 0, 10)[0], 0)

    def test_unknown_outcomes_do_not_count(self):
        ops = [op(i * 0.01, i * 0.01 + 0.001) for i in range(40)] + [op(0.5, 0.51, "info")]
        self.assertEqual(checks.over_admission(ops, 40, 1.0, 0, 10)[0], 0)

    def test_limit_per_window_spread_over_time_passes(self):
        ops = [op(i * 0.025, i * 0.025 + 0.001) for i in range(400)]  # 40/s for 10 s
        self.assertEqual(checks.over_admission(ops, 40, 1.0, 0, 11)[0], 0)


class Bucket(unittest.TestCase):
    def test_burst_then_rate_passes(self):
        ops = [op(0.001 * i, 0.001 * i + 0.0005) for i in range(10)]
        ops += [op(0.05 * i, 0.05 * i + 0.001) for i in range(1, 100)]  # 20/s after the burst
        self.assertEqual(checks.bucket_over_admission(ops, 10, 20, 0, 10)[0], 0)

    def test_a_second_burst_is_caught(self):
        ops = [op(0.001 * i, 0.001 * i + 0.0005) for i in range(10)]
        ops += [op(0.2 + 0.001 * i, 0.2 + 0.001 * i + 0.0005) for i in range(10)]
        self.assertGreater(checks.bucket_over_admission(ops, 10, 20, 0, 10)[0], 0)


class Counters(unittest.TestCase):
    def test_bounds_use_unknowns_and_timed_out_forwards_only_above(self):
        ops = [op(0, 1), op(1, 2), op(2, 3, "info"), op(2, 3, "deny", value="fail_closed"),
               op(2, 3, "deny"), op(4, 5)]
        lower, upper = checks.counter_bounds(ops, 3.5, 3.6)
        self.assertEqual((lower, upper), (2, 4))

    def test_possible_admissions_in_a_stretch(self):
        ops = [op(0, 1), op(0.9, 1.1), op(1.05, 1.2, "info"), op(1.3, 1.4)]
        self.assertEqual(checks.possible_admissions(ops, 1.0, 1.25), 3)


class Leases(unittest.TestCase):
    def acq(self, c, s, e, outcome="ok"):
        return op(s, e, outcome, kind="acq", client=c)

    def rel(self, c, s, e):
        return op(s, e, kind="rel", client=c)

    def test_overlapping_grants_beyond_the_limit_are_caught(self):
        ops = [self.acq("a", 0, 0.1), self.acq("b", 0.2, 0.3), self.rel("a", 1, 1.1),
               self.rel("b", 1, 1.1)]
        self.assertEqual(checks.lease_overlap(ops, 1)[0], 2)

    def test_a_release_before_the_next_grant_frees_the_permit(self):
        ops = [self.acq("a", 0, 0.1), self.rel("a", 0.2, 0.3), self.acq("b", 0.4, 0.5),
               self.rel("b", 1, 1.1), self.acq("c", 0.2, 0.6, "info")]
        self.assertEqual(checks.lease_overlap(ops, 1)[0], 1)


class Availability(unittest.TestCase):
    def test_longest_gap_without_a_definite_answer(self):
        ops = [op(0, 1), op(1, 2, "deny"), op(2, 4.5, "info"), op(2, 3, "deny", value="fail_closed"),
               op(5, 6)]
        self.assertAlmostEqual(checks.unavailability(ops, 0, 6), 4.0)


if __name__ == "__main__":
    unittest.main()
