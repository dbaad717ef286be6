// Command sbc checks the calibration of `nioc-gpu sample` by simulation-based calibration
// (Talts et al. 2018) and compares it with the Laplace intervals of `nioc-gpu fit`.
//
// It reads an evaluation directory of `nioc-gpu eval` (truth.csv: each set's true parameters
// drawn from the prior, uniform in the fitting scale on the search box; fit-ours.jsonl: the
// maximum-likelihood fits) and the output directories of `nioc-gpu sample` run on its
// data.csv with the same (uniform) prior. For every set and parameter it ranks the truth among
// L draws thinned evenly from the posterior draws, and reports per parameter a chi-square
// test of uniformity of the ranks over 10 bins, the coverage of the 90 % central credible
// interval and its median width (in the fits' scale: decades for log10 parameters), and the
// coverage of the Laplace 95 % and 90 % intervals (θ̂ ± z·SE in the fitting
// scale), with fit's standard errors (robust by default) and, where the fits hold them, the
// inverse Hessian's. See docs/posterior.md, "Posterior", for the commands.
//
//	go run ./bench/sbc --eval DIR --post POST1,POST2,... [--fit FIT.jsonl] [--thin 100]
package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nioc-gpu/nioc-gpu/posterior"
)

func main() {
	evalDir := flag.String("eval", "", "directory of nioc-gpu eval (truth.csv, fit-ours.jsonl)")
	post := flag.String("post", "", "comma-separated output directories of nioc-gpu sample on its data.csv")
	thin := flag.Int("thin", 100, "posterior draws per set the truth is ranked among, thinned evenly")
	fits := flag.String("fit", "", "results of nioc-gpu fit on the eval's data.csv whose Laplace intervals to score (default: DIR/fit-ours.jsonl)")
	flag.Parse()
	if *evalDir == "" || *post == "" || *thin < 9 {
		fmt.Fprintln(os.Stderr, "usage: sbc --eval DIR --post DIR,DIR... [--thin L ≥ 9]")
		os.Exit(2)
	}
	if *fits == "" {
		*fits = filepath.Join(*evalDir, "fit-ours.jsonl")
	}
	if err := run(*evalDir, strings.Split(*post, ","), *fits, *thin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sbc:", err)
		os.Exit(1)
	}
}

func run(evalDir string, posts []string, fitPath string, thin int, w io.Writer) error {
	names, truth, err := readTable(filepath.Join(evalDir, "truth.csv"), "set", "subject") // eval's, robustness.py's
	if err != nil {
		return err
	}
	draws := map[string]map[string][]float64{} // set → parameter → draws
	for _, dir := range posts {
		if err := readDraws(filepath.Join(dir, "draws.csv"), draws); err != nil {
			return err
		}
	}
	fits, err := readFits(fitPath)
	if err != nil {
		return err
	}
	sets := make([]string, 0, len(draws))
	for s := range draws {
		if _, ok := truth[s]; ok {
			sets = append(sets, s)
		}
	}
	sort.Strings(sets)
	if len(sets) == 0 {
		return fmt.Errorf("no set of %s has posterior draws in %s", evalDir, strings.Join(posts, ", "))
	}
	fmt.Fprintf(w, "%d sets with posterior draws; truth ranked among %d thinned draws; 10 bins\n\n", len(sets), thin)
	fmt.Fprintln(w, "| parameter | rank χ² (9 dof) | p | 90 % credible coverage | its median width | Laplace 95 % coverage | Laplace 90 % coverage | Laplace 95 % / 90 %, Hessian SE | fits without SE |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for k, name := range names {
		if len(draws[sets[0]][name]) == 0 {
			fmt.Fprintf(w, "| %s | not sampled | | | | | | | |\n", name)
			continue
		}
		var ranks []int
		var widths []float64 // of the 90 % credible intervals, in the fits' scale (natural without a fit)
		var cover90, lap95, lap90, hess95, hess90, nHess, noSE, nFit int
		for _, s := range sets {
			d := draws[s][name]
			if len(d) < thin {
				return fmt.Errorf("set %s: %d draws of %s, fewer than --thin %d", s, len(d), name, thin)
			}
			x := truth[s][k]
			ranks = append(ranks, rank(thinned(d, thin), x))
			lo, hi := posterior.Quantile(0.05, [][]float64{d}), posterior.Quantile(0.95, [][]float64{d})
			if x >= lo && x <= hi {
				cover90++
			}
			f, ok := fits[s]
			if ok && f.Scale[name] == "log10" {
				widths = append(widths, math.Log10(hi)-math.Log10(lo))
			} else {
				widths = append(widths, hi-lo)
			}
			if !ok {
				continue
			}
			nFit++
			se, ok := f.StdErr[name]
			if !ok || !(se > 0) {
				noSE++
				continue
			}
			est, tr := f.Params[name], x
			if f.Scale[name] == "log10" {
				est, tr = math.Log10(est), math.Log10(tr)
			}
			if math.Abs(tr-est) <= 1.959964*se {
				lap95++
			}
			if math.Abs(tr-est) <= 1.644854*se {
				lap90++
			}
			if se, ok := f.StdErrHessian[name]; ok && se > 0 {
				nHess++
				if math.Abs(tr-est) <= 1.959964*se {
					hess95++
				}
				if math.Abs(tr-est) <= 1.644854*se {
					hess90++
				}
			}
		}
		chi2, p := uniformity(ranks, thin, 10)
		n := float64(len(sets))
		hess := "not in the fits"
		if nHess > 0 {
			hess = fmt.Sprintf("%.1f %% / %.1f %%", 100*float64(hess95)/float64(nHess), 100*float64(hess90)/float64(nHess))
		}
		sort.Float64s(widths)
		fmt.Fprintf(w, "| %s | %.1f | %.3f | %.1f %% | %.4g | %.1f %% | %.1f %% | %s | %d of %d |\n", name, chi2, p,
			100*float64(cover90)/n, stat.Quantile(0.5, stat.Empirical, widths, nil), 100*float64(lap95)/float64(max(nFit, 1)),
			100*float64(lap90)/float64(max(nFit, 1)), hess, noSE, nFit)
	}
	return nil
}

// rank returns the number of draws below x.
func rank(draws []float64, x float64) int {
	r := 0
	for _, d := range draws {
		if d < x {
			r++
		}
	}
	return r
}

// thinned returns l draws taken evenly from d, which holds at least l.
func thinned(d []float64, l int) []float64 {
	out := make([]float64, l)
	for i := range out {
		out[i] = d[i*len(d)/l]
	}
	return out
}

// uniformity returns the chi-square statistic of ranks in 0..l over bins equal bins, and its
// p-value under uniform ranks (bins − 1 degrees of freedom).
func uniformity(ranks []int, l, bins int) (chi2, p float64) {
	count := make([]float64, bins)
	for _, r := range ranks {
		count[r*bins/(l+1)]++
	}
	// Expected count per bin: the number of rank values in it over l+1.
	for b := range bins {
		first, last := (b*(l+1)+bins-1)/bins, ((b+1)*(l+1)+bins-1)/bins-1
		e := float64(len(ranks)) * float64(last-first+1) / float64(l+1)
		chi2 += (count[b] - e) * (count[b] - e) / e
	}
	return chi2, distuv.ChiSquared{K: float64(bins - 1)}.Survival(chi2)
}

// readTable reads a CSV with a key column (named one of keys) and numeric columns: the
// column names and the rows by key.
func readTable(path string, keys ...string) ([]string, map[string][]float64, error) {
	rows, err := readCSV(path)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) < 2 || !slices.Contains(keys, rows[0][0]) {
		return nil, nil, fmt.Errorf("%s: want a header starting with %q and rows", path, strings.Join(keys, `" or "`))
	}
	out := map[string][]float64{}
	for i, r := range rows[1:] {
		v := make([]float64, len(r)-1)
		for j := range v {
			if v[j], err = strconv.ParseFloat(r[j+1], 64); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %s: %v", path, i+2, rows[0][j+1], err)
			}
		}
		out[r[0]] = v
	}
	return rows[0][1:], out, nil
}

// readDraws adds the draws of a sample draws.csv (subject, chain, draw, parameters...,
// log_posterior, ...) to out.
func readDraws(path string, out map[string]map[string][]float64) error {
	rows, err := readCSV(path)
	if err != nil {
		return err
	}
	head := rows[0]
	end := 3
	for end < len(head) && head[end] != "log_posterior" {
		end++
	}
	for i, r := range rows[1:] {
		m := out[r[0]]
		if m == nil {
			m = map[string][]float64{}
			out[r[0]] = m
		}
		for j := 3; j < end; j++ {
			v, err := strconv.ParseFloat(r[j], 64)
			if err != nil {
				return fmt.Errorf("%s:%d: %s: %v", path, i+2, head[j], err)
			}
			m[head[j]] = append(m[head[j]], v)
		}
	}
	return nil
}

func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	return rows, nil
}

// fitRecord is the part of a results line of nioc-gpu fit that sbc reads.
type fitRecord struct {
	Subject string             `json:"subject"`
	Params  map[string]float64 `json:"params"`
	Scale   map[string]string  `json:"scale"`
	StdErr  map[string]float64 `json:"stderr_scaled"` // in the fitting scale of Scale
	Old     map[string]float64 `json:"stderr"`        // the same, in files written before stderr_scaled
	// StdErrHessian is the inverse Hessian's standard error; files written before robust
	// standard errors (no "uncertainty") have only those, as StdErr.
	StdErrHessian map[string]float64 `json:"stderr_hessian_scaled"`
	Uncertainty   string             `json:"uncertainty"`
}

func readFits(path string) (map[string]fitRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]fitRecord{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r fitRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Subject == "" {
			continue // the settings record
		}
		if r.StdErr == nil {
			r.StdErr = r.Old
		}
		if r.Uncertainty == "" {
			r.StdErrHessian = r.StdErr
		}
		out[r.Subject] = r
	}
	return out, sc.Err()
}
