package likelihood

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envRowsChild marks the process TestRowBitsIndependentOfPlace starts: "exact" calls
// graph.ExactRowsOnCPU before the plugin opens, "native" does not.
const envRowsChild = "NIOC_TEST_ROWS_CHILD"

// TestRowBitsIndependentOfPlace: on XLA's CPU plugin opened after graph.ExactRowsOnCPU, the
// log-likelihood and gradient of a row of a likelihood whose trials are not lanes (linearized
// at the mean) have the same bits wherever the row sits in its chunk, so that a subject fitted
// beside others gets the numbers it gets alone (what fit's TestQueueIsExact checks on the Go
// backend). XLA reads its flags once a process, so each case runs in a process of its own
// (this test binary, running placeDifferences): with the cap every rotation of three rows
// gives each row its bits; without it, on a processor with AVX-512, they differ (logged, to
// show what the test would catch; without AVX-512 the two runs are the same code).
func TestRowBitsIndependentOfPlace(t *testing.T) {
	if mode := os.Getenv(envRowsChild); mode != "" {
		if mode == "exact" {
			graph.ExactRowsOnCPU()
		}
		fmt.Printf("differing numbers: %d\n", placeDifferences(t))
		return
	}
	bx, _ := xlaAndGo(t) // skips without a plugin
	// TrialsAsLanes, which a command asks before it opens the plugin, says what an evaluator on
	// the plugin then does.
	assert.True(t, TrialsAsLanes(mustSpec(t, "pendulum"), Options{}), "the pendulum's trials are lanes")
	assert.False(t, TrialsAsLanes(mustSpec(t, "reaching"), Options{}), "reaching is linearized at the mean by default")
	for _, name := range []string{"pendulum", "reaching"} {
		m, err := models.Get(name)
		require.NoError(t, err)
		for _, o := range []Options{{}, {Linearize: LinearizeData}, {Linearize: LinearizeMean}, {Linearize: LinearizeILQG},
			{ForwardGradient: true}, {Form: FormUnrolled}, {Method: MCEBaseline}} {
			e, err := New(m, bx, o)
			require.NoError(t, err)
			assert.Equal(t, e.lanes(), TrialsAsLanes(m.Spec(), o), "%s %+v", name, o)
		}
	}
	run := func(mode string) int {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRowBitsIndependentOfPlace$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envRowsChild+"="+mode, "XLA_FLAGS=", EnvLanes+"=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		m := regexp.MustCompile(`differing numbers: (\d+)`).FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		n, err := strconv.Atoi(string(m[1]))
		require.NoError(t, err)
		return n
	}
	assert.Zero(t, run("exact"), "with %s a row's bits do not depend on its place", graph.CPUExactRowsISA)
	if n := run("native"); n > 0 {
		t.Logf("without it %d numbers of the rotated rows differ", n)
	} else {
		t.Logf("without it none differ either: this processor's code is the same both ways (no AVX-512)")
	}
}

// placeDifferences evaluates three rows of the pendulum linearized at the mean (one chunk, the
// same trials, three parameter vectors) on the CPU plugin in each rotation and returns how
// many of the rows' log-likelihoods and gradient entries differ in any bit from the first
// order's.
func placeDifferences(t *testing.T) int {
	bx, _ := xlaAndGo(t)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, theta := testTheta(m.Spec())
	trials := simulateTrials(t, m, control.ObservePartial, natural, 7, 20, 1)
	e, err := New(m, bx, Options{Linearize: LinearizeMean, Form: FormLooped})
	require.NoError(t, err)
	const R = 3
	rows, thetas := make([][][][]float64, R), make([][]float64, R)
	for i := range R {
		rows[i], thetas[i] = trials, append([]float64(nil), theta...)
		thetas[i][0] += 0.05 * float64(i)
		thetas[i][1] -= 0.03 * float64(i)
	}
	d, err := e.Prepare(rows, 0)
	require.NoError(t, err)
	ll0, g0, err := e.Eval(d, thetas)
	require.NoError(t, err)
	diffs := 0
	for r := 1; r < R; r++ {
		ll, g, err := e.Eval(d, append(append([][]float64(nil), thetas[r:]...), thetas[:r]...))
		require.NoError(t, err)
		for i := range R {
			j := (i + r) % R // row i of this order is row j of the first
			if math.Float64bits(ll[i]) != math.Float64bits(ll0[j]) {
				diffs++
			}
			for k := range g[i] {
				if math.Float64bits(g[i][k]) != math.Float64bits(g0[j][k]) {
					diffs++
				}
			}
		}
	}
	return diffs
}

func mustSpec(t *testing.T, name string) models.Spec {
	m, err := models.Get(name)
	require.NoError(t, err)
	return m.Spec()
}
