"""Reference numbers for package bms (bms/testdata/groupbmc.json) from the groupBMC package.

groupBMC (PyPI, version 1.0) is a Python port of the VBA toolbox's VBA_groupBMC (Rigoux et
al. 2014). Run, from the repository root, in a virtual environment with the packages this
was made with:

    python3 -m venv /tmp/venv
    /tmp/venv/bin/pip install groupBMC==1.0 "numpy<1.24" scipy   # groupBMC uses np.bool
    /tmp/venv/bin/python bench/bms/groupbmc_reference.py > bms/testdata/groupbmc.json

Two things differ from VBA_groupBMC and are handled here:

- groupBMC's default prior is 1/K a model (its families' prior), VBA_groupBMC's is 1. Cases
  named "default prior" use groupBMC's default; "flat prior" ones pass α0 = 1.
- groupBMC's null free energy F0 adds log α0_k where VBA_groupBMC adds log(1/K) (equal
  frequencies); the two agree for its default prior only. For the flat prior, F0 here is
  VBA_groupBMC's (a subclass that uses log(1/K)), and BOR and the protected exceedance
  probabilities follow from it.

The iterations run 20000 times (tolerance 0), not to groupBMC's defaults (a change in the
free energy below 1e-4, at most 32), so that the numbers are those of the fixed point: near
it the free energy changes as the square of α's change, and a tolerance on it stops early.
"""
import json
import sys
from math import exp

import numpy as np
from groupBMC.groupBMC import GroupBMC, GroupBMCResult
from scipy.special import softmax



class VBANull(GroupBMC):
    """GroupBMC with VBA_groupBMC's null free energy: equal frequencies 1/K."""

    def F0(self):
        K = self.L.shape[0]
        w = softmax(self.L, axis=0)
        return (w * (self.L - np.log(K) - np.log(w + np.finfo(float).eps))).sum()


def case(name, L, flat):
    """L: subjects × models."""
    L = np.asarray(L, dtype=float)
    K = L.shape[1]
    cls = VBANull if flat else GroupBMC
    a0 = np.ones(K) if flat else None
    g = cls(L.T, α_0=a0, max_iter=20000, tolerance=0)
    res: GroupBMCResult = g.get_result()
    f0, f1 = g.F0(), g.F1()
    return {
        "name": name,
        "log_evidence": L.tolist(),
        "prior": g.α_0.flatten().tolist(),
        "alpha": g.α.flatten().tolist(),
        "frequency": res.frequency_mean.tolist(),
        "exceedance": res.exceedance_probability.tolist(),
        "protected_exceedance": res.protected_exceedance_probability.tolist(),
        "bor": 1 / (1 + exp(f1 - f0)),
        "f0": f0,
        "f1": f1,
        "posterior": res.attribution.T.tolist(),
    }


def main():
    rng = np.random.default_rng(20261125)
    cases = []
    # Two models, 20 subjects, 14 favour model 1 by 1-6 nats.
    d = rng.uniform(1, 6, 20) * np.where(np.arange(20) < 14, 1, -1)
    base = rng.uniform(-500, -100, 20)
    L2 = np.stack([base + d, base], axis=1)
    # Three models, 12 subjects, weak evidence.
    L3 = rng.normal(-50, 1.5, (12, 3))
    # Four models, 30 subjects, model 3 generates half of them.
    L4 = rng.normal(-200, 2, (30, 4))
    L4[:15, 2] += 4
    # Two models, 8 subjects, evidence that barely differs.
    L5 = np.stack([np.zeros(8), rng.normal(0, 0.5, 8)], axis=1)
    for name, L in [("2 models, 20 subjects", L2), ("3 models, weak", L3), ("4 models, 30 subjects", L4),
                    ("2 models, noise", L5)]:
        cases.append(case(name + ", default prior", L, False))
        cases.append(case(name + ", flat prior", L, True))
    json.dump({
        "command": "python bench/bms/groupbmc_reference.py > bms/testdata/groupbmc.json",
        "made_with": "groupBMC 1.0 (PyPI), numpy %s; 2026-11-25" % np.__version__,
        "cases": cases,
    }, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
