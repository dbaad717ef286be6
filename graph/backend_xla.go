//go:build cgo && !noxla

package graph

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gomlx/go-xla/pkg/pjrt"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/xla"
)

// HasXLA reports whether this binary was built with the XLA backend (cgo, and not the noxla
// build tag); a build without it runs the pure-Go backend only and cross-compiles.
const HasXLA = true

// heapOnce sets glibc's malloc thresholds for the CPU plugin once a process (keepHostHeap).
var heapOnce sync.Once

func newXLA(plugin string) (b backends.Backend, err error) {
	xla.EnableAutoInstall(false) // never download: this environment may have no internet
	path, err := FindPlugin(plugin)
	if err != nil {
		return nil, err
	}
	cpu := strings.Contains(filepath.Base(path), "cpu")
	return openXLA(path, cpu, !cpu && os.Getenv(EnvXLAAsync) == "1")
}

// openXLA loads the plugin at path; shared: the CPU plugin's buffers share host memory with
// Go (no copies); async: executions return once enqueued (EnvXLAAsync), which needs buffers
// that are not shared, since a shared buffer's memory is read without waiting for the device.
func openXLA(path string, shared, async bool) (b backends.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("loading PJRT plugin %s: %v", path, r)
		}
	}()
	config := path
	if shared {
		config += ",shared_buffers" // host memory is the device's: no copies
	}
	cpu := strings.Contains(filepath.Base(path), "cpu")
	fusion, err := fusionMode(cpu)
	if err != nil {
		return nil, err
	}
	if _, err := sinCosMode(); err != nil {
		return nil, err
	}
	if os.Getenv("XLA_FLAGS") == "" {
		var flags []string
		if strings.Contains(filepath.Base(path), "cuda") {
			// go-xla v0.1.4 would otherwise point XLA at a path of its developer's machine.
			flags = append(flags, "--xla_gpu_cuda_data_dir="+filepath.Dir(path))
		}
		if cpu {
			flags = append(flags, CPUFlags(fusion, exactRows.Load()))
		}
		if len(flags) > 0 {
			os.Setenv("XLA_FLAGS", strings.Join(flags, " "))
		}
	}
	if shared {
		// The CPU plugin runs each execution on the calling thread (its client option
		// "asynchronous", which PJRT_Client_Create would refuse if it did not know it) instead
		// of handing it to a thread of its own and waiting: with sequential thunks
		// (graph/xlapatch) and a chunk per core that is one core per chunk and no hand-offs
		// (12 reaching subjects on 2 cores: 8.5–9.5 → 5.7–6.3 s; docs/backends.md,
		// "Sequential thunks").
		b, err = xla.NewWithOptions(config, pjrt.NamedValuesMap{"asynchronous": false})
	} else {
		b, err = xla.New(config)
	}
	if err != nil {
		return nil, fmt.Errorf("loading PJRT plugin %s: %w", path, err)
	}
	fusionModes.Store(b, fusion)
	if cpu {
		hostXLA.Store(b, struct{}{})
		heapOnce.Do(func() { keepHostHeap() })
	}
	xb := b.(*xla.Backend)
	client := xb.Client()
	client.SetAsyncExecution(async)
	if dir, byDefault := XLACacheDir(); dir != "" {
		limit, err := XLACacheMax()
		if err != nil {
			b.Finalize()
			return nil, err
		}
		device := xb.DeviceDescription(0)
		if devs := client.AddressableDevices(); len(devs) > 0 {
			if desc, err := devs[0].GetDescription(); err == nil {
				if kind, err := desc.Kind(); err == nil {
					device += " " + kind
				}
			}
		}
		cache, err := newDiskCache(dir, xlaCacheSalt(path, client.Platform(), client.PlatformVersion(), device), limit)
		switch {
		case err == nil:
			xb.SetExecutableCache(cache)
			xlaCaches.Store(b, cache)
		case !byDefault: // a directory asked for must be usable; the default may not be
			b.Finalize()
			return nil, err
		}
	}
	return b, nil
}
