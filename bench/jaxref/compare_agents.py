#!/usr/bin/env python3
"""Compare the behaviour of agents simulated at identical parameter sets (the data files of a
robustness study, bench/jaxref/robustness.py): for every pair of agents and every shared
subject, the distance between their mean trajectories in units of the trials' spread,

    d = mean over steps and state dimensions of |m_a(t) - m_b(t)| / sqrt((s_a(t)^2 + s_b(t)^2) / 2)

where m and s are the mean and standard deviation over trials. Two data sets drawn from the same
agent give d of about 0.8 * sqrt(2 / trials) (0.16 at 50 trials) from sampling alone; d near 1
or above means the agents behave differently. Also the spread ratio: the geometric mean over
steps and state dimensions of s_a(t) / s_b(t) (1 for agents equally variable). Prints the
medians over subjects per pair.

Usage:
    python3 bench/jaxref/compare_agents.py DIR/ref/data.csv DIR/ours-nonoise/data.csv ...
"""

import csv
import itertools
import math
import statistics
import sys


def load(path):
    """subject -> step -> list of state vectors (one per trial)."""
    out = {}
    with open(path, newline="") as f:
        r = csv.reader(f)
        head = next(r)
        for row in r:
            subj, t = row[0], int(row[2])
            out.setdefault(subj, {}).setdefault(t, []).append([float(v) for v in row[3:]])
    return out


def moments(trials):
    n, dim = len(trials), len(trials[0])
    m = [sum(x[i] for x in trials) / n for i in range(dim)]
    s = [math.sqrt(sum((x[i] - m[i]) ** 2 for x in trials) / max(n - 1, 1)) for i in range(dim)]
    return m, s


def distance(a, b):
    """(d, spread ratio): the mean-trajectory distance above and the geometric mean over steps
    and dimensions of s_a / s_b."""
    ds, logr = [], []
    for t in sorted(set(a) & set(b)):
        ma, sa = moments(a[t])
        mb, sb = moments(b[t])
        for i in range(len(ma)):
            sd = math.sqrt((sa[i] ** 2 + sb[i] ** 2) / 2)
            if sd > 1e-12:
                ds.append(abs(ma[i] - mb[i]) / sd)
            if sa[i] > 1e-12 and sb[i] > 1e-12:
                logr.append(math.log(sa[i] / sb[i]))
    nan = float("nan")
    return (statistics.mean(ds) if ds else nan), (math.exp(statistics.mean(logr)) if logr else nan)


def main(paths):
    if len(paths) < 2:
        sys.exit(__doc__)
    data = {p: load(p) for p in paths}
    for p, q in itertools.combinations(paths, 2):
        subjects = sorted(set(data[p]) & set(data[q]))
        dr = [distance(data[p][s], data[q][s]) for s in subjects]
        d, r = [x[0] for x in dr], [x[1] for x in dr]
        print(f"{p}  vs  {q}: median d {statistics.median(d):.2f} (min {min(d):.2f}, max {max(d):.2f}), "
              f"median spread ratio {statistics.median(r):.2f} (min {min(r):.2f}, max {max(r):.2f}) "
              f"over {len(d)} subjects")


if __name__ == "__main__":
    main(sys.argv[1:])
