"""The `ladder` command: start, lab, doctor, compile, profile, check, release, grade, calibrate."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .errors import LadderError


def cmd_doctor(args) -> int:
    from .notebooks.doctor import run

    return run(args.target, remeasure=args.remeasure, kernels=args.kernels, as_json=args.json)


def cmd_profile(args) -> int:
    from .profiling import describe
    from .profiles import recorded
    from .profiling.ncu import ProfileUnavailable, profile_notebook

    found = recognised(args.notebook)
    exercise = profiled_exercise(found, args.exercise)
    if args.size is not None:
        import json

        try:
            size = json.loads(args.size)
        except ValueError:
            size = None
        sizes = size if isinstance(size, list) else [size]
        if not sizes or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in sizes):
            raise LadderError(f"--size {args.size!r}: give the size as JSON, a positive integer or a list of them, "
                              "e.g. '[2048, 2048, 2048]'")
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise LadderError(f"--out {args.out} is a file: give a folder for ncu's report and its CSV")
    has_rungs = recorded.available() and exercise in recorded.exercises()
    no_rungs = (f"Exercise {exercise} has no recorded rungs to compare with (recorded: "
                f"{', '.join(recorded.exercises()) if recorded.available() else 'none here'}).")
    try:
        result = profile_notebook(found.path, exercise, out_dir=Path(args.out) if args.out else None,
                                  launcher=args.launcher, size=args.size)
    except ProfileUnavailable as exc:
        print(f"Not profiled: {exc}\n")
        if has_rungs:
            print(f"The recorded rungs of exercise {exercise} ({recorded.exercise_index(exercise)['gpu']}):")
            print(recorded.table(exercise))
        else:
            print(no_rungs)
        return 2
    print(describe(result))
    print(f"\nncu's report: {result.rep_path} (open it in Nsight Compute); raw CSV: {result.csv_path}")
    if has_rungs:
        print(f"\nYours beside the recorded rungs of exercise {exercise}:")
        print(recorded.table(exercise, extra=result.signatures[:1]))
    else:
        print(f"\n{no_rungs}")
    return 0


def profiled_exercise(found, exercise: str) -> str:
    """`--exercise` checked against the exercises the notebook's chapter has (those `ladder profile` and
    `ladder check --sanitize` know how to run: the chapter's SANITIZE entries)."""
    from . import chapters
    from .notebooks.recognise import chapter_words

    if found.assignment is None:   # outside the repository: the profiled process says whether it exists
        return exercise
    chapter = f"ch{found.assignment[:2]}"
    known = sorted({step.exercise.key for step in chapters.module(chapter).SANITIZE})
    if exercise not in known:
        raise LadderError(f"--exercise {exercise!r}: {chapter_words(found.assignment)} has exercise(s) "
                          f"{', '.join(known)}; give one of those")
    return exercise


CUDA_SUFFIXES = (".cu", ".cuh")


def cmd_compile(args) -> int:
    import re

    from .cuda.nvrtc import compile_for_archs
    from .learner.cells import cuda_sources

    from .cuda.nvrtc import binding, supported_archs

    archs = tuple(a.strip() for a in args.arch.split(","))
    bad = [a for a in archs if not re.fullmatch(r"(sm|compute)_\d{2,3}a?", a)]
    if bad:
        raise LadderError(f"--arch {args.arch!r}: {', '.join(map(repr, bad))} is not an architecture; write "
                          "real architectures separated by commas, e.g. sm_80,sm_90")
    known = supported_archs()   # empty where NVRTC is missing: compiling says that itself
    unknown = [a for a in archs if known and a.replace("compute_", "sm_").rstrip("a") not in known]
    if unknown:
        raise LadderError(f"--arch {', '.join(unknown)}: {binding().version} compiles for {', '.join(known)}; give "
                          "architectures among those")
    inputs = []
    for arg in args.paths:   # every input read before any compiles: a bad one stops the command at once
        path = Path(arg)
        if path.suffix in CUDA_SUFFIXES:
            if not path.is_file():
                raise LadderError(f"{arg}: no such CUDA file")
            inputs.append((path, [(path.stem, path.read_text(errors="replace"))], []))
        else:
            found = recognised(arg)
            inputs.append((found.path, *cuda_sources(found.notebook)))
    failed = 0
    for path, sources, stray in inputs:
        for index in stray:
            print(f"{path}: cell {index} has a __global__ kernel outside a NAME_SRC string; not checked")
        if not sources:
            print(f"{path}: no CUDA C kernels (NAME_SRC strings) to compile")
        for name, src in sources:
            try:
                compiled = compile_for_archs(src, name, archs)
                print(f"✓ {path}: {name} compiles for {', '.join(c.arch for c in compiled)}")
            except LadderError as exc:
                failed += 1
                print(f"✗ {path}: {name}\n{exc}")
    return 1 if failed else 0


def cmd_release(args) -> int:
    from .notebooks.course import chapter_names, repo_root
    from .notebooks.recognise import course_root
    from .notebooks.release import release

    root = course_root() or repo_root()   # repo_root: the error that says where it looked
    names = chapter_names(root, args.assignments) if args.assignments else None
    if args.check:
        diffs = release(root, names=names, check=True)
        if diffs:
            print("course/ is out of date with solutions/ (run `ladder release` and commit):")
            for d in diffs:
                print(f"  {d}")
            return 1
        print("course/ matches a fresh release of solutions/")
        return 0
    report = release(root, names=names, force=args.force)
    for path in report.backed_up:
        print(f"kept a copy of your changed {path} in {report.backup_dir}")
    print(f"released to course/: {len(report.released)} file(s) written" if report.released
          else "released: course/ was already current")
    return 0


def cmd_start(args) -> int:
    import os

    from .notebooks.course import repo_root
    from .notebooks.recognise import course_root
    from .notebooks.course import chapter_names
    from .notebooks.workspace import WORK_DIR, set_instructor_tools, start

    root = course_root() or repo_root()   # repo_root: the error that says where it looked
    dest = Path(args.dir).resolve() if args.dir else root / WORK_DIR
    if dest.exists() and not dest.is_dir():
        raise LadderError(f"--dir {dest} is a file: give a folder for your copy of the notebooks")
    made = not dest.exists()
    chapters = chapter_names(root, args.chapters or None)   # a wrong chapter is said before anything is made
    result = start(root, dest, chapters)
    if made:
        print(f"made     {dest} (it did not exist)")
    for path in result.copied:
        print(f"copied   {path}")
    for path in result.kept:
        print(f"kept     {path} (yours: it differs from the release, and is never overwritten)")
    if result.unchanged and not result.copied and not result.kept:
        asked = "every chapter's notebook" if not args.chapters else \
            f"the notebook{'s' if len(chapters) > 1 else ''} of {', '.join(chapters)}"
        print(f"{dest} already holds {asked}, as released: nothing to copy")
    if not args.keep_instructor_tools:
        set_instructor_tools(False)
        print("JupyterLab: nbgrader's instructor tools are off for this environment "
              "(`ladder lab --instructor` turns them back on)")
    shown = dest.relative_to(Path.cwd()) if dest.resolve().is_relative_to(Path.cwd()) else dest
    as_root = " --allow-root" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""   # Jupyter refuses root without it
    print(f"\nWork in your copy:  jupyter lab{as_root} {shown}\n"
          f"Check a chapter:    ladder check {shown}/01_vector_add/01_vector_add.ipynb")
    return 0


def cmd_lab(args) -> int:
    from .notebooks.workspace import set_instructor_tools

    for line in set_instructor_tools(args.instructor, level=args.level):
        print(line)
    print(f"nbgrader's JupyterLab tools are {'on' if args.instructor else 'off'} "
          f"({'this Python environment' if args.level == 'sys_prefix' else 'your user account'}); restart JupyterLab")
    return 0


def cmd_check(args) -> int:
    from .notebooks.check import check

    if args.repeat < 1:
        raise LadderError(f"--repeat {args.repeat}: give a number of runs of at least 1")
    if args.sanitize_timeout is not None and args.sanitize_timeout <= 0:
        raise LadderError(f"--sanitize-timeout {args.sanitize_timeout:g}: give a positive number of seconds")
    if args.sanitize and args.repeat != 1:
        raise LadderError("--repeat does not go with --sanitize (the sanitizer's verdict does not vary by run)")
    if not args.sanitize and (args.tool or args.sanitize_timeout is not None):
        raise LadderError("--tool and --sanitize-timeout go with --sanitize")
    from . import config
    try:   # every LADDER_ setting read now, as `ladder grade` does: a bad one is named before any notebook runs
        config.check_all()
    except ValueError as exc:
        raise LadderError(str(exc)) from None
    paths = [recognised(p).path for p in args.notebooks]
    if args.sanitize:
        from .sanitizer.report import DEFAULT_TIMEOUT_S, sanitize

        timeout = args.sanitize_timeout if args.sanitize_timeout is not None else DEFAULT_TIMEOUT_S
        return sanitize(paths, tools=args.tool, timeout_s=timeout, as_json=args.json)
    return 0 if check(paths, repeat=args.repeat, as_json=args.json) else 1


def recognised(arg: str):
    """The learner's notebook an argument names (a path, or a chapter), read and recognised by its cells
    (grader.notebooks.recognise): a notebook of another chapter than its name or the chapter asked for
    is refused, naming the chapter it is."""
    from .notebooks.recognise import recognise

    path, chapter = resolve_notebook(arg)
    return recognise(path, expected=chapter)


def resolve_notebook(arg: str) -> tuple[Path, str | None]:
    """A notebook path, or a chapter ("1", "01_vector_add") found in work/, in the current folder (or that
    folder itself), or in the repository's work/; with the chapter's folder name when a chapter was given."""
    path = Path(arg)
    if path.is_file():
        return path, None
    if path.is_dir():
        found = sorted(path.glob("*.ipynb"))
        if len(found) == 1:
            return found[0], None
        raise LadderError(f"{arg} is a folder with {len(found) or 'no'} notebooks: give the notebook's path"
                          + (f" ({', '.join(str(f) for f in found[:3])})" if found else ""))
    if arg.endswith(".ipynb") or "/" in arg or "\\" in arg or path.suffix:
        raise LadderError(f"{arg}: no such file (give a notebook's path, such as "
                          "work/01_vector_add/01_vector_add.ipynb, or a chapter number such as 1)")
    # A chapter, not a path.
    from .notebooks.course import chapter_names
    from .notebooks.recognise import course_root
    from .notebooks.workspace import WORK_DIR

    root = course_root()
    if root is None:
        raise LadderError(f"chapter {arg}: no course repository here or where this grader is installed from, so "
                          f"no {WORK_DIR}/ to find it in: run this from the repository, or give the notebook's path")
    (name,) = chapter_names(root, [arg])   # "no chapter '9': ..." when there is none
    cwd = Path.cwd()
    for folder in (cwd if cwd.name == name else None, Path(WORK_DIR) / name, Path(name), root / WORK_DIR / name):
        notebooks = sorted(folder.glob("*.ipynb")) if folder is not None and folder.is_dir() else []
        if len(notebooks) == 1:
            return notebooks[0], name
        if len(notebooks) > 1:
            raise LadderError(f"{folder} holds {len(notebooks)} notebooks: give the one to use by its path")
    raise LadderError(f"chapter {int(name[:2])} ({name}) has no copy in {root / WORK_DIR}: run `ladder start {arg}` "
                      "to make yours, or give the notebook's path")


def cmd_grade(args) -> int:
    from .classgrade.cluster import Where, parse_options
    from .classgrade.run import grade

    if args.ungradable:
        import os
        os.environ["LADDER_UNGRADABLE"] = args.ungradable  # the graded notebooks' kernels inherit it
    if args.cluster_option and not args.cluster:
        raise LadderError("--cluster-option goes with --cluster")
    if args.gpus is not None and args.gpus < 1 or args.workers is not None and args.workers < 1:
        raise LadderError("--gpus and --workers take a number of at least 1")
    if args.jobs < 1:
        raise LadderError(f"--jobs {args.jobs}: give a number of batch jobs of at least 1")
    if args.jobs != 1 and not args.cluster:
        raise LadderError("--jobs goes with --cluster")
    if args.retries < 0:
        raise LadderError(f"--retries {args.retries}: give 0 or more")
    if args.scheduler is not None and not scheduler_address(args.scheduler):
        raise LadderError(f"--scheduler {args.scheduler!r}: give the scheduler's address as HOST:PORT or "
                          "tcp://HOST:PORT")
    if args.db is not None:
        from .classgrade.journal import checked_url

        checked_url(args.db)
    for flag, value in (("--csv", args.csv), ("--csv-cells", args.csv_cells)):
        if value is not None and Path(value).is_dir():
            raise LadderError(f"{flag} {value} is a folder: give the CSV file's path")
    if Path(args.workspace).exists() and not Path(args.workspace).is_dir():
        raise LadderError(f"--workspace {args.workspace} is a file: give a folder to grade in")
    args.assignment = chapter_argument(args.assignment)
    where = Where(gpus=args.gpus, workers=args.workers, scheduler=args.scheduler, cluster=args.cluster,
                  jobs=args.jobs, cluster_options=parse_options(args.cluster_option or []), retries=args.retries)
    if not args.verbose:
        hide_library_warnings()
    grades = grade(Path(args.submissions), args.assignment, Path(args.workspace),
                   Path(args.csv) if args.csv else None, Path(args.bars) if args.bars else None, where=where,
                   db_url=args.db, progress=not args.no_progress,
                   cells_csv=Path(args.csv_cells) if args.csv_cells else None)
    class_report(args.workspace, args.assignment, args.db, args.leaderboard, just_graded=True)
    return 0 if all(g.error is None for g in grades) else 1


def chapter_argument(text: str) -> str:
    """An assignment named as every command names a chapter ("1", "01_vector_add": grader.notebooks.course), as
    its folder's name; as given outside the course's repository, where there is nothing to read it against."""
    from .notebooks.course import chapter_names
    from .notebooks.recognise import course_root

    root = course_root()
    return chapter_names(root, [text])[0] if root is not None else text


def scheduler_address(text: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text if "://" in text else f"tcp://{text}")
        return bool(parts.hostname) and parts.port is not None
    except ValueError:   # a port that is not a number
        return False


def hide_library_warnings() -> None:
    """Python warnings from the libraries grading runs through (SQLAlchemy's SAWarning about nbgrader's
    models, deprecations, ResourceWarnings at exit): out of the instructor's console for the rest of this
    process, its exit included, unless `--verbose` asks for them."""
    warnings.simplefilter("ignore")


def class_report(workspace: str, assignment: str | None, db_url: str | None, leaderboard: str,
                 just_graded: bool = False) -> None:
    """The class report (grader.classgrade.report), built here rather than by `grade` itself: read from the
    workspace alone, `ladder report` builds the same page again (from a gradebook that holds the workspace's
    students, where `ladder grade` has not just written it)."""
    from .classgrade.record import Workspace
    from .classgrade.report import build

    ws = Workspace.existing(Path(workspace), assignment, db_url, all_its_students=not just_graded)
    try:
        print(f"class report: {build(ws, leaderboard)}")
    finally:
        ws.close()


def cmd_report(args) -> int:
    if args.assignment is not None:
        args.assignment = chapter_argument(args.assignment)
    if args.db is not None:
        from .classgrade.journal import checked_url

        checked_url(args.db)
    class_report(args.workspace, args.assignment, args.db, args.leaderboard)
    return 0


def leaderboard_names() -> tuple[str, ...]:
    from .classgrade.report import LEADERBOARD_NAMES

    return LEADERBOARD_NAMES


def cmd_calibrate(args) -> int:
    from .classgrade.calibrate import run

    return run(args.chapters, args.runs, Path(args.out), args.bars, args.gpus)


def archs_names() -> tuple[str, ...]:
    from .cuda.archs import NAMES

    return NAMES


class UsageError(LadderError):
    """A command line argparse refused: an unknown option, a missing or malformed value."""


class LadderParser(argparse.ArgumentParser):
    """argparse's parser, whose refusals come back to `main` as one line (and, under `--json`, as the
    JSON object) instead of its usage block and an exit from deep inside parsing."""

    def error(self, message: str):
        raise UsageError(f"{message} (`{self.prog} --help` lists what it takes)")


def build_parser() -> argparse.ArgumentParser:
    p = LadderParser(prog="ladder", description="Kernel Ladder: check your GPU, your kernels, your grades.")
    sub = p.add_subparsers(dest="command")

    s = sub.add_parser("start", help="copy the course's notebooks into work/ for you to write in (never "
                                     "overwrites), and hide nbgrader's instructor tools in JupyterLab")
    s.add_argument("chapters", nargs="*", help="chapters to copy, by number or folder name (default: all)")
    s.add_argument("--dir", help="where to put your copy (default: work/ in the repository)")
    s.add_argument("--keep-instructor-tools", action="store_true",
                   help="leave nbgrader's JupyterLab extension as it is")
    s.set_defaults(func=cmd_start)

    lab = sub.add_parser("lab", help="show or hide nbgrader's instructor tools in JupyterLab")
    role = lab.add_mutually_exclusive_group(required=True)
    role.add_argument("--learner", action="store_true", help="hide them (what `ladder start` does)")
    role.add_argument("--instructor", action="store_true", help="show them (release, grade, formgrader)")
    lab.add_argument("--level", choices=("sys_prefix", "user"), default="sys_prefix",
                     help="this Python environment (default) or your user account")
    lab.set_defaults(func=cmd_lab)

    d = sub.add_parser("doctor", help="show the GPU, library versions, CUDA headers, the GPU's ceilings, and what "
                                      "each chapter can do on this GPU (or on --target architectures)")
    d.add_argument("--remeasure", action="store_true", help="measure the ceilings again instead of using the cache")
    d.add_argument("--target", nargs="+", metavar="ARCH", choices=archs_names(),
                   help=f"the table for these architectures instead of this GPU, from compiling for them (no GPU "
                        f"needed): {', '.join(archs_names())}")
    d.add_argument("--kernels", action="store_true",
                   help="also compile every kernel in solutions/ for each architecture and report its shared memory, "
                        "registers and tensor-core instructions (minutes for sm_75)")
    d.add_argument("--json", action="store_true", help="machine-readable output")
    d.set_defaults(func=cmd_doctor)

    c = sub.add_parser("compile", help="compile the CUDA kernels of notebooks or .cu files through NVRTC (no GPU needed)")
    c.add_argument("paths", nargs="+", help="notebooks, chapter numbers (found in work/) or .cu files")
    c.add_argument("--arch", default="sm_80,sm_90", help="comma-separated real architectures (default sm_80,sm_90)")
    c.set_defaults(func=cmd_compile)

    pr = sub.add_parser("profile", help="run Nsight Compute on your own launcher for an exercise, at the graded size, "
                                        "and print its signature beside the recorded rungs (docs/profiling.md)")
    pr.add_argument("notebook", help="the saved notebook to take your code from, or a chapter number (found in work/)")
    pr.add_argument("--exercise", required=True, help="the exercise, as in bars.toml (1a, 2, 5b, 6-causal, ...); one the "
                                                      "notebook's chapter lacks is answered with the list of its own")
    pr.add_argument("--launcher", help="profile this launcher instead of the graded one (a stretch goal's)")
    pr.add_argument("--size", help="profile at this size (JSON, e.g. '[2048, 2048, 2048]') instead of the graded one")
    pr.add_argument("--out", help="where to keep ncu's report and its CSV (default: a temporary folder)")
    pr.set_defaults(func=cmd_profile)

    r = sub.add_parser("release", help="regenerate course/ from solutions/ through nbgrader")
    r.add_argument("assignments", nargs="*", help="assignment folders (default: all)")
    r.add_argument("--check", action="store_true", help="fail if course/ differs from a fresh release")
    r.add_argument("--force", action="store_true",
                   help="release even over files changed since the last release (each is backed up first)")
    r.set_defaults(func=cmd_release)

    k = sub.add_parser("check", help="execute notebooks fresh and grade their autograded cells as nbgrader does")
    k.add_argument("notebooks", nargs="+", help="notebook paths, or chapter numbers (found in work/)")
    k.add_argument("--json", action="store_true", help="JSON output (schema: docs/check-json.md)")
    k.add_argument("--repeat", type=int, default=1, help="run each notebook N times; all must pass")
    k.add_argument("--isolated", action="store_true",
                   help="check graded cells in fresh processes, out of the notebook's reach (docs/isolation.md)")
    k.add_argument("--sanitize", action="store_true",
                   help="instead of grading, run your kernels under NVIDIA compute-sanitizer at small sizes "
                        "(memcheck, racecheck, synccheck; docs/sanitize.md)")
    k.add_argument("--tool", action="append", choices=("memcheck", "racecheck", "synccheck"),
                   help="with --sanitize: run only this tool (repeat the flag for several)")
    k.add_argument("--sanitize-timeout", type=float, metavar="SECONDS",
                   help="with --sanitize: time limit of each tool's run on each notebook (default 900)")
    k.set_defaults(func=cmd_check)

    g = sub.add_parser("grade", help="autograde a class's submissions with nbgrader, one student per GPU (several GPUs "
                                     "or machines through Dask), resumable; feedback and a grades CSV")
    g.add_argument("submissions", help="nbgrader's submitted/ tree, or a folder of STUDENT.ipynb files")
    g.add_argument("--assignment", required=True, help="assignment folder name, e.g. 01_vector_add")
    g.add_argument("--workspace", default="grading", help="nbgrader course folder to grade in (default: grading/)")
    g.add_argument("--csv", help="where to write the grades CSV (default: WORKSPACE/grades.csv)")
    g.add_argument("--bars", help="a pass-bar override file (sets LADDER_BARS for the graded notebooks)")
    g.add_argument("--ungradable", choices=("zero", "full"),
                   help="how to score a speed cell whose bar no correct kernel can reach on this GPU, such as "
                        "chapter 5 on a T4 (sets LADDER_UNGRADABLE; default zero; docs/gpus.md)")
    g.add_argument("--db", metavar="URL",
                   help="the gradebook's database as an SQLAlchemy URL, e.g. postgresql+psycopg://grader@host/class "
                        "(default: WORKSPACE/gradebook.db, SQLite)")
    on = g.add_mutually_exclusive_group()
    on.add_argument("--gpus", type=int, metavar="N",
                    help="grade N students at once on this machine's first N GPUs, one Dask worker pinned to each "
                         "(dask-cuda); without it, one GPU and no Dask")
    on.add_argument("--workers", type=int, metavar="N",
                    help="grade N students at once in N local Dask processes without GPU pinning (machines "
                         "without a GPU)")
    on.add_argument("--scheduler", metavar="ADDR",
                    help="grade on an existing Dask scheduler's workers (each started with one GPU and "
                         "`--nthreads 1 --resources GPU=1`)")
    on.add_argument("--cluster", choices=("slurm", "pbs", "sge", "lsf"),
                    help="submit Dask workers as batch jobs of one GPU each through dask-jobqueue")
    g.add_argument("--jobs", type=int, default=1, help="with --cluster: how many batch jobs (GPUs) to ask for")
    g.add_argument("--cluster-option", action="append", metavar="KEY=VALUE",
                   help="with --cluster: an option of the dask-jobqueue cluster (queue=gpu, account=cs101, "
                        "walltime=02:00:00, ...); repeat the flag for several")
    g.add_argument("--retries", type=int, default=2,
                   help="with Dask: how many times a student whose worker or GPU died is graded again elsewhere "
                        "(default 2)")
    g.add_argument("--csv-cells", metavar="FILE",
                   help="also write every student's graded cells to FILE: student, cell, points, max, passed, "
                        "reason code and the message's first line")
    g.add_argument("--no-progress", action="store_true", help="no progress bar (logs, CI)")
    g.add_argument("--verbose", action="store_true",
                   help="show the libraries' own warnings (SQLAlchemy, nbgrader) too; hidden by default")
    g.add_argument("--leaderboard", choices=leaderboard_names(), default="initials",
                   help="who the class report's leaderboards name: names, initials (the default) or none")
    where = g.add_mutually_exclusive_group()
    where.add_argument("--isolated", action="store_true",
                       help="check graded cells in fresh processes, out of the notebook's reach (the default; "
                            "docs/isolation.md)")
    where.add_argument("--in-kernel", action="store_true",
                       help="run graded cells in each notebook's own kernel instead (faster, but a notebook that "
                            "patches the grader or the timer can fool it)")
    g.set_defaults(func=cmd_grade)

    rep = sub.add_parser("report", help="build the class report of a graded assignment again (WORKSPACE/report.html: "
                                        "where the class stands, speed, leaderboards, who needs help, integrity, the run)")
    rep.add_argument("workspace", nargs="?", default="grading", help="the folder `ladder grade` graded in (default: grading/)")
    rep.add_argument("--assignment", help="which assignment (default: the workspace's only one)")
    rep.add_argument("--db", metavar="URL", help="the gradebook's database, as given to `ladder grade --db`")
    rep.add_argument("--leaderboard", choices=leaderboard_names(), default="initials",
                     help="who the leaderboards name: names, initials (the default) or none")
    rep.set_defaults(func=cmd_report)
    cal = sub.add_parser("calibrate", help="time every recorded rung of each chapter on this GPU, say whether each "
                                           "pass bar separates them, and write proposed bars as an override file "
                                           "(docs/instructors.md)")
    cal.add_argument("--chapters", metavar="1,5", help="chapter numbers, separated by commas (default: all)")
    cal.add_argument("--bars", metavar="5a,5b", help="only the rungs of these bars (keys of grader/bars.toml, "
                                                     "separated by commas; default: every bar of the chapters)")
    cal.add_argument("--runs", type=int, default=10, help="timed runs of each rung (default 10)")
    cal.add_argument("--gpus", type=int, default=1,
                     help="time N rungs at once, each on a GPU of its own (dask-cuda, as `ladder grade --gpus`; "
                          "default 1: in turn, on this process's GPU)")
    cal.add_argument("--out", default="bars-override.toml",
                     help="the bars override file to write (default bars-override.toml; every run's figures go "
                          "beside it as .json)")
    cal.set_defaults(func=cmd_calibrate)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        command = next((a for a in argv if not a.startswith("-")), None)
        return refuse(command if command in commands(parser) else None, exc, as_json="--json" in argv,
                      sanitize="--sanitize" in argv)
    if args.command is None:
        parser.print_help()
        return 0
    if getattr(args, "isolated", False) or getattr(args, "in_kernel", False):
        import os
        os.environ["LADDER_ISOLATED"] = "1" if args.isolated else "0"
    as_json, sanitize = getattr(args, "json", False), getattr(args, "sanitize", False)
    try:
        return args.func(args)
    except LadderError as exc:
        return refuse(args.command, exc, as_json, sanitize)
    except OSError as exc:   # a path the command could not read or write: say which, without a traceback
        where = f": {exc.filename}" if exc.filename else ""
        return refuse(args.command, LadderError(f"{exc.strerror or exc}{where}"), as_json, sanitize)


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's name and parser, as argparse holds them."""
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def refuse(command: str | None, exc: LadderError, as_json: bool, sanitize: bool = False) -> int:
    """A command that could not start: one message on stderr (and, for `check --json`, the documented JSON
    object on stdout, docs/check-json.md; with `--sanitize`, docs/sanitize.md's; for `doctor --json`, an object
    with the error and its reason code), exit code 2."""
    print(f"ladder{' ' + command if command else ''}: {exc}", file=sys.stderr)
    if as_json and command == "doctor":
        import json

        print(json.dumps({"error": str(exc), "reason": exc.reason}, indent=2))
    if as_json and command == "check":
        import json

        if sanitize:
            from .sanitizer.report import SCHEMA
        else:
            from .notebooks.check import SCHEMA
        print(json.dumps({"schema": SCHEMA, "passed": False, "error": str(exc), "reason": exc.reason,
                          "notebooks": []}, indent=2))
    return 2


if __name__ == "__main__":
    sys.exit(main())
