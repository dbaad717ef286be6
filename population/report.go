package population

import "math"

// NewReport returns the report of a population fit with settings set that ended at step last
// (converged or not): its effects and spreads (Inference), and every subject's shrunk estimate
// (the step's MAP with the posterior's standard errors) beside its independent one (indep and
// indepSE by subject, fitting scale in Fitted's order; indepSE may lack a subject whose
// Hessian was not positive definite). evaluations and seconds are of the whole run.
func NewReport(set Settings, last Step, converged bool, effects []Effect, spreads []Spread,
	indep, indepSE map[string][]float64, excluded map[string]string, evaluations int, seconds float64) *Report {
	r := &Report{Settings: set, Converged: converged, Steps: last.Iter, LogMarginal: last.LogMarginal,
		Effects: effects, Spreads: spreads, Excluded: excluded, Evaluations: evaluations, Seconds: math.Round(seconds*10) / 10}
	for _, sf := range last.Subjects {
		se := SubjectEstimate{Subject: sf.Subject, Independent: map[string]float64{}, Shrunk: map[string]float64{}, ShrunkSE: map[string]float64{}}
		if ise, ok := indepSE[sf.Subject]; ok {
			se.IndependentSE = map[string]float64{}
			for k, name := range set.Fitted {
				se.IndependentSE[name] = ise[k]
			}
		}
		for k, name := range set.Fitted {
			se.Independent[name] = indep[sf.Subject][k]
			se.Shrunk[name] = sf.MAP[k]
			se.ShrunkSE[name] = math.Sqrt(sf.Cov[k][k])
		}
		r.Subjects = append(r.Subjects, se)
	}
	return r
}
