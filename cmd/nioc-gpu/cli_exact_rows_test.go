package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIQueueEqualsAloneOnXLA: on XLA's CPU plugin, `fit` of a task linearized at the mean
// (its trials are not lanes) gives a subject fitted beside another the record it gets fitted
// alone, to the bit but for its seconds: fit asks for code whose rows keep their bits wherever
// they sit in a chunk (graph.ExactRowsOnCPU) before it opens the plugin. XLA reads its flags
// once a process, so each fit runs in a process of its own. The same fits with the user's
// XLA_FLAGS, nioc-gpu's without the cap, show what the test would catch (logged: on a
// processor without AVX-512 the two are the same code).
func TestCLIQueueEqualsAloneOnXLA(t *testing.T) {
	if _, err := graph.FindPlugin("cpu"); err != nil {
		t.Skip("no XLA CPU plugin installed (make xla-cpu)")
	}
	dir := t.TempDir()
	both := cliSimulate(t, dir, "both.csv", "--task", "pendulum", "--trials", "7", "--subjects", "2", "--seed", "3")
	second := filepath.Join(dir, "second.csv")
	rows := cliReadCSV(t, both)
	keep := [][]string{rows[0]}
	for _, r := range rows[1:] {
		if r[0] == "2" {
			keep = append(keep, r)
		}
	}
	f, err := os.Create(second)
	require.NoError(t, err)
	require.NoError(t, csv.NewWriter(f).WriteAll(keep))
	require.NoError(t, f.Close())

	fitted := func(data, flags string) map[string]any {
		out := filepath.Join(t.TempDir(), "fit.jsonl")
		var stderr bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$", "--", "fit", "--backend", "xla",
			"--task", "pendulum", "--linearize", "mean", "--restarts", "3", "--max-iter", "15", "--seed", "1",
			"--uncertainty", "hessian", "--check-draws", "0", "--quiet", "--data", data, "--out", out)
		cmd.Env = append(os.Environ(), "NIOC_GPU_HELPER_PROCESS=1", "XLA_FLAGS="+flags)
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Run(), "%s", stderr.String())
		rec := cliBySubject(t, cliReadJSONL(t, out))["2"]
		require.NotNil(t, rec, "subject 2 fitted: %s", stderr.String())
		delete(rec, "seconds")
		return rec
	}
	assert.Equal(t, fitted(second, ""), fitted(both, ""), "subject 2 alone and beside subject 1")
	native := graph.CPUFlags(graph.FusionBarriers, false)
	if alone, beside := fitted(second, native), fitted(both, native); assert.ObjectsAreEqual(alone, beside) {
		t.Logf("with XLA_FLAGS=%q (no cap) the records agree too: this processor's code is the same both ways", native)
	} else {
		t.Logf("with XLA_FLAGS=%q (no cap) the records differ", native)
	}
}
