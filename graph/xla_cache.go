package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/internal/atomicfile"
)

// EnvXLACache names the environment variable that turns on XLA's compiled-program cache: a
// directory where each program XLA compiles is kept, so that a later process (the next fit, a
// job array's other tasks on a shared file system) loads it instead of compiling it again.
// Empty or unset: no cache. See docs/backends.md, "Compiled programs kept between processes".
const EnvXLACache = "NIOC_XLA_CACHE"

// xlaCacheVersion changes whenever what a key covers changes.
const xlaCacheVersion = "nioc-gpu xla cache 1"

// CacheStats counts what the compiled-program cache did in this process.
type CacheStats struct {
	Hits   int64 // programs found in the cache (loaded instead of compiled, unless they then failed)
	Misses int64 // programs not in the cache: compiled
	Stored int64 // compiled programs written to the cache
	// Failed counts programs that could not be stored (the plugin cannot serialize them, the
	// directory is not writable) or that were found but could not be loaded (then compiled
	// and stored again); LastErr is the last one's reason.
	Failed  int64
	LastErr string
}

// xlaCaches holds each XLA backend's cache (backends.Backend → *diskCache).
var xlaCaches sync.Map

// XLACacheStats returns what b's compiled-program cache (EnvXLACache) did so far; ok is false
// when b has none.
func XLACacheStats(b backends.Backend) (stats CacheStats, ok bool) {
	c, ok := xlaCaches.Load(b)
	if !ok {
		return CacheStats{}, false
	}
	return c.(*diskCache).stats(), true
}

// diskCache keeps serialized XLA executables as files DIR/<key>.xla, the key a SHA-256 of the
// program and of everything else that decides its compiled code (salt: the plugin file and its
// platform version, XLA_FLAGS, the device, the CPU's features). Files are replaced whole
// (atomicfile), so that processes sharing the directory never read half a file, readable by
// the group (0644 less the umask); each begins with the SHA-256 of the rest, so that a damaged
// one is compiled again.
type diskCache struct {
	dir  string
	salt []byte

	hits, misses, stored, failed atomic.Int64
	mu                           sync.Mutex
	lastErr                      string
}

// newDiskCache returns a cache in dir (created if missing) whose keys include salt.
func newDiskCache(dir string, salt []byte) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s=%s: %w", EnvXLACache, dir, err)
	}
	return &diskCache{dir: dir, salt: salt}, nil
}

func (c *diskCache) path(program []byte) string {
	h := sha256.New()
	h.Write(c.salt)
	h.Write([]byte{0})
	h.Write(program)
	return filepath.Join(c.dir, hex.EncodeToString(h.Sum(nil))+".xla")
}

// Load returns the executable stored for program, or nil if there is none or the file is
// damaged.
func (c *diskCache) Load(program []byte) []byte {
	data, err := os.ReadFile(c.path(program))
	if err == nil && len(data) > sha256.Size {
		sum := sha256.Sum256(data[sha256.Size:])
		if bytes.Equal(sum[:], data[:sha256.Size]) {
			c.hits.Add(1)
			return data[sha256.Size:]
		}
	}
	c.misses.Add(1)
	return nil
}

// Store writes the executable of program, or notes why there is none (err).
func (c *diskCache) Store(program, executable []byte, err error) {
	if err == nil && len(executable) == 0 {
		err = fmt.Errorf("empty serialization")
	}
	if err == nil {
		err = c.write(c.path(program), executable)
	}
	if err != nil {
		c.failed.Add(1)
		c.mu.Lock()
		c.lastErr = err.Error()
		c.mu.Unlock()
		return
	}
	c.stored.Add(1)
}

// write replaces the file at path by the executable behind its SHA-256 (atomicfile: readers
// see the old file or the new, never part of one).
func (c *diskCache) write(path string, executable []byte) error {
	sum := sha256.Sum256(executable)
	return atomicfile.Write(path, append(sum[:], executable...))
}

func (c *diskCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Stored: c.stored.Load(),
		Failed: c.failed.Load(), LastErr: c.lastErr}
}

// xlaCacheSalt returns what, besides the program, decides the code XLA compiles: the plugin
// file (path, size, modification time), the platform and its version, the device, XLA_FLAGS,
// and on a CPU platform the processor's model and features (XLA compiles for the host's
// instruction set, so nodes of a cluster with other CPUs must not share executables).
func xlaCacheSalt(pluginPath, platform, version, device string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nplugin %s", xlaCacheVersion, pluginPath)
	if st, err := os.Stat(pluginPath); err == nil {
		fmt.Fprintf(&b, " %d %d", st.Size(), st.ModTime().UnixNano())
	}
	fmt.Fprintf(&b, "\nplatform %s %s\ndevice %s\nXLA_FLAGS %s\n%s/%s\n", platform, version, device,
		os.Getenv("XLA_FLAGS"), runtime.GOOS, runtime.GOARCH)
	if strings.EqualFold(platform, "cpu") || strings.Contains(strings.ToLower(platform), "host") {
		b.WriteString(cpuFingerprint())
	}
	return []byte(b.String())
}

// cpuFingerprint returns the processor's model and feature flags (Linux: the first processor's
// "model name" and "flags" lines of /proc/cpuinfo); elsewhere the host name, so that a cache
// is shared only by processes on one machine.
func cpuFingerprint() string {
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		var keep []string
		seen := map[string]bool{}
		for _, line := range strings.Split(string(data), "\n") {
			k, _, ok := strings.Cut(line, ":")
			switch k = strings.TrimSpace(k); {
			case !ok || seen[k]:
			case k == "model name", k == "flags", k == "Features", k == "CPU implementer", k == "CPU part":
				seen[k] = true
				keep = append(keep, strings.TrimSpace(line))
			}
		}
		if len(keep) > 0 {
			return "cpu " + strings.Join(keep, "\n")
		}
	}
	host, _ := os.Hostname()
	return "host " + host
}

// XLACacheUsage returns how many compiled programs the cache directory dir holds and their
// size in bytes.
func XLACacheUsage(dir string) (programs int, size int64, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".xla" {
			continue
		}
		if info, err := e.Info(); err == nil {
			programs++
			size += info.Size()
		}
	}
	return programs, size, nil
}
