#!/usr/bin/env python3
"""Recovery of tracking.toml's parameters from data simulated by lqg's own simulator.

    bench/lqg/.venv/bin/python bench/lqg/simulate.py     # 5 sets x 20 trials x 1067 steps
    bench/lqg/.venv/bin/python bench/lqg/recovery.py [--sets 0,1,2,3,4] [--restarts 50]
        [--data-dir bench/lqg/data] [--name recovery] [--out-dir bench/lqg/results]
    bench/lqg/.venv/bin/python bench/lqg/simulate.py --random 20 --out-dir bench/lqg/data/random
    bench/lqg/.venv/bin/python bench/lqg/recovery.py --data-dir bench/lqg/data/random --name recovery-random

Reads the truth from DATA_DIR/truth.json (simulate.py's), merges DATA_DIR/set<i>.csv into one file (subject i+1 = set i) and runs

    nioc-gpu fit --task-file examples/tasks/tracking.toml --data recovery.csv
        --temperature task --restarts R --out results/fits/recovery.jsonl

then writes results/recovery.csv (one row per set and parameter: truth, estimate, standard
error in log10 units, relative error) and results/recovery.json (median |relative error| per
parameter; acceptance: every parameter within 10 %).
"""

import argparse
import csv
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="", help="default: every set of DATA_DIR/truth.json")
    ap.add_argument("--restarts", type=int, default=50)
    ap.add_argument("--data-dir", default=os.path.join(common.HERE, "data"))
    ap.add_argument("--task-file", default=common.TASK_FILE)
    ap.add_argument("--extra", default="", help="extra flags for nioc-gpu fit (space-separated)")
    ap.add_argument("--name", default="recovery")
    ap.add_argument("--out-dir", default=common.RESULTS)
    a = ap.parse_args()
    truth = json.load(open(os.path.join(a.data_dir, "truth.json")))["sets"]
    sets = [int(s) for s in a.sets.split(",")] if a.sets else [int(k[3:]) for k in truth]
    merged = os.path.join(a.data_dir, f"{a.name}.csv")
    with open(merged, "w") as out:
        out.write("subject,trial,t,target,cursor\n")
        for i in sets:
            with open(os.path.join(a.data_dir, f"set{i}.csv")) as f:
                next(f)
                for line in f:
                    out.write(f"{i + 1}," + line.split(",", 1)[1])
    fits = os.path.join(a.out_dir, "fits")
    os.makedirs(fits, exist_ok=True)
    res = os.path.join(fits, f"{a.name}.jsonl")
    for f in (res, res[:-len(".jsonl")] + ".csv"):
        if os.path.exists(f):
            os.remove(f)
    cmd = [common.NIOC, "fit", "--task-file", a.task_file, "--data", merged, "--temperature", "task",
           "--restarts", str(a.restarts), "--out", res] + a.extra.split()
    _, err, wall = common.run(cmd)
    trials = {int(r["subject"]): r["trials"] for r in (json.loads(l) for l in open(res) if l.strip())}
    recs = {int(r["subject"]): r for r in (json.loads(l) for l in open(res) if l.strip())}
    rows, errs = [], {k: [] for k in common.PARAMS}
    for i in sets:
        r = recs[i + 1]
        for k in common.PARAMS:
            t, e = truth[f"set{i}"]["params"][k], r["params"][k]
            rel = e / t - 1
            errs[k].append(abs(rel))
            rows.append({"set": i, "param": k, "truth": t, "estimate": e,
                         "se_log10": r["stderr_scaled"][k], "rel_err": rel, "seconds": r.get("seconds")})
    with open(os.path.join(a.out_dir, f"{a.name}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    med = {k: statistics.median(v) for k, v in errs.items()}
    summary = {"versions": common.versions(), "nioc_gpu": common.git_rev(), "sets": sets,
               "trials": sorted(set(trials.values())), "command": " ".join(cmd).replace(common.ROOT + "/", ""),
               "wall_seconds": wall, "median_abs_rel_err": med, "max_abs_rel_err": {k: max(v) for k, v in errs.items()},
               "pass_10pct": all(v <= 0.10 for v in med.values()), "stderr": err.strip().splitlines()[-5:]}
    common.write_json(os.path.join(a.out_dir, f"{a.name}.json"), summary)
    for row in rows:
        print(f"set{row['set']} {row['param']:13s} truth {row['truth']:<8g} est {row['estimate']:.5g}  rel {row['rel_err']:+.3f}")
    print("median |rel err|:", {k: round(v, 4) for k, v in med.items()}, "pass" if summary["pass_10pct"] else "FAIL",
          f"({wall:.0f} s)")


if __name__ == "__main__":
    main()
