package ioc

import (
	"fmt"
	"slices"

	"github.com/nioc-gpu/nioc-gpu/data"
	"github.com/nioc-gpu/nioc-gpu/fit"
)

// Subjects returns the subjects of set in shard k of n (1 ≤ k ≤ n; data.Set.Shard), in file
// order, with their trials as Sample takes them.
func Subjects(set *data.Set, k, n int) []fit.Subject {
	var out []fit.Subject
	for _, s := range set.Shard(k, n) {
		out = append(out, fit.Subject{ID: s.ID, Trials: s.States()})
	}
	return out
}

// WithInit returns a sampler like s whose chains start around the estimates of the given
// subjects in the results file path of package fit (Options.Init, read by ReadInit), with
// the sampled parameters that no estimate holds (their chains start over-dispersed) and the
// data digest each estimate was fitted to, by subject ("" where the record predates them).
// It returns ReadInit's errors, and New's.
func (s *Sampler) WithInit(path string, subjects []string) (sampler *Sampler, absent []string, digests map[string]string, err error) {
	init, absent, err := ReadInit(path, s.e.Spec(), subjects, s.sel.Names())
	if err != nil {
		return nil, nil, nil, err
	}
	digests = map[string]string{}
	for _, id := range subjects {
		est := init[id]
		digests[id] = est.DataDigest
		if s.opts.Adjust == AdjustBootstrap && est.Bias == nil {
			return nil, nil, nil, fmt.Errorf("--adjust %s: subject %s's fit in %s ran no parametric bootstrap; fit it with fit's default --uncertainty bootstrap", AdjustBootstrap, id, path)
		}
	}
	o := s.opts
	o.Init = init
	if sampler, err = New(s.e, o); err != nil {
		return nil, nil, nil, err
	}
	return sampler, absent, digests, nil
}

// Remaining returns the subjects of subjects that are not in the output yet (Done), in
// their order.
func (o *Output) Remaining(subjects []fit.Subject) []fit.Subject {
	done := o.Done()
	return slices.DeleteFunc(slices.Clone(subjects), func(s fit.Subject) bool { return slices.Contains(done, s.ID) })
}

// Fraction returns the fraction of the sampling done that p reports, from 0 to 1: the
// subjects done and the share of the transitions run of those being sampled, over the
// subjects.
func (p Progress) Fraction() float64 {
	return (float64(p.SubjectsDone) + min(1, float64(p.Transitions)/float64(max(1, p.Total)))) / float64(max(1, p.Subjects))
}
