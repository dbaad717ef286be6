#!/usr/bin/env python3
"""Produce reference log-likelihood values with the JAX reference implementation.

Usage:
    python bench/jaxref/make_testdata.py REF_PATH OUT_DIR [--only TASK[,TASK...]]

REF_PATH is a local checkout of RothkopfLab/nioc-neurips (it has no licence:
this script only imports it as the Python package ``nioc``; nothing of it is
copied into this repository). OUT_DIR receives one CSV per simulated data set
and ``values.json`` with the reference log-likelihoods and their gradients.

All numbers written here come from running the reference code (simulation and
likelihoods), never from our Go implementation.
"""

import argparse
import csv
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
import traceback

import numpy as np


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ref_path", help="local checkout of RothkopfLab/nioc-neurips")
    ap.add_argument("out_dir", help="output folder (CSV files and values.json)")
    ap.add_argument("--only", default="",
                    help="comma-separated task names to run (default: all); "
                         "values.json then only holds these tasks")
    return ap.parse_args()


ARGS = parse_args()
sys.path.insert(0, os.path.abspath(ARGS.ref_path))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import random  # noqa: E402
from importlib.metadata import version as _version  # noqa: E402

from nioc.control import gilqr, gilqg  # noqa: E402
from nioc.control.policy import create_lqg_policy, create_lqr_policy  # noqa: E402
from nioc.envs import NonlinearReaching, Navigation, Pendulum, CartPole, LightDark  # noqa: E402
from nioc.envs.wrappers import EKFWrapper, FullyObservedWrapper  # noqa: E402
from nioc.infer import (FixedLinearizationInverseGILQG, FixedLinearizationInverseGILQR,  # noqa: E402
                        FixedInverseMaxEntBaseline, InverseILQG)

N_TRIALS = 10
N_PARAM_DRAWS = 2  # random parameter vectors per task, besides the defaults
FD_STEPS = (1e-4, 1e-5, 1e-6)  # steps in log10 space for the finite-difference check of the gradients
BASELINE_DEFAULT_TEMP = 1e-6  # default maxent_temp of the reference's FixedInverseMaxEntBaseline

# Parameter table, in OUR names. (name, lo, hi, default, scale). scale "log": the
# reference fits log10(value); "lin": the value itself is the search variable
# (lightdark target_x, whose reference parameter exp_target_pos = 10**target_x).
TASKS = [
    dict(name="reaching", cls=NonlinearReaching, T=50, seed=101, temp=1e-6,
         states=["theta1", "theta2", "omega1", "omega2"], sigma0=1.0,
         sim="gilqr", sim_max_iter=10,
         params=[("action_cost", 1e-5, 1e-1, 1e-4, "log"),
                 ("velocity_cost", 1e-3, 1e-1, 1e-2, "log"),
                 ("motor_noise", 1e-2, 1.0, 0.1, "log"),
                 ("obs_noise", 0.1, 100.0, 1.0, "log")]),
    dict(name="navigation", cls=Navigation, T=50, seed=102, temp=1e-6,
         states=["x", "y", "heading", "speed"], sigma0=1.0,
         sim="gilqr", sim_max_iter=10,
         params=[("action_cost", 1e-4, 1.0, 1e-3, "log"),
                 ("velocity_cost", 1e-4, 10.0, 1e-3, "log"),
                 ("motor_noise", 0.1, 1.0, 0.5, "log"),
                 ("obs_noise", 1e-2, 1.0, 0.1, "log")]),
    dict(name="pendulum", cls=Pendulum, T=50, seed=103, temp=1e-3,
         states=["theta", "omega"], sigma0=1.0,
         sim="gilqr", sim_max_iter=10,
         params=[("action_cost", 1e-3, 1e-1, 1e-3, "log"),
                 ("velocity_cost", 1e-3, 1e-1, 1e-2, "log"),
                 ("motor_noise", 0.1, 2.0, 0.1, "log"),
                 ("obs_noise", 1e-2, 10.0, 1.0, "log")]),
    dict(name="cartpole", cls=CartPole, T=200, seed=104, temp=1e-3,
         states=["x", "theta", "x_vel", "omega"], sigma0=1.0,
         sim="gilqr", sim_max_iter=10, truncate=50,
         params=[("action_cost", 5e-4, 1.0, 1e-3, "log"),
                 ("velocity_cost", 1e-2, 10.0, 1e-2, "log"),
                 ("motor_noise", 0.2, 1.5, 0.1, "log"),  # default lies below the box
                 ("obs_noise", 1e-2, 10.0, 1.0, "log")]),
    dict(name="lightdark", cls=LightDark, T=50, seed=105, temp=1e-5,
         states=["x", "y"], sigma0=3.0,
         sim="gilqg", sim_max_iter=50,
         # defaults used for simulation: target_x 0, light_cost 0, sigma 0.2
         # defaults used for evaluation: light_cost 0.05 (the search is in log10 space)
         params=[("target_x", -1.0, 1.0, 0.0, "lin"),
                 ("light_cost", 1e-2, 1.0, 0.05, "log"),
                 ("sigma", 1e-2, 1.0, 0.2, "log")],
         sim_params={"target_x": 0.0, "light_cost": 0.0, "sigma": 0.2}),
]


def ref_params(task, values):
    """Our parameter dict (natural scale) -> reference NamedTuple."""
    P = task["cls"].get_params_type()
    if task["name"] == "lightdark":
        return P(exp_target_pos=10.0 ** values["target_x"], sigma=values["sigma"],
                 preferred_pos_cost=values["light_cost"])
    return P(**values)


def ref_params_from_z(task, z):
    """Search vector z (log10 for "log" parameters, value for "lin") -> reference params.
    Every reference parameter is 10**z_i: for lightdark, exp_target_pos = 10**target_x."""
    P = task["cls"].get_params_type()
    names = [p[0] for p in task["params"]]
    v = {n: 10.0 ** z[i] for i, n in enumerate(names)}
    if task["name"] == "lightdark":
        return P(exp_target_pos=v["target_x"], sigma=v["sigma"], preferred_pos_cost=v["light_cost"])
    return P(**v)


def to_z(task, values):
    return np.array([math.log10(values[n]) if s == "log" else values[n]
                     for (n, lo, hi, d, s) in task["params"]], dtype=np.float64)


def param_vectors(task):
    """Defaults, then N_PARAM_DRAWS draws log-uniform (uniform for "lin") inside the bounds."""
    rng = np.random.default_rng(task["seed"])
    out = [("default", {n: d for (n, lo, hi, d, s) in task["params"]})]
    for k in range(N_PARAM_DRAWS):
        v = {}
        for (n, lo, hi, d, s) in task["params"]:
            if s == "log":
                v[n] = float(10.0 ** rng.uniform(math.log10(lo), math.log10(hi)))
            else:
                v[n] = float(rng.uniform(lo, hi))
        out.append((f"random{k + 1}", v))
    return out


def initial_state(task, env, params):
    if task["name"] == "lightdark":
        return jnp.array([2.0, 2.0])  # as in fig4_infoseeking.py
    return env._reset(None, params)


def simulate(task):
    """Simulate the partially and fully observable data sets exactly as example.py / fig4 do."""
    cls, T = task["cls"], task["T"]
    env = cls()
    sim_values = task.get("sim_params") or {n: d for (n, lo, hi, d, s) in task["params"]}
    params = ref_params(task, sim_values)
    x0 = initial_state(task, env, params)
    Sigma0 = jnp.eye(x0.shape[0]) * task["sigma0"]
    b0 = (x0, Sigma0)
    U_init = jnp.zeros((T, env.action_shape[0]))

    # partially observable agent
    if task["sim"] == "gilqg":
        gains, xbar, ubar = gilqg.solve(env, x0=x0, Sigma0=Sigma0, U_init=U_init,
                                        max_iter=task["sim_max_iter"], params=params)
    else:
        gains, xbar, ubar = gilqr.solve(p=env, x0=x0, U_init=U_init, params=params,
                                        max_iter=task["sim_max_iter"])
    policy = create_lqg_policy(gains, xbar, ubar)
    ekf = EKFWrapper(cls)(b0=b0)
    key = random.PRNGKey(task["seed"])
    xs_partial, *_ = jax.jit(lambda k: ekf.simulate(key=k, steps=T, trials=N_TRIALS,
                                                    policy=policy, params=params))(key)

    # fully observable agent: the gilqr solution, the policy sees the true state
    gains_r, xbar_r, ubar_r = gilqr.solve(p=env, x0=x0, U_init=U_init, params=params,
                                          max_iter=task["sim_max_iter"])
    policy_r = create_lqr_policy(gains_r, xbar_r, ubar_r)
    full_env = FullyObservedWrapper(cls)()
    key_full = random.PRNGKey(task["seed"] + 1000)
    xs_full, *_ = jax.jit(lambda k: full_env.simulate(k, steps=T, trials=N_TRIALS,
                                                      policy=policy_r, params=params))(key_full)
    return np.asarray(xs_partial), np.asarray(xs_full), x0, Sigma0, sim_values


def write_csv(path, xs, state_names):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["trial", "t"] + state_names)
        for i in range(xs.shape[0]):
            for t in range(xs.shape[1]):
                w.writerow([i, t] + [format(float(v), ".17g") for v in xs[i, t]])


def read_csv(path, d):
    rows = []
    with open(path) as f:
        r = csv.reader(f)
        next(r)
        for row in r:
            rows.append((int(row[0]), int(row[1]), [float(v) for v in row[2:2 + d]]))
    n = max(r[0] for r in rows) + 1
    T1 = max(r[1] for r in rows) + 1
    x = np.zeros((n, T1, d))
    for i, t, v in rows:
        x[i, t] = v
    return x


def finite(v):
    return v is not None and isinstance(v, float) and math.isfinite(v)


def jnum(v):
    """JSON-safe float (null for NaN/inf)."""
    v = float(v)
    return v if math.isfinite(v) else None


def methods_for(task):
    """(method, observe, temperature, constructor(env, x0, Sigma0)) for one task."""
    paper_T = task["temp"]
    temps = [0.0, paper_T]
    btemps = sorted({BASELINE_DEFAULT_TEMP, paper_T})
    out = []
    for tmp in temps:
        out.append(("ours", "partial", tmp,
                    lambda env, x0, S0, tmp=tmp: FixedLinearizationInverseGILQG(env, b0=(x0, S0),
                                                                                maxent_temp=tmp)))
    for tmp in temps:
        out.append(("full", "full", tmp,
                    lambda env, x0, S0, tmp=tmp: FixedLinearizationInverseGILQR(env, maxent_temp=tmp)))
    for obs in ["partial", "full"]:
        for tmp in btemps:
            out.append(("baseline", obs, tmp,
                        lambda env, x0, S0, tmp=tmp: FixedInverseMaxEntBaseline(env, maxent_temp=tmp)))
    if task["name"] == "lightdark":
        for tmp in temps:
            out.append(("ours_ilqg", "partial", tmp,
                        lambda env, x0, S0, tmp=tmp: InverseILQG(env=env, b0=(x0, S0), solve=gilqg.solve,
                                                                 kf=gilqg, maxent_temp=tmp,
                                                                 max_iter=task["sim_max_iter"])))
    return out


def evaluate(task, out_dir, data_files, x0, Sigma0, cases, log):
    env = task["cls"]()
    names = [p[0] for p in task["params"]]
    pvecs = param_vectors(task)
    d = len(task["states"])
    for (method, observe, tmp, make) in methods_for(task):
        for data_name in data_files[observe]:
            x_np = read_csv(os.path.join(out_dir, data_name), d)  # evaluate exactly the CSV values
            N, T = x_np.shape[0], x_np.shape[1] - 1
            x = jnp.asarray(x_np)
            try:
                ioc = make(env, x0, Sigma0)

                def f(z, x, ioc=ioc):
                    return ioc.loglikelihood(x, ref_params_from_z(task, z))

                fn = jax.jit(jax.value_and_grad(f))
            except Exception as e:  # noqa: BLE001
                fn, err = None, f"{type(e).__name__}: {e}"
            for (label, values) in pvecs:
                scale = N * T if method == "baseline" else 1
                case = dict(task=task["name"], observe=observe, data=data_name, method=method,
                            temperature=tmp, param_set=label, params=dict(values), N=N, T=T,
                            loglik=None, reference_raw=None, reference_reduction=(
                                "mean over trials and time steps (loglik = reference_raw * N * T)"
                                if method == "baseline" else "sum over trials and time steps"),
                            grad_log10={}, ok=False, note="")
                t0 = time.time()
                try:
                    if fn is None:
                        raise RuntimeError(err)
                    val, g = fn(jnp.asarray(to_z(task, values)), x)
                    val = float(val)
                    g = np.asarray(g, dtype=np.float64)
                    case["reference_raw"] = jnum(val)
                    case["loglik"] = jnum(val * scale)
                    case["grad_log10"] = {n: jnum(g[i] * scale) for i, n in enumerate(names)}
                    notes = []
                    if not math.isfinite(val):
                        notes.append(f"non-finite log-likelihood ({val})")
                    bad = [n for i, n in enumerate(names) if not math.isfinite(g[i])]
                    if bad:
                        notes.append("non-finite gradient for " + ", ".join(bad))
                    # central finite differences of the reference value (a check on jax.grad). Some
                    # likelihoods are strongly curved in log10 space, so several steps are tried and,
                    # per parameter, the one closest to jax.grad is kept (with its step).
                    z0 = to_z(task, values)
                    fd, fd_step, rel = {}, {}, []
                    for i, n in enumerate(names):
                        best = None
                        for h in FD_STEPS:
                            zp, zm = z0.copy(), z0.copy()
                            zp[i] += h
                            zm[i] -= h
                            vp = float(fn(jnp.asarray(zp), x)[0])
                            vm = float(fn(jnp.asarray(zm), x)[0])
                            est = (vp - vm) / (2 * h) * scale
                            r = abs(g[i] * scale - est) / max(abs(g[i] * scale), abs(est), 1.0)
                            if not math.isfinite(r):
                                r = math.inf
                            if best is None or r < best[0]:
                                best = (r, est, h)
                        rel.append(best[0])
                        fd[n], fd_step[n] = best[1], best[2]
                    case["grad_fd_log10"] = {n: jnum(v) for n, v in fd.items()}
                    case["grad_fd_step"] = fd_step
                    case["grad_fd_max_rel_diff"] = jnum(max(rel))
                    if not all(r <= 1e-3 for r in rel):
                        notes.append("jax.grad and central finite differences (steps %s in log10) differ by up "
                                     "to %.3g relative; compare gradients with care"
                                     % ("/".join("%g" % h for h in FD_STEPS), max(rel)))
                    if method == "ours_ilqg":
                        notes.append("gilqg.solve oscillates between two gain sets (see conventions): this value "
                                     "is not smooth in the parameters; gradients unusable")
                    case["ok"] = math.isfinite(val) and not bad
                    case["note"] = "; ".join(notes)
                except Exception as e:  # noqa: BLE001
                    case["ok"] = False
                    case["note"] = f"{type(e).__name__}: {e}"[:2000]
                    traceback.print_exc()
                case["seconds"] = round(time.time() - t0, 3)
                if task["name"] == "lightdark":
                    case["grad_note"] = "target_x: d loglik / d target_x (= d / d log10 exp_target_pos)"
                cases.append(case)
                log(f"  {task['name']:10s} {method:9s} {data_name:26s} T={T:3d} temp={tmp:<7g} "
                    f"{label:8s} loglik={case['loglik']} ok={case['ok']} ({case['seconds']} s) {case['note']}")


CONVENTIONS = [
    # filled in from reading the reference; kept here so values.json is self-describing
    "Data: x has shape (trials, T+1, state_dim) and holds the true states x_0..x_T; the likelihood is "
    "prod_t p(x_{t+1} | x_{0:t}) for t = 0..T-1, summed over trials: p(x_0) is NOT included.",
    "Per-trial linearization (ours, full, baseline): the reference vmaps over trials and linearizes each trial "
    "separately around its own observed states x_{0:T} and its own estimated controls (no averaging over trials).",
    "Controls are estimated per trial and time step by jaxopt.GaussNewton (maxiter=100, tol=1e-5 default, "
    "implicit_diff=True) on the residual f(x_t, u, noise=0) - x_{t+1}, started from u = 0; each step solves "
    "J'J delta = J'r by conjugate gradients (relative tolerance 1e-5) and it stops when ||delta|| < 1e-5. In all "
    "five tasks f(x, u, 0) is affine in u, so this is the ordinary least-squares control (one step, then a ~0 "
    "step); reaching (4 residuals, 2 controls) and pendulum (2 residuals, 1 control) leave a non-zero residual. "
    "Gradients flow through it by implicit differentiation (the least-squares solution's own derivative).",
    "Linearization (make_lqg_approx) at (x_t, u_t): A = df/dx, B = df/du, V = df/dnoise at noise 0 (so V "
    "already contains the signal-dependent part, e.g. motor_noise*diag(u)), Cx, Cu = d/dx, d/du of df/dnoise, "
    "F = dh/dx, W = dh/dnoise, D = d/dx of dh/dnoise, all at the data state x_t (t = 0..T-1); the cost is "
    "quadratised by autodiff: Q, q, R, r, P (= d2c/du dx) at (x_t, u_t), Qf, qf at x_T.",
    "Control gains for 'ours' and 'full' and 'baseline' come from generalized LQR (glqr.backward), not from the "
    "partially observable iLQG backward pass: H = R + B'SB + sum_i Cu_i' S Cu_i, G = P + B'SA + sum_i Cu_i' S Cx_i, "
    "g = r + B's + sum_i Cu_i' S V_i (with V the FULL noise Jacobian at (x_t, u_t), so for multiplicative noise the "
    "cross terms Cu_i' S V_i are non-zero), S_T = Qf, s_T = qf; "
    "S <- Q + A'SA + L'HL + L'G + G'L + sum_i Cx_i' S Cx_i, s <- q + A's + G'l + L'Hl + L'g + sum_i Cx_i' S V_i.",
    "Regularisation of H: Ht = H + max(0, eps - lambda_min(H)) I with eps = 1e-8; L = -Ht^{-1} G, "
    "l = -Ht^{-1} g, the policy-noise and baseline covariances use Ht, but the S/s recursions use the "
    "unregularised H.",
    "Policy: u_t = L_t (xhat_t - xbar_t) + l_t + ubar_t (+ sqrt(temperature) * cholesky(inv(Ht_t)) @ eps_t, "
    "eps_t ~ N(0, I), only when temperature > 0; with temperature 0 the policy is deterministic). xbar, ubar "
    "are the data states and estimated controls, so at xhat_t = x_t the mean control is u_t + l_t.",
    "Kalman gains ('ours'): K_t = A_t P_t F_t' (F_t P_t F_t' + W_t W_t')^{-1}, P_{t+1} = V_t V_t' + "
    "(A_t - K_t F_t) P_t A_t', P_0 = Sigma0 (the agent's initial belief covariance, I for all tasks but 3 I for "
    "lightdark); matrices at the data linearization points. The filter uses the observation of x_t to form "
    "xhat_{t+1} (as in the reference's EKF simulator: 'use observation at time t instead of t+1').",
    "Joint (state, belief) dynamics used for belief tracking: u = policy(t, xhat, policy_noise); "
    "x_{t+1} = f(x_t, u, v); xhat_{t+1} = f(xhat, u, 0) + K_t (h(x_t, w) - h(xhat, 0)). Covariance propagation "
    "uses Jacobians of this map w.r.t. xhat, v, w and policy_noise, evaluated at the OBSERVED x_t, at the current "
    "belief-tracking mean mu_t and zero noises (so the motor-noise Jacobian is evaluated at x_t and u(mu_t), and "
    "the observation-noise Jacobian at the true state x_t, not at the belief).",
    "Belief-tracking prior at t=0: mean = x0 from b0 (the known initial state, NOT x[:,0] of the data) and "
    "covariance = identity (jnp.eye), regardless of Sigma0 (also for lightdark where Sigma0 = 3 I).",
    "Conditioning on x_{t+1}: mu <- mu_z[b] + S_z[b,x] (S_z[x,x] + 1e-6 I)^{-1} (x_{t+1} - mu_z[x]), "
    "S <- S_z[b,b] - S_z[b,x] (S_z[x,x] + 1e-6 I)^{-1} S_z[x,b] (jitter 1e-6 I).",
    "Log-density ('ours', 'ours_ilqg'): sum over trials and t of log N(x_{t+1}; mu_z[x], S_z[x,x] + 1e-6 I), "
    "where S_z = J_b S J_b' + J_v J_v' + J_w J_w' + J_pi J_pi' (no extra process noise).",
    "'full' (fully observable, FixedLinearizationInverseGILQR): mean = f(x_t, u_t + l_t, 0) (policy at the true "
    "state), covariance = V V' + J_pi J_pi' with V = df/dnoise at (x_t, u_t + l_t) and J_pi = d f / d policy_noise; "
    "log-density with + 1e-6 I jitter, summed over trials and t. For tasks whose noise does not reach every state "
    "(e.g. reaching: angles are integrated deterministically) the jitter alone sets the variance of those components.",
    "'baseline' (FixedInverseMaxEntBaseline): per trial, glqr gains at the data; log N(u_t; u_t + l_t, "
    "temperature * inv(Ht_t)) with u_t the Gauss-Newton controls, no jitter; the reference returns jnp.mean over "
    "trials and time steps (values.json 'loglik' = reference_raw * N * T, 'reference_raw' = the mean). Default "
    "temperature 1e-6. It uses only the state dynamics and costs (the observation model does not enter).",
    "'ours_ilqg' (InverseILQG with solve = gilqg.solve, kf = gilqg, max_iter = 50; lightdark only): policy from "
    "partially observable iLQG (jaxopt.FixedPointIteration, implicit_diff=True, tol 1e-5) started from U = 0 and "
    "the nominal trajectory rolled out from x0, Kalman gains from gilqg.forward along the nominal trajectory "
    "(xbar, ubar) with xhat0 = x0 and Sigma0 = 3 I; same belief tracking and log-density as 'ours'. Gradients "
    "differentiate through the fixed point implicitly.",
    "Temperature argument: the reference calls it inv_temp in create_maxent_lqr_policy, but it multiplies the "
    "covariance (sqrt(temp) * chol(inv(Ht))), so it is a temperature, not an inverse temperature.",
    "Gradients in values.json are d loglik / d log10(param) (natural log10 of the natural-scale value; the "
    "reference optimises in log10 space), on the same (summed) scale as loglik; for lightdark target_x the "
    "gradient is d / d target_x (exp_target_pos = 10**target_x, so target_x is its log10).",
    "Lightdark parameters: reference exp_target_pos = 10**target_x (target position x coordinate is "
    "log10(exp_target_pos)), preferred_pos_cost = light_cost entering the running cost as 0.01 * light_cost * "
    "(x - 5)^2, sigma scales the observation noise std sigma * sqrt(0.5 (x - 5)^2 + 1e-6). The reference's fit "
    "bounds are exp_target_pos [0.1, 10], sigma [1e-2, 1], preferred_pos_cost [1e-3, 1]; its default sigma is 0.1 "
    "(fig4 simulates with sigma = 0.2).",
    "Possible bug in the reference (gilqg.forward, eqn 5.58): Sigma_b is propagated with "
    "(A + B L) Sigma_b (A @ B @ L)' - the second factor reads A @ B @ L, looks like a typo for (A + B L)'. "
    "It affects the iLQG Kalman gains used by gilqg.solve (lightdark simulation) and 'ours_ilqg', not 'ours'. "
    "gilqg.forward also initialises Sigma_b to xhat0 xhat0' (a second moment) rather than 0.",
    "Multivariate normal log-densities are jax.scipy.stats.multivariate_normal.logpdf (Cholesky based): "
    "-0.5 (k log(2 pi) + log det C + r' C^{-1} r) per time step; a covariance that is not positive definite "
    "gives NaN rather than an error.",
    "The fixed-linearization methods never use the solvers' own nominal trajectory: xbar, ubar = the data and "
    "the estimated controls, one backward pass, no line search. The iLQG solvers (gilqr.solve, gilqg.solve, "
    "used for simulation and ours_ilqg) run jaxopt.FixedPointIteration (tol 1e-5 on the change of the whole "
    "carry) of rollout + backward pass with a backtracking factor on l (halved while the rolled-out cost "
    "exceeds the previous cost, down to 1e-6), starting from U = 0, L = 0, l = 0, and finish with a rollout.",
    "Observed with this script (lightdark, sigma 0.2): gilqg.solve does not converge. Its gains alternate "
    "between two states on even and odd iterations (max |L_50 - L_49| ~ 0.83, |L_50 - L_52| ~ 2e-4), so "
    "FixedPointIteration never meets its tolerance and max_iter decides which branch is returned; with "
    "(A @ B @ L)' replaced by (A + B L)' in eqn 5.58 it converges (L identical from iteration to iteration). "
    "Consequently the 'ours_ilqg' log-likelihood is not a smooth function of the parameters (it jumps by "
    "up to ~700 nats, ~30 %, for a 1e-10 change of log10 sigma at the default) and its jax.grad (implicit differentiation that "
    "assumes a fixed point) disagrees with finite differences: treat 'ours_ilqg' values as reproducible only "
    "by a bit-identical computation and its gradients as unusable. The gilqr.solve runs used for simulation "
    "do converge (identical gains for max_iter 10..50).",
    "Minor: ilqr/gilqr/gilqg.solve return gains computed around the previous nominal together with the "
    "nominal re-rolled out under those gains, so the returned policy at its own nominal state applies the "
    "feed-forward l once more (u = ubar_t + l_t); negligible when l ~ 0 at convergence (lightdark gilqg: "
    "|l| ~ 2e-6).",
    "Navigation observation: heading - bearing is not angle-wrapped; pendulum final cost uses "
    "angle_normalize(theta)^2, whose autodiff Hessian is that of theta^2.",
]


def main():
    out_dir = ARGS.out_dir
    os.makedirs(out_dir, exist_ok=True)
    only = set(filter(None, ARGS.only.split(",")))
    log_lines = []

    def log(msg):
        print(msg, flush=True)
        log_lines.append(msg)

    try:
        commit = subprocess.run(["git", "-C", ARGS.ref_path, "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except Exception:  # noqa: BLE001
        commit = os.environ.get("NIOC_REF_COMMIT", "unknown")

    cases = []
    datasets = []
    t_start = time.time()
    for task in TASKS:
        if only and task["name"] not in only:
            continue
        log(f"== {task['name']}: simulating")
        xs_p, xs_f, x0, Sigma0, sim_values = simulate(task)
        for arr, what in ((xs_p, "partial"), (xs_f, "full")):
            if not np.all(np.isfinite(arr)):
                log(f"  WARNING: non-finite values in the simulated {what} data")
        files = {"partial": [f"{task['name']}_partial.csv"], "full": [f"{task['name']}_full.csv"]}
        write_csv(os.path.join(out_dir, files["partial"][0]), xs_p, task["states"])
        write_csv(os.path.join(out_dir, files["full"][0]), xs_f, task["states"])
        if task.get("truncate"):
            k = task["truncate"]
            for obs, arr in (("partial", xs_p), ("full", xs_f)):
                name = f"{task['name']}_{obs}_T{k}.csv"
                write_csv(os.path.join(out_dir, name), arr[:, :k + 1], task["states"])
                files[obs].append(name)
        for obs in ("partial", "full"):
            for name in files[obs]:
                datasets.append(dict(task=task["name"], observe=obs, file=name, trials=N_TRIALS,
                                     T=(task["T"] if "_T" not in name else task["truncate"]),
                                     states=task["states"], x0=[float(v) for v in np.asarray(x0)],
                                     Sigma0=np.asarray(Sigma0).tolist(), seed=task["seed"] + (0 if obs == "partial" else 1000),
                                     simulated_with=sim_values,
                                     agent=("partially observable iLQG (gilqg.solve, max_iter %d) + EKF" %
                                            task["sim_max_iter"] if (obs == "partial" and task["sim"] == "gilqg")
                                            else "fully observable iLQG (gilqr.solve, max_iter %d) + EKF" %
                                            task["sim_max_iter"] if obs == "partial"
                                            else "gilqr.solve (max_iter %d) LQR policy on the true state" %
                                            task["sim_max_iter"])))
        log(f"== {task['name']}: evaluating")
        evaluate(task, out_dir, files, x0, Sigma0, cases, log)

    result = {
        "reference": {"repo": "RothkopfLab/nioc-neurips", "commit": commit},
        "versions": {"python": platform.python_version(), "jax": _version("jax"),
                     "jaxlib": _version("jaxlib"), "jaxopt": _version("jaxopt"), "numpy": _version("numpy"),
                     "scipy": _version("scipy"),
                     "x64": bool(jax.config.read("jax_enable_x64")), "platform": jax.default_backend()},
        "command": "python " + shlex.join(sys.argv),
        "note": "All data and values were produced by running the reference implementation; 'loglik' and "
                "'grad_log10' are sums over trials and time steps (the baseline's reference_raw is a mean).",
        "datasets": datasets,
        "cases": cases,
        "conventions": CONVENTIONS,
        "summary": {"cases": len(cases), "ok": sum(c["ok"] for c in cases),
                    "failed": sum(not c["ok"] for c in cases),
                    "seconds": round(time.time() - t_start, 1)},
    }
    with open(os.path.join(out_dir, "values.json"), "w") as f:
        json.dump(result, f, indent=1, allow_nan=False)
        f.write("\n")
    log(f"wrote {len(cases)} cases ({result['summary']['ok']} ok, {result['summary']['failed']} failed) "
        f"in {result['summary']['seconds']} s")


if __name__ == "__main__":
    main()
