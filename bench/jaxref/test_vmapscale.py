"""Tests of vmapscale's argument parsing and row offsets (run by `make test` where python3 is
present; the timing itself needs the reference and JAX)."""

import argparse
import unittest

try:
    import numpy as np
except ImportError:  # the system python of CI has no numpy: say so and skip
    raise unittest.SkipTest("test_vmapscale: numpy is not installed; skipped")

from vmapscale import offsets, parse_batches


class VmapScaleTest(unittest.TestCase):
    def test_batches(self):
        self.assertEqual(parse_batches("1,50, 500"), [1, 50, 500])
        for bad in ["", "0", "1,-5", "x"]:
            with self.assertRaises((argparse.ArgumentTypeError, ValueError)):
                parse_batches(bad)

    def test_offsets_move_every_row(self):
        o = offsets(6, 4)
        self.assertEqual(o.shape, (6, 4))
        self.assertTrue(set(np.unique(o)) <= {-0.05, 0.0, 0.05})
        self.assertEqual(len({tuple(r) for r in o[:3]}), 3, "consecutive rows differ")
        np.testing.assert_array_equal(o[0], o[3])


if __name__ == "__main__":
    unittest.main()
