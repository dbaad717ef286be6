package population

// The full hierarchical posterior of a population: NUTS (package posterior) over every
// subject's parameters and the population's at once, non-centred (Papaspiliopoulos, Roberts &
// Sköld 2007; Betancourt & Girolami 2015): the sampler moves in
//
//	y = (z_ik for every subject i and fitted parameter k; β_kj; log σ_k)
//
// with θ_ik = X_i β_k + σ_k z_ik in parameter k's fitting scale, so that the funnel of a
// small σ_k does not trap it. The log density is
//
//	Σ_i log p(D_i | θ_i) − ½ Σ z_ik² + Σ log p(β) + Σ_k [log p(σ_k) + log σ_k]
//
// with weakly informative priors scaled by each parameter's search box of width w_k: the
// intercept N(box centre, w_k²), the other effects N(0, w_k²), σ_k half-normal of scale w_k/2.
// A subject's θ_i may leave the box (the population normal, not the box, bounds it); the
// likelihood is evaluated there as anywhere.

import (
	"context"
	"fmt"
	"math"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/likelihood"
	"github.com/nioc-gpu/nioc-gpu/posterior"
)

// Hierarchical is the hierarchical posterior of a population of subjects with design X.
type Hierarchical struct {
	e        *likelihood.Evaluator
	sel      *fit.Selection
	subjects []fit.Subject
	X        [][]float64
	n, p, q  int
	trials   int
	centre   []float64 // the box's centres
	width    []float64 // the box's widths
	maxBatch int
}

// NewHierarchical returns the hierarchical posterior of the subjects (design rows X) for the
// parameters fitted with opts (Infer, Fix) of e's likelihood; opts.MaxBatch bounds the rows ×
// trials of a graph run (0: the likelihood's default).
func NewHierarchical(e *likelihood.Evaluator, opts fit.Options, subjects []fit.Subject, X [][]float64) (*Hierarchical, error) {
	if len(subjects) != len(X) || len(X) == 0 {
		return nil, fmt.Errorf("%d subjects for %d design rows", len(subjects), len(X))
	}
	sel, err := fit.NewSelection(e, opts.Infer, opts.Fix)
	if err != nil {
		return nil, err
	}
	lo, hi := sel.Bounds()
	h := &Hierarchical{e: e, sel: sel, subjects: subjects, X: X, n: len(X), p: len(lo), q: len(X[0]), maxBatch: opts.MaxBatch}
	for k := range lo {
		h.centre = append(h.centre, (lo[k]+hi[k])/2)
		h.width = append(h.width, hi[k]-lo[k])
	}
	for _, s := range subjects {
		h.trials = max(h.trials, len(s.Trials))
	}
	return h, nil
}

// Dim returns the dimension of the space the sampler moves in: n·p + p·q + p.
func (h *Hierarchical) Dim() int { return h.n*h.p + h.p*h.q + h.p }

// Unpack returns the subjects' parameters θ[i][k], the effects β[k][j] and the spreads σ[k]
// of the point y.
func (h *Hierarchical) Unpack(y []float64) (theta, beta [][]float64, sd []float64) {
	n, p, q := h.n, h.p, h.q
	beta = make([][]float64, p)
	sd = make([]float64, p)
	for k := range p {
		beta[k] = y[n*p+k*q : n*p+(k+1)*q]
		sd[k] = math.Exp(y[n*p+p*q+k])
	}
	theta = make([][]float64, n)
	for i := range n {
		theta[i] = make([]float64, p)
		for k := range p {
			mu := 0.0
			for j, x := range h.X[i] {
				mu += beta[k][j] * x
			}
			theta[i][k] = mu + sd[k]*y[i*p+k]
		}
	}
	return theta, beta, sd
}

// Pack returns the point of the population (β, σ) with the subjects' parameters theta: the
// inverse of Unpack, used to start the chains at an empirical-Bayes fit.
func (h *Hierarchical) Pack(theta, beta [][]float64, sd []float64) []float64 {
	y := make([]float64, h.Dim())
	for k := range h.p {
		copy(y[h.n*h.p+k*h.q:], beta[k])
		y[h.n*h.p+h.p*h.q+k] = math.Log(sd[k])
		for i := range h.n {
			mu := 0.0
			for j, x := range h.X[i] {
				mu += beta[k][j] * x
			}
			y[i*h.p+k] = (theta[i][k] - mu) / sd[k]
		}
	}
	return y
}

// LogDensity is the batched log density of the file comment and its gradient at the points
// ys, all subjects of all points evaluated in one batch of the likelihood (a posterior.Func).
func (h *Hierarchical) LogDensity(ys [][]float64) ([]float64, [][]float64, error) {
	n, p, q := h.n, h.p, h.q
	rows := make([][][][]float64, 0, len(ys)*n)
	thetas := make([][]float64, 0, len(ys)*n)
	unpacked := make([][][]float64, len(ys))
	for c, y := range ys {
		theta, _, _ := h.Unpack(y)
		unpacked[c] = theta
		for i := range n {
			rows = append(rows, h.subjects[i].Trials)
			thetas = append(thetas, h.sel.Full(theta[i]))
		}
	}
	ll, grad, err := h.e.EvalRows(rows, thetas, likelihood.Batching{Trials: h.trials, MaxBatch: h.maxBatch, Most: len(rows), Keep: true})
	if err != nil {
		return nil, nil, err
	}
	idx := h.sel.Indices()
	logp := make([]float64, len(ys))
	grads := make([][]float64, len(ys))
	for c, y := range ys {
		_, beta, sd := h.Unpack(y)
		g := make([]float64, h.Dim())
		lp := 0.0
		for i := range n {
			lp += ll[c*n+i]
			for k, ik := range idx {
				gl := grad[c*n+i][ik] // ∂ log p(D_i)/∂θ_ik
				z := y[i*p+k]
				g[i*p+k] += gl * sd[k]
				for j, x := range h.X[i] {
					g[n*p+k*q+j] += gl * x
				}
				g[n*p+p*q+k] += gl * sd[k] * z
			}
		}
		for i := range n * p {
			lp -= 0.5 * y[i] * y[i]
			g[i] -= y[i]
		}
		for k := range p {
			for j := range q {
				m := 0.0
				if j == 0 {
					m = h.centre[k]
				}
				d := (beta[k][j] - m) / h.width[k]
				lp -= 0.5 * d * d
				g[n*p+k*q+j] -= d / h.width[k]
			}
			s := sd[k] / (h.width[k] / 2) // half-normal on σ, and the Jacobian of log σ
			lp += -0.5*s*s + math.Log(sd[k])
			g[n*p+p*q+k] += -s*s + 1
		}
		logp[c], grads[c] = lp, g
	}
	return logp, grads, nil
}

// HierResult is the hierarchical posterior's draws, summarized: every effect and spread of the
// population with its posterior mean, SD and quantiles, and how well the chains mixed.
type HierResult struct {
	Effects     []HierSummary `json:"effects"` // Param, Term
	Spreads     []HierSummary `json:"spreads"` // Param
	Subjects    []HierSubject `json:"subjects"`
	Divergences int           `json:"divergences"`
	MaxRHat     float64       `json:"max_rhat"`
	MinESS      float64       `json:"min_ess_bulk"`
	Evaluations int           `json:"evaluations"` // of the batched log density, each n subjects' likelihoods
	Seconds     float64       `json:"seconds"`
	Warnings    []string      `json:"warnings,omitempty"`
}

// HierSummary is one population quantity's posterior.
type HierSummary struct {
	Param string `json:"param"`
	Term  string `json:"term,omitempty"`
	posterior.Summary
	Q025 float64 `json:"q2.5"`
	Q975 float64 `json:"q97.5"`
	// PPositive is the posterior probability that an effect other than the intercept is
	// positive (the share of draws above 0); nil for intercepts and spreads.
	PPositive *float64 `json:"p_positive,omitempty"`
}

// HierSubject is one subject's posterior mean and SD of each fitted parameter (fitting scale).
type HierSubject struct {
	Subject string    `json:"subject"`
	Mean    []float64 `json:"mean"`
	SD      []float64 `json:"sd"`
}

// Sample draws from the hierarchical posterior with opts, every chain starting at start (a
// point of Pack, e.g. the empirical-Bayes fit's), and summarizes the draws for the fitted
// parameters names and design columns.
func (h *Hierarchical) Sample(ctx context.Context, opts posterior.Options, start []float64, names, columns []string) (*HierResult, [][][]float64, error) {
	opts.Init = func(_, _ int) []float64 { return append([]float64(nil), start...) }
	res, err := posterior.Sample(ctx, posterior.NewTarget(h.Dim(), h.LogDensity), opts)
	if err != nil {
		return nil, nil, err
	}
	if err := res.Err(); err != nil {
		return nil, nil, err
	}
	// The draws in the population's terms: β, σ, then θ, [chain][draw][quantity].
	draws := make([][][]float64, len(res.Chains))
	for c, ch := range res.Chains {
		for _, y := range ch.Draws {
			theta, beta, sd := h.Unpack(y)
			var row []float64
			for k := range beta {
				row = append(row, beta[k]...)
			}
			row = append(row, sd...)
			for _, t := range theta {
				row = append(row, t...)
			}
			draws[c] = append(draws[c], row)
		}
		res.Chains[c].Draws = nil
	}
	return h.summarize(res, draws, names, columns), draws, nil
}
