// Package population fits a population of subjects at once: every subject's fitted
// parameters, in their fitting scales, are drawn from a population normal whose mean may
// depend on the subjects' covariates (a design matrix from a subjects table and a formula,
// Design), and the population (its means, spreads and covariate effects) is found by
// empirical Bayes — expectation–maximisation with Laplace approximations (Run, EStep, MStep),
// each E-step a batched MAP fit of every subject under the current population prior
// (fit.Options.Priors) — with standard errors, intervals and p-values for the effects
// (Inference). Each subject's estimate under the population prior is shrunk towards the
// population by as much as its data leave uncertain.
package population
