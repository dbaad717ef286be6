package main

// The documents' commands, run as a reader runs them. Every fenced ```sh block of README.md
// and of every docs/*.md, and every `$ ` line of a plain fenced block that shows a session
// (docs/tasks.md), is run by sh, in order, in a temporary directory per document laid out as
// the checkout is where the commands need it: nioc-gpu on the PATH and as bin/nioc-gpu (this
// package's test binary, through TestCLIHelperProcess: the command line of the tree under
// test), bench/ and examples/ linked to the checkout's. Each block must exit with status 0, and
// the files the document says its commands write must be there. What a reader has before a
// document's first command (a study's CSV file, a fit) is made by its docCase's setup.
//
// A block that cannot run in a test is skipped only where docSkips names its commands and
// says why (.ci/run runs some of them); a block of Python commands runs where python3 is
// installed (docNeeds); a size is changed only where docSubstitutions says so and why. An
// entry of docSkips, docSubstitutions or docCases that no longer matches anything fails the
// test, so that none outlives the text it was written for. A command outside ```sh blocks (in
// an indented block or a plain fence, where it would not run) fails TestDocsNoHiddenCommands,
// unless it is a synopsis (`[--flag]`).
//
// TestDocsCommandLines (docs_lines_test.go) checks every command of the documents without
// running it, the commands in prose and tables too: that the command, make target, script or
// program exists and takes every flag written with it.

import (
	"bytes"
	"context"
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
	{"make test", "the test suite itself, which runs this test; .ci/run runs it"},
	{"make xla-cpu", "downloads a 200 MB wheel from PyPI (the tests need no network); the XLA tests run where it is installed"},
	{"make xla-cuda", "downloads 3 GB of wheels from PyPI for a CUDA GPU"},
	{"python3 bench/jaxref/robustness.py", "its commands in the documents simulate with the JAX reference's agent (--agents ref): a checkout of RothkopfLab/nioc-neurips (REF) and a Python with JAX (JAXENV); hours on 2 cores"},
	{"python3 bench/intervals/agent_bootstrap.py", "reads a robustness study of the reference's agent (DIR, made by robustness.py with REF); hours on 2 cores"},
	{"python3 bench/intervals/coverage.py", "scores the fits of a robustness study of the reference's agent (DIR, made by robustness.py with REF) against its truths; the fits take hours on 2 cores"},
	{"python3 -m venv bench/lqg/.venv", "installs lqg 0.3.1 and JAX from PyPI into the checkout (the tests need no network)"},
	{"bench/lqg/.venv/bin/", "runs lqg 0.3.1 from the virtual environment bench/lqg/.venv, which the tests do not install; about 40 minutes on 2 cores"},
}

// docNeeds are programs some blocks need besides sh and nioc-gpu: a block whose commands
// all begin with prefix runs where tool is on the PATH, and is logged as not run elsewhere.
var docNeeds = []struct{ prefix, tool string }{
	{"python3 ", "python3"},
}

// docSubstitution changes a document's command line for the test: from must occur in the
// document's commands that are run, and is replaced by to.
type docSubstitution struct{ doc, from, to, reason string }

// docSample is the size of the posteriors the test draws: every file and figure of sample in
// seconds.
const docSample = "--warmup 10 --draws 10 --chains 2 --max-depth 4"

var docSubstitutions = []docSubstitution{
	{"docs/tutorial.md", "--warmup 200 --draws 300", docSample,
		"the tutorial's posterior takes minutes on 2 cores; 2 chains of 10 + 10 draws write every file and figure in seconds"},

	{"docs/guide.md", "--subjects 10 --trials 50", "--subjects 2 --trials 5", "a small study"},
	{"docs/guide.md", "--restarts 50", "--restarts 2", "2 restarts write the same files as 50"},
	{"docs/guide.md", "${SLURM_ARRAY_TASK_ID}", "1", "the array task's id, which Slurm sets: the test runs task 1 as a plain script (make slurm-check runs the job under Slurm)"},
	{"docs/guide.md", "--sets 100 --trials 50", "--sets 2 --trials 5", "the evaluation's 100 sets × 50 trials take hours"},
	{"docs/guide.md", "--sets 1 --trials 100", "--sets 1 --trials 5 --restarts 2", "a small light-dark evaluation"},

	{"docs/posterior.md", " --out study-post", " " + docSample + " --out study-post", "sample's default 4 chains × (500 + 1000) draws take minutes"},
	{"docs/posterior.md", "--warmup 150 --draws 100", docSample, "4 chains × (150 + 100) draws of reaching take 18 minutes"},
	{"docs/posterior.md", "--trials 50 --seed 4", "--trials 5 --seed 4", "a small reaching study"},
	{"docs/posterior.md", "--restarts 20 --seed 1", "--restarts 2 --seed 1", "2 restarts write the same files as 20"},
	{"docs/posterior.md", "--sets 100 --trials 50", "--sets 2 --trials 5", "the calibration's 100 sets take hours to sample"},
	{"docs/posterior.md", "go run ./bench/sbc", "bench-sbc", "go run needs the checkout's module: the setup built ./bench/sbc from it onto the PATH"},
	{"docs/posterior.md", "--thin 99", "--thin 9", "2 chains × 10 draws: the truth ranked among 9 of them"},
	{"docs/posterior.md", "--data ld.csv --out", "--data ld.csv --restarts 2 --out", "fit's default 50 restarts"},
	{"docs/posterior.md", "--restarts 8", "--restarts 2", "2 restarts write the same files as 8"},

	{"docs/results.md", "TASK", "pendulum", "a placeholder: the table's rows are the tasks"},
	{"docs/results.md", "OBS", "partial", "a placeholder: partial or full"},
	{"docs/results.md", "LIN", "data", "a placeholder: the table's column LIN"},
	{"docs/results.md", "--sets 100 --trials 50 --restarts 20", "--sets 2 --trials 5 --restarts 2", "the study's 100 sets take hours; most of its 10 shards are then empty, which eval allows"},

	{"docs/groups.md", "--groups control=20,patient=20", "--groups control=3,patient=3", "a small population"},
	{"docs/groups.md", "--trials 10 --seed 1", "--trials 3 --seed 1", "a small population"},
	{"docs/groups.md", "--out pop", "--restarts 2 --out pop", "population's default 20 restarts of each independent fit"},
	{"docs/groups.md", "--out hier", docSample + " --out hier", "sample's default 4 chains × (500 + 1000) draws take minutes"},
	{"docs/groups.md", "--subjects 20 --seed 1", "--subjects 3 --trials 5 --seed 1", "20 light-dark subjects × 50 trials, fitted twice"},
	{"docs/groups.md", "--restarts 20 --out", "--restarts 2 --out", "2 restarts write the same files as 20"},
	{"docs/groups.md", "--subjects 40 --trials 3", "--subjects 4 --trials 3", "a small study"},
	{"docs/groups.md", "--trials 10 --studies", "--trials 3 --studies", "a small study"},
	{"docs/groups.md", "--studies 20 --out DIR", "--studies 1 --restarts 2 --out DIR", "one small study of the 20"},
	{"docs/groups.md", "make build\n", "", "bin/nioc-gpu is there: the test's, the command line of the tree under test"},
	{"docs/groups.md", "compare_planners.py --bin bin/nioc-gpu --studies 20 --out", "compare_planners.py --bin bin/nioc-gpu --studies 1 --subjects 8 --trials 2 --restarts 2 --out",
		"one small study of the 40 (the script fails unless PXP > 0.9, which 8 subjects can reach)"},
	{"docs/groups.md", "compare_planners.py --bin bin/nioc-gpu --studies 20 --trials 1", "compare_planners.py --bin bin/nioc-gpu --studies 1 --subjects 8 --trials 1 --restarts 2",
		"one small study of the 40"},

	{"docs/tasks.md", "--trials 50 --out saccade.csv", "--trials 5 --out saccade.csv", "a small study"},

	{"docs/tracking.md", "--subjects 6 --trials 20", "--subjects 2 --trials 3 --steps 100", "6 subjects × 20 trials × 1,067 steps take 2 minutes to fit under three models"},
	{"docs/tracking.md", "--temperature task --out", "--temperature task --restarts 2 --check-draws 3 --out", "2 restarts and 3 check draws write the same files as 50 and 20"},
	{"docs/tasks.md", "--data saccade.csv --out", "--data saccade.csv --restarts 2 --out", "fit's default 50 restarts"},
}

// docCase is what a document's commands need before them (files a reader has already, made
// by setup) and what they write: files (relative to the document's directory) that must be
// there after them, and check, further checks. A document with runnable blocks and no
// docCase runs them without either.
type docCase struct {
	setup  func(t *testing.T, dir string)
	writes []string
	check  func(t *testing.T, dir string)
}

var docCases = map[string]docCase{
	"README.md": {
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
	"docs/tutorial.md": {check: checkTutorial},
	// The tracking tutorial: its study, the three models' fits and their comparison.
	"docs/tracking.md": {writes: []string{"study.csv", "bounded.jsonl", "optimal.jsonl", "relative.jsonl", "bms/bms.json", "bms/subjects.csv", "bms/bms.png"}},
	// "Fitting many subjects", the Slurm job (task 1 of 16), "Simulating a population" (its
	// three files) and "The paper's evaluation" (the files and figures it names).
	"docs/guide.md": {writes: []string{
		"study.csv", "study-fit.jsonl", "study-fit.csv", "fits/shard-1.jsonl",
		"data.csv", "data.truth.csv", "data.subjects.csv",
		"eval/errors.png", "eval/infoseeking/lightdark_maps.png",
		"eval/reaching/truth.csv", "eval/reaching/data.csv", "eval/reaching/fit-ours.jsonl", "eval/reaching/fit-baseline.jsonl",
		"eval/reaching/estimates.csv", "eval/reaching/summary.json", "eval/reaching/true_vs_estimated.png",
		"eval/reaching/errors.png", "eval/reaching/trajectories.png",
	}},
	"docs/posterior.md": {
		// The reader's study and fit of the README; the light-dark set of the table's first
		// row ("nioc-gpu simulate --task lightdark --trials 500 --seed S --params …"), 5
		// trials; bench/sbc built from the checkout.
		setup: func(t *testing.T, dir string) {
			cliSimulate(t, dir, "study.csv", "--task", "pendulum", "--subjects", "2", "--trials", "10")
			cliOK(t, "fit", "--task", "pendulum", "--data", filepath.Join(dir, "study.csv"), "--restarts", "2", "--quiet",
				"--out", filepath.Join(dir, "study-fit.jsonl"))
			cliSimulate(t, dir, "ld.csv", "--task", "lightdark", "--trials", "5", "--seed", "3",
				"--params", "light_cost=0.1,sigma=0.1,target_x=0")
			docGoBuild(t, "./bench/sbc", filepath.Join(dir, "bin", "bench-sbc"))
		},
		writes: []string{
			"study-post/draws.csv", "study-post/summary.json", "study-post-init/summary.csv",
			"reach-fit.jsonl", "reach-post/summary.json", "reach-post/corner-1.png",
			"sbc/lin/truth.csv", "sbc/lin-post/draws.csv", "sbc/fit.jsonl",
			"ld-data.jsonl", "ld-ilqg.jsonl",
		},
	},
	"docs/results.md": {writes: []string{"out/full/pendulum-partial/summary.json", "out/full/pendulum-partial/estimates.csv"}},
	// The population fit's files (its --out's help lists them), the hierarchical posterior's,
	// compare-models' and the two scripts' summaries.
	"docs/groups.md": {writes: []string{
		"study.csv", "study.truth.csv", "study.subjects.csv",
		"pop/independent.jsonl", "pop/em.jsonl", "pop/population.json", "pop/population.csv", "pop/subjects.csv",
		"pop/population.png", "pop/shrinkage.png",
		"hier/hierarchical.json", "hier/draws.csv",
		"bms/bms.json", "bms/subjects.csv", "bms/bms.png",
		"DIR/summary.json", "out/groups/summary.csv", "out/groups-1trial/summary.csv",
	}},
	"docs/tasks.md": {writes: []string{"saccade.csv", "saccade-fit.jsonl", "saccade-fit.csv"}},
}

// docGoBuild builds the package pkg of the checkout (a path relative to its root) into out.
func docGoBuild(t *testing.T, pkg, out string) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goCmd, "build", "-o", out, pkg)
	cmd.Dir = docPath(t, ".")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, b)
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

// docFiles returns the documents, relative to the repository's root: README.md and
// docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(docPath(t, "docs/*.md"))
	require.NoError(t, err)
	out := []string{"README.md"}
	for _, p := range paths {
		out = append(out, "docs/"+filepath.Base(p))
	}
	require.Greater(t, len(out), 2, "no docs/*.md")
	return out
}

// docBlock is a code block of a Markdown document: its first line in the document, its text
// and its info string (fenced) or indented true.
type docBlock struct {
	line     int
	text     string
	info     string
	indented bool
}

// docDir makes a document's temporary directory: bin/nioc-gpu runs this test binary as
// nioc-gpu, bench/ and examples/ are the checkout's.
func docDir(t *testing.T) string {
	dir := t.TempDir()
	self, err := os.Executable()
	require.NoError(t, err)
	wrapper := fmt.Sprintf("#!/bin/sh\nNIOC_GPU_HELPER_PROCESS=1 exec '%s' -test.run='^TestCLIHelperProcess$' -- \"$@\"\n", self)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "nioc-gpu"), []byte(wrapper), 0o755))
	for _, d := range []string{"bench", "examples"} {
		abs, err := filepath.Abs(docPath(t, d))
		require.NoError(t, err)
		require.NoError(t, os.Symlink(abs, filepath.Join(dir, d)))
	}
	return dir
}

func TestDocsCommands(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the documents' commands are POSIX shell")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	usedSkips, usedSubs, cased, ran := map[string]bool{}, map[int]bool{}, map[string]bool{}, map[string]bool{}
	for _, doc := range docFiles(t) {
		text, err := os.ReadFile(docPath(t, doc))
		require.NoError(t, err)
		all, _ := markdownBlocks(string(text))
		blocks := runnableBlocks(all)
		if len(blocks) == 0 {
			continue
		}
		dc := docCases[doc]
		cased[doc] = true
		t.Run(doc, func(t *testing.T) {
			ran[doc] = true
			dir := docDir(t)
			if dc.setup != nil {
				dc.setup(t, dir)
			}
			for _, b := range blocks {
				reason, err := skipReason(b, usedSkips)
				require.NoError(t, err, doc)
				if reason != "" {
					t.Logf("%s:%d not run: %s", doc, b.line, reason)
					continue
				}
				script := b.text
				for i, s := range docSubstitutions {
					if s.doc == doc && strings.Contains(script, s.from) {
						script = strings.ReplaceAll(script, s.from, s.to)
						usedSubs[i] = true
						t.Logf("%s:%d: %q run as %q (%s)", doc, b.line, s.from, s.to, s.reason)
					}
				}
				if tool := missingTool(b); tool != "" {
					t.Logf("%s:%d not run: no %s here", doc, b.line, tool)
					continue
				}
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				cmd := exec.CommandContext(ctx, sh, "-e", "-c", script)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
					"PYTHONDONTWRITEBYTECODE=1")
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err = cmd.Run()
				cancel()
				require.NoError(t, err, "%s:%d: the block\n%s\nrun as\n%s\nfailed; its output:\n%s", doc, b.line, b.text, script, out.String())
				t.Logf("%s:%d ran in %v", doc, b.line, time.Since(start).Round(time.Millisecond))
			}
			for _, f := range dc.writes {
				assert.FileExists(t, filepath.Join(dir, filepath.FromSlash(f)), "%s: its commands write %s", doc, f)
			}
			if dc.check != nil {
				dc.check(t, dir)
			}
		})
	}
	if len(ran) < len(cased) || t.Failed() {
		return // -run chose some documents, or one failed: the lists are checked when all pass
	}
	for doc := range docCases {
		assert.True(t, cased[doc], "docCases: %s has no commands to run any more: remove its case", doc)
	}
	for _, s := range docSkips {
		assert.True(t, usedSkips[s.prefix], "docSkips: no document has a block of %q any more: remove it", s.prefix)
	}
	for i, s := range docSubstitutions {
		assert.True(t, usedSubs[i], "docSubstitutions: %s has no command with %q any more: remove or update it", s.doc, s.from)
	}
}

// TestDocsNoHiddenCommands: every command of the documents is in a ```sh block (or a
// session's `$ ` line), where TestDocsCommands runs it, not in an indented block or a plain
// fence where it would not; a synopsis (`[--flag]`) is no command.
func TestDocsNoHiddenCommands(t *testing.T) {
	for _, doc := range docFiles(t) {
		text, err := os.ReadFile(docPath(t, doc))
		require.NoError(t, err)
		blocks, _ := markdownBlocks(string(text))
		for _, b := range blocks {
			if b.info == "sh" || b.info == "json" || b.info == "toml" || b.info == "go" || b.info == "python" {
				continue
			}
			for i, line := range strings.Split(b.text, "\n") {
				if isSessionLine(b, line) {
					continue // run
				}
				c := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
				if kind, _ := docCheckCommand(c); kind != "" && !strings.Contains(c, "[-") {
					t.Errorf("%s:%d: a command outside a ```sh block, which the tests would not run: %s", doc, b.line+i+boolInt(!b.indented), c)
				}
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDocBlocks: the extraction of blocks and of their commands, and the refusal of a block
// that mixes skipped commands with others.
func TestDocBlocks(t *testing.T) {
	md := "text\n```sh\nnioc-gpu fit \\\n  --out a.jsonl   # fit\n# a comment\n\ncat > f.toml <<'EOF'\nname = \"x\"\nEOF\n```\n" +
		"```\nnot sh\n```\n```sh\nmake demo\nmake test\n```\n```sh\nmake demo\nnioc-gpu tasks\n```\n" +
		"\n    nioc-gpu tasks\n    make build\n\nprose `code`\n```\n$ nioc-gpu tasks\noutput\n```\n"
	all, prose := markdownBlocks(md)
	require.Len(t, all, 6)
	assert.Equal(t, "sh", all[0].info)
	assert.Equal(t, "", all[1].info)
	assert.True(t, all[4].indented)
	assert.Equal(t, 23, all[4].line)
	assert.Equal(t, "nioc-gpu tasks\nmake build\n\n", all[4].text)
	assert.Equal(t, strings.Count(md, "\n"), strings.Count(prose, "\n")-1, "the prose keeps the lines")
	assert.Equal(t, "prose `code`", strings.Split(prose, "\n")[25])

	blocks := runnableBlocks(all)
	require.Len(t, blocks, 4)
	assert.Equal(t, 2, blocks[0].line)
	assert.Equal(t, []string{"nioc-gpu fit --out a.jsonl   # fit", "cat > f.toml <<'EOF'"}, blockCommands(blocks[0].text))
	assert.Equal(t, "nioc-gpu tasks\n", blocks[3].text, "a session's commands")
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
