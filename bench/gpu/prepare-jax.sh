#!/usr/bin/env bash
# Prepares, on a machine with the network, what `bench/gpu/run.sh jax` needs on a GPU machine
# that has none (the device tool's image has JAX 0.11.2 but no jaxopt, which the reference
# imports): jaxopt's wheel in .whl/ and a copy of the reference in .ref/nioc-neurips (both
# ignored by git; name them in the device call's carry, with bin/gpu-binaries.tar.gz).
#
#   bench/gpu/prepare-jax.sh REF     REF: a checkout of RothkopfLab/nioc-neurips
#
# The reference has no licence: it is copied only to run it there, never committed (.ref/ is
# in .gitignore). Tried 2026-11-28 with JAX 0.11.2 and jaxopt 0.8.2 on Python 3.12 (CPU):
# bench/jaxref/vmapscale.py runs the reference's likelihood (its jax.tree_map restored).
set -euo pipefail
ref=${1:?usage: bench/gpu/prepare-jax.sh REF (a checkout of RothkopfLab/nioc-neurips)}
[[ -d $ref/nioc ]] || { echo "bench/gpu/prepare-jax.sh: $ref has no nioc/ package: not a checkout of nioc-neurips" >&2; exit 2; }
mkdir -p .whl .ref
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d .whl "jaxopt==0.8.2"
rm -rf .ref/nioc-neurips
mkdir -p .ref/nioc-neurips
cp -r "$ref/nioc" .ref/nioc-neurips/
ls -la .whl/jaxopt-*.whl
du -sh .ref/nioc-neurips
echo "carry: [\".whl\", \".ref\", \"bin/gpu-binaries.tar.gz\"]; then: bench/gpu/run.sh jax"
