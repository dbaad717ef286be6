package graph

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKeyWriters: the program-key writers write what fmt's %d and %v do, so that keys keep
// their form and stay distinct.
func TestKeyWriters(t *testing.T) {
	for _, xs := range [][]int{nil, {}, {0}, {7, -3, 250}, {1 << 40}} {
		var b strings.Builder
		keyInts(&b, xs)
		assert.Equal(t, fmt.Sprint(xs), b.String(), "ints %v", xs)
	}
	for _, xs := range [][]bool{nil, {true}, {false, true, false}} {
		var b strings.Builder
		keyBools(&b, xs)
		assert.Equal(t, fmt.Sprint(xs), b.String(), "bools %v", xs)
	}
	for _, xs := range [][][2]int{nil, {{0, 1}}, {{2, 0}, {1, 3}}} {
		var b strings.Builder
		keyPairs(&b, xs)
		assert.Equal(t, fmt.Sprint(xs), b.String(), "pairs %v", xs)
	}
	for _, c := range []*call{
		{name: "tracking", steps: 50, stackOut: true},
		{name: "theta+controls", steps: 0, dense: []int{4, 64}},
	} {
		var b strings.Builder
		callKey(&b, c)
		assert.Equal(t, fmt.Sprintf("%s|T%d|dense%v|stack%v", c.name, c.steps, c.dense, c.stackOut), b.String())
	}
}
