package likelihood

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/nioc-gpu/nioc-gpu/control"
	"github.com/nioc-gpu/nioc-gpu/graph"
	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTrialScoresSumToTheSubjects: the per-trial log-likelihoods and scores of TrialScores
// sum to the log-likelihood and gradient of the trials evaluated together, to 1e-12, for each
// linearization (with LinearizeMean and LinearizeILQG every trial keeps the whole set's
// nominal), both observabilities, a fitted temperature, trials of their own length and both
// forms of the recursions (unrolled; looped, as XLA runs them); and
// with LinearizeMean a trial's score differs from that of the trial alone (its own mean),
// so the test sees whether the set's nominal is kept.
func TestTrialScoresSumToTheSubjects(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	natural, _ := testTheta(m.Spec())
	same := simulateTrials(t, m, control.ObservePartial, natural, 6, 30, 3)
	varying := simulateLengths(t, m, natural, []int{30, 22, 30, 25, 22}, 5)
	for _, c := range []struct {
		opts   Options
		trials [][][]float64
	}{
		{Options{}, same},
		{Options{FitTemperature: true}, same},
		{Options{Observe: control.ObserveFull}, same},
		{Options{Linearize: LinearizeMean}, same},
		{Options{Linearize: LinearizeMean}, varying},
		{Options{Linearize: LinearizeMean, Observe: control.ObserveFull}, same},
		{Options{Linearize: LinearizeILQG}, same},
		{Options{Linearize: LinearizeMean, Form: FormLooped}, same}, // the form XLA runs
		{Options{Linearize: LinearizeMean, Form: FormLooped}, varying},
		{Options{Linearize: LinearizeILQG, Form: FormLooped}, same},
		{Options{Method: MCEBaseline}, same},
	} {
		name := fmt.Sprintf("%s/%s/%s/%s/fit-temperature=%v/trials=%d", c.opts.Method, c.opts.Observe, c.opts.Linearize, c.opts.Form, c.opts.FitTemperature, len(c.trials))
		t.Run(name, func(t *testing.T) {
			e, err := New(m, b, c.opts)
			require.NoError(t, err)
			theta := withTemperature(m.Spec(), c.opts)
			ll, grad, err := e.TrialScores(c.trials, theta)
			require.NoError(t, err)
			require.Len(t, ll, len(c.trials))
			total, totalGrad, err := e.EvalRows([][][][]float64{c.trials}, [][]float64{theta}, Batching{})
			require.NoError(t, err)
			assertSums(t, ll, total[0], "log-likelihood")
			for i := range theta {
				terms := make([]float64, len(grad))
				for r := range grad {
					terms[r] = grad[r][i]
				}
				assertSums(t, terms, totalGrad[0][i], "gradient %d", i)
			}
			if c.opts.Linearize == LinearizeMean {
				alone, _, err := e.EvalRows([][][][]float64{{c.trials[0]}}, [][]float64{theta}, Batching{})
				require.NoError(t, err)
				assert.Greater(t, math.Abs(alone[0]-ll[0]), 1e-6, "trial 0 alone has its own nominal")
			}
		})
	}
}

// TestTrialScoresReuseTheCompiledShape: in the looped form (as XLA runs it) trial scores are
// evaluated in a shape the evaluator has compiled, for every linearization: no program is
// built for them (nor for the iLQG nominal), and they equal the scores of an evaluator that
// has compiled nothing (rows of one trial each, an explicit nominal) to 1e-12, also when the
// trials do not fill the last evaluation's rows. With LinearizeMean a row must hold all of the
// subject's trials (their mean is each trial's nominal): a shape of fewer trials is not used.
// Once the time spent so reaches what compiling a shape took (reuseForScores), the scores
// are evaluated in shapes of their own, with the same values. With another number of steps no
// shape is reused. Trials of their own length reuse a shape compiled with their explicit
// inputs (with LinearizeData rows of one trial that has the shape's steps are given them).
func TestTrialScoresReuseTheCompiledShape(t *testing.T) {
	b, m, full := goFixture(t, "pendulum", 7, 20, 4)
	varying := make([][][]float64, len(full)) // 20, 17, 14, 20, … steps: explicit inputs
	for r, tr := range full {
		varying[r] = tr[:len(tr)-3*(r%3)]
	}
	for _, c := range []struct {
		lin    Linearization
		trials [][][]float64
	}{
		{LinearizeData, full}, {LinearizeMean, full}, {LinearizeILQG, full},
		{LinearizeData, varying}, {LinearizeMean, varying},
	} {
		name := string(c.lin)
		if &c.trials[0] == &varying[0] {
			name += ", trials of their own length"
		}
		t.Run(name, func(t *testing.T) {
			lin, trials := c.lin, c.trials
			opts := Options{Form: FormLooped, FitTemperature: true, Linearize: lin}
			theta := withTemperature(m.Spec(), opts)
			fresh, err := New(m, b, opts)
			require.NoError(t, err)
			wantLL, wantGrad, err := fresh.TrialScores(trials, theta)
			require.NoError(t, err)

			e, err := New(m, b, opts)
			require.NoError(t, err)
			whole, err := e.prepare([][][][]float64{trials}, 0, 0)
			require.NoError(t, err)
			require.Equal(t, 20, whole.Steps)
			th2 := append([]float64(nil), theta...)
			th2[0] += 0.1
			// 3 rows × 4 trials, then 3 rows × 7 (the rows' first trials of 20 steps, so that
			// their explicit inputs are the subject's)
			// Most: 3 plans chunks for these calls of 3 rows, as a fit plans them for its rounds.
			_, _, err = e.EvalRows([][][][]float64{trials[:4], trials[3:7], trials[:4]}, [][]float64{theta, th2, theta}, Batching{Most: 3})
			require.NoError(t, err)
			small, _ := e.scoreShape(whole)
			_, _, err = e.EvalRows([][][][]float64{trials, trials[3:7], trials[:4]}, [][]float64{theta, th2, theta}, Batching{Most: 3})
			require.NoError(t, err)
			sh, ok := e.scoreShape(whole)
			require.True(t, ok)
			assert.Equal(t, whole.explicit(), sh.explicit)
			if lin == LinearizeMean {
				assert.Equal(t, loopedShape{}, small, "4 trials a row cannot hold the subject's 7")
				assert.GreaterOrEqual(t, sh.trials, len(trials))
			} else {
				assert.NotEqual(t, loopedShape{}, small)
			}
			solver, err := e.solverFor(20)
			require.NoError(t, err)
			before, solved := e.engine.Stats().Builds, solver.Builds()
			ll, grad, err := e.TrialScores(trials, theta) // 7 trials: three evaluations, the last part padding
			require.NoError(t, err)
			assert.Equal(t, before, e.engine.Stats().Builds, "no program built for the trial scores")
			assert.Equal(t, solved, solver.Builds(), "no iLQG program built for the nominal")
			assert.InDeltaSlice(t, wantLL, ll, 1e-12*math.Abs(wantLL[0]))
			for r := range grad {
				assert.InDeltaSlice(t, wantGrad[r], grad[r], 1e-9, "trial %d", r)
			}

			assert.Positive(t, e.reused.spent, "the time in compiled shapes is counted")

			short := make([][][]float64, len(trials))
			for r, tr := range trials {
				short[r] = tr[:min(len(tr), 12)]
			}
			_, _, err = e.TrialScores(short, theta)
			require.NoError(t, err)
			assert.Greater(t, e.engine.Stats().Builds, before, "another number of steps compiles its own shape")

			built := e.engine.Stats().Builds
			// Once that time reaches a compile's, the scores take shapes of their own.
			e.reused.spent = time.Hour
			ll, grad, err = e.TrialScores(trials, theta)
			require.NoError(t, err)
			assert.Greater(t, e.engine.Stats().Builds, built, "rows of one trial, compiled")
			assert.True(t, e.reused.own)
			assert.InDeltaSlice(t, wantLL, ll, 1e-12*math.Abs(wantLL[0]))
			for r := range grad {
				assert.InDeltaSlice(t, wantGrad[r], grad[r], 1e-9, "trial %d", r)
			}
			e.reused.spent = 0
			assert.False(t, e.reuseForScores(), "for good")
		})
	}
}

// TestTrialScoresConcurrent: subjects whose fits end together ask for their trial scores at
// once; those evaluated in the compiled shape run one at a time (scoresInCompiled), and each
// subject gets its own scores (those of an evaluator that has compiled nothing, to 1e-12),
// whichever shape the decision gives it.
func TestTrialScoresConcurrent(t *testing.T) {
	b, m, trials := goFixture(t, "pendulum", 8, 20, 5)
	opts := Options{Form: FormLooped, Linearize: LinearizeMean}
	theta := withTemperature(m.Spec(), opts)
	subjects := [][][][]float64{trials[:6], trials[1:7], trials[2:], trials[:5]}
	fresh, err := New(m, b, opts)
	require.NoError(t, err)
	want := make([][]float64, len(subjects))
	for i, s := range subjects {
		want[i], _, err = fresh.TrialScores(s, theta)
		require.NoError(t, err)
	}
	e, err := New(m, b, opts)
	require.NoError(t, err)
	_, _, err = e.EvalRows([][][][]float64{trials, trials}, [][]float64{theta, theta}, Batching{})
	require.NoError(t, err)
	got := make([][]float64, len(subjects))
	var wg sync.WaitGroup
	for i, s := range subjects {
		wg.Go(func() {
			var err error
			got[i], _, err = e.TrialScores(s, theta)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	for i := range subjects {
		assert.InDeltaSlice(t, want[i], got[i], 1e-12*math.Abs(want[i][0]), "subject %d", i)
	}
	assert.Positive(t, e.reused.spent, "at least the first used the compiled shape")
}

// TestScoreShape: the trial scores take the compiled shape of the subject's steps that
// evaluates the fewest trials in all (⌈trials / rows⌉ evaluations of rows × trials), then
// the one that needs the fewest evaluations, with LinearizeMean among those whose rows hold
// all of the subject's trials; for trials of their own length only among shapes compiled with
// the same explicit inputs; none in the unrolled form.
func TestScoreShape(t *testing.T) {
	b, err := graph.NewBackend(graph.BackendGo)
	require.NoError(t, err)
	m, err := models.Get("pendulum")
	require.NoError(t, err)
	none := explicitInputs{}
	own := explicitInputs{running: true, ends: true}                    // trials of their own length
	ownMean := explicitInputs{running: true, ends: true, nominal: true} // and LinearizeMean's nominal
	shapes := []loopedShape{{10, 50, 30, none}, {4, 8, 30, none}, {64, 50, 30, none}, {1, 1, 20, none}, {20, 50, 30, none},
		{5, 50, 30, own}, {5, 40, 30, ownMean}}
	whole := &Data{Trials: 40, Steps: 30}
	varying := &Data{Trials: 40, Steps: 30, running: []float64{1}, ends: []float64{1}}
	varyingMean := &Data{Trials: 40, Steps: 30, running: []float64{1}, ends: []float64{1}, nominal: []float64{1}}
	for _, c := range []struct {
		opts  Options
		whole *Data
		want  loopedShape
		ok    bool
	}{
		{Options{Form: FormLooped}, whole, loopedShape{4, 8, 30, none}, true}, // 10 × 32 trials
		{Options{Form: FormLooped, Linearize: LinearizeILQG}, whole, loopedShape{4, 8, 30, none}, true},
		{Options{Form: FormLooped, Linearize: LinearizeMean}, whole, loopedShape{20, 50, 30, none}, true}, // 2 × 1000 = 4 × 500 < 1 × 3200
		{Options{Form: FormLooped, Linearize: LinearizeMean}, &Data{Trials: 51, Steps: 30}, loopedShape{}, false},
		{Options{Form: FormLooped}, &Data{Trials: 1, Steps: 20}, loopedShape{1, 1, 20, none}, true},
		{Options{Form: FormLooped}, &Data{Trials: 3, Steps: 25}, loopedShape{}, false},
		// trials of their own length: only a shape with the same explicit inputs
		{Options{Form: FormLooped}, varying, loopedShape{5, 50, 30, own}, true},
		{Options{Form: FormLooped, Linearize: LinearizeMean}, varyingMean, loopedShape{5, 40, 30, ownMean}, true},
		{Options{Form: FormLooped, Linearize: LinearizeMean}, &Data{Trials: 41, Steps: 30, running: []float64{1}, ends: []float64{1}, nominal: []float64{1}}, loopedShape{}, false},
		{Options{Form: FormLooped}, &Data{Trials: 3, Steps: 30, running: []float64{1}}, loopedShape{}, false}, // running without ends: none compiled
		{Options{Form: FormUnrolled}, whole, loopedShape{}, false},
		{Options{Form: FormUnrolled}, varying, loopedShape{}, false},
	} {
		e, err := New(m, b, c.opts)
		require.NoError(t, err)
		e.shapes = shapes
		sh, ok := e.scoreShape(c.whole)
		assert.Equal(t, c.ok, ok, "%s %s %d trials", c.opts.Form, c.opts.Linearize, c.whole.Trials)
		assert.Equal(t, c.want, sh, "%s %s %d trials", c.opts.Form, c.opts.Linearize, c.whole.Trials)
	}
}

// TestTrialScoresLoopedTrialHorizon: on a task whose horizon is each trial's (reaching, whose
// backward pass restarts where a trial ends), the looped form's trial scores, in rows of one
// trial and in a compiled shape, equal the unrolled graph's. The restart value was once both
// the backward recursion's carry and its parameter, which a looped step cannot take: the
// looped scores failed, and an XLA fit's robust intervals fell back to the Hessian's.
func TestTrialScoresLoopedTrialHorizon(t *testing.T) {
	b, m, trials := goFixture(t, "reaching", 5, 12, 4)
	opts := Options{Form: FormUnrolled, FitTemperature: true}
	theta := withTemperature(m.Spec(), opts)
	unrolled, err := New(m, b, opts)
	require.NoError(t, err)
	wantLL, wantGrad, err := unrolled.TrialScores(trials, theta)
	require.NoError(t, err)

	opts.Form = FormLooped
	for _, compiled := range []bool{false, true} {
		e, err := New(m, b, opts)
		require.NoError(t, err)
		if compiled {
			_, _, err = e.EvalRows([][][][]float64{trials[:3], trials[2:]}, [][]float64{theta, theta}, Batching{})
			require.NoError(t, err)
		}
		ll, grad, err := e.TrialScores(trials, theta)
		require.NoError(t, err, "compiled shape %v", compiled)
		assert.InDeltaSlice(t, wantLL, ll, 1e-9*math.Abs(wantLL[0]))
		for r := range grad {
			assert.InDeltaSlice(t, wantGrad[r], grad[r], 1e-8, "trial %d", r)
		}
	}
}
