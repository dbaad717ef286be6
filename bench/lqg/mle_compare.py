#!/usr/bin/env python3
"""lqg's maximum-likelihood fit against nioc-gpu's, on tracking data simulated by lqg.

    bench/lqg/.venv/bin/python bench/lqg/simulate.py            # data/set<i>.csv first
    bench/lqg/.venv/bin/python bench/lqg/mle_compare.py [--sets 0,1,2] [--restarts 5]
        [--out bench/lqg/results/mle.json]

For each set: lqg.infer.max_likelihood(key, x, model=BoundedActor, process_noise=1, dt=1/60)
as lqg ships it (5 restarts from PRNGKey(0), vmapped L-BFGS of optimistix, its own parameter
boxes and its own Sigma0 = V V^T), timed from the call to the result (one process for all
sets: the first set's time includes JAX's compilation, which later sets of the same shape
reuse); then

    nioc-gpu fit --task-file examples/tasks/tracking.toml --data D --temperature task
        --restarts R --check-draws 0 --out results/fits/mle_set<i>.jsonl

timed the same way (wall time of the process). lqg's standard errors: the inverse Hessian of
its own log-likelihood (jax.hessian, Sigma0 as in its fit) in log10 parameters at its estimate;
ours: the fit's (stderr_scaled, log10). Both log-likelihoods (lqg's with Sigma0 = belief_cov
and no belief spread; ours) are evaluated at both estimates.
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import jnp, jax, random  # noqa: E402

from lqg.infer import max_likelihood  # noqa: E402
from lqg.tracking import BoundedActor  # noqa: E402

INV = {v: k for k, v in common.LQG_NAME.items()}


def lqg_hessian_se(est, x):
    """Standard errors in log10 units from the Hessian of lqg's own log-likelihood (its Sigma0
    default, V V^T, as in its fit) at its estimate."""
    names = common.PARAMS

    def nll(logv):
        p = {common.LQG_NAME[k]: 10.0 ** logv[j] for j, k in enumerate(names)}
        m = BoundedActor(process_noise=common.PROCESS_NOISE, dt=common.DT, T=x.shape[1] - 1, **p)
        return -jnp.sum(m.log_likelihood(jnp.asarray(x)))

    v = jnp.array([math.log10(est[k]) for k in names])
    H = jax.hessian(nll)(v)
    cov = jnp.linalg.inv(H)
    ev = jnp.linalg.eigvalsh(H)
    return {k: float(jnp.sqrt(cov[j, j])) for j, k in enumerate(names)}, bool(ev[0] > 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="0,1,2")
    ap.add_argument("--restarts", type=int, default=5, help="nioc-gpu fit --restarts (lqg: 5, fixed)")
    ap.add_argument("--data-dir", default=os.path.join(common.HERE, "data"))
    ap.add_argument("--task-file", default=common.TASK_FILE)
    ap.add_argument("--out", default=os.path.join(common.RESULTS, "mle.json"))
    a = ap.parse_args()
    fits = os.path.join(common.RESULTS, "fits")
    os.makedirs(fits, exist_ok=True)
    rows = []
    for i in (int(s) for s in a.sets.split(",")):
        truth = common.SETS[i]
        data = os.path.join(a.data_dir, f"set{i}.csv")
        x = common.read_csv(data)[1]
        t0 = time.time()
        est = max_likelihood(random.PRNGKey(0), jnp.asarray(x), model=BoundedActor,
                             process_noise=common.PROCESS_NOISE, dt=common.DT)
        est = {k: float(v) for k, v in est.items()}
        lqg_s = time.time() - t0
        lqg_est = {INV[k]: v for k, v in est.items()}
        lqg_se, lqg_pd = lqg_hessian_se(lqg_est, x)
        out = os.path.join(fits, f"mle_set{i}.jsonl")
        for f in (out, out[:-len(".jsonl")] + ".csv"):
            if os.path.exists(f):
                os.remove(f)
        cmd = [common.NIOC, "fit", "--task-file", a.task_file, "--data", data, "--temperature", "task",
               "--restarts", str(a.restarts), "--check-draws", "0", "--out", out]
        _, _, ours_s = common.run(cmd)
        rec = json.loads(open(out).read().strip().splitlines()[-1])
        ours_est, ours_se = rec["params"], rec["stderr_scaled"]
        # both likelihoods at both estimates
        ll = {}
        for label, p in (("at_lqg", lqg_est), ("at_ours", ours_est)):
            p = {k: p[k] for k in common.PARAMS}
            o, _, _ = common.run([common.NIOC, "loglik", "--task-file", a.task_file, "--data", data,
                                  "--params", common.param_arg(p), "--temperature", "task"])
            ll[label] = {"lqg": common.lqg_loglik(p, x), "ours": json.loads(o.strip().splitlines()[-1])["loglik"]}
        per = {}
        for k in common.PARAMS:
            d = math.log10(ours_est[k]) - math.log10(lqg_est[k])
            per[k] = {"truth": truth[k], "lqg": lqg_est[k], "ours": ours_est[k],
                      "lqg_se_log10": lqg_se[k], "ours_se_log10": ours_se[k],
                      "diff_log10": d, "diff_in_ours_se": d / ours_se[k], "diff_in_lqg_se": d / lqg_se[k],
                      "rel_diff": ours_est[k] / lqg_est[k] - 1}
        row = {"set": i, "trials": int(x.shape[0]), "steps": int(x.shape[1] - 1), "params": per,
               "lqg_seconds": lqg_s, "ours_seconds": ours_s, "ours_fit_seconds": rec.get("seconds"),
               "ours_restarts": a.restarts, "ours_restarts_at_best": rec.get("restarts_at_best"),
               "lqg_hessian_pd": lqg_pd, "loglik": ll, "ours_command": " ".join(cmd).replace(common.ROOT + "/", "")}
        rows.append(row)
        print(f"set{i}: lqg {lqg_s:.1f} s, ours {ours_s:.1f} s", flush=True)
        for k, v in per.items():
            print(f"  {k:13s} truth {v['truth']:<8g} lqg {v['lqg']:.5g} (se {v['lqg_se_log10']:.3f})  "
                  f"ours {v['ours']:.5g} (se {v['ours_se_log10']:.3f})  diff/se_ours {v['diff_in_ours_se']:+.2f}",
                  flush=True)
    common.write_json(a.out, {"versions": common.versions(), "nioc_gpu": common.git_rev(), "cores": os.cpu_count(),
                              "rows": rows})


if __name__ == "__main__":
    main()
