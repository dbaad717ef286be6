#!/usr/bin/env python3
"""Simulate data sets with the JAX reference's own agents, for any task and parameter draw.

Usage:
    python bench/jaxref/refsim.py --ref REF_PATH --task pendulum --truth truth.csv \
        [--observe partial|full] [--trials 50] [--seed 1] [--max-iter 10] --out data.csv

REF_PATH is a local checkout of RothkopfLab/nioc-neurips (it has no licence: this script only
imports it as the Python package ``nioc`` and runs it; nothing of it is copied here).

truth.csv has a header ``subject,<parameter names>`` (our names, natural units) and one row per
data set. For each row the reference's agent is built exactly as its example.py does: its
iLQG (``gilqr.solve`` from U = 0, ``--max-iter`` iterations, 10 by default as in the paper's
scripts), ``create_lqg_policy`` run by ``EKFWrapper(Env)(b0=(x0, I))`` when partially
observable, ``create_lqr_policy`` run on the true state by ``FullyObservedWrapper(Env)``
when fully observable; x0 is the environment's reset state. Light-dark's agent is built as its
fig4_infoseeking.py does: the belief-space iLQG ``gilqg.solve`` (initial belief covariance 3 I,
50 iterations by default) and ``EKFWrapper(LightDark)(b0=(x0, 3 I))``. It acts deterministically on its
belief (no policy noise). The trials of set i use ``jax.random.fold_in(PRNGKey(seed), i)``.

The output is one nioc-gpu trajectory file: ``subject,trial,t,<states>``, one subject per row
of truth.csv (same IDs), values with 17 significant digits. A set whose simulation is not
finite is left out and named on stderr and in ``<out>.excluded`` (one ID per line).
Versions: see requirements.txt (jax 0.4.23, float64).
"""

import argparse
import csv
import os
import sys
import time

import numpy as np

# Our task name -> (reference environment class name, state names in our order). Reaching is
# included for completeness, but the reference's arm dynamics differ from ours (docs/method.md,
# "Deliberate differences"): its data are a different model for our likelihood.
TASKS = {
    "pendulum": ("Pendulum", ["theta", "omega"]),
    "navigation": ("Navigation", ["x", "y", "heading", "speed"]),
    "cartpole": ("CartPole", ["x", "theta", "x_vel", "omega"]),
    "reaching": ("NonlinearReaching", ["theta1", "theta2", "omega1", "omega2"]),
    "lightdark": ("LightDark", ["x", "y"]),
}
STEPS = {"pendulum": 50, "navigation": 50, "cartpole": 200, "reaching": 50, "lightdark": 50}

# Our parameter name -> (the reference's name, our value -> its value), where they differ.
# Light-dark: its target position is exp_target_pos = 10**target_x (it optimizes in log space),
# its light preference preferred_pos_cost.
RENAME = {
    "lightdark": {"target_x": ("exp_target_pos", lambda v: 10.0 ** v),
                  "light_cost": ("preferred_pos_cost", lambda v: v)},
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True, help="local checkout of RothkopfLab/nioc-neurips")
    ap.add_argument("--task", required=True, choices=sorted(TASKS))
    ap.add_argument("--truth", required=True, help="CSV: subject,<parameter names> (natural units)")
    ap.add_argument("--observe", default="partial", choices=["partial", "full"])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--steps", type=int, default=0, help="time steps; default: the task's")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-iter", type=int, default=0, help="iterations of the reference's iLQG (default: 10 as its scripts, light-dark 50 as its fig4_infoseeking.py)")
    ap.add_argument("--out", required=True, help="output trajectory CSV")
    return ap.parse_args(argv)


def read_truth(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows or "subject" not in rows[0]:
        sys.exit(f"refsim: {path}: need a header 'subject,<parameter names>' and at least one row")
    out = []
    for i, r in enumerate(rows, start=2):
        try:
            out.append((r["subject"], {k: float(v) for k, v in r.items() if k != "subject"}))
        except ValueError as e:
            sys.exit(f"refsim: {path}: row {i}: {e}")
    return out


def make_simulator(ref, task, observe, trials, steps, max_iter):
    """Returns sim(key, values) -> states [trials, steps+1, n], jitted once per task."""
    sys.path.insert(0, os.path.abspath(ref))
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import nioc.envs as envs
    from nioc.control import gilqg, gilqr
    from nioc.control.policy import create_lqg_policy, create_lqr_policy
    from nioc.envs.wrappers import EKFWrapper, FullyObservedWrapper

    cls = getattr(envs, TASKS[task][0])
    env = cls()
    Params = cls.get_params_type()

    def sim(key, params):
        x0 = env._reset(None, params)
        U0 = jnp.zeros((steps, env.action_shape[0]))
        if task == "lightdark":
            Sigma0 = 3.0 * jnp.eye(x0.shape[0])
            gains, xbar, ubar = gilqg.solve(env, x0=x0, Sigma0=Sigma0, U_init=U0, max_iter=max_iter, params=params)
            agent = EKFWrapper(cls)(b0=(x0, Sigma0))
            xs, *_ = agent.simulate(key=key, steps=steps, trials=trials,
                                    policy=create_lqg_policy(gains, xbar, ubar), params=params)
            return xs
        gains, xbar, ubar = gilqr.solve(p=env, x0=x0, U_init=U0, params=params, max_iter=max_iter)
        if observe == "partial":
            agent = EKFWrapper(cls)(b0=(x0, jnp.eye(x0.shape[0])))
            xs, *_ = agent.simulate(key=key, steps=steps, trials=trials,
                                    policy=create_lqg_policy(gains, xbar, ubar), params=params)
        else:
            agent = FullyObservedWrapper(cls)()
            xs, *_ = agent.simulate(key, steps=steps, trials=trials,
                                    policy=create_lqr_policy(gains, xbar, ubar), params=params)
        return xs

    jsim = jax.jit(sim)

    def run(index, seed, values):
        key = jax.random.fold_in(jax.random.PRNGKey(seed), index)
        ref = {}
        for name, v in values.items():
            rname, conv = RENAME.get(task, {}).get(name, (name, lambda x: x))
            ref[rname] = conv(v)
        return np.asarray(jsim(key, Params(**ref)))

    return run


def main(argv=None):
    a = parse_args(argv)
    steps = a.steps or STEPS[a.task]
    if a.max_iter <= 0:
        a.max_iter = 50 if a.task == "lightdark" else 10
    truth = read_truth(a.truth)
    run = make_simulator(a.ref, a.task, a.observe, a.trials, steps, a.max_iter)
    names = TASKS[a.task][1]
    excluded = []
    t0 = time.time()
    tmp = a.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["subject", "trial", "t"] + names)
        for i, (sid, values) in enumerate(truth):
            xs = run(i, a.seed, values)
            if not np.all(np.isfinite(xs)):
                excluded.append(sid)
                print(f"refsim: set {sid}: the reference's simulation is not finite; left out", file=sys.stderr)
                continue
            for r in range(xs.shape[0]):
                for t in range(xs.shape[1]):
                    w.writerow([sid, r, t] + [format(float(v), ".17g") for v in xs[r, t]])
    os.replace(tmp, a.out)
    with open(a.out + ".excluded", "w") as f:
        f.writelines(s + "\n" for s in excluded)
    planner = "gilqg" if a.task == "lightdark" else "gilqr"
    print(f"refsim: {len(truth) - len(excluded)} set(s) × {a.trials} trials × {steps} steps of {a.task} "
          f"({a.observe}, reference {planner} max_iter {a.max_iter}, no policy noise) in {time.time() - t0:.1f} s "
          f"-> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
