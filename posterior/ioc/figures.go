package ioc

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/nioc-gpu/nioc-gpu/plots"
)

// Kinds of figures of a subject (FigureFile).
const (
	CornerFigure = "corner" // pairwise scatter plots and marginal histograms of the draws
	TraceFigure  = "trace"  // the chains' draws in order
	PPCFigure    = "ppc"    // the posterior predictive check
)

// FigureFile returns the path of a subject's figure of the given kind in dir:
// DIR/KIND-SUBJECT.png, characters of the subject's ID other than letters, digits, '.', '-'
// and '_' replaced by '_'.
func FigureFile(dir, kind, subject string) string {
	safe := strings.Map(func(r rune) rune {
		if r < 128 && (r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, subject)
	return filepath.Join(dir, kind+"-"+safe+".png")
}

// FigureOptions say what WriteFigures draws besides the draws.
type FigureOptions struct {
	// Truth holds true values (natural units) to mark; values of parameters that are not
	// sampled are not drawn.
	Truth map[string]float64
	// Check, if set, adds the posterior predictive check of the subject's trials Data.
	Check *Predictive
	Data  [][][]float64
}

// WriteFigures writes the figures of subject r's posterior to dir and returns their paths:
// the corner plot (FigureFile CornerFigure), the trace plot (TraceFigure) and, with
// o.Check, the posterior predictive check (PPCFigure). A subject without draws (Err) has none.
func (s *Sampler) WriteFigures(dir string, r Result, o FigureOptions) ([]string, error) {
	if r.Err != "" {
		return nil, nil
	}
	params := s.Params()
	scales := make([]models.ParamScale, len(params))
	var truth []float64
	for k, p := range params {
		scales[k] = p.Scale
		if v, ok := o.Truth[p.Name]; ok {
			if truth == nil {
				truth = slices.Repeat([]float64{math.NaN()}, len(params))
			}
			truth[k] = v
		}
	}
	chains := make([][][]float64, len(r.Chains))
	var pooled [][]float64
	for c, ch := range r.Chains {
		chains[c] = make([][]float64, len(ch.Scaled))
		for d, x := range ch.Scaled {
			nat := make([]float64, len(x))
			for k, v := range x {
				nat[k] = params[k].FromScale(v)
			}
			chains[c][d] = nat
		}
		pooled = append(pooled, chains[c]...)
	}
	var written []string
	path := FigureFile(dir, CornerFigure, r.Subject)
	title := fmt.Sprintf("subject %s: %d draws of %d chains", r.Subject, len(pooled), len(chains))
	if err := plots.Corner(path, title, r.Names, scales, pooled, truth); err != nil {
		return written, err
	}
	written = append(written, path)
	path = FigureFile(dir, TraceFigure, r.Subject)
	if err := plots.Trace(path, fmt.Sprintf("subject %s: %d chains", r.Subject, len(chains)), r.Names, scales, chains, truth); err != nil {
		return written, err
	}
	written = append(written, path)
	if o.Check == nil {
		return written, nil
	}
	path = FigureFile(dir, PPCFigure, r.Subject)
	c, err := o.Check.Check(r, o.Data)
	if err != nil {
		return written, err
	}
	if err := o.Check.draw(path, c, o.Data); err != nil {
		return written, err
	}
	return append(written, path), nil
}

// draw writes the figure of check c of a subject with trials data to path: hand paths for
// a task whose model gives the hand's position (reaching), else each state component over
// time.
func (p *Predictive) draw(path string, c *Check, data [][][]float64) error {
	var sims [][][]float64
	for _, s := range c.Simulated {
		sims = append(sims, s...)
	}
	spec := p.opts.Model.Spec()
	title := fmt.Sprintf("subject %s: %d trials at each of %d posterior draws\nover its %d trials", c.Subject,
		p.opts.Trials, len(c.Picked), len(data))
	if c.Diverged > 0 {
		title += fmt.Sprintf(" (%d diverged, not shown)", c.Diverged)
	}
	if hand := handOf(p.opts.Model); hand != nil {
		return plots.PredictiveCheck(path, title, []plots.Overlay{plots.HandOverlay(hand, sims, data)}, 1)
	}
	n := len(spec.States)
	return plots.PredictiveCheck(path, title, plots.StateOverlays(spec.States, sims, data), int(math.Ceil(math.Sqrt(float64(n)))))
}

// handOf returns the forward kinematics of a reaching task (the hand's position of a state),
// or nil: of a model with a HandPosition method, or of a task file that defines the built-in
// task reaching (the same name and states).
func handOf(m models.Model) func([]float64) (float64, float64) {
	if h, ok := m.(interface {
		HandPosition([]float64) (float64, float64)
	}); ok {
		return h.HandPosition
	}
	r := models.Reaching{}
	if spec := m.Spec(); spec.Name == r.Spec().Name && slices.Equal(spec.States, r.Spec().States) {
		return r.HandPosition
	}
	return nil
}
