# nioc-gpu: build, test, demo and benchmarks. Everything runs on the embedded pure-Go backend
# unless NIOC_BACKEND=xla (see README, "Backends").

GO      ?= go
BIN     := bin/nioc-gpu
# The version results record (fit's "version"): the checkout's commit, "-dirty" with local
# changes; the Go toolchain's own VCS stamp where git is missing or GOFLAGS=-buildvcs=false.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
LDFLAGS := -ldflags "-X main.version=$(VERSION)"
DEMO    := out/demo
TASK    ?= reaching

.PHONY: build test demo bench bench-sample bench-jax xla-cpu xla-cuda gpu-binaries dist vet clean slurm-check wheel python-test

# Benchmarks: likelihood evaluations by task and batch size, batching, whole fits next to the
# paper's timings. BENCH_ARGS=-fits=false for the quick part only.
bench:
	$(GO) run ./bench/table $(BENCH_ARGS)

# Speed of the posterior sampler: effective draws per second per subject, 1 subject alone and
# 10 together (long: one pendulum subject alone took 4-5 minutes on 2 cores, reaching several
# times that). SAMPLE_ARGS=-tasks pendulum for less.
bench-sample:
	$(GO) run ./bench/sample $(SAMPLE_ARGS)

# Side by side with the JAX reference (optional; needs Python): REF=/path/to/nioc-neurips checkout,
# PYTHON=/path/to/venv/bin/python with bench/jaxref/requirements.txt installed. By default: data
# from the reference's own agents, 10 restarts, each tool's fit timed twice, interleaved;
# JAX_ARGS="... --busy 1" adds a CPU-bound job beside it.
PYTHON ?= python3
JAX_ARGS ?= --restarts 10 --data ref --repeats 2
bench-jax: build
	@if [ -z "$(REF)" ]; then echo "bench-jax: set REF=/path/to/a/checkout/of/RothkopfLab/nioc-neurips (see bench/jaxref/README.md)"; exit 2; fi
	$(PYTHON) bench/jaxref/sidebyside.py --ref $(REF) --nioc $(BIN) $(JAX_ARGS)

build:
	$(GO) build $(LDFLAGS) -o $(BIN) ./cmd/nioc-gpu

# The full test suite: no network (but the Go module proxy), no GPU. About 5 minutes on 2 cores.
# The Python tests run where python3 is present (bench/jaxref) and, for the Python client, where
# Python >= 3.10 and its pinned packages are (the first run downloads them from PyPI if it can).
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...
	@if command -v python3 >/dev/null 2>&1; then cd bench/jaxref && python3 -m unittest discover -p 'test_*.py'; \
	else echo "python3 not found: the Python tests of bench/jaxref are skipped"; fi
	@$(MAKE) --no-print-directory build >/dev/null
	@$(PYTHON_TEST_ENV) python/test.sh --optional

# The Python client (python/, docs/python.md): a wheel that carries bin/nioc-gpu, in
# python/dist/, and one per binary of `make dist` (where dist/ has them), in python/dist/portable/.
wheel: build
	rm -rf python/dist
	$(PYTHON) python/build_wheel.py --binary $(BIN) --goos $$($(GO) env GOOS) --goarch $$($(GO) env GOARCH) --dist dist --out python/dist

# Its tests: pinned packages (python/requirements-test.txt) in .pyvenv/, the wheel installed into
# a fresh virtual environment, pytest against the binary's files. make test runs them where
# Python >= 3.10 and the packages are there, and says why when it skips them.
PYTHON_TEST_ENV = GO=$(GO) $(if $(filter command line environment,$(origin PYTHON)),PYTHON='$(PYTHON)')
python-test: build
	@$(PYTHON_TEST_ENV) python/test.sh

# The README's Slurm array job, run for real on a one-node Slurm started in a temporary
# directory (root, apt-get install slurm-wlm): one task requeued midway, the merged shards
# equal to a single-process fit. About a minute. Also: NIOC_SLURM=1 go test ./bench/slurm.
slurm-check: build
	bash bench/slurm/check.sh

# The main job: simulate a reaching dataset at the default parameters and fit it with our
# method and the MCE baseline, then print truth against both estimates.
demo: build
	@mkdir -p $(DEMO)
	@rm -f $(DEMO)/$(TASK)-ours.jsonl $(DEMO)/$(TASK)-baseline.jsonl
	$(BIN) simulate --task $(TASK) --trials 50 --seed 1 --force --out $(DEMO)/$(TASK).csv
	$(BIN) fit --task $(TASK) --data $(DEMO)/$(TASK).csv --restarts 10 --seed 1 --out $(DEMO)/$(TASK)-ours.jsonl
	$(BIN) fit --task $(TASK) --data $(DEMO)/$(TASK).csv --method baseline --restarts 10 --seed 1 --out $(DEMO)/$(TASK)-baseline.jsonl
	$(BIN) compare --task $(TASK) $(DEMO)/$(TASK)-ours.jsonl $(DEMO)/$(TASK)-baseline.jsonl

# XLA/PJRT plugins from PyPI wheels (go-xla's own installer needs GitHub). PREFIX is the lib
# directory that nioc-gpu and go-xla search (see `nioc-gpu backend`).
PREFIX  ?= $(HOME)/.local/lib
PIP_DL  := python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
# CPU: lammps-jax-pjrt-cpu 0.11.2 carries a PJRT CPU plugin built from jaxlib 0.11.2's XLA
# (PJRT C API 0.115; go-xla v0.1.4, written against 0.83, loads it: it checks no version).
CPU_WHEEL     := lammps_jax_pjrt_cpu-0.11.2-py3-none-manylinux_2_27_x86_64.whl
CPU_WHEEL_SHA := 1319390d948b39f69f7dade496b7c385149d9ca6097a6b62114da113216d9ad1

# XLA_CPU_SEQUENTIAL=1 (the default) patches the plugin so that its programs run their kernels
# one after another on the calling thread (cmd/xla-cpu-patch; docs/backends.md, "Sequential
# thunks"); XLA_CPU_SEQUENTIAL=0 installs it as the wheel has it.
XLA_CPU_SEQUENTIAL ?= 1

xla-cpu:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PIP_DL) --platform manylinux_2_27_x86_64 -d "$$tmp" lammps-jax-pjrt-cpu==0.11.2 && \
	echo "$(CPU_WHEEL_SHA)  $$tmp/$(CPU_WHEEL)" | sha256sum -c - && \
	mkdir -p $(PREFIX)/go-xla && \
	unzip -p "$$tmp/$(CPU_WHEEL)" lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so > $(PREFIX)/go-xla/pjrt_c_api_cpu_plugin.so.tmp && \
	chmod 0755 $(PREFIX)/go-xla/pjrt_c_api_cpu_plugin.so.tmp && \
	if [ "$(XLA_CPU_SEQUENTIAL)" = 1 ]; then $(GO) run ./cmd/xla-cpu-patch $(PREFIX)/go-xla/pjrt_c_api_cpu_plugin.so.tmp; fi && \
	mv $(PREFIX)/go-xla/pjrt_c_api_cpu_plugin.so.tmp $(PREFIX)/go-xla/pjrt_c_api_cpu_plugin.so && \
	nm -D --defined-only $(PREFIX)/go-xla/pjrt_c_api_cpu_plugin.so | grep -q ' T GetPjrtApi' && \
	echo "installed $(PREFIX)/go-xla/pjrt_c_api_cpu_plugin.so"

# CUDA 12: jax-cuda12-pjrt 0.8.2 (PJRT C API 0.85, CUDA 12.9) and the NVIDIA libraries its
# plugin package pins (about 3 GB), in go-xla's layout PREFIX/go-xla/nvidia.
CUDA_WHEELS := jax-cuda12-pjrt==0.8.2 nvidia-cublas-cu12==12.9.3.13 nvidia-cuda-cupti-cu12==12.9.79 \
	nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79 nvidia-cudnn-cu12==9.28.0.42 \
	nvidia-cufft-cu12==11.4.1.4 nvidia-cusolver-cu12==11.7.5.82 nvidia-cusparse-cu12==12.5.10.65 \
	nvidia-nccl-cu12==2.32.3 nvidia-nvjitlink-cu12==12.9.86 nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-nvshmem-cu12==3.8.0

xla-cuda:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && nv=$(PREFIX)/go-xla/nvidia && \
	$(PIP_DL) --platform manylinux_2_27_x86_64 --platform manylinux_2_25_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
	  -d "$$tmp" $(CUDA_WHEELS) && \
	rm -rf "$$nv" && mkdir -p "$$nv/bin" && \
	unzip -p "$$tmp"/jax_cuda12_pjrt-0.8.2-*.whl jax_plugins/xla_cuda12/xla_cuda_plugin.so > "$$nv/pjrt_c_api_cuda_plugin.so" && \
	chmod 0755 "$$nv/pjrt_c_api_cuda_plugin.so" && \
	for w in "$$tmp"/nvidia_*.whl; do x=$$(mktemp -d); unzip -q "$$w" 'nvidia/*' -d "$$x"; cp -a "$$x/nvidia/." "$$nv/"; rm -rf "$$x"; done && \
	ln -sfn "$$nv/cuda_nvcc/bin/ptxas" "$$nv/bin/ptxas" && \
	nm -D --defined-only "$$nv/pjrt_c_api_cuda_plugin.so" | grep -q ' T GetPjrtApi' && \
	echo "installed $$nv/pjrt_c_api_cuda_plugin.so"

# Binaries for bench/gpu/run.sh (the README's GPU measurements), built here to be copied to a
# linux/amd64 GPU machine that may have no network for Go modules.
gpu-binaries:
	GOOS=linux GOARCH=amd64 CGO_ENABLED=1 $(GO) build -ldflags "-s -w -X main.version=$(VERSION)" -o bin/nioc-gpu ./cmd/nioc-gpu
	GOOS=linux GOARCH=amd64 CGO_ENABLED=1 $(GO) build -ldflags "-s -w" -o bin/bench-table ./bench/table
	GOOS=linux GOARCH=amd64 CGO_ENABLED=1 $(GO) build -ldflags "-s -w" -o bin/bench-sample ./bench/sample
	GOOS=linux GOARCH=amd64 CGO_ENABLED=1 $(GO) test -c -ldflags "-s -w" -o bin/likelihood.test ./likelihood
	tar -C bin -czf bin/gpu-binaries.tar.gz nioc-gpu bench-table bench-sample likelihood.test

# Binaries for every laptop: the pure-Go backend only (CGO_ENABLED=0, no XLA), cross-compiled
# to dist/ with their SHA-256 sums. `nioc-gpu backend` says a binary has no XLA.
DIST_TARGETS := linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64
dist:
	@mkdir -p dist
	@set -e; for t in $(DIST_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		echo "dist/nioc-gpu-$$os-$$arch$$ext"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build $(LDFLAGS) -trimpath -o dist/nioc-gpu-$$os-$$arch$$ext ./cmd/nioc-gpu; \
	done
	cd dist && sha256sum nioc-gpu-* > SHA256SUMS && cat SHA256SUMS

vet:
	$(GO) vet ./...

clean:
	rm -rf bin out
