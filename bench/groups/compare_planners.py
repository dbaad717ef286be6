#!/usr/bin/env python3
"""Does compare-models find the generating model? (issue 30, "Model comparison across subjects")

Light-dark populations are simulated with the partially observable planner and with the fully
observable one; each study is fitted under both planners and compared with
`nioc-gpu compare-models`. Printed: each study's protected exceedance probability (PXP) of the
true planner, and the fraction of studies where it exceeds 0.9.

Runs only the nioc-gpu binary (build it with `make build`); needs nothing but Python 3:

    python3 bench/groups/compare_planners.py --bin bin/nioc-gpu --studies 10 --out out/groups

Study k of the planner P is `simulate --task lightdark --planner P --population POP
--subjects 20 --trials 50 --seed SEED` with SEED = 1000*k + (1 for partial, 2 for full); each
subject draws its own parameters from POP (fitting scales: target_x linear, light_cost and
sigma log10). Every study's files stay in OUT/P-kNN/ (bms/: compared by the Laplace evidence;
bms-bic/: the same fits by −BIC/2), and OUT/summary.csv has one row each. A study already
compared (its bms/bms.json exists) is read, not refitted.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

PLANNERS = ("partial", "full")
POPULATION = "target_x=0:0.3,light_cost=-1.5:0.3,sigma=-0.7:0.15"


def run(cmd, log):
    """Runs cmd, appends its stderr to log, returns its wall time in seconds."""
    t0 = time.time()
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        subprocess.run(cmd, check=True, stdout=f, stderr=f)
    return time.time() - t0


def study(args, truth, k):
    d = os.path.join(args.out, "%s-k%02d" % (truth, k))
    os.makedirs(d, exist_ok=True)
    log = os.path.join(d, "log.txt")
    bms = os.path.join(d, "bms")
    times = {}
    if not os.path.exists(os.path.join(bms, "bms.json")):
        data = os.path.join(d, "data.csv")
        seed = 1000 * k + (1 if truth == "partial" else 2)
        times["simulate"] = run([args.bin, "simulate", "--task", "lightdark", "--planner", truth,
                                 "--population", args.population, "--subjects", str(args.subjects),
                                 "--trials", str(args.trials), "--seed", str(seed), "--force", "--out", data], log)
        fits = []
        for planner in PLANNERS:
            out = os.path.join(d, planner + ".jsonl")
            for stale in (out, out + ".ckpt"):
                if os.path.exists(stale):
                    os.remove(stale)
            times["fit " + planner] = run([args.bin, "fit", "--task", "lightdark", "--planner", planner, "--data", data,
                                           "--restarts", str(args.restarts), "--check-draws", "0", "--quiet",
                                           "--seed", str(k), "--out", out], log)
            fits.append(out)
        times["compare-models"] = run([args.bin, "compare-models", "--names", ",".join(PLANNERS), "--force",
                                       "--out", bms] + fits, log)
        with open(os.path.join(d, "times.json"), "w") as f:
            json.dump(times, f)
    elif os.path.exists(os.path.join(d, "times.json")):
        with open(os.path.join(d, "times.json")) as f:
            times = json.load(f)
    # The same fits compared by −BIC/2 (no refit; 0.05 s).
    bic = os.path.join(d, "bms-bic")
    if not os.path.exists(os.path.join(bic, "bms.json")):
        run([args.bin, "compare-models", "--names", ",".join(PLANNERS), "--evidence", "bic", "--force", "--out", bic]
            + [os.path.join(d, p + ".jsonl") for p in PLANNERS], log)
    with open(os.path.join(bms, "bms.json")) as f:
        rep = json.load(f)
    with open(os.path.join(bic, "bms.json")) as f:
        rep_bic = json.load(f)
    m = {x["name"]: x for x in rep["models"]}
    t = m[truth]
    other = [p for p in PLANNERS if p != truth][0]
    lbf = [s["log_evidence"][truth] - s["log_evidence"][other] for s in rep["per_subject"]]
    return {
        "truth": truth, "study": k, "subjects": rep["subjects"], "left_out": len(rep.get("left_out") or []),
        "pxp_true": t["protected_exceedance"], "ep_true": t["exceedance"], "freq_true": t["expected_frequency"],
        "best_true": t["subjects_best"], "bor": rep["bor"], "min_log_bf": round(min(lbf), 1),
        "pxp_true_bic": {x["name"]: x for x in rep_bic["models"]}[truth]["protected_exceedance"],
        "subjects_bic": rep_bic["subjects"],
        "seconds": round(sum(times.values()), 1),
        "fit_seconds": round(sum(v for key, v in times.items() if key.startswith("fit")), 1),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="bin/nioc-gpu")
    ap.add_argument("--studies", type=int, default=10, help="studies per generating planner")
    ap.add_argument("--subjects", type=int, default=20)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--restarts", type=int, default=20)
    ap.add_argument("--population", default=POPULATION)
    ap.add_argument("--out", default="out/groups")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for k in range(1, args.studies + 1):
        for truth in PLANNERS:
            r = study(args, truth, k)
            rows.append(r)
            print("%-7s study %2d: PXP(true) %.6f  EP %.6f  freq %.3f  best %d/%d  left out %d  BOR %.2g  "
                  "min log BF %.1f  PXP(true, BIC) %.6f  %.0f s"
                  % (truth, k, r["pxp_true"], r["ep_true"], r["freq_true"], r["best_true"], r["subjects"],
                     r["left_out"], r["bor"], r["min_log_bf"], r["pxp_true_bic"], r["seconds"]), flush=True)
    with open(os.path.join(args.out, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for truth in PLANNERS:
        rs = [r for r in rows if r["truth"] == truth]
        ok = sum(r["pxp_true"] > 0.9 for r in rs)
        ok_bic = sum(r["pxp_true_bic"] > 0.9 for r in rs)
        print("%s: PXP of the true planner > 0.9 in %d of %d studies (%.0f %%; by BIC %d); lowest PXP %.6f; "
              "smallest subject's log Bayes factor %.1f; %d subject(s) left out; fits %.0f s a study on average"
              % (truth, ok, len(rs), 100 * ok / len(rs), ok_bic, min(r["pxp_true"] for r in rs),
                 min(r["min_log_bf"] for r in rs), sum(r["left_out"] for r in rs),
                 sum(r["fit_seconds"] for r in rs) / len(rs)))
    ok = sum(r["pxp_true"] > 0.9 for r in rows)
    print("all: %d of %d (%.0f %%)" % (ok, len(rows), 100 * ok / len(rows)))
    return 0 if ok >= 0.9 * len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
