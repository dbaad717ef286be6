package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
)

// initFit is sample's default --init: fit every subject first, as nioc-gpu fit does by
// default, and start the chains at the estimates with the bootstrap's adjustment.
const initFit = "fit"

// sampleFitPath is the results file of the fit that sample's --init fit runs in the output
// directory out (with its CSV table beside it, fit.CSVPath).
func sampleFitPath(out string) string { return filepath.Join(out, "fit.jsonl") }

// sampleFitFiles are the files that sample's --init fit writes in out.
func sampleFitFiles(out string) []string {
	p := sampleFitPath(out)
	return []string{p, fit.CSVPath(p), fit.CheckpointPath(p)}
}

// fitForSample fits the subjects of set in shard k of n with e as nioc-gpu fit does by default
// (restarts random restarts from seed, --uncertainty bootstrap with its default agents and
// draws, the goodness-of-fit check), writing, and with resume continuing, the results file
// sampleFitPath(out); it returns that path for sample's --init. infer and fixed are the
// parameters to fit and those held (sample's --infer and --fix); maxBatch is --max-batch.
// The intervals sample then draws are those of the bootstrap's adjustment, which covered
// where the curvature's alone did not (docs/posterior.md).
func fitForSample(e *likelihood.Evaluator, set *data.Set, k, n, restarts int, seed uint64, infer []string, fixed map[string]float64, maxBatch int, out string, resume, quiet bool, stderr io.Writer) (string, error) {
	path := sampleFitPath(out)
	fitter, err := fit.New(e, fit.Options{Restarts: restarts, Seed: seed, MaxIter: fitMaxIter,
		Infer: infer, Fix: fixed, MaxBatch: maxBatch, CheckpointEvery: time.Minute,
		Uncertainty: fit.UncertaintyBootstrap, CheckDraws: fit.DefaultCheckDraws})
	if err != nil {
		return "", usageError{err}
	}
	if !resume {
		for _, p := range sampleFitFiles(out) {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return "", err
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	if !quiet {
		fmt.Fprintf(stderr, "fitting first (--init %s): %d restarts a subject, --uncertainty bootstrap, into %s; the chains then start at the estimates, the likelihood widened as the bootstrap's intervals say (--init optimize skips this: intervals of the curvature alone)\n", initFit, restarts, path)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := fitFile(ctx, fitter, e.Spec(), e.Options(), set, k, n, path, quiet, stderr); err != nil {
		return "", err // interrupted: fitFile said that --resume continues it
	}
	return path, nil
}
