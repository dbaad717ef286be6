package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every command's help lists every flag on its usage line and shows each as it is typed,
// --name and a placeholder that says what goes there: the values (partial|full), a word for
// them (FILE, N) or an example form (name=value,...); never the type name that Go's flag
// package prints for string flags, nor a phrase taken from the flag's text.
func TestCLIUsageLines(t *testing.T) {
	flagLine := regexp.MustCompile(`^  --([a-z0-9-]+)(?: (\S+))?$`)
	for _, cmd := range append(cliAllCommands, "eval", "plot", "backend") {
		t.Run(cmd, func(t *testing.T) {
			r := cliRun(t, cmd, "-h")
			require.Equal(t, 0, r.code, r.stderr)
			lines := strings.Split(r.stderr, "\n")
			require.True(t, strings.HasPrefix(lines[0], "Usage: nioc-gpu "+cmd), lines[0])
			usage := lines[0]
			n := 0
			for _, l := range lines[1:] {
				m := flagLine.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				n++
				assert.Regexp(t, `--`+regexp.QuoteMeta(m[1])+`([ \]|=]|$)`, usage, "the usage line lists --%s", m[1])
				if p := m[2]; p != "" {
					assert.NotContains(t, []string{"VALUE", "string", "value", "int", "uint", "float", "float64", "duration"}, p, "--%s's placeholder", m[1])
				}
			}
			assert.Positive(t, n, "the help lists the flags as --name")
		})
	}
}
