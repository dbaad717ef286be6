// Package atomicfile replaces files whole: written to a temporary file beside them, synced,
// then renamed over them (the directory synced too), so that a reader (or a run resumed after a crash) sees either the
// old content or the new, never part of it.
package atomicfile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Write replaces the file at path by data. The file gets the mode a new file gets from
// os.Create (0666 less the umask: 0644 by default, readable by a lab's group), not the 0600
// of os.CreateTemp. The temporary file is removed on failure.
func Write(path string, data []byte) (err error) {
	f, err := create(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil { // make the rename durable
		d.Sync()
		d.Close()
	}
	return nil
}

// RemoveStale removes the temporary files that writes of path cut short (a process killed
// between creating one and renaming it) left beside it, and returns how many it removed. Call
// it only where no other process writes path at the same time: it removes their temporary
// files too.
func RemoveStale(path string) (int, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	prefix, n := tempName(base, ""), 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || len(name) != len(prefix)+8 || e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, err
		}
		n++
	}
	return n, nil
}

// tempName is the name of a temporary file beside a file named base, ending in suffix.
func tempName(base, suffix string) string { return "." + base + ".tmp-" + suffix }

// create creates a new temporary file beside path, mode 0666 before the umask.
func create(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		name := filepath.Join(dir, tempName(base, fmt.Sprintf("%08x", rand.Uint32())))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("%s: no unused temporary file name beside it", path)
}
