package study

import (
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSimulationLengths(t *testing.T) {
	for _, c := range []struct {
		name    string
		sim     Simulation
		longest int
	}{
		{"fixed", Simulation{Subjects: 3, Trials: 4, Steps: 20, Seed: 5}, 20},
		{"drawn", Simulation{Subjects: 2, Trials: 50, Steps: 20, MinSteps: 3, MaxSteps: 6, Seed: 5}, 6},
	} {
		lengths, seeds := c.sim.Lengths()
		require.Len(t, lengths, c.sim.Subjects, c.name)
		require.Len(t, seeds, c.sim.Subjects, c.name)
		seen := map[int]bool{}
		for s := range lengths {
			assert.Equal(t, c.sim.Seed+uint64(s)*1_000_003, seeds[s], c.name)
			require.Len(t, lengths[s], c.sim.Trials, c.name)
			for _, T := range lengths[s] {
				seen[T] = true
				if c.sim.MaxSteps == 0 {
					assert.Equal(t, c.sim.Steps, T, c.name)
				} else {
					assert.True(t, T >= c.sim.MinSteps && T <= c.sim.MaxSteps, "%s: %d steps", c.name, T)
				}
			}
		}
		if c.sim.MaxSteps > 0 {
			assert.Len(t, seen, c.sim.MaxSteps-c.sim.MinSteps+1, "%s: every length drawn", c.name)
			assert.NotEqual(t, lengths[0], lengths[1], "%s: each subject its own", c.name)
		}
		assert.Equal(t, c.longest, longest(lengths), c.name)
	}
}

// TestSimulate: subjects are named 1, 2, … and their noise is their seed's: the second subject
// of a simulation is the first of one seeded with its seed.
func TestSimulate(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	spec := m.Spec()
	sim := Simulation{Theta: spec.Defaults(), Subjects: 2, Trials: 3, Steps: 5, MinSteps: 2, MaxSteps: 5, Seed: 9,
		Solver: control.SolverOptions{Planner: spec.Planner}, Sim: control.SimOptions{Observe: control.ObservePartial, Temperature: spec.Temperature}}
	set, byHorizon, err := Simulate(m, b, sim)
	require.NoError(t, err)
	assert.Equal(t, spec.States, set.StateNames)
	require.Len(t, set.Subjects, 2)
	assert.Equal(t, "1", set.Subjects[0].ID)
	assert.Equal(t, "2", set.Subjects[1].ID)
	lengths, _ := sim.Lengths()
	assert.Equal(t, longest(lengths), set.Steps)
	for r, tr := range set.Subjects[1].Trials {
		assert.Equal(t, r, tr.ID)
		assert.Len(t, tr.States, lengths[1][r]+1)
		_, ok := byHorizon[lengths[1][r]]
		assert.True(t, ok, "a policy for each trial's horizon")
	}
	one := sim
	one.Subjects, one.Seed = 1, sim.Seed+1_000_003
	set1, _, err := Simulate(m, b, one)
	require.NoError(t, err)
	assert.Equal(t, set.Subjects[1].Trials, set1.Subjects[0].Trials)
}
