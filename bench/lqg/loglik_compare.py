#!/usr/bin/env python3
"""lqg's log-likelihood against nioc-gpu's on data simulated by lqg, tracking task.

    bench/lqg/.venv/bin/python bench/lqg/loglik_compare.py [--sets 0,1,2,3,4] [--trials 20]
        [--steps 1067] [--seed 1000] [--out bench/lqg/results/loglik.json]

For each parameter set i of common.SETS, lqg's simulator makes `trials` trials (seed + i);
then, at the true parameters and at a second point (every parameter x1.3, action cost x0.5),
lqg's BoundedActor.log_likelihood(x, Sigma0=S) (S: tracking.toml's belief_cov), summed over
trials, and its gradient (jax.grad, natural units) are set against

    nioc-gpu loglik --task-file examples/tasks/tracking.toml --data D --params P
        --temperature task --belief-prior "K0 W W^T K0^T"

where K0 W W^T K0^T is the spread of the agent's initial belief mean that lqg's likelihood
implies (common.belief_prior: lqg's own first Kalman gain K0 from kf.forward). The relative
difference |ours - lqg| / |lqg| is the check (target: <= 1e-8). Gradients are compared in log10
units (ours: d/dlog10 theta, as loglik prints it); lqg's spread K0 W W^T K0^T moves with theta
while --belief-prior holds it fixed, so ours gets that term added, a central difference of our
log-likelihood in the spread alone (step 1e-4 in log10 theta_k): it is a small term, so the
comparison stays accurate to about 1e-8 of the gradient.
"""

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import jnp, jax  # noqa: E402

H = 1e-4  # log10 step of the belief spread's central difference


def lqg_value_and_grad(params, x):
    names = list(params)

    def f(vals):
        return _ll(dict(zip(names, vals)), x)

    v, g = jax.value_and_grad(f)([jnp.asarray(float(params[k])) for k in names])
    return float(v), {k: float(gi) for k, gi in zip(names, g)}


def _ll(params, x):
    m = common.lqg_model(params, x.shape[1] - 1)
    return jnp.sum(m.log_likelihood(jnp.asarray(x), Sigma0=jnp.asarray(common.SIGMA0)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(str(i) for i in range(len(common.SETS))))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--steps", type=int, default=common.STEPS)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--task-file", default=common.TASK_FILE)
    ap.add_argument("--extra", default="", help="extra flags for nioc-gpu loglik (space-separated)")
    ap.add_argument("--out", default=os.path.join(common.RESULTS, "loglik.json"))
    a = ap.parse_args()
    os.makedirs(os.path.join(common.HERE, "data"), exist_ok=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    rows = []
    for i in (int(s) for s in a.sets.split(",")):
        truth = common.SETS[i]
        x = common.simulate(truth, a.trials, a.seed + i, a.steps)
        data = os.path.join(common.HERE, "data", f"loglik_set{i}.csv")
        common.write_csv(data, x)
        other = {k: v * (0.5 if k == "action_cost" else 1.3) for k, v in truth.items()}
        for label, p in (("truth", truth), ("other", other)):
            prior = common.belief_prior(p, a.steps)
            lqg_ll, lqg_grad = lqg_value_and_grad(p, x)
            def ours_at(prior_matrix):
                cmd = [common.NIOC, "loglik", "--task-file", a.task_file, "--data", data,
                       "--params", common.param_arg(p), "--temperature", "task",
                       "--belief-prior", common.matrix_arg(prior_matrix)] + a.extra.split()
                out, _, wall = common.run(cmd)
                return json.loads(out.strip().splitlines()[-1]), cmd, wall

            ours, cmd, wall = ours_at(prior)
            rel = abs(ours["loglik"] - lqg_ll) / abs(lqg_ll)
            # Gradients in log10 units. Ours holds the belief spread fixed; lqg's moves it with
            # theta (K0 W W^T K0^T): add to ours that term, a central difference of our
            # log-likelihood in the spread alone (theta fixed), step H in log10(theta_k).
            lqg_g = {k: lqg_grad[k] * p[k] * math.log(10) for k in p}
            spread = {}
            for k in p:
                up = dict(p, **{k: p[k] * 10 ** H})
                dn = dict(p, **{k: p[k] * 10 ** -H})
                lu = ours_at(common.belief_prior(up, a.steps))[0]["loglik"]
                ld = ours_at(common.belief_prior(dn, a.steps))[0]["loglik"]
                spread[k] = (lu - ld) / (2 * H)
            ours_g = {k: ours["grad"][k] + spread[k] for k in p}
            grad_rel = max(abs(ours_g[k] - lqg_g[k]) / max(abs(lqg_g[k]), 1e-300) for k in p)
            row = {"set": i, "point": label, "params": p, "trials": a.trials, "steps": a.steps,
                   "belief_prior": prior.tolist(), "lqg": lqg_ll, "ours": ours["loglik"], "rel_diff": rel,
                   "lqg_grad_log10": lqg_g, "ours_grad_log10": ours["grad"], "ours_spread_term_log10": spread,
                   "grad_max_rel_diff": grad_rel, "ours_seconds": wall,
                   "command": " ".join(cmd).replace(common.ROOT + "/", "")}
            rows.append(row)
            print(f"set{i} {label:5s}  lqg {lqg_ll:.10f}  ours {ours['loglik']:.10f}  rel {rel:.2e}  "
                  f"grad max rel {grad_rel:.2e}", flush=True)
    common.write_json(a.out, {"versions": common.versions(), "nioc_gpu": common.git_rev(),
                              "Sigma0": common.SIGMA0.tolist(), "rows": rows,
                              "max_rel_diff": max(r["rel_diff"] for r in rows)})


if __name__ == "__main__":
    main()
