#!/usr/bin/env python3
"""Fit every subject of a nioc-gpu trajectory file with the JAX reference's own maximum-likelihood
estimator, as its example.py does: ``compute_mle(x, ioc, key, restarts=R,
bounds=env.get_params_bounds(), optim="L-BFGS-B")`` with ``FixedLinearizationInverseGILQG(env,
b0=(x0, I), maxent_temp=τ)`` (partially observable) or ``FixedLinearizationInverseGILQR(env,
maxent_temp=τ)`` (fully observable), τ the paper's temperature of the task. Light-dark is fitted
as its fig4_infoseeking.py does: ``InverseILQG`` around ``gilqg.solve`` (50 iterations, initial
belief covariance 3 I), inferring preferred_pos_cost, sigma and exp_target_pos, reported in our
names (light_cost, sigma, target_x = log10 exp_target_pos).

Usage:
    python bench/jaxref/refmle.py --ref REF_PATH --task pendulum --data data.csv \
        [--observe partial] [--restarts 20] [--seed 1] --out fits.jsonl

Writes one JSON line per subject as it finishes ({subject, method "ref-mle", params (natural
units), fitted, loglik, seconds}); subjects already in --out are skipped (resume). Only runs
the reference (no licence): nothing of it is copied here.
"""

import argparse
import csv
import json
import os
import sys
import time

import numpy as np

from refsim import TASKS

TEMPERATURE = {"pendulum": 1e-3, "cartpole": 1e-3, "navigation": 1e-6, "reaching": 1e-6}

# Light-dark is fitted as the reference's fig4_infoseeking.py fits it: InverseILQG around its
# belief-space iLQG (gilqg, 50 iterations, initial belief covariance 3 I), no policy noise, the
# parameters it infers; its estimates are translated to our names.
LIGHTDARK_INFER = ["preferred_pos_cost", "sigma", "exp_target_pos"]


def read_data(path, names):
    """subject -> states [trials, T+1, n] from a nioc-gpu trajectory file."""
    subj = {}
    with open(path) as f:
        rd = csv.DictReader(f)
        for row in rd:
            sid = row.get("subject", "1")
            subj.setdefault(sid, {}).setdefault(int(row["trial"]), []).append([float(row[n]) for n in names])
    return {s: np.array([tr[k] for k in sorted(tr)]) for s, tr in subj.items()}


def reference_ioc(ref, task, observe):
    """Imports the reference from its checkout ref (float64) and returns jax, the task's
    environment, its parameter type and the inverse problem its example.py fits: (jax, env,
    Params, ioc)."""
    sys.path.insert(0, os.path.abspath(ref))
    import jax
    if not hasattr(jax, "tree_map"):  # removed in jax 0.6; the reference still calls it
        jax.tree_map = jax.tree_util.tree_map
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import nioc.envs as envs
    from nioc.infer import FixedLinearizationInverseGILQG, FixedLinearizationInverseGILQR, InverseILQG
    from nioc.control import gilqg

    cls = getattr(envs, TASKS[task][0])
    env = cls()
    Params = cls.get_params_type()
    x0 = env._reset(None, Params())
    temp = TEMPERATURE.get(task, 0.0)
    if task == "lightdark":
        ioc = InverseILQG(env=env, b0=(x0, 3.0 * jnp.eye(x0.shape[0])), solve=gilqg.solve, kf=gilqg, max_iter=50)
    elif observe == "partial":
        ioc = FixedLinearizationInverseGILQG(env, b0=(x0, jnp.eye(x0.shape[0])), maxent_temp=temp)
    else:
        ioc = FixedLinearizationInverseGILQR(env, maxent_temp=temp)
    return jax, env, Params, ioc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--task", required=True, choices=sorted(TASKS))
    ap.add_argument("--data", required=True)
    ap.add_argument("--observe", default="partial", choices=["partial", "full"])
    ap.add_argument("--restarts", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    jax, env, Params, ioc = reference_ioc(a.ref, a.task, a.observe)
    import jax.numpy as jnp
    from nioc.infer.utils import compute_mle
    infer = LIGHTDARK_INFER if a.task == "lightdark" else None
    done = set()
    if os.path.exists(a.out):
        with open(a.out) as f:
            done = {json.loads(l)["subject"] for l in f if l.strip()}
    data = read_data(a.data, TASKS[a.task][1])
    with open(a.out, "a") as out:
        for i, (sid, x) in enumerate(data.items()):
            if sid in done:
                continue
            t0 = time.time()
            key = jax.random.fold_in(jax.random.PRNGKey(a.seed), i)
            res = compute_mle(jnp.asarray(x), ioc, key, restarts=a.restarts, bounds=env.get_params_bounds(),
                              optim="L-BFGS-B", params=infer)
            params = {n: float(getattr(res.params, n)) for n in Params._fields}
            if a.task == "lightdark":
                params = {"target_x": float(np.log10(params["exp_target_pos"])),
                          "light_cost": params["preferred_pos_cost"], "sigma": params["sigma"]}
            # Fully observable, the reference's likelihood (an LQR agent) does not depend on the
            # observation noise: its estimate is wherever the optimizer left it, so it is kept
            # in params but not listed as fitted (and not scored).
            fitted = [n for n in params if not (a.observe == "full" and n == "obs_noise")]
            rec = {"subject": sid, "task": a.task, "method": "ref-mle", "observe": a.observe, "params": params,
                   "fitted": fitted, "loglik": -float(res.state.fun_val),
                   "seconds": round(time.time() - t0, 2)}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(f"refmle: {sid}: {params} ({rec['seconds']} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
