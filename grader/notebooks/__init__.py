"""The course and nbgrader: running notebooks so that a dying kernel costs one cell (`nbexec`), `ladder
check` (`check`), `ladder grade` (`grading`), `ladder release` (`release`, `figures`), `ladder start`
and `ladder lab` (`workspace`), and nbgrader's settings (`settings`)."""

import sys

# Why: jsonschema, which nbformat and nbgrader validate notebooks with, imports rfc3987-syntax where it is installed
# (JupyterLab's jupyter-events asks for it) to check the "iri" format, and that package builds its grammar when it is
# imported: 1.5 s of CPU in every grader process that reads a notebook, more than the rest of a `ladder check`
# process's start. No schema a notebook is validated against uses that format. None in sys.modules makes the optional
# import fail at once (jsonschema then leaves "iri" unchecked), in the grader's own processes only: a learner's
# kernel never imports this package, and JupyterLab runs in a process of its own.
sys.modules.setdefault("rfc3987_syntax", None)
