package graph

import (
	"strconv"
	"strings"
)

// Program keys. The looped form looks its programs up by a key that the tape writes on every
// call (the call's name, steps, input layouts and where each argument comes from), so these
// write integers and booleans as fmt's %d and %v would, without its reflection: with fmt the
// keys took 2 % of the CPU time of a pendulum sampler on XLA's CPU plugin (2026-11-29).

// keyInt writes n in decimal.
func keyInt(b *strings.Builder, n int) {
	var buf [20]byte
	b.Write(strconv.AppendInt(buf[:0], int64(n), 10))
}

// keyInts writes xs as fmt's %v does: [1 2 3].
func keyInts(b *strings.Builder, xs []int) {
	b.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		keyInt(b, x)
	}
	b.WriteByte(']')
}

// keyBools writes xs as fmt's %v does: [true false].
func keyBools(b *strings.Builder, xs []bool) {
	b.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatBool(x))
	}
	b.WriteByte(']')
}

// keyPairs writes xs as fmt's %v does: [[1 2] [3 4]].
func keyPairs(b *strings.Builder, xs [][2]int) {
	b.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('[')
		keyInt(b, x[0])
		b.WriteByte(' ')
		keyInt(b, x[1])
		b.WriteByte(']')
	}
	b.WriteByte(']')
}

// callKey writes the part of a program's key that names call c: name|T<steps>|dense<dims>|
// stack<bool>.
func callKey(b *strings.Builder, c *call) {
	b.WriteString(c.name)
	b.WriteString("|T")
	keyInt(b, c.steps)
	b.WriteString("|dense")
	keyInts(b, c.dense)
	b.WriteString("|stack")
	b.WriteString(strconv.FormatBool(c.stackOut))
}
