"""The speed record a graded speed cell printed, read from the cell's outputs: for `ladder check --json`
(grader.notebooks.check) and for the journal's record of where a student's time went
(grader.classgrade.timing). Its own module so that the journal reads it without importing the checking
machinery behind `ladder check`."""

from __future__ import annotations

import json
import re

# the line SpeedResult.report ends with (grader.harness.results)
SPEED_LINE = re.compile(r"^\[speed: (\{.*\})\]$", re.M)


def _text(value) -> str:
    # a notebook on disk stores a multi-line text as a list of lines; nbformat's reader joins them
    return "".join(value) if isinstance(value, list) else (value or "")


def speed_record(cell) -> dict | None:
    """The last `[speed: {...}]` line a speed check printed in the cell (its report, or its error), from an
    nbformat cell or the same cell as plain JSON."""
    outputs = cell.get("outputs") or []
    texts = [_text(o.get("text")) for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stdout"]
    texts += [_text(o.get("evalue")) for o in outputs if o.get("output_type") == "error"]
    found = SPEED_LINE.findall("\n".join(texts))
    if not found:
        return None
    try:
        return json.loads(found[-1])
    except ValueError:
        return None
