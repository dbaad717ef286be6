#!/usr/bin/env python3
"""Robustness study: how well each estimator recovers an agent's parameters when the data come
from agents that differ from the one the likelihood assumes (docs/results.md, "Robust to how the agent
was computed").

Usage:
    python3 bench/jaxref/robustness.py --nioc bin/nioc-gpu --task pendulum [--observe partial]
        [--sets 20] [--trials 50] [--restarts 20] [--seed 1]
        [--agents ours,ours-nonoise,ref,iter1,iter3,iter10,delay1,spread,replan] [--start-sd state=sd,...]
        [--estimators default,first-order,baseline] [--shard k/N]
        [--ref REF_PATH --python /work/jaxenv/bin/python] [--ref-mle] --out DIR

Parameter sets are drawn uniformly in each parameter's fitting scale within its search box
(`nioc-gpu tasks --json`), as the paper and `nioc-gpu eval` draw them, from
`random.Random(seed)`; every agent gets the same sets (DIR/truth.csv). Agents:

  ours          our agent as `nioc-gpu simulate` makes it: converged iLQG, EKF, maximum-causal-
                entropy policy noise at the task's temperature (the likelihood's assumption)
  ours-nonoise  the same agent acting deterministically on its belief (`--temperature 0`)
  iterN         our agent with its planner stopped after N iterations (`--planner-iterations N`)
  delayN        our agent sensing the state one step late (`--delay 1`)
  spread        our agent with its trials starting spread around the task's x0 (`--start-sd`
                with this script's --start-sd), planning once from x0
  replan        the same spread starts, the agent planning each trial from its own start
                (`--start-sd ... --replan`)
  ref           the JAX reference's own agent (bench/jaxref/refsim.py: gilqr.solve with 10
                iterations, EKF, no policy noise); needs --ref and a --python with jax

Estimators (`nioc-gpu fit` with these flags; NAME=FLAGS adds your own):

  default       no flags: the default likelihood (since 2026-11-22 the same as fit-tau)
  fit-tau       --temperature fit: the policy noise's temperature fitted as a nuisance parameter
  task-tau      --temperature task: the temperature fixed at the task's (the earlier default)
  first-order   --temperature task --linearize data --first-order-noise --ignore-gaps --nominal-filter --raw-angles --belief-prior 1 --jitter 1e-6 (the reference's likelihood)
  tau0          --temperature 0 (the likelihood of an agent without policy noise)
  baseline      --method baseline (MCE IRL)

--ref-mle also fits the `ref` data with the reference's own maximum-likelihood estimator
(`compute_mle` with L-BFGS-B and --restarts restarts, as its example.py does), one set after the
other, resumable; the summary then compares each of our estimators with it on the sets both
fitted, over the parameters ours fitted (fully observable, the reference's likelihood does not
depend on the observation noise, so its value of it is not scored). A run stopped early can be
scored by rerunning the same command: finished fits are not redone, and an existing ref-mle
file is scored as it is (refmle.py with the same --out continues it: it skips finished sets).

Each agent's sets are one data file (one subject per set) fitted by one batched `nioc-gpu fit`
run, resumable: rerunning with the same DIR skips what is done. The table of median absolute
relative errors (|estimate - truth| / truth over all sets and fitted parameters) is printed and
written to DIR/summary.json and DIR/summary.md. With --shard k/N only shard k of the sets is
fitted (each shard in its own DIR; merge the fits with `nioc-gpu merge`).
"""

import argparse
import csv
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

ESTIMATORS = {
    "default": [],
    "fit-tau": ["--temperature", "fit"],
    "task-tau": ["--temperature", "task"],
    "first-order": ["--temperature", "task", "--linearize", "data", "--first-order-noise", "--ignore-gaps", "--nominal-filter", "--raw-angles", "--belief-prior", "1", "--jitter", "1e-6"],
    "tau0": ["--temperature", "0"],
    "baseline": ["--method", "baseline"],
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nioc", default="bin/nioc-gpu", help="the nioc-gpu binary")
    ap.add_argument("--task", required=True)
    ap.add_argument("--observe", default="partial", choices=["partial", "full"])
    ap.add_argument("--sets", type=int, default=20)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--restarts", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--agents", default="ours,ours-nonoise,iter1,iter3,iter10,delay1")
    ap.add_argument("--estimators", default="default,first-order,baseline")
    ap.add_argument("--start-sd", default="", help="state=sd,...: the spread of the spread and replan agents' starts (natural units)")
    ap.add_argument("--shard", default="", help="k/N: fit only shard k of N of the sets")
    ap.add_argument("--ref", default="", help="checkout of RothkopfLab/nioc-neurips (for the ref agent and --ref-mle)")
    ap.add_argument("--python", default=sys.executable, help="a Python with bench/jaxref/requirements.txt (for ref)")
    ap.add_argument("--ref-mle", action="store_true", help="also fit the ref data with the reference's own MLE")
    ap.add_argument("--out", required=True)
    return ap.parse_args(argv)


def run(cmd, log):
    """Runs cmd, appending the command line and its stderr to log; exits on failure."""
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=f, text=True)
    if r.returncode != 0:
        sys.exit(f"robustness: failed (exit {r.returncode}), see {log}: {' '.join(cmd)}")
    return r.stdout


def task_spec(nioc, task):
    out = subprocess.run([nioc, "tasks", "--json"], check=True, stdout=subprocess.PIPE, text=True).stdout
    for t in json.loads(out):  # one JSON array of tasks
        if t["name"] == task:
            return t
    sys.exit(f"robustness: unknown task {task!r} (see `{nioc} tasks`)")


def draw_sets(spec, n, seed):
    """n parameter sets, uniform in each parameter's fitting scale within its search box."""
    rng = random.Random(seed)
    sets = []
    for i in range(n):
        v = {}
        for p in spec["params"]:
            if p["scale"] == "log10":
                v[p["name"]] = 10 ** rng.uniform(math.log10(p["lo"]), math.log10(p["hi"]))
            else:
                v[p["name"]] = rng.uniform(p["lo"], p["hi"])
        sets.append((f"set{i + 1:03d}", v))
    return sets


def shard_of(sets, shard):
    if not shard:
        return sets
    k, n = (int(x) for x in shard.split("/"))
    if not 1 <= k <= n:
        sys.exit(f"robustness: --shard {shard}: need 1 <= k <= N")
    return [s for i, s in enumerate(sets) if i % n == k - 1]


def simulate_ours(a, agent, sets, path, log):
    """One data file with one subject per set, simulated by nioc-gpu."""
    flags = []
    if agent == "ours-nonoise":
        flags = ["--temperature", "0"]
    elif agent.startswith("iter"):
        flags = ["--planner-iterations", agent[4:]]
    elif agent.startswith("delay"):
        flags = ["--delay", agent[5:]]
    elif agent in ("spread", "replan"):
        if not a.start_sd:
            sys.exit(f"robustness: agent {agent} needs --start-sd state=sd,...")
        flags = ["--start-sd", a.start_sd] + (["--replan"] if agent == "replan" else [])
    elif agent != "ours":
        sys.exit(f"robustness: unknown agent {agent!r}")
    header, rows, excluded = None, [], []
    tmp = path + ".one.csv"
    for i, (sid, v) in enumerate(sets):
        params = ",".join(f"{k}={x:.17g}" for k, x in v.items())
        cmd = [a.nioc, "simulate", "--task", a.task, "--observe", a.observe, "--trials", str(a.trials),
               "--seed", str(a.seed * 100003 + int(sid[3:])), "--params", params, "--force", "--out", tmp] + flags
        with open(log, "a") as f:
            f.write("$ " + " ".join(cmd) + "\n")
            f.flush()
            r = subprocess.run(cmd, stderr=f)
        if r.returncode != 0:  # a diverging agent: left out, like `nioc-gpu eval` does
            excluded.append(sid)
            continue
        with open(tmp) as f:
            rd = csv.reader(f)
            h = next(rd)
            header = header or h
            for row in rd:
                rows.append([sid] + row[1:])
    os.remove(tmp) if os.path.exists(tmp) else None
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    return excluded


def simulate_ref(a, sets, path, log, dir_):
    truth = os.path.join(dir_, "truth-shard.csv")
    write_truth(truth, sets)
    run([a.python, os.path.join(HERE, "refsim.py"), "--ref", a.ref, "--task", a.task, "--observe", a.observe,
         "--truth", truth, "--trials", str(a.trials), "--seed", str(a.seed), "--out", path], log)
    with open(path + ".excluded") as f:
        return [s.strip() for s in f if s.strip()]


def write_truth(path, sets):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        names = list(sets[0][1])
        w.writerow(["subject"] + names)
        for sid, v in sets:
            w.writerow([sid] + [format(v[n], ".17g") for n in names])


def errors(truth, records):
    """Absolute relative errors per parameter over the records (fitted parameters with a true
    value only: a fitted nuisance such as the temperature has none)."""
    per = {}
    for r in records:
        if r.get("params") is None:
            continue
        t = truth[r["subject"]]
        for name in r["fitted"]:
            if name not in t:
                continue
            e = abs(r["params"][name] - t[name])
            per.setdefault(name, []).append(e / abs(t[name]) if t[name] != 0 else e)
    return per


def _scaled(v, scale):
    return math.log10(v) if scale == "log10" else v


def coverage(truth, records):
    """How often the 95 % intervals of the records hold the true value, over the fitted
    parameters that have one: the interval the record prints (ci95_natural: the bootstrap's
    by default), the robust one, estimate ± 1.96 × the robust standard error (a bootstrap
    record's bootstrap.stderr_robust_scaled, a robust record's stderr_scaled), and the Laplace
    (Hessian) one, estimate ± 1.96 × stderr_hessian_scaled, both in the fitting scale. Returns {kind: {"covered", "total", "rate", "median_width", "per_param":
    {name: rate}, "z": {name: {"mean", "sd"}}}} with widths in the fitting scale and z the
    errors (estimate − truth) in the interval's standard errors; kinds without intervals are
    left out."""
    out = {}

    def add(kind, name, lo, hi, t):
        c = out.setdefault(kind, {"covered": 0, "total": 0, "widths": [], "per": {}, "z": {}})
        ok = lo <= t <= hi
        c["covered"] += ok
        c["total"] += 1
        c["widths"].append(hi - lo)
        p = c["per"].setdefault(name, [0, 0])
        p[0] += ok
        p[1] += 1
        if hi > lo:  # the error in standard errors of the interval (symmetric in the fitting scale)
            c["z"].setdefault(name, []).append(((lo + hi) / 2 - t) / ((hi - lo) / (2 * 1.96)))

    for r in records:
        if r.get("params") is None:
            continue
        t = truth[r["subject"]]
        scale = r.get("scale", {})
        hess = r.get("stderr_hessian_scaled") or (r.get("stderr_scaled") if r.get("uncertainty") == "hessian" else None)
        robust = (r.get("bootstrap") or {}).get("stderr_robust_scaled") or \
            (r.get("stderr_scaled") if r.get("uncertainty") == "robust" else None)
        for name in r["fitted"]:
            if name not in t:
                continue
            ts = _scaled(t[name], scale.get(name))
            ci = (r.get("ci95_scaled") or {}).get(name)
            if ci is not None:
                add("printed", name, ci[0], ci[1], ts)
            est = _scaled(r["params"][name], scale.get(name))
            for kind, se in (("robust", robust), ("hessian", hess)):
                if se and se.get(name) is not None:
                    add(kind, name, est - 1.96 * se[name], est + 1.96 * se[name], ts)
    for c in out.values():
        c["rate"] = c["covered"] / c["total"]
        c["median_width"] = statistics.median(c.pop("widths"))
        c["per_param"] = {k: v[0] / v[1] for k, v in c.pop("per").items()}
        # Why an interval misses: a mean of z far from 0 is bias, a spread above 1 too narrow
        # an interval for the estimates' own scatter.
        c["z"] = {k: {"mean": statistics.mean(v), "sd": statistics.stdev(v) if len(v) > 1 else None}
                  for k, v in c["z"].items()}
    return out


def ref_mle(a, data, out, log):
    run([a.python, os.path.join(HERE, "refmle.py"), "--ref", a.ref, "--task", a.task, "--observe", a.observe,
         "--data", data, "--restarts", str(a.restarts), "--seed", str(a.seed), "--out", out], log)


def paired_errors(truth, fits, estimators):
    """For each of our estimators, the median absolute relative error of it and of the
    reference's MLE on the sets both fitted, over the parameters our estimator fitted (so a
    parameter the reference's likelihood does not identify, such as the observation noise when
    fully observable, is not counted against it)."""
    out = []
    ref = {r["subject"]: r for r in fits.get("ref-mle", []) if r.get("params") is not None}
    for name in estimators:
        ours = {r["subject"]: r for r in fits.get(name, []) if r.get("params") is not None}
        common = sorted(set(ours) & set(ref))
        if not common:
            continue
        eo, er = [], []
        for sid in common:
            t = truth[sid]
            for k in ours[sid]["fitted"]:
                if k in t and t[k] != 0:
                    eo.append(abs(ours[sid]["params"][k] - t[k]) / abs(t[k]))
                    er.append(abs(ref[sid]["params"][k] - t[k]) / abs(t[k]))
        out.append({"estimator": name, "sets": len(common), "median_abs_rel_error": statistics.median(eo),
                    "ref_mle_median_abs_rel_error": statistics.median(er)})
    return out


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    log = os.path.join(a.out, "log.txt")
    spec = task_spec(a.nioc, a.task)
    sets = draw_sets(spec, a.sets, a.seed)
    write_truth(os.path.join(a.out, "truth.csv"), sets)
    truth = dict(sets)
    mine = shard_of(sets, a.shard)
    agents = [x for x in a.agents.split(",") if x]
    ests = []
    for e in a.estimators.split(","):
        name, _, flags = e.partition("=")
        if flags == "" and name not in ESTIMATORS:
            sys.exit(f"robustness: unknown estimator {name!r}: use {', '.join(ESTIMATORS)} or NAME=FLAGS")
        ests.append((name, flags.split() if flags else ESTIMATORS[name]))
    summary = {"task": a.task, "observe": a.observe, "sets": a.sets, "shard": a.shard, "trials": a.trials,
               "restarts": a.restarts, "seed": a.seed, "cells": {}}
    fits = {}
    for agent in agents:
        d = os.path.join(a.out, agent)
        os.makedirs(d, exist_ok=True)
        data = os.path.join(d, "data.csv")
        if not os.path.exists(data):
            t0 = time.time()
            if agent == "ref":
                if not a.ref:
                    sys.exit("robustness: the ref agent needs --ref (a checkout of RothkopfLab/nioc-neurips) and --python")
                excluded = simulate_ref(a, mine, data + ".tmp", log, d)
                os.replace(data + ".tmp.excluded", data + ".excluded")
            else:
                excluded = simulate_ours(a, agent, mine, data + ".tmp", log)
                with open(data + ".excluded", "w") as f:
                    f.writelines(s + "\n" for s in excluded)
            os.replace(data + ".tmp", data)
            print(f"{agent}: simulated {len(mine) - len(excluded)} set(s) in {time.time() - t0:.0f} s", file=sys.stderr)
        with open(data + ".excluded") as f:
            excluded = [s.strip() for s in f if s.strip()]
        runs = list(ests) + ([("ref-mle", None)] if agent == "ref" and a.ref_mle else [])
        for name, flags in runs:
            res = os.path.join(d, f"fit-{name}.jsonl")
            t0 = time.time()
            if flags is None:
                if not os.path.exists(res):
                    ref_mle(a, data, res, log)
            else:
                run([a.nioc, "fit", "--task", a.task, "--observe", a.observe, "--data", data,
                     "--restarts", str(a.restarts), "--seed", str(a.seed), "--quiet", "--resume", "--out", res] + flags, log)
            with open(res) as f:
                recs = [json.loads(l) for l in f if l.strip()]
            if flags is None and a.observe == "full":  # records of refmle.py before it said so
                for r in recs:
                    r["fitted"] = [k for k in r.get("fitted", []) if k != "obs_noise"]
            per = errors(truth, recs)
            allv = [x for v in per.values() for x in v]
            taus = [r["params"]["temperature"] for r in recs if "temperature" in (r.get("params") or {})]
            cell = {"fitted_sets": len([r for r in recs if r.get("params") is not None]), "excluded_sets": excluded,
                    "median_fitted_temperature": statistics.median(taus) if taus else None,
                    "median_abs_rel_error": statistics.median(allv) if allv else None,
                    "per_param": {k: statistics.median(v) for k, v in per.items()},
                    "coverage95": coverage(truth, recs),
                    "flags": flags, "seconds": round(time.time() - t0, 1)}
            summary["cells"].setdefault(agent, {})[name] = cell
            fits.setdefault(agent, {})[name] = recs
            print(f"{agent:>12} {name:>12}: median abs rel error {cell['median_abs_rel_error']:.3f} "
                  f"over {cell['fitted_sets']} sets ({', '.join(f'{k} {v:.2f}' for k, v in cell['per_param'].items())})",
                  file=sys.stderr)
    names = [n for n, _ in ests] + (["ref-mle"] if a.ref_mle and "ref" in agents else [])
    paired = paired_errors(truth, fits.get("ref", {}), [n for n, _ in ests]) if "ref-mle" in names else []
    summary["paired_with_ref_mle"] = paired
    lines = [f"{a.task}, {a.observe} observability, {a.trials} trials, {a.restarts} restarts, "
             f"median abs. relative error (sets fitted)", "",
             "| agent | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for agent in agents:
        cells = summary["cells"].get(agent, {})
        row = []
        for n in names:
            c = cells.get(n)
            row.append("" if c is None or c["median_abs_rel_error"] is None else
                       f"{c['median_abs_rel_error']:.3f} ({c['fitted_sets']})")
        lines.append(f"| {agent} | " + " | ".join(row) + " |")
    lines += ["", "Coverage of the 95 % intervals (printed, i.e. the bootstrap's by default / robust / "
              "Hessian; median width in the fitting scale)", "",
              "| agent | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for agent in agents:
        cells = summary["cells"].get(agent, {})
        row = []
        for n in names:
            cov = (cells.get(n) or {}).get("coverage95") or {}
            parts = [f"{cov[k]['rate']:.2f} (w {cov[k]['median_width']:.3g})" for k in ("printed", "robust", "hessian") if k in cov]
            row.append(" / ".join(parts))
        lines.append(f"| {agent} | " + " | ".join(row) + " |")
    for p in paired:
        lines.append("")
        lines.append(f"Paired with the reference MLE on the {p['sets']} set(s) both fitted (over {p['estimator']}'s "
                     f"fitted parameters): {p['estimator']} {p['median_abs_rel_error']:.3f}, "
                     f"ref-mle {p['ref_mle_median_abs_rel_error']:.3f}")
    md = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(md)


if __name__ == "__main__":
    main()
