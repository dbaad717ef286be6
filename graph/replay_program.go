// Replays as one program (NIOC_REPLAY=program; off by default): the calls of a Replay linked
// into one StableHLO module, so that an evaluation is one program call instead of one per
// stage, recursion and vector–Jacobian product (7 for a likelihood). Each call's program,
// as it was compiled, becomes a private function of the module (its functions renamed), and
// the module's main calls them in the recorded order, passing each call's results on as the
// recording says, behind optimization barriers. XLA still compiles the module as a whole, and
// its numbers differ from the calls' one by one in the last bits (1.5e-14 relative on a
// pendulum gradient), so that in this mode every evaluation's numbers are the module's: the
// module is linked and compiled (or loaded from the compiled-program cache) when the first
// evaluation of its shape has been recorded, and that evaluation runs again through it
// (likelihood's evalLooped). It is for accelerators, where every call waits for the device;
// on a CPU it saves the host's and the plugin's work around six calls, and costs a second
// compile of the same code (docs/backends.md, "Replays as one program").

package graph

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// replayProgramsDefault is the default of SetReplayPrograms: NIOC_REPLAY=program.
var replayProgramsDefault = os.Getenv(EnvReplay) == "program"

// SetReplayPrograms says whether e's replays run as one program once it has compiled (on
// backends that build StableHLO; see replay_program.go). Set it before the first evaluation:
// the programs compiled before keep no text to link.
func (e *Engine) SetReplayPrograms(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asOne = on
}

// ReplayPrograms reports whether e's replays run as one program (SetReplayPrograms) on its
// backend (one that builds StableHLO).
func (e *Engine) ReplayPrograms() bool {
	return e.replaysAsPrograms() && BuildsStableHLO(e.backend)
}

func (e *Engine) replaysAsPrograms() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.asOne && !e.noReplay
}

// linked is a Replay's calls linked into one program, once compiled.
type linked struct {
	once    sync.Once
	prog    *stageProg  // nil where linking failed (err)
	err     error       //
	outs    []tensorSrc // the module's results: the distinct tensors the replay reads
	outDims [][]int
}

// link compiles r's calls as one program, once; callers wait for the first.
func (r *Replay) link(e *Engine) {
	r.linkState.once.Do(func() {
		r.linkState.prog, r.linkState.err = r.linkProgram(e)
	})
}

// runLinked runs r as its one program on the tape's inputs, linking it first if nobody has,
// and returns the tensors it reads by source; ok is false where replays do not run as one
// program, or linking failed (LinkError).
func (tp *Tape) runLinked(r *Replay) (map[srcKey]*tensors.Tensor, bool) {
	if !tp.e.ReplayPrograms() {
		return nil, false
	}
	r.link(tp.e)
	p := r.linkState.prog
	if p == nil {
		return nil, false
	}
	out := tp.e.execute(p, tp.replayIn)
	tp.owned = append(tp.owned, out...)
	got := make(map[srcKey]*tensors.Tensor, len(out))
	for k, s := range r.linkState.outs {
		got[s.key()] = out[k]
	}
	tp.e.mu.Lock()
	tp.e.stats.ReplayPrograms++
	tp.e.mu.Unlock()
	return got, true
}

// srcKey is a tensorSrc without its dimensions, to key a map.
type srcKey struct {
	kind srcKind
	i, j int
}

func (s tensorSrc) key() srcKey { return srcKey{kind: s.kind, i: s.i, j: s.j} }

// linkProgram builds and compiles the module of r's calls.
func (r *Replay) linkProgram(e *Engine) (p *stageProg, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("linking a replay: %v", rec)
		}
	}()
	st := &r.linkState
	seen := map[srcKey]bool{}
	for _, rd := range r.reads {
		if rd.src.kind == srcNil || seen[rd.src.key()] {
			continue
		}
		seen[rd.src.key()] = true
		st.outs = append(st.outs, rd.src)
		st.outDims = append(st.outDims, r.dimsOf(rd.src))
	}
	text, err := r.moduleText(st.outDims)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	g := G.NewGraph(e.backend, "replay")
	for k, d := range r.inDims {
		G.Parameter(g, fmt.Sprintf("p%d", k), shapes.Make(dtypes.Float64, d...))
	}
	outs := make([]*G.Node, len(st.outDims))
	for k, d := range st.outDims {
		outs[k] = G.Zeros(g, shapes.Make(dtypes.Float64, d...))
	}
	// Compiled as written: each function is its program as compiled, barriers and all.
	g.CompileRewritten(func(string) (string, error) { return text, nil }, outs...)
	p = &stageProg{name: "replay", g: g, outputs: outs, took: time.Since(t0)}
	p.compileOnce.Do(func() { p.compiled.Store(true) })
	e.mu.Lock()
	e.stats.CompileTime += p.took
	e.stats.Compiles++
	e.stats.Waited += p.took
	e.mu.Unlock()
	if traceCompiles {
		fmt.Fprintf(os.Stderr, "nioc compile %-24s %9.3f s\n", p.name, p.took.Seconds())
	}
	return p, nil
}

// dimsOf returns the dimensions of the tensor at s.
func (r *Replay) dimsOf(s tensorSrc) []int {
	switch s.kind {
	case srcInput:
		return r.inDims[s.i]
	case srcOutput:
		return r.calls[s.i].outDims[s.j]
	}
	return s.dims
}

var (
	funcDef   = regexp.MustCompile(`func\.func (?:private )?@([A-Za-z0-9_$.\-]+)\(`)
	symbolRef = regexp.MustCompile(`@([A-Za-z0-9_$.\-]+)`)
)

// moduleText writes the module: each call's program as private functions, and a main of r's
// inputs that calls them in order and returns the tensors of outDims (r.linkState.outs).
func (r *Replay) moduleText(outDims [][]int) (string, error) {
	var fns []string
	m := &mlir{}
	vals := map[srcKey]string{}
	for k := range r.inDims {
		vals[srcKey{kind: srcInput, i: k}] = arg(k)
	}
	value := func(s tensorSrc) (string, error) {
		switch s.kind {
		case srcZeros:
			return m.barrier([]string{m.zeros(s.dims)}, []string{tensorType(s.dims)})[0], nil
		case srcOnes:
			return m.barrier([]string{m.fill("1.0", s.dims)}, []string{tensorType(s.dims)})[0], nil
		}
		if v, ok := vals[s.key()]; ok {
			return v, nil
		}
		return "", fmt.Errorf("no value for a tensor of kind %d", s.kind)
	}
	for i, c := range r.calls {
		if c.p.text == "" {
			return "", fmt.Errorf("%s: no program text kept", c.p.name)
		}
		fn, err := privateFunctions(c.p.text, fmt.Sprintf("r%d_", i), fmt.Sprintf("r%d_main", i))
		if err != nil {
			return "", fmt.Errorf("%s: %w", c.p.name, err)
		}
		fns = append(fns, fn)
		args, argTypes := make([]string, len(c.in)), make([]string, len(c.in))
		for k, s := range c.in {
			if s.kind == srcNil {
				return "", fmt.Errorf("%s reads no tensor at parameter %d", c.p.name, k)
			}
			if args[k], err = value(s); err != nil {
				return "", err
			}
			argTypes[k] = tensorType(r.dimsOf(s))
		}
		resTypes := make([]string, len(c.outDims))
		for j, d := range c.outDims {
			resTypes[j] = tensorType(d)
		}
		res := m.call(fmt.Sprintf("r%d_main", i), args, argTypes, resTypes)
		res = m.barrier(res, resTypes)
		for j, v := range res {
			vals[srcKey{kind: srcOutput, i: i, j: j}] = v
		}
	}
	outs := make([]string, len(r.linkState.outs))
	for k, s := range r.linkState.outs {
		v, err := value(s)
		if err != nil {
			return "", err
		}
		outs[k] = v
	}
	return m.module("replay", fns, r.inDims, outs, outDims), nil
}

// privateFunctions returns the functions of a program's module text, each renamed with
// prefix, main as mainName, all private, main returning with func.return.
func privateFunctions(program, prefix, mainName string) (string, error) {
	start := strings.Index(program, "func.func ")
	end := strings.LastIndex(program, "}")
	if start < 0 || end < start {
		return "", fmt.Errorf("unexpected StableHLO program:\n%.400s", program)
	}
	body := program[start:end]
	names := map[string]bool{}
	for _, d := range funcDef.FindAllStringSubmatch(body, -1) {
		names[d[1]] = true
	}
	if !names["main"] {
		return "", fmt.Errorf("no main function in:\n%.400s", program)
	}
	body = symbolRef.ReplaceAllStringFunc(body, func(ref string) string {
		switch {
		case ref == "@main":
			return "@" + mainName
		case names[ref[1:]]:
			return "@" + prefix + ref[1:]
		}
		return ref
	})
	mainDef := "func.func @" + mainName + "("
	i := strings.Index(body, mainDef)
	if i < 0 {
		return "", fmt.Errorf("main is not public in:\n%.400s", program)
	}
	body = body[:i] + "func.func private @" + mainName + "(" + body[i+len(mainDef):]
	// main's terminator: the last return before the next function (or the end).
	mainEnd := len(body)
	if j := strings.Index(body[i+1:], "func.func "); j >= 0 {
		mainEnd = i + 1 + j
	}
	if !strings.Contains(body[i:mainEnd], "func.return") {
		k := strings.LastIndex(body[i:mainEnd], "\"stablehlo.return\"(")
		if k < 0 {
			return "", fmt.Errorf("no return in main of:\n%.400s", program)
		}
		k += i
		body = body[:k] + "\"func.return\"(" + body[k+len("\"stablehlo.return\"("):]
	}
	return "  " + strings.TrimRight(body, " \n") + "\n", nil
}

// barrier passes xs (of types) through one optimization barrier.
func (m *mlir) barrier(xs, types []string) []string {
	if len(xs) == 0 {
		return nil
	}
	y := m.name()
	t := strings.Join(types, ", ")
	m.line(`%s:%d = "stablehlo.optimization_barrier"(%s) : (%s) -> (%s)`, y, len(xs), strings.Join(xs, ", "), t, t)
	return results(y, len(xs))
}

// LinkError returns why some replay of e could not be linked into one program (its calls
// then run one by one), nil if none failed.
func (e *Engine) LinkError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.recorded {
		if r == nil {
			continue
		}
		if r.linkState.prog == nil && r.linkState.err != nil {
			return r.linkState.err
		}
	}
	return nil
}
