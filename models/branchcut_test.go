package models

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nioc-gpu/nioc-gpu/graph/sym"
)

// TestAtan2Terms finds the atan2 terms a branch cut can be taken out of: those an
// observation depends on linearly, with their coefficients.
func TestAtan2Terms(t *testing.T) {
	x, y := sym.NewVar("x"), sym.NewVar("y")
	a, b := sym.Atan2(y, x), sym.Atan2(x, y)
	for _, c := range []struct {
		name string
		h    sym.Vec
		want []Atan2Term
	}{
		{"none", sym.Vec{x, sym.Sin(x)}, nil},
		{"heading minus bearing", sym.Vec{sym.Sub(y, a), x}, []Atan2Term{{Obs: 0, Coef: -1, Angle: a}}},
		{"two, scaled, in another component", sym.Vec{x, sym.Add(sym.Scale(2, a), b)}, []Atan2Term{{Obs: 1, Coef: 2, Angle: a}, {Obs: 1, Coef: 1, Angle: b}}},
		{"periodic or multiplied: left out", sym.Vec{sym.Cos(a), sym.Mul(x, a)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := atan2Terms(c.h)
			assert.ElementsMatch(t, c.want, got)
		})
	}
	m, err := Get("navigation")
	require.NoError(t, err)
	s, err := Derive(m)
	require.NoError(t, err)
	require.Len(t, s.Atan2, 1)
	assert.Equal(t, 0, s.Atan2[0].Obs)
	assert.Equal(t, -1.0, s.Atan2[0].Coef)
	for _, name := range []string{"pendulum", "cartpole", "reaching"} {
		m, err := Get(name)
		require.NoError(t, err)
		s, err := Derive(m)
		require.NoError(t, err)
		assert.Empty(t, s.Atan2, name)
	}
}
