package fit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/nioc-gpu/nioc-gpu/data"
)

// RecordDifferences lists how the fit that wrote rec differs from the fitter's with run on
// the data digests of digests (data.Digest by subject): RunDifferences, the values at which the
// parameters not fitted were held, and the subject's data, one line each; nil if there is
// none. A record of an earlier version without a data digest or a task definition is not a
// difference (Unchecked counts them).
func (f *Fitter) RecordDifferences(rec Record, run Run, digests map[string]string) []string {
	out := RunDifferences(rec, run, f.opts.Restarts, f.Fitted())
	held := f.held()
	for _, name := range slices.Sorted(maps.Keys(rec.Fixed)) {
		if now, ok := held[name]; ok && now != rec.Fixed[name] {
			out = append(out, fmt.Sprintf("%s held at %s in the file, %s now", name,
				strconv.FormatFloat(rec.Fixed[name], 'g', -1, 64), strconv.FormatFloat(now, 'g', -1, 64)))
		}
	}
	if d := data.DigestDifference(rec.Subject, rec.DataDigest, digests); d != "" {
		out = append(out, d)
	}
	return out
}

// Unchecked reports whether rec predates the records of what produced them (no data digest
// or no task definition): a resumed or merged run cannot check its data or task.
func Unchecked(rec Record) bool { return rec.DataDigest == "" || rec.TaskDigest == "" }
