package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliSampleArgs are the flags of a small, fast sampling run of the linear task.
// cliSampleArgs start the chains by climbs (--init optimize), which skips the default's fit
// (TestCLISampleInitFit tests that); a later --init replaces it.
var cliSampleArgs = []string{"--task", "linear", "--temperature", "task", "--chains", "2", "--warmup", "20", "--draws", "15", "--quiet", "--init", "optimize"}

// cliSample samples data into the directory out and returns the result.
func cliSample(t *testing.T, data, out string, args ...string) cliResult {
	t.Helper()
	a := append([]string{"sample"}, cliSampleArgs...)
	a = append(a, "--data", data, "--out", out)
	return cliOK(t, append(a, args...)...)
}

// cliSummary reads DIR/summary.json.
func cliSummary(t *testing.T, dir string) map[string]any {
	t.Helper()
	var sum map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(dir, "summary.json")), &sum))
	return sum
}

// cliSummarySubjects returns the subjects of a summary.json by ID.
func cliSummarySubjects(t *testing.T, sum map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, s := range sum["subjects"].([]any) {
		m := s.(map[string]any)
		out[m["subject"].(string)] = m
	}
	return out
}

// cliWarnings returns the warnings of a subject in summary.json as kind → parameters.
func cliWarnings(subject map[string]any) map[string][]string {
	out := map[string][]string{}
	ws, _ := subject["warnings"].([]any)
	for _, w := range ws {
		m := w.(map[string]any)
		p, _ := m["parameter"].(string)
		out[m["kind"].(string)] = append(out[m["kind"].(string)], p)
	}
	return out
}

func TestCLISample(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--steps", "5", "--subjects", "2")
	params := []string{"action_cost", "motor_noise", "obs_noise"}

	t.Run("outputs", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "post")
		r := cliSample(t, data, out)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "sampling linear (ours, partial observability) for 2 subject(s): 2 chains × (20 warm-up + 15 draws); sampled: action_cost, motor_noise, obs_noise; priors: uniform")
		assert.Contains(t, r.stderr, "done: 2 subject(s) in "+out)
		assert.Contains(t, r.stderr, "note: with --init optimize the likelihood is widened by its curvature alone", "points to fit's intervals")
		// 30 draws are far too few: every parameter warns of its bulk ESS, naming subject and parameter.
		for _, s := range []string{"1", "2"} {
			for _, p := range params {
				assert.Contains(t, r.stderr, "warning: subject "+s+": "+p+": bulk ESS")
			}
		}

		rows := cliReadCSV(t, filepath.Join(out, "draws.csv"))
		assert.Equal(t, []string{"subject", "chain", "draw", "action_cost", "motor_noise", "obs_noise", "log_posterior",
			"divergent", "tree_depth", "step_size", "energy", "accept_stat", "n_leapfrog"}, rows[0])
		require.Len(t, rows, 1+2*2*15, "header and subjects × chains × draws")
		assert.Equal(t, []string{"1", "1", "1"}, rows[1][:3])
		assert.Equal(t, []string{"2", "2", "15"}, rows[len(rows)-1][:3])
		bounds := map[string][2]float64{"action_cost": {1e-3, 10}, "motor_noise": {1e-3, 1}, "obs_noise": {1e-2, 2}}
		for _, row := range rows[1:] {
			for j, p := range params {
				v := cliParseFloat(t, row[3+j], p)
				assert.True(t, v >= bounds[p][0] && v <= bounds[p][1], "%s = %g in natural units, inside its box", p, v)
			}
			cliParseFloat(t, row[6], "log_posterior")
			assert.Contains(t, []string{"true", "false"}, row[7])
			depth, err := strconv.Atoi(row[8])
			require.NoError(t, err)
			assert.True(t, depth >= 0 && depth <= 10)
			assert.Positive(t, cliParseFloat(t, row[9], "step_size"))
			// The Hamiltonian at the draw: −log_posterior plus a kinetic energy ≥ 0.
			assert.GreaterOrEqual(t, cliParseFloat(t, row[10], "energy")+cliParseFloat(t, row[6], "log_posterior"), 0.0)
			accept := cliParseFloat(t, row[11], "accept_stat")
			assert.True(t, accept >= 0 && accept <= 1, "accept_stat %g in [0, 1]", accept)
			steps, err := strconv.Atoi(row[12])
			require.NoError(t, err)
			assert.True(t, steps >= 1<<depth-1 && steps <= 1<<(depth+1)-1, "n_leapfrog %d of a tree of depth %d", steps, depth)
		}
		// summary.json's E-BFMI of each chain is Σ (Eₙ − Eₙ₋₁)² / Σ (Eₙ − Ē)² of the energy column.
		energy := map[[2]string][]float64{}
		for _, row := range rows[1:] {
			k := [2]string{row[0], row[1]}
			energy[k] = append(energy[k], cliParseFloat(t, row[10], "energy"))
		}
		ebfmi := func(e []float64) float64 {
			var mean, num, den float64
			for _, v := range e {
				mean += v / float64(len(e))
			}
			for i, v := range e {
				if i > 0 {
					num += (v - e[i-1]) * (v - e[i-1])
				}
				den += (v - mean) * (v - mean)
			}
			return num / den
		}

		table := cliReadCSV(t, filepath.Join(out, "summary.csv"))
		assert.Equal(t, []string{"subject", "parameter", "scale", "mean", "sd", "q5", "q50", "q95", "rhat", "ess_bulk", "ess_tail"}, table[0])
		require.Len(t, table, 1+2*3)
		assert.Equal(t, []string{"1", "action_cost", "log10"}, table[1][:3])

		sum := cliSummary(t, out)
		run := sum["run"].(map[string]any)
		assert.Equal(t, "linear", run["task"])
		assert.Equal(t, 2.0, run["chains"])
		assert.Equal(t, 15.0, run["draws"])
		assert.Equal(t, false, run["cross_chain"])
		assert.NotContains(t, run, "max_warmup")
		assert.Equal(t, []any{"action_cost", "motor_noise", "obs_noise"}, run["sampled"])
		subjects := cliSummarySubjects(t, sum)
		require.Len(t, subjects, 2)
		for _, s := range []string{"1", "2"} {
			subj := subjects[s]
			assert.Equal(t, 3.0, subj["trials"])
			ps := subj["parameters"].(map[string]any)
			for i, p := range params {
				sp := ps[p].(map[string]any)
				q5, q50, q95 := cliFinite(t, sp["q5"], "q5"), cliFinite(t, sp["q50"], "q50"), cliFinite(t, sp["q95"], "q95")
				assert.True(t, q5 <= q50 && q50 <= q95, "%s quantiles ordered", p)
				assert.True(t, q5 >= bounds[p][0] && q95 <= bounds[p][1], "%s quantiles in natural units", p)
				for _, key := range []string{"mean", "sd", "rhat", "ess_bulk", "ess_tail"} {
					assert.Contains(t, sp, key)
				}
				// summary.csv holds the same numbers.
				row := table[1+3*(map[string]int{"1": 0, "2": 1}[s])+i]
				assert.Equal(t, []string{s, p}, row[:2])
				assert.Equal(t, sp["q50"], cliParseFloat(t, row[6], "q50"))
			}
			require.Len(t, subj["ebfmi"], 2, "E-BFMI per chain")
			for c, e := range subj["ebfmi"].([]any) {
				assert.InDelta(t, ebfmi(energy[[2]string{s, strconv.Itoa(c + 1)}]), cliFinite(t, e, "ebfmi"), 1e-12, "subject %s chain %d", s, c+1)
			}
			assert.Len(t, subj["step_size"], 2)
			assert.GreaterOrEqual(t, cliFinite(t, subj["divergences"], "divergences"), 0.0)
			assert.GreaterOrEqual(t, cliFinite(t, subj["seconds"], "seconds"), 0.0)
			assert.ElementsMatch(t, params, cliWarnings(subj)["ess_bulk"], "ESS warnings name the parameters")
		}
		assert.ElementsMatch(t, []any{"1", "2"}, sum["subjects_with_warnings"])
	})

	t.Run("same seed same draws, --force replaces", func(t *testing.T) {
		tmp := t.TempDir()
		a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
		cliSample(t, data, a, "--seed", "3")
		cliSample(t, data, b, "--seed", "3", "--together", "1")
		assert.Equal(t, mustRead(t, filepath.Join(a, "draws.csv")), mustRead(t, filepath.Join(b, "draws.csv")),
			"a subject's draws do not depend on the subjects sampled with it")
		cliSample(t, data, b, "--seed", "4", "--force")
		assert.NotEqual(t, mustRead(t, filepath.Join(a, "draws.csv")), mustRead(t, filepath.Join(b, "draws.csv")))
		assert.Equal(t, 4.0, cliSummary(t, b)["run"].(map[string]any)["seed"])
	})

	t.Run("--cross-chain and --max-warmup", func(t *testing.T) {
		tmp := t.TempDir()
		a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
		cliSample(t, data, a, "--cross-chain", "--max-warmup", "200")
		cliSample(t, data, b, "--cross-chain", "--max-warmup", "200", "--together", "1")
		assert.Equal(t, mustRead(t, filepath.Join(a, "draws.csv")), mustRead(t, filepath.Join(b, "draws.csv")),
			"a subject's chains pool with each other only")
		sum := cliSummary(t, a)
		run := sum["run"].(map[string]any)
		assert.Equal(t, true, run["cross_chain"])
		assert.Equal(t, 200.0, run["max_warmup"])
		for id, subj := range cliSummarySubjects(t, sum) {
			if w, ok := subj["warmup"]; ok {
				n := cliFinite(t, w, "warmup")
				assert.True(t, n > 20 && n <= 200, "subject %s warmed up for %g", id, n)
			}
		}
	})

	t.Run("refuses an existing --out", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "post")
		cliSample(t, data, out)
		before := cliHash(t, filepath.Join(out, "draws.csv"))
		a := append([]string{"sample"}, cliSampleArgs...)
		r := cliRun(t, append(a, "--data", data, "--out", out)...)
		cliRequireFail(t, r, 2, filepath.Join(out, "draws.csv")+" exists", "--resume", "--force")
		assert.Equal(t, before, cliHash(t, filepath.Join(out, "draws.csv")))
	})

	t.Run("tree depth and divergence warnings", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "post")
		r := cliSample(t, data, out, "--max-depth", "1", "--infer", "action_cost")
		assert.Contains(t, r.stderr, "draws reached the maximum tree depth 1")
		subj := cliSummarySubjects(t, cliSummary(t, out))["1"]
		assert.Equal(t, []string{"action_cost"}, cliWarnings(subj)["tree_depth"], "names the parameter")
		assert.Positive(t, cliFinite(t, subj["tree_depth_saturated"], "tree_depth_saturated"))

		out = filepath.Join(t.TempDir(), "post")
		r = cliSample(t, data, out, "--warmup", "0", "--infer", "action_cost")
		assert.Regexp(t, `warning: subject 1: \d+ of 30 draws divergent, most unlike the other draws in action_cost`, r.stderr)
		assert.Contains(t, r.stderr, "--target-accept")
		subj = cliSummarySubjects(t, cliSummary(t, out))["1"]
		assert.Positive(t, cliFinite(t, subj["divergences"], "divergences"))
		assert.Equal(t, []string{"action_cost"}, cliWarnings(subj)["divergences"])
	})

	t.Run("priors, fixed parameters and --init", func(t *testing.T) {
		tmp := t.TempDir()
		fitOut := filepath.Join(tmp, "fit.jsonl")
		cliFit(t, data, fitOut, "--temperature", "task")
		out := filepath.Join(tmp, "post")
		r := cliSample(t, data, out, "--fix", "obs_noise=0.2", "--prior", "action_cost=normal(-1,0.5)", "--init", fitOut)
		assert.Contains(t, r.stderr, "sampled: action_cost, motor_noise; priors: action_cost=normal(-1,0.5) (fitting scale); the others uniform")
		run := cliSummary(t, out)["run"].(map[string]any)
		assert.Equal(t, map[string]any{"action_cost": "normal(-1,0.5)"}, run["priors"])
		assert.Equal(t, map[string]any{"obs_noise": 0.2}, run["held"])
		assert.Equal(t, fitOut, run["init"])
		assert.Equal(t, []string{"subject", "chain", "draw", "action_cost", "motor_noise", "log_posterior", "divergent",
			"tree_depth", "step_size", "energy", "accept_stat", "n_leapfrog"}, cliReadCSV(t, filepath.Join(out, "draws.csv"))[0])

		// Without --init the chains start where climbs of the likelihood end; dispersed as Stan.
		for _, start := range []string{"optimize", "dispersed"} {
			out = filepath.Join(tmp, "post-"+start)
			args := []string{}
			if start == "dispersed" {
				args = []string{"--init", "dispersed"}
			}
			cliSample(t, data, out, args...)
			run := cliSummary(t, out)["run"].(map[string]any)
			assert.Equal(t, start, run["init"])
			assert.Equal(t, "dense", run["metric"])
		}
		assert.NotEqual(t, mustRead(t, filepath.Join(tmp, "post-optimize", "draws.csv")),
			mustRead(t, filepath.Join(tmp, "post-dispersed", "draws.csv")))

		// With the temperature sampled, the fit (at the task's temperature) has no estimate of it.
		out = filepath.Join(tmp, "post2")
		r = cliSample(t, data, out, "--init", fitOut, "--temperature", "fit", "--infer", "action_cost,temperature")
		assert.Contains(t, r.stderr, "holds no estimate of temperature: those chains start over-dispersed")
	})

	t.Run("--adjust bootstrap", func(t *testing.T) {
		// The likelihood moved and widened to fit's default (bootstrap) intervals.
		tmp := t.TempDir()
		long := cliSimulate(t, tmp, "long.csv", "--task", "linear", "--trials", "20", "--steps", "5", "--seed", "4")
		fitOut := filepath.Join(tmp, "fit.jsonl")
		cliOK(t, "fit", "--task", "linear", "--temperature", "task", "--restarts", "2", "--quiet", "--data", long, "--out", fitOut)
		rec := cliJSONLines(t, cliLines(t, fitOut)[0])[0]
		require.Contains(t, rec, "bootstrap", "the default fit ran the bootstrap")
		out := filepath.Join(tmp, "post")
		cliSample(t, long, out, "--adjust", "bootstrap", "--init", fitOut)
		sum := cliSummary(t, out)
		assert.Equal(t, "bootstrap", sum["run"].(map[string]any)["adjust"])
		subj := cliSummarySubjects(t, sum)["1"]
		assert.Equal(t, "bootstrap", subj["adjustment"])
		ratios := subj["adjustment_sd_ratio"].(map[string]any)
		for _, p := range params {
			assert.GreaterOrEqual(t, cliFinite(t, ratios[p], p), 1.0, p)
		}
		// By default (auto) too, since the fit ran the bootstrap: the same draws.
		auto := filepath.Join(tmp, "auto")
		r := cliSample(t, long, auto, "--init", fitOut)
		assert.NotContains(t, r.stderr, "by its curvature alone")
		assert.Equal(t, "bootstrap", cliSummary(t, auto)["run"].(map[string]any)["adjust"])
		assert.Equal(t, mustRead(t, filepath.Join(out, "draws.csv")), mustRead(t, filepath.Join(auto, "draws.csv")))

		// The default, --init fit, runs that fit itself (same restarts and seed) into
		// OUT/fit.jsonl: the same estimates, the same adjustment, the same draws.
		own := filepath.Join(tmp, "own")
		r = cliOK(t, "sample", "--task", "linear", "--temperature", "task", "--chains", "2", "--warmup", "20", "--draws", "15",
			"--fit-restarts", "2", "--data", long, "--out", own)
		assert.Contains(t, r.stderr, "fitting first (--init fit): 2 restarts a subject")
		assert.NotContains(t, r.stderr, "by its curvature alone")
		ownFit := filepath.Join(own, "fit.jsonl")
		assert.Equal(t, cliJSONLines(t, cliLines(t, fitOut)[0])[0]["params"], cliJSONLines(t, cliLines(t, ownFit)[0])[0]["params"])
		assert.FileExists(t, filepath.Join(own, "fit.csv"))
		run := cliSummary(t, own)["run"].(map[string]any)
		assert.Equal(t, "bootstrap", run["adjust"])
		assert.Equal(t, ownFit, run["init"], "the summary names the fit its chains started from")
		assert.Equal(t, mustRead(t, filepath.Join(out, "draws.csv")), mustRead(t, filepath.Join(own, "draws.csv")))

		// Its fit is an output: refused without --resume or --force, continued by --resume,
		// made again by --force.
		again := []string{"sample", "--task", "linear", "--temperature", "task", "--chains", "2", "--warmup", "20", "--draws", "15",
			"--fit-restarts", "2", "--data", long, "--out", own}
		bad := cliRun(t, again...)
		assert.Equal(t, 2, bad.code)
		assert.Contains(t, bad.stderr, "exists; use --resume to continue that run, --force to replace it")
		r = cliOK(t, append(again, "--resume")...)
		assert.Contains(t, r.stderr, "resuming: 1 subject(s) already in "+ownFit)
		require.NoError(t, os.WriteFile(ownFit, nil, 0o644)) // --force must not read it
		r = cliOK(t, append(again, "--force")...)
		assert.NotContains(t, r.stderr, "resuming")
		assert.Equal(t, cliJSONLines(t, cliLines(t, fitOut)[0])[0]["params"], cliJSONLines(t, cliLines(t, ownFit)[0])[0]["params"], "refitted")
	})
}

func TestCLISampleResume(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "3", "--steps", "5", "--subjects", "2")
	out := filepath.Join(t.TempDir(), "post")
	r := cliSample(t, data, out, "--shard", "1/2")
	assert.Contains(t, r.stderr, "for 1 subject(s)")
	first := cliLines(t, filepath.Join(out, "draws.csv"))
	require.Len(t, first, 1+2*15)

	// An interrupted batch: rows of subject 2 written, but not final (not in summary.json).
	f, err := os.OpenFile(filepath.Join(out, "draws.csv"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("2,1,1,0.1,0.05,0.2,3,false,2,0.5,-1,0.9,3\n2,1,2,0.1,0.0")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	// Writes of the summary and a table killed before their rename.
	stale := []string{filepath.Join(out, ".summary.json.tmp-0badf00d"), filepath.Join(out, ".summary.csv.tmp-00c0ffee")}
	for _, p := range stale {
		require.NoError(t, os.WriteFile(p, []byte("{"), 0o644))
	}

	r = cliSample(t, data, out, "--resume")
	for _, p := range stale {
		assert.NoFileExists(t, p, "a resumed run removes what writes cut short left")
	}
	assert.Contains(t, r.stderr, "resuming: 1 subject(s) already in")
	assert.Contains(t, r.stderr, "for 1 subject(s)", "only the other subject is sampled")
	lines := cliLines(t, filepath.Join(out, "draws.csv"))
	require.Len(t, lines, 1+2*2*15, "the rows of the interrupted batch are dropped")
	assert.Equal(t, first, lines[:len(first)], "the first subject's draws are unchanged")
	assert.Len(t, cliReadCSV(t, filepath.Join(out, "summary.csv")), 1+2*3)
	subjects := cliSummarySubjects(t, cliSummary(t, out))
	assert.Len(t, subjects, 2)

	// The same draws as an uninterrupted run.
	whole := filepath.Join(t.TempDir(), "post")
	cliSample(t, data, whole)
	assert.Equal(t, mustRead(t, filepath.Join(whole, "draws.csv")), mustRead(t, filepath.Join(out, "draws.csv")))

	// Everything done: another resume samples nothing and changes nothing.
	r = cliSample(t, data, out, "--resume")
	assert.Contains(t, r.stderr, "for 0 subject(s)")
	assert.Equal(t, lines, cliLines(t, filepath.Join(out, "draws.csv")))

	// A draws.csv of an earlier version, without energy, accept_stat and n_leapfrog, keeps its
	// layout: the first subject's rows as they were, the second's without those columns.
	earlier := filepath.Join(t.TempDir(), "post")
	cliSample(t, data, earlier, "--shard", "1/2")
	var old []string
	for _, l := range cliLines(t, filepath.Join(earlier, "draws.csv")) {
		cells := strings.Split(l, ",")
		old = append(old, strings.Join(cells[:len(cells)-3], ","))
	}
	require.True(t, strings.HasSuffix(old[0], ",log_posterior,divergent,tree_depth,step_size"), old[0])
	require.NoError(t, os.WriteFile(filepath.Join(earlier, "draws.csv"), []byte(strings.Join(old, "\n")+"\n"), 0o644))
	r = cliSample(t, data, earlier, "--resume")
	assert.Contains(t, r.stderr, "is of an earlier version, without the columns energy, accept_stat and n_leapfrog")
	got := cliLines(t, filepath.Join(earlier, "draws.csv"))
	require.Len(t, got, len(lines))
	assert.Equal(t, old, got[:len(old)])
	for i, l := range lines {
		cells := strings.Split(l, ",")
		assert.Equal(t, strings.Join(cells[:len(cells)-3], ","), got[i], "the whole run's row %d less the new columns", i)
	}

	// Other settings: an error listing the differences, nothing changed.
	before := cliHash(t, filepath.Join(out, "summary.json"))
	a := append([]string{"sample"}, cliSampleArgs...)
	r = cliRun(t, append(a, "--data", data, "--out", out, "--resume", "--draws", "10", "--seed", "2")...)
	cliRequireFail(t, r, 1, "holds a run with other settings", "draws: 15 in the file, 10 now", "seed: 1 in the file, 2 now")
	assert.Equal(t, before, cliHash(t, filepath.Join(out, "summary.json")))
}

func TestCLISampleErrors(t *testing.T) {
	dir := t.TempDir()
	data := cliSimulate(t, dir, "d.csv", "--task", "linear", "--trials", "2", "--steps", "5", "--subjects", "2")
	fitOut := filepath.Join(dir, "fit.jsonl")
	cliFit(t, data, fitOut, "--temperature", "task")
	other := cliWriteFile(t, dir, "other.jsonl", strings.ReplaceAll(string(mustRead(t, fitOut)), `"task":"linear"`, `"task":"pendulum"`))
	lines := cliLines(t, fitOut)
	one := cliWriteFile(t, dir, "one.jsonl", lines[0]+"\n")
	missing := map[string]string{"1": "2", "2": "1"}[cliJSONLines(t, lines[0])[0]["subject"].(string)]
	var robust strings.Builder // the fits as without their bootstrap (--uncertainty robust)
	for _, rec := range cliJSONLines(t, string(mustRead(t, fitOut))) {
		delete(rec, "bootstrap")
		b, err := json.Marshal(rec)
		require.NoError(t, err)
		robust.Write(append(b, '\n'))
	}
	noBootstrap := cliWriteFile(t, dir, "robust.jsonl", robust.String())
	before := cliHash(t, data)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msgs []string
	}{
		{"unknown prior family", []string{"--prior", "action_cost=cauchy(0,1)"}, 2, []string{`unknown prior family "cauchy"`}},
		{"prior on an unknown parameter", []string{"--prior", "noise=normal(0,1)"}, 2, []string{`--prior: task linear has no parameter "noise"`}},
		{"prior on a fixed parameter", []string{"--fix", "obs_noise=0.2", "--prior", "obs_noise=normal(-1,1)"}, 2,
			[]string{"--prior on obs_noise, which is not sampled"}},
		{"prior on a parameter left out of --infer", []string{"--infer", "action_cost", "--prior", "obs_noise=normal(-1,1)"}, 2,
			[]string{"--prior on obs_noise, which is not sampled"}},
		{"normal sd 0", []string{"--prior", "action_cost=normal(-1,0)"}, 2, []string{"the sd must be a finite number > 0, got 0"}},
		{"normal sd negative", []string{"--prior", "action_cost=normal(-1,-0.5)"}, 2, []string{"the sd must be a finite number > 0, got -0.5"}},
		{"malformed prior", []string{"--prior", "action_cost=normal(-1"}, 2, []string{"missing closing parenthesis"}},
		{"prior given twice", []string{"--prior", "action_cost=normal(-1,1),action_cost=uniform"}, 2, []string{"action_cost given twice"}},
		{"chains 0", []string{"--chains", "0"}, 2, []string{"--chains must be >= 1, got 0"}},
		{"draws 0", []string{"--draws", "0"}, 2, []string{"--draws must be >= 1, got 0"}},
		{"warmup negative", []string{"--warmup", "-1"}, 2, []string{"--warmup must be >= 0, got -1"}},
		{"max-batch 0", []string{"--max-batch", "0"}, 2, []string{"--max-batch must be >= 1, got 0"}},
		{"together 0", []string{"--together", "0"}, 2, []string{"--together must be >= 1, got 0"}},
		{"max-depth 0", []string{"--max-depth", "0"}, 2, []string{"--max-depth must be >= 1, got 0"}},
		{"max-warmup negative", []string{"--cross-chain", "--max-warmup", "-5"}, 2, []string{"--max-warmup must be >= 0, got -5"}},
		{"max-warmup without cross-chain", []string{"--max-warmup", "100"}, 2, []string{"--max-warmup needs --cross-chain"}},
		{"target-accept 1", []string{"--target-accept", "1"}, 2, []string{"--target-accept must be in (0, 1), got 1"}},
		{"resume and force", []string{"--resume", "--force"}, 2, []string{"--resume continues the run in --out and --force replaces it"}},
		{"unknown --infer", []string{"--infer", "noise"}, 2, []string{`--infer: task linear has no parameter "noise"`}},
		{"--fix outside the search box", []string{"--fix", "action_cost=100"}, 2, []string{"--fix action_cost=100 is outside its bounds"}},
		{"everything fixed", []string{"--fix", "action_cost=0.1,motor_noise=0.05,obs_noise=0.2"}, 2, []string{"no parameter left to sample"}},
		{"--infer temperature with --temperature task", []string{"--infer", "action_cost,temperature"}, 2, // cliSampleArgs has --temperature task
			[]string{"--infer temperature: --temperature task holds the policy noise's temperature at the task's value (0.001), so it is not a parameter to sample; give --temperature fit to sample it, or leave it out of --infer"}},
		{"--shard 3/2", []string{"--shard", "3/2"}, 2, []string{`--shard "3/2"`}},
		{"unknown method", []string{"--method", "irl"}, 2, []string{`unknown --method "irl"`}},
		{"--init of another task", []string{"--init", other}, 1, []string{"--init: " + other + " holds fits of task pendulum", "not of task linear"}},
		{"unknown metric", []string{"--metric", "unit"}, 2, []string{`unknown --metric "unit": want dense or diag`}},
		{"unknown adjustment", []string{"--adjust", "magnitude"}, 2, []string{`unknown adjustment "magnitude": want auto, curvature, bootstrap or none`}},
		{"--adjust bootstrap without --init", []string{"--adjust", "bootstrap"}, 2, []string{"--adjust bootstrap needs --init FIT.jsonl"}},
		{"--adjust bootstrap from fits without it", []string{"--adjust", "bootstrap", "--init", noBootstrap}, 1,
			[]string{"--adjust bootstrap: subject 1's fit in " + noBootstrap + " ran no parametric bootstrap"}},
		{"--init empty", []string{"--init", ""}, 2, []string{"--init needs fit, optimize, dispersed or a results file"}},
		{"--init missing", []string{"--init", filepath.Join(dir, "nope.jsonl")}, 1, []string{"nope.jsonl"}},
		{"--init not a results file", []string{"--init", data}, 1, []string{data, "not a results record"}},
		{"--init without a subject", []string{"--init", one}, 1, []string{"--init: " + one + " has no successful fit of subject(s) " + missing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "post")
			a := append([]string{"sample"}, cliSampleArgs...)
			a = append(a, "--data", data, "--out", out)
			r := cliRun(t, append(a, tc.args...)...)
			cliRequireFail(t, r, tc.code, tc.msgs...)
			cliNoFile(t, out)
			assert.Equal(t, before, cliHash(t, data))
		})
	}

	t.Run("output would overwrite the data", func(t *testing.T) {
		tmp := t.TempDir()
		d := filepath.Join(tmp, "draws.csv")
		require.NoError(t, os.WriteFile(d, mustRead(t, data), 0o644))
		a := append([]string{"sample"}, cliSampleArgs...)
		r := cliRun(t, append(a, "--data", d, "--out", tmp, "--force")...)
		cliRequireFail(t, r, 2, "would overwrite the data file")
		assert.Equal(t, before, cliHash(t, d))
	})

	t.Run("missing flags", func(t *testing.T) {
		for _, args := range [][]string{{"--data", data}, {"--out", filepath.Join(dir, "x")}} {
			r := cliRun(t, append(append([]string{"sample"}, cliSampleArgs...), args...)...)
			msg := "--out is required"
			if slices.Contains(args, "--out") {
				msg = "--data is required"
			}
			cliRequireFail(t, r, 2, msg)
		}
	})
}
