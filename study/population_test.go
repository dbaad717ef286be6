package study

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pendulumSpec(t *testing.T) models.Spec {
	t.Helper()
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	return m.Spec()
}

func TestNewPopulation(t *testing.T) {
	spec := pendulumSpec(t) // action_cost, velocity_cost, motor_noise, obs_noise
	p, err := NewPopulation(spec, "motor_noise=-0.7:0.1, action_cost = -2.5 : 0.2", "control=3,patient=2",
		"patient:motor_noise=0.2,action_cost=-0.1,control:action_cost=0.05", 1)
	require.NoError(t, err)
	assert.Equal(t, []PopulationParam{{"action_cost", 0, -2.5, 0.2}, {"motor_noise", 2, -0.7, 0.1}}, p.Params, "the task's order")
	assert.Equal(t, []Group{
		{"control", 3, map[string]float64{"action_cost": 0.05}},
		{"patient", 2, map[string]float64{"motor_noise": 0.2, "action_cost": -0.1}},
	}, p.Groups, "an item without GROUP: is of the previous item's group")
	assert.Equal(t, 5, p.Subjects())
	assert.InDelta(t, -0.5, p.Mean(p.Params[1], p.Groups[1]), 1e-12)

	p, err = NewPopulation(spec, "obs_noise=0:0.5", "", "", 7)
	require.NoError(t, err)
	assert.Equal(t, []Group{{Name: DefaultGroup, Subjects: 7}}, p.Groups, "no groups: one of --subjects")
}

func TestNewPopulationErrors(t *testing.T) {
	spec := pendulumSpec(t)
	for _, tc := range []struct{ name, pop, groups, effects, msg string }{
		{"empty", " ", "", "", "no parameters"},
		{"no sd", "action_cost=-2.5", "", "", `"action_cost=-2.5" is not name=mean:sd`},
		{"no name", "=-2.5:0.1", "", "", "is not name=mean:sd"},
		{"unknown parameter", "cost=-2.5:0.1", "", "", `task pendulum has no parameter "cost"; its parameters are action_cost, velocity_cost, motor_noise, obs_noise`},
		{"twice", "action_cost=-2.5:0.1,action_cost=-2:0.1", "", "", "action_cost given twice"},
		{"mean not a number", "action_cost=x:0.1", "", "", `action_cost: mean "x" is not a number`},
		{"mean not finite", "action_cost=NaN:0.1", "", "", `mean "NaN" is not a number`},
		{"sd zero", "action_cost=-2.5:0", "", "", `action_cost: sd "0" must be a number > 0`},
		{"sd negative", "action_cost=-2.5:-1", "", "", "must be a number > 0"},
		{"mean outside box", "action_cost=0:0.1", "", "", "action_cost of group all: mean 0 (log10 scale, 1 in natural units) lies outside its search box [0.001, 0.1]"},
		{"group malformed", "action_cost=-2:0.1", "control", "", `group "control" is not name=count`},
		{"group count", "action_cost=-2:0.1", "control=0", "", `group control: "0" subjects`},
		{"group count not integer", "action_cost=-2:0.1", "control=2.5", "", "integer count >= 1"},
		{"group twice", "action_cost=-2:0.1", "a=1,a=2", "", "group a given twice"},
		{"group name", "action_cost=-2:0.1", "a b=1", "", "has no spaces"},
		{"effect unknown group", "action_cost=-2:0.1", "control=2,patient=2", "patients:action_cost=0.1", `no group "patients"; the groups are control, patient`},
		{"effect without group", "action_cost=-2:0.1", "control=2,patient=2", "action_cost=0.1", "is not GROUP:name=shift"},
		{"effect not drawn", "action_cost=-2:0.1", "control=2,patient=2", "patient:motor_noise=0.1", "motor_noise is not a parameter of the population"},
		{"effect not a number", "action_cost=-2:0.1", "control=2,patient=2", "patient:action_cost=big", `the shift "big" is not a number`},
		{"effect twice", "action_cost=-2:0.1", "control=2,patient=2", "patient:action_cost=0.1,action_cost=0.2", "patient:action_cost given twice"},
		{"effect leaves the box", "action_cost=-2:0.1", "control=2,patient=2", "patient:action_cost=1.5", "action_cost of group patient: mean -0.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPopulation(spec, tc.pop, tc.groups, tc.effects, 3)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestPopulationDraw: the draws follow the population (sample mean and sd in fitting scale
// near the given, the group's shift), stay in the search box, are the seed's, and a subject's
// draws do not depend on how many subjects follow it.
func TestPopulationDraw(t *testing.T) {
	spec := pendulumSpec(t)
	p, err := NewPopulation(spec, "action_cost=-2:0.2,motor_noise=-0.5:0.1", "control=400,patient=400", "patient:motor_noise=0.3", 0)
	require.NoError(t, err)
	base := spec.Defaults()
	base[3] = 3.5
	d := p.Draw(spec, base, 11)
	require.Len(t, d.IDs, 800)
	assert.Equal(t, []string{"s001", "s002"}, d.IDs[:2])
	assert.Equal(t, "s800", d.IDs[799])
	assert.Equal(t, "control", d.Groups[399])
	assert.Equal(t, "patient", d.Groups[400])
	assert.Equal(t, []int{0, 0}, d.Redrawn, "4 sd inside the box: nothing redrawn at this seed")
	for _, c := range []struct {
		param, from, to int
		mean, sd        float64
	}{
		{0, 0, 400, -2, 0.2}, {0, 400, 800, -2, 0.2},
		{2, 0, 400, -0.5, 0.1}, {2, 400, 800, -0.2, 0.1},
	} {
		var xs []float64
		for _, th := range d.Thetas[c.from:c.to] {
			xs = append(xs, math.Log10(th[c.param]))
		}
		m, s := meanSD(xs)
		assert.InDelta(t, c.mean, m, 3*c.sd/math.Sqrt(float64(len(xs))), "%s subjects %d..%d: mean", spec.Params[c.param].Name, c.from, c.to)
		assert.InDelta(t, c.sd, s, 0.15*c.sd, "%s subjects %d..%d: sd", spec.Params[c.param].Name, c.from, c.to)
	}
	for _, th := range d.Thetas {
		assert.Equal(t, base[1], th[1], "a parameter not drawn is at base")
		assert.Equal(t, 3.5, th[3])
	}
	assert.Equal(t, d, p.Draw(spec, base, 11), "the same seed, the same draws")
	assert.NotEqual(t, d.Thetas, p.Draw(spec, base, 12).Thetas)
	fewer, err := NewPopulation(spec, "action_cost=-2:0.2,motor_noise=-0.5:0.1", "control=10", "", 0)
	require.NoError(t, err)
	assert.Equal(t, d.Thetas[:10], fewer.Draw(spec, base, 11).Thetas, "a subject's draws are its own")
	assert.Equal(t, "s0001", SubjectID(0, 1000))
}

// TestPopulationDrawTruncated: draws of a population wide against the search box stay inside
// it, the ones redrawn counted.
func TestPopulationDrawTruncated(t *testing.T) {
	spec := pendulumSpec(t) // action_cost in [0.001, 0.1]: log10 in [-3, -1]
	p, err := NewPopulation(spec, "action_cost=-1.2:0.5", "", "", 500)
	require.NoError(t, err)
	d := p.Draw(spec, spec.Defaults(), 3)
	var xs []float64
	for _, th := range d.Thetas {
		x := math.Log10(th[0])
		require.True(t, x >= -3 && x <= -1, "log10 action_cost %g in the box", x)
		xs = append(xs, x)
	}
	// P(x > -1) = P(z > 0.4) ≈ 0.34, P(x < -3) ≈ 0.0002: about 172 of 500 redrawn, from the
	// normal restricted to [-3, -1], whose mean is -1.48 and sd 0.34.
	assert.InDelta(t, 172, d.Redrawn[0], 40)
	m, s := meanSD(xs)
	assert.InDelta(t, -1.48, m, 0.05)
	assert.InDelta(t, 0.34, s, 0.04)
}

func meanSD(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x / float64(len(xs))
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m) / float64(len(xs)-1)
	}
	return m, math.Sqrt(v)
}

// TestPopulationFiles: the truth file reads back with ReadTruth (subject, group, natural
// units) and the subjects table is subject,group.
func TestPopulationFiles(t *testing.T) {
	spec := pendulumSpec(t)
	p, err := NewPopulation(spec, "obs_noise=0:0.3", "a=2,b=1", "b:obs_noise=0.2", 0)
	require.NoError(t, err)
	d := p.Draw(spec, spec.Defaults(), 1)
	dir := t.TempDir()
	truth, subjects := filepath.Join(dir, "data.truth.csv"), filepath.Join(dir, "data.subjects.csv")
	require.NoError(t, d.WriteTruth(truth, spec))
	require.NoError(t, d.WriteSubjects(subjects))
	got, order, err := ReadTruth(truth, spec)
	require.NoError(t, err)
	assert.Equal(t, d.IDs, order)
	for i, id := range d.IDs {
		assert.Equal(t, d.Thetas[i], got[id], id)
	}
	raw, err := os.ReadFile(subjects)
	require.NoError(t, err)
	assert.Equal(t, "subject,group\ns001,a\ns002,a\ns003,b\n", string(raw))
	raw, err = os.ReadFile(truth)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "subject,group,action_cost,velocity_cost,motor_noise,obs_noise\ns001,a,0.001,0.01,0.1,")
}

// TestSimulateThetas: with a population's parameters, each subject is simulated as it would
// be alone at its parameters with its seed, under its own ID.
func TestSimulateThetas(t *testing.T) {
	m, err := models.Get("linear")
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	spec := m.Spec()
	thetas := [][]float64{{0.1, 0.05, 0.2}, {1, 0.02, 0.1}, {0.01, 0.1, 0.5}}
	sim := Simulation{Thetas: thetas, IDs: []string{"s001", "s002", "s003"}, Subjects: 3, Trials: 2, Steps: 6, Seed: 4,
		Solver: control.SolverOptions{Planner: spec.Planner}, Sim: control.SimOptions{Temperature: spec.Temperature}}
	set, byHorizon, err := Simulate(m, b, sim)
	require.NoError(t, err)
	assert.Equal(t, 3, byHorizon[6].Problems, "one problem per subject")
	for s := range thetas {
		assert.Equal(t, sim.IDs[s], set.Subjects[s].ID)
		alone := sim
		alone.Thetas, alone.IDs, alone.Theta, alone.Subjects, alone.Seed = nil, nil, thetas[s], 1, sim.Seed+uint64(s)*1_000_003
		one, _, err := Simulate(m, b, alone)
		require.NoError(t, err)
		for r := range one.Subjects[0].Trials {
			assert.Equal(t, one.Subjects[0].Trials[r].States, set.Subjects[s].Trials[r].States, "subject %d trial %d", s, r)
		}
	}
	sim.Subjects = 2
	_, _, err = Simulate(m, b, sim)
	assert.ErrorContains(t, err, "3 parameter vectors for 2 subjects")
}
