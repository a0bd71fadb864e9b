"""Where the learner's function runs, and the one seam every check reaches it through.

Lower half, used by the harness: `seam` (LearnerFunction: LocalFunction in this process), `facts`
(what a call did, gathered where it ran), `rules` (facts into reason codes), `messages` (the typed
data that crosses processes). Upper half, the processes of isolated grading: `isolate` (starts a
check), `verifier` (runs the test cell, never learner code), `worker` (runs learner code, decides
nothing), `remote` (the verifier's side of the worker: RemoteFunction). Nothing outside this package
asks which kind of LearnerFunction it holds."""
