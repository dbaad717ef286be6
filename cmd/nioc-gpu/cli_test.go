package main

// Tests of the command line as a user runs it: run(...) in-process with buffers for stdout and
// stderr and files in t.TempDir(). This file holds the shared helpers and the tests of
// `tasks`, `help` and the exit statuses; the other cli_*_test.go files test one command each.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliResult is what one command line did.
type cliResult struct {
	code           int
	stdout, stderr string
}

// cliRun runs the command line args in-process.
func cliRun(t *testing.T, args ...string) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return cliResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// cliOK runs args and requires exit status 0.
func cliOK(t *testing.T, args ...string) cliResult {
	t.Helper()
	r := cliRun(t, args...)
	require.Equal(t, 0, r.code, "nioc-gpu %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.stdout, r.stderr)
	return r
}

// cliRequireFail checks that a failed command line exited with code and that its stderr names
// every one of msgs; usage errors (2) must also point to the command's help.
func cliRequireFail(t *testing.T, r cliResult, code int, msgs ...string) {
	t.Helper()
	require.Equal(t, code, r.code, "exit status; stderr:\n%s", r.stderr)
	for _, m := range msgs {
		assert.Contains(t, r.stderr, m)
	}
	if code == 2 && !strings.HasPrefix(r.stderr, "nioc-gpu: unknown command") {
		assert.Contains(t, r.stderr, "-h` for help", "a usage error points to the help")
	}
	assert.Empty(t, r.stdout, "a failed command prints nothing on stdout")
}

// cliSimulate simulates a data file dir/name and returns its path.
func cliSimulate(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	cliOK(t, append([]string{"simulate", "--out", path}, args...)...)
	return path
}

// cliReadCSV reads a whole CSV file.
func cliReadCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err, "%s is not valid CSV", path)
	return rows
}

// cliJSONLines parses every non-empty line of s as a JSON object.
func cliJSONLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "not a JSON object: %s", line)
		out = append(out, m)
	}
	require.NoError(t, sc.Err())
	return out
}

// cliReadJSONL reads a results file, requiring every line to be a JSON object.
func cliReadJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return cliJSONLines(t, string(b))
}

// cliHash returns the SHA-256 of a file, to check that a file was left untouched.
func cliHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

// cliFinite requires v to be a finite JSON number.
func cliFinite(t *testing.T, v any, what string) float64 {
	t.Helper()
	f, ok := v.(float64)
	require.True(t, ok, "%s = %v (%T) is not a JSON number", what, v, v)
	require.False(t, math.IsNaN(f) || math.IsInf(f, 0), "%s = %v is not finite", what, f)
	return f
}

// cliParseFloat parses a CSV cell that must be a finite number.
func cliParseFloat(t *testing.T, s, what string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, "%s = %q", what, s)
	require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "%s = %q is not finite", what, s)
	return v
}

func cliNoFile(t *testing.T, path string) {
	t.Helper()
	_, err := os.Stat(path)
	assert.True(t, errors.Is(err, os.ErrNotExist), "%s should not exist (stat: %v)", path, err)
}

var cliAllTasks = []string{"reaching", "navigation", "pendulum", "cartpole", "lightdark", "linear"}

var cliAllCommands = []string{"tasks", "simulate", "loglik", "grid", "fit", "merge", "compare", "compare-models", "sample"}

func TestCLITasks(t *testing.T) {
	t.Run("text", func(t *testing.T) {
		r := cliOK(t, "tasks")
		assert.Empty(t, r.stderr)
		// One section per task, separated by blank lines, starting with the task's name.
		sections := map[string]string{}
		for _, sec := range strings.Split(strings.TrimSpace(r.stdout), "\n\n") {
			name, _, _ := strings.Cut(sec, " ")
			sections[name] = sec
		}
		for _, name := range cliAllTasks {
			sec, ok := sections[name]
			require.True(t, ok, "task %s is not listed:\n%s", name, r.stdout)
			m, err := models.Get(name)
			require.NoError(t, err)
			spec := m.Spec()
			assert.Contains(t, sec, "states:   "+strings.Join(spec.States, ", "))
			assert.Contains(t, sec, "horizon:  "+strconv.Itoa(spec.Steps)+" steps")
			lin := map[string]string{"reaching": "mean"}[name]
			if lin == "" {
				lin = "data"
			}
			assert.Contains(t, sec, ", linearized at "+lin+"\n", "task %s: the likelihood's default linearization", name)
			for _, p := range spec.Params {
				assert.Regexp(t, `(?m)^\s+`+p.Name+`\s+`+regexp.QuoteMeta(strconv.FormatFloat(p.Default, 'g', -1, 64))+`\s+\[`,
					sec, "task %s parameter %s with its default", name, p.Name)
			}
		}
		assert.Len(t, sections, len(models.Names()))
	})

	t.Run("json", func(t *testing.T) {
		r := cliOK(t, "tasks", "--json")
		var tasks []struct {
			Name    string    `json:"name"`
			States  []string  `json:"states"`
			Steps   int       `json:"steps"`
			Planner string    `json:"planner"`
			Jitter  float64   `json:"jitter"`
			Lin     string    `json:"linearize"`
			X0      []float64 `json:"x0"`
			Params  []struct {
				Name    string  `json:"name"`
				Default float64 `json:"default"`
				Lo      float64 `json:"lo"`
				Hi      float64 `json:"hi"`
				Scale   string  `json:"scale"`
			} `json:"params"`
		}
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		require.NoError(t, dec.Decode(&tasks), "one JSON array:\n%s", r.stdout)
		_, err := dec.Token()
		require.ErrorIs(t, err, io.EOF, "nothing after the array")
		require.Len(t, tasks, len(models.Names()), "one element per task")
		seen := map[string]bool{}
		for _, task := range tasks {
			seen[task.Name] = true
			m, err := models.Get(task.Name)
			require.NoError(t, err)
			spec := m.Spec()
			assert.Equal(t, spec.States, task.States)
			assert.Equal(t, spec.Steps, task.Steps)
			assert.Len(t, task.X0, len(spec.States))
			want := map[string]float64{"linear": 1e-12, "pendulum": 1e-10, "navigation": 1e-8, "cartpole": 1e-9, "reaching": 1e-9}[task.Name]
			if want == 0 {
				want = 1e-6
			}
			assert.Equal(t, want, task.Jitter, "task %s: the likelihood's jitter", task.Name)
			lin := map[string]string{"reaching": "mean"}[task.Name]
			if lin == "" {
				lin = "data"
			}
			assert.Equal(t, lin, task.Lin, "task %s: the likelihood's default linearization", task.Name)
			require.Len(t, task.Params, len(spec.Params), "task %s", task.Name)
			for i, p := range spec.Params {
				assert.Equal(t, p.Name, task.Params[i].Name)
				assert.Equal(t, p.Default, task.Params[i].Default)
				assert.Equal(t, p.Lo, task.Params[i].Lo)
				assert.Equal(t, p.Hi, task.Params[i].Hi)
				assert.Contains(t, []string{"log10", "linear"}, task.Params[i].Scale)
			}
		}
		for _, name := range cliAllTasks {
			assert.True(t, seen[name], "task %s missing from --json", name)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"positional argument", []string{"tasks", "reaching"}, `unexpected argument "reaching"`},
		{"unknown flag", []string{"tasks", "--yaml"}, "flag provided but not defined: -yaml"},
		{"bad bool", []string{"tasks", "--json=maybe"}, `--json must be true or false, got "maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cliRequireFail(t, cliRun(t, tc.args...), 2, tc.msg)
		})
	}
}

func TestCLIHelp(t *testing.T) {
	type tc struct {
		name       string
		args       []string
		code       int
		stdout     []string // substrings of stdout
		stderr     []string // substrings of stderr
		emptyStdio bool     // stdout must be empty
	}
	general := append([]string{"Usage: nioc-gpu <command> [flags]", "Commands:"}, cliAllCommands...)
	cases := []tc{
		{name: "no arguments", args: nil, code: 2, stderr: general, emptyStdio: true},
		{name: "help", args: []string{"help"}, stdout: general},
		{name: "-h", args: []string{"-h"}, stdout: general},
		{name: "--help", args: []string{"--help"}, stdout: general},
		{name: "help simulate", args: []string{"help", "simulate"}, stdout: []string{"Usage: nioc-gpu simulate", "-task", "-out"}},
		{name: "help unknown", args: []string{"help", "bogus"}, code: 2, stderr: []string{`unknown command "bogus"`}, emptyStdio: true},
		{name: "unknown command", args: []string{"simulte"}, code: 2,
			stderr: append([]string{`unknown command "simulte"`}, general...), emptyStdio: true},
		{name: "--version", args: []string{"--version"}, stdout: []string{"nioc-gpu "}},
		{name: "-version", args: []string{"-version"}, stdout: []string{"nioc-gpu "}},
		{name: "--version with an argument", args: []string{"--version", "fit"}, code: 2,
			stderr: []string{`--version takes no arguments, got "fit"`}, emptyStdio: true},
		{name: "unknown flag", args: []string{"simulate", "--tsak", "linear"}, code: 2,
			stderr: []string{"flag provided but not defined: -tsak", "run `nioc-gpu simulate -h` for help"}, emptyStdio: true},
	}
	for _, c := range cliAllCommands {
		for _, h := range []string{"-h", "--help"} {
			cases = append(cases, tc{name: c + " " + h, args: []string{c, h},
				stderr: []string{"Usage: nioc-gpu " + c, "Flags:"}, emptyStdio: true})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := cliRun(t, c.args...)
			require.Equal(t, c.code, r.code, "stderr:\n%s", r.stderr)
			for _, s := range c.stdout {
				assert.Contains(t, r.stdout, s)
			}
			for _, s := range c.stderr {
				assert.Contains(t, r.stderr, s)
			}
			if c.emptyStdio {
				assert.Empty(t, r.stdout)
			}
		})
	}
}

// TestCLIFlagValues: a value that a flag refuses is a usage error (status 2) of one line that
// names the flag, what it takes and the value, followed by the pointer to the help, not by
// the whole usage; -h still lists the flags with their types.
func TestCLIFlagValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"fit --seed -1", []string{"fit", "--seed", "-1"}, `--seed must be a non-negative integer, got "-1"`},
		{"simulate --seed -1", []string{"simulate", "--seed", "-1"}, `--seed must be a non-negative integer, got "-1"`},
		{"sample --seed -1", []string{"sample", "--seed", "-1"}, `--seed must be a non-negative integer, got "-1"`},
		{"eval --seed -1", []string{"eval", "--seed", "-1"}, `--seed must be a non-negative integer, got "-1"`},
		{"--seed beyond 64 bits", []string{"fit", "--seed", "18446744073709551616"},
			`--seed must be a non-negative integer up to 18446744073709551615, got "18446744073709551616"`},
		{"integer not a number", []string{"simulate", "--trials", "many"}, `--trials must be an integer, got "many"`},
		{"memory not a size", []string{"fit", "--max-memory", "lots"}, `--max-memory: want a size such as 1.5GB or 800MB, auto, or 0 for no budget, got "lots"`},
		{"timing unknown", []string{"fit", "--task", "pendulum", "--timing", "later", "--data", "x.csv", "--out", "r.jsonl"}, `unknown --timing "later": use act-then-see or see-then-act`},
		{"belief prior not symmetric", []string{"fit", "--belief-prior", "1,0.5;0,1"}, `--belief-prior: the covariance matrix is not symmetric: row 2, column 1 is 0, row 1, column 2 is 0.5`},
		{"integer with a fraction", []string{"fit", "--restarts", "2.5"}, `--restarts must be an integer, got "2.5"`},
		{"integer beyond 64 bits", []string{"sample", "--chains", "99999999999999999999"},
			`--chains must be an integer from -9223372036854775808 to 9223372036854775807, got "99999999999999999999"`},
		{"number", []string{"fit", "--jitter", "small"}, `--jitter must be a number, got "small"`},
		{"number beyond float64", []string{"loglik", "--belief-prior", "1e999"}, `--belief-prior: want a finite variance >= 0 or a covariance matrix by rows, "a,b;c,d", got "1e999"`},
		{"duration", []string{"fit", "--checkpoint-every", "60"}, `--checkpoint-every must be a duration such as 90s, 5m or 1h30m, got "60"`},
		{"boolean", []string{"plot", "--force=often"}, `--force must be true or false, got "often"`},
		{"a flag's own value", []string{"fit", "--temperature", "hot"}, `--temperature: want fit, task or a finite number >= 0, got "hot"`},
		{"steps per call", []string{"loglik", "--task", "pendulum", "--data", "x.csv", "--steps-per-call", "-1"}, `--steps-per-call must be a number >= 0 (0: by backend) or all, got "-1"`},
		{"steps per call a word", []string{"fit", "--task", "pendulum", "--data", "x.csv", "--out", "r.jsonl", "--steps-per-call", "many"}, `--steps-per-call must be a number >= 0 (0: by backend) or all, got "many"`},
		{"no value", []string{"fit", "--seed"}, "flag needs an argument: -seed"},
		{"unknown flag", []string{"grid", "--seeds", "1"}, "flag provided but not defined: -seeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cliRun(t, tc.args...)
			cliRequireFail(t, r, 2, tc.msg)
			c := tc.args[0]
			assert.Equal(t, "nioc-gpu "+c+": "+tc.msg+"\nrun `nioc-gpu "+c+" -h` for help\n", r.stderr, "one line and the pointer to the help")
		})
	}

	t.Run("help", func(t *testing.T) {
		r := cliRun(t, "fit", "-h")
		require.Equal(t, 0, r.code)
		assert.Contains(t, r.stderr, "Usage: nioc-gpu fit")
		assert.Regexp(t, `(?m)^\s+--seed S$`, r.stderr)
		assert.Regexp(t, `(?m)^\s+--restarts N$`, r.stderr)
		assert.Regexp(t, `(?m)^\s+--checkpoint-every DURATION$`, r.stderr)
		assert.Contains(t, r.stderr, "(default 1m)", "a duration's default as one types it")
	})
}

// TestCLIVersion: one line, the version set with -ldflags "-X main.version=…" or else the
// module's version from the build information, or "devel" (as in a test binary).
func TestCLIVersion(t *testing.T) {
	r := cliOK(t, "--version")
	assert.Regexp(t, `^nioc-gpu \S+\n$`, r.stdout)
	assert.Empty(t, r.stderr)
	defer func(v string) { version = v }(version)
	version = "v1.2.3"
	assert.Equal(t, "nioc-gpu v1.2.3\n", cliOK(t, "--version").stdout)
}

// TestCLIExitStatus checks run's mapping of a command's error to the exit status with
// commands registered only for the test.
func TestCLIExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
		msg  string
	}{
		{"ok", nil, 0, ""},
		{"help", flag.ErrHelp, 0, ""},
		{"usage", usagef("--foo is bad"), 2, "nioc-gpu test-usage: --foo is bad\nrun `nioc-gpu test-usage -h` for help"},
		{"failure", errors.New("disk on fire"), 1, "nioc-gpu test-failure: disk on fire"},
		{"interrupted", errInterrupted, 130, ""},
		{"wrapped interrupted", errors.Join(errors.New("ctx"), errInterrupted), 130, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "test-" + strings.ReplaceAll(tc.name, " ", "-")
			register(command{name: name, summary: "test", run: func([]string, io.Writer, io.Writer) error { return tc.err }})
			t.Cleanup(func() { delete(commands, name) })
			r := cliRun(t, name)
			assert.Equal(t, tc.code, r.code)
			if tc.msg != "" {
				assert.Contains(t, r.stderr, tc.msg)
			}
		})
	}
}
