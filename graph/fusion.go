// How XLA fuses a program's operations (EnvXLAFusion), and the rewrite that lets it fuse the
// scalarized graphs of this package without recomputing what they share (AddFusionBarriers).

package graph

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/backends"
	G "github.com/gomlx/gomlx/pkg/core/graph"
)

// Fusion modes of XLA backends (EnvXLAFusion).
const (
	// FusionBarriers lets XLA fuse operations, with an optimization barrier after every value
	// that two or more operations read (AddFusionBarriers): fusions are then trees, and no value
	// is computed again inside each fusion that reads it. The default on the CPU plugin.
	FusionBarriers = "barriers"
	// FusionXLA leaves fusion to XLA's own passes. The default on GPUs.
	FusionXLA = "xla"
	// FusionOff turns XLA's fusion pass off (CPUFlags, when XLA_FLAGS is unset): one kernel per
	// operation. The CPU plugin's default until 2026-11-27.
	FusionOff = "off"
)

// fusionModes holds each XLA backend's fusion mode (backends.Backend → string).
var fusionModes sync.Map

// fusionMode returns the fusion mode $NIOC_XLA_FUSION asks for, or the default of a CPU
// plugin (cpu) or another one.
func fusionMode(cpu bool) (string, error) {
	switch m := os.Getenv(EnvXLAFusion); m {
	case "":
		if cpu {
			return FusionBarriers, nil
		}
		return FusionXLA, nil
	case FusionBarriers, FusionXLA, FusionOff:
		return m, nil
	default:
		return "", fmt.Errorf("%s=%q: use %s, %s or %s", EnvXLAFusion, m, FusionBarriers, FusionXLA, FusionOff)
	}
}

// FusionModeOf returns the fusion mode of backend b: one of the Fusion constants for an XLA
// backend, "" for another.
func FusionModeOf(b backends.Backend) string {
	m, _ := fusionModes.Load(b)
	s, _ := m.(string)
	return s
}

// compileGraph compiles g's computation of outputs on backend b, its program text first passed
// through rewrite if not nil, then through AddFusionBarriers where b's fusion mode asks for it,
// then through ExpandSinCos where b takes its own sines and cosines (usesOwnSinCos).
//
// It returns the program text compiled where b builds StableHLO, "" otherwise.
func compileGraph(b backends.Backend, g *G.Graph, rewrite rewriteFunc, outputs ...*G.Node) string {
	then := func(first, next rewriteFunc) rewriteFunc {
		if first == nil {
			return next
		}
		return func(text string) (string, error) {
			text, err := first(text)
			if err != nil {
				return "", err
			}
			return next(text)
		}
	}
	if FusionModeOf(b) == FusionBarriers {
		rewrite = then(rewrite, func(text string) (string, error) {
			out, err := AddFusionBarriers(text)
			if err != nil {
				return "", fmt.Errorf("%w (%s=%s compiles without barriers)", err, EnvXLAFusion, FusionOff)
			}
			return out, nil
		})
	}
	if usesOwnSinCos(b) {
		rewrite = then(rewrite, func(text string) (string, error) {
			out, err := ExpandSinCos(text)
			if err != nil {
				return "", fmt.Errorf("%w (%s=%s leaves them to XLA)", err, EnvXLASinCos, SinCosLibm)
			}
			return out, nil
		})
	}
	if !g.HasStableHLO() {
		g.Compile(outputs...)
		return ""
	}
	var text string
	g.CompileRewritten(then(rewrite, func(program string) (string, error) {
		text = program
		return program, nil
	}), outputs...)
	return text
}

var (
	ssaName   = regexp.MustCompile(`%[A-Za-z0-9_$.\-]+`)
	ssaDefine = regexp.MustCompile(`^\s*(%[A-Za-z0-9_$.\-]+) = "([A-Za-z0-9_.]+)"\(`)
)

// barrierPrefix starts the names AddFusionBarriers gives the barriers' results; no program that
// GoMLX or mlir.go writes uses it.
const barrierPrefix = "%fb_"

// AddFusionBarriers returns the StableHLO program text (MLIR's generic form, one operation a
// line, as GoMLX and mlir.go write it) with a "stablehlo.optimization_barrier" after each value
// that two or more uses read, those uses then reading the barrier's result instead. It
// considers the values defined at the top level of each function by single-result operations
// other than constants, iotas, broadcasts and reshapes (cheap to recompute); the values
// computed are unchanged.
//
// Why: the step programs of this package are scalarized (each entry of a small matrix its own
// [batch] array), so nearly every value feeds many others, and XLA's fusion copies a cheap
// producer into every fusion that reads it: the belief-tracking step's VJP of reaching grows
// from 2,654 multiplies to 44,567, and ran 3.2 times slower fused than unfused. A barrier
// cannot be fused through, so the fusions become trees of values read once, and a program
// runs a kernel per tree instead of a kernel per operation (the same VJP: 4,461 kernels a step
// unfused, 1,134 fused between barriers). docs/backends.md, "Fusion with barriers", has the measurements.
func AddFusionBarriers(text string) (string, error) {
	if strings.Contains(text, barrierPrefix) {
		return "", fmt.Errorf("graph: AddFusionBarriers: the program already has names starting %s", barrierPrefix)
	}
	lines := strings.Split(text, "\n")
	out := make([]string, 0, len(lines)+len(lines)/4)
	for i := 0; i < len(lines); {
		if !strings.Contains(lines[i], "func.func ") {
			out = append(out, lines[i])
			i++
			continue
		}
		// A function: its body runs until its braces close.
		depth := braces(lines[i])
		j := i + 1
		for ; j < len(lines) && depth > 0; j++ {
			depth += braces(lines[j])
		}
		if depth != 0 {
			return "", fmt.Errorf("graph: AddFusionBarriers: unbalanced braces in the function at line %d", i+1)
		}
		out = append(out, lines[i])
		out = append(out, barrierFunction(lines[i+1:j-1])...)
		out = append(out, lines[j-1])
		i = j
	}
	return strings.Join(out, "\n"), nil
}

// braces returns the number of '{' minus the number of '}' on line.
func braces(line string) int { return strings.Count(line, "{") - strings.Count(line, "}") }

// barrierFunction returns the lines of a function's body with the barriers of AddFusionBarriers.
func barrierFunction(body []string) []string {
	uses := map[string]int{}
	defined := map[string]int{}
	for _, l := range body {
		names := ssaName.FindAllString(l, -1)
		if m := ssaDefine.FindStringSubmatch(l); m != nil {
			defined[m[1]]++
			names = names[1:]
		}
		for _, n := range names {
			uses[n]++
		}
	}
	renamed := map[string]string{}
	out := make([]string, 0, len(body)+len(body)/4)
	depth := 0
	for _, l := range body {
		top := depth == 0
		depth += braces(l)
		m := ssaDefine.FindStringSubmatch(l)
		out = append(out, ssaName.ReplaceAllStringFunc(l, func(n string) string {
			if r := renamed[n]; r != "" {
				return r
			}
			return n
		}))
		if m == nil || !top || braces(l) != 0 || uses[m[1]] < 2 || defined[m[1]] > 1 {
			continue
		}
		switch m[2] {
		case "stablehlo.constant", "stablehlo.iota", "stablehlo.broadcast_in_dim", "stablehlo.reshape":
			continue
		}
		k := strings.LastIndex(l, "-> ")
		if k < 0 {
			continue
		}
		typ := strings.TrimSpace(l[k+len("-> "):])
		if !strings.HasPrefix(typ, "tensor<") || !strings.HasSuffix(typ, ">") || strings.Contains(typ, ",") {
			continue
		}
		b := barrierPrefix + m[1][1:]
		out = append(out, fmt.Sprintf(`    %s = "stablehlo.optimization_barrier"(%s) : (%s) -> %s`, b, m[1], typ, typ))
		renamed[m[1]] = b
	}
	return out
}
