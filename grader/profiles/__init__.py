"""Kernel profiles as data, below the chapters: `report` (Nsight Compute's raw CSV page), `signature` (the numbers
that place a kernel on the ladder), `recorded` (every rung's signature, recorded in assets/profiles/),
`roofline` (the plot), `diagnose` (the graded exercises that read two recorded profiles). Running the profiler
on a learner's kernel is grader.profiling's."""
