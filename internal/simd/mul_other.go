//go:build !amd64

package simd

// hasAVX2 is false off amd64 (see mul_amd64.go).
var hasAVX2 = false

// Mul sets dst[i] = x[i]·y[i] for i < len(dst), x and y at least as long; dst may be x or y,
// or else must not overlap them (see mul_amd64.go).
func Mul(dst, x, y []float64) { mulVek(dst, x, y) }
