// The sine and cosine of XLA's CPU plugin, written out as element-wise operations
// (EnvXLASinCos, ExpandSinCos).

package graph

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/backends"
)

// Sine and cosine implementations of XLA's CPU plugin (EnvXLASinCos).
const (
	// SinCosOwn writes every sine and cosine of a program out as element-wise operations
	// (ExpandSinCos), which XLA fuses into its kernels and runs a vector of elements at a
	// time. The CPU plugin's default, with fusion on.
	SinCosOwn = "own"
	// SinCosLibm leaves them to XLA, whose CPU kernels call the C library's scalar sin and cos
	// an element at a time. The default of other plugins and of FusionOff.
	SinCosLibm = "libm"
)

// ExpandSinCosLimit is the largest |x| whose sine and cosine ExpandSinCos computes: 2³² · π/2,
// where the quadrant k = round(x · 2/π) has at most 32 bits and its products with the 21-bit
// parts of π/2 are exact. Beyond it they are NaN.
const ExpandSinCosLimit = (1 << 32) * math.Pi / 2

// halfPiParts are the parts of π/2 that ExpandSinCos subtracts: 21 bits each, 105 bits in
// all, so that k·part is exact for |k| < 2³².
var halfPiParts = [...]float64{
	0x1.921fb00000000p+0, 0x1.5110b00000000p-22, 0x1.1846900000000p-44,
	0x1.1319800000000p-65, 0x1.45c0600000000p-86,
}

// fdlibm's kernel polynomials on [−π/4, π/4] (k_sin.c, k_cos.c): sin r = r + r³·S(r²) and
// cos r = 1 − r²/2 + r⁴·C(r²), each within an ulp.
var (
	sinPoly = [...]float64{-1.66666666666666324348e-01, 8.33333333332248946124e-03,
		-1.98412698298579493134e-04, 2.75573137070700676789e-06, -2.50507602534068634195e-08,
		1.58969099521155010221e-10}
	cosPoly = [...]float64{4.16666666666666019037e-02, -1.38888888888741095749e-03,
		2.48015872894767294178e-05, -2.75573143513906633035e-07, 2.08757232129817482790e-09,
		-1.13596475577881948265e-11}
)

// sinCosLine matches a float64 sine or cosine of StableHLO's generic form, as GoMLX writes it:
// indentation, result, operation, operand, and the dimensions of its type ("250x50x" or "").
var sinCosLine = regexp.MustCompile(`^(\s*)(%[A-Za-z0-9_$.\-]+) = "stablehlo\.(sine|cosine)"\((%[A-Za-z0-9_$.\-]+)\) : \(tensor<((?:\d+x)*)f64>\) -> tensor<((?:\d+x)*)f64>$`)

// sinCosPrefix starts the names of the values ExpandSinCos defines; no program that GoMLX,
// mlir.go or AddFusionBarriers writes uses it.
const sinCosPrefix = "%nioc_sc"

// ExpandSinCos returns the StableHLO program text (MLIR's generic form, one operation a line,
// as GoMLX writes it) with every float64 "stablehlo.sine" and "stablehlo.cosine" replaced by
// element-wise operations that compute the same to within 2.3e-16 up to |x| = 1e9
// (TestExpandSinCos): x is reduced to r = x − k·π/2 ∈ [−π/4, π/4] (Cody and Waite's reduction,
// π/2 in five exact parts), sin r and cos r come from fdlibm's kernel polynomials, and the
// quadrant k mod 4 picks and signs them; |x| beyond ExpandSinCosLimit, ±Inf and NaN give NaN.
//
// Why: XLA's CPU kernels call the C library's sin and cos for each element, a fifth of a warm
// pendulum fit's time on the CPU plugin, where the operations written out fuse into the kernels
// around them and run a vector of elements at a time (docs/backends.md, "Sine and cosine on
// XLA's CPU plugin"). Run it after AddFusionBarriers: the values it defines are read several
// times each and would otherwise be split into a kernel each. A sine and a cosine of the same
// value repeat the same reduction, which XLA's common-subexpression pass computes once.
func ExpandSinCos(text string) (string, error) {
	if strings.Contains(text, sinCosPrefix) {
		return "", fmt.Errorf("graph: ExpandSinCos: the program already has names starting %s", sinCosPrefix)
	}
	lines := strings.Split(text, "\n")
	out := make([]string, 0, len(lines))
	n := 0
	for _, l := range lines {
		m := sinCosLine.FindStringSubmatch(l)
		if m == nil || m[5] != m[6] {
			out = append(out, l)
			continue
		}
		n++
		w := &hloWriter{indent: m[1], prefix: fmt.Sprintf("%s%d_", sinCosPrefix, n),
			typ: "tensor<" + m[5] + "f64>", bools: "tensor<" + m[5] + "i1>", consts: map[float64]string{}}
		w.sinCos(m[2], m[3] == "sine", m[4])
		out = append(out, w.lines...)
	}
	return strings.Join(out, "\n"), nil
}

// hloWriter writes the lines of one expansion: element-wise operations on values of one type.
type hloWriter struct {
	indent, prefix, typ, bools string
	lines                      []string
	n                          int
	consts                     map[float64]string
}

func (w *hloWriter) name() string {
	w.n++
	return w.prefix + strconv.Itoa(w.n)
}

// op writes `result = "stablehlo.OP"(args) : (types) -> type` and returns result, a new name
// unless result is given. Operands are of the writer's float type unless boolArgs.
func (w *hloWriter) op(result, op string, resultBool, boolArgs bool, args ...string) string {
	if result == "" {
		result = w.name()
	}
	in := w.typ
	if boolArgs {
		in = w.bools
	}
	types := strings.TrimSuffix(strings.Repeat(in+", ", len(args)), ", ")
	outT := w.typ
	if resultBool {
		outT = w.bools
	}
	w.lines = append(w.lines, fmt.Sprintf(`%s%s = "stablehlo.%s"(%s) : (%s) -> %s`, w.indent, result, op, strings.Join(args, ", "), types, outT))
	return result
}

func (w *hloWriter) mul(a, b string) string { return w.op("", "multiply", false, false, a, b) }
func (w *hloWriter) add(a, b string) string { return w.op("", "add", false, false, a, b) }
func (w *hloWriter) sub(a, b string) string { return w.op("", "subtract", false, false, a, b) }

// c returns a constant of the writer's type, every element v.
func (w *hloWriter) c(v float64) string {
	if s, ok := w.consts[v]; ok {
		return s
	}
	lit := strconv.FormatFloat(v, 'e', -1, 64) // shortest that reads back exactly
	if !strings.Contains(lit, ".") {           // MLIR's float literals need a point
		lit = strings.Replace(lit, "e", ".0e", 1)
	}
	if math.IsNaN(v) {
		lit = "0x7FF8000000000000"
	}
	s := w.name()
	w.lines = append(w.lines, fmt.Sprintf(`%s%s = "stablehlo.constant"() { value = dense<%s> : %s } : () -> %s`, w.indent, s, lit, w.typ, w.typ))
	w.consts[v] = s
	return s
}

// compare returns a < b, a ≤ b, … (dir: LT, LE, EQ, GE, GT) of floats.
func (w *hloWriter) compare(dir, a, b string) string {
	s := w.name()
	w.lines = append(w.lines, fmt.Sprintf(`%s%s = "stablehlo.compare"(%s, %s) { compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction %s> } : (%s, %s) -> %s`,
		w.indent, s, a, b, dir, w.typ, w.typ, w.bools))
	return s
}

// sel returns cond ? a : b, element-wise, as result if it is given.
func (w *hloWriter) sel(result, cond, a, b string) string {
	if result == "" {
		result = w.name()
	}
	w.lines = append(w.lines, fmt.Sprintf(`%s%s = "stablehlo.select"(%s, %s, %s) : (%s, %s, %s) -> %s`, w.indent, result, cond, a, b, w.bools, w.typ, w.typ, w.typ))
	return result
}

// horner returns p(z) = coef[0] + z·(coef[1] + z·(…)).
func (w *hloWriter) horner(z string, coef []float64) string {
	p := w.c(coef[len(coef)-1])
	for i := len(coef) - 2; i >= 0; i-- {
		p = w.add(w.c(coef[i]), w.mul(z, p))
	}
	return p
}

// sinCos writes the lines that define result as sin x (sine) or cos x.
func (w *hloWriter) sinCos(result string, sine bool, x string) {
	k := w.op("", "round_nearest_even", false, false, w.mul(x, w.c(2/math.Pi)))
	r := x
	for _, p := range halfPiParts {
		r = w.sub(r, w.mul(k, w.c(p)))
	}
	z := w.mul(r, r)
	sinR := w.add(r, w.mul(w.mul(z, r), w.horner(z, sinPoly[:])))
	// cos r = w + ((1 − w) − z/2 + z²·C(z)) with w = 1 − z/2, as in k_cos.c.
	half := w.mul(z, w.c(0.5))
	one := w.sub(w.c(1), half)
	cosR := w.add(one, w.add(w.sub(w.sub(w.c(1), one), half), w.mul(w.mul(z, z), w.horner(z, cosPoly[:]))))

	q := w.sub(k, w.mul(w.c(4), w.op("", "floor", false, false, w.mul(k, w.c(0.25))))) // k mod 4
	odd := w.compare("EQ", w.sub(q, w.mul(w.c(2), w.op("", "floor", false, false, w.mul(q, w.c(0.5))))), w.c(1))
	var base, neg string
	if sine {
		base = w.sel("", odd, cosR, sinR)
		neg = w.compare("GE", q, w.c(2)) // q = 2, 3
	} else {
		base = w.sel("", odd, sinR, cosR)
		neg = w.op("", "and", true, true, w.compare("GE", q, w.c(1)), w.compare("LE", q, w.c(2))) // q = 1, 2
	}
	v := w.sel("", neg, w.op("", "negate", false, false, base), base)
	inside := w.compare("LE", w.op("", "abs", false, false, x), w.c(ExpandSinCosLimit)) // false for NaN too
	w.sel(result, inside, v, w.c(math.NaN()))
}

// usesOwnSinCos reports whether programs compiled for backend b have their sines and cosines
// written out (ExpandSinCos): on XLA's CPU plugin with fusion on, unless EnvXLASinCos says libm.
func usesOwnSinCos(b backends.Backend) bool {
	if !CompilesSlowly(b) || !RunsOnHost(b) || FusionModeOf(b) == FusionOff {
		return false
	}
	m, _ := sinCosMode()
	return m == SinCosOwn
}

// sinCosMode returns the mode EnvXLASinCos asks for, SinCosOwn where it is unset, and an error
// where it names none (NewBackend reports it when it loads a plugin).
func sinCosMode() (string, error) {
	switch m := os.Getenv(EnvXLASinCos); m {
	case "", SinCosOwn:
		return SinCosOwn, nil
	case SinCosLibm:
		return SinCosLibm, nil
	default:
		return SinCosOwn, fmt.Errorf("%s=%q: use %s or %s", EnvXLASinCos, m, SinCosOwn, SinCosLibm)
	}
}
