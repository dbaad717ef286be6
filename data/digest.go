package data

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
)

// Digest returns "sha256:" and the first 16 hex digits of the SHA-256 of one subject's
// trials (each a list of states, each a list of values in the task's state order): the
// number of trials, each one's length and every value's bits, in order. How the file wrote
// the numbers, its other subjects and its column order do not change it; any value does.
// Results record it so that a resumed or merged run can tell the data it was fitted to.
func Digest(trials [][][]float64) string {
	h := sha256.New()
	var b [8]byte
	word := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	word(uint64(len(trials)))
	for _, tr := range trials {
		word(uint64(len(tr)))
		for _, x := range tr {
			word(uint64(len(x)))
			for _, v := range x {
				word(math.Float64bits(v))
			}
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)[:8])
}

// Digest returns Digest of the subject's trials.
func (s Subject) Digest() string {
	trials := make([][][]float64, len(s.Trials))
	for i, t := range s.Trials {
		trials[i] = t.States
	}
	return Digest(trials)
}

// DigestDifference says how the data that a result records for subject (recorded, a Digest;
// "" for a result written before results recorded it) differ from the data now (digests, by
// subject): "" when they are the same or cannot be compared, else one line for a user.
func DigestDifference(subject, recorded string, digests map[string]string) string {
	if recorded == "" {
		return ""
	}
	switch now, ok := digests[subject]; {
	case !ok:
		return fmt.Sprintf("subject %s is not in the data now", subject)
	case now != recorded:
		return fmt.Sprintf("subject %s's data: %s in the file, %s now", subject, recorded, now)
	}
	return ""
}
