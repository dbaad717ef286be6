#!/usr/bin/env python3
"""The bootstrap over agents by hand, to choose its family (docs/intervals.md, issue 34).

For the first SETS subjects of a robustness study's cell (bench/jaxref/robustness.py: DIR
holds truth.csv and AGENT/fit-default.jsonl), simulate K data sets at each subject's estimate
from every agent variant of VARIANTS (`nioc-gpu simulate` with the estimate's temperature and
the variant's flags), refit them all in one `nioc-gpu fit` (5 restarts), then score, for each
family (a subset of VARIANTS), the bias-corrected interval (θ̂ − bias) ± 1.96·max(SD, robust
SE) over the family's refits, against the truth. `fit --uncertainty bootstrap
--bootstrap-agents FAMILY` computes the same interval (other random streams).

    python3 bench/intervals/agent_bootstrap.py --nioc bin/nioc-gpu --task pendulum \\
        --observe partial --study DIR --agent ref --sets 20 --draws 5 \\
        --variants ours,ours-nonoise,iter3,iter10,delay1 \\
        --families "ours;ours,ours-nonoise,iter3,iter10" --out WORK
"""
import argparse, csv, json, math, os, statistics, subprocess

FLAGS = {"ours": [], "ours-nonoise": ["--temperature", "0"], "delay1": ["--delay", "1"]}


def flags(v):
    if v in FLAGS:
        return FLAGS[v]
    if v.startswith("iter"):
        return ["--planner-iterations", v[4:]]
    raise SystemExit(f"unknown variant {v}")


def scale(x, s):
    return math.log10(x) if s == "log10" else x


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for a in ("--nioc", "--task", "--observe", "--study", "--agent", "--out"):
        ap.add_argument(a, required=True)
    ap.add_argument("--sets", type=int, default=20)
    ap.add_argument("--draws", type=int, default=5, help="data sets per variant and subject")
    ap.add_argument("--restarts", type=int, default=5)
    ap.add_argument("--variants", default="ours,ours-nonoise,iter3,iter10,delay1")
    ap.add_argument("--families", default="ours;ours,ours-nonoise,iter3,iter10")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    fits = {}
    for line in open(os.path.join(a.study, a.agent, "fit-default.jsonl")):
        r = json.loads(line)
        fits[r["subject"]] = r
    truth = {r["subject"]: {k: float(v) for k, v in r.items() if k != "subject"}
             for r in csv.DictReader(open(os.path.join(a.study, "truth.csv")))}
    sids = sorted(fits)[: a.sets]
    variants = a.variants.split(",")
    rows, head = [], None
    for sid in sids:
        p = dict(fits[sid]["params"])
        tau = p.pop("temperature")
        params = ",".join(f"{k}={v!r}" for k, v in p.items())
        for v in variants:
            f = os.path.join(a.out, f"sim-{sid}-{v}.csv")
            if not os.path.exists(f):
                seed = 1000 + int("".join(c for c in sid if c.isdigit()) or 0)
                subprocess.run([a.nioc, "simulate", "--task", a.task, "--observe", a.observe, "--params", params,
                                "--temperature", repr(tau), *flags(v), "--trials", str(fits[sid]["trials"]),
                                "--subjects", str(a.draws), "--seed", str(seed), "--force", "--out", f],
                               check=True, capture_output=True)
            with open(f) as fh:
                rd = list(csv.reader(fh))
            head = rd[0]
            for x in rd[1:]:
                x[0] = f"{sid}_{v}_{x[0]}"
                rows.append(x)
    data = os.path.join(a.out, "data.csv")
    with open(data, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        w.writerows(rows)
    res = os.path.join(a.out, "refits.jsonl")
    subprocess.run([a.nioc, "fit", "--task", a.task, "--observe", a.observe, "--data", data, "--restarts", str(a.restarts),
                    "--seed", "3", "--check-draws", "0", "--quiet", "--resume", "--out", res], check=True)
    refits = {}
    for line in open(res):
        r = json.loads(line)
        if r.get("params") is None:
            continue
        sid, v, _ = r["subject"].rsplit("_", 2)
        refits.setdefault(sid, {}).setdefault(v, []).append(r)
    print(f"{a.task}, {a.observe}ly observed, agent {a.agent}: {len(sids)} sets, {a.draws} data sets per variant")
    for fam in a.families.split(";"):
        F = fam.split(",")
        cov, width, robust, rwidth = [], [], [], []
        for sid in sids:
            o = fits[sid]
            for name in o["fitted"]:
                if name not in truth[sid]:
                    continue
                s = o["scale"][name]
                est, t = scale(o["params"][name], s), scale(truth[sid][name], s)
                se = (o.get("stderr_scaled") or {}).get(name, float("inf"))
                vals = [scale(b["params"][name], s) for v in F for b in refits.get(sid, {}).get(v, [])]
                if len(vals) < 3:
                    continue
                c, sd = 2 * est - statistics.mean(vals), max(statistics.stdev(vals), se)
                cov.append(abs(c - t) <= 1.96 * sd)
                width.append(3.92 * sd)
                robust.append(abs(est - t) <= 1.96 * se)
                rwidth.append(3.92 * se)
        print(f"  family {fam}: covers {sum(cov) / len(cov):.2f} (median width {statistics.median(width):.3g}); "
              f"robust {sum(robust) / len(robust):.2f} (width {statistics.median(rwidth):.3g}); {len(cov)} parameters")


if __name__ == "__main__":
    main()
