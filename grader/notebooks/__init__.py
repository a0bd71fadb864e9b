"""The course and nbgrader: running notebooks so that a dying kernel costs one cell (`nbexec`), `ladder
check` (`check`), `ladder grade` (`grading`), `ladder release` (`release`, `figures`), `ladder start`
and `ladder lab` (`workspace`), and nbgrader's settings (`settings`)."""
