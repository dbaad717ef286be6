package control

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// Observe says what the agent perceives.
type Observe string

const (
	// ObservePartial: the agent sees y = h(x, w) and acts on its EKF belief mean.
	ObservePartial Observe = "partial"
	// ObserveFull: the agent sees the state.
	ObserveFull Observe = "full"
)

// SimOptions configure Simulate.
type SimOptions struct {
	Observe     Observe // ObservePartial (default) or ObserveFull
	Trials      int     // trajectories per problem
	Seed        uint64
	Temperature float64 // maximum-causal-entropy policy noise: covariance Temperature·H̃⁻¹; 0 for none
}

// Simulate runs an agent that follows pol (one control law per problem) in the stochastic
// system, Trials times per problem, and returns the states [P][trials][T+1][n]. With partial
// observability the agent observes y_t = h(x_t, w_t) and updates its belief with the extended
// Kalman filter b_{t+1} = f(b_t, u_t, 0) + K_t·(y_t − h(b_t, 0)),
// K_t = A P Fᵀ (F P Fᵀ + W Wᵀ)⁻¹, P ← V Vᵀ + (A − K F) P Aᵀ, linearized at the belief
// (paper Sec. 2.4), starting from the task's initial belief; its control is the policy
// applied to b_t. The trajectories start at the task's x0. Noises come from a PCG generator
// seeded with Seed and the problem and trial numbers, so a trial's trajectory does not depend
// on how many others are simulated with it. If some problems diverge, it returns every
// trajectory and a *DivergedError naming them.
func Simulate(m models.Model, pol *Policy, theta [][]float64, b backends.Backend, opts SimOptions) ([][][][]float64, error) {
	s, err := models.Derive(m)
	if err != nil {
		return nil, err
	}
	if opts.Observe == "" {
		opts.Observe = ObservePartial
	}
	if opts.Observe != ObservePartial && opts.Observe != ObserveFull {
		return nil, fmt.Errorf("unknown observation mode %q: use %q or %q", opts.Observe, ObservePartial, ObserveFull)
	}
	if opts.Trials < 1 {
		return nil, fmt.Errorf("trials must be >= 1, got %d", opts.Trials)
	}
	if opts.Temperature < 0 {
		return nil, fmt.Errorf("temperature must be >= 0, got %g", opts.Temperature)
	}
	spec := s.Spec
	P, M, T := pol.Problems, opts.Trials, pol.Steps
	n, k, nv, nw := len(spec.States), len(spec.Controls), spec.StateNoise, spec.ObsNoise
	if len(theta) != P {
		return nil, fmt.Errorf("simulate: %d parameter vectors for a policy of %d problems", len(theta), P)
	}
	v := make([]float64, T*nv*P*M)
	w := make([]float64, T*nw*P*M)
	xi := make([]float64, T*k*P*M)
	for p := range P {
		for r := range M {
			rng := rand.New(rand.NewPCG(opts.Seed, uint64(p)<<32|uint64(r)))
			for t := range T {
				for i := range nv {
					v[((t*nv+i)*P+p)*M+r] = rng.NormFloat64()
				}
				for i := range nw {
					w[((t*nw+i)*P+p)*M+r] = rng.NormFloat64()
				}
				for i := range k {
					xi[((t*k+i)*P+p)*M+r] = rng.NormFloat64()
				}
			}
		}
	}
	prog := graph.NewProgram(b, "simulate", func(g *G.Graph, in []*G.Node) []*G.Node {
		return buildSimulation(g, s, in, T, opts)
	})
	out, err := prog.Run(
		graph.NewTensor(transpose(theta), len(spec.Params), P, 1),
		graph.NewTensor(pol.Xbar, T+1, n, P, 1), graph.NewTensor(pol.Ubar, T, k, P, 1),
		graph.NewTensor(pol.Gain, T, k, n, P, 1), graph.NewTensor(pol.Offset, T, k, P, 1),
		graph.NewTensor(pol.Hessian, T, k, k, P, 1),
		graph.NewTensor(v, T, nv, P, M), graph.NewTensor(w, T, nw, P, M), graph.NewTensor(xi, T, k, P, M))
	if err != nil {
		return nil, err
	}
	X := out[0].Data // [T+1][n][P][M]
	res := make([][][][]float64, P)
	for p := range P {
		res[p] = make([][][]float64, M)
		for r := range M {
			res[p][r] = make([][]float64, T+1)
			for t := range T + 1 {
				res[p][r][t] = make([]float64, n)
				for i := range n {
					res[p][r][t][i] = X[((t*n+i)*P+p)*M+r]
				}
			}
		}
	}
	var div *DivergedError
	for p := range P {
	trials:
		for r := range M {
			for t := range T + 1 {
				for i := range n {
					if x := res[p][r][t][i]; math.IsNaN(x) || math.IsInf(x, 0) {
						if div == nil {
							div = &DivergedError{First: fmt.Sprintf("problem %d trial %d diverged at t = %d (state %s is %g)", p, r, t, spec.States[i], x)}
						}
						div.Problems = append(div.Problems, p)
						break trials
					}
				}
			}
		}
	}
	if div != nil {
		return res, div
	}
	return res, nil
}

// DivergedError reports problems whose simulated states became infinite or NaN (an agent
// that loses control, e.g. a cart-pole with large motor noise and a small control cost).
// Simulate returns it together with all trajectories; those of other problems are valid.
type DivergedError struct {
	Problems []int  // the problems (indices into theta) with a diverging trial, ascending
	First    string // where the first one diverged
}

func (e *DivergedError) Error() string {
	return fmt.Sprintf("simulation diverged for %d problem(s); first: %s", len(e.Problems), e.First)
}

func buildSimulation(g *G.Graph, s *models.Symbolic, in []*G.Node, T int, opts SimOptions) []*G.Node {
	spec := s.Spec
	n, k, nv, nw := len(spec.States), len(spec.Controls), spec.StateNoise, spec.ObsNoise
	theta := graph.Unstack(in[0], 1)
	xbar := graph.Series(graph.Unstack(in[1], 2), T+1, n)
	ubar := graph.Series(graph.Unstack(in[2], 2), T, k)
	L := graph.MatSeries(graph.Unstack(in[3], 3), T, k, n)
	l := graph.Series(graph.Unstack(in[4], 2), T, k)
	H := graph.MatSeries(graph.Unstack(in[5], 3), T, k, k)
	v := graph.Series(graph.Unstack(in[6], 2), T, nv)
	w := graph.Series(graph.Unstack(in[7], 2), T, nw)
	xi := graph.Series(graph.Unstack(in[8], 2), T, k)
	dims := in[6].Shape().Dimensions[2:]

	x := make(graph.Vec, n)
	for i := range n {
		x[i] = graph.C(spec.X0[i])
	}
	belief := x
	cov := graph.ConstMat(spec.InitialBeliefCov())
	var xs []graph.S
	xs = append(xs, x...)
	for t := range T {
		acting := belief
		if opts.Observe == ObserveFull {
			acting = x
		}
		u := graph.VecAdd(graph.VecAdd(ubar[t], l[t]), graph.MatVec(L[t], graph.VecSub(acting, xbar[t])))
		if opts.Temperature > 0 {
			// Noise with covariance temperature·H̃⁻¹: √temperature·Lh⁻ᵀξ with H̃ = Lh·Lhᵀ.
			noise := graph.SolveLowerT(graph.Chol(H[t]), graph.Col(xi[t])).ColVec(0)
			u = graph.VecAdd(u, graph.VecScale(graph.C(math.Sqrt(opts.Temperature)), noise))
		}
		if opts.Observe == ObservePartial {
			y := At(s, theta, x, nil).Observation(w[t])
			pb := At(s, theta, belief, u)
			var K graph.Mat
			K, cov = kalmanStep(pb.A(), pb.F(), graph.Gram(pb.W()), graph.Gram(pb.V()), cov)
			belief = graph.VecAdd(pb.F0(), graph.MatVec(K, graph.VecSub(y, pb.H0())))
		}
		x = At(s, theta, x, u).Dynamics(v[t])
		xs = append(xs, x...)
	}
	return []*G.Node{graph.Stack(g, xs, []int{T + 1, n}, dims)}
}
