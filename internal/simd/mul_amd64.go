package simd

import "golang.org/x/sys/cpu"

// hasAVX2 says whether Mul may use mulAVX2 (the CPU has AVX2 and the OS saves its registers).
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasAVX

// mulAVX2 sets dst[i] = x[i]·y[i] for i < len(dst) with AVX2 (mul_amd64.s); x and y are at
// least as long as dst.
//
//go:noescape
func mulAVX2(dst, x, y []float64)

// Mul sets dst[i] = x[i]·y[i] for i < len(dst), x and y at least as long; dst may be x or
// y, or else must not overlap them. Each element is the one IEEE multiplication, so the bits are those of a loop. With AVX2
// it reads x and y and writes dst in one pass, where vek.Mul_Into copies x to dst first and
// then multiplies in place: that copy was a sixth of a default Go-backend fit's CPU time
// (docs/speed.md, change 16).
func Mul(dst, x, y []float64) {
	n := len(dst)
	if hasAVX2 {
		mulAVX2(dst, x[:n], y[:n])
		return
	}
	mulVek(dst, x, y)
}
