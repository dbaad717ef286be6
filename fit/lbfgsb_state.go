package fit

// The state of an L-BFGS-B minimization between two iterations, and its exact JSON form, so
// that a minimization can be checkpointed and continued (LBFGSBFrom) with identical results.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// LBFGSBState is where an L-BFGS-B minimization stands between two iterations: everything
// LBFGSBFrom needs to continue it exactly. Its JSON form keeps every float bit for bit
// (shortest round-trip decimals; "NaN", "+Inf", "-Inf" as strings).
type LBFGSBState struct {
	X, Grad     []float64 // the current iterate and its gradient
	F           float64   // the objective at X
	Iterations  int       // iterations so far
	Evaluations int       // objective evaluations so far
	// The limited-memory matrix: its scaling θ and the correction pairs s_i = x_{i+1} − x_i,
	// y_i = g_{i+1} − g_i, oldest first (none after the memory was discarded).
	Theta float64
	S, Y  [][]float64
	// Seeded counts the oldest pairs that came from LBFGSBSettings.Curvature.
	Seeded int
}

// Check reports whether st can continue a minimization of n variables with a memory of m
// pairs: every vector has n elements, there are as many y as s and at most m of each, the
// counts are not negative, no more pairs are seeded than there are and F, θ and the gradient
// are finite.
func (st LBFGSBState) Check(n, m int) error {
	switch {
	case len(st.X) != n || len(st.Grad) != n:
		return fmt.Errorf("state of %d variables (gradient %d), want %d", len(st.X), len(st.Grad), n)
	case len(st.S) != len(st.Y):
		return fmt.Errorf("state with %d s and %d y correction vectors", len(st.S), len(st.Y))
	case len(st.S) > m:
		return fmt.Errorf("state with %d correction pairs, more than the memory of %d", len(st.S), m)
	case st.Iterations < 0 || st.Evaluations < 0 || st.Seeded < 0:
		return fmt.Errorf("state with negative counts (%d iterations, %d evaluations, %d seeded pairs)", st.Iterations, st.Evaluations, st.Seeded)
	case st.Seeded > len(st.S):
		return fmt.Errorf("state with %d seeded correction pairs of %d", st.Seeded, len(st.S))
	case !finitePoint(st.F, st.Grad) || !allFinite(st.X) || math.IsNaN(st.Theta) || math.IsInf(st.Theta, 0):
		return fmt.Errorf("state with a non-finite point, value, gradient or scaling")
	}
	for i := range st.S {
		if len(st.S[i]) != n || len(st.Y[i]) != n {
			return fmt.Errorf("correction pair %d has %d and %d elements, want %d", i, len(st.S[i]), len(st.Y[i]), n)
		}
	}
	return nil
}

// state returns a copy of the solver's state at the point x with value f and gradient g
// after iter iterations.
func (sv *solver) state(x []float64, f float64, g []float64, iter int) LBFGSBState {
	st := LBFGSBState{X: slices.Clone(x), Grad: slices.Clone(g), F: f, Iterations: iter, Evaluations: sv.ev.count,
		Theta: sv.mem.theta, Seeded: sv.mem.seeded}
	if k := sv.mem.k(); k > 0 {
		st.S, st.Y = make([][]float64, k), make([][]float64, k)
		for i := range k {
			st.S[i], st.Y[i] = slices.Clone(sv.mem.s[i]), slices.Clone(sv.mem.y[i])
		}
	}
	return st
}

// stateJSON is the JSON form of an LBFGSBState.
type stateJSON struct {
	X           []exactFloat   `json:"x"`
	F           exactFloat     `json:"f"`
	Grad        []exactFloat   `json:"grad"`
	Iterations  int            `json:"iterations"`
	Evaluations int            `json:"evaluations"`
	Theta       exactFloat     `json:"theta"`
	Seeded      int            `json:"seeded,omitempty"`
	S           [][]exactFloat `json:"s,omitempty"`
	Y           [][]exactFloat `json:"y,omitempty"`
}

// MarshalJSON encodes st exactly.
func (st LBFGSBState) MarshalJSON() ([]byte, error) {
	return json.Marshal(stateJSON{X: toExact(st.X), F: exactFloat(st.F), Grad: toExact(st.Grad), Iterations: st.Iterations,
		Evaluations: st.Evaluations, Theta: exactFloat(st.Theta), S: toExact2(st.S), Y: toExact2(st.Y), Seeded: st.Seeded})
}

// UnmarshalJSON decodes what MarshalJSON encoded.
func (st *LBFGSBState) UnmarshalJSON(b []byte) error {
	var j stateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*st = LBFGSBState{X: fromExact(j.X), F: float64(j.F), Grad: fromExact(j.Grad), Iterations: j.Iterations,
		Evaluations: j.Evaluations, Theta: float64(j.Theta), S: fromExact2(j.S), Y: fromExact2(j.Y), Seeded: j.Seeded}
	return nil
}

// exactFloat is a float64 whose JSON form round-trips bit for bit: the shortest decimal that
// parses back to it, or the string "NaN", "+Inf" or "-Inf".
type exactFloat float64

func (v exactFloat) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.AppendQuote(nil, strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

func (v *exactFloat) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if uq, err := strconv.Unquote(s); err == nil {
		if uq != "NaN" && uq != "+Inf" && uq != "-Inf" {
			return fmt.Errorf("not a number: %s", s)
		}
		s = uq
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number: %s", s)
	}
	*v = exactFloat(f)
	return nil
}

func toExact(v []float64) []exactFloat {
	if v == nil {
		return nil
	}
	out := make([]exactFloat, len(v))
	for i, x := range v {
		out[i] = exactFloat(x)
	}
	return out
}

func fromExact(v []exactFloat) []float64 {
	if v == nil {
		return nil
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func toExact2(v [][]float64) [][]exactFloat {
	if v == nil {
		return nil
	}
	out := make([][]exactFloat, len(v))
	for i := range v {
		out[i] = toExact(v[i])
	}
	return out
}

func fromExact2(v [][]exactFloat) [][]float64 {
	if v == nil {
		return nil
	}
	out := make([][]float64, len(v))
	for i := range v {
		out[i] = fromExact(v[i])
	}
	return out
}
