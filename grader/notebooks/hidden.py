"""Feedback without the hidden tests: nbgrader's feedback step for this course.

nbgrader's `generate_feedback` renders the autograded notebook, whose test cells autograde restored from the
gradebook whole, hidden tests included (`### BEGIN HIDDEN TESTS`: the sizes a learner has not seen). nbgrader
clears that region when it releases an assignment (ClearHiddenTests), not when it makes feedback. Every path
that makes a feedback page takes its pipeline from grader.notebooks.settings (`ladder grade`'s recording, `nbgrader
generate_feedback` and the formgrader through nbgrader_config.py), which puts HideHiddenTests in it.
"""

from __future__ import annotations

import re

from nbgrader.preprocessors import ClearHiddenTests, GetGrades
from traitlets import List

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SPACE = re.compile(r"\s+")
HIDDEN_LINE = "(a line of the hidden tests)"


class HideHiddenTests(ClearHiddenTests):
    """The hidden region out of each test cell's source, as a release clears it, and out of the cell's outputs:
    a traceback quotes the line that raised and the lines around it."""

    # HTMLExporter configures this for every NbConvertBase; declared here, as nbgrader's GetGrades declares it, so
    # that traitlets does not warn that this step ignores it
    display_data_priority = List(GetGrades.display_data_priority.default_value).tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        hidden = self._hidden_lines(cell.source) if cell.cell_type == "code" else set()
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if hidden:
            for output in cell.get("outputs", []):
                if "traceback" in output:
                    output["traceback"] = [self._scrubbed(entry, hidden) for entry in output["traceback"]]
                if isinstance(output.get("text"), str):
                    output["text"] = self._scrubbed(output["text"], hidden)
                for kind, value in output.get("data", {}).items():
                    if kind.startswith("text/") and isinstance(value, str):
                        output["data"][kind] = self._scrubbed(value, hidden)
        return cell, resources

    def _hidden_lines(self, source: str) -> set[str]:
        """The hidden region's lines, delimiters included, stripped (blank ones left out)."""
        found, inside = set(), False
        for line in source.split("\n"):
            if self.begin_test_delimeter in line:
                inside = True
            if inside and line.strip():
                found.add(line.strip())
            if self.end_test_delimeter in line:
                inside = False
        return found

    @staticmethod
    def _scrubbed(text: str, hidden: set[str]) -> str:
        """`text` with every line that quotes a hidden line replaced (compared without the colours IPython adds,
        and without spaces, which a traceback may space otherwise)."""
        bare = {_SPACE.sub("", h) for h in hidden}
        lines = text.split("\n")
        for index, line in enumerate(lines):
            plain = _SPACE.sub("", _ANSI.sub("", line))
            if any(h in plain for h in bare):
                lines[index] = HIDDEN_LINE
        return "\n".join(lines)
