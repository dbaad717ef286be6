"""Shared helpers of the lqg comparison scripts (bench/lqg).

lqg (https://pypi.org/project/lqg/, AGPL-3.0) is installed from PyPI into bench/lqg/.venv and
only imported and run here: nothing of its code is copied or translated into this repository.
"""

import csv
import json
import os
import re
import subprocess
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import random  # noqa: E402

import lqg  # noqa: E402
from lqg.belief import kf  # noqa: E402
from lqg.tracking import BoundedActor  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
RESULTS = os.path.join(HERE, "results")
NIOC = os.environ.get("NIOC_GPU", os.path.join(ROOT, "bin", "nioc-gpu"))
TASK_FILE = os.path.join(ROOT, "examples", "tasks", "tracking.toml")

DT = 1.0 / 60.0
PROCESS_NOISE = 1.0  # fixed, as in lqg's inference and in tracking.toml
STEPS = 1067  # time steps of a trial: 1068 states, t = 0..1067
# The agent's initial posterior covariance: tracking.toml's belief_cov, passed to lqg as Sigma0
# (lqg's default, V[0] V[0]^T, depends on the motor noise).
SIGMA0 = np.array([[1.0, 0.0], [0.0, 0.25]])

# Our parameter names -> lqg's BoundedActor keyword arguments.
LQG_NAME = {
    "motor_noise": "action_variability",
    "sigma_target": "sigma_target",
    "sigma_cursor": "sigma_cursor",
    "action_cost": "action_cost",
}
PARAMS = list(LQG_NAME)

# Parameter sets: inside tracking.toml's boxes and inside lqg's own MLE boxes
# (lqg.infer.mle.default_constraints: action_cost [1e-7, 1e-2], action_variability [0.01, 2],
# sigma_target and sigma_cursor [0.01, 100]).
SETS = [
    {"motor_noise": 0.5, "sigma_target": 6.0, "sigma_cursor": 6.0, "action_cost": 1e-3},
    {"motor_noise": 0.2, "sigma_target": 3.0, "sigma_cursor": 10.0, "action_cost": 1e-4},
    {"motor_noise": 1.0, "sigma_target": 12.0, "sigma_cursor": 4.0, "action_cost": 3e-3},
    {"motor_noise": 0.3, "sigma_target": 20.0, "sigma_cursor": 15.0, "action_cost": 3e-4},
    {"motor_noise": 0.8, "sigma_target": 2.0, "sigma_cursor": 2.0, "action_cost": 3e-5},
]

# Random parameter sets (simulate.py --random N): log-uniform in these ranges, which lie inside
# both tracking.toml's boxes and lqg's MLE boxes.
RANDOM_RANGES = {"motor_noise": (0.1, 1.5), "sigma_target": (1.0, 30.0), "sigma_cursor": (1.0, 30.0),
                 "action_cost": (1e-5, 1e-2)}


def random_sets(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        out.append({k: float(10 ** rng.uniform(np.log10(lo), np.log10(hi))) for k, (lo, hi) in RANDOM_RANGES.items()})
    return out


def lqg_model(params, steps=STEPS):
    """lqg's BoundedActor with our parameters (natural units)."""
    kw = {LQG_NAME[k]: v for k, v in params.items()}
    return BoundedActor(process_noise=PROCESS_NOISE, dt=DT, T=steps, **kw)


def simulate(params, trials, seed, steps=STEPS):
    """lqg's own simulator (System.simulate): x0 = 0, xhat0 = 0, Sigma0 = SIGMA0.
    Returns an array (trials, steps+1, 2)."""
    m = lqg_model(params, steps)
    x = m.simulate(random.PRNGKey(seed), n=trials, x0=jnp.zeros(2), xhat0=jnp.zeros(2),
                   Sigma0=jnp.asarray(SIGMA0))
    return np.asarray(x)


def belief_prior(params, steps=STEPS):
    """The spread of the agent's initial belief mean that lqg's likelihood implies.

    lqg's conditional_moments starts the joint (state, belief) at covariance G[0] G[0]^T and
    conditions it on the first observed state; what is left for the belief is K_0 W W^T K_0^T,
    with K_0 lqg's first Kalman gain (its own kf.forward from Sigma0)."""
    m = lqg_model(params, steps)
    K = kf.forward(m.actor, Sigma0=jnp.asarray(SIGMA0))
    W = m.actor.W[0]
    return np.asarray(K[0] @ W @ W.T @ K[0].T)


def lqg_loglik(params, x, steps=None):
    """lqg's log-likelihood of trials x (n, T+1, 2), summed over trials, Sigma0 = SIGMA0."""
    m = lqg_model(params, x.shape[1] - 1 if steps is None else steps)
    ll = m.log_likelihood(jnp.asarray(x), Sigma0=jnp.asarray(SIGMA0))
    return float(jnp.sum(ll))


def write_csv(path, x, subject=None):
    """Our data format: subject,trial,t,target,cursor (trials numbered from 1)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["subject", "trial", "t", "target", "cursor"])
        for i, trial in enumerate(x):
            for t, row in enumerate(trial):
                w.writerow([1 if subject is None else subject, i + 1, t, repr(float(row[0])), repr(float(row[1]))])


def read_csv(path):
    """Reads our CSV back into {subject: array (trials, T+1, 2)} (equal-length trials)."""
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            s = int(r.get("subject", 1))
            rows.setdefault(s, {}).setdefault(int(r["trial"]), []).append(
                (int(r["t"]), float(r["target"]), float(r["cursor"])))
    out = {}
    for s, trials in rows.items():
        out[s] = np.array([[v[1:] for v in sorted(trials[k])] for k in sorted(trials)])
    return out


def param_arg(params):
    return ",".join(f"{k}={float(v)!r}" for k, v in params.items())


def matrix_arg(m):
    """A matrix as --belief-prior takes it: rows separated by ';', entries by ','."""
    return ";".join(",".join(repr(float(v)) for v in row) for row in np.asarray(m))


def run(cmd, **kw):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.time() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout, p.stderr, wall


def git_rev():
    """The version of the nioc-gpu binary the scripts run (nioc-gpu --version)."""
    try:
        return subprocess.run([NIOC, "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def versions():
    import importlib.metadata as md
    return {p: md.version(p) for p in ("lqg", "jax", "jaxlib", "numpyro", "optimistix", "numpy")}


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
