"""What a file handed to `ladder` as a learner's notebook is: a notebook of which chapter, or, in words a
learner understands, why it is not one.

Every command that takes a learner's notebook (`check`, `compile`, `profile`, `grade`) reads it here
first, so that an empty file, a file that is not JSON, JSON that is not a notebook, a notebook of no
chapter and a notebook of another chapter each get one sentence, not a traceback from nbformat or
nbgrader ten seconds later.

A notebook's chapter is read from its cells, not its name: nbgrader's cell ids (`grade_id`) and the
sources of the cells a learner cannot edit, which is what nbgrader's checksums cover, compared with each
chapter's notebook in solutions/. A chapter-7 notebook renamed 01_vector_add.ipynb is still chapter 7's.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import LadderError
from ..learner.cells import grade_id, is_solution, source
from .course import SOURCE_DIR, assignments, repo_root


class NotANotebook(LadderError):
    """The file is missing, empty, not JSON, or not a Jupyter notebook."""

    reason = "not-a-notebook"


class NotCourseNotebook(NotANotebook):
    """A notebook, but none of its cells are a chapter's."""


class OtherChapter(LadderError):
    """A notebook of another chapter than the one its name or the command asked for."""

    reason = "other-chapter"


@dataclass
class Recognised:
    path: Path
    notebook: object            # the nbformat node, read once
    assignment: str | None      # "07_reductions"; None outside the course's repository (nothing to compare with)


def read_notebook(path: Path):
    """The notebook at `path`, as nbformat reads it; NotANotebook saying what the file is instead."""
    import nbformat

    path = Path(path)
    if not path.exists():
        raise NotANotebook(f"{path}: no such file")
    if path.is_dir():
        raise NotANotebook(f"{path} is a folder, not a notebook: give the .ipynb file inside it")
    data = path.read_bytes()
    kind = "a notebook (.ipynb)" if path.suffix == ".ipynb" else f"a notebook: a {path.suffix or 'suffix-less'} file"
    if not data.strip():
        raise NotANotebook(f"{path} is empty ({len(data)} bytes), not {kind}: save the notebook again from Jupyter")
    try:
        raw = json.loads(data)
    except ValueError as exc:   # UnicodeDecodeError included
        raise NotANotebook(f"{path} is not {kind}: it is not JSON ({str(exc).splitlines()[0]}); "
                           "the file is damaged or of another kind: save the notebook again from Jupyter") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list) or "nbformat" not in raw:
        raise NotANotebook(f"{path} is JSON but not a Jupyter notebook (no \"cells\" list or \"nbformat\" "
                           "version): save the notebook again from Jupyter")
    try:
        return nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as exc:  # noqa: BLE001 - nbformat raises jsonschema's, its own and plain errors alike
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise NotANotebook(f"{path} is not a valid notebook ({first}): save it again from Jupyter") from None


@functools.lru_cache(maxsize=4)
def _fixed_cells(root: Path) -> dict[str, dict[str, str]]:
    """assignment -> {grade_id: source} of the cells a learner cannot change (every nbgrader cell but the
    solutions), from solutions/. Test cells count too: their visible part is the release's."""
    found = {}
    for name in assignments(root):
        for nb_path in sorted((root / SOURCE_DIR / name).glob("*.ipynb")):
            nb = json.loads(nb_path.read_text())
            found[name] = {grade_id(c): source(c) for c in nb["cells"] if grade_id(c) and not is_solution(c)}
    return found


def course_root(*near: Path) -> Path | None:
    """The course's repository: the one above the current folder, or above one of `near`, or the one this
    grader was installed from (`pip install -e`); None when there is none (a wheel without it)."""
    for start in (Path.cwd(), *near, Path(__file__).resolve().parent):
        try:
            return repo_root(start)
        except LadderError:
            continue
    return None


def assignment_of_cells(nb, root: Path) -> str | None:
    """The chapter whose fixed cells the notebook shares most (same grade_id and same source); None when it
    shares none with any chapter, or as many with two."""
    mine = {grade_id(c): source(c) for c in nb["cells"] if grade_id(c)}
    counts = {name: sum(1 for gid, src in fixed.items() if mine.get(gid) == src)
              for name, fixed in _fixed_cells(root).items()}
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    if not ranked or ranked[0][1] == 0 or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]


def assignment_by_name(path: Path, names: list[str]) -> str | None:
    """The chapter a file's name or its folder's claims ("01_vector_add.ipynb", ".../07_reductions/x.ipynb")."""
    for part in (Path(path).stem, Path(path).parent.name):
        m = re.match(r"(\d\d)_", part)
        if m:
            return next((n for n in names if n.startswith(m.group(0))), None)
    return None


def chapter_words(assignment: str) -> str:
    """"chapter 7's notebook (07_reductions)"."""
    return f"chapter {int(assignment[:2])}'s notebook ({assignment})"


def recognise(path: Path, expected: str | None = None, root: Path | None = None) -> Recognised:
    """Read `path` and tell its chapter. `expected`: the assignment the command is about (else the one the
    file's name claims, if any); a notebook of another is refused, naming the chapter it is."""
    path = Path(path)
    nb = read_notebook(path)
    root = root or course_root(path.parent)
    if root is None:   # installed without the repository: nothing to compare the cells with
        return Recognised(path, nb, None)
    found = assignment_of_cells(nb, root)
    if found is None:
        raise NotCourseNotebook(f"{path} is a notebook, but none of its graded cells are a chapter's of this "
                                "course: give the notebook `ladder start` copied for you (work/NN_*/NN_*.ipynb)")
    claimed = expected or assignment_by_name(path, assignments(root))
    if claimed is not None and claimed != found:
        raise OtherChapter(f"{path} is {chapter_words(found)}, not {chapter_words(claimed)}: "
                           f"its cells are chapter {int(found[:2])}'s; give chapter {int(claimed[:2])}'s notebook")
    return Recognised(path, nb, found)
