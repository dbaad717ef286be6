// Replays: an evaluation whose structure its inputs' shapes fix (a likelihood's: the same
// stages, recursions and vector–Jacobian products every time) makes the same program calls
// every time, with the same programs reading the same kinds of tensors: its inputs, the outputs
// of earlier calls, zeros and ones. A tape that records (Tape.Record) notes those calls, and
// once its evaluation is done (Tape.SaveRecording) the engine keeps them as a Replay of its
// key. A later evaluation of the key then runs the calls alone (Engine.ReplayTape,
// Tape.Replay): none of the tape's bookkeeping (argument plans, program keys, fused calls,
// cotangent maps), which on XLA's CPU plugin was a fifth of a small evaluation's time
// (docs/backends.md, "Replays"). Values and gradients are those of the recorded path to the
// last bit: the same programs run on the same tensors (TestReplayEqualsTape).
//
// A recording is kept only if every tensor a call reads can be found again: an input the tape
// was given before its first stage ran (Input, Series, Borrow, BorrowSeries, in that order),
// the output of an earlier call, or zeros or ones the tape made; and only if no stage ran
// after a value was read (Fetch, Grad), since what the caller did next may have depended on
// the numbers. Anything else (tangents of a forward tape, an input given between stages, a
// read in the middle) marks the key as not replayable, and its evaluations run on tapes as
// before.

package graph

import (
	"fmt"
	"os"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// EnvReplay is the environment variable that turns replays off ("off"), for measurements, or
// runs each as one program ("program": replay_program.go).
const EnvReplay = "NIOC_REPLAY"

// replaysDefault is the default of SetReplays.
var replaysDefault = os.Getenv(EnvReplay) != "off"

// SetReplays says whether e keeps recorded evaluations and replays them (Tape.Record,
// ReplayTape); it is on unless NIOC_REPLAY=off. Values and gradients do not depend on it. Set
// it before the first evaluation.
func (e *Engine) SetReplays(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.noReplay = !on
}

func (e *Engine) replays() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.noReplay
}

// tensorSrc says where a replayed call finds one of its tensors.
type tensorSrc struct {
	kind srcKind
	i, j int   // srcInput: input i; srcOutput: output j of call i
	dims []int // srcZeros, srcOnes: the tensor's dimensions
}

type srcKind uint8

const (
	srcNil srcKind = iota // no tensor (a parameter a program does not read)
	srcInput
	srcOutput
	srcZeros
	srcOnes
)

// replayCall is one program call of a Replay.
type replayCall struct {
	p       *stageProg
	in      []tensorSrc
	outDims [][]int // its results' dimensions
}

// replayRead is one Fetch or Grad of a Replay: the tensor it reads (src, with kind srcNil
// where the value has no numbers), as a row of a stacked tensor of T rows or whole (T = 0), and
// the value's layout.
type replayRead struct {
	src    tensorSrc
	T, row int
	lay    *layout
	batch  []int
	grad   bool
}

// Replay is a recorded evaluation (see Tape.Record): its program calls, where each call finds
// its tensors, and what the evaluation read.
type Replay struct {
	inDims    [][]int
	calls     []replayCall
	reads     []replayRead
	linkState linked // the calls as one program (replay_program.go)
}

// recording is what a recording tape notes.
type recording struct {
	key    string
	closed bool // a stage has run: later inputs are not replayable
	broken string
	inputs []*tensors.Tensor
	consts map[*tensors.Tensor]tensorSrc
	calls  []recordedCall
	reads  []recordedRead
}

type recordedCall struct {
	p       *stageProg
	in, out []*tensors.Tensor
}

type recordedRead struct {
	r     ref
	lay   *layout
	batch []int
	grad  bool
}

// Record makes tp note its evaluation, from its first input to its last Fetch or Grad, for
// SaveRecording to keep as the engine's Replay of key. It does nothing if the engine holds a
// Replay of key already (or knows key is not replayable), on a dry or forward-mode tape, or
// with NIOC_REPLAY=off. Call it before the tape's first input.
func (tp *Tape) Record(key string) {
	if tp.dry || tp.fwd > 0 || tp.replay != nil || !tp.e.replays() {
		return
	}
	tp.e.mu.Lock()
	_, known := tp.e.recorded[key]
	tp.e.mu.Unlock()
	if !known {
		tp.rec = &recording{key: key, consts: map[*tensors.Tensor]tensorSrc{}}
	}
}

// SaveRecording keeps what tp recorded (Record) as the engine's Replay of its key, or marks the
// key as not replayable if some tensor a call or read took cannot be found again. It reports
// why not, "" if kept or if tp did not record.
func (tp *Tape) SaveRecording() string {
	rec := tp.rec
	if rec == nil {
		return ""
	}
	tp.rec = nil
	r, why := rec.replay()
	tp.e.mu.Lock()
	if tp.e.recorded == nil {
		tp.e.recorded = map[string]*Replay{}
	}
	tp.e.recorded[rec.key] = r // nil: not replayable
	tp.e.mu.Unlock()
	return why
}

// replay turns the recording into a Replay, or says why it cannot.
func (rec *recording) replay() (*Replay, string) {
	if rec.broken != "" {
		return nil, rec.broken
	}
	where := map[*tensors.Tensor]tensorSrc{}
	for i, t := range rec.inputs {
		if t != nil {
			where[t] = tensorSrc{kind: srcInput, i: i}
		}
	}
	find := func(t *tensors.Tensor) (tensorSrc, bool) {
		if t == nil {
			return tensorSrc{kind: srcNil}, true
		}
		if s, ok := where[t]; ok {
			return s, true
		}
		s, ok := rec.consts[t]
		return s, ok
	}
	r := &Replay{inDims: make([][]int, len(rec.inputs))}
	for i, t := range rec.inputs {
		if t != nil {
			r.inDims[i] = t.Shape().Dimensions
		}
	}
	for i, c := range rec.calls {
		rc := replayCall{p: c.p, in: make([]tensorSrc, len(c.in)), outDims: make([][]int, len(c.out))}
		for j, t := range c.out {
			if t != nil {
				rc.outDims[j] = t.Shape().Dimensions
			}
		}
		for k, t := range c.in {
			s, ok := find(t)
			if !ok {
				return nil, fmt.Sprintf("%s reads a tensor made outside the recorded calls", c.p.name)
			}
			rc.in[k] = s
		}
		r.calls = append(r.calls, rc)
		for j, t := range c.out {
			if t != nil {
				where[t] = tensorSrc{kind: srcOutput, i: i, j: j}
			}
		}
	}
	for _, rd := range rec.reads {
		t, T := rd.r.t, 0
		if rd.r.s != nil {
			t, T = rd.r.s.t, rd.r.s.T
		}
		s, ok := find(t)
		if !ok {
			return nil, "a value read is not the output of a recorded call"
		}
		r.reads = append(r.reads, replayRead{src: s, T: T, row: rd.r.row, lay: rd.lay, batch: rd.batch, grad: rd.grad})
	}
	return r, ""
}

// noteInput notes an input t (nil on a dry tape) of a recording tape, or collects it on a
// replaying one.
func (tp *Tape) noteInput(t *tensors.Tensor) {
	switch {
	case tp.replay != nil:
		tp.replayIn = append(tp.replayIn, t)
	case tp.rec != nil:
		if tp.rec.closed {
			tp.rec.broken = "an input given after a stage ran"
		}
		tp.rec.inputs = append(tp.rec.inputs, t)
	}
}

// noteConst notes that t, made by the tape, holds zeros (ones: ones).
func (tp *Tape) noteConst(t *tensors.Tensor, ones bool) {
	if tp.rec == nil || t == nil {
		return
	}
	kind := srcZeros
	if ones {
		kind = srcOnes
	}
	tp.rec.consts[t] = tensorSrc{kind: kind, dims: t.Shape().Dimensions}
}

// noteRead notes a Fetch (grad false) or Grad of v at r.
func (tp *Tape) noteRead(r ref, v *Value, grad bool) {
	if tp.rec != nil {
		tp.rec.reads = append(tp.rec.reads, recordedRead{r: r, lay: v.lay, batch: v.batch, grad: grad})
	}
}

// exec runs program p on in, noting the call on a recording tape.
func (tp *Tape) exec(p *stageProg, in []*tensors.Tensor) []*tensors.Tensor {
	if tp.replay != nil {
		panic("graph: a replaying tape runs no stages")
	}
	out := tp.e.execute(p, in)
	if tp.rec != nil {
		if len(tp.rec.reads) > 0 && tp.rec.broken == "" {
			// What ran after a value was read may have depended on it (a host decision),
			// which a replay of the calls would not see.
			tp.rec.broken = "a stage ran after a value was read"
		}
		tp.rec.closed = true
		tp.rec.calls = append(tp.rec.calls, recordedCall{p: p, in: slices.Clone(in), out: out})
	}
	return out
}

// ReplayTape returns a tape that replays the engine's Replay of key, or nil if the engine has
// none. Give it the evaluation's inputs as the recording tape was given them (Input, Series,
// Borrow, BorrowSeries, in the same order and shapes), then call Replay; it runs no stages.
func (e *Engine) ReplayTape(key string) *Tape {
	e.mu.Lock()
	r := e.recorded[key]
	if e.noReplay {
		r = nil
	}
	e.mu.Unlock()
	if r == nil {
		return nil
	}
	return &Tape{e: e, replay: r, ct: map[*Value]ref{}}
}

// Replayable reports whether a replaying tape (ReplayTape) was given inputs of the number and
// dimensions its recording was (Replay panics otherwise).
func (tp *Tape) Replayable() bool {
	r := tp.replay
	if r == nil || len(tp.replayIn) != len(r.inDims) {
		return false
	}
	for i, t := range tp.replayIn {
		if t == nil || !slices.Equal(t.Shape().Dimensions, r.inDims[i]) {
			return false
		}
	}
	return true
}

// Replay runs the program calls of a replaying tape (ReplayTape) on the inputs it was given
// and returns what the recorded evaluation's Fetch and Grad calls returned, in their order.
// It panics if the tape is not Replayable.
func (tp *Tape) Replay() [][]float64 {
	res, _ := tp.ReplayLinked()
	return res
}

// ReplayLinked is Replay, and reports whether the calls ran as one program
// (Engine.SetReplayPrograms; false where linking them failed: Engine.LinkError).
func (tp *Tape) ReplayLinked() ([][]float64, bool) {
	r := tp.replay
	if r == nil {
		panic("graph: Replay of a tape that does not replay")
	}
	if !tp.Replayable() {
		panic(fmt.Sprintf("graph: a replay of %d inputs given %d, or of other dimensions", len(r.inDims), len(tp.replayIn)))
	}
	tp.e.mu.Lock()
	tp.e.stats.Replays++
	tp.e.mu.Unlock()
	outs := make([][]*tensors.Tensor, len(r.calls))
	getConst := func(s tensorSrc) *tensors.Tensor {
		if s.kind == srcNil {
			return nil
		}
		data := make([]float64, batchSize(s.dims))
		if s.kind == srcOnes {
			for i := range data {
				data[i] = 1
			}
		}
		t := NewTensor(data, s.dims...)
		tp.owned = append(tp.owned, t)
		return t
	}
	get := func(s tensorSrc) *tensors.Tensor {
		switch s.kind {
		case srcInput:
			return tp.replayIn[s.i]
		case srcOutput:
			return outs[s.i][s.j]
		}
		return getConst(s)
	}
	got, linked := tp.runLinked(r)
	if linked {
		get = func(s tensorSrc) *tensors.Tensor {
			if s.kind == srcZeros || s.kind == srcOnes || s.kind == srcNil {
				return getConst(s)
			}
			return got[s.key()]
		}
	} else {
		for i, c := range r.calls {
			in := make([]*tensors.Tensor, len(c.in))
			for k, s := range c.in {
				in[k] = get(s)
			}
			outs[i] = tp.e.execute(c.p, in)
			tp.owned = append(tp.owned, outs[i]...)
		}
	}
	res := make([][]float64, len(r.reads))
	for k, rd := range r.reads {
		var at ref
		if t := get(rd.src); rd.T > 0 {
			at = ref{s: &stacked{t: t, T: rd.T}, row: rd.row}
		} else {
			at = ref{t: t}
		}
		if rd.grad {
			res[k] = gradRef(at, rd.lay, rd.batch)
		} else {
			res[k] = fetchRef(at, rd.lay, rd.batch)
		}
	}
	return res, linked
}
