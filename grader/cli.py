"""The `ladder` command: start, lab, doctor, compile, profile, check, release, grade, calibrate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import LadderError


def cmd_doctor(args) -> int:
    from .notebooks.doctor import run

    return run(args.target, remeasure=args.remeasure, kernels=args.kernels, as_json=args.json)


def cmd_profile(args) -> int:
    from .profiling import describe, recorded
    from .profiling.ncu import ProfileUnavailable, profile_notebook

    nb = Path(args.notebook)
    if not nb.is_file():
        raise LadderError(f"no notebook at {nb}")
    try:
        result = profile_notebook(nb, args.exercise, out_dir=Path(args.out) if args.out else None,
                                  launcher=args.launcher, size=args.size)
    except ProfileUnavailable as exc:
        print(f"Not profiled: {exc}\n")
        if recorded.available() and args.exercise in recorded.exercises():
            print(f"The recorded rungs of exercise {args.exercise} ({recorded.index()['gpu']}):")
            print(recorded.table(args.exercise))
        return 2
    print(describe(result))
    print(f"\nncu's report: {result.rep_path} (open it in Nsight Compute); raw CSV: {result.csv_path}")
    if recorded.available() and args.exercise in recorded.exercises():
        print(f"\nYours beside the recorded rungs of exercise {args.exercise}:")
        print(recorded.table(args.exercise, extra=result.signatures[:1]))
    return 0


def cmd_compile(args) -> int:
    from .cuda.nvrtc import compile_for_archs
    from .learner.cells import cuda_sources

    archs = tuple(a.strip() for a in args.arch.split(","))
    failed = 0
    for path in map(Path, args.paths):
        if path.suffix == ".ipynb":
            sources, stray = cuda_sources(path)
            for index in stray:
                print(f"{path}: cell {index} has a __global__ kernel outside a NAME_SRC string; not checked")
        else:
            sources = [(path.stem, path.read_text())]
        for name, src in sources:
            try:
                compiled = compile_for_archs(src, name, archs)
                print(f"✓ {path}: {name} compiles for {', '.join(c.arch for c in compiled)}")
            except LadderError as exc:
                failed += 1
                print(f"✗ {path}: {name}\n{exc}")
    return 1 if failed else 0


def cmd_release(args) -> int:
    from .notebooks.release import release

    if args.check:
        diffs = release(names=args.assignments or None, check=True)
        if diffs:
            print("course/ is out of date with solutions/ (run `ladder release` and commit):")
            for d in diffs:
                print(f"  {d}")
            return 1
        print("course/ matches a fresh release of solutions/")
        return 0
    report = release(names=args.assignments or None, force=args.force)
    for path in report.backed_up:
        print(f"kept a copy of your changed {path} in {report.backup_dir}")
    print(f"released to course/: {len(report.released)} file(s) written" if report.released
          else "released: course/ was already current")
    return 0


def cmd_start(args) -> int:
    from .notebooks.course import repo_root
    from .notebooks.workspace import WORK_DIR, set_instructor_tools, start

    root = repo_root()
    dest = Path(args.dir) if args.dir else root / WORK_DIR
    result = start(root, dest.resolve(), args.chapters or None)
    for path in result.copied:
        print(f"copied   {path}")
    for path in result.kept:
        print(f"kept     {path} (yours: it differs from the release, and is never overwritten)")
    if result.unchanged and not result.copied and not result.kept:
        print(f"{dest} already holds every chapter's notebook")
    if not args.keep_instructor_tools:
        set_instructor_tools(False)
        print("JupyterLab: nbgrader's instructor tools are off for this environment "
              "(`ladder lab --instructor` turns them back on)")
    shown = dest.relative_to(Path.cwd()) if dest.resolve().is_relative_to(Path.cwd()) else dest
    print(f"\nWork in your copy:  jupyter lab {shown}\n"
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

    paths = [resolve_notebook(p) for p in args.notebooks]
    if args.sanitize:
        from .sanitizer.report import DEFAULT_TIMEOUT_S, sanitize

        if args.repeat != 1:
            raise LadderError("--repeat does not go with --sanitize (the sanitizer's verdict does not vary by run)")
        timeout = args.sanitize_timeout if args.sanitize_timeout is not None else DEFAULT_TIMEOUT_S
        return sanitize(paths, tools=args.tool, timeout_s=timeout, as_json=args.json)
    if args.tool or args.sanitize_timeout is not None:
        raise LadderError("--tool and --sanitize-timeout go with --sanitize")
    return 0 if check(paths, repeat=args.repeat, as_json=args.json) else 1


def resolve_notebook(arg: str) -> Path:
    """A notebook path, or a chapter ("1", "01_vector_add") found in work/ or the current folder."""
    path = Path(arg)
    if path.is_file():
        return path
    if path.is_dir():
        found = sorted(path.glob("*.ipynb"))
        if len(found) == 1:
            return found[0]
    stem = f"{int(arg):02d}_" if arg.isdigit() else None
    for base in (Path("work"), Path(".")):
        for folder in sorted(base.glob(f"{stem}*" if stem else arg)) if base.is_dir() else []:
            notebooks = sorted(folder.glob("*.ipynb")) if folder.is_dir() else []
            if len(notebooks) == 1:
                return notebooks[0]
    if not arg.endswith(".ipynb") and "/" not in arg:
        # A chapter, not a path: say whether it exists, and if it does, how to make its copy.
        from .notebooks.course import repo_root
        from .notebooks.workspace import chapter_names

        try:
            root = repo_root()
        except LadderError:
            root = None   # outside the course's folder: only a path can name the notebook
        if root is not None:
            (name,) = chapter_names(root, [arg])   # "no chapter '9': ..." when there is none
            raise LadderError(f"chapter {name} is neither in work/ nor in this folder: run `ladder start {arg}` "
                              f"to make your copy, or give the notebook's path")
    raise LadderError(f"no such notebook: {arg} (give a notebook's path, such as "
                      "work/01_vector_add/01_vector_add.ipynb, or a chapter number)")


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
    where = Where(gpus=args.gpus, workers=args.workers, scheduler=args.scheduler, cluster=args.cluster,
                  jobs=args.jobs, cluster_options=parse_options(args.cluster_option or []), retries=args.retries)
    grades = grade(Path(args.submissions), args.assignment, Path(args.workspace),
                   Path(args.csv) if args.csv else None, Path(args.bars) if args.bars else None, where=where,
                   db_url=args.db, progress=not args.no_progress)
    return 0 if all(g.error is None for g in grades) else 1


def cmd_calibrate(args) -> int:
    from .notebooks.calibrate import run

    return run(args.chapters, args.runs, Path(args.out))


def archs_names() -> tuple[str, ...]:
    from .cuda.archs import NAMES

    return NAMES


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ladder", description="Kernel Ladder: check your GPU, your kernels, your grades.")
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
    c.add_argument("paths", nargs="+")
    c.add_argument("--arch", default="sm_80,sm_90", help="comma-separated real architectures (default sm_80,sm_90)")
    c.set_defaults(func=cmd_compile)

    pr = sub.add_parser("profile", help="run Nsight Compute on your own launcher for an exercise, at the graded size, "
                                        "and print its signature beside the recorded rungs (docs/profiling.md)")
    pr.add_argument("notebook", help="the saved notebook to take your code from")
    pr.add_argument("--exercise", required=True, help="the exercise, as in bars.toml: 1a, 1b, 2, 3, 4, 5a, 5b, 6, 6-causal")
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
    g.add_argument("--no-progress", action="store_true", help="no progress bar (logs, CI)")
    where = g.add_mutually_exclusive_group()
    where.add_argument("--isolated", action="store_true",
                       help="check graded cells in fresh processes, out of the notebook's reach (the default; "
                            "docs/isolation.md)")
    where.add_argument("--in-kernel", action="store_true",
                       help="run graded cells in each notebook's own kernel instead (faster, but a notebook that "
                            "patches the grader or the timer can fool it)")
    g.set_defaults(func=cmd_grade)

    cal = sub.add_parser("calibrate", help="time every recorded rung of each chapter on this GPU, say whether each "
                                           "pass bar separates them, and write proposed bars as an override file "
                                           "(docs/instructors.md)")
    cal.add_argument("--chapters", metavar="1,5", help="chapter numbers, separated by commas (default: all)")
    cal.add_argument("--runs", type=int, default=10, help="timed runs of each rung (default 10)")
    cal.add_argument("--out", default="bars-override.toml",
                     help="the bars override file to write (default bars-override.toml; every run's figures go "
                          "beside it as .json)")
    cal.set_defaults(func=cmd_calibrate)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if getattr(args, "isolated", False) or getattr(args, "in_kernel", False):
        import os
        os.environ["LADDER_ISOLATED"] = "1" if args.isolated else "0"
    try:
        return args.func(args)
    except LadderError as exc:
        print(f"ladder {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
