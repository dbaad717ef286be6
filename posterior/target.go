// Package posterior draws from the posterior of the agent's parameters with the No-U-Turn
// sampler (NUTS), the multinomial variant with the generalized U-turn criterion run by Stan
// (Hoffman & Gelman 2014; Betancourt 2017, "A conceptual introduction to Hamiltonian Monte
// Carlo"), with Stan's warm-up: dual-averaging step-size adaptation and a diagonal mass matrix
// estimated in doubling windows.
//
// Many chains of many groups (subjects) advance in lockstep: each chain runs its trajectory
// as ordinary sequential code in its own goroutine, and every leapfrog step of every chain
// that is still building its tree is evaluated in one call of the batched log density, which
// is what makes sampling cheap when one evaluation is a graph run whose cost barely grows
// with the batch (see Sample). The draws are the same as if each chain ran alone, for any
// goroutine scheduling: every chain has its own random stream, seeded from (seed, group,
// chain).
//
// Parameters bounded to a box in their fitting scale are sampled on ℝ through a logit
// transform (Box, BoxTarget). Diagnostics follow Vehtari, Gelman, Simpson, Carpenter &
// Bürkner (2021): rank-normalized split R̂, bulk and tail effective sample sizes (RHat,
// ESSBulk, ESSTail, Summarize), and E-BFMI per chain.
package posterior

import (
	"errors"
	"fmt"
	"math"
)

// Func is a batched log density: logp[i] is the log density at the point x[i] and grad[i]
// its gradient, for every i. Every x[i] has the target's dimension.
//
// A logp that is not finite (−Inf outside a support, NaN, +Inf) marks a point of zero
// density, and so does a gradient with a non-finite component: the sampler treats a
// trajectory that reaches such a point as divergent, never as an error. Where logp is not
// finite, grad[i] is ignored and may be nil; otherwise it must have the target's dimension.
// A non-nil error aborts sampling and is returned by Sample.
//
// The points passed are fresh copies that the function may keep; the sampler copies the
// returned gradients. The values must depend only on the points (and groups), not on which
// other points share the batch, for the draws to be reproducible.
type Func func(x [][]float64) (logp []float64, grad [][]float64, err error)

// GroupFunc is a batched log density of several groups (subjects), each with its own density
// on the same space: logp[i] and grad[i] are those of group groups[i] at x[i]. It is
// otherwise as Func; one call may mix points of all groups.
type GroupFunc func(groups []int, x [][]float64) (logp []float64, grad [][]float64, err error)

// Grouped returns f as a GroupFunc that ignores the groups: every group has the same density.
func Grouped(f Func) GroupFunc {
	return func(_ []int, x [][]float64) ([]float64, [][]float64, error) { return f(x) }
}

// Target is a batched log density on ℝ^Dim, the unconstrained space the sampler moves in, for
// one or more groups. Its draws may be mapped to the parameters' fitting scale (see
// BoxTarget); a Target made by NewTarget or NewGroupTarget has the identity map.
type Target struct {
	dim, groups int
	f           GroupFunc
	box         *Box // maps draws into the fitting scale; nil for the identity
}

// NewTarget returns a Target of one group with the batched log density f on ℝ^dim.
// It panics if dim < 1 or f is nil.
func NewTarget(dim int, f Func) *Target {
	if f == nil {
		panic("posterior: nil log density")
	}
	return NewGroupTarget(dim, 1, Grouped(f))
}

// NewGroupTarget returns a Target of the given number of groups, each a log density on ℝ^dim,
// all evaluated by the batched f. It panics if dim < 1, groups < 1 or f is nil.
func NewGroupTarget(dim, groups int, f GroupFunc) *Target {
	if dim < 1 {
		panic(fmt.Sprintf("posterior: dimension %d < 1", dim))
	}
	if groups < 1 {
		panic(fmt.Sprintf("posterior: %d groups < 1", groups))
	}
	if f == nil {
		panic("posterior: nil log density")
	}
	return &Target{dim: dim, groups: groups, f: f}
}

// Dim returns the dimension of the target's space.
func (t *Target) Dim() int { return t.dim }

// Groups returns the number of groups.
func (t *Target) Groups() int { return t.groups }

// Scale returns the point y of the unconstrained space in the parameters' fitting scale: the
// Box's From for a target made by BoxTarget, else a copy of y. It panics if len(y) != Dim().
func (t *Target) Scale(y []float64) []float64 {
	if len(y) != t.dim {
		panic(fmt.Sprintf("posterior: point of length %d, dimension %d", len(y), t.dim))
	}
	if t.box != nil {
		return t.box.From(y)
	}
	return append([]float64(nil), y...)
}

// Eval evaluates the log density of group groups[i] at x[i] for every i in one call of the
// target's batched function, and returns logp and the gradients. Points of zero density (a
// logp or gradient that is not finite) come back as logp −Inf with a nil gradient. It
// returns an error if the function does, if a group is out of range or a point has the
// wrong length, or if the function returns slices of the wrong length.
func (t *Target) Eval(groups []int, x [][]float64) ([]float64, [][]float64, error) {
	if len(groups) != len(x) {
		return nil, nil, fmt.Errorf("posterior: %d groups for %d points", len(groups), len(x))
	}
	in := make([][]float64, len(x))
	for i, xi := range x {
		if groups[i] < 0 || groups[i] >= t.groups {
			return nil, nil, fmt.Errorf("posterior: group %d out of range [0, %d)", groups[i], t.groups)
		}
		if len(xi) != t.dim {
			return nil, nil, fmt.Errorf("posterior: point %d has length %d, dimension %d", i, len(xi), t.dim)
		}
		in[i] = append([]float64(nil), xi...)
	}
	g := append([]int(nil), groups...)
	logp, grad, err := t.f(g, in)
	if err != nil {
		return nil, nil, err
	}
	if len(logp) != len(x) || len(grad) != len(x) {
		return nil, nil, fmt.Errorf("posterior: log density returned %d values and %d gradients for %d points",
			len(logp), len(grad), len(x))
	}
	lp := make([]float64, len(x))
	gr := make([][]float64, len(x))
	for i := range x {
		lp[i] = math.Inf(-1)
		if !finite(logp[i]) {
			continue
		}
		if len(grad[i]) != t.dim {
			return nil, nil, fmt.Errorf("posterior: log density returned a gradient of length %d at point %d, dimension %d",
				len(grad[i]), i, t.dim)
		}
		if !allFinite(grad[i]) {
			continue
		}
		lp[i] = logp[i]
		gr[i] = append([]float64(nil), grad[i]...)
	}
	return lp, gr, nil
}

// errAborted is what a chain returns when sampling stops for another reason (another chain's
// evaluation failed or the context was cancelled); the reason is reported instead.
var errAborted = errors.New("posterior: sampling aborted")

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func allFinite(x []float64) bool {
	for _, v := range x {
		if !finite(v) {
			return false
		}
	}
	return true
}
