package taskfile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/pelletier/go-toml/v2"
)

// Digest returns "sha256:" and the first 16 hex digits of the SHA-256 of the task file's
// canonical content: its TOML values, tables with their keys in sorted order. Comments, blank
// lines, the order of keys and how a number is written do not change it; any value, and any
// character inside an expression, does. It implements models.Digester.
func (t *Task) Digest() string { return t.digest }

// canonicalDigest returns Digest's value for the TOML text.
func canonicalDigest(text []byte) (string, error) {
	var v map[string]any
	if err := toml.Unmarshal(text, &v); err != nil {
		return "", fmt.Errorf("task file: %w", err)
	}
	h := sha256.New()
	writeCanonical(h, v)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// writeCanonical writes v (a decoded TOML value) to w in one form for equal values.
func writeCanonical(w io.Writer, v any) {
	switch x := v.(type) {
	case map[string]any:
		io.WriteString(w, "{")
		for _, k := range slices.Sorted(maps.Keys(x)) {
			fmt.Fprintf(w, "%q:", k)
			writeCanonical(w, x[k])
			io.WriteString(w, ",")
		}
		io.WriteString(w, "}")
	case []any:
		io.WriteString(w, "[")
		for _, e := range x {
			writeCanonical(w, e)
			io.WriteString(w, ",")
		}
		io.WriteString(w, "]")
	case string:
		fmt.Fprintf(w, "%q", x)
	case float64:
		io.WriteString(w, strconv.FormatFloat(x, 'g', -1, 64))
	case int64: // an integer is the number it writes: 2 and 2.0 are one value
		io.WriteString(w, strconv.FormatFloat(float64(x), 'g', -1, 64))
	default:
		fmt.Fprintf(w, "%T:%v", x, x)
	}
}
