package control

import (
	"maps"
	"slices"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDrawLengths(t *testing.T) {
	a := DrawLengths(3, 7, 200, 9)
	seen := map[int]bool{}
	for _, T := range a {
		require.True(t, T >= 3 && T <= 7, "length %d", T)
		seen[T] = true
	}
	assert.Len(t, seen, 5, "every length of 3..7 drawn")
	assert.Equal(t, a, DrawLengths(3, 7, 200, 9), "the same seed gives the same lengths")
	assert.NotEqual(t, a, DrawLengths(3, 7, 200, 10))
	assert.Equal(t, []int{4, 4}, DrawLengths(4, 4, 2, 1))
}

// taskHorizon is the linear task with models.HorizonTask.
type taskHorizon struct{ models.LinearGaussian }

func (taskHorizon) Spec() models.Spec {
	s := models.LinearGaussian{}.Spec()
	s.Name, s.Horizon = "linear-task-horizon", models.HorizonTask
	return s
}

// TestSimulateLengths: with HorizonTrial a trial of T steps is the trial of the same number
// simulated under the T-step plan; with HorizonTask it is the first T steps of the trial
// simulated under the task's plan.
func TestSimulateLengths(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	lengths := [][]int{{5, 9, 5}, {20, 3}}
	seeds := []uint64{4, 8}
	for _, m := range []models.Model{models.LinearGaussian{}, taskHorizon{}} {
		spec := m.Spec()
		theta := spec.Defaults()
		opts := SimOptions{Temperature: spec.Temperature}
		xs, pols, err := SimulateLengths(m, theta, lengths, seeds, b, SolverOptions{}, opts)
		require.NoError(t, err)
		task := spec.PlanningHorizon() == models.HorizonTask
		if task {
			assert.Len(t, pols, 1)
		} else {
			assert.Len(t, pols, 4, "one plan per length")
		}
		for s, ls := range lengths {
			for r, T := range ls {
				h := T
				if task {
					h = spec.Steps
				}
				pol := pols[h]
				require.NotNil(t, pol, "%s: horizon %d", spec.Name, h)
				o := opts
				o.Seed, o.Trials = seeds[s], r+1
				want, err := Simulate(m, pol, [][]float64{theta}, b, o)
				require.NoError(t, err)
				assert.Equal(t, want[0][r][:T+1], xs[s][r], "%s subject %d trial %d", spec.Name, s, r)
			}
		}
	}
	_, _, err = SimulateLengths(taskHorizon{}, taskHorizon{}.Spec().Defaults(), [][]int{{21}}, []uint64{1}, b, SolverOptions{}, SimOptions{})
	assert.ErrorContains(t, err, "subject 0 trial 0: 21 steps, more than the 20 steps")
	_, _, err = SimulateLengths(models.LinearGaussian{}, models.LinearGaussian{}.Spec().Defaults(), [][]int{{0}}, []uint64{1}, b, SolverOptions{}, SimOptions{})
	assert.ErrorContains(t, err, "at least 1 step")
}

// TestSimulateSubjects: each subject's trajectories and plan are those SimulateLengths gives it
// with its own parameters alone, though the subjects' agents are solved as one batch.
func TestSimulateSubjects(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m := models.LinearGaussian{}
	spec := m.Spec()
	thetas := [][]float64{spec.Defaults(), {1, 0.2, 0.05}, {0.01, 0.01, 1}}
	lengths := [][]int{{5, 9}, {9, 9, 4}, {5}}
	seeds := []uint64{4, 8, 15}
	opts := SimOptions{Temperature: spec.Temperature}
	xs, pols, err := SimulateSubjects(m, thetas, lengths, seeds, b, SolverOptions{}, opts)
	require.NoError(t, err)
	assert.Equal(t, 2, pols[9].Problems, "horizon 9: subjects 0 and 1")
	assert.Equal(t, 1, pols[4].Problems, "horizon 4: subject 1")
	for s := range thetas {
		want, wantPols, err := SimulateLengths(m, thetas[s], lengths[s:s+1], seeds[s:s+1], b, SolverOptions{}, opts)
		require.NoError(t, err)
		assert.InDeltaSlice(t, flat(want[0]), flat(xs[s]), 1e-12, "subject %d", s)
		if s == 1 {
			assert.InDeltaSlice(t, wantPols[9].Gain, pols[9].Problem(1).Gain, 1e-12, "the batch's problem 1 is subject 1's plan")
			assert.Equal(t, wantPols[9].Converged, pols[9].Problem(1).Converged)
		}
	}
	_, _, err = SimulateSubjects(m, thetas[:2], lengths, seeds, b, SolverOptions{}, opts)
	assert.ErrorContains(t, err, "2 parameter vectors for 3 subjects")
}

// TestSimulateSubjectsTogether: on the Go backend, where several horizons are solved
// together, every trial of every subject is simulated in one call (simulateTogether), or in
// calls of a few trials; each trial is, to the bit, the one a simulation of its subject's
// trials of its horizon gives under that horizon's plan, with one parameter vector for all or
// one per subject, from x0 or from spread starts.
func TestSimulateSubjectsTogether(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m := models.LinearGaussian{}
	spec := m.Spec()
	thetas := [][]float64{spec.Defaults(), {1, 0.2, 0.05}, {0.01, 0.01, 1}}
	lengths := [][]int{{5, 9}, {9, 9, 4, 5}, {5, 12}}
	seeds := []uint64{4, 8, 15}
	sd := make([]float64, len(spec.X0))
	for i := range sd {
		sd[i] = 0.3
	}
	defer func(c int) { simulationChunk = c }(simulationChunk)
	for _, c := range []struct {
		name   string
		thetas [][]float64
		opts   SimOptions
		chunk  int // trials a simulation call
	}{
		{"one agent", thetas[:1], SimOptions{Temperature: spec.Temperature}, simulationChunk},
		{"an agent each", thetas, SimOptions{Temperature: spec.Temperature}, simulationChunk},
		{"spread starts", thetas, SimOptions{Temperature: spec.Temperature, StartSD: sd}, simulationChunk},
		{"no policy noise", thetas, SimOptions{}, simulationChunk},
		{"calls of 3 trials", thetas, SimOptions{Temperature: spec.Temperature, StartSD: sd}, 3},
	} {
		simulationChunk = c.chunk
		var xs [][][][]float64
		var pols map[int]*Policy
		if len(c.thetas) == 1 {
			xs, pols, err = SimulateLengths(m, c.thetas[0], lengths, seeds, b, SolverOptions{}, c.opts)
		} else {
			xs, pols, err = SimulateSubjects(m, c.thetas, lengths, seeds, b, SolverOptions{}, c.opts)
		}
		require.NoError(t, err, c.name)
		horizons, err := byHorizon(spec, lengths)
		require.NoError(t, err)
		for h, bySubject := range horizons {
			require.Equal(t, PadHorizon(12), pols[h].Steps, "%s: horizon %d solved with the others", c.name, h)
			for k, s := range slices.Sorted(maps.Keys(bySubject)) {
				theta := c.thetas[0]
				if len(c.thetas) > 1 {
					theta = c.thetas[s]
				} else {
					k = 0
				}
				o := c.opts
				o.Seed, o.Trials, o.TrialIDs = seeds[s], len(bySubject[s]), bySubject[s]
				want, err := Simulate(m, pols[h].Problem(k), [][]float64{theta}, b, o)
				require.NoError(t, err, c.name)
				for j, r := range bySubject[s] {
					assert.Equal(t, want[0][j][:h+1], xs[s][r], "%s: subject %d trial %d", c.name, s, r)
				}
			}
		}
	}
	_, _, err = SimulateSubjects(m, thetas, lengths, seeds, b, SolverOptions{}, SimOptions{StartSD: []float64{1}})
	assert.ErrorContains(t, err, "1 start spreads, task")
}

// flat returns the values of trajectories [trial][t][state] in one slice.
func flat(trials [][][]float64) []float64 {
	var out []float64
	for _, tr := range trials {
		for _, x := range tr {
			out = append(out, x...)
		}
	}
	return out
}

// TestSimulateSubjectsXLA: on XLA, trials of several lengths are planned in one padded solve
// (SolveEachHorizon: every horizon's policy has PadHorizon of the longest steps), planning once
// or each trial from its own start (Replan), and every trajectory is the Go backend's with a
// solver of each horizon on its own (the unrolled form), to 1e-9.
func TestSimulateSubjectsXLA(t *testing.T) {
	bx, bg := xlaAndGo(t)
	m := models.LinearGaussian{}
	spec := m.Spec()
	thetas := [][]float64{spec.Defaults(), {1, 0.2, 0.05}, {0.01, 0.01, 1}}
	lengths := [][]int{{5, 9}, {9, 9, 4}, {5, 12}}
	seeds := []uint64{4, 8, 15}
	sd := make([]float64, len(spec.X0))
	for i := range sd {
		sd[i] = 0.3
	}
	for _, c := range []struct {
		name string
		opts SimOptions
	}{
		{"planned once", SimOptions{Temperature: spec.Temperature}},
		{"replanned", SimOptions{Temperature: spec.Temperature, StartSD: sd, Replan: true}},
	} {
		// the reference: a solver of each horizon on its own (the unrolled form, which the
		// padded solve does not take)
		want, wantPols, err := SimulateSubjects(m, thetas, lengths, seeds, bg, SolverOptions{Form: "unrolled"}, c.opts)
		require.NoError(t, err, c.name)
		got, pols, err := SimulateSubjects(m, thetas, lengths, seeds, bx, SolverOptions{}, c.opts)
		require.NoError(t, err, c.name)
		require.Len(t, pols, 4, c.name)
		for h, pol := range pols {
			assert.Equal(t, PadHorizon(12), pol.Steps, "%s: horizon %d solved with the others", c.name, h)
			assert.Equal(t, wantPols[h].Problems, pol.Problems, "%s: horizon %d", c.name, h)
			assert.Equal(t, wantPols[h].Converged, pol.Converged, "%s: horizon %d", c.name, h)
			assert.InDeltaSlice(t, wantPols[h].Cost, pol.Cost, 1e-9, "%s: horizon %d's cost over its own steps", c.name, h)
		}
		for s := range thetas {
			require.Len(t, got[s], len(lengths[s]), c.name)
			for r, T := range lengths[s] {
				require.Len(t, got[s][r], T+1, "%s: subject %d trial %d", c.name, s, r)
			}
			assert.InDeltaSlice(t, flat(want[s]), flat(got[s]), 1e-9, "%s: subject %d", c.name, s)
		}
	}
}
