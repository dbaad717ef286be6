//go:build cgo && !noxla && !linux

package graph

// keepHostHeap does nothing outside Linux (glibc's malloc): see malloc_linux.go.
func keepHostHeap() bool { return false }
