"""Tests of sbs_parse (run by `make test` where python3 is present)."""

import unittest

from sbs_parse import parse_bench_table, reference_params, schedule

NINE = """| task | parameter vectors | programs | largest program (nodes) | build+compile | calls per evaluation | per evaluation | vectors/s | transitions/s |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
| pendulum | 1 | 1 | 84552 | 0.13 s | 1 | 0.024 s | 41.6 | 1.04e+05 |
| pendulum | 50 | 1 | 84552 | 0.25 s | 1 | 0.217 s | 230.8 | 5.77e+05 |
| navigation | 1 | 1 | 271517 | 0.52 s | 1 | 0.065 s | 15.4 | 3.84e+04 |

| task | subjects | wall | per subject | subjects/hour | paper per fit (1 core) | evaluations | batches | median abs. rel. error |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
| pendulum | 1 | 4.1 s | 4.1 s | 880 | 31 s | 978 | 37 | 0.067 |
"""

SEVEN = """| task | parameter vectors | graph nodes | build+compile | per evaluation | vectors/s | transitions/s |
|---|---:|---:|---:|---:|---:|---:|
| pendulum | 1 | 84552 | 0.13 s | 0.024 s | 41.6 | 1.04e+05 |
"""


class ParseBenchTable(unittest.TestCase):
    def test_nine_columns(self):
        rows = parse_bench_table(NINE, "pendulum")
        self.assertEqual(sorted(rows), [1, 50])
        self.assertAlmostEqual(rows[1]["per_eval_s"], 0.024)
        self.assertAlmostEqual(rows[50]["per_eval_s"], 0.217)
        self.assertEqual(rows[50]["graph_nodes"], 84552)
        self.assertAlmostEqual(rows[1]["build_compile_s"], 0.13)
        self.assertAlmostEqual(rows[50]["vectors_per_s"], 230.8)

    def test_other_task_and_second_table_ignored(self):
        rows = parse_bench_table(NINE, "navigation")
        self.assertEqual(list(rows), [1])
        self.assertAlmostEqual(rows[1]["per_eval_s"], 0.065)

    def test_seven_columns(self):
        self.assertAlmostEqual(parse_bench_table(SEVEN, "pendulum")[1]["per_eval_s"], 0.024)

    def test_failed_row_skipped(self):
        out = NINE.replace("| pendulum | 50 | 1 | 84552 | 0.25 s | 1 | 0.217 s | 230.8 | 5.77e+05 |",
                           "| pendulum | 50 | failed: out of memory | | | | | | |")
        self.assertEqual(list(parse_bench_table(out, "pendulum")), [1])

    def test_errors(self):
        with self.assertRaises(ValueError):
            parse_bench_table("no table here", "pendulum")
        with self.assertRaises(ValueError):
            parse_bench_table(NINE, "cartpole")
        with self.assertRaises(ValueError):
            parse_bench_table(NINE.replace("vectors/s", "speed"), "pendulum")


class ReferenceParams(unittest.TestCase):
    def test_temperature_dropped(self):
        est = {"action_cost": 1e-3, "velocity_cost": 1e-2, "motor_noise": 0.5, "obs_noise": 1.0,
               "temperature": 1e-7}
        names = ["action_cost", "velocity_cost", "motor_noise", "obs_noise"]
        self.assertEqual(list(reference_params(est, names)), names)

    def test_missing(self):
        with self.assertRaises(KeyError):
            reference_params({"action_cost": 1.0}, ["action_cost", "obs_noise"])


class Schedule(unittest.TestCase):
    def test_interleaved(self):
        self.assertEqual(schedule(2), ["ref", "ours", "ref", "ours"])
        with self.assertRaises(ValueError):
            schedule(0)


if __name__ == "__main__":
    unittest.main()
