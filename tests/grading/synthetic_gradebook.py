"""A graded chapter-1 class written straight into a grading workspace, without running a notebook: what the class
report reads (nbgrader's gradebook, the autograded notebooks, the feedback pages, the journal, the record of
students not graded), as `ladder grade` leaves it. The class report's tests build classes of any size with it, a
class of 200 in seconds."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from conftest import ROOT

ASSIGNMENT = "01_vector_add"
NOTEBOOK = "01_vector_add.ipynb"
GPU = "NVIDIA H200"
# 1a's and 1b's speed bars (grader/bars.toml)
BARS = {"vector-add-speed": ("1a", 0.70), "fused-speed": ("1b", 1.50)}


@dataclass
class Synthetic:
    """One student: the graded cells that did not pass, grade_id -> (reason, message); or `why`, for a student
    nothing could be graded for. A speed cell that passed gets `speedups[grade_id]`."""
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)
    why: str | None = None
    seconds: float | None = 20.0
    attempts: int = 1
    notes: list[str] = field(default_factory=list)
    speedups: dict[str, float] = field(default_factory=dict)


def graded_cells() -> list[tuple[str, str, float]]:
    """(cell id, grade_id, points) of the assignment's graded cells, in order."""
    nb = json.loads((ROOT / "course" / ASSIGNMENT / NOTEBOOK).read_text())
    return [(c["id"], c["metadata"]["nbgrader"]["grade_id"], float(c["metadata"]["nbgrader"]["points"]))
            for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade")]


def _outputs(gid: str, failed: tuple[str, str] | None, speedup: float | None) -> list[dict]:
    if failed is not None:
        reason, message = failed
        return [{"output_type": "error", "ename": "CheckFailed", "evalue": f"{message}\n[reason: {reason}]",
                 "traceback": []}]
    text = f"✓ {gid}\n"
    if gid in BARS:
        key, bar = BARS[gid]
        record = {"key": key, "ratio": speedup or bar * 1.3, "bar": bar, "passed": True, "gpu": GPU}
        text += f"[speed: {json.dumps(record)}]\n"
    return [{"output_type": "stream", "name": "stdout", "text": text}]


def build_class(folder: Path, students: dict[str, Synthetic]):
    """A grading workspace in `folder` holding `students` as graded (or not) by `ladder grade`. The gradebook's rows
    are made with nbgrader's own classes, as `Gradebook.add_submission` makes them, and the journal's with its own
    table, each in one transaction: a commit a student took 28 ms on a 2-core CI machine's disk."""
    from datetime import UTC, datetime

    from nbgrader.api import Comment, Grade, Gradebook, Student, SubmittedAssignment, SubmittedNotebook

    from grader.classgrade.identity import folder_files
    from grader.classgrade.job import StudentGrade
    from grader.classgrade.journal import TABLE
    from grader.classgrade.record import Workspace

    ws = Workspace(folder, ASSIGNMENT, NOTEBOOK)
    ws.prepare(folder_files(ROOT / "solutions" / ASSIGNMENT))
    release = json.loads((ROOT / "course" / ASSIGNMENT / NOTEBOOK).read_text())
    cells = graded_cells()
    with Gradebook(ws.db_url) as gb, gb.db.no_autoflush:
        assignment = gb.find_assignment(ASSIGNMENT)
        for name, s in students.items():
            student = Student(id=name)
            gb.db.add(student)
            if s.why is not None:
                continue
            sub = SubmittedAssignment(assignment=assignment, student=student)
            for notebook in assignment.notebooks:
                nb = SubmittedNotebook(notebook=notebook, assignment=sub)
                for cell in notebook.grade_cells:
                    Grade(cell_id=cell.id, notebook=nb, auto_score=0.0 if cell.name in s.failed else cell.max_score)
                for cell in notebook.solution_cells:
                    Comment(cell_id=cell.id, notebook=nb)
            gb.db.add(sub)
        gb.db.commit()
    rows = []
    for name, s in students.items():
        page = ws.feedback_path(name)
        page.parent.mkdir(parents=True, exist_ok=True)
        if s.why is not None:
            page.write_text(f"<html><body><p>{s.why}</p></body></html>")
            continue
        nb = json.loads(json.dumps(release))
        for cell in nb["cells"]:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
                cell["outputs"] = _outputs(gid, s.failed.get(gid), s.speedups.get(gid))
                cell["execution_count"] = 1
        path = ws.autograded_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(nb))
        page.write_text("<html><body>" + "".join(f'<div id="cell-id={cid}">{gid}</div>' for cid, gid, _ in cells)
                        + "</body></html>")
        if s.seconds is not None:
            score = sum(most for _, gid, most in cells if gid not in s.failed)
            rows.append({"assignment": ASSIGNMENT, "student": name, "submission_sha256": "sub", "source_sha256": "src",
                         "grader_sha256": "grader", "score": score, "max_score": 15.0, "seconds": s.seconds,
                         "worker": "host GPU 0", "attempts": s.attempts, "notes": json.dumps(s.notes),
                         "graded_at": datetime.now(UTC)})
    if rows:
        with ws.journal.engine.begin() as conn:
            conn.execute(TABLE.insert(), rows)
    ws.record_not_graded([StudentGrade(name, 0.0, 0.0, {}, None, s.why) for name, s in students.items() if s.why])
    return ws


# What a class of 200 holds: most pass, some make each kind of mistake, a few cheat or were not graded.
MISTAKES = [
    ("vector-add-visible", "wrong-result", "1a: out[4097] is 1.5, expected 3.25 (first wrong index of 12)"),
    ("vector-add-hidden", "out-of-bounds", "1a: wrote 1 element past the end of out"),
    ("vector-add-speed", "below-bar", "1a speed: 0.52x torch.add, needs 0.70x"),
    ("fused-visible", "compile-error", "1b: NVRTC rejected FUSED_SRC line 4: expected a ';'"),
    ("fused-speed", "below-bar", "1b speed: 1.21x torch eager, needs 1.50x"),
    ("napkin-test", "failed", "vector_add_bytes(1000) is 8000; a + b reads two arrays and writes one"),
    ("vector-add-visible", "timed-out", "`vector_add`: timed out after 60 s"),
    ("vector-add-speed", "library-compute", "cuBLAS kernel ran inside vector_add; only your kernel may compute"),
    ("fused-hidden", "crashed", "the process running your code died (killed by signal 11)"),
]


def class_of(n: int, seed: int = 7) -> dict[str, Synthetic]:
    """A class of `n` students, the same for the same seed."""
    rng = random.Random(seed)
    out = {}
    for i in range(n):
        name = f"student_{i:03d}"
        roll = rng.random()
        if roll < 0.04:
            out[name] = Synthetic(why=f"{name}.ipynb is not a notebook: the file is empty", seconds=None)
            continue
        s = Synthetic(seconds=round(rng.uniform(12, 40), 1), speedups={
            "vector-add-speed": round(rng.uniform(0.72, 1.02), 3), "fused-speed": round(rng.uniform(1.52, 2.0), 3)})
        if roll > 0.45:
            for gid, reason, message in rng.sample(MISTAKES, rng.randint(1, 4)):
                s.failed[gid] = (reason, message)
        if rng.random() < 0.05:
            s.attempts, s.notes = 2, ["the worker died while grading it; graded again on host GPU 1"]
        out[name] = s
    return out
