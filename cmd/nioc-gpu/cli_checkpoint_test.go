package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIHelperProcess is not a test: it runs the command line after "--" as the nioc-gpu
// binary does, for tests that need a process of their own (to kill it).
func TestCLIHelperProcess(t *testing.T) {
	if os.Getenv("NIOC_GPU_HELPER_PROCESS") != "1" {
		t.Skip("runs the command line in a process of its own for other tests")
	}
	i := slices.Index(os.Args, "--")
	require.GreaterOrEqual(t, i, 0, "no -- before the command line")
	os.Exit(run(os.Args[i+1:], os.Stdout, os.Stderr))
}

// cliStart starts nioc-gpu with args in a process of its own; stderr collects what it prints.
func cliStart(t *testing.T, stderr *bytes.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestCLIHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "NIOC_GPU_HELPER_PROCESS=1")
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	return cmd
}

// cliFitDone returns the evaluations of the work of a fit into out that is saved: those of
// the subjects in out and of the restarts in its checkpoint.
func cliFitDone(out string) int {
	n := 0
	written := map[string]bool{}
	if recs, _, err := fit.ReadRecords(out); err == nil {
		for _, r := range recs {
			n += r.Evaluations
			written[r.Subject] = true
		}
	}
	if c, err := fit.ReadCheckpoint(fit.CheckpointPath(out)); err == nil {
		for _, s := range c.Subjects {
			if written[s.Subject] {
				continue
			}
			for _, r := range s.Restarts {
				if r != nil {
					n += r.State.Evaluations
				}
			}
		}
	}
	return n
}

// cliWithoutSeconds returns a results file's records by subject, without the timing.
func cliWithoutSeconds(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	recs := cliBySubject(t, cliReadJSONL(t, path))
	for _, r := range recs {
		delete(r, "seconds")
	}
	return recs
}

// TestCLIFitKilledResumes is the acceptance test of checkpoints: a fit killed with SIGKILL at
// about 80 % of its work, checkpointing every 10 ms, resumes with --resume from its
// checkpoint, with all the work saved before the kill, and ends with the results of an
// uninterrupted fit; so does a fit stopped by SIGINT (Ctrl-C), which saves a checkpoint as it
// stops, and a fit of one subject at a time (--queue) killed half-way.
func TestCLIFitKilledResumes(t *testing.T) {
	dir := t.TempDir()
	// Enough work that the fit is still running well after it has started (about 2 s on 2
	// cores with the tape; 10 trials, 2 subjects and 3 restarts took 0.3 s, and the Ctrl-C
	// below came after the end).
	data := cliSimulate(t, dir, "d.csv", "--task", "lightdark", "--trials", "40", "--subjects", "4", "--seed", "4")
	args := []string{"fit", "--task", "lightdark", "--restarts", "8", "--max-iter", "30", "--seed", "2", "--quiet", "--data", data}

	ref := filepath.Join(dir, "ref.jsonl")
	cliOK(t, append(args, "--out", ref)...)
	cliNoFile(t, fit.CheckpointPath(ref))
	total := cliFitDone(ref)

	// resume continues the fit into out, which holds the work saved, with the flags extra,
	// and requires the results of the uninterrupted fit.
	resume := func(t *testing.T, out string, saved int, extra ...string) {
		written := 0
		recs, _, err := fit.ReadRecords(out)
		require.NoError(t, err)
		for _, rec := range recs {
			written += rec.Evaluations
		}
		r := cliOK(t, append(append(slices.Clone(args), extra...), "--checkpoint-every", "10ms", "--resume", "--out", out)...)
		m := regexp.MustCompile(`resuming from (.*): \d+ restart\(s\) finished and \d+ under way \((\d+) evaluations kept\)`).FindStringSubmatch(r.stderr)
		require.NotNil(t, m, "stderr:\n%s", r.stderr)
		assert.Equal(t, fit.CheckpointPath(out), m[1])
		assert.Equal(t, strconv.Itoa(saved-written), m[2], "the resumed fit continues from all the saved work")
		cliNoFile(t, fit.CheckpointPath(out))
		assert.Equal(t, cliWithoutSeconds(t, ref), cliWithoutSeconds(t, out), "the results of an uninterrupted fit")
		matches, err := filepath.Glob(filepath.Join(filepath.Dir(out), "*.tmp*"))
		require.NoError(t, err)
		assert.Empty(t, matches, "no temporary checkpoint is left")
	}

	// killAt starts the fit into out with the flags extra, kills it with SIGKILL once the
	// fraction frac of its work is saved, and returns the work saved.
	killAt := func(t *testing.T, out string, frac float64, extra ...string) int {
		var stderr bytes.Buffer
		cmd := cliStart(t, &stderr, append(append(slices.Clone(args), extra...), "--checkpoint-every", "10ms", "--out", out)...)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		seen := 0
		for deadline := time.Now().Add(2 * time.Minute); float64(seen) < frac*float64(total); time.Sleep(2 * time.Millisecond) {
			select {
			case err := <-exited:
				t.Fatalf("the fit ended (%v) before %.0f %% of its work (%d of %d evaluations saved); stderr:\n%s", err, 100*frac, seen, total, stderr.String())
			default:
			}
			require.True(t, time.Now().Before(deadline), "no progress; stderr:\n%s", stderr.String())
			seen = cliFitDone(out)
		}
		require.NoError(t, cmd.Process.Kill())
		err := <-exited
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit) && !exit.Exited(), "killed by a signal, got %v", err)
		saved := cliFitDone(out)
		assert.GreaterOrEqual(t, saved, seen, "the work saved at the kill is at least what was seen saved before it")
		require.FileExists(t, fit.CheckpointPath(out))
		t.Logf("killed with %d of %d evaluations saved", saved, total)
		return saved
	}

	t.Run("kill -9 at 80 %", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "killed.jsonl")
		resume(t, out, killAt(t, out, 0.8))
	})

	t.Run("one subject at a time, kill -9 at 50 %", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "queued.jsonl")
		queue := []string{"--queue", "8"} // 8 restarts: one subject's restarts at a time
		resume(t, out, killAt(t, out, 0.5, queue...), queue...)
	})

	t.Run("Ctrl-C", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "interrupted.jsonl")
		var stderr bytes.Buffer
		cmd := cliStart(t, &stderr, append(args, "--out", out)...) // the default interval: no checkpoint before the signal
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			require.True(t, time.Now().Before(deadline), "no output; stderr:\n%s", stderr.String())
			if _, err := os.Stat(out); err == nil {
				break
			}
		}
		time.Sleep(300 * time.Millisecond) // into the fit, which takes seconds
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		err := cmd.Wait()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit) && exit.ExitCode() == 130, "exit status 130 after SIGINT, got %v; stderr:\n%s", err, stderr.String())
		assert.Contains(t, stderr.String(), "restarts in "+fit.CheckpointPath(out)+"; rerun with --resume")
		saved := cliFitDone(out)
		require.Positive(t, saved)
		t.Logf("interrupted with %d of %d evaluations saved", saved, total)
		resume(t, out, saved)
	})
}

func TestCLIFitCheckpointRefusals(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--subjects", "2")
	fitArgs := func(out string, more ...string) []string {
		return append(append([]string{"fit"}, cliFitArgs...), append([]string{"--data", data, "--out", out}, more...)...)
	}

	t.Run("checkpoint without --resume", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		require.NoError(t, os.WriteFile(fit.CheckpointPath(out), []byte("{}"), 0o644))
		cliRequireFail(t, cliRun(t, fitArgs(out)...), 2, fit.CheckpointPath(out)+" exists", "--resume")
	})
	t.Run("checkpoint of other settings", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		c := &fit.Checkpoint{Format: fit.CheckpointFormat, Run: fit.Run{Task: "linear", Method: "ours", Observe: "partial"},
			Restarts: 7, Fitted: []string{"action_cost"}}
		require.NoError(t, fit.WriteCheckpoint(fit.CheckpointPath(out), c))
		r := cliRun(t, fitArgs(out, "--resume")...)
		cliRequireFail(t, r, 1, fit.CheckpointPath(out)+" holds the state of a run with other settings",
			"restarts: 7 in the file, 2 now", "fitted parameters: action_cost in the file")
	})
	t.Run("not a checkpoint", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		require.NoError(t, os.WriteFile(fit.CheckpointPath(out), []byte("{"), 0o644))
		cliRequireFail(t, cliRun(t, fitArgs(out, "--resume")...), 1, "not a checkpoint")
	})
	t.Run("negative interval", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		cliRequireFail(t, cliRun(t, fitArgs(out, "--checkpoint-every", "-1s")...), 2, "--checkpoint-every must be >= 0")
	})
	t.Run("a finished fit leaves no checkpoint", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		r := cliOK(t, fitArgs(out, "--checkpoint-every", "1ms")...)
		assert.NotContains(t, r.stderr, "resuming")
		cliNoFile(t, fit.CheckpointPath(out))
		assert.True(t, strings.HasSuffix(fit.CheckpointPath(out), "r.jsonl.ckpt"))
	})
}
