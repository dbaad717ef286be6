package likelihood

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomRows returns rows of random trials of task m's state dimension: subjects distinct trial
// sets of up to trials trials of lengths lo..hi steps, each repeated reps times (as a fit's
// restarts repeat their subject's row).
func randomRows(m models.Model, subjects, reps, trials, lo, hi int, seed uint64) [][][][]float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	n := len(m.Spec().States)
	var rows [][][][]float64
	for range subjects {
		k := trials // a fit's rows: every subject's trials; else some rows have fewer
		if reps == 1 {
			k = 1 + rng.IntN(trials)
		}
		row := make([][][]float64, k)
		for r := range row {
			tr := make([][]float64, lo+1+rng.IntN(hi-lo+1))
			for t := range tr {
				tr[t] = make([]float64, n)
				for i := range tr[t] {
					tr[t][i] = rng.NormFloat64()
				}
			}
			row[r] = tr
		}
		for range reps {
			rows = append(rows, row)
		}
	}
	return rows
}

// TestPrepareLayout checks prepare's packing element by element against its definition (Data:
// states [T+1][n][P][N], shorter trials padded with their last state, missing trials with the
// row's first trial, masked), for rows of different trial counts and lengths.
func TestPrepareLayout(t *testing.T) {
	m, err := models.Get("reaching")
	require.NoError(t, err)
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	e, err := New(m, b, Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		lo, hi int
	}{{"equal lengths", 50, 50}, {"varying lengths", 20, 50}} {
		t.Run(tc.name, func(t *testing.T) {
			rows := randomRows(m, 7, 1, 6, tc.lo, tc.hi, 3)
			d, err := e.prepare(rows, 6, 0)
			require.NoError(t, err)
			n, P, N, T := len(m.Spec().States), d.Rows, d.Trials, d.Steps
			require.Equal(t, 50, T)
			for p, row := range rows {
				for r := range N {
					src, real := row[0], 0.0
					if r < len(row) {
						src, real = row[r], 1
					}
					require.Equal(t, real, d.mask[p*N+r], "mask row %d trial %d", p, r)
					for tt := range T + 1 {
						x := src[min(tt, len(src)-1)]
						for i := range n {
							if d.states[((tt*n+i)*P+p)*N+r] != x[i] {
								t.Fatalf("states[t=%d][i=%d][p=%d][r=%d] = %g, want %g", tt, i, p, r, d.states[((tt*n+i)*P+p)*N+r], x[i])
							}
						}
					}
				}
			}
			assert.Equal(t, tc.lo != tc.hi, d.Varying())
		})
	}
}

// BenchmarkPrepare packs one chunk of a GPU fit: 2,500 rows (50 subjects × 50 restarts) of 50
// reaching trials of 50 steps, a subject's rows side by side (as the fit orders them) or in
// random order.
func BenchmarkPrepare(b *testing.B) {
	m, err := models.Get("reaching")
	require.NoError(b, err)
	be, err := graph.NewBackend(graph.BackendGo)
	require.NoError(b, err)
	e, err := New(m, be, Options{})
	require.NoError(b, err)
	grouped := randomRows(m, 50, 50, 50, 50, 50, 1)
	shuffled := slices.Clone(grouped)
	rand.New(rand.NewPCG(2, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, bc := range []struct {
		name string
		rows [][][][]float64
	}{{"grouped", grouped}, {"shuffled", shuffled}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := e.prepare(bc.rows, 50, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
