"""The learner's notebook as the grader reads it: which cells are theirs and which are tests (`cells`),
how their cells run outside a notebook kernel (`code`), and what their errors mean (`errors`)."""
