#!/usr/bin/env bash
# The Python client's tests (make python-test): a virtual environment with the pinned packages of
# requirements-test.txt (.pyvenv/env, made once and reused while that file and the Python are
# unchanged), the wheel built from bin/nioc-gpu, installed with pip into a fresh virtual
# environment (.pyvenv/run.*/fresh, which takes its dependencies from .pyvenv/env), and pytest
# run there against the binary's own files.
#
# --optional (make test): where there is no Python >= 3.10 or the pinned packages cannot be
# installed (no network and no pip cache), say so and exit 0 instead of failing.
# PYTHON=/path/to/python3.x picks the interpreter; GO, GOOS, GOARCH as in the Makefile.
set -u
cd "$(dirname "$0")/.."
optional=0
[ "${1:-}" = --optional ] && optional=1

skip() {
	echo "python tests SKIPPED: $*"
	[ $optional = 1 ] && exit 0
	exit 1
}

# A Python >= 3.10: $PYTHON, else the first of python3, python3.13 … python3.10 that is one.
py=""
for cand in ${PYTHON:-python3 python3.13 python3.12 python3.11 python3.10 python3.14}; do
	if command -v "$cand" >/dev/null 2>&1 &&
		"$cand" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
		py=$(command -v "$cand")
		break
	fi
done
[ -n "$py" ] || skip "no Python >= 3.10 found (${PYTHON:-python3, python3.10-3.14}); set PYTHON=/path/to/python3.x"
[ -x bin/nioc-gpu ] || { echo "python tests: bin/nioc-gpu missing (make build)"; exit 1; }

root=$PWD/.pyvenv
env=$root/env
req=python/requirements-test.txt
mkdir -p "$root"
stamp="$("$py" -VV 2>&1 | head -1) $(cat "$req" | cksum)"
if [ ! -x "$env/bin/python" ] || [ "$(cat "$env/.stamp" 2>/dev/null)" != "$stamp" ]; then
	echo "python tests: installing the pinned packages of $req into .pyvenv/env ($("$py" -V 2>&1))"
	rm -rf "$env"
	"$py" -m venv "$env" >"$root/pip.log" 2>&1 || { rm -rf "$env"; skip "$py -m venv failed (on Debian: apt-get install python3-venv): $(tail -1 "$root/pip.log")"; }
	if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$env/bin/python" -m pip install --no-input --only-binary=:all: \
		--retries 1 --timeout 15 -q -r "$req" >>"$root/pip.log" 2>&1; then
		rm -rf "$env"
		skip "the pinned packages of $req could not be installed (no network and no pip cache? PIP_FIND_LINKS=DIR PIP_NO_INDEX=1 installs them from a directory of wheels); pip said: $(grep -m1 '^ERROR' "$root/pip.log" || tail -1 "$root/pip.log")"
	fi
	echo "$stamp" >"$env/.stamp"
fi

set -e
GO=${GO:-go}
goos=${GOOS:-$($GO env GOOS)}
goarch=${GOARCH:-$($GO env GOARCH)}
# This run's wheel and fresh environment, in a directory of their own (removed at the end), so
# that runs side by side in one checkout do not share them.
run=$(mktemp -d "$root/run.XXXXXX")
trap 'rm -rf "$run"' EXIT
wheel=$("$env/bin/python" python/build_wheel.py --binary bin/nioc-gpu --goos "$goos" --goarch "$goarch" --out "$run/wheel")

# The fresh environment: nothing but the wheel, installed by pip; numpy, pandas, ArviZ and pytest
# resolved from .pyvenv/env (a .pth file adds its site-packages) so that no download is needed.
fresh=$run/fresh
"$py" -m venv --without-pip "$fresh"
site=$("$fresh/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$env/bin/python" -c 'import sysconfig; print("import site; site.addsitedir(%r)" % sysconfig.get_paths()["purelib"])' >"$site/_nioc_test_deps.pth"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$fresh/bin/python" -m pip install --no-index -q "$wheel[arviz]"
echo "python tests: $(basename "$wheel") installed into a fresh environment; pytest python/tests"
cd python/tests
env -u NIOC_GPU_BIN NIOC_TEST_WHEEL=1 PYTHONDONTWRITEBYTECODE=1 \
	"$fresh/bin/python" -m pytest -q -p no:cacheprovider .
