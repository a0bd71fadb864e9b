"""`ladder grade`: a class's submissions in, nbgrader's gradebook, autograded notebooks, feedback and
a CSV out, one student per GPU.

Input is either nbgrader's `submitted/` tree (submitted/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb) or a folder
with one notebook per student (STUDENT.ipynb). Grading happens in a workspace folder that is an nbgrader
course of its own, so the repository's course/ is never touched. Students already graded from the same
submitted bytes, assignment source, grader and bars (grader.classgrade.journal) are skipped; the others
are graded one per GPU: here, one after another, or on Dask workers (grader.classgrade.cluster). Each
worker's result is recorded by this process alone (grader.classgrade.record), as it arrives.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from .. import config
from ..errors import LadderError
from ..notebooks.check import failed_cells
from ..notebooks.course import SOURCE_DIR, assignments, repo_root
from ..notebooks.recognise import course_root, recognise
from . import schedule, task
from .batchjobs import BatchJobs
from .cluster import RESOURCE, Starting, Where, dashboard
from .export import write_cells, write_grades
from .identity import bars_bytes, files_sha256, folder_files, grader_sha256, sha256
from .job import StudentGrade, StudentJob, StudentResult
from .progress import Progress, outside_students, summary, where_time_went
from .record import Workspace


JOB_LOGS = "jobs"   # in the workspace: each batch job's output (--cluster)
# How long a run with no worker waits before it asks the batch system whether its jobs are still there.
WORKER_WAIT_S = 5


def source_notebook(root: Path, assignment: str) -> Path:
    folder = root / SOURCE_DIR / assignment
    notebooks = sorted(folder.glob("*.ipynb"))
    if not folder.is_dir() or not notebooks:
        raise LadderError(f"no assignment {assignment!r} in {SOURCE_DIR}/: give one of {', '.join(assignments(root))}")
    if len(notebooks) > 1:
        raise LadderError(f"{folder} has several notebooks; ladder grade handles one per assignment")
    return notebooks[0]


def collect_submissions(submissions: Path, assignment: str, notebook_name: str) -> dict[str, Path | None]:
    """student id -> submitted notebook, from either layout or both mixed (None: the student's folder holds
    no notebook, which is graded 0 and said so, never left out)."""
    if not submissions.exists():
        raise LadderError(f"{submissions}: no such folder (give nbgrader's submitted/ folder, or a folder of "
                          "STUDENT.ipynb files)")
    if not submissions.is_dir():
        raise LadderError(f"{submissions} is a file, not a folder: give nbgrader's submitted/ folder, or a folder "
                          "of STUDENT.ipynb files")
    found: dict[str, Path | None] = {p.stem: p for p in sorted(submissions.glob("*.ipynb")) if p.is_file()}
    for student_dir in sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if student_dir.name in found:
            raise LadderError(f"student {student_dir.name} is submitted twice, as {found[student_dir.name]} and in "
                              f"{student_dir}: keep one")
        nb = student_dir / assignment / notebook_name
        candidates = sorted((student_dir / assignment).glob("*.ipynb"))
        found[student_dir.name] = nb if nb.is_file() else (candidates[0] if candidates else None)
    if not found:
        raise LadderError(f"no submissions found in {submissions}: expected STUDENT.ipynb files or "
                          f"STUDENT/{assignment}/{notebook_name}")
    return found


def screen(path: Path | None, assignment: str, root: Path) -> tuple[str, str] | None:
    """Why a submission cannot be graded at all (reason code, message naming the file by its name only, as
    its student sees it), or None for a notebook of this assignment."""
    if path is None:
        return "nothing-submitted", f"no notebook was found in your submission folder for {assignment}"
    try:
        recognise(path, expected=assignment, root=root)
    except LadderError as exc:
        return exc.reason, str(exc).replace(str(path), path.name)
    return None


def read_instructor_files(bars: Path | None, db_url: str | None) -> None:
    """Everything the instructor gave besides the submissions, read before any student: the pass-bar override
    (`--bars`, or LADDER_BARS as set), the gradebook's URL and every LADDER_ setting. Read inside each student's
    grading instead, a bad one failed every student alike (a bars file that is not TOML scored every speed cell
    of the class 0, naming a worker's copy of it)."""
    from ..harness.bars import check_override
    from .journal import checked_url

    if bars is not None:
        if not Path(bars).is_file():
            raise LadderError(f"--bars {bars}: no such file")
        os.environ["LADDER_BARS"] = str(Path(bars).resolve())  # the notebook kernels inherit it
    try:
        config.check_all()
    except ValueError as exc:
        raise LadderError(str(exc)) from None
    check_override()
    if db_url is not None:
        checked_url(db_url)


def grade(submissions: Path, assignment: str, workspace: Path, csv_path: Path | None = None,
          bars: Path | None = None, where: Where | None = None, db_url: str | None = None, echo=print,
          progress: bool = True, cells_csv: Path | None = None) -> list[StudentGrade]:
    began = time.time()
    where = where or Where()
    if where.cluster and "log_directory" not in where.cluster_options:
        # the batch jobs' own output, in the workspace rather than wherever the command was typed
        where = replace(where, cluster_options={**where.cluster_options, "log_directory": str(
            Path(workspace).resolve() / JOB_LOGS)})
    root = course_root() or repo_root()   # repo_root: the error that says where it looked
    source_nb = source_notebook(root, assignment)
    read_instructor_files(bars, db_url)
    students = collect_submissions(Path(submissions).resolve(), assignment, source_nb.name)
    source = folder_files(source_nb.parent)
    source_sha = files_sha256(source)
    bars_data = bars_bytes()
    grader = grader_sha256(bars_data)
    # graded here, without Dask, the students' processes inherit this environment as it is
    settings, environ = task.settings_to_ship(), (task.environ_to_ship() if where.uses_dask else {})

    # Dask's workers start, and each generates the assignment, while this process prepares its workspace
    # (grader.classgrade.cluster.Starting), unless the journal already holds every student's grading; every job
    # of the class shares what the workers use of this one.
    shared = StudentJob(assignment, source_nb.name, "", b"", "", source, source_sha, bars_data, grader, settings,
                        environ)

    def start_dask() -> Starting:
        return Starting(where, then=lambda client: client.run(task.prepare_worker, shared, on_error="ignore"))

    ws = Workspace(Path(workspace), assignment, source_nb.name, db_url)
    starting = None
    try:
        recorded = ws.journal.entries(assignment)
        screened = [_screened(student, path, recorded, source_sha, grader, assignment, root)
                    for student, path in students.items()]
        if where.uses_dask and not _nothing_to_grade(screened):
            starting = start_dask()
        ws.prepare(source)
        workspace_ready = time.time()
        grades: list[StudentGrade] = []
        jobs: list[StudentJob] = []
        for student, refused, data, digest, same in screened:
            if refused is not None:   # nothing to grade: 0, a row, a feedback page, and why
                reason, why = refused
                grades.append(ws.explain(StudentGrade(student, 0.0, 0.0, {}, None, why), reason, why, data))
                continue
            kept = ws.skipped(same) if same is not None else None
            if kept is not None:
                grades.append(kept)
            else:
                jobs.append(StudentJob(assignment, source_nb.name, student, data, digest, source, source_sha,
                                       bars_data, grader, settings, environ))
        if jobs and where.uses_dask and starting is None:   # a kept grading's files were gone: graded again
            starting = start_dask()
        shown = Progress(len(jobs), sum(g.skipped for g in grades), echo, enabled=progress)
        try:
            if starting is None or not jobs:   # nothing to grade: Dask's workers are not waited for
                grades += _here(jobs, ws, shown)
            else:
                client = starting.client()
                link = dashboard(client)
                echo(f"Dask: {len(client.scheduler_info().get('workers', {}))} worker(s) at "
                     f"{client.scheduler.address}" + (f"; dashboard: {link}" if link else
                                                      " (pip install bokeh for its dashboard)"))
                batch = (BatchJobs.of(client, where.cluster.lower(), where.cluster_options.get("log_directory"))
                         if where.cluster else None)
                grades += _on_dask(client, schedule.longest_first(jobs, recorded), ws, shown, where.retries,
                                   all_handed_out=starting.stop_soon, batch=batch)
        finally:
            shown.close()
            if starting is not None:
                starting.stop()
        # Every student grading failed for (a worker, a GPU, nbgrader) still gets a row and a page; every
        # graded one, the reason of each cell it lost.
        grades = [ws.explain(g, "not-graded", g.error) if g.error is not None and g.reason is None
                  else replace(g, cell_reasons=failed_cells(ws.autograded_path(g.student))) if g.error is None
                  else g for g in grades]
        csv_path = (csv_path or ws.folder / "grades.csv").resolve()
        write_grades(ws, csv_path, grades)
        if cells_csv is not None:
            write_cells(cells_csv.resolve(), grades)
        ws.record_not_graded(grades)
    finally:
        ws.close()
        if starting is not None:   # where the workspace could not be prepared
            starting.stop()
    outside = outside_students(grades, began, workspace_ready, time.time(),
                               *((starting.ready, starting.prepared) if starting is not None and jobs else ()))
    for line in summary(grades) + where_time_went(grades) + outside:
        echo(line)
    echo(f"grades: {csv_path}\nfeedback: {ws.folder / 'feedback'}"
         + (f"\ncells: {cells_csv.resolve()}" if cells_csv is not None else ""))
    return grades


def _screened(student: str, path: Path | None, recorded: dict, source_sha: str, grader: str, assignment: str,
              root: Path) -> tuple:
    """(student, why it cannot be graded or None, its submission's bytes, their sha256, the journal's entry where
    it holds a grading from the same bytes, source and grader, else None)."""
    refused = screen(path, assignment, root)
    data = path.read_bytes() if path is not None else None
    if refused is not None:
        return student, refused, data, None, None
    digest = sha256(data)
    entry = recorded.get(student)
    return student, None, data, digest, entry if entry and entry.same_grading(digest, source_sha, grader) else None


def _nothing_to_grade(screened: list[tuple]) -> bool:
    """Whether this run will grade no one (nor start Dask's workers for it): every student is kept from an
    earlier grading, or cannot be graded at all."""
    return all(refused is not None or same is not None for _, refused, _, _, same in screened)


def _here(jobs: list[StudentJob], ws: Workspace, shown: Progress) -> list[StudentGrade]:
    """One GPU: each student in turn, in this process (no Dask)."""
    grades = []
    for index, job in enumerate(jobs):
        shown.started(job.student, task.where() or "here")
        result = task.grade_student(job)
        if result.gpu_failure:
            grades.append(_failed(job, f"the GPU failed while this student was graded ({result.gpu_failure}); "
                                       "grading stopped. Fix the GPU and run the same command again: graded students "
                                       "are kept", result))
            shown.finished(grades[-1])
            # the students after it are not graded either, and say so: none is left out of the summary or the CSV
            for later in jobs[index + 1:]:
                grades.append(_failed(later, "not graded: grading stopped before this student, when the GPU failed "
                                             f"while {job.student} was graded; run the same command again"))
                shown.finished(grades[-1])
            break
        grades.append(ws.record(job, result, 1, []))
        shown.finished(grades[-1])
    return grades


def _failed(job: StudentJob, why: str, result: StudentResult | None = None, attempts: int = 1,
            notes: list[str] | None = None) -> StudentGrade:
    return StudentGrade(job.student, 0.0, 0.0, {}, None, why, [], result.seconds if result else 0.0,
                        result.worker if result else "", attempts, notes or [])


def _attempts(client) -> dict[str, list[dict]]:
    """student -> the attempts Dask's workers reported starting, oldest first."""
    seen: dict[str, list[dict]] = {}
    for _, msg in client.get_events(task.EVENT_TOPIC):
        seen.setdefault(msg["student"], []).append(msg)
    return seen


def _gpu_slots(client) -> int:
    """How many students may be graded at once: the GPUs the scheduler's workers offer now."""
    info = client.scheduler_info(n_workers=-1) if _takes_n_workers(client) else client.scheduler_info()
    return int(sum(w.get("resources", {}).get("GPU", 0) for w in info["workers"].values()))


def _takes_n_workers(client) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def _no_worker_will_come(client, batch: BatchJobs | None) -> bool:
    """Wait a while for a worker: True only where none came and the batch system says every job of the run has
    ended (they died before their workers joined: a missing python, a prologue that failed). Without batch jobs (a
    local cluster, a scheduler given by address) a worker may still join: waited for as long as it takes."""
    if batch is None:
        client.wait_for_workers(1, timeout=None)
        return False
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        return False
    except TimeoutError:
        return batch.all_ended() and _gpu_slots(client) == 0


def _on_dask(client, order: list[tuple[StudentJob, int]], ws: Workspace, shown: Progress,
             retries: int, all_handed_out=None, batch: BatchJobs | None = None) -> list[StudentGrade]:
    """Grade on Dask's workers, in `order` (grader.classgrade.schedule: the longest expected first, each with its
    Dask priority). This process is the queue: it keeps at most one student per GPU the workers
    offer in flight, so that a worker never holds a second student waiting (Dask would count a worker's
    death against every task assigned to it) and the table of who runs where is exact. `all_handed_out()` is
    called once every student has come back from the workers for good, before the last are recorded. Where every
    batch job of `batch` ended with no worker left, the students not yet graded get a row saying why."""
    from collections import deque

    from distributed import KilledWorker, wait

    def submit(job: StudentJob, round_: int):
        return client.submit(task.grade_student, job, key=f"grade-{job.assignment}-{job.student}-"
                             f"{job.submission_sha256[:12]}-{round_}", resources=RESOURCE, pure=False,
                             priority=priority[job.student])

    priority = {job.student: value for job, value in order}
    queue = deque((job, 0) for job, _ in order)
    pending: dict = {}
    gpu_notes: dict[str, list[str]] = {}
    grades = []

    def fill(free: int) -> None:
        """Start the next students on `free` GPUs."""
        while queue and free > 0:
            job, round_ = queue.popleft()
            pending[submit(job, round_)] = (job, round_)
            free -= 1

    while queue or pending:
        fill(_gpu_slots(client) - len(pending))
        if not pending or (batch is not None and _gpu_slots(client) == 0):
            # workers still starting (batch jobs in a queue): wait for a GPU to appear, unless none ever will
            if _no_worker_will_come(client, batch):
                why = batch.message()
                for future in pending:
                    future.cancel()
                for job, _ in [*queue, *pending.values()]:
                    grades.append(_failed(job, why))
                    shown.finished(grades[-1])
                break
            if not pending:
                continue
        try:
            done = wait(list(pending), timeout=2, return_when="FIRST_COMPLETED").done
        except TimeoutError:
            done = set()
        attempts = _attempts(client)
        for student, tries in attempts.items():
            if student not in shown.running and any(j.student == student for j, _ in pending.values()):
                shown.started(student, tries[-1]["where"], tries[-1]["started"])
        # What each student that came back ended with, taken from its future, which is then let go: the worker
        # may forget it (a worker that dies later must not grade it again), and the workers may stop below
        ended = []
        for future in done:
            job, round_ = pending.pop(future)
            finished = future.status == "finished"
            outcome = future.result() if finished else future.exception()
            ended.append((future.key, finished, outcome, job, round_))
            future.release()
        if all_handed_out is not None and not queue and not pending and all(
                finished and not outcome.gpu_failure for _, finished, outcome, _, _ in ended):
            all_handed_out()   # no student will go to a worker again: the workers may stop while these are recorded
            all_handed_out = None
        # The GPUs of students that finished cleanly start their next student before those are recorded: recording
        # (nbgrader's autograde and feedback, here, one student after another) would otherwise keep them idle. A GPU
        # that failed waits until its worker is retired below.
        fill(sum(1 for _, finished, outcome, _, _ in ended if finished and not outcome.gpu_failure))
        for key, finished, outcome, job, round_ in ended:
            tries = attempts.get(job.student, [])
            this_round = [t for t in tries if t.get("key") == key]
            # every attempt of this round but the last ended with its worker (Dask moved the student on); the
            # last died too only when Dask gave up on the student for it (KilledWorker), not when it raised
            ended_by_death = not finished and isinstance(outcome, KilledWorker)
            died = this_round if ended_by_death else this_round[:-1]
            notes = gpu_notes.get(job.student, []) + [
                f"attempt on {t['where']} ended when its worker died; graded again" for t in died]
            if finished:
                result = outcome
                if result.gpu_failure:
                    bad = tries[-1]["worker"] if tries else None
                    gpu_notes.setdefault(job.student, []).append(
                        f"attempt on {result.worker}: the GPU failed ({result.gpu_failure}); that worker was retired")
                    if bad:
                        client.retire_workers([bad], close_workers=True)
                    if round_ < retries:
                        queue.appendleft((job, round_ + 1))
                        shown.note(f"{job.student}: the GPU of {result.worker} failed; graded again elsewhere")
                        continue
                    grades.append(_failed(job, f"GPUs failed {round_ + 1} time(s) while this student was graded",
                                          result, len(tries), gpu_notes[job.student]))
                else:
                    grades.append(ws.record(job, result, max(1, len(this_round)) + round_, notes))
            else:
                if isinstance(outcome, KilledWorker):
                    why = (f"not graded: the worker grading this student died {len(died)} time(s), the most "
                           f"allowed ({retries} retries); run the same command again to retry")
                else:
                    why = f"not graded: grading failed on the worker ({type(outcome).__name__}: {outcome})"
                grades.append(_failed(job, why, None, len(died), notes))
            shown.finished(grades[-1])
        shown.refresh()
    return grades
