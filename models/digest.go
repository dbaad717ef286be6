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
