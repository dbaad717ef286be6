package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
)

func TestCLISimulate(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		task                    string
		args                    []string
		subjects, trials, steps int
		stderr                  string
	}{
		{"linear task default steps", "linear", []string{"--trials", "3"}, 1, 3, 20, "partial observability, full planner"},
		{"pendulum steps subjects", "pendulum", []string{"--trials", "2", "--steps", "7", "--subjects", "3"}, 3, 2, 7, "3 subject(s) × 2 trials × 7 steps"},
		{"observe full", "linear", []string{"--trials", "2", "--steps", "5", "--observe", "full"}, 1, 2, 5, "full observability"},
		{"planner partial", "linear", []string{"--trials", "2", "--steps", "5", "--planner", "partial"}, 1, 2, 5, "partial planner"},
		{"params", "linear", []string{"--trials", "2", "--params", "action_cost=1, obs_noise=0.5"}, 1, 2, 20, "wrote"},
		{"lightdark default planner", "lightdark", []string{"--trials", "2", "--steps", "10"}, 1, 2, 10, "partial planner"},
		{"no policy noise", "linear", []string{"--trials", "2", "--steps", "3", "--temperature", "0"}, 1, 2, 3, "agent: no policy noise"},
		{"policy noise stated", "linear", []string{"--trials", "2", "--steps", "3"}, 1, 2, 3, "agent: maximum-causal-entropy policy noise at temperature 0.001"},
		{"planner stopped", "pendulum", []string{"--trials", "2", "--steps", "6", "--planner-iterations", "1"}, 1, 2, 6, "iLQG stopped after 1 iterations, not converged"},
		{"delay", "pendulum", []string{"--trials", "2", "--steps", "6", "--delay", "1"}, 1, 2, 6, "sensorimotor delay of 1 step"},
		{"no feed-forward", "pendulum", []string{"--trials", "2", "--steps", "6", "--no-feedforward"}, 1, 2, 6, "controls without the feed-forward term"},
		{"one step", "linear", []string{"--trials", "1", "--steps", "1"}, 1, 1, 1, "wrote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "sim.csv")
			r := cliOK(t, append([]string{"simulate", "--task", tc.task, "--out", out}, tc.args...)...)
			assert.Empty(t, r.stdout, "data go to --out, messages to stderr")
			assert.Contains(t, r.stderr, tc.stderr)
			assert.Contains(t, r.stderr, out)

			m, err := models.Get(tc.task)
			require.NoError(t, err)
			spec := m.Spec()
			rows := cliReadCSV(t, out)
			require.NotEmpty(t, rows)
			assert.Equal(t, append([]string{"subject", "trial", "t"}, spec.States...), rows[0], "header")
			require.Len(t, rows, 1+tc.subjects*tc.trials*(tc.steps+1), "rows = subjects × trials × (steps+1) + header")
			i := 1
			for s := 1; s <= tc.subjects; s++ {
				for tr := 0; tr < tc.trials; tr++ {
					for step := 0; step <= tc.steps; step++ {
						row := rows[i]
						assert.Equal(t, []string{strconv.Itoa(s), strconv.Itoa(tr), strconv.Itoa(step)}, row[:3], "row %d", i)
						for j, v := range row[3:] {
							x := cliParseFloat(t, v, spec.States[j])
							if step == 0 {
								assert.Equal(t, spec.X0[j], x, "trials start at the task's x0")
							}
						}
						i++
					}
				}
			}
			// The file reads back as the task's data.
			set, err := data.Read(out, spec.States)
			require.NoError(t, err)
			assert.Equal(t, tc.steps, set.Steps)
			assert.Len(t, set.Subjects, tc.subjects)
		})
	}
}

func TestCLISimulateSeeds(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--task", "pendulum", "--trials", "3", "--steps", "10", "--subjects", "2"}
	a := cliSimulate(t, dir, "a.csv", append(args, "--seed", "3")...)
	b := cliSimulate(t, dir, "b.csv", append(args, "--seed", "3")...)
	c := cliSimulate(t, dir, "c.csv", append(args, "--seed", "4")...)
	d := cliSimulate(t, dir, "d.csv", args...) // default seed
	ab, err := os.ReadFile(a)
	require.NoError(t, err)
	bb, err := os.ReadFile(b)
	require.NoError(t, err)
	cb, err := os.ReadFile(c)
	require.NoError(t, err)
	db, err := os.ReadFile(d)
	require.NoError(t, err)
	assert.Equal(t, string(ab), string(bb), "the same seed gives the same file")
	assert.NotEqual(t, string(ab), string(cb), "different seeds give different files")
	assert.NotEqual(t, string(ab), string(db))

	// Subjects have the same parameters but their own noise.
	set, err := data.Read(a, []string{"theta", "omega"})
	require.NoError(t, err)
	require.Len(t, set.Subjects, 2)
	assert.NotEqual(t, set.Subjects[0].Trials[0].States, set.Subjects[1].Trials[0].States)
	// Trials of a subject differ too.
	assert.NotEqual(t, set.Subjects[0].Trials[0].States, set.Subjects[0].Trials[1].States)

	// Full observability is a different agent: same seed, different trajectories.
	full := cliSimulate(t, dir, "full.csv", append(args, "--seed", "3", "--observe", "full")...)
	fb, err := os.ReadFile(full)
	require.NoError(t, err)
	assert.NotEqual(t, string(ab), string(fb))
}

// TestCLISimulateStartSpread: --start-sd spreads where the trials start (the named state only,
// by about its sd), and --replan says that the agent plans from each start.
func TestCLISimulateStartSpread(t *testing.T) {
	dir := t.TempDir()
	m, err := models.Get("linear")
	require.NoError(t, err)
	spec := m.Spec()
	for _, replan := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("spread-%v.csv", replan))
		args := []string{"simulate", "--task", "linear", "--trials", "200", "--steps", "2", "--start-sd", "pos=0.5", "--out", out}
		want := "the agent plans from the task's x0"
		if replan {
			args, want = append(args, "--replan"), "the agent plans each trial from its own start"
		}
		r := cliOK(t, args...)
		assert.Contains(t, r.stderr, "trials start spread around the task's x0 (pos sd 0.5); "+want)
		set, err := data.Read(out, spec.States)
		require.NoError(t, err)
		var pos []float64
		for _, tr := range set.Subjects[0].Trials {
			pos = append(pos, tr.States[0][0])
			assert.Equal(t, spec.X0[1], tr.States[0][1], "vel is not spread")
		}
		mean, sd := stat.MeanStdDev(pos, nil)
		assert.InDelta(t, spec.X0[0], mean, 4*0.5/math.Sqrt(200), "starts centre on x0")
		assert.InDelta(t, 0.5, sd, 0.1, "starts spread by --start-sd")
	}
}

func TestCLISimulateErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string // --out is added unless noOut
		noOut  bool
		code   int
		msgs   []string
		outDir string // write to this subdirectory of the temp dir (does not exist)
	}{
		{name: "missing --task", args: nil, code: 2, msgs: []string{"--task is required", "linear", "reaching"}},
		{name: "replan without spread", args: []string{"--task", "linear", "--replan"}, code: 2,
			msgs: []string{"--replan needs --start-sd"}},
		{name: "spread of an unknown state", args: []string{"--task", "linear", "--start-sd", "angle=0.1"}, code: 2,
			msgs: []string{`--start-sd: task linear has no state "angle"`, "pos, vel"}},
		{name: "negative spread", args: []string{"--task", "linear", "--start-sd", "pos=-0.1"}, code: 2,
			msgs: []string{"--start-sd: pos=-0.1", "finite and >= 0"}},
		{name: "unknown task", args: []string{"--task", "pendulm"}, code: 2,
			msgs: []string{`unknown task "pendulm"`, "known tasks: cartpole, lightdark, linear, navigation, pendulum, reaching"}},
		{name: "unknown parameter", args: []string{"--task", "linear", "--params", "action_costs=1"}, code: 2,
			msgs: []string{`no parameter "action_costs"`, "action_cost, motor_noise, obs_noise"}},
		{name: "params without value", args: []string{"--task", "linear", "--params", "action_cost="}, code: 2,
			msgs: []string{"--params", "action_cost", "not a number"}},
		{name: "params without name", args: []string{"--task", "linear", "--params", "=1"}, code: 2,
			msgs: []string{"--params", `"=1" is not name=value`}},
		{name: "params without =", args: []string{"--task", "linear", "--params", "x"}, code: 2,
			msgs: []string{"--params", `"x" is not name=value`}},
		{name: "params trailing comma", args: []string{"--task", "linear", "--params", "action_cost=1,"}, code: 2,
			msgs: []string{"--params", "not name=value"}},
		{name: "params not a number", args: []string{"--task", "linear", "--params", "action_cost=abc"}, code: 2,
			msgs: []string{"--params", `"abc" is not a number`}},
		{name: "params twice", args: []string{"--task", "linear", "--params", "action_cost=1,action_cost=2"}, code: 2,
			msgs: []string{"action_cost given twice"}},
		{name: "negative cost", args: []string{"--task", "linear", "--params", "action_cost=-1"}, code: 2,
			msgs: []string{"action_cost = -1 is negative"}},
		{name: "negative noise", args: []string{"--task", "pendulum", "--params", "obs_noise=-0.5"}, code: 2,
			msgs: []string{"obs_noise = -0.5 is negative"}},
		{name: "NaN value", args: []string{"--task", "linear", "--params", "motor_noise=NaN"}, code: 2,
			msgs: []string{"motor_noise = NaN is not finite"}},
		{name: "Inf value", args: []string{"--task", "linear", "--params", "motor_noise=Inf"}, code: 2,
			msgs: []string{"motor_noise", "not finite"}},
		{name: "trials 0", args: []string{"--task", "linear", "--trials", "0"}, code: 2, msgs: []string{"--trials must be >= 1, got 0"}},
		{name: "trials negative", args: []string{"--task", "linear", "--trials", "-3"}, code: 2, msgs: []string{"--trials must be >= 1, got -3"}},
		{name: "trials not a number", args: []string{"--task", "linear", "--trials", "many"}, code: 2, msgs: []string{`--trials must be an integer, got "many"`}},
		{name: "steps 0", args: []string{"--task", "linear", "--steps", "0"}, code: 2, msgs: []string{"--steps must be >= 1, got 0"}},
		{name: "steps negative", args: []string{"--task", "linear", "--steps", "-1"}, code: 2, msgs: []string{"--steps must be >= 1, got -1"}},
		{name: "subjects 0", args: []string{"--task", "linear", "--subjects", "0"}, code: 2, msgs: []string{"--subjects must be >= 1"}},
		{name: "seed negative", args: []string{"--task", "linear", "--seed", "-1"}, code: 2, msgs: []string{`--seed must be a non-negative integer, got "-1"`}},
		{name: "unknown observe", args: []string{"--task", "linear", "--observe", "none"}, code: 2,
			msgs: []string{`unknown --observe "none"`, "partial or full"}},
		{name: "unknown planner", args: []string{"--task", "linear", "--planner", "optimal"}, code: 2,
			msgs: []string{`unknown --planner "optimal"`, "full or partial"}},
		{name: "unknown backend", args: []string{"--task", "linear", "--backend", "cuda"}, code: 2,
			msgs: []string{`unknown backend "cuda"`}},
		{name: "missing --out", args: []string{"--task", "linear"}, noOut: true, code: 2, msgs: []string{"--out is required"}},
		{name: "out directory missing", args: []string{"--task", "linear"}, outDir: "no/such/dir", code: 1,
			msgs: []string{"cannot write", filepath.Join("no", "such", "dir")}},
		{name: "positional argument", args: []string{"--task", "linear", "junk"}, code: 2,
			msgs: []string{`unexpected argument "junk"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, tc.outDir, "sim.csv")
			args := append([]string{"simulate"}, tc.args...)
			if !tc.noOut {
				// --out before the other flags, so that a positional argument stays last.
				args = append([]string{"simulate", "--out", out}, tc.args...)
			}
			r := cliRun(t, args...)
			cliRequireFail(t, r, tc.code, tc.msgs...)
			cliNoFile(t, out)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "a failed simulate leaves nothing behind")
		})
	}
}

// TestCLIWarnOutsideBox: simulate --params, loglik --params and eval --truth warn when a value
// lies outside its search box (a fit cannot recover it), and stay quiet inside it or on a
// bound.
func TestCLIWarnOutsideBox(t *testing.T) {
	dir := t.TempDir()
	lin := cliSimulate(t, dir, "lin.csv", "--task", "linear", "--trials", "2", "--steps", "5")
	for _, tc := range []struct {
		name string
		args []string
		warn string
	}{
		{"simulate outside", []string{"simulate", "--task", "linear", "--trials", "2", "--params", "action_cost=50", "--out", filepath.Join(dir, "a.csv")},
			"warning: --params action_cost=50 lies outside its search box [0.001, 10]"},
		{"simulate on a bound", []string{"simulate", "--task", "linear", "--trials", "2", "--params", "action_cost=10", "--out", filepath.Join(dir, "b.csv")}, ""},
		{"simulate defaults outside", []string{"simulate", "--task", "cartpole", "--trials", "1", "--steps", "3", "--out", filepath.Join(dir, "c.csv")},
			"warning: the task's default motor_noise=0.1 lies outside its search box [0.2, 1.5]"},
		{"loglik outside", []string{"loglik", "--task", "linear", "--data", lin, "--params", "motor_noise=50"},
			"warning: --params motor_noise=50 lies outside its search box [0.001, 1]"},
		{"loglik inside", []string{"loglik", "--task", "linear", "--data", lin, "--params", "motor_noise=0.5"}, ""},
		{"eval truth outside", []string{"eval", "--task", "linear", "--sets", "1", "--trials", "2", "--restarts", "1", "--max-iter", "2", "--methods", "ours",
			"--truth", "obs_noise=0.001", "--quiet", "--out", filepath.Join(dir, "ev")},
			"warning: --truth obs_noise=0.001 lies outside its search box [0.01, 2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cliOK(t, tc.args...)
			if tc.warn == "" {
				assert.NotContains(t, r.stderr, "warning:")
				return
			}
			assert.Contains(t, r.stderr, tc.warn)
		})
	}
}
