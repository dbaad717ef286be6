package likelihood

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jaxrefCase is one value computed by the public JAX reference implementation
// (testdata/jaxref/README.md says how).
type jaxrefCase struct {
	Task        string             `json:"task"`
	Observe     string             `json:"observe"`
	Data        string             `json:"data"`
	Method      string             `json:"method"`
	Temperature float64            `json:"temperature"`
	ParamSet    string             `json:"param_set"`
	Params      map[string]float64 `json:"params"`
	LogLik      float64            `json:"loglik"`
	Grad        map[string]float64 `json:"grad_log10"`
	OK          bool               `json:"ok"`
}

// TestAgreesWithJAXReference evaluates our likelihoods on the reference's datasets and
// parameter vectors and compares log-likelihoods and gradients with the reference's values,
// to 1e-6 relative. It uses the reference's conventions: the first-order linearization in the
// noises (Options.FirstOrderNoise), data taken as a rollout of the model (Options.IgnoreGaps),
// the initial belief spread around x_0 with identity covariance (ReferencePrior), its jitter
// (DefaultJitter), the filter gains along the linearization (Options.NominalFilter)
// and the fully observable planner's backward pass for every method. Two groups differ on purpose:
//
//   - reaching: the reference's closed-form arm dynamics are not the stated equation of
//     motion M(θ)θ̈ + C(θ, θ̇) + Bθ̇ = u (Li & Todorov; the issue and models.Reaching): its
//     first acceleration equals M⁻¹(u + C + Bθ̇), with the signs of the Coriolis and friction
//     terms flipped (friction then accelerates the arm), and its second differs further.
//     We follow the equation (checked in models' tests), so these values cannot agree; the
//     cases are skipped.
//   - light-dark "ours_ilqg": the reference's partially observable iLQG filter has the slips
//     documented at control.FilterGainsPartial and iterates differently, so only finiteness
//     is checked.
func TestAgreesWithJAXReference(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "jaxref", "values.json"))
	require.NoError(t, err)
	var file struct {
		Cases []jaxrefCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &file))
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)

	type key struct {
		task, data, method string
		temperature        float64
	}
	groups := map[key][]jaxrefCase{}
	var order []key
	for _, c := range file.Cases {
		require.True(t, c.OK)
		k := key{c.Task, c.Data, c.Method, c.Temperature}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	for _, k := range order {
		cases := groups[k]
		t.Run(fmt.Sprintf("%s/%s/%s/T=%g", k.task, k.data, k.method, k.temperature), func(t *testing.T) {
			if k.task == "reaching" {
				t.Skip("the reference's arm dynamics differ from the equation of motion (see the test's comment)")
			}
			m, err := models.Get(k.task)
			require.NoError(t, err)
			spec := m.Spec()
			set, err := data.Read(filepath.Join("testdata", "jaxref", k.data), spec.States)
			require.NoError(t, err)
			var trials [][][]float64
			for _, tr := range set.Subjects[0].Trials {
				trials = append(trials, tr.States)
			}
			opts := Options{FirstOrderNoise: true, IgnoreGaps: true, NominalFilter: true, RawAngles: true, Prior: ReferencePrior(spec), Jitter: DefaultJitter, Planner: models.PlannerFull, Temperature: k.temperature, NoPolicyNoise: k.temperature == 0}
			switch k.method {
			case "ours":
				opts.Observe = control.ObservePartial
			case "full":
				opts.Observe = control.ObserveFull
			case "baseline":
				opts.Method = MCEBaseline
			case "ours_ilqg":
				opts.Planner, opts.Linearize = models.PlannerPartial, LinearizeILQG
			}
			e, err := New(m, b, opts)
			require.NoError(t, err)
			rows := make([][][][]float64, len(cases))
			thetas := make([][]float64, len(cases))
			for i, c := range cases {
				rows[i] = trials
				for _, p := range spec.Params {
					v, ok := c.Params[p.Name]
					require.True(t, ok, p.Name)
					thetas[i] = append(thetas[i], p.ToScale(v))
				}
			}
			d, err := e.Prepare(rows, 0)
			require.NoError(t, err)
			ll, grad, err := e.Eval(d, thetas)
			require.NoError(t, err)
			for i, c := range cases {
				if k.method == "ours_ilqg" {
					assert.False(t, math.IsInf(ll[i], 0), "%s: finite", c.ParamSet)
					continue
				}
				assert.InEpsilon(t, c.LogLik, ll[i], 1e-6, "%s log-likelihood: ours %.12g, reference %.12g", c.ParamSet, ll[i], c.LogLik)
				scale := 0.0
				for _, g := range c.Grad {
					scale = math.Max(scale, math.Abs(g))
				}
				for j, p := range spec.Params {
					want := c.Grad[p.Name]
					assert.InDelta(t, want, grad[i][j], 1e-6*math.Max(math.Abs(want), 1e-3*scale),
						"%s d/d%s: ours %.10g, reference %.10g", c.ParamSet, p.Name, grad[i][j], want)
				}
			}
		})
	}
}
