"""The class-grading measurement's Python half (run.sh is the other): build a class, read a graded
workspace's journal, and compare runs.

    python3 scaling.py build OUT --chapter 01_vector_add --copies 2 [--part K/N] [--only correct]
        the synthetic class of assets/results/class-grading/synthetic_class.py with every student COPIES times
        (correct-1a, correct-1b, ...), or only its kinds named by --only; --part K/N keeps every Nth student
        by name from the Kth, for a one-GPU grading that does not fit one command of at most 600 s
    python3 scaling.py expected --chapter 01_vector_add --copies 2 [--part K/N] [--only correct]
        each student's expected GPU score, as JSON
    python3 scaling.py record WORKSPACE ASSIGNMENT EXPECTED_JSON WALL_S > record.json
        the run's wall time, each student's score against the expected one, and the journal's seconds of
        each student with where they went (the table ladder_grading_split)
    python3 scaling.py report DIR/record.json...
        runs named by their folder, CLASS-gpusN[-VARIANT][-partK]: per class, each run's wall time (the parts
        of one added up) and speed-up against 1 GPU; per student, the score and seconds in each run and the
        ratio to 1 GPU; whether every score is the same in every run. Prints Markdown; exits 1 if any differs.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))   # synthetic_class.py is beside this file

import synthetic_class  # noqa: E402


def _students(chapter: str, copies: int, part: str | None, only: list[str]) -> list[tuple[str, str, str, int]]:
    rows = []
    for student, package, module, score in synthetic_class.students(chapter):
        if only and student.rsplit("-", 1)[0] not in only:
            continue
        for copy in range(copies):
            rows.append((student + ("abcdefghij"[copy] if copies > 1 else ""), package, module, score))
    rows.sort()
    if part:
        k, n = (int(x) for x in part.split("/"))
        rows = rows[k - 1::n]
    return rows


def build(args) -> int:
    from submissions.build import build as build_notebook

    out = Path(args.out)
    chosen = _students(args.chapter, args.copies, args.part, args.only)
    for student, package, module, _ in chosen:
        build_notebook(package, args.chapter, module, out / f"{student}.ipynb")
    print(f"{len(chosen)} students of {args.chapter} in {out}")
    return 0


def expected(args) -> int:
    print(json.dumps({s: score for s, _, _, score in _students(args.chapter, args.copies, args.part, args.only)},
                     indent=1))
    return 0


def record(args) -> int:
    ws = Path(args.workspace)
    want = json.loads(Path(args.expected).read_text())
    with sqlite3.connect(ws / "gradebook.db") as conn:
        conn.row_factory = sqlite3.Row
        graded = {r["student"]: dict(r) for r in conn.execute(
            "SELECT student, score, max_score, seconds, worker, attempts, notes FROM ladder_graded WHERE assignment = ?",
            (args.assignment,))}
        splits = {r["student"]: json.loads(r["split"] or "{}") | {"started": r["started"]} for r in conn.execute(
            "SELECT student, started, split FROM ladder_grading_split WHERE assignment = ?", (args.assignment,))}
    speed = _speed_checks(ws, args.assignment)
    students = {}
    for student in sorted(set(want) | set(graded)):
        row = graded.get(student, {})
        students[student] = {"expected": want.get(student), "score": row.get("score"),
                             "seconds": row.get("seconds"), "worker": row.get("worker"),
                             "attempts": row.get("attempts"), "notes": json.loads(row.get("notes") or "[]"),
                             "split": splits.get(student, {}), "speed": speed.get(student, [])}
    print(json.dumps({"assignment": args.assignment, "wall_s": float(args.wall_s), "students": students,
                      "scores_as_expected": all(s["score"] == s["expected"] for s in students.values())}, indent=1))
    return 0


def _speed_checks(ws: Path, assignment: str) -> dict[str, list[dict]]:
    """Each student's speed cells as their autograded notebook records them (SpeedResult.as_record): how many
    interleaved rounds each ran, for how long, what ended them, and whether the clock was held down, for where a class's
    time went without bringing its workspace back."""
    from grader.notebooks.speed_outputs import speed_record

    found: dict[str, list[dict]] = {}
    for nb_path in sorted(ws.glob(f"autograded/*/{assignment}/*.ipynb")):
        for cell in json.loads(nb_path.read_text())["cells"]:
            record = speed_record(cell)
            if record:
                found.setdefault(nb_path.parts[-3], []).append(
                    {"cell": cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"),
                     **{k: record.get(k) for k in ("key", "ratio", "rounds", "timing_s", "stopped", "throttled", "remeasured_from",
                                                    "remeasured_because")}})
    return found


def _again(check: dict) -> str | None:
    """Why a speed cell was measured again: "throttled", "crowded", or None. Records made before a speed cell said
    why (no `remeasured_because`) were measured again only after a held clock."""
    if check.get("remeasured_from") is None:
        return None
    return check.get("remeasured_because") or "throttled"


def _stopped_by(checks: list[dict]) -> str:
    """What ended the speed cells' rounds, counted ("; stopped by spread 20, verdict 40, budget 4"), where the
    records say (SpeedResult.as_record's `stopped`)."""
    counts: dict[str, int] = {}
    for c in checks:
        if c.get("stopped"):
            counts[c["stopped"]] = counts.get(c["stopped"], 0) + 1
    return "; stopped by " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) if counts else ""


def report(args) -> int:
    """Runs are named by their folder: CLASS-gpusN[-VARIANT][-partK] (c1-gpus1-part1, c1-gpus4,
    correct-gpus4-noslots). The parts of one CLASS-gpusN[-VARIANT] add up to one run of the class."""
    import re

    runs = {}
    for path in args.records:
        name = Path(path).parent.name if Path(path).name == "record.json" else Path(path).stem
        runs[name] = json.loads(Path(path).read_text())
    classes: dict[str, dict[str, list[str]]] = {}
    for name in runs:
        cls, _, rest = name.partition("-gpus")
        label = re.sub(r"-part\d+$", "", rest)       # "1", "4", "4-noslots"
        classes.setdefault(cls, {}).setdefault(label, []).append(name)
    differs = False
    for cls, by_label in sorted(classes.items()):
        print(f"\n## {cls}\n")
        labels = sorted(by_label, key=lambda lab: (int(lab.split("-")[0]), lab))
        walls = {lab: sum(runs[n]["wall_s"] for n in by_label[lab]) for lab in labels}
        base = walls.get("1")
        students_of = {lab: {name: s for n in by_label[lab] for name, s in runs[n]["students"].items()}
                       for lab in labels}
        # the students' journal seconds summed: the class's work, which more GPUs should share out, not grow
        work = {lab: sum(s["seconds"] or 0 for s in students_of[lab].values()) for lab in labels}
        print("| GPUs | runs | wall, s | speed-up against 1 GPU | students' seconds, summed "
              "| against 1 GPU, the students graded in both | graded | scores as expected |\n"
              "|---|---|---|---|---|---|---|---|")
        alone = students_of.get("1", {})
        for lab in labels:
            ok = all(runs[n]["scores_as_expected"] for n in by_label[lab])
            mine = students_of[lab]
            # a speed-up only against one-GPU runs of the same students: parts missing from the one-GPU runs
            # would make a class look faster on one GPU than it is
            if base and set(mine) <= set(alone):
                speed = f"{base / walls[lab]:.2f}x"
            elif base:
                speed = f"– (1 GPU ran {len(set(mine) & set(alone))} of its {len(mine)} students)"
            else:
                speed = "–"
            both = [name for name in mine if mine[name]["seconds"] and alone.get(name, {}).get("seconds")]
            growth = (f"{sum(mine[n]['seconds'] for n in both) / sum(alone[n]['seconds'] for n in both):.2f}x"
                      + (f" ({len(both)} of {len(mine)})" if len(both) < len(mine) else "")) if both else "–"
            graded = sum(s["score"] is not None for s in mine.values())
            print(f"| {lab} | {', '.join(sorted(by_label[lab]))} | {walls[lab]:.1f} | {speed} | {work[lab]:.1f} "
                  f"| {growth} | {graded} of {len(mine)} | {'yes' if ok else 'NO'} |")
        for lab in labels:
            checks = [c for n in by_label[lab] for s in runs[n]["students"].values() for c in s.get("speed") or []
                      if c.get("timing_s") is not None]
            if checks:
                rounds = sorted(c["rounds"] for c in checks)
                print(f"\n{lab} GPU(s), speed cells: {len(checks)}, timed for {sum(c['timing_s'] for c in checks):.1f} s "
                      f"in all ({min(c['timing_s'] for c in checks):.1f}-{max(c['timing_s'] for c in checks):.1f} s "
                      f"each), rounds {rounds[0]}-{rounds[-1]} (median {rounds[len(rounds) // 2]}), "
                      f"{sum(_again(c) == 'throttled' for c in checks)} measured again after a held clock"
                      + (f", {crowded} beside another process on the GPU"
                         if (crowded := sum(_again(c) == 'crowded' for c in checks)) else "")
                      + _stopped_by(checks))
        per_student: dict[str, dict[str, tuple]] = {}
        for lab in labels:
            for n in by_label[lab]:
                for student, s in runs[n]["students"].items():
                    # its speed cells' timing apart: rounds that vary with the kernel's noise, not with the workers
                    timed = sum(c.get("timing_s") or 0.0 for c in s.get("speed") or [])
                    per_student.setdefault(student, {})[lab] = (s["score"], s["seconds"], s["split"], timed)
        print("\nPer student: score, journal seconds (CPU seconds of the grading and its checks; seconds its checks "
              "waited for a slot of the machine's), and the ratio to the 1-GPU run; then the seconds outside its "
              "speed cells' timing, and their ratio.\n")
        print("| student | " + " | ".join(f"{lab} GPU(s)" for lab in labels) + " |")
        print("|---|" + "---|" * len(labels))
        for student, seen in sorted(per_student.items()):
            cells = []
            _, alone, _, alone_timed = seen.get("1", (None, None, {}, 0.0))
            for lab in labels:
                if lab not in seen:
                    cells.append("–")
                    continue
                score, seconds, split, timed = seen[lab]
                if score is None:            # a run cut short (its time limit) before this student was graded
                    cells.append("not graded")
                    continue
                ratio = f", {seconds / alone:.2f}x" if alone and seconds and lab != "1" else ""
                rest, alone_rest = (seconds or 0) - timed, (alone or 0) - alone_timed
                rest_ratio = f", {rest / alone_rest:.2f}x" if alone_rest > 0 and lab != "1" else ""
                cells.append(f"{score:g}, {seconds or 0:.1f} s ({split.get('cpu_seconds', 0):.0f}, "
                             f"{split.get('slot_wait_seconds', 0):.1f}){ratio}; {rest:.1f} s outside timing{rest_ratio}")
            if len({seen[lab][0] for lab in seen} - {None}) > 1:
                differs = True
                cells[-1] += " **score differs**"
            print(f"| {student} | " + " | ".join(cells) + " |")
    print("\nevery score the same in every run" if not differs else "\nSOME SCORES DIFFER BETWEEN RUNS")
    return 1 if differs else 0


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    for name in ("build", "expected"):
        p = sub.add_parser(name)
        if name == "build":
            p.add_argument("out")
        p.add_argument("--chapter", default="01_vector_add", choices=sorted(synthetic_class.CLASSES))
        p.add_argument("--copies", type=int, default=2)
        p.add_argument("--part")
        p.add_argument("--only", nargs="*", default=[])
    p = sub.add_parser("record")
    for a in ("workspace", "assignment", "expected", "wall_s"):
        p.add_argument(a)
    p = sub.add_parser("report")
    p.add_argument("records", nargs="+")
    args = ap.parse_args()
    return {"build": build, "expected": expected, "record": record, "report": report}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
