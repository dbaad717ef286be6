package main

// Every command line of the documents, checked without running it: the commands of their
// ```sh blocks (run by TestDocsCommands too, at small sizes, or skipped there with a reason),
// the synopses of their usage tables and blocks (`nioc-gpu fit --task T [--restarts 50] …`)
// and the commands in their prose and tables (the measurements' `nioc-gpu eval --task
// pendulum --sets 20 …`, `make bench-jax REF=…`, `robustness.py --seed 1`, `fit --restarts
// 10`). Each must name what exists, with flags it takes:
//
//   - nioc-gpu (or bin/nioc-gpu, or a bare command name followed by a flag, as the prose
//     writes `fit --restarts 10`): the command exists and every --flag is one of its flags
//     (those its -h lists);
//   - make: the target is in the Makefile, and every VAR= a variable of it;
//   - go run ./PKG: the package exists and every -flag is defined in it (flag.X("name", …));
//     go run ./cmd/nioc-gpu as nioc-gpu; go test ./PKG -run X: the package has a test that
//     X matches;
//   - python3 SCRIPT.py (or SCRIPT.py alone, found under bench/): the script exists and every
//     --flag is one of its arguments ("--flag" in its source);
//   - bench/…/SCRIPT.sh STEP: the script exists and has the step (a case of its own).
//
// A flag named alone (`--max-batch`, `-fits=false`) must be a flag of some nioc-gpu command or
// of some program of bench/.
//
// Placeholders (TASK, --seed S, DIR, …) are values, which are not checked.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docLine is a command line of a document: where it is and its text (continuation lines
// joined).
type docLine struct {
	line int
	text string
}

// docCommandLines returns the lines of a document that may be commands: every command of
// its runnable blocks, every line of its other blocks with its synopsis continuation lines
// (beginning with [) joined, and every inline code span of its prose.
func docCommandLines(text string) []docLine {
	blocks, prose := markdownBlocks(text)
	var out []docLine
	for _, b := range runnableBlocks(blocks) {
		for _, c := range blockCommands(b.text) {
			out = append(out, docLine{b.line, c})
		}
	}
	for _, b := range blocks {
		if b.info == "sh" {
			continue
		}
		first := b.line + boolInt(!b.indented)
		for i, line := range strings.Split(b.text, "\n") {
			if isSessionLine(b, line) {
				continue // a session's command, above
			}
			trimmed := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
			if strings.HasPrefix(trimmed, "[") && len(out) > 0 && out[len(out)-1].line == first+i-1 {
				out[len(out)-1].text += " " + trimmed
				out[len(out)-1].line++
				continue
			}
			if trimmed != "" {
				out = append(out, docLine{first + i, trimmed})
			}
		}
	}
	return append(out, codeSpans(prose)...)
}

// codeSpans returns the inline code spans of Markdown prose, with their first line; a span
// over several lines is one line, and a table's \| is |.
func codeSpans(s string) []docLine {
	var out []docLine
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		closing := -1
		for k := j; k < len(s); {
			if s[k] != '`' {
				k++
				continue
			}
			m := k
			for m < len(s) && s[m] == '`' {
				m++
			}
			if m-k == j-i {
				closing = k
				break
			}
			k = m
		}
		if closing < 0 {
			i = j
			continue
		}
		text := strings.Join(strings.Fields(strings.ReplaceAll(s[j:closing], `\|`, "|")), " ")
		out = append(out, docLine{strings.Count(s[:i], "\n") + 1, text})
		i = closing + (j - i)
	}
	return out
}

// shellWords splits a command line into words as sh does for the checks: quotes group and
// are removed, a word beginning with # begins a comment.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// docFlagName returns the name of the flag that a word of a command line (or a part of a
// synopsis such as [--resume|--force]) gives, "" if it gives none.
func docFlagName(w string) string {
	w = strings.Trim(w, "[](),…")
	if !strings.HasPrefix(w, "-") || strings.ContainsAny(w, " ") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
	if !regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`).MatchString(name) {
		return ""
	}
	return name
}

// docFlags returns the flags of the words of a command line, synopses' alternatives split.
func docFlags(words []string) []string {
	var out []string
	for _, w := range words {
		for _, part := range strings.Split(w, "|") {
			if name := docFlagName(part); name != "" {
				out = append(out, name)
			}
		}
	}
	return out
}

// docCommandFlags caches the flags of each nioc-gpu command, as its -h lists them; the key
// "sample --population" is the hierarchical sampler's, a command of its own.
var docCommandFlags = map[string]map[string]bool{}

func docFlagsOf(command string) map[string]bool {
	if f, ok := docCommandFlags[command]; ok {
		return f
	}
	var out bytes.Buffer
	args := []string{command, "-h"}
	if command == "sample --population" {
		args = []string{"sample", "--population=DIR", "-h"}
	}
	run(args, &out, &out)
	f := map[string]bool{"h": true, "help": true}
	for _, m := range regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`).FindAllStringSubmatch(out.String(), -1) {
		f[m[1]] = true
	}
	docCommandFlags[command] = f
	return f
}

// docCheckCommand checks a command line of the documents: kind says what it is ("nioc-gpu",
// "make", "go", "python"; "" for a line that is no command), err what is wrong with it.
func docCheckCommand(line string) (kind string, err error) {
	words := shellWords(line)
	for len(words) > 1 && regexp.MustCompile(`^[A-Z][A-Z0-9_]*=`).MatchString(words[0]) {
		words = words[1:] // the environment of the command: NIOC_SLURM=1 go test …
	}
	if len(words) == 0 {
		return "", nil
	}
	switch w := words[0]; {
	case w == "nioc-gpu" || w == "bin/nioc-gpu" || w == "./bin/nioc-gpu":
		if len(words) > 1 && !strings.HasPrefix(words[1], "-") && !regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(words[1]) {
			return "", nil // output such as "nioc-gpu simulate: saccade.toml:51:15: …"
		}
		return "nioc-gpu", docCheckNiocGPU(words[1:])
	case commands[w].run != nil && len(words) > 1 && docFlagName(words[1]) != "":
		return "nioc-gpu", docCheckNiocGPU(words)
	case w == "make":
		return "make", docCheckMake(words[1:])
	case w == "go" && len(words) > 2 && words[1] == "run":
		return "go", docCheckGoRun(words[2:])
	case w == "go" && len(words) > 2 && words[1] == "test":
		return "go", docCheckGoTest(words[2:])
	case w == "python3" || w == "python":
		if len(words) < 2 || !strings.HasSuffix(words[1], ".py") {
			return "", nil
		}
		return "python", docCheckPython(words[1:])
	case strings.HasSuffix(w, ".py") && len(words) > 1:
		return "python", docCheckPython(words)
	case strings.HasSuffix(w, ".sh") && strings.HasPrefix(w, "bench/"):
		return "script", docCheckScript(words)
	}
	return "", nil
}

// docCheckScript checks a shell script's command line: the script exists, and a step given
// as its first argument (a lowercase word; STEP is a placeholder) is one of its cases.
func docCheckScript(args []string) error {
	src := docRead(args[0])
	if src == "" {
		return fmt.Errorf("no script %s", args[0])
	}
	if len(args) > 1 && regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(args[1]) &&
		!regexp.MustCompile(`(?m)^\s*(?:[a-z0-9|-]+\|)?`+regexp.QuoteMeta(args[1])+`(?:\|[a-z0-9|-]+)?\)`).MatchString(src) {
		return fmt.Errorf("%s has no step %s", args[0], args[1])
	}
	return nil
}

// docCheckNiocGPU checks nioc-gpu's arguments: a command that exists, with its flags.
func docCheckNiocGPU(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "--version", "-version", "-h", "--help":
			return nil
		}
		return fmt.Errorf("nioc-gpu takes a command before its flags, not %s", args[0])
	}
	if args[0] == "help" {
		return nil
	}
	if _, ok := commands[args[0]]; !ok {
		return fmt.Errorf("nioc-gpu has no command %q", args[0])
	}
	command := args[0]
	if command == "sample" && slices.Contains(docFlags(args[1:]), "population") {
		command = "sample --population"
	}
	flags := docFlagsOf(command)
	var bad []string
	for _, f := range docFlags(args[1:]) {
		if !flags[f] {
			bad = append(bad, "--"+f)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("nioc-gpu %s has no flag %s (nioc-gpu %s -h lists its flags)", command, strings.Join(bad, ", "), command)
	}
	return nil
}

// docRead returns a file of the checkout given relative to its root, "" if there is none.
func docRead(rel string) string {
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		return ""
	}
	return string(b)
}

// docCheckMake checks make's arguments: its target in the Makefile, its variables used there.
func docCheckMake(args []string) error {
	makefile := docRead("Makefile")
	for _, a := range args {
		if name, _, ok := strings.Cut(a, "="); ok {
			if !regexp.MustCompile(`\$\(` + regexp.QuoteMeta(name) + `\)`).MatchString(makefile) {
				return fmt.Errorf("the Makefile uses no variable %s", name)
			}
		} else if !strings.HasPrefix(a, "-") && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(a)+`:`).MatchString(makefile) {
			return fmt.Errorf("the Makefile has no target %s", a)
		}
	}
	return nil
}

// docGoSources returns the Go source files of a package of the checkout (./dir), test files
// or the others, concatenated; "" if the package does not exist.
func docGoSources(pkg string, tests bool) string {
	dir := filepath.Join("..", "..", filepath.FromSlash(strings.TrimSuffix(pkg, "/...")))
	paths, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var src strings.Builder
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") == tests {
			b, _ := os.ReadFile(p)
			src.Write(b)
		}
	}
	return src.String()
}

// docCheckGoRun checks go run's arguments: a package of the checkout, with its flags.
func docCheckGoRun(args []string) error {
	pkg := args[0]
	if !strings.HasPrefix(pkg, "./") {
		return nil
	}
	if pkg == "./cmd/nioc-gpu" {
		return docCheckNiocGPU(args[1:])
	}
	src := docGoSources(pkg, false)
	if src == "" {
		return fmt.Errorf("no Go package %s", pkg)
	}
	for _, f := range docFlags(args[1:]) {
		if f != "h" && !regexp.MustCompile(`flag\.\w+\(\s*(?:&[\w.]+,\s*)?"`+regexp.QuoteMeta(f)+`"`).MatchString(src) {
			return fmt.Errorf("%s has no flag -%s", pkg, f)
		}
	}
	return nil
}

// docCheckGoTest checks go test's arguments: packages of the checkout, a -run that matches
// a test of theirs.
func docCheckGoTest(args []string) error {
	var tests []string
	for _, a := range args {
		if strings.HasPrefix(a, "./") {
			src := docGoSources(a, true)
			if src == "" {
				return fmt.Errorf("no Go package with tests %s", a)
			}
			for _, m := range regexp.MustCompile(`func (Test\w+)\(`).FindAllStringSubmatch(src, -1) {
				tests = append(tests, m[1])
			}
		}
	}
	for i, a := range args {
		if (a == "-run" || a == "--run") && i+1 < len(args) {
			re, err := regexp.Compile(args[i+1])
			if err != nil {
				return err
			}
			found := false
			for _, name := range tests {
				found = found || re.MatchString(name)
			}
			if !found {
				return fmt.Errorf("-run %s matches no test of %s", args[i+1], strings.Join(args[:i], " "))
			}
		}
	}
	return nil
}

// docCheckPython checks a Python script's command line: the script (a path from the
// checkout's root, or a name found under bench/) and its flags.
func docCheckPython(args []string) error {
	script := args[0]
	src := docRead(script)
	if src == "" && !strings.Contains(script, "/") {
		paths, _ := filepath.Glob(filepath.Join("..", "..", "bench", "*", script))
		if len(paths) == 1 {
			b, _ := os.ReadFile(paths[0])
			src = string(b)
		}
	}
	if src == "" {
		return fmt.Errorf("no script %s", script)
	}
	for _, f := range docFlags(args[1:]) {
		if f != "h" && f != "help" && !strings.Contains(src, `"--`+f+`"`) && !strings.Contains(src, `'--`+f+`'`) {
			return fmt.Errorf("%s has no argument --%s", script, f)
		}
	}
	return nil
}

// docCheckLoneFlag checks a flag named alone in prose (`--max-batch`, `--fix
// obs_noise=1`, `-fits=false`): a --flag must be a flag of some nioc-gpu command, a -flag of
// some program of bench/; XLA's own flags (--xla_…) are XLA's. ok is false for text that
// names no flag.
func docCheckLoneFlag(text string) (ok bool, err error) {
	words := shellWords(text)
	if len(words) == 0 || !strings.HasPrefix(text, "-") {
		return false, nil
	}
	name := docFlagName(words[0])
	switch {
	case name == "" || !regexp.MustCompile(`^[a-z]`).MatchString(name) || strings.HasPrefix(name, "xla_"):
		return false, nil
	case strings.HasPrefix(words[0], "--"):
		for c := range commands {
			if docFlagsOf(c)[name] || c == "sample" && docFlagsOf("sample --population")[name] {
				return true, nil
			}
		}
		return true, fmt.Errorf("no nioc-gpu command has a flag --%s", name)
	}
	paths, _ := filepath.Glob(filepath.Join("..", "..", "bench", "*"))
	for _, p := range paths {
		rel, _ := filepath.Rel(filepath.Join("..", ".."), p)
		if docCheckGoRun([]string{"./" + filepath.ToSlash(rel), words[0]}) == nil {
			return true, nil
		}
	}
	return true, fmt.Errorf("no program of bench/ has a flag -%s", name)
}

func TestDocsCommandLines(t *testing.T) {
	counts := map[string]int{}
	for _, doc := range docFiles(t) {
		text, err := os.ReadFile(docPath(t, doc))
		require.NoError(t, err)
		for _, l := range docCommandLines(string(text)) {
			kind, err := docCheckCommand(l.text)
			if kind == "" {
				if ok, err := docCheckLoneFlag(l.text); ok {
					counts["flag"]++
					assert.NoError(t, err, "%s:%d: %s", doc, l.line, l.text)
				}
				continue
			}
			counts[kind]++
			assert.NoError(t, err, "%s:%d: %s", doc, l.line, l.text)
		}
	}
	t.Logf("command lines checked: %d of nioc-gpu, %d of make, %d of go, %d of Python scripts, %d of shell scripts; %d flags named alone",
		counts["nioc-gpu"], counts["make"], counts["go"], counts["python"], counts["script"], counts["flag"])
}

// TestDocCheckCommand: the checks find what no longer exists.
func TestDocCheckCommand(t *testing.T) {
	for _, c := range []struct{ line, kind, err string }{
		{"nioc-gpu sample --task T --data d.csv [--chains 4] [--resume|--force] --out DIR", "nioc-gpu", ""},
		{"nioc-gpu fit --task T --data d.csv [--restarts 50] [--resume|--force] --out r.jsonl", "nioc-gpu", "no flag --force"},
		{"nioc-gpu sample --population pop --task T --subjects s.csv --population-model \"~ group\" --out hier", "nioc-gpu", ""},
		{"nioc-gpu sample --task T --subjects s.csv", "nioc-gpu", "no flag --subjects"},
		{"nioc-gpu fit --task T --no-such-flag 3", "nioc-gpu", "no flag --no-such-flag"},
		{"nioc-gpu fitt --task T", "nioc-gpu", `no command "fitt"`},
		{"fit --restarts 10", "nioc-gpu", ""},
		{"sample --chains 4 --warmup 150 --metric dense --shard k/10", "nioc-gpu", ""},
		{"simulate --nope 1", "nioc-gpu", "no flag --nope"},
		{"nioc-gpu --version", "nioc-gpu", ""},
		{"nioc-gpu simulate: saccade.toml:51:15: unknown symbol", "", ""},
		{`nioc-gpu population --population-model "~ group" --out pop # a comment --nope`, "nioc-gpu", ""},
		{"make bench-sample SAMPLE_ARGS=\"-metric diag\"", "make", ""},
		{"make no-such-target", "make", "no target no-such-target"},
		{"make bench NO_SUCH_VAR=1", "make", "no variable NO_SUCH_VAR"},
		{"go run ./bench/table -forward reaching -fits=false -xla off", "go", ""},
		{"go run ./bench/table -no-such-flag", "go", "no flag -no-such-flag"},
		{"go run ./bench/nothing-here", "go", "no Go package"},
		{"go run ./cmd/nioc-gpu fit --nope", "go", "no flag --nope"},
		{"go test ./cmd/nioc-gpu -run CompareModels", "go", ""},
		{"go test ./cmd/nioc-gpu -run NoSuchTestAnywhere", "go", "matches no test"},
		{"python3 bench/groups/compare_planners.py --bin bin/nioc-gpu --studies 20", "python", ""},
		{"python3 bench/groups/compare_planners.py --nope", "python", "no argument --nope"},
		{"refmle.py --restarts 10", "python", ""},
		{"python3 bench/no-such.py --x", "python", "no script"},
		{"cat lab.csv", "", ""},
		{"NIOC_SLURM=1 go test ./bench/slurm", "go", ""},
		{`JAX_ARGS="--restarts 10 --busy 1"`, "", ""},
		{"ROWS=50 bench/gpu/run.sh tasks", "script", ""},
		{"bench/gpu/run.sh STEP", "script", ""},
		{"bench/gpu/run.sh nope", "script", "no step nope"},
		{"bench/gpu/none.sh", "script", "no script"},
	} {
		kind, err := docCheckCommand(c.line)
		assert.Equal(t, c.kind, kind, c.line)
		if c.err == "" {
			assert.NoError(t, err, c.line)
		} else if assert.Error(t, err, c.line) {
			assert.Contains(t, err.Error(), c.err, c.line)
		}
	}
	assert.Equal(t, []docLine{{1, "a"}, {2, "b c"}, {3, "x|y"}, {3, "```sh"}}, codeSpans("`a`\n`b\nc` `x\\|y` ```` ```sh ````"))
	assert.Equal(t, []string{"a", "b c", "d"}, shellWords(`a "b c" d # e`))
	for _, c := range []struct {
		text   string
		ok     bool
		errMsg string
	}{
		{"--max-batch", true, ""}, {"--fix obs_noise=1", true, ""}, {"--subjects", true, ""}, {"-fits=false", true, ""},
		{"--no-such-flag", true, "no nioc-gpu command has a flag --no-such-flag"}, {"-nope", true, "no program of bench/"},
		{`"-Inf"`, false, ""}, {"--xla_cpu_enable_fast_math=true", false, ""}, {"summary.csv", false, ""},
	} {
		ok, err := docCheckLoneFlag(c.text)
		assert.Equal(t, c.ok, ok, c.text)
		if c.errMsg == "" {
			assert.NoError(t, err, c.text)
		} else if assert.Error(t, err, c.text) {
			assert.Contains(t, err.Error(), c.errMsg)
		}
	}
}
