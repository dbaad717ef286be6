package ioc

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/posterior"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPickDraws(t *testing.T) {
	for _, c := range []struct {
		n, k int
		want []int
	}{
		{10, 2, []int{2, 7}},
		{100, 4, []int{12, 37, 62, 87}},
		{3, 5, []int{0, 1, 2}},
		{4000, 1, []int{2000}},
	} {
		assert.Equal(t, c.want, pickDraws(c.n, c.k), "n %d, k %d", c.n, c.k)
	}
}

// fakeResult returns a result of subject id with chains of draws (fitting scale) for s.
func fakeResult(id string, s *Sampler, chains ...[][]float64) Result {
	r := Result{Subject: id, Names: s.Selection().Names()}
	for c, d := range chains {
		r.Chains = append(r.Chains, posterior.Chain{Index: c, Scaled: d})
	}
	return r
}

func TestPredictiveCheck(t *testing.T) {
	data := simulate(t, 3, 6, 1)
	data = append(data, simulate(t, 1, 9, 2)...) // trials of their own lengths: 6, 6, 6 and 9 steps
	for _, c := range []struct {
		name    string
		opts    likelihood.Options
		observe control.Observe
	}{
		{"temperature fixed", likelihood.Options{}, control.ObservePartial},
		{"temperature sampled", likelihood.Options{FitTemperature: true}, control.ObservePartial},
		{"baseline sees the state", likelihood.Options{Method: likelihood.MCEBaseline}, control.ObserveFull},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEvaluator(t, c.opts)
			s, err := New(e, Options{Chains: 2, Draws: 4})
			require.NoError(t, err)
			m, err := models.Get("linear")
			require.NoError(t, err)
			_, err = s.Predictive(PPCOptions{Model: m, Trials: 0})
			assert.Error(t, err)
			p, err := s.Predictive(PPCOptions{Model: m, Trials: 5, Draws: 3, Seed: 7})
			require.NoError(t, err)
			assert.Equal(t, c.observe, p.observe)

			names := s.Selection().Names()
			lo, hi := s.Selection().Bounds()
			draw := func(f float64) []float64 {
				x := make([]float64, len(names))
				for k := range x {
					x[k] = lo[k] + f*(hi[k]-lo[k])
				}
				return x
			}
			// 8 pooled draws; the picked ones are 1, 4 and 6: chain 1's draw 2, chain 2's 1 and 3.
			chains := [][][]float64{{draw(0.1), draw(0.2), draw(0.3), draw(0.35)}, {draw(0.4), draw(0.5), draw(0.6), draw(0.7)}}
			r := fakeResult("s1", s, chains...)
			ch, err := p.Check(r, data)
			require.NoError(t, err)
			assert.Equal(t, []int{1, 4, 6}, ch.Picked)
			spec := s.Selection().Spec()
			require.Len(t, ch.Thetas, 3)
			for i, f := range []float64{0.2, 0.4, 0.6} {
				full := s.Selection().Full(draw(f))
				for k, v := range full {
					assert.InDelta(t, spec.Params[k].FromScale(v), ch.Thetas[i][k], 1e-12*math.Max(1, math.Abs(ch.Thetas[i][k])))
				}
			}
			require.Len(t, ch.Simulated, 3)
			assert.Zero(t, ch.Diverged)
			for _, sims := range ch.Simulated {
				require.Len(t, sims, 5)
				for j, tr := range sims {
					assert.Len(t, tr, len(data[j%len(data)]), "trial %d as long as the data's trial %d", j, j%len(data))
					assert.Equal(t, spec.X0, tr[0], "from the task's initial state")
				}
			}
			assert.NotEqual(t, ch.Simulated[0][0], ch.Simulated[1][0], "each draw its own agent and noise")
			again, err := p.Check(r, data)
			require.NoError(t, err)
			assert.Equal(t, ch.Simulated, again.Simulated, "the same seed and subject, the same trials")
			other, err := p.Check(fakeResult("s2", s, chains...), data)
			require.NoError(t, err)
			assert.NotEqual(t, ch.Simulated, other.Simulated, "another subject, other noise")

			_, err = p.Check(Result{Subject: "x", Err: "failed"}, data)
			assert.Error(t, err)
			_, err = p.Check(r, nil)
			assert.Error(t, err)
		})
	}
}

// TestWriteFigures: corner, trace and predictive-check PNGs named after the subject.
func TestWriteFigures(t *testing.T) {
	e := newEvaluator(t, likelihood.Options{FitTemperature: true})
	s, err := New(e, Options{Chains: 2, Draws: 30, Infer: []string{"action_cost", "temperature"}})
	require.NoError(t, err)
	m, err := models.Get("linear")
	require.NoError(t, err)
	p, err := s.Predictive(PPCOptions{Model: m, Trials: 2, Draws: 2})
	require.NoError(t, err)
	chains := make([][][]float64, 2)
	for c := range chains {
		for d := range 30 {
			chains[c] = append(chains[c], []float64{-1 + 0.01*float64(d+c), -4 + 0.02*float64(d)})
		}
	}
	dir := t.TempDir()
	files, err := s.WriteFigures(dir, fakeResult("a/b c", s, chains...), FigureOptions{
		Truth: map[string]float64{"action_cost": 0.1, "obs_noise": 0.3}, Check: p, Data: simulate(t, 2, 5, 1)})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "corner-a_b_c.png"), filepath.Join(dir, "trace-a_b_c.png"),
		filepath.Join(dir, "ppc-a_b_c.png")}, files)
	for _, f := range files {
		r, err := os.Open(f)
		require.NoError(t, err)
		_, err = png.Decode(r)
		r.Close()
		assert.NoError(t, err, f)
	}
	files, err = s.WriteFigures(dir, Result{Subject: "x", Err: "failed"}, FigureOptions{})
	assert.NoError(t, err)
	assert.Empty(t, files, "a subject without draws has no figures")
	assert.Nil(t, handOf(m))
	reaching, err := models.Get("reaching")
	require.NoError(t, err)
	assert.NotNil(t, handOf(reaching))
}
