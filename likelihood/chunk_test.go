package likelihood

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestChunkRows(t *testing.T) {
	tests := []struct {
		name                      string
		rows, most, Most, workers int
		slow                      bool
		want                      int
	}{
		{"10 restarts start: two chunks of 5", 10, 50, 10, 2, false, 5},
		{"7 rows left: still the top rung", 7, 50, 10, 2, false, 5},
		{"3 rows left: one padded chunk beats two rounds", 3, 50, 10, 2, false, 5},
		{"2 rows left: one row per core", 2, 50, 10, 2, false, 1},
		{"1 row left", 1, 50, 10, 2, false, 1},
		{"50 restarts: 25, then 6, then 1", 50, 50, 50, 2, false, 25},
		{"12 of 50 restarts left", 12, 50, 50, 2, false, 6},
		{"13 of 50 restarts left", 13, 50, 50, 2, false, 25},
		{"many subjects: capped by MaxBatch", 5000, 50, 5000, 2, false, 50},
		{"many subjects, 90 left", 90, 50, 5000, 2, false, 50},
		{"many subjects, 24 left", 24, 50, 5000, 2, false, 12},
		{"unknown Most: the ladder from MaxBatch", 10, 50, 0, 2, false, 12},
		{"one core", 10, 50, 10, 1, false, 10},
		{"one core, 2 left", 2, 50, 10, 1, false, 2},
		{"one core, 1 left", 1, 50, 10, 1, false, 1},
		{"xla: one size", 3, 50, 10, 2, true, 10},
		{"xla: capped", 3, 50, 5000, 2, true, 50},
	}
	for _, tc := range tests {
		got := chunkRows(tc.rows, tc.most, tc.Most, tc.workers, tc.slow)
		assert.Equal(t, tc.want, got, tc.name)
	}
	// The Go backend's sizes over a whole fit form a short ladder.
	sizes := map[int]bool{}
	for rows := 50; rows >= 1; rows-- {
		sizes[chunkRows(rows, 50, 50, 2, false)] = true
	}
	assert.Equal(t, map[int]bool{25: true, 6: true, 1: true}, sizes)
}
