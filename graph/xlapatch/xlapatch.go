// Package xlapatch makes the PJRT CPU plugin that `make xla-cpu` installs run each program's
// kernels one after another on the thread that runs the program, instead of handing them to a
// thread pool as they become ready.
//
// XLA's CPU runtime runs a compiled program as a sequence of kernels ("thunks", one per fused
// operation) through a ThunkExecutor, which runs them sequentially only when every buffer they
// touch is at most 512 bytes or there are at most 8 of them; otherwise it dispatches each
// ready kernel to a thread pool. nioc-gpu's programs are thousands of small kernels over a few
// thousand float64 values each (a reaching tracking step's vector–Jacobian product: 1,134),
// where the hand-offs cost more than the parallelism gains: one navigation fit on 2 cores made
// 61,000 context switches and spent 0.9 of 3.9 CPU-seconds in the Linux kernel
// (docs/backends.md, "Sequential thunks"). The thresholds are a literal in the plugin's code,
// read by no flag or variable, so the patch raises the 512-byte threshold to 2³¹−1 at the five
// places that build the executor's options (the program's executor and those of while loops,
// calls and conditionals). The programs compiled, their numbers and XLA's compiled-program
// cache are unchanged: only the order of execution of independent kernels is.
//
// The patch applies to one file only, recognized by its SHA-256, and yields one file, checked
// by its SHA-256: another build is refused and left as it is.
package xlapatch

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// Plugin describes the patch of one build of a PJRT CPU plugin.
type Plugin struct {
	Name     string  // the build, for messages
	Original string  // SHA-256 (hex) of the file as installed
	Patched  string  // SHA-256 (hex) of the file patched
	Sites    []int64 // file offsets of `movq $512, disp32(%rbp)`, each followed by `movq $8, disp32+8(%rbp)`
}

// CPU is the plugin of lammps-jax-pjrt-cpu 0.11.2 (jaxlib 0.11.2's XLA), the one `make
// xla-cpu` installs (Makefile, CPU_WHEEL).
var CPU = Plugin{
	Name:     "lammps-jax-pjrt-cpu 0.11.2",
	Original: "ad1309ac822b1b24d51b7f9947c7c9fa9ef5d67f390584cbc3d1fa2428fed9c2",
	Patched:  "77efc807f81bc7f169972b98c0e4d5253edc2ea24f5fbe30d22b6f97ac9977b2",
	Sites:    []int64{0x4025abd, 0x4028c4a, 0x4c5eade, 0x4c5ecb5, 0xa68162c},
}

// State is what Check finds in a plugin file.
type State int

const (
	Unknown    State = iota // not the build the patch is for (or damaged)
	Concurrent              // the build, as installed: XLA's thresholds
	Sequential              // the build, patched
)

func (s State) String() string {
	return [...]string{"unknown build", "concurrent (as installed)", "sequential (patched)"}[s]
}

// The instructions at a site: movq $imm32, disp32(%rbp) twice, the second storing 8.
const siteLen = 22

var (
	movqRBP    = []byte{0x48, 0xc7, 0x85}
	original   = uint32(512)
	sequential = uint32(1<<31 - 1)
)

// site returns the state of the 22 bytes at one site.
func site(b []byte) State {
	if len(b) < siteLen || !bytes.Equal(b[0:3], movqRBP) || !bytes.Equal(b[11:14], movqRBP) ||
		binary.LittleEndian.Uint32(b[18:22]) != 8 ||
		int32(binary.LittleEndian.Uint32(b[14:18])) != int32(binary.LittleEndian.Uint32(b[3:7]))+8 {
		return Unknown
	}
	switch binary.LittleEndian.Uint32(b[7:11]) {
	case original:
		return Concurrent
	case sequential:
		return Sequential
	}
	return Unknown
}

// Check returns the state of the plugin file at path from the bytes at p's sites (it does not
// hash the file: a quick look for `nioc-gpu backend`).
func (p Plugin) Check(path string) (State, error) {
	f, err := os.Open(path)
	if err != nil {
		return Unknown, err
	}
	defer f.Close()
	state := Unknown
	buf := make([]byte, siteLen)
	for i, off := range p.Sites {
		if _, err := f.ReadAt(buf, off); err != nil {
			if errors.Is(err, io.EOF) {
				return Unknown, nil
			}
			return Unknown, fmt.Errorf("%s: %w", path, err)
		}
		s := site(buf)
		if s == Unknown || (i > 0 && s != state) {
			return Unknown, nil
		}
		state = s
	}
	return state, nil
}

// Patch patches the plugin file at path in place (through a temporary file beside it): it
// returns Sequential once the file is patched, whether it was already or is now, and an error,
// leaving the file as it was, when the file's SHA-256 is neither p.Original nor p.Patched.
func (p Plugin) Patch(path string) (State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Unknown, err
	}
	switch sum := digest(data); sum {
	case p.Patched:
		return Sequential, nil
	case p.Original:
	default:
		return Unknown, fmt.Errorf("%s: SHA-256 %s is not that of %s (%s), for which the patch is made; left as it is",
			path, sum, p.Name, p.Original)
	}
	for _, off := range p.Sites {
		if off+siteLen > int64(len(data)) || site(data[off:off+siteLen]) != Concurrent {
			return Unknown, fmt.Errorf("%s: no executor options at offset %#x", path, off)
		}
		binary.LittleEndian.PutUint32(data[off+7:], sequential)
	}
	if sum := digest(data); sum != p.Patched {
		return Unknown, fmt.Errorf("%s: patched SHA-256 %s, want %s; left as it is", path, sum, p.Patched)
	}
	info, err := os.Stat(path)
	if err != nil {
		return Unknown, err
	}
	tmp := path + ".patching"
	if err := os.WriteFile(tmp, data, info.Mode().Perm()); err != nil {
		return Unknown, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return Unknown, err
	}
	return Sequential, nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
