package data

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestShard(t *testing.T) {
	set := &Set{}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		set.Subjects = append(set.Subjects, Subject{ID: id})
	}
	ids := func(subs []Subject) []string {
		var out []string
		for _, s := range subs {
			out = append(out, s.ID)
		}
		return out
	}
	for _, c := range []struct {
		k, n int
		want []string
	}{
		{1, 1, []string{"a", "b", "c", "d", "e"}},
		{1, 2, []string{"a", "c", "e"}},
		{2, 2, []string{"b", "d"}},
		{3, 3, []string{"c"}},
		{5, 5, []string{"e"}},
		{6, 6, nil},
	} {
		assert.Equal(t, c.want, ids(set.Shard(c.k, c.n)), "shard %d/%d", c.k, c.n)
	}
	assert.Panics(t, func() { set.Shard(0, 2) })
	assert.Panics(t, func() { set.Shard(3, 2) })
}

func TestStatesAndDigests(t *testing.T) {
	a := [][]float64{{0, 1}, {0.5, 1.5}}
	b := [][]float64{{1, 2}, {3, 4}, {5, 6}}
	set := &Set{Subjects: []Subject{{ID: "x", Trials: []Trial{{ID: 3, States: a}, {ID: 7, States: b}}}, {ID: "y"}}}
	assert.Equal(t, [][][]float64{a, b}, set.Subjects[0].States())
	assert.Empty(t, set.Subjects[1].States())
	assert.Equal(t, map[string]string{"x": Digest([][][]float64{a, b}), "y": Digest(nil)}, set.Digests())
}
