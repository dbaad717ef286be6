package fit

// The Laplace approximation at a subject's optimum: standard errors and 95% intervals in
// fitting scale from the Hessian of the negative log-likelihood.

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
)

// laplace fills the standard errors and intervals from the Hessian of the negative
// log-likelihood in fitting scale, by central differences of exact gradients (all 2p
// gradients in one batch).
func (f *Fitter) laplace(ctx context.Context, b *batcher, si int, x []float64, res *Result) error {
	p := len(f.infer)
	grads := make([][]float64, 2*p)
	errs := make([]error, 2*p)
	var wg sync.WaitGroup
	for j := range 2 * p {
		wg.Add(1)
		b.enter()
		go func() {
			defer wg.Done()
			defer b.exit()
			xs := slices.Clone(x)
			if j%2 == 0 {
				xs[j/2] += hessianStep
			} else {
				xs[j/2] -= hessianStep
			}
			ll, g, err := b.call(ctx, si, f.full(xs))
			if err == nil && math.IsInf(ll, -1) {
				err = errors.New("log-likelihood not finite next to the optimum")
			}
			grads[j], errs[j] = g, err
		}()
	}
	b.exit()
	wg.Wait()
	b.enter()
	res.Evaluations += 2 * p
	for _, err := range errs {
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return nil // no uncertainty, but the fit stands
		}
	}
	H := make([][]float64, p)
	for a := range p {
		H[a] = make([]float64, p)
		for c := range p {
			ia := f.infer[a]
			// ∂²(−LL)/∂x_a∂x_c ≈ −(g_a(x + h e_c) − g_a(x − h e_c)) / 2h
			H[a][c] = -(grads[2*c][ia] - grads[2*c+1][ia]) / (2 * hessianStep)
		}
	}
	for a := range p {
		for c := a + 1; c < p; c++ {
			m := 0.5 * (H[a][c] + H[c][a])
			H[a][c], H[c][a] = m, m
		}
	}
	cov, ok := spdInverse(H)
	res.HessianPD = ok
	if !ok {
		return nil
	}
	res.StdErr = map[string]float64{}
	res.CI95 = map[string][2]float64{}
	res.CI95Natural = map[string][2]float64{}
	for k, i := range f.infer {
		prm := f.spec.Params[i]
		se := math.Sqrt(cov[k][k])
		lo, hi := x[k]-1.959963984540054*se, x[k]+1.959963984540054*se
		res.StdErr[prm.Name] = se
		res.CI95[prm.Name] = [2]float64{lo, hi}
		if nlo, nhi := prm.FromScale(lo), prm.FromScale(hi); !math.IsInf(nlo, 0) && !math.IsInf(nhi, 0) {
			res.CI95Natural[prm.Name] = [2]float64{nlo, nhi} // not where 10^hi overflows
		}
	}
	return nil
}

// spdInverse inverts a symmetric matrix by Cholesky; ok is false if it is not positive
// definite.
func spdInverse(A [][]float64) ([][]float64, bool) {
	L, ok := cholesky(A)
	if !ok {
		return nil, false
	}
	n := len(A)
	inv := make([][]float64, n)
	for j := range n {
		e := make([]float64, n)
		e[j] = 1
		choleskySolve(L, e)
		inv[j] = e
	}
	return inv, true
}
