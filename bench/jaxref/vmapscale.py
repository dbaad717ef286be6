#!/usr/bin/env python3
"""Time the JAX reference's likelihood (value and gradient) over batches of parameter vectors,
the way a JAX user would scale it: ``jax.jit(jax.vmap(jax.value_and_grad(nll)))`` over K
parameter vectors (log10 scale, as its ``compute_mle`` optimizes them) on the same trials, for
each K of --batches. The reference fits restarts one at a time; vmapping its likelihood is the
fair anchor for nioc-gpu's batched evaluations (`go run ./bench/table -tasks T -rows 1,50,...`
on the same device).

Usage:
    python bench/jaxref/vmapscale.py --ref REF_PATH --task reaching --data data.csv \
        [--observe partial] [--batches 1,50,500,5000] [--repeats 3] [--json out.json]

The data are a nioc-gpu trajectory file (its first subject); nioc-gpu's `simulate --task T
--trials 50 --seed 1` makes the trials the Go bench table times. The vectors are the task's
defaults in log10, each moved by ±0.05 decades per parameter (a fixed pattern), so that every
row is a different point. Prints a Markdown table (K, compile+first call, seconds per batched
evaluation, vectors per second) on stdout, and with --json writes the same rows. A K that fails
(out of memory) ends the list. Only runs the reference (no licence): nothing of it is copied.
"""

import argparse
import json
import sys
import time

import numpy as np

from refmle import read_data, reference_ioc
from refsim import TASKS


def parse_batches(s):
    out = [int(v) for v in s.split(",") if v.strip()]
    if not out or any(k < 1 for k in out):
        raise argparse.ArgumentTypeError(f"--batches wants positive integers, got {s!r}")
    return out


def offsets(k, p):
    """[k, p] fixed offsets in decades: row i moves parameter j by ±0.05·((i + j) mod 3 − 1)."""
    i = np.arange(k)[:, None]
    j = np.arange(p)[None, :]
    return 0.05 * (((i + j) % 3) - 1).astype(np.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--task", required=True, choices=sorted(t for t in TASKS if t != "lightdark"))
    ap.add_argument("--data", required=True)
    ap.add_argument("--observe", default="partial", choices=["partial", "full"])
    ap.add_argument("--batches", type=parse_batches, default=[1, 50, 500, 5000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()

    jax, _, Params, ioc = reference_ioc(a.ref, a.task, a.observe)
    import jax.numpy as jnp
    data = read_data(a.data, TASKS[a.task][1])
    xs = jnp.asarray(next(iter(data.values())))
    names = Params._fields
    default = np.log10(np.array([float(getattr(Params(), n)) for n in names]))

    def nll(logp):
        return -ioc.loglikelihood(xs, Params(**{n: 10.0 ** logp[i] for i, n in enumerate(names)}))

    batched = jax.jit(jax.vmap(jax.value_and_grad(nll)))
    rows = []
    print(f"JAX {jax.__version__} on {jax.devices()[0].platform}, task {a.task} ({a.observe}), "
          f"{xs.shape[0]} trials of {xs.shape[1] - 1} steps, parameters {', '.join(names)}", file=sys.stderr)
    print("| vectors | compile + first call | per evaluation | vectors/s |")
    print("|---:|---:|---:|---:|")
    for k in a.batches:
        theta = jnp.asarray(default[None, :] + offsets(k, len(names)))
        try:
            t0 = time.perf_counter()
            v, g = batched(theta)
            v.block_until_ready()
            first = time.perf_counter() - t0
            t1 = time.perf_counter()
            for _ in range(a.repeats):
                v, g = batched(theta)
                v.block_until_ready()
            per = (time.perf_counter() - t1) / a.repeats
        except Exception as err:  # out of memory ends the list, as the Go table's does
            print(f"vmapscale: {k} vectors failed: {err}", file=sys.stderr)
            break
        if not np.all(np.isfinite(np.asarray(v))):
            print(f"vmapscale: {k} vectors: some values are not finite", file=sys.stderr)
        rows.append({"vectors": k, "first_s": first, "per_eval_s": per, "vectors_per_s": k / per,
                     "nll_row0": float(v[0]), "platform": jax.devices()[0].platform})
        print(f"| {k} | {first:.2f} s | {per:.4f} s | {k / per:.1f} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"task": a.task, "observe": a.observe, "trials": int(xs.shape[0]), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
