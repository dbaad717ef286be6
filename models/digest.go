package models

// Digester is a Model that can say what it is beyond its name: a task read from a file
// gives a digest of the file's content.
type Digester interface {
	Digest() string
}

// Digest identifies the task m for the records of what produced a result: the Digester's
// digest for a task read from a file ("sha256:" and 16 hex digits of its canonical content),
// "builtin:" and the name for a built-in task, whose definition is that of the binary (a
// record states the binary's version beside it). Two runs whose digests differ fitted
// different tasks.
func Digest(m Model) string {
	if d, ok := m.(Digester); ok {
		return d.Digest()
	}
	return "builtin:" + m.Spec().Name
}

// WithTiming returns m with its agent's observation timing set to t (see Timing): a built-in
// task, written for the paper's ActThenSee, with an agent that sees before it acts. Its
// digest says so. It returns m itself when m already has timing t.
func WithTiming(m Model, t Timing) Model {
	if m.Spec().ObservationTiming() == t {
		return m
	}
	return timed{Model: m, timing: t}
}

// timed is a Model whose Spec has another Timing.
type timed struct {
	Model
	timing Timing
}

func (m timed) Spec() Spec {
	s := m.Model.Spec()
	s.Timing = m.timing
	return s
}

func (m timed) Digest() string { return Digest(m.Model) + "+timing=" + string(m.timing) }
