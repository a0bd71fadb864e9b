"""Chapter 5's synthetic students, and what they share.

The students' cells are the solution's with a change (`solution_cell(...).replace(...)`), so that they
follow the solution when it is edited; `edited` checks that each change still applies.
"""

from __future__ import annotations

import json
import re

from submissions.build import ROOT, launchers, run_cell  # noqa: F401  (re-exported for the tests)

NOTEBOOK = ROOT / "solutions" / "05_triton_matmul" / "05_triton_matmul.ipynb"


def stubbed(source: str, regions: int = 0) -> str:
    """The source as nbgrader releases it: solution regions replaced by `raise NotImplementedError()`
    (the first `regions` of them, or all with 0), to stub a kernel but keep its launcher."""
    return re.sub(r"( *)### BEGIN SOLUTION\n.*?### END SOLUTION\n?", r"\1raise NotImplementedError()\n", source,
                  count=regions, flags=re.S)


def notebook_cell(grade_id: str) -> str:
    """The source of any cell of the solution notebook (solution regions' markers removed)."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    source = "".join(next(c for c in cells if c["metadata"]["nbgrader"]["grade_id"] == grade_id)["source"])
    return "".join(line for line in source.splitlines(True) if "### BEGIN SOLUTION" not in line
                   and "### END SOLUTION" not in line)


def edited(source: str, *changes: tuple[str, str]) -> str:
    for old, new in changes:
        if old not in source:
            raise ValueError(f"the solution no longer contains {old!r}: update this submission")
        source = source.replace(old, new)
    return source
