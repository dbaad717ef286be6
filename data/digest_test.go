package data

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDigest(t *testing.T) {
	a := [][][]float64{{{0, 1}, {0.5, 1.5}}, {{0, 1}, {0.25, 1}, {0.5, 1}}}
	b := [][][]float64{{{0, 1}, {0.5, 1.5}}, {{0, 1}, {0.25, 1}, {0.5, 1}}}
	assert.Regexp(t, `^sha256:[0-9a-f]{16}$`, Digest(a))
	assert.Equal(t, Digest(a), Digest(b), "equal values")
	b[1][2][0] = 0.5000000000000001
	assert.NotEqual(t, Digest(a), Digest(b), "one value's last bit")
	assert.NotEqual(t, Digest(a), Digest(a[:1]), "a trial fewer")
	assert.NotEqual(t, Digest([][][]float64{{{1, 2}, {3, 4}}}), Digest([][][]float64{{{1, 2, 3, 4}}}), "the same values cut otherwise")
	s := Subject{ID: "1", Trials: []Trial{{ID: 1, States: a[0]}, {ID: 2, States: a[1]}}}
	assert.Equal(t, Digest(a), s.Digest())
}
