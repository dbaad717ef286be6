//go:build cgo && !noxla && linux

package graph

/*
#include <malloc.h>
*/
import "C"

import (
	"os"
	"strings"
)

// Thresholds of glibc's malloc that keepHostHeap sets.
const (
	mmapThreshold = 32 << 20 // the most glibc accepts on 64-bit systems
	trimThreshold = 1 << 30
)

// keepHostHeap makes glibc's malloc keep the memory the CPU plugin frees for its next call,
// and reports whether it did. XLA's CPU runtime allocates each call's buffers with malloc and
// frees them after it; by default glibc serves blocks over a threshold it adapts with fresh
// mmap'ed pages and returns freed memory at the top of its heap to the kernel beyond 128 KB, so
// that every call pays page faults and zeroed pages (navigation, one subject's fit: 0.9 of 3.9
// CPU-s in the kernel). Up to 32 MB a block now comes from the heap, which gives back to the
// kernel only what exceeds 1 GB free: the process keeps its largest call's memory. The user's
// own choice (GLIBC_TUNABLES naming malloc, or a MALLOC_*_ variable) is left alone.
func keepHostHeap() bool {
	if strings.Contains(os.Getenv("GLIBC_TUNABLES"), "malloc") ||
		os.Getenv("MALLOC_MMAP_THRESHOLD_") != "" || os.Getenv("MALLOC_TRIM_THRESHOLD_") != "" {
		return false
	}
	return C.mallopt(C.M_MMAP_THRESHOLD, mmapThreshold) == 1 && C.mallopt(C.M_TRIM_THRESHOLD, trimThreshold) == 1
}
