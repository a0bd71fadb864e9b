"""Every call of the learner's function, wherever it runs, and the time a verdict rests on. Below the harness.

`seam` (LearnerFunction, the one interface every check reaches the learner's function through; LocalFunction
in this process), `facts` (what a call did, gathered where it ran), `rules` (facts into reason codes),
`foreign` (which kernels that ran were not the learner's), `messages` (the typed data that crosses
processes), `trusted` (the one module that computes and cross-checks the time a verdict rests on), `contender`
(the interface the timing loop times a learner's batches through). The processes that run a call elsewhere are
grader.isolation's; nothing outside these two packages asks which kind of LearnerFunction it holds."""
