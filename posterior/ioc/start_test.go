package ioc

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
)

// TestClimbStartsAtTheMode: StartOptimized's chains of a one-parameter posterior start at the
// mode of the likelihood, found independently on a fine grid, while dispersed starts do not
// need to; the climbs depend on the subject only, not on the subjects climbed with it.
func TestClimbStartsAtTheMode(t *testing.T) {
	subjects := []fit.Subject{
		{ID: "a", Trials: simulate(t, 8, 10, 3)},
		{ID: "b", Trials: simulate(t, 8, 10, 4)},
	}
	e := newEvaluator(t, likelihood.Options{})
	s, err := New(e, Options{Chains: 3, Draws: 1, Seed: 5, Fix: map[string]float64{"motor_noise": 0.05, "obs_noise": 0.2}})
	require.NoError(t, err)
	require.Equal(t, StartOptimized, s.Options().Start, "the default")
	lo, hi := s.Selection().Bounds()
	calls := 0
	evals, pts, _, err := s.climb(context.Background(), subjects, func(int) { calls++ })
	require.NoError(t, err)
	assert.Positive(t, evals)
	assert.Positive(t, calls)
	require.Len(t, pts, 2)
	for g, sub := range subjects {
		q := quadrature(t, e, sub.Trials, s.Selection().Full([]float64{0}), 0, lo[0], hi[0], 2001)
		best := 0
		for i := range q.p {
			if q.p[i] > q.p[best] {
				best = i
			}
		}
		mode := q.x[best]
		sd := math.Sqrt(q.moment(func(x float64) float64 { return x * x }) - math.Pow(q.moment(func(x float64) float64 { return x }), 2))
		require.Len(t, pts[g], 3)
		for c, u := range pts[g] {
			assert.InDelta(t, mode, s.box.From(u)[0], 0.05*sd, "subject %s chain %d starts at the mode", sub.ID, c)
		}
		_, alone, _, err := s.climb(context.Background(), subjects[g:g+1], nil)
		require.NoError(t, err)
		assert.Equal(t, pts[g], alone[0], "subject %s: its starts do not depend on the other subjects", sub.ID)
	}
}

func TestParseStart(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Start
		err  string
	}{
		{"optimize", StartOptimized, ""},
		{"dispersed", StartDispersed, ""},
		{"", "", `unknown start ""`},
		{"fit.jsonl", "", `unknown start "fit.jsonl": want optimize or dispersed`},
	} {
		got, err := ParseStart(c.in)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, c.want, got)
	}
	_, err := New(newEvaluator(t, likelihood.Options{}), Options{Chains: 1, Draws: 1, Start: "middle"})
	assert.ErrorContains(t, err, `unknown start "middle"`)
}
