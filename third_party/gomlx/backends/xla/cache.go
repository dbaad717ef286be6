package xla

// This file is a patch of nioc-gpu's vendored copy of GoMLX v0.26.0 (third_party/README.md).
// It lets a caller keep compiled programs between processes: Compile asks an ExecutableCache
// for a program's executable before it compiles the program, and stores what it compiles, using
// the executable serialization that nioc-gpu's vendored go-xla adds (pjrt/serialize.go).

import (
	"github.com/gomlx/go-xla/pkg/pjrt"
)

// ExecutableCache keeps serialized executables by their StableHLO program. The cache must key
// what it stores by everything else that decides the compiled code: the plugin (platform and
// version), the compiler flags (XLA_FLAGS) and the device (GPU model, or CPU features).
type ExecutableCache interface {
	// Load returns the serialized executable stored for program, or nil if there is none.
	Load(program []byte) []byte
	// Store keeps the serialized executable of program, or, if err is not nil, notes that it
	// could not be serialized (or a stored one could not be loaded) and why.
	Store(program, executable []byte, err error)
}

// SetExecutableCache has Compile look up each single-device (portable) program in cache
// before compiling it and store the executable it compiles; nil turns the cache off. Programs
// compiled for several devices are always compiled.
func (backend *Backend) SetExecutableCache(cache ExecutableCache) {
	backend.cache = cache
}

// Client returns the backend's PJRT client.
func (backend *Backend) Client() *pjrt.Client {
	return backend.client
}

// compileCached compiles program by config, or loads it from the backend's cache.
func (backend *Backend) compileCached(config *pjrt.CompileConfig, program []byte, portable bool) (*pjrt.LoadedExecutable, error) {
	if backend.cache == nil || !portable {
		return config.Done()
	}
	if data := backend.cache.Load(program); data != nil {
		exec, err := backend.client.DeserializeAndLoad(data, true)
		if err == nil {
			return exec, nil
		}
		backend.cache.Store(program, nil, err)
	}
	exec, err := config.Done()
	if err != nil {
		return nil, err
	}
	data, err := exec.Serialize()
	backend.cache.Store(program, data, err)
	return exec, nil
}
