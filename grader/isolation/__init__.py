"""Isolated grading: the processes a check runs in, and the scheduling of a notebook's checks. Above the chapters.

`isolate` (the sessions a notebook's run checks its cells in), `server` (the process verifiers are forked
from), `verifier` (runs the test cell, never learner code), `worker` (runs learner code, decides nothing),
`remote` (the verifier's side of the worker: RemoteFunction, a grader.calls.seam.LearnerFunction), `hung`
(the learner functions that hung in a notebook's run), `ahead` (a notebook's checks started ahead of its
kernel, on those sessions), `slots` (how many checks the machine runs at once)."""
