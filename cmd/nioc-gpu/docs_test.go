package main

// The documents' commands, run as a reader runs them: every fenced ```sh block of README.md
// and docs/tutorial.md is run by sh, in order, in a temporary directory per document, with
// nioc-gpu on the PATH (this package's test binary, through TestCLIHelperProcess: the
// command line of the tree under test). Each block must exit with status 0, and the files the
// document says its commands write must be there. A block that cannot run in a test is
// skipped only where docSkips names it and says why; a size is changed only where
// docSubstitutions says so and why. An entry of either that no longer matches anything fails
// the test, so that neither list outlives the text it was written for.

import (
	"bufio"
	"bytes"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docSkip is a command of the documents that the test does not run, with the reason: a
// block is skipped when every command in it begins with one of the prefixes of docSkips.
type docSkip struct{ prefix, reason string }

var docSkips = []docSkip{
	{"make demo", "builds bin/nioc-gpu and writes out/demo in the checkout (not a temporary directory); .ci/run runs it"},
	{"make test", "the test suite itself, which runs this test"},
}

// docSubstitution changes a document's command line for the test: from must occur in the
// document's commands, and is replaced by to.
type docSubstitution struct{ doc, from, to, reason string }

var docSubstitutions = []docSubstitution{
	{"docs/tutorial.md", "--warmup 200 --draws 300", "--warmup 10 --draws 10 --chains 2",
		"the tutorial's posterior takes minutes on 2 cores; 2 chains of 10 + 10 draws write every file and figure in seconds"},
}

// docCase is a document whose ```sh blocks are run, with what it needs before them (files a
// reader has already, made by setup) and what it says they write (check).
type docCase struct {
	path  string
	setup func(t *testing.T, dir string)
	check func(t *testing.T, dir string)
}

var docCases = []docCase{
	{
		path: "README.md",
		// "Your own data in three commands" begins with the reader's CSV file (shown, not
		// made by a command): a pendulum study of 2 subjects × 10 trials stands in for it.
		setup: func(t *testing.T, dir string) {
			cliSimulate(t, dir, "study.csv", "--task", "pendulum", "--subjects", "2", "--trials", "10")
		},
		// "3. Read the results": one JSON line per subject in study-fit.jsonl, a table in
		// study-fit.csv, with the fields the README names.
		check: func(t *testing.T, dir string) {
			recs := cliReadJSONL(t, filepath.Join(dir, "study-fit.jsonl"))
			require.Len(t, recs, 2)
			for _, r := range recs {
				for _, f := range []string{"params", "ci95_natural", "loglik", "aic", "bic", "check", "identified", "data_digest", "task_digest", "version"} {
					assert.Contains(t, r, f, "README: the results have %s", f)
				}
			}
			assert.Len(t, cliReadCSV(t, filepath.Join(dir, "study-fit.csv")), 3, "a header and one row per subject")
		},
	},
	{
		path:  "docs/tutorial.md",
		check: checkTutorial,
	},
}

// tutorialFields are the fields of fit's results and sample's summaries that the tutorial
// explains: each must be in its text (`name`) and in the files its commands wrote.
var tutorialFields = struct{ fit, summaryCSV, summaryJSON []string }{
	fit:         []string{"params", "ci95_natural", "uncertainty", "loglik", "check", "identified", "restarts_at_best", "converged", "data_digest", "task_digest"},
	summaryCSV:  []string{"mean", "q5", "q50", "q95", "rhat", "ess_bulk"},
	summaryJSON: []string{"warnings"},
}

// checkTutorial checks the files the tutorial's commands write, the fields it explains and
// its figures.
func checkTutorial(t *testing.T, dir string) {
	text, err := os.ReadFile(docPath(t, "docs/tutorial.md"))
	require.NoError(t, err)
	for _, f := range []string{"wrist.toml", "lab.csv", "lab-fit.jsonl", "lab-fit.csv", "lab-post/draws.csv",
		"lab-post/summary.csv", "lab-post/summary.json"} {
		assert.FileExists(t, filepath.Join(dir, f))
		assert.True(t, strings.Contains(string(text), "`"+filepath.Base(f)+"`"), "the tutorial names `%s`", filepath.Base(f))
	}
	subjects := map[string]bool{}
	for _, row := range cliReadCSV(t, filepath.Join(dir, "lab.csv"))[1:] {
		subjects[row[0]] = true
	}
	assert.Len(t, subjects, 3, "the lab's study has three subjects")

	recs := cliReadJSONL(t, filepath.Join(dir, "lab-fit.jsonl"))
	require.Len(t, recs, 3)
	for _, f := range tutorialFields.fit {
		assert.True(t, strings.Contains(string(text), "`"+f+"`"), "the tutorial explains `%s`", f)
		for _, r := range recs {
			assert.Contains(t, r, f, "fit's results have %s", f)
		}
	}
	rows := cliReadCSV(t, filepath.Join(dir, "lab-post", "summary.csv"))
	for _, f := range tutorialFields.summaryCSV {
		assert.True(t, strings.Contains(string(text), "`"+f+"`"), "the tutorial explains `%s`", f)
		assert.Contains(t, rows[0], f, "summary.csv has %s", f)
	}
	summary, err := os.ReadFile(filepath.Join(dir, "lab-post", "summary.json"))
	require.NoError(t, err)
	for _, f := range tutorialFields.summaryJSON {
		assert.True(t, strings.Contains(string(text), "`"+f+"`"), "the tutorial explains `%s`", f)
		assert.Contains(t, string(summary), `"`+f+`"`, "summary.json has %s", f)
	}

	// Its figures are docs/figures/tutorial-NAME.png, drawn by its commands as
	// lab-post/NAME.png: the commands still write them, in the same layout.
	figures := regexp.MustCompile(`\]\((figures/tutorial-([^)]+\.png))\)`).FindAllStringSubmatch(string(text), -1)
	require.NotEmpty(t, figures, "the tutorial shows a figure")
	for _, m := range figures {
		stored := docPath(t, filepath.Join("docs", m[1]))
		written := filepath.Join(dir, "lab-post", m[2])
		ws, ss := pngSize(t, written), pngSize(t, stored)
		assert.Equal(t, ws, ss, "%s is %v, the command now draws %v: redraw it with the tutorial's commands", stored, ss, ws)
	}
}

// pngSize returns the width and height of a PNG file.
func pngSize(t *testing.T, path string) [2]int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err, path)
	return [2]int{cfg.Width, cfg.Height}
}

// docPath returns the path of a file of the repository given relative to its root.
func docPath(t *testing.T, rel string) string {
	t.Helper()
	return filepath.Join("..", "..", filepath.FromSlash(rel))
}

// docBlock is a fenced ```sh block: its first line in the document and its text.
type docBlock struct {
	line int
	text string
}

// shBlocks returns the fenced blocks of a Markdown text whose info string is sh.
func shBlocks(text string) []docBlock {
	var out []docBlock
	var cur *docBlock
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh":
			cur = &docBlock{line: n}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}

// blockCommands returns the first lines of a block's commands: its lines that are neither
// blank nor comments nor continuations (of a line ending in \ or of a here-document).
func blockCommands(text string) []string {
	var out []string
	continued, heredoc := false, ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case heredoc != "":
			if trimmed == heredoc {
				heredoc = ""
			}
			continue
		case continued:
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		default:
			out = append(out, trimmed)
		}
		continued = strings.HasSuffix(trimmed, `\`)
		if m := regexp.MustCompile(`<<-?\s*'?"?(\w+)`).FindStringSubmatch(trimmed); m != nil {
			heredoc = m[1]
		}
	}
	return out
}

// skipReason returns why a block is not run, "" when it is run; a block mixing commands to
// skip with others is an error.
func skipReason(b docBlock, used map[string]bool) (string, error) {
	var reasons []string
	skipped := 0
	cmds := blockCommands(b.text)
	for _, c := range cmds {
		for _, s := range docSkips {
			if strings.HasPrefix(c, s.prefix) {
				skipped++
				used[s.prefix] = true
				reasons = append(reasons, fmt.Sprintf("%s: %s", s.prefix, s.reason))
				break
			}
		}
	}
	switch {
	case skipped == 0:
		return "", nil
	case skipped < len(cmds):
		return "", fmt.Errorf("the block at line %d mixes commands the test skips with others: put them in blocks of their own", b.line)
	}
	return strings.Join(reasons, "; "), nil
}

func TestDocsCommands(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the documents' commands are POSIX shell")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	// nioc-gpu on the PATH: this test binary, running the command line as main does.
	bin := t.TempDir()
	self, err := os.Executable()
	require.NoError(t, err)
	wrapper := fmt.Sprintf("#!/bin/sh\nNIOC_GPU_HELPER_PROCESS=1 exec '%s' -test.run='^TestCLIHelperProcess$' -- \"$@\"\n", self)
	require.NoError(t, os.WriteFile(filepath.Join(bin, "nioc-gpu"), []byte(wrapper), 0o755))

	usedSkips, usedSubs := map[string]bool{}, map[int]bool{}
	for _, dc := range docCases {
		t.Run(dc.path, func(t *testing.T) {
			text, err := os.ReadFile(docPath(t, dc.path))
			require.NoError(t, err)
			blocks := shBlocks(string(text))
			require.NotEmpty(t, blocks, "%s has no ```sh blocks", dc.path)
			dir := t.TempDir()
			if dc.setup != nil {
				dc.setup(t, dir)
			}
			for _, b := range blocks {
				reason, err := skipReason(b, usedSkips)
				require.NoError(t, err, dc.path)
				if reason != "" {
					t.Logf("%s:%d not run: %s", dc.path, b.line, reason)
					continue
				}
				script := b.text
				for i, s := range docSubstitutions {
					if s.doc == dc.path && strings.Contains(script, s.from) {
						script = strings.ReplaceAll(script, s.from, s.to)
						usedSubs[i] = true
						t.Logf("%s:%d: %q run as %q (%s)", dc.path, b.line, s.from, s.to, s.reason)
					}
				}
				start := time.Now()
				cmd := exec.Command(sh, "-e", "-c", script)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err = cmd.Run()
				require.NoError(t, err, "%s:%d: the block\n%s\nfailed; its output:\n%s", dc.path, b.line, b.text, out.String())
				t.Logf("%s:%d ran in %v", dc.path, b.line, time.Since(start).Round(time.Millisecond))
			}
			if dc.check != nil {
				dc.check(t, dir)
			}
		})
	}
	for _, s := range docSkips {
		assert.True(t, usedSkips[s.prefix], "docSkips: no document has a block of %q any more: remove it", s.prefix)
	}
	for i, s := range docSubstitutions {
		assert.True(t, usedSubs[i], "docSubstitutions: %s has no command with %q any more: remove or update it", s.doc, s.from)
	}
}

// TestDocBlocks: the extraction of blocks and of their commands, and the refusal of a block
// that mixes skipped commands with others.
func TestDocBlocks(t *testing.T) {
	md := "text\n```sh\nnioc-gpu fit \\\n  --out a.jsonl   # fit\n# a comment\n\ncat > f.toml <<'EOF'\nname = \"x\"\nEOF\n```\n" +
		"```\nnot sh\n```\n```sh\nmake demo\nmake test\n```\n```sh\nmake demo\nnioc-gpu tasks\n```\n"
	blocks := shBlocks(md)
	require.Len(t, blocks, 3)
	assert.Equal(t, 2, blocks[0].line)
	assert.Equal(t, []string{"nioc-gpu fit \\", "cat > f.toml <<'EOF'"}, blockCommands(blocks[0].text))
	used := map[string]bool{}
	r, err := skipReason(blocks[0], used)
	assert.NoError(t, err)
	assert.Empty(t, r)
	r, err = skipReason(blocks[1], used)
	assert.NoError(t, err)
	assert.Contains(t, r, "make demo")
	assert.Contains(t, r, "make test")
	_, err = skipReason(blocks[2], used)
	assert.Error(t, err)
}
