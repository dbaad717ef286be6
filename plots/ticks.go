package plots

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// Tick marks of the figures' axes. Every ticker here labels at least two ticks of any range it
// is given (one labelled tick does not say how far the axis reaches), and labels each with
// the shortest decimal that is its value: 0, 25, 50 rather than 0.00, 25.00, 50.00, and
// 1.15e-3 next to 1.1e-3 rather than two ticks labelled 1.1e-3.

// readableTicks mark a linear axis at round numbers (gonum's choice of values), labelled
// plainly (-262500, not -262500.00; 1e-05 only for numbers below 10⁻³ or from 10⁶ on).
type readableTicks struct{}

// Ticks implements plot.Ticker.
func (readableTicks) Ticks(min, max float64) []plot.Tick {
	return relabel(thinLabels(plot.DefaultTicks{}.Ticks(min, max), maxLabels), false)
}

// maxLabels is the most labels an axis gets: more run into each other on a corner plot's
// small panels.
const maxLabels = 4

// thinLabels keeps the label of every k-th labelled tick, the first included, k the least
// that leaves at most most labels; the others stay as unlabelled ticks.
func thinLabels(ts []plot.Tick, most int) []plot.Tick {
	n := labelled(ts)
	if n <= most {
		return ts
	}
	k := (n + most - 1) / most
	i := 0
	for j := range ts {
		if ts[j].Label == "" {
			continue
		}
		if i%k != 0 {
			ts[j].Label = ""
		}
		i++
	}
	return ts
}

// integerTicks mark an axis of counts (time steps, draws) at integers only, labelled without
// decimals.
type integerTicks struct{}

// Ticks implements plot.Ticker.
func (integerTicks) Ticks(min, max float64) []plot.Tick {
	ts := readableTicks{}.Ticks(min, max)
	var out []plot.Tick
	for _, t := range ts {
		if t.Value == math.Round(t.Value) {
			out = append(out, t)
		}
	}
	if labelled(out) >= 2 {
		return out
	}
	// Fewer than two labelled integers among gonum's ticks (a short axis, ticks at halves):
	// every integer in range, labelled.
	out = out[:0]
	for v := math.Ceil(min); v <= max; v++ {
		out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return out
}

// sparseLogTicks mark a log axis: every power of ten in range labelled (at most four of them,
// so that the labels of an axis spanning many decades do not run into each other) and the
// multiples 2–9 as minor ticks. (plot.LogTicks misses the decades below 1 of ranges like
// [0.25, 2.5].) Where fewer than two powers of ten fall in the range, the 2s and 5s are
// labelled as well, or the 3s where that makes more than three labels; where that labels fewer
// than two ticks or ticks that span less than a third of the axis (a range of less than a
// decade: the posterior of a well-determined parameter), round numbers in natural units are.
type sparseLogTicks struct{}

// Ticks implements plot.Ticker.
func (sparseLogTicks) Ticks(min, max float64) []plot.Tick {
	return logTicks(min, max, false)
}

// compactLogTicks are sparseLogTicks labelled compactly (2e-4 rather than 0.0002), so that
// labels of neighbouring ticks on the small panels of a corner plot do not run into each
// other.
type compactLogTicks struct{}

// Ticks implements plot.Ticker.
func (compactLogTicks) Ticks(min, max float64) []plot.Tick {
	return logTicks(min, max, true)
}

// logTicks returns the ticks of sparseLogTicks, labelled compactly if compact.
func logTicks(min, max float64, compact bool) []plot.Tick {
	if !(min > 0) || !(max > min) {
		return nil
	}
	in := func(v float64) bool { return v >= min*(1-1e-9) && v <= max*(1+1e-9) }
	var ts []plot.Tick
	var majors []int
	for k := math.Floor(math.Log10(min)); k <= math.Ceil(math.Log10(max)); k++ {
		p := math.Pow(10, k)
		for m := 1.0; m <= 9; m++ {
			if v := m * p; in(v) {
				if m == 1 {
					majors = append(majors, len(ts))
				}
				ts = append(ts, plot.Tick{Value: v})
			}
		}
	}
	if len(majors) >= 2 {
		step := (len(majors) + 3) / 4
		for k, i := range majors {
			if k%step == 0 {
				ts[i].Label = "x"
			}
		}
		return relabel(ts, compact)
	}
	// Fewer than two powers of ten: the 2s and 5s labelled too, or, where that labels more
	// than three ticks (which run into each other on a corner plot's small panels), the 3s.
	for _, mults := range [][]float64{{1, 2, 5}, {1, 3}} {
		for i, t := range ts {
			ts[i].Label = ""
			m := t.Value / math.Pow(10, math.Floor(math.Log10(t.Value)+1e-9))
			for _, k := range mults {
				if math.Abs(m-k) < 1e-6 {
					ts[i].Label = "x"
				}
			}
		}
		if n := labelled(ts); n >= 2 && n <= 3 && logSpan(ts) >= math.Log10(max/min)/3 {
			return relabel(ts, compact)
		}
	}
	// A narrow range: round numbers in natural units, as on a linear axis (on a log axis of
	// less than a decade they are spaced unevenly, but readably).
	return relabel(thinLabels(plot.DefaultTicks{}.Ticks(min, max), maxLabels), compact)
}

// logSpan returns log10 of the ratio of the largest to the smallest labelled tick.
func logSpan(ts []plot.Tick) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, t := range ts {
		if t.Label != "" {
			lo, hi = math.Min(lo, t.Value), math.Max(hi, t.Value)
		}
	}
	return math.Log10(hi / lo)
}

// labelled counts the labelled ticks.
func labelled(ts []plot.Tick) int {
	n := 0
	for _, t := range ts {
		if t.Label != "" {
			n++
		}
	}
	return n
}

// relabel replaces the label of every labelled tick by tickLabel of its value, with the fewest
// digits that give the value to a millionth of the spacing of the labelled ticks.
func relabel(ts []plot.Tick, compact bool) []plot.Tick {
	var vals []float64
	for _, t := range ts {
		if t.Label != "" {
			vals = append(vals, t.Value)
		}
	}
	spacing := math.Inf(1)
	for i := 1; i < len(vals); i++ {
		spacing = math.Min(spacing, math.Abs(vals[i]-vals[i-1]))
	}
	if math.IsInf(spacing, 1) || spacing == 0 {
		spacing = math.Max(math.Abs(vals0(vals)), 1e-300)
	}
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = tickLabel(ts[i].Value, spacing*1e-6, compact)
		}
	}
	return ts
}

func vals0(v []float64) float64 {
	if len(v) == 0 {
		return 1
	}
	return v[0]
}

// tickLabel formats v with the fewest digits that give it to within tol: plainly (0.25, 1500),
// with an exponent below 10⁻³ or from 10⁶ on (2.5e-4, 1e6); compact switches to the exponent
// below 0.01 and from 10⁴ on, and writes it without a sign or leading zeros (2e-4, not 2e-04).
func tickLabel(v, tol float64, compact bool) string {
	if math.Abs(v) <= tol {
		return "0"
	}
	lo, hi := 1e-3, 1e6
	if compact {
		lo, hi = 0.01, 1e4
	}
	a := math.Abs(v)
	if a >= lo && a < hi {
		for prec := 0; prec < 17; prec++ {
			s := strconv.FormatFloat(v, 'f', prec, 64)
			if back, _ := strconv.ParseFloat(s, 64); math.Abs(back-v) <= tol {
				return s
			}
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	e := math.Floor(math.Log10(a) + 1e-9)
	scale := math.Pow(10, e)
	for prec := 0; prec < 17; prec++ {
		m := strconv.FormatFloat(v/scale, 'f', prec, 64)
		mv, _ := strconv.ParseFloat(m, 64)
		if math.Abs(mv*scale-v) <= tol {
			if strings.Contains(m, ".") {
				m = strings.TrimRight(strings.TrimRight(m, "0"), ".")
			}
			return m + "e" + strconv.Itoa(int(e))
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// compactLabel formats a positive tick value compactly, to three significant digits.
func compactLabel(v float64) string {
	return tickLabel(v, math.Abs(v)*5e-4, true)
}
