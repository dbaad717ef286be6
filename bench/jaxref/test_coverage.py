"""Tests of robustness.coverage: the intervals' coverage of the truth, robust and Hessian."""

import math
import unittest

from robustness import coverage


class CoverageTest(unittest.TestCase):
    def test_counts_each_kind_and_parameter(self):
        truth = {"s1": {"a": 0.01, "b": 2.0}, "s2": {"a": 0.1, "b": 3.0}}
        recs = [
            # a (log10): truth -2 inside [-2.1, -1.9]; Hessian -2.05 ± 1.96·0.01 misses it.
            # b (linear): truth 2 outside [2.1, 2.5]; Hessian 2.3 ± 1.96·0.2 holds it.
            {"subject": "s1", "fitted": ["a", "b", "temperature"], "scale": {"a": "log10", "b": "linear"},
             "params": {"a": 10 ** -2.05, "b": 2.3, "temperature": 1e-6},
             "ci95_scaled": {"a": [-2.1, -1.9], "b": [2.1, 2.5], "temperature": [-7, -5]},
             "stderr_hessian_scaled": {"a": 0.01, "b": 0.2, "temperature": 0.5}},
            # uncertainty hessian: its stderr_scaled is the Hessian's; b is not fitted.
            {"subject": "s2", "fitted": ["a"], "scale": {"a": "log10"}, "uncertainty": "hessian",
             "params": {"a": 0.1}, "ci95_scaled": {"a": [-1.2, -0.8]}, "stderr_scaled": {"a": 0.1}},
            {"subject": "s2", "fitted": ["a"], "params": None},  # a failed fit
        ]
        c = coverage(truth, recs)
        self.assertEqual((c["printed"]["covered"], c["printed"]["total"]), (2, 3))
        self.assertEqual((c["hessian"]["covered"], c["hessian"]["total"]), (2, 3))
        self.assertEqual(c["printed"]["per_param"], {"a": 1.0, "b": 0.0})
        self.assertEqual(c["hessian"]["per_param"], {"a": 0.5, "b": 1.0})
        self.assertAlmostEqual(c["printed"]["median_width"], 0.4)
        self.assertTrue(math.isclose(c["hessian"]["median_width"], 2 * 1.96 * 0.1))
        # z: (centre − truth) / se; for a, s1 (-2.0 - -2) / (0.2 / 3.92) = 0 and s2 0.
        self.assertAlmostEqual(c["printed"]["z"]["a"]["mean"], 0.0)
        self.assertAlmostEqual(c["printed"]["z"]["b"]["mean"], 0.3 / (0.4 / 3.92))
        self.assertIsNone(c["printed"]["z"]["b"]["sd"])
        self.assertAlmostEqual(c["hessian"]["z"]["a"]["mean"], ((-2.05 + 2) / 0.01 + 0) / 2)
        self.assertNotIn("robust", c)  # neither record is robust's nor the bootstrap's

    def test_robust_from_bootstrap_and_robust_records(self):
        truth = {"s1": {"a": 0.01}, "s2": {"a": 0.1}}
        recs = [
            # the bootstrap's record: robust -2.05 ± 1.96·0.03 holds -2; printed misses it.
            {"subject": "s1", "fitted": ["a"], "scale": {"a": "log10"}, "uncertainty": "bootstrap",
             "params": {"a": 10 ** -2.05}, "ci95_scaled": {"a": [-1.9, -1.8]}, "stderr_scaled": {"a": 0.5},
             "bootstrap": {"stderr_robust_scaled": {"a": 0.03}}},
            # a robust record: its stderr_scaled is the robust SE; -1.5 ± 1.96·0.1 misses -1.
            {"subject": "s2", "fitted": ["a"], "scale": {"a": "log10"}, "uncertainty": "robust",
             "params": {"a": 10 ** -1.5}, "ci95_scaled": {"a": [-1.7, -1.3]}, "stderr_scaled": {"a": 0.1}},
        ]
        c = coverage(truth, recs)
        self.assertEqual((c["robust"]["covered"], c["robust"]["total"]), (1, 2))
        self.assertEqual((c["printed"]["covered"], c["printed"]["total"]), (0, 2))
        self.assertTrue(math.isclose(c["robust"]["median_width"], 1.96 * (0.03 + 0.1)))


if __name__ == "__main__":
    unittest.main()
