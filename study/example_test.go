package study_test

import (
	"fmt"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/study"
)

// The error of an estimate is relative for a positive parameter and absolute for a signed one.
func ExampleEstimateError() {
	cost := models.Param{Name: "action_cost", Lo: 1e-3, Hi: 10, Scale: models.Log10Scale}
	target := models.Param{Name: "target_x", Lo: -1, Hi: 1, Signed: true}
	fmt.Printf("%.2f\n", study.EstimateError(cost, 0.2, 0.3))
	fmt.Printf("%.2f\n", study.EstimateError(target, 0.2, 0.3))
	// Output:
	// 0.50
	// 0.10
}

// A grid axis of a log10-scale parameter is evenly spaced in decades.
func ExampleNewAxis() {
	m, err := models.Get("linear")
	if err != nil {
		panic(err)
	}
	ax := study.NewAxis(m.Spec(), 0, 0.01, 10, 4)
	fmt.Printf("%s %.3g\n", ax.Param.Name, ax.Values)
	// Output:
	// action_cost [0.01 0.1 1 10]
}
