# nioc-gpu: build, test, demo and benchmarks. Everything runs on the embedded pure-Go backend
# unless NIOC_BACKEND=xla (see README, "Backends").

GO      ?= go
BIN     := bin/nioc-gpu
DEMO    := out/demo
TASK    ?= reaching

.PHONY: build test demo bench bench-jax xla-cpu xla-cuda vet clean

build:
	$(GO) build -o $(BIN) ./cmd/nioc-gpu

# The full test suite: no Python, no network, no GPU. About 5 minutes on 2 cores.
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

# The main job: simulate a reaching dataset at the default parameters and fit it with our
# method and the MCE baseline, then print truth against both estimates.
demo: build
	@mkdir -p $(DEMO)
	@rm -f $(DEMO)/$(TASK)-ours.jsonl $(DEMO)/$(TASK)-baseline.jsonl
	$(BIN) simulate --task $(TASK) --trials 50 --seed 1 --out $(DEMO)/$(TASK).csv
	$(BIN) fit --task $(TASK) --data $(DEMO)/$(TASK).csv --restarts 10 --seed 1 --out $(DEMO)/$(TASK)-ours.jsonl
	$(BIN) fit --task $(TASK) --data $(DEMO)/$(TASK).csv --method baseline --restarts 10 --seed 1 --out $(DEMO)/$(TASK)-baseline.jsonl
	$(BIN) compare --task $(TASK) $(DEMO)/$(TASK)-ours.jsonl $(DEMO)/$(TASK)-baseline.jsonl

vet:
	$(GO) vet ./...

clean:
	rm -rf bin out
