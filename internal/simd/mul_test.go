package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/viterin/vek"
)

// TestMul: Mul gives, bit for bit, the products of a loop for every length from 0 to 70 and a
// long one, from offsets that leave the slices unaligned, written to a third slice or over
// either operand, with infinities, NaNs, signed zeros and subnormals among the values; and
// leaves dst past its length alone.
func TestMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0, math.Copysign(0, -1), 5e-324, -2.2250738585072014e-308, math.MaxFloat64}
	value := func() float64 {
		if rng.IntN(8) == 0 {
			return special[rng.IntN(len(special))]
		}
		return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
	}
	for _, avx := range []bool{hasAVX2, false} {
		saved := hasAVX2
		hasAVX2 = avx
		for _, n := range append(rangeN(71), 1000, 1003) {
			for _, off := range []int{0, 1, 3} {
				x, y := make([]float64, n+off+2), make([]float64, n+off+2)
				for i := range x {
					x[i], y[i] = value(), value()
				}
				xs, ys := x[off:off+n], y[off:off+n]
				want := make([]float64, n)
				for i := range want {
					want[i] = xs[i] * ys[i]
				}
				name := fmt.Sprintf("avx2=%v n=%d off=%d", avx, n, off)
				dst := make([]float64, n+1)
				dst[n] = 42
				Mul(dst[:n], x[off:], y[off:]) // operands longer than dst
				requireBits(t, want, dst[:n], name)
				require.Equal(t, 42.0, dst[n], "%s: past dst", name)
				ox, oy := append([]float64(nil), xs...), append([]float64(nil), ys...)
				Mul(ox, ox, ys)
				requireBits(t, want, ox, name+", over x")
				Mul(oy, xs, oy)
				requireBits(t, want, oy, name+", over y")
			}
		}
		hasAVX2 = saved
	}
}

func rangeN(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func requireBits(t *testing.T, want, got []float64, name string) {
	t.Helper()
	for i := range want {
		if math.Float64bits(want[i]) != math.Float64bits(got[i]) && !(math.IsNaN(want[i]) && math.IsNaN(got[i])) {
			t.Fatalf("%s: element %d: %v, want %v", name, i, got[i], want[i])
		}
	}
}

// BenchmarkMul: Mul against vek.Mul_Into (a copy, then a product in place) at the tape's
// sizes.
func BenchmarkMul(b *testing.B) {
	for _, n := range []int{50, 250, 2500, 25000} {
		x, y, d := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = float64(i)+0.5, 1/(float64(i)+1)
		}
		b.Run(fmt.Sprint("Mul/", n), func(b *testing.B) {
			for b.Loop() {
				Mul(d, x, y)
			}
		})
		b.Run(fmt.Sprint("vek.Mul_Into/", n), func(b *testing.B) {
			for b.Loop() {
				vek.Mul_Into(d, x, y)
			}
		})
	}
}
