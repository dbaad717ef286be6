package posterior_test

import (
	"context"
	"fmt"
	"log"
	"math"

	"github.com/nioc-gpu/nioc-gpu/posterior"
)

// Sampling a correlated 2-D normal (means 1 and −2, standard deviations 1 and 2, correlation
// 0.8) with four chains whose leapfrog steps are evaluated together in batches.
func Example() {
	const rho = 0.8
	mu, sd := []float64{1, -2}, []float64{1, 2}
	logDensity := func(x [][]float64) ([]float64, [][]float64, error) {
		logp := make([]float64, len(x)) // one point per chain still building its trajectory
		grad := make([][]float64, len(x))
		for i, xi := range x {
			a, b := (xi[0]-mu[0])/sd[0], (xi[1]-mu[1])/sd[1]
			c := 1 - rho*rho
			logp[i] = -(a*a - 2*rho*a*b + b*b) / (2 * c)
			grad[i] = []float64{-(a - rho*b) / (c * sd[0]), -(b - rho*a) / (c * sd[1])}
		}
		return logp, grad, nil
	}
	target := posterior.NewTarget(2, logDensity)
	res, err := posterior.Sample(context.Background(), target, posterior.Options{Chains: 4, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := res.Err(); err != nil {
		log.Fatal(err)
	}
	summary, err := res.Summary(0)
	if err != nil {
		log.Fatal(err)
	}
	for j, s := range summary {
		fmt.Printf("x%d: mean %.1f, sd %.1f, R-hat below 1.01: %v, bulk ESS above 1000: %v\n",
			j, math.Round(s.Mean*10)/10, s.SD, s.RHat < 1.01, s.ESSBulk > 1000)
	}
	divergences := 0
	for _, c := range res.Chains {
		divergences += c.Divergences()
	}
	fmt.Println("draws:", 4*len(res.Chains[0].Draws), "divergences:", divergences)
	fmt.Println("fewer batched calls than evaluations:", res.Calls < res.Evaluations)
	// Output:
	// x0: mean 1.0, sd 1.0, R-hat below 1.01: true, bulk ESS above 1000: true
	// x1: mean -2.0, sd 2.0, R-hat below 1.01: true, bulk ESS above 1000: true
	// draws: 4000 divergences: 0
	// fewer batched calls than evaluations: true
}
