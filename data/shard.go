package data

import "fmt"

// States returns the states of the subject's trials as [trial][t][state], in file order, as
// the likelihood and the fits take them. The trials' slices are shared with s, not copied.
func (s Subject) States() [][][]float64 {
	out := make([][][]float64, len(s.Trials))
	for i, tr := range s.Trials {
		out[i] = tr.States
	}
	return out
}

// Digests returns Digest of each subject's trials, by subject ID.
func (s *Set) Digests() map[string]string {
	out := make(map[string]string, len(s.Subjects))
	for _, sub := range s.Subjects {
		out[sub.ID] = sub.Digest()
	}
	return out
}

// Shard returns the subjects of shard k of n, in file order: the subject at index i of
// s.Subjects (counted from 0) belongs to shard i mod n + 1, so that the n shards together hold
// every subject once, and shard 1 of 1 holds them all. The subjects are shared with s, not
// copied. Shard panics unless 1 ≤ k ≤ n.
func (s *Set) Shard(k, n int) []Subject {
	if n < 1 || k < 1 || k > n {
		panic(fmt.Sprintf("data: shard %d of %d: need 1 <= k <= n", k, n))
	}
	var out []Subject
	for i, sub := range s.Subjects {
		if i%n == k-1 {
			out = append(out, sub)
		}
	}
	return out
}
