#!/usr/bin/env python3
"""Coverage of fit's 95 % intervals against known truths.

Usage:
    python3 bench/intervals/coverage.py --truth truth.csv results.jsonl [more.jsonl ...]
        [--robust default-fit.jsonl] [--agents ours,ours-nonoise,iter10,nofeedforward]

truth.csv: ``subject,<parameter names>`` in natural units (robustness.py's truth.csv).
results.jsonl: records of ``nioc-gpu fit``. For each file it prints the fraction of fitted
parameters (those with a true value) whose ``ci95_scaled`` holds the truth, the median width
in the fitting scale, the coverage per parameter, and the same sets' robust intervals
(estimate ± 1.96 × the robust SE: a bootstrap record keeps it as
``bootstrap.stderr_robust_scaled``; for older records ``--robust`` names another fit's records).

``--agents`` recomputes the bootstrap's interval from the refits a record keeps
(``bootstrap.fits``), using only those of the named agents, with fit's formula (fit/bootstrap.go:
centre θ̂ − bias, SE = sqrt(max(SD, robust SE)² + SD²/K), Student's t at SE²'s degrees of
freedom (K − 1, or Satterthwaite's where the robust SE sets it), joined with the same interval around each other optimum within the refits'
95th-percentile log-likelihood gap; for a parameter on a bound, the hull of the part inside the box and the record's one-sided
profile interval, ``profile``, whose drop is the whole family's gap).
It lets one run with more agents (``--bootstrap-agents``) score the default family and others;
the robust SE comes from the record or, for records written before it kept it, ``--robust``'s. Only the standard
library is used.
"""

import argparse
import csv
import json
import math
import statistics

def t975(nu):
    """Student's t 97.5 % quantile at nu (possibly fractional) degrees of freedom, by the
    Cornish-Fisher expansion about the normal's (Abramowitz & Stegun 26.7.5): within 1e-5 of
    the exact value for nu >= 10, which is all fit's intervals use."""
    z = 1.959963984540054
    g = [(z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96,
         (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
         (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160]
    return z + sum(gk / nu ** (k + 1) for k, gk in enumerate(g))


def dof(sd, robust, K, trials):
    """The degrees of freedom of the bootstrap's SE² (fit/bootstrap.go): K − 1 where SD sets
    it, else Satterthwaite's for the robust SE² (trials − 1) plus SD²/K (K − 1)."""
    if robust <= sd:
        return K - 1
    a, b = robust * robust, sd * sd / K
    return (a + b) ** 2 / (a * a / max(trials - 1, 1) + b * b / (K - 1))


def scaled(rec, name, value):
    return math.log10(value) if rec["scale"].get(name) == "log10" else value


def recomputed(rec, robust, agents):
    """The bootstrap interval from the record's refits of agents only (fit/bootstrap.go)."""
    b = rec["bootstrap"]
    fits = [f for f in b["fits"] if f["agent"] in agents]
    K = len(fits)
    gaps = sorted(f["loglik"] - f["loglik_at_estimate"] for f in fits)
    gap95 = gaps[min(K - 1, int(0.95 * K))]
    near = [o for o in rec.get("optima", []) if rec["loglik"] - o["loglik"] <= gap95]
    rse = robust_se(rec, robust)
    out = {}
    for name in rec["fitted"]:
        if name not in b["bias_scaled"]:
            continue
        x = scaled(rec, name, rec["params"][name])
        xs = [f["scaled"][name] for f in fits]
        mean, sd = statistics.fmean(xs), statistics.stdev(xs)
        se = max(sd, rse.get(name, 0.0))
        t = t975(dof(sd, rse.get(name, 0.0), K, rec.get("trials") or 1))
        se = math.sqrt(se * se + sd * sd / K)
        centre = x - (mean - x)
        lo, hi = centre - t * se, centre + t * se
        for o in near:  # the same interval around each other peak in the region
            lo, hi = min(lo, o["scaled"][name] - t * se), max(hi, o["scaled"][name] + t * se)
        pr = (rec.get("profile") or {}).get(name)
        if pr:  # on a bound: the hull of the part inside the box and the profile's (fit/profile.go)
            bound, end = pr["bound_scaled"], pr["end_scaled"]
            lo, hi = (bound, max(hi, end)) if bound < end else (min(lo, end), bound)
        out[name] = (lo, hi)
    return out


def robust_se(rec, robust):
    """The robust standard errors of rec: its own (bootstrap.stderr_robust_scaled, or
    stderr_scaled of a robust record), else those of robust (another fit of the subject)."""
    own = (rec.get("bootstrap") or {}).get("stderr_robust_scaled")
    if own is None and rec.get("uncertainty") == "robust":
        own = rec.get("stderr_scaled")
    if own is not None:
        return own
    if robust.get("uncertainty", "robust") == "robust":
        return robust.get("stderr_scaled", {})
    return (robust.get("bootstrap") or {}).get("stderr_robust_scaled", {})


def read(path):
    recs = {}
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if "params" in d and "subject" in d:
                recs[d["subject"]] = d
    return recs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--robust", help="records of a robust fit of the same data (its intervals beside, its SEs for --agents)")
    ap.add_argument("--agents", help="recompute the bootstrap's interval from these agents' refits")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    with open(a.truth) as f:
        truth = {r["subject"]: r for r in csv.DictReader(f)}
    robust = read(a.robust) if a.robust else {}
    agents = a.agents.split(",") if a.agents else None
    for path in a.results:
        hits, widths, per, rhits, rwidths = [], [], {}, [], []
        for sid, rec in sorted(read(path).items()):
            t = truth.get(sid)
            if t is None:
                raise SystemExit(f"{path}: subject {sid} has no row in {a.truth}")
            if agents:
                if "bootstrap" not in rec:
                    continue
                if "stderr_robust_scaled" not in rec["bootstrap"] and rec.get("hessian_pd") and sid not in robust:
                    raise SystemExit(f"{path}: subject {sid}: no robust SE in the record: --agents needs --robust")
                iv = recomputed(rec, robust.get(sid, {}), agents)
            else:
                iv = {k: tuple(v) for k, v in rec.get("ci95_scaled", {}).items()}
            for name, (lo, hi) in iv.items():
                if name not in t:
                    continue  # the fitted temperature: no true value
                v = scaled(rec, name, float(t[name]))
                ok = lo <= v <= hi
                hits.append(ok)
                widths.append(hi - lo)
                per.setdefault(name, []).append(ok)
                se = robust_se(rec, robust.get(sid, {})).get(name)
                if se is not None:
                    x = scaled(rec, name, rec["params"][name])
                    rhits.append(x - 1.96 * se <= v <= x + 1.96 * se)
                    rwidths.append(2 * 1.96 * se)
        line = f"{path}: coverage {sum(hits) / len(hits):.3f} of {len(hits)}, median width {statistics.median(widths):.4f}"
        if rhits:
            line += f"; robust {sum(rhits) / len(rhits):.3f} of {len(rhits)}, width {statistics.median(rwidths):.4f}"
        print(line)
        print("  " + " ".join(f"{k}={sum(v) / len(v):.2f}" for k, v in sorted(per.items())))


if __name__ == "__main__":
    main()
