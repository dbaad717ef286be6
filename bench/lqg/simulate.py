#!/usr/bin/env python3
"""Simulate tracking data with lqg's own simulator and write them in nioc-gpu's CSV format.

    bench/lqg/.venv/bin/python bench/lqg/simulate.py [--sets 0,1,2,3,4] [--trials 20]
        [--steps 1067] [--seed 0] [--out-dir bench/lqg/data]

For each parameter set i of common.SETS (or, with --random N, of N sets drawn log-uniformly
from common.RANDOM_RANGES): lqg's BoundedActor (process_noise 1, dt 1/60, T =
steps) simulates `trials` trials with System.simulate (x0 = 0, xhat0 = 0, Sigma0 =
tracking.toml's belief_cov) from PRNGKey(seed + i); writes OUT/set<i>.csv (subject 1, trials
1..n, t = 0..steps) and OUT/truth.json. Nothing here is nioc-gpu's: the data are lqg's.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(str(i) for i in range(len(common.SETS))))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--steps", type=int, default=common.STEPS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--random", type=int, default=0,
                    help="draw this many parameter sets (common.RANDOM_RANGES, from --random-seed) instead of common.SETS")
    ap.add_argument("--random-seed", type=int, default=7)
    ap.add_argument("--out-dir", default=os.path.join(common.HERE, "data"))
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    truth = {}
    sets = common.SETS
    if a.random:
        sets = common.random_sets(a.random, a.random_seed)
        a.sets = ",".join(str(i) for i in range(a.random))
    for i in (int(s) for s in a.sets.split(",")):
        p = sets[i]
        x = common.simulate(p, a.trials, a.seed + i, a.steps)
        path = os.path.join(a.out_dir, f"set{i}.csv")
        common.write_csv(path, x)
        truth[f"set{i}"] = {"params": p, "seed": a.seed + i, "trials": a.trials, "steps": a.steps, "file": path}
        print(f"set{i}: {a.trials} trials x {a.steps} steps -> {path}")
    common.write_json(os.path.join(a.out_dir, "truth.json"),
                      {"simulator": "lqg.tracking.BoundedActor.simulate", "versions": common.versions(),
                       "x0": [0, 0], "xhat0": [0, 0], "Sigma0": common.SIGMA0.tolist(), "sets": truth})


if __name__ == "__main__":
    main()
