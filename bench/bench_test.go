package bench

import (
	"testing"

	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/internal/xlaenv"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// TestMain runs the benchmarks with XLA's compiled-program cache off unless NIOC_XLA_CACHE is set.
func TestMain(m *testing.M) { xlaenv.TestMain(m) }

// BenchmarkEval measures one batched evaluation (value and gradient) of 50 parameter vectors
// against 50 trials, by task.
func BenchmarkEval(b *testing.B) {
	for _, name := range []string{"pendulum", "reaching", "navigation", "cartpole", "lightdark"} {
		for _, rows := range []int{1, 50} {
			b.Run(name+"/R="+itoa(rows), func(b *testing.B) {
				be, err := graph.NewBackend("")
				if err != nil {
					b.Fatal(err)
				}
				m, _ := models.Get(name)
				ds, err := Dataset(m, be, 1, 50, 1)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := TimeEval(m, be, ds[0], rows, 1); err != nil { // build once
					b.Fatal(err)
				}
				b.ResetTimer()
				et, err := TimeEval(m, be, ds[0], rows, b.N)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(et.EvalsPerSec, "vectors/s")
			})
		}
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
