#!/usr/bin/env python3
"""Simulated population studies for `nioc-gpu population`: recovery, shrinkage and
calibration of the population fit, measured on data of known truth.

Each study draws a population with `nioc-gpu simulate --population` (optionally two groups
with a shift of one parameter), fits it with `nioc-gpu population`, and scores:

- shrinkage: the median absolute relative error (natural units) of every subject's fitted
  parameters, independent fits against the population fit's (pooled over studies);
- calibration: how often the population means' 95 % intervals hold the mean they were drawn
  from, and, with groups, how often a group effect's interval excludes 0 where there is a
  true shift (power) and where there is none (false positives).

Only the binary runs the method; this script draws nothing itself. Usage:

    python3 bench/groups/population_study.py --nioc bin/nioc-gpu --task pendulum \
        --population action_cost=-2.5:0.1,velocity_cost=-2:0.1,motor_noise=-0.5:0.1,obs_noise=-0.5:0.1 \
        --subjects 40 --trials 3 --studies 20 --out DIR
    (two groups: --groups control=20,patient=20 --group-effect patient:motor_noise=0.2)

It writes DIR/studyNNN/ (data and fit, resumable: a study with population.json is not rerun)
and DIR/summary.json, DIR/summary.md.
"""
import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time


def parse_population(s):
    out = {}
    for item in s.split(","):
        name, ms = item.split("=")
        mean, sd = ms.split(":")
        out[name.strip()] = (float(mean), float(sd))
    return out


def parse_effects(s):
    """patient:motor_noise=0.2 -> {("patient", "motor_noise"): 0.2}"""
    out = {}
    group = None
    for item in (s or "").split(","):
        if not item.strip():
            continue
        if ":" in item:
            group, item = item.split(":", 1)
        name, v = item.split("=")
        out[(group.strip(), name.strip())] = float(v)
    return out


def run_study(args, d, seed):
    os.makedirs(d, exist_ok=True)
    data = os.path.join(d, "data.csv")
    if not os.path.exists(data):
        cmd = [args.nioc, "simulate", "--task", args.task, "--population", args.population,
               "--trials", str(args.trials), "--seed", str(seed), "--out", data]
        if args.groups:
            cmd += ["--groups", args.groups]
            if args.group_effect:
                cmd += ["--group-effect", args.group_effect]
        else:
            cmd += ["--subjects", str(args.subjects)]
        subprocess.run(cmd, check=True, capture_output=True)
    out = os.path.join(d, "pop")
    if not os.path.exists(os.path.join(out, "population.json")):
        cmd = [args.nioc, "population", "--task", args.task, "--data", data, "--restarts", str(args.restarts),
               "--seed", str(seed), "--quiet", "--out", out]
        if os.path.exists(out):
            cmd.append("--resume")
        if args.groups:
            cmd += ["--subjects", os.path.join(d, "data.subjects.csv"), "--population-model", "~ group"]
        t0 = time.time()
        subprocess.run(cmd, check=True, capture_output=True)
        with open(os.path.join(d, "seconds"), "w") as f:
            f.write(str(time.time() - t0))
    with open(os.path.join(out, "population.json")) as f:
        rep = json.load(f)
    scales = {}
    with open(os.path.join(out, "independent.jsonl")) as f:
        for line in f:
            scales.update(json.loads(line).get("scale", {}))
    truth, groups = {}, {}
    with open(os.path.join(d, "data.truth.csv")) as f:
        for row in csv.DictReader(f):
            truth[row["subject"]] = row
            groups[row["subject"]] = row["group"]
    secs = float(open(os.path.join(d, "seconds")).read()) if os.path.exists(os.path.join(d, "seconds")) else float("nan")
    return rep, scales, truth, secs


def natural(v, scale):
    return 10 ** v if scale == "log10" else v


def score(args, studies):
    pop = parse_population(args.population)
    shifts = parse_effects(args.group_effect)
    group_names = [g.split("=")[0] for g in args.groups.split(",")] if args.groups else []
    ref = sorted(group_names)[0] if group_names else None
    err_ind, err_pop = [], []
    cover, power, false_pos, seconds = {}, {}, {}, []
    for rep, scales, truth, secs in studies:
        seconds.append(secs)
        for s in rep["subjects"]:
            for name in pop:
                t = float(truth[s["subject"]][name])
                err_ind.append(abs(natural(s["independent"][name], scales[name]) - t) / t)
                err_pop.append(abs(natural(s["shrunk"][name], scales[name]) - t) / t)
        for e in rep["effects"]:
            name, term = e["param"], e["term"]
            if name not in pop:
                continue
            lo, hi = e["ci95"]
            if term == "(intercept)":
                true = pop[name][0] + shifts.get((ref, name), 0.0)
                cover.setdefault(name, []).append(lo <= true <= hi)
                continue
            level = term[term.index("[") + 1:-1]
            true = shifts.get((level, name), 0.0) - shifts.get((ref, name), 0.0)
            excl = lo > 0 or hi < 0
            (power if true != 0 else false_pos).setdefault(name, []).append(excl)
    frac = lambda xs: sum(xs) / len(xs)
    out = {
        "studies": len(studies),
        "median_rel_error_independent": statistics.median(err_ind),
        "median_rel_error_population": statistics.median(err_pop),
        "mean_coverage95": {k: frac(v) for k, v in cover.items()},
        "power": {k: frac(v) for k, v in power.items()},
        "false_positive": {k: frac(v) for k, v in false_pos.items()},
        "seconds_per_study_median": statistics.median(seconds),
    }
    out["gain"] = 1 - out["median_rel_error_population"] / out["median_rel_error_independent"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nioc", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--population", required=True, help="name=mean:sd,... in fitting scale")
    ap.add_argument("--subjects", type=int, default=40)
    ap.add_argument("--groups", default="")
    ap.add_argument("--group-effect", default="")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--restarts", type=int, default=20)
    ap.add_argument("--studies", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    studies = []
    for i in range(args.studies):
        d = os.path.join(args.out, "study%03d" % (i + 1))
        studies.append(run_study(args, d, args.seed + 1000 * i))
        print("study %d done" % (i + 1), file=sys.stderr)
    res = score(args, studies)
    res["command"] = " ".join(sys.argv)
    res["date"] = time.strftime("%Y-%m-%d")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(res, f, indent=2)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
