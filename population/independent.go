package population

import (
	"fmt"
	"slices"

	"github.com/nioc-gpu/nioc-gpu/fit"
	"github.com/nioc-gpu/nioc-gpu/models"
)

// IndependentFits are the subjects' independent fits (a results file of package fit) as a
// population fit starts from them: the subjects it takes, in file order (SortBy: the data's), their estimates and
// standard errors in fitting scale over the fitted parameters, and the subjects it leaves out.
type IndependentFits struct {
	IDs      []string
	Scaled   map[string][]float64 // by subject, the fitted parameters' order
	SE       map[string][]float64 // by subject, where every standard error is known
	Excluded map[string]string    // subject → why it is left out
}

// SortBy orders IDs as they come in order (the data set's subjects), those not in it last in
// their order: a results file holds its subjects in the order their fits ended, which varies
// from run to run, and the population fit's estimates and draws follow the order of IDs.
func (in *IndependentFits) SortBy(order []string) {
	pos := make(map[string]int, len(order))
	for i, id := range order {
		pos[id] = i
	}
	rank := func(id string) int {
		if i, ok := pos[id]; ok {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(in.IDs, func(a, b string) int { return rank(a) - rank(b) })
}

// Rows returns the estimates of IDs, in their order.
func (in IndependentFits) Rows() [][]float64 {
	rows := make([][]float64, len(in.IDs))
	for i, id := range in.IDs {
		rows[i] = in.Scaled[id]
	}
	return rows
}

// Independent returns the independent fits of recs (the last record of a subject wins) for
// the fitted parameters of spec's task: a subject whose fit failed, or which does not fit
// every one of them, is left out with the reason.
func Independent(recs []fit.Record, spec models.Spec, fitted []string) IndependentFits {
	in := IndependentFits{Scaled: map[string][]float64{}, SE: map[string][]float64{}, Excluded: map[string]string{}}
	seen := map[string]bool{}
	for _, r := range recs {
		if !seen[r.Subject] {
			in.IDs = append(in.IDs, r.Subject)
			seen[r.Subject] = true
		}
		delete(in.Scaled, r.Subject)
		delete(in.SE, r.Subject)
		delete(in.Excluded, r.Subject)
		if r.Error != "" {
			in.Excluded[r.Subject] = "its independent fit failed: " + r.Error
			continue
		}
		x, se := make([]float64, len(fitted)), make([]float64, len(fitted))
		ok, hasSE := true, true
		for k, name := range fitted {
			v, found := r.Params[name]
			p, known := spec.Param(name)
			if !found || !known {
				in.Excluded[r.Subject] = fmt.Sprintf("its independent fit has no estimate of %s", name)
				ok = false
				break
			}
			x[k] = p.ToScale(v)
			se[k], found = r.StdErr[name]
			hasSE = hasSE && found
		}
		if !ok {
			continue
		}
		in.Scaled[r.Subject] = x
		if hasSE {
			in.SE[r.Subject] = se
		}
	}
	ids := in.IDs[:0]
	for _, id := range in.IDs {
		if _, out := in.Excluded[id]; !out {
			ids = append(ids, id)
		}
	}
	in.IDs = ids
	return in
}
