package graph

import (
	"fmt"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/stretchr/testify/require"
)

// TestGather checks Engine.Gather on XLA's CPU plugin against a gather written out by hand:
// every axis of a rank-4 tensor, repeated and out-of-order indices, the values copied to the
// bit, one call each and one program per shape. It runs where a plugin is installed (make
// xla-cpu) and is skipped otherwise.
func TestGather(t *testing.T) {
	cpuPlugin(t)
	b, err := NewBackend(BackendXLA)
	require.NoError(t, err)
	e := NewEngine(b)
	dims := []int{2, 3, 4, 5}
	data := make([]float64, 2*3*4*5)
	for i := range data {
		data[i] = float64(i) + 1/float64(i+3) // values that a sum with zeros would still give, but not a product
	}
	for _, tc := range []struct {
		axis  int
		index []int
	}{
		{0, []int{1, 0, 1}},
		{1, []int{2}},
		{2, []int{0, 0, 0, 3, 3, 1, 2}},
		{2, []int{3, 2, 1, 0, 0, 1, 2}}, // the same program as the row before
		{3, []int{4, 0, 4, 4}},
	} {
		t.Run(fmt.Sprint(tc.axis, tc.index), func(t *testing.T) {
			x := NewTensor(data, dims...)
			defer func() { _ = x.FinalizeAll() }()
			calls := e.Calls()
			out := e.Gather(x, tc.axis, tc.index)
			defer func() { _ = out.FinalizeAll() }()
			require.Equal(t, calls+1, e.Calls())
			want := append([]int(nil), dims...)
			want[tc.axis] = len(tc.index)
			require.Equal(t, want, out.Shape().Dimensions)
			got := tensors.MustCopyFlatData[float64](out)
			inner := 1
			for _, d := range dims[tc.axis+1:] {
				inner *= d
			}
			outer := len(data) / (inner * dims[tc.axis])
			for o := range outer {
				for i, k := range tc.index {
					for j := range inner {
						require.Equal(t, data[(o*dims[tc.axis]+k)*inner+j], got[(o*len(tc.index)+i)*inner+j], "outer %d, index %d, inner %d", o, i, j)
					}
				}
			}
		})
	}
	require.Equal(t, 4, e.Stats().Compiles)
	require.Panics(t, func() { e.Gather(NewTensor(data, dims...), 2, []int{4}) })
	require.Panics(t, func() { e.Gather(NewTensor(data, dims...), 4, []int{0}) })
}
