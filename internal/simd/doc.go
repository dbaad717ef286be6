// Package simd holds the element-wise kernels that github.com/viterin/vek, the tape's SIMD
// library (graph/tape_run.go), lacks: Mul writes x·y to a third slice in one pass (vek's
// Mul_Into copies x there first). It is a package of its own because Go assembly cannot live
// in a package that uses cgo, as graph does (XLA).
package simd
