"""CUDA tooling, with no knowledge of exercises or learners: the GPU and library versions (`gpu`), the
toolkit's files (`toolkit`), CUDA C as the learner wrote it (`source`), compiling it (`nvrtc`),
launching it (`kernels`), the hooks every launch passes through (`launches`), machine code
(`sass`) and the tensor-core work a kernel really does (`tccount`)."""
