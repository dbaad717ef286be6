#!/usr/bin/env python3
"""Side-by-side comparison of nioc-gpu with the JAX reference (RothkopfLab/nioc-neurips).

Usage:
    python bench/jaxref/sidebyside.py --ref REF_PATH --nioc BIN
        [--tasks reaching,navigation,pendulum,cartpole] [--trials 50] [--restarts 50]
        [--sets 1] [--seed 1] [--data ours|ref] [--repeats 1] [--busy 0] [--out DIR]

For every task and parameter set (set 1: the task's defaults; further sets drawn
log-uniformly inside the search box) it

1. simulates one partially observable data set with ``nioc-gpu simulate`` (our agent), or
   with ``--data ref`` with the reference's own agent (refsim.py: iLQG with 10 iterations,
   EKF, no policy noise), and reads it back into the reference's layout x[trial, t, state];
2. compares the log-likelihoods (sum over trials and time steps) at the truth and at one
   perturbed theta: the reference's ``FixedLinearizationInverseGILQG(env, b0=(x0, Sigma0),
   maxent_temp=T)`` against ``nioc-gpu loglik --linearize data --first-order-noise --ignore-gaps --nominal-filter --raw-angles
   --belief-prior 1 --jitter 1e-6 --planner full --temperature T`` (T: the paper's per-task temperature);
3. times one evaluation (value and gradient) in each implementation;
4. fits both: the reference's ``compute_mle`` exactly as its example.py calls it (L-BFGS-B,
   R restarts, bounds ``env.get_params_bounds()``; FixedLinearizationInverseGILQG with the
   paper temperature) and ``nioc-gpu fit --restarts R`` (our default settings), on the same
   data, and reports wall times and errors against the truth; with ``--repeats N`` each tool
   fits N times, interleaved (reference, ours, reference, ours, ...), and the median time
   stands; ours is timed as the whole ``nioc-gpu fit`` process; ``--busy K`` runs K CPU-bound
   busy loops beside everything (a shared machine);
5. prints one Markdown table and writes DIR/sidebyside.json.

REF_PATH is a local checkout of the reference. It has no licence: this script only imports
it as the Python package ``nioc``; nothing of it is copied into this repository.

Exit status: 0 when the script ran (failed tasks are reported in the table and the JSON),
2 when --ref, --nioc or the Python packages are missing.
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
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
REQUIREMENTS = os.path.join(HERE, "requirements.txt")

# Tasks: our name, reference class name, paper temperature, parameters (name, lo, hi, default)
# in the reference's (= our) names; the bounds are the reference's get_params_bounds() (and
# ours, see `nioc-gpu tasks`; checked against the reference at run time).
TASKS = {
    "reaching": dict(cls="NonlinearReaching", temp=1e-6,
                     params=[("action_cost", 1e-5, 1e-1, 1e-4), ("velocity_cost", 1e-3, 1e-1, 1e-2),
                             ("motor_noise", 1e-2, 1.0, 0.1), ("obs_noise", 0.1, 100.0, 1.0)]),
    "navigation": dict(cls="Navigation", temp=1e-6,
                       params=[("action_cost", 1e-4, 1.0, 1e-3), ("velocity_cost", 1e-4, 10.0, 1e-3),
                               ("motor_noise", 0.1, 1.0, 0.5), ("obs_noise", 1e-2, 1.0, 0.1)]),
    "pendulum": dict(cls="Pendulum", temp=1e-3,
                     params=[("action_cost", 1e-3, 1e-1, 1e-3), ("velocity_cost", 1e-3, 1e-1, 1e-2),
                             ("motor_noise", 0.1, 2.0, 0.1), ("obs_noise", 1e-2, 10.0, 1.0)]),
    "cartpole": dict(cls="CartPole", temp=1e-3,
                     params=[("action_cost", 5e-4, 1.0, 1e-3), ("velocity_cost", 1e-2, 10.0, 1e-2),
                             ("motor_noise", 0.2, 1.5, 0.1),  # the default lies below the box
                             ("obs_noise", 1e-2, 10.0, 1.0)]),
}
TASK_ORDER = list(TASKS)
# Perturbation of the truth for the second likelihood point, in log10 units per parameter.
PERTURB = [0.3, -0.3, 0.3, -0.3]
EXPECTED_DISAGREEMENT = {
    "reaching": "expected: the reference's arm dynamics differ from ours (its closed form flips the sign "
                "of the Coriolis and friction terms), so the two likelihoods are of different models",
}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True, help="local checkout of RothkopfLab/nioc-neurips")
    ap.add_argument("--nioc", required=True, help="the nioc-gpu binary (go build -o bin/nioc-gpu ./cmd/nioc-gpu)")
    ap.add_argument("--tasks", default="reaching,navigation,pendulum,cartpole")
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--restarts", type=int, default=50)
    ap.add_argument("--sets", type=int, default=1, help="parameter sets per task (1: the defaults only)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="sidebyside-out", help="output folder (data, fits, sidebyside.json)")
    ap.add_argument("--eval-repeats", type=int, default=5,
                    help="timed evaluations (after warm-up) for the per-evaluation times")
    ap.add_argument("--no-go-bench", action="store_true",
                    help="skip building and running bench/table (our per-evaluation time without graph building)")
    ap.add_argument("--no-fit", action="store_true", help="skip the fits (steps 1-3 only)")
    ap.add_argument("--data", default="ours", choices=["ours", "ref"],
                    help="who simulates the data sets: ours (`nioc-gpu simulate`, our agent) or ref (the reference's "
                         "own agent, bench/jaxref/refsim.py: iLQG with 10 iterations, EKF, no policy noise)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="fits of each tool per set, timed interleaved (reference, ours, reference, ours, ...); "
                         "the table shows the medians")
    ap.add_argument("--busy", type=int, default=0,
                    help="CPU-bound busy loops run beside the whole comparison (a shared machine)")
    ap.add_argument("--fit-args", default="",
                    help="extra flags for `nioc-gpu fit`, written with =, e.g. --fit-args=--first-order-noise (default: none, i.e. our "
                         "default settings)")
    return ap.parse_args()


def die(msg):
    print("sidebyside: " + msg, file=sys.stderr)
    sys.exit(2)


ARGS = parse_args()

# ---------------------------------------------------------------- environment checks (exit 2)
_missing = []
for _mod in ("numpy", "scipy", "jax", "jaxlib", "jaxopt"):
    try:
        __import__(_mod)
    except Exception as _e:  # noqa: BLE001
        _missing.append(f"{_mod} ({type(_e).__name__}: {_e})")
if _missing:
    die("missing Python packages: " + "; ".join(_missing) + "\n"
        f"  install them (in a venv outside the repository) with the pinned versions:\n"
        f"    python3.11 -m venv /work/jaxenv && /work/jaxenv/bin/pip install -r {REQUIREMENTS}\n"
        f"  and run this script with that interpreter (/work/jaxenv/bin/python {shlex.join(sys.argv)})")
REF = os.path.abspath(ARGS.ref)
if not os.path.isfile(os.path.join(REF, "nioc", "infer", "utils.py")):
    die(f"--ref {ARGS.ref}: not a checkout of RothkopfLab/nioc-neurips (no nioc/infer/utils.py there);\n"
        "  clone it (commit 18a5acf19bed8da1440f828c6d2c8b9ceb8ecb2e) and pass its path")
NIOC = os.path.abspath(ARGS.nioc)
if not (os.path.isfile(NIOC) and os.access(NIOC, os.X_OK)):
    die(f"--nioc {ARGS.nioc}: no such executable; build it with\n"
        f"  cd {REPO} && go build -o bin/nioc-gpu ./cmd/nioc-gpu")
TASK_LIST = [t for t in ARGS.tasks.split(",") if t]
for _t in TASK_LIST:
    if _t not in TASKS:
        die(f"unknown task {_t!r}: this comparison covers {', '.join(TASK_ORDER)} "
            "(lightdark's reference likelihood uses a different planner and is not compared here)")

sys.path.insert(0, REF)
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
from sbs_parse import parse_bench_table, reference_params, schedule  # noqa: E402
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import random  # noqa: E402
from importlib.metadata import version as _version  # noqa: E402

try:
    import nioc.envs as ref_envs  # noqa: E402
    import nioc.infer.utils as ref_infer_utils  # noqa: E402
    from nioc.infer import FixedLinearizationInverseGILQG  # noqa: E402
    from nioc.infer.utils import compute_mle  # noqa: E402
except Exception as _e:  # noqa: BLE001
    die(f"cannot import the reference package nioc from {REF}: {type(_e).__name__}: {_e}\n"
        f"  (its dependencies: pip install -r {REQUIREMENTS})")

COMMANDS = []  # every external command, exactly as run


def run_cmd(cmd, cwd=None, what=""):
    """Run a command, record it, return (stdout, stderr, seconds). Raises on failure."""
    COMMANDS.append({"what": what, "cwd": cwd or os.getcwd(), "command": shlex.join(cmd)})
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    COMMANDS[-1]["seconds"] = round(dt, 3)
    if p.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited with {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p.stdout, p.stderr, dt


def fmt_params(values):
    return ",".join(f"{k}={format(v, '.17g')}" for k, v in values.items())


def read_csv(path):
    """Our CSV (subject,trial,t,<states>) -> x[trial, t, state], state names. One subject."""
    with open(path) as f:
        r = csv.reader(f)
        header = next(r)
        if header[:3] != ["subject", "trial", "t"]:
            raise ValueError(f"{path}: unexpected header {header}")
        states = header[3:]
        rows = [(row[0], int(row[1]), int(row[2]), [float(v) for v in row[3:]]) for row in r]
    subjects = sorted({row[0] for row in rows})
    if len(subjects) != 1:
        raise ValueError(f"{path}: expected one subject, found {subjects}")
    n = max(row[1] for row in rows) + 1
    T1 = max(row[2] for row in rows) + 1
    x = np.full((n, T1, len(states)), np.nan)
    for _, i, t, v in rows:
        x[i, t] = v
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{path}: missing or non-finite values")
    return x, states


def param_sets(task, nsets, seed):
    spec = TASKS[task]
    out = [("default", {n: d for (n, lo, hi, d) in spec["params"]})]
    rng = np.random.default_rng([seed, TASK_ORDER.index(task)])
    for k in range(1, nsets):
        out.append((f"random{k}", {n: float(10.0 ** rng.uniform(math.log10(lo), math.log10(hi)))
                                   for (n, lo, hi, d) in spec["params"]}))
    return out


def rel(a, b):
    """|a - b| / |b| (b: the reference)."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    return abs(a - b) / max(abs(b), 1e-300)


def median_rel_err(est, truth):
    return float(np.median([abs(est[n] - truth[n]) / abs(truth[n]) for n in truth]))


def jnum(v):
    v = float(v)
    return v if math.isfinite(v) else None


def short_err(e):
    s = f"{type(e).__name__}: {e}"
    return s if len(s) < 400 else s[:400] + "..."


# ---------------------------------------------------------------- reference side
class RefTask:
    def __init__(self, task, x_np):
        spec = TASKS[task]
        self.task = task
        self.names = [p[0] for p in spec["params"]]
        self.cls = getattr(ref_envs, spec["cls"])
        self.env = self.cls()
        self.P = self.cls.get_params_type()
        self.temp = spec["temp"]
        lo, hi = self.env.get_params_bounds()
        for (n, l, h, d) in spec["params"]:
            if not (math.isclose(getattr(lo, n), l) and math.isclose(getattr(hi, n), h)):
                raise RuntimeError(f"bounds of {n} differ from the reference's "
                                   f"({getattr(lo, n)}, {getattr(hi, n)}) vs ({l}, {h})")
        self.x0 = self.env._reset(None, self.P())
        self.Sigma0 = jnp.eye(self.x0.shape[0])
        self.ioc = FixedLinearizationInverseGILQG(self.env, b0=(self.x0, self.Sigma0), maxent_temp=self.temp)
        self.x = jnp.asarray(x_np)

        def f(z, x):
            return self.ioc.loglikelihood(x, self.P(**{n: 10.0 ** z[i] for i, n in enumerate(self.names)}))

        self.fn = jax.jit(jax.value_and_grad(f))
        self.compile_and_first = None

    def z(self, values):
        return jnp.asarray([math.log10(values[n]) for n in self.names])

    def eval(self, values):
        t0 = time.perf_counter()
        v, g = self.fn(self.z(values), self.x)
        v = float(v)
        g = np.asarray(g)
        if self.compile_and_first is None:
            self.compile_and_first = time.perf_counter() - t0
        return v, {n: float(g[i]) for i, n in enumerate(self.names)}

    def time_eval(self, values, repeats):
        z = self.z(values)
        jax.block_until_ready(self.fn(z, self.x))  # warm-up
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(self.fn(z, self.x))
            ts.append(time.perf_counter() - t0)
        return float(np.mean(ts)), float(np.min(ts))

    def mle(self, restarts, seed):
        """compute_mle exactly as the reference's example.py calls it. run_with_restarts is
        wrapped only to record each restart's time and function evaluations."""
        per_restart = []
        orig = ref_infer_utils.run_with_restarts

        def recording(optim, init_params, *a, **k):
            run = optim.run

            def timed_run(*ra, **rk):
                t0 = time.perf_counter()
                res = run(*ra, **rk)
                per_restart.append(dict(seconds=time.perf_counter() - t0,
                                        nfev=int(res.state.num_fun_eval), nit=int(res.state.iter_num),
                                        fun=jnum(res.state.fun_val), success=bool(res.state.success)))
                return res

            optim.run = timed_run
            return orig(optim, init_params, *a, **k)

        ref_infer_utils.run_with_restarts = recording
        try:
            key = random.PRNGKey(seed)
            t0 = time.perf_counter()
            result = compute_mle(self.x, self.ioc, key, restarts=restarts,
                                 bounds=self.env.get_params_bounds(), optim="L-BFGS-B")
            wall = time.perf_counter() - t0
        finally:
            ref_infer_utils.run_with_restarts = orig
        est = {n: float(getattr(result.params, n)) for n in self.names}
        return dict(params=est, loglik=jnum(-result.state.fun_val), seconds=wall,
                    evaluations=sum(r["nfev"] for r in per_restart),
                    iterations=sum(r["nit"] for r in per_restart),
                    restarts=per_restart,
                    converged_restarts=sum(r["success"] for r in per_restart))


# ---------------------------------------------------------------- our side
def ours_loglik(task, data, values):
    cmd = [NIOC, "loglik", "--task", task, "--data", data, "--params", fmt_params(values),
           "--linearize", "data", "--first-order-noise", "--ignore-gaps", "--nominal-filter", "--raw-angles", "--belief-prior", "1", "--jitter", "1e-6", "--planner", "full",
           "--temperature", format(TASKS[task]["temp"], "g")]
    out, _, dt = run_cmd(cmd, what=f"{task}: our log-likelihood")
    j = json.loads(out)
    return float(j["loglik"]), {k: float(v) for k, v in j["grad"].items()}, dt


def ours_fit(task, data, out, restarts, seed):
    for stale in (out, os.path.splitext(out)[0] + ".csv", out + ".ckpt"):  # an earlier run's: fit would refuse
        if os.path.exists(stale):
            os.remove(stale)
    cmd = [NIOC, "fit", "--task", task, "--data", data, "--restarts", str(restarts), "--seed", str(seed),
           "--out", out, "--quiet"] + shlex.split(ARGS.fit_args)
    _, _, dt = run_cmd(cmd, what=f"{task}: our fit")
    with open(out) as f:
        j = json.loads(f.readline())
    values = {**j.get("fixed", {}), **j["params"]}  # the estimates and the parameters held fixed
    return dict(params={k: float(v) for k, v in values.items()}, loglik=j["loglik"],
                seconds=j["seconds"], process_seconds=dt, evaluations=j["evaluations"],
                converged=j.get("converged"), status=j.get("status"), at_bound=j.get("at_bound"),
                restarts_at_best=j.get("restarts_at_best"))


def go_bench(task, binary):
    """Our per-evaluation time from bench/table (one parameter vector, and 50 at once)."""
    out, _, _ = run_cmd([binary, "-fits=false", "-xla=off", "-tasks", task, "-subjects", "1"], cwd=REPO,
                        what=f"{task}: our per-evaluation benchmark (bench/table)")
    try:
        return parse_bench_table(out, task)
    except ValueError as e:
        raise RuntimeError(f"could not parse bench/table output ({e}):\n" + out[-1500:]) from e


def simulate_ref(task, index, truth, path):
    """One partially observable data set of ARGS.trials trials made by the reference's own agent
    (refsim.py), written as a nioc-gpu trajectory file with one subject."""
    import refsim  # noqa: E402 (bench/jaxref, on sys.path)
    t0 = time.perf_counter()
    steps = refsim.STEPS[task]
    sim = refsim.make_simulator(REF, task, "partial", ARGS.trials, steps, 10)
    xs = sim(index, ARGS.seed, truth)
    if not np.all(np.isfinite(xs)):
        raise RuntimeError("the reference's simulation is not finite")
    names = refsim.TASKS[task][1]
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["subject", "trial", "t"] + names)
        for r in range(xs.shape[0]):
            for t in range(xs.shape[1]):
                w.writerow(["1", r, t] + [format(float(v), ".17g") for v in xs[r, t]])
    COMMANDS.append({"what": f"{task}: simulate with the reference's agent (refsim.make_simulator, max_iter 10)",
                     "seconds": round(time.perf_counter() - t0, 3)})


def busy_loops(n):
    """n CPU-bound processes (busy loops) to run beside the comparison; returns them."""
    code = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


# ---------------------------------------------------------------- main
def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = None
    try:
        load = os.getloadavg()
    except OSError:
        pass
    return dict(nproc=os.cpu_count(), cpu_model=cpu, platform=platform.platform(), loadavg=load)


def versions():
    v = {"python": platform.python_version(), "jax_backend": jax.default_backend(),
         "x64": bool(jax.config.read("jax_enable_x64"))}
    for m in ("jax", "jaxlib", "jaxopt", "numpy", "scipy"):
        try:
            v[m] = _version(m)
        except Exception:  # noqa: BLE001
            v[m] = None
    for key, cmd, cwd in (("reference_commit", ["git", "-C", REF, "rev-parse", "HEAD"], None),
                          ("nioc_gpu_commit", ["git", "-C", REPO, "rev-parse", "HEAD"], None),
                          ("go", ["go", "version"], None)):
        try:
            v[key] = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=cwd).stdout.strip()
        except Exception:  # noqa: BLE001
            v[key] = None
    v["nioc_binary"] = NIOC
    v["nioc_binary_built"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.path.getmtime(NIOC)))
    v["nioc_gpu_commit_note"] = ("HEAD of the repository at the start of this run; the binary was built from "
                                 "the working tree at nioc_binary_built and may differ")
    try:
        st = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True, check=True).stdout
        v["nioc_gpu_dirty"] = bool(st.strip())
    except Exception:  # noqa: BLE001
        pass
    return v


def fmt_s(v, digits=3):
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:.0f} s"
    if v >= 1:
        return f"{v:.1f} s"
    if v >= 0.01:
        return f"{v * 1e3:.0f} ms"
    return f"{v * 1e3:.2g} ms"


def fmt_g(v, spec=".2g"):
    return "—" if v is None else format(v, spec)


def main():
    t_start = time.time()
    out_dir = os.path.abspath(ARGS.out)
    os.makedirs(out_dir, exist_ok=True)
    result = dict(machine=machine(), versions=versions(), command=shlex.join([sys.executable] + sys.argv),
                  settings=dict(tasks=TASK_LIST, trials=ARGS.trials, restarts=ARGS.restarts, sets=ARGS.sets,
                                seed=ARGS.seed, eval_repeats=ARGS.eval_repeats, perturbation_log10=PERTURB,
                                fit_args=ARGS.fit_args, data=ARGS.data, repeats=ARGS.repeats, busy=ARGS.busy),
                  cases=[])
    print(f"machine: {result['machine']['nproc']} CPUs, {result['machine']['cpu_model']}, "
          f"load average {result['machine']['loadavg']}", flush=True)

    bench_bin = None
    if not ARGS.no_go_bench:
        try:
            bench_bin = os.path.join(out_dir, "bench-table")
            run_cmd(["go", "build", "-o", bench_bin, "./bench/table"], cwd=REPO, what="build bench/table")
        except Exception as e:  # noqa: BLE001
            print(f"  (our per-evaluation benchmark skipped: {short_err(e)})", flush=True)
            result["go_bench_error"] = short_err(e)
            bench_bin = None

    for task in TASK_LIST:
        spec = TASKS[task]
        go_rows = None
        for si, (label, truth) in enumerate(param_sets(task, ARGS.sets, ARGS.seed)):
            case = dict(task=task, set=si + 1, set_label=label, truth=truth, temperature=spec["temp"],
                        trials=ARGS.trials, errors=[], notes=[])
            if task in EXPECTED_DISAGREEMENT:
                case["notes"].append(EXPECTED_DISAGREEMENT[task])
            if task == "cartpole" and label == "default":
                case["notes"].append("cartpole's default motor_noise 0.1 lies below the search box [0.2, 1.5]: "
                                     "neither fit can reach it")
            result["cases"].append(case)
            print(f"== {task} set {si + 1} ({label}): {fmt_params(truth)}", flush=True)
            # 1. simulate, with our simulator or the reference's agent
            data = os.path.join(out_dir, f"{task}_set{si + 1}.csv")
            case["simulator"] = ARGS.data
            try:
                if ARGS.data == "ref":
                    simulate_ref(task, si, truth, data)
                else:
                    run_cmd([NIOC, "simulate", "--task", task, "--trials", str(ARGS.trials),
                             "--seed", str(ARGS.seed + si), "--params", fmt_params(truth), "--force", "--out", data],
                            what=f"{task}: simulate")
                x_np, states = read_csv(data)
                case.update(data=data, states=states, T=x_np.shape[1] - 1)
            except Exception as e:  # noqa: BLE001
                case["errors"].append("simulate: " + short_err(e))
                print("  simulate failed: " + short_err(e), flush=True)
                continue
            try:
                ref = RefTask(task, x_np)
                x0 = np.asarray(ref.x0)
                dev = float(np.max(np.abs(x_np[:, 0, :] - x0)))
                case["x0_reference"] = [float(v) for v in x0]
                case["x0_max_abs_diff_data_vs_reference"] = dev
                if dev > 1e-12:
                    case["notes"].append(f"the data's x_0 differs from the reference's b0 mean by up to {dev:.3g}")
            except Exception as e:  # noqa: BLE001
                ref = None
                case["errors"].append("reference setup: " + short_err(e))
                print("  reference setup failed: " + short_err(e), flush=True)

            # 2. likelihood agreement
            pert = {n: truth[n] * 10.0 ** PERTURB[i] for i, n in enumerate(truth)}
            case["likelihood"] = []
            for point, values in (("truth", truth), ("perturbed", pert)):
                row = dict(point=point, params=values)
                try:
                    ll, g, dt = ours_loglik(task, data, values)
                    row.update(ours_loglik=ll, ours_grad_log10=g, ours_cli_seconds=dt)
                except Exception as e:  # noqa: BLE001
                    row["ours_error"] = short_err(e)
                if ref is not None:
                    try:
                        v, g = ref.eval(values)
                        row.update(ref_loglik=jnum(v), ref_grad_log10={k: jnum(x) for k, x in g.items()})
                        if not math.isfinite(v):
                            row["ref_error"] = f"non-finite reference log-likelihood ({v})"
                    except Exception as e:  # noqa: BLE001
                        row["ref_error"] = short_err(e)
                        traceback.print_exc()
                row["rel_diff"] = rel(row.get("ours_loglik"), row.get("ref_loglik"))
                if row.get("ours_grad_log10") and row.get("ref_grad_log10"):
                    gd = [rel(row["ours_grad_log10"][n], row["ref_grad_log10"][n]) for n in truth]
                    row["grad_max_rel_diff"] = None if any(d is None for d in gd) else max(gd)
                case["likelihood"].append(row)
                print(f"  loglik at {point}: ref {row.get('ref_loglik')} ours {row.get('ours_loglik')} "
                      f"rel diff {fmt_g(row['rel_diff'])}, gradient max rel diff {fmt_g(row.get('grad_max_rel_diff'))} "
                      f"{row.get('ref_error', '')} {row.get('ours_error', '')}",
                      flush=True)

            # 3. per-evaluation wall time
            pe = dict()
            if ref is not None and ref.compile_and_first is not None:
                try:
                    mean, best = ref.time_eval(truth, ARGS.eval_repeats)
                    pe.update(ref_mean_s=mean, ref_min_s=best, ref_compile_and_first_call_s=ref.compile_and_first,
                              ref_repeats=ARGS.eval_repeats)
                except Exception as e:  # noqa: BLE001
                    pe["ref_error"] = short_err(e)
            if case["likelihood"] and "ours_cli_seconds" in case["likelihood"][0]:
                pe["ours_cli_cold_s"] = case["likelihood"][0]["ours_cli_seconds"]
            if bench_bin is not None and si == 0:
                try:
                    go_rows = go_bench(task, bench_bin)
                except Exception as e:  # noqa: BLE001
                    pe["ours_bench_error"] = short_err(e)
            if go_rows:
                pe["ours_bench_table"] = go_rows
                pe["ours_bench_trials"] = 50
                if ARGS.trials != 50:
                    case["notes"].append(f"our per-evaluation time (bench/table) is for 50 trials, the reference's "
                                         f"for {ARGS.trials}")
                if 1 in go_rows:
                    pe["ours_single_s"] = go_rows[1]["per_eval_s"]
                if 50 in go_rows:
                    pe["ours_batch50_per_vector_s"] = go_rows[50]["per_eval_s"] / 50
            case["per_eval"] = pe
            print(f"  per evaluation: ref {fmt_s(pe.get('ref_mean_s'))} (compile+first "
                  f"{fmt_s(pe.get('ref_compile_and_first_call_s'))}), ours {fmt_s(pe.get('ours_single_s'))} "
                  f"(1 vector), {fmt_s(pe.get('ours_batch50_per_vector_s'))} per vector in batches of 50",
                  flush=True)

            # 4. fits
            if ARGS.no_fit:
                continue
            fits = dict(order=schedule(ARGS.repeats), ours_runs=[], ref_runs=[])
            for k, tool in enumerate(fits["order"]):
                rep = k // 2 + 1
                if tool == "ours":
                    try:
                        fo = ours_fit(task, data, os.path.join(out_dir, f"{task}_set{si + 1}_fit{rep}.jsonl"),
                                      ARGS.restarts, ARGS.seed)
                        fo["median_abs_rel_err"] = median_rel_err(reference_params(fo["params"], list(truth)), truth)
                        fo["amortized_per_eval_s"] = fo["seconds"] / fo["evaluations"] if fo["evaluations"] else None
                        fits["ours_runs"].append(fo)
                        print(f"  our fit {rep}: {fo['process_seconds']:.1f} s (process), {fo['evaluations']} "
                              f"evaluations, median rel err {fo['median_abs_rel_err']:.3f}", flush=True)
                    except Exception as e:  # noqa: BLE001
                        fits["ours_error"] = short_err(e)
                        print("  our fit failed: " + short_err(e), flush=True)
                    continue
                if ref is None:
                    continue
                try:
                    fr = ref.mle(ARGS.restarts, ARGS.seed)
                    fr["median_abs_rel_err"] = median_rel_err(fr["params"], truth)
                    fr["amortized_per_eval_s"] = fr["seconds"] / fr["evaluations"] if fr["evaluations"] else None
                    # compute_mle jits its own objective, compiled during the first restart: estimate the
                    # compilation as the first restart's time minus its evaluations at the later restarts'
                    # mean time per evaluation (or, with one restart, from the per-evaluation step)
                    rs = fr["restarts"]
                    later_s, later_n = sum(r["seconds"] for r in rs[1:]), sum(r["nfev"] for r in rs[1:])
                    if len(rs) > 1 and later_n > 0:
                        fr["compile_estimate_s"] = rs[0]["seconds"] - rs[0]["nfev"] * later_s / later_n
                        fr["compile_estimate_from"] = "first restart minus its evaluations at the later restarts' rate"
                    elif pe.get("ref_compile_and_first_call_s") is not None and pe.get("ref_mean_s") is not None:
                        fr["compile_estimate_s"] = pe["ref_compile_and_first_call_s"] - pe["ref_mean_s"]
                        fr["compile_estimate_from"] = "first call of the per-evaluation step minus one evaluation"
                    if "compile_estimate_s" in fr:
                        fr["seconds_without_compile_estimate"] = max(fr["seconds"] - fr["compile_estimate_s"], 0.0)
                    fits["ref_runs"].append(fr)
                    print(f"  reference fit {rep}: {fr['seconds']:.1f} s, {fr['evaluations']} evaluations, "
                          f"median rel err {fr['median_abs_rel_err']:.3f}", flush=True)
                except Exception as e:  # noqa: BLE001
                    fits["ref_error"] = short_err(e)
                    traceback.print_exc()
                    print("  reference fit failed: " + short_err(e), flush=True)
            # The run of median time (of an even number, the lower one) stands for each tool (its
            # estimates are the same each time).
            for tool, key in (("ours", "process_seconds"), ("ref", "seconds")):
                runs = sorted(fits[tool + "_runs"], key=lambda r: r[key])
                if runs:
                    fits[tool] = runs[(len(runs) - 1) // 2]
                    fits[tool + "_seconds_all"] = [r[key] for r in fits[tool + "_runs"]]
            if "ref" in fits and "ours" in fits:
                fits["wall_ratio_ref_over_ours"] = fits["ref"]["seconds"] / fits["ours"]["process_seconds"]
                if fits["ref"].get("seconds_without_compile_estimate") is not None:
                    fits["wall_ratio_ref_without_compile_over_ours"] = (
                        fits["ref"]["seconds_without_compile_estimate"] / fits["ours"]["process_seconds"])
                # cross-evaluation: each estimate under the reference's objective (which fixes the
                # temperature: a fitted one of ours is left out)
                cross = {}
                ours_at_ref_names = reference_params(fits["ours"]["params"], list(truth))
                try:
                    cross["ref_loglik_at_ours_estimate"] = jnum(ref.eval(ours_at_ref_names)[0])
                    cross["ref_loglik_at_ref_estimate"] = fits["ref"]["loglik"]
                except Exception as e:  # noqa: BLE001
                    cross["ref_error"] = short_err(e)
                try:
                    cross["ours_first_order_loglik_at_ref_estimate"] = ours_loglik(task, data,
                                                                                   fits["ref"]["params"])[0]
                    cross["ours_first_order_loglik_at_ours_estimate"] = ours_loglik(task, data, ours_at_ref_names)[0]
                except Exception as e:  # noqa: BLE001
                    cross["ours_error"] = short_err(e)
                fits["cross"] = cross
                print("  cross-evaluation: " + ", ".join(f"{k} {fmt_g(v, '.10g') if isinstance(v, float) else v}"
                                                         for k, v in cross.items()), flush=True)
            case["fit"] = fits

    result["total_seconds"] = round(time.time() - t_start, 1)
    result["machine"]["loadavg_end"] = os.getloadavg()
    result["commands"] = COMMANDS
    result["notes"] = [
        "Log-likelihoods: sums over trials and time steps; reference = FixedLinearizationInverseGILQG "
        "(b0 = (env._reset(), I), maxent_temp = paper temperature); ours = nioc-gpu loglik --first-order-noise "
        "--ignore-gaps --nominal-filter --raw-angles --belief-prior 1 --jitter 1e-6 --planner full --linearize data --temperature T. rel_diff = |ours - ref| / |ref|; gradients are d/dlog10(param).",
        "Per evaluation (value + gradient, all trials of the data set, one parameter vector): ref_mean_s = the "
        "reference's jax.jit(jax.value_and_grad(loglik)) after one warm-up call, mean over eval_repeats calls "
        "(block_until_ready); ref_compile_and_first_call_s = its first call (tracing + XLA compilation). "
        "ours_single_s = bench/table's per-evaluation time for 1 parameter vector (graph already built; "
        "bench/table simulates its own 50-trial data set at the defaults and uses the default likelihood "
        "options, i.e. not --first-order-noise); ours_batch50_per_vector_s = its time for 50 vectors at once / 50; "
        "ours_cli_cold_s = wall time of one `nioc-gpu loglik` process (start-up, reading the CSV, graph building, "
        "one evaluation).",
        "Fits: seconds = wall time of the whole fit including compilation/graph building (reference: "
        "compute_mle with R sequential L-BFGS-B restarts, jaxopt ScipyBoundedMinimize defaults, maxiter 500; "
        "ours: nioc-gpu fit, default settings: batched restarts, max 200 iterations, second-order noise terms, the "
        "task's planner, followed by a finite-difference Hessian for standard errors) — the two objectives are "
        "not identical (ours without --first-order-noise). evaluations = value+gradient evaluations summed over "
        "restarts (ours includes the Hessian's); amortized_per_eval_s = seconds / evaluations. "
        "median_abs_rel_err = median over parameters of |estimate - truth| / truth. "
        "compile_estimate_s (reference) = its first restart's time minus that restart's evaluations at the later "
        "restarts' time per evaluation; seconds_without_compile_estimate = seconds - compile_estimate_s. "
        "cross: each estimate evaluated under the reference's objective and under ours with --first-order-noise "
        "(the two agree to rounding, so these show which fit reached the higher value of the same function).",
    ]
    with open(os.path.join(out_dir, "sidebyside.json"), "w") as f:
        json.dump(result, f, indent=1, allow_nan=False, default=str)
        f.write("\n")
    print()
    print(markdown(result))
    print(f"\nwrote {os.path.join(out_dir, 'sidebyside.json')} ({result['total_seconds']} s in all)")


def markdown(result):
    lines = [f"Machine: {result['machine']['nproc']} CPUs ({result['machine']['cpu_model']}); "
             f"jax {result['versions'].get('jax')} (x64, {result['versions'].get('jax_backend')}); "
             f"{result['versions'].get('go')}; trials {ARGS.trials}, restarts {ARGS.restarts}.",
             "",
             "| task | set | LL rel. diff truth / perturbed | ref per eval | ours per eval (1 θ / per θ in 50) "
             "| ref fit | ours fit | fit ratio ref/ours | med. rel. err ref / ours | notes |",
             "|---|---:|---|---:|---:|---:|---:|---:|---|---|"]
    for c in result["cases"]:
        ll = c.get("likelihood") or []
        rd = " / ".join(fmt_g(r.get("rel_diff")) for r in ll) or "—"
        pe = c.get("per_eval") or {}
        fit = c.get("fit") or {}
        fr, fo = fit.get("ref"), fit.get("ours")
        notes = list(c["errors"])
        for r in ll:
            for k in ("ref_error", "ours_error"):
                if k in r:
                    notes.append(f"{r['point']} {k}: {r[k]}")
        for k in ("ref_error", "ours_error"):
            if k in fit:
                notes.append(f"fit {k}: {fit[k]}")
        notes += c["notes"]
        lines.append("| {} | {} | {} | {} | {} / {} | {} | {} | {} | {} / {} | {} |".format(
            c["task"], c["set"], rd, fmt_s(pe.get("ref_mean_s")), fmt_s(pe.get("ours_single_s")),
            fmt_s(pe.get("ours_batch50_per_vector_s")),
            (fmt_s(fr["seconds"]) + (f" (≈ {fmt_s(fr['seconds_without_compile_estimate'])} w/o compile)"
                                     if fr.get("seconds_without_compile_estimate") is not None else ""))
            if fr else "—", fmt_s(fo["process_seconds"]) if fo else "—",
            fmt_g(fit.get("wall_ratio_ref_over_ours"), ".3g"),
            fmt_g(fr["median_abs_rel_err"], ".3f") if fr else "—",
            fmt_g(fo["median_abs_rel_err"], ".3f") if fo else "—",
            "; ".join(n.replace("|", "/") for n in notes)))
    lines += ["",
              "LL rel. diff: |ours - ref| / |ref| of the summed log-likelihood (ours with --first-order-noise "
              "--planner full and the paper temperature). Per eval: value + gradient for one θ on all trials "
              "(ref: jitted, after warm-up; ours: bench/table, graph built, on its own data set of the same size). "
              "Fits: wall time including compilation/graph building (ref in brackets: minus its estimated XLA "
              "compilation, see compile_estimate_s); ours with "
              + (f"`{ARGS.fit_args}`" if ARGS.fit_args else "default settings") + ". "
              "Details in sidebyside.json."]
    return "\n".join(lines)


if __name__ == "__main__":
    _busy = busy_loops(ARGS.busy)
    try:
        main()
    finally:
        for _p in _busy:
            _p.kill()
