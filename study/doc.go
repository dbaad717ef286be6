// Package study does what nioc-gpu's commands do, apart from reading their flags and
// printing, so that other programs (a Python client, future commands) reuse it:
//
//   - ResultsFile fits the subjects of a data set into a resumable results file of package
//     fit (JSON Lines, with its CSV table and checkpoints);
//   - Simulate simulates subjects of a task's agent into a data set; NewPopulation and Draw
//     draw each subject's parameters from a population (groups, group effects) and write the
//     truths and the subjects table beside the data;
//   - Axis, Points, LogLiks and WriteGrid evaluate and draw the log-likelihood on a 2-D
//     parameter grid; LogLik evaluates it, with its gradient, for every subject of a data set;
//   - Compare and Latest set the estimates of results files beside the truth;
//   - Config, Summarize and AggregateErrors are the paper's evaluation study (Sec. 4,
//     App. J.3): parameter sets drawn in each parameter's search box, data simulated at each
//     and fitted with each method, and the errors of the estimates summarized in tables and
//     figures.
//
// Parameters are in natural units unless a name or comment says "fitting scale" (log10 or
// linear, models.Param.Scale).
package study
