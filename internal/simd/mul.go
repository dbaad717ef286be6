package simd

import "github.com/viterin/vek"

// mulVek is Mul with github.com/viterin/vek (AVX2 where the CPU has it, pure Go elsewhere):
// in place where dst is x or y, else a copy of x to dst and then a product in place.
func mulVek(dst, x, y []float64) {
	n := len(dst)
	switch {
	case n == 0:
	case &dst[0] == &x[0]:
		vek.Mul_Inplace(dst, y[:n])
	case &dst[0] == &y[0]:
		vek.Mul_Inplace(dst, x[:n]) // x·y = y·x exactly
	default:
		vek.Mul_Into(dst, x[:n], y[:n])
	}
}
