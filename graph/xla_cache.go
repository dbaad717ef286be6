package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/gomlx/gomlx/backends"
	"github.com/nioc-gpu/nioc-gpu/internal/atomicfile"
)

// EnvXLACache names the environment variable that sets XLA's compiled-program cache: a
// directory where each program XLA compiles is kept, so that a later process (the next fit, a
// job array's other tasks on a shared file system) loads it instead of compiling it again.
// Empty or "off": no cache; unset: XLACacheDir's default, in the user's cache directory. See
// docs/backends.md, "Compiled programs kept between processes".
const EnvXLACache = "NIOC_XLA_CACHE"

// EnvXLACacheMax names the environment variable that bounds the cache directory's size: a size
// such as 4GB or 500MB (0: no bound); DefaultXLACacheMax where unset. Past it the programs
// used longest ago are removed (diskCache.trim).
const EnvXLACacheMax = "NIOC_XLA_CACHE_MAX"

// DefaultXLACacheMax is the cache's bound in bytes where EnvXLACacheMax is unset: some 100
// batch shapes of a GPU fit.
const DefaultXLACacheMax = 4_000_000_000

// XLACacheDir returns the directory of XLA's compiled-program cache (EnvXLACache), and whether
// it is the default rather than one asked for: the variable's value where set ("" or "off":
// none); unset, nioc-gpu/xla in the user's cache directory (os.UserCacheDir: $XDG_CACHE_HOME
// or ~/.cache on Linux), for every plugin: a GPU compiles a batch shape's programs in 15–25 s
// and loads them in 0.5–2 s (docs/backends.md, "H100, measured 2026-11-27"); the CPU
// plugin's compiles add 4–14 s to a task's first fit on 2 cores, several times the fit
// itself, and its loads tenths of a second (docs/backends.md, "Compiled programs kept between
// processes"). "" where there is none.
func XLACacheDir() (dir string, byDefault bool) {
	return xlaCacheDir(os.LookupEnv, os.UserCacheDir)
}

func xlaCacheDir(lookup func(string) (string, bool), userCache func() (string, error)) (string, bool) {
	if v, ok := lookup(EnvXLACache); ok {
		if v = strings.TrimSpace(v); strings.EqualFold(v, "off") {
			return "", false
		}
		return v, false
	}
	base, err := userCache()
	if err != nil || base == "" {
		return "", false
	}
	return filepath.Join(base, "nioc-gpu", "xla"), true
}

// XLACacheMax returns the cache's bound in bytes (EnvXLACacheMax; 0: none), or an error naming
// the variable where its value is not a size.
func XLACacheMax() (int64, error) {
	v, ok := os.LookupEnv(EnvXLACacheMax)
	if !ok || strings.TrimSpace(v) == "" {
		return DefaultXLACacheMax, nil
	}
	n, err := humanize.ParseBytes(strings.TrimSpace(v))
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("%s=%q: want a size such as 4GB or 500MB, or 0 for no bound", EnvXLACacheMax, v)
	}
	return int64(n), nil
}

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
	// Evicted counts the programs this process removed to keep the directory within its bound
	// (EnvXLACacheMax).
	Evicted int64
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
	dir   string
	salt  []byte
	limit int64 // bytes the directory may hold (0: no bound)

	hits, misses, stored, failed, evicted atomic.Int64
	mu                                    sync.Mutex
	lastErr                               string
}

// newDiskCache returns a cache in dir (created if missing) whose keys include salt and whose
// files take at most limit bytes (0: no bound).
func newDiskCache(dir string, salt []byte, limit int64) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s=%s: %w", EnvXLACache, dir, err)
	}
	return &diskCache{dir: dir, salt: salt, limit: limit}, nil
}

func (c *diskCache) path(program []byte) string {
	h := sha256.New()
	h.Write(c.salt)
	h.Write([]byte{0})
	h.Write(program)
	return filepath.Join(c.dir, hex.EncodeToString(h.Sum(nil))+".xla")
}

// Load returns the executable stored for program, or nil if there is none or the file is
// damaged. A file loaded is marked as used now (its modification time), so that trim keeps it
// longest.
func (c *diskCache) Load(program []byte) []byte {
	path := c.path(program)
	data, err := os.ReadFile(path)
	if err == nil && len(data) > sha256.Size {
		sum := sha256.Sum256(data[sha256.Size:])
		if bytes.Equal(sum[:], data[:sha256.Size]) {
			c.hits.Add(1)
			now := time.Now()
			_ = os.Chtimes(path, now, now) // a read-only directory keeps its order
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
	c.trim()
}

// trim removes the programs used longest ago (the oldest modification times: written or
// loaded) once the directory's programs take more than limit bytes, down to four fifths of it,
// so that it is not trimmed again at every store; a program larger than that goes first. Processes sharing the directory may trim
// at once: a program removed under another is compiled again there.
func (c *diskCache) trim() {
	if c.limit <= 0 {
		return
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type file struct {
		path string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".xla" {
			continue
		}
		if info, err := e.Info(); err == nil {
			files = append(files, file{filepath.Join(c.dir, e.Name()), info.Size(), info.ModTime()})
			total += info.Size()
		}
	}
	if total <= c.limit {
		return
	}
	target := c.limit / 5 * 4
	// A program larger than the target never fits: it goes first, rather than every other.
	slices.SortFunc(files, func(a, b file) int {
		if (a.size > target) != (b.size > target) {
			if a.size > target {
				return -1
			}
			return 1
		}
		return a.used.Compare(b.used)
	})
	for _, f := range files {
		if total <= target {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
			c.evicted.Add(1)
		}
	}
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
		Failed: c.failed.Load(), LastErr: c.lastErr, Evicted: c.evicted.Load()}
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
