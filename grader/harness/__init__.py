"""The checks every chapter shares: correctness against a float64 reference (`correctness`), timing
against torch (`timing`), pass bars (`bars`), the GPU's ceilings (`ceilings`), the exercise harness
(`exercise`, with `results`), napkin-math answers (`answers`), plots (`plots`), clean stderr (`quiet`)
and the notebook's `start()` (`session`)."""
