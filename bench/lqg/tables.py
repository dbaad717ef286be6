#!/usr/bin/env python3
"""Print the Markdown tables of docs/tracking.md ("Agreement with lqg") from bench/lqg/results.

    python3 bench/lqg/tables.py [--results bench/lqg/results]

Needs no lqg: it only reads loglik.json, mle.json, recovery.json/.csv and
recovery-random.json/.csv.
"""

import argparse
import csv
import json
import math
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
PARAMS = ["motor_noise", "sigma_target", "sigma_cursor", "action_cost"]


def g(v, d=4):
    return f"{v:.{d}g}"


def loglik(r):
    d = json.load(open(os.path.join(r, "loglik.json")))
    print("| set | motor_noise, sigma_target, sigma_cursor, action_cost | point | lqg | ours | relative difference | gradient: largest relative difference |")
    print("|---|---|---|---:|---:|---:|---:|")
    for row in d["rows"]:
        p = row["params"]
        print(f"| {row['set']} | {', '.join(g(p[k]) for k in PARAMS)} | {row['point']} | {row['lqg']:.10f} | "
              f"{row['ours']:.10f} | {row['rel_diff']:.1e} | {row['grad_max_rel_diff']:.1e} |")
    print(f"\nlargest relative difference {d['max_rel_diff']:.1e}; largest gradient difference "
          f"{max(x['grad_max_rel_diff'] for x in d['rows']):.1e}; {d['nioc_gpu']}, lqg {d['versions']['lqg']}, "
          f"jax {d['versions']['jax']}")


def mle(r):
    d = json.load(open(os.path.join(r, "mle.json")))
    print("| set | parameter | truth | lqg (SE log10) | ours (SE log10) | ours/lqg − 1 | Δ/SE |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in d["rows"]:
        for k in PARAMS:
            v = row["params"][k]
            print(f"| {row['set']} | {k} | {g(v['truth'])} | {g(v['lqg'])} ({v['lqg_se_log10']:.3f}) | "
                  f"{g(v['ours'])} ({v['ours_se_log10']:.3f}) | {v['rel_diff']:+.4f} | {v['diff_in_ours_se']:+.2f} |")
    zs = [abs(row["params"][k]["diff_in_ours_se"]) for row in d["rows"] for k in PARAMS]
    print(f"\nlargest |Δ/SE| {max(zs):.2f}")
    print("\n| set | lqg (s) | ours (s) | lqg / ours | ΔlogL at the two estimates: lqg's likelihood, ours |")
    print("|---|---:|---:|---:|---|")
    for row in d["rows"]:
        ll = row["loglik"]
        print(f"| {row['set']} | {row['lqg_seconds']:.1f} | {row['ours_seconds']:.1f} | "
              f"{row['lqg_seconds'] / row['ours_seconds']:.1f} | "
              f"{ll['at_lqg']['lqg'] - ll['at_ours']['lqg']:+.4f}, {ll['at_ours']['ours'] - ll['at_lqg']['ours']:+.4f} |")
    print(f"\n{d['nioc_gpu']}, {d['cores']} cores")


def recovery(r, name):
    s = json.load(open(os.path.join(r, f"{name}.json")))
    rows = list(csv.DictReader(open(os.path.join(r, f"{name}.csv"))))
    sets = sorted({int(x["set"]) for x in rows})
    if len(sets) <= 5:
        print("| set | " + " | ".join(f"{k}: truth → estimate" for k in PARAMS) + " |")
        print("|---|" + "---|" * len(PARAMS))
        for i in sets:
            cells = []
            for k in PARAMS:
                x = next(x for x in rows if int(x["set"]) == i and x["param"] == k)
                cells.append(f"{g(float(x['truth']))} → {g(float(x['estimate']))} ({float(x['rel_err']):+.1%})")
            print(f"| {i} | " + " | ".join(cells) + " |")
    if len(sets) > 5:
        print("| | " + " | ".join(PARAMS) + " |")
        print("|---|" + "---:|" * len(PARAMS))
    print("| median \\|rel. err.\\| | " + " | ".join(f"{s['median_abs_rel_err'][k]:.1%}" for k in PARAMS) + " |")
    print(f"\n{len(sets)} sets; largest |rel. err.|: " + ", ".join(f"{k} {s['max_abs_rel_err'][k]:.0%}" for k in PARAMS)
          + f"; {'within' if s['pass_10pct'] else 'NOT within'} 10 %; fit {s['wall_seconds']:.0f} s; {s['nioc_gpu']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    a = ap.parse_args()
    for title, f in (("log-likelihood", lambda: loglik(a.results)), ("MLE", lambda: mle(a.results)),
                     ("recovery, 5 sets", lambda: recovery(a.results, "recovery")),
                     ("recovery, 20 random sets", lambda: recovery(a.results, "recovery-random"))):
        print(f"\n## {title}\n")
        try:
            f()
        except FileNotFoundError as e:
            print(f"(missing: {e.filename})")


if __name__ == "__main__":
    main()
