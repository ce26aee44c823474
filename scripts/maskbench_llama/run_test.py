#!/usr/bin/env python3
"""Checks run.py's figures against TestMaskBench's rules (python3 run_test.py)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import aggregate, pct  # noqa: E402


class AggregateTest(unittest.TestCase):
    def test_pct_matches_go(self):
        # TestMaskBench: sorted d[min(n-1, int(p*n))]
        self.assertEqual(pct([], 0.5), 0)
        self.assertEqual(pct([3, 1, 2, 4], 0.5), 3)
        self.assertEqual(pct([3, 1, 2, 4], 0.99), 4)

    def test_aggregate(self):
        results = [
            {"compiled": True, "compile_us": 10.0, "tests": [(True, True), (False, False)], "mask_ns": [1000, 3000]},
            {"compiled": True, "compile_us": 20.0, "tests": [(True, False), (True, False)], "mask_ns": [2000]},
            {"compiled": True, "compile_us": 30.0, "tests": [(False, True)], "mask_ns": []},
            {"compiled": False, "compile_us": None, "tests": [], "mask_ns": []},
        ]
        fig = aggregate(results)
        want = {"schemas": 4, "passed": 1, "compile_errors": 1, "validation_errors": 2, "invalidation_errors": 1, "masks": 3}
        self.assertEqual({k: fig[k] for k in want}, want)
        self.assertEqual(fig["compile_us"]["p50"], 20.0)
        self.assertEqual(fig["mask_us"]["p50"], 2.0)


if __name__ == "__main__":
    unittest.main()
