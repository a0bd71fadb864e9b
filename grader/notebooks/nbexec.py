"""Execute a notebook so that a kernel that dies, or hangs past its timeout, costs only that cell.

Why this exists (nbgrader 0.9.6, nbclient 0.11): autograde runs a submission through nbgrader's
`Execute` preprocessor, which is nbconvert's ExecutePreprocessor, which is nbclient. When the
kernel process dies mid-cell (a segfault, `os._exit`, a CUDA fault that takes the process down, the
out-of-memory killer), nbclient raises DeadKernelError; when a cell outlives its timeout and the
interrupt does not stop it, it raises CellTimeoutError. Neither is caught per cell: the exception
leaves `Autograde.convert_single_notebook`, `BaseConverter.convert_notebooks` logs "There was an
error processing assignment" and its `_handle_failure` deletes the student's autograded notebook.
SaveAutoGrades never runs, so every cell of that notebook scores nothing and there is no feedback.

`LadderExecute` replaces `Execute` in autograde (settings.configure_nbgrader) and in `ladder check`
(grader.notebooks.check). It catches both errors per cell. The cell gets an error output that says what happened
(so nbgrader scores it 0 and the feedback explains why), a fresh kernel is started, the cells before
it are run again in that kernel with their outputs thrown away (the recorded outputs stay), and
execution goes on with the next cell. Cells that themselves killed or hung a kernel are not run
again. After `max_kernel_restarts` restarts, the next loss ends the run (as does a fresh kernel that
will not start): every remaining code cell gets a "not run" error output, so the notebook still
finishes and is still graded.

Graded test cells go through `run_graded_test_cell`: checked in separate processes (grader.isolation: in
the run's few verifier-and-worker pairs, `CheckSessions`), or in the notebook's kernel. Either way
the verdict is the same, because both paths gather the same facts and apply the same rules; two things make
sure of it here:
- the isolated check rebuilds the learner's cells as the kernel ended them: a cell that took its kernel
  down is left out, and one that raised stops where it raised (`outcomes`);
- checked in the kernel, a graded cell is followed by a look at what the learner's code replaced in
  the grader, the clock, torch or Triton (the worker reports the same at every isolated check), so a
  patched check function cannot pass there and fail in grading.

Nothing the learner's code starts outlives the run (grader.processes): this process adopts what is orphaned
below it while the notebook runs, and ends the kernel's processes and what it adopted from a kernel when a
kernel is replaced and when the run ends; an isolated check ends its own before its verdict comes back. What was
ended is kept in the notebook's `metadata.ladder.ended_processes`.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import signal
import tempfile
import time
from dataclasses import dataclass

from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer

from .. import chapters, config, processes
from ..calls import rules
from ..isolation import hung, isolate
from ..isolation.ahead import ChecksAhead
from ..learner.cells import grade_id as _grade_id
from ..learner.cells import chapter_of, is_autograded_test, is_learner_cell, learner_cells
from ..learner.code import KernelOutcome
from . import warm_kernels

# The `ename` of the error outputs this module writes; nbrun and grading recognise them.
DIED = "DeadKernelError"
TIMED_OUT = "CellTimeoutError"
NOT_RUN = "NotRun"
ENAMES = (DIED, TIMED_OUT, NOT_RUN)

_RED, _RESET = "\x1b[0;31m", "\x1b[0m"


@dataclass
class Crash:
    """One kernel lost while running a cell."""
    index: int            # the cell's position in the notebook
    grade_id: str | None  # its nbgrader grade_id, if it has one
    kind: str             # "died" or "timed-out"
    detail: str           # what happened, in words
    replay: bool = False  # True when it happened while the earlier cells were being run again

    def describe(self) -> str:
        where = f"cell '{self.grade_id}'" if self.grade_id else f"cell {self.index + 1} of the notebook"
        when = " while the cells before it were run again" if self.replay else ""
        if self.kind == "died":
            return f"the kernel died in {where}{when}: {self.detail}"
        return f"{where}{when} {self.detail}, so its kernel was shut down"




_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _error_line(error, cell) -> int | None:
    """The line of this cell where its error was raised, from IPython's traceback ("Cell In[5], line 12"
    for the cell that ran as execution 5); None when the traceback does not say."""
    count = cell.get("execution_count")
    for line in error.get("traceback", []):
        m = re.search(r"Cell In\[(\d+)\], line (\d+)", _ANSI.sub("", line))
        if m and (count is None or int(m.group(1)) == count):
            return int(m.group(2))
    return None


def _is_code(cell) -> bool:
    return cell.get("cell_type") == "code" and bool(cell.get("source", "").strip())


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"{_RED}{ename}{_RESET}: {evalue}"])


def _add_error(cell, output: NotebookNode, first: bool = False) -> None:
    """Add an error output where nbgrader's determine_grade sees it first.

    determine_grade returns at the first error, stderr or execute_result output, and an
    execute_result means partial credit: the error must come before any of them (`first`: before
    every other output, errors included, so that it is the one read as the cell's error).
    """
    outputs = cell.setdefault("outputs", [])
    at = 0 if first else next((i for i, o in enumerate(outputs) if o.get("output_type") == "execute_result"),
                              len(outputs))
    outputs.insert(at, output)


def _exit_status(km) -> str:
    """How the kernel process ended, in words, from its exit status when it can be read."""
    try:
        code = km.provisioner.process.poll()
    except Exception:  # another provisioner, or the process is gone: say nothing rather than guess
        code = None
    if code is None:
        return "the kernel process ended"
    if code >= 0:
        return f"the kernel process exited with status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    why = {"SIGKILL": " (often the out-of-memory killer)", "SIGSEGV": " (a segmentation fault)",
           "SIGABRT": " (the process aborted itself)", "SIGBUS": " (a bus error)"}.get(name, "")
    return f"the kernel process was killed by {name}{why}"


class LadderExecute(Execute):
    """nbgrader's Execute, but a kernel that dies or hangs in one cell costs only that cell, and graded
    test cells are checked in fresh processes, out of the learner's reach."""

    isolated_checks = Bool(
        True,
        help="Check autograded test cells in the grader's own processes (grader.isolation) instead of "
             "the notebook's kernel (docs/isolation.md). On for grading; `ladder grade --in-kernel` or "
             "LADDER_ISOLATED=0 turns it off. `ladder check` turns it on only with --isolated.",
    ).tag(config=True)

    max_kernel_restarts = Integer(
        3,
        help="How many times a fresh kernel is started after one dies or hangs. The next death "
             "after that ends the run: the remaining code cells are marked not run.",
    ).tag(config=True)

    def __init__(self, *args, **kwargs):
        # Kernels forked from a process that imported torch once (grader.notebooks.warm_kernels): about three seconds
        # of CPU less for every kernel a check or a grading starts. nbgrader's Execute sets its own default here.
        kwargs.setdefault("kernel_manager_class", warm_kernels.WarmKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources=None, km=None):
        # As ExecutePreprocessor.preprocess, with the loop over cells guarded cell by cell.
        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        self.crashes: list[Crash] = []
        self.verdicts: dict = {}      # grade_id -> isolate.Verdict, for isolated test cells
        self.ran: set[int] = set()   # cells that ran to completion (with or without an error)
        self.lost: list[int] = []    # cells that were running when their kernel died or hung
        self._no_replay: set[int] = set()  # cells that completed once but took a later kernel down
        self.stopped: str | None = None  # why the remaining cells were not run, if they were not
        self.outcomes: dict[str, KernelOutcome] = {}   # how each learner cell ended in the kernel
        # Processes the learner's code left running, ended (grader.processes): in the notebook's kernel, when the
        # kernel goes and when the run ends; in isolated checks, when each check ends (Verdict.ended).
        self.ended: list[str] = []
        self._kernels: set[int] = set()   # the kernels this run started: the grader's, never ended as strays
        # This process adopts whatever is orphaned below it (a kernel's daemon, a helper of a dead kernel), and its
        # children in other sessions than its own before the run are someone else's: only later ones are ended.
        processes.become_subreaper()
        self._others = {p.pid for p in processes.adopted()}
        if self.km is None:
            self.km = self.create_kernel_manager()
        # The learner functions that hang, shared by this run's isolated checks, so that a hung function costs
        # one time limit and not one a check (grader.isolation.hung); each check's Job names the file.
        hung_fd, self.hung_record = tempfile.mkstemp(prefix="ladder-hung-", suffix=".txt")
        os.close(hung_fd)
        self.ahead = None
        # The run's sessions, verifier-and-worker pairs shared by its isolated checks (None: checked in the kernel):
        # as many as its checks that run at once, as the notebook's chapter asks (grader/chapters/grading.toml) or
        # as LADDER_CHECKS_AT_ONCE says.
        self.session = (isolate.CheckSessions(config.checks_at_once(self._chapter_checks_at_once()))
                        if self.isolated_checks else None)
        try:
            if not self.km.has_kernel:
                self.start_new_kernel()
            self._note_kernel()
            self._connect()
            if self.isolated_checks:   # the notebook's checks start now, beside its kernel (grader.isolation.ahead)
                self.ahead = self._checks_ahead()
            for index, cell in enumerate(list(self.nb.cells)):
                if self.stopped is not None:
                    self._mark_not_run(cell)
                else:
                    self._run_guarded(cell, resources, index)
        finally:
            if self.ahead is not None:
                self.ahead.close()
                self.nb.metadata.setdefault("ladder", {})["checks_ahead"] = self.ahead.summary()
            if self.session is not None:
                self.session.close()
                # How many verifier-and-worker pairs the run's checks took (1 where nothing ended a session).
                self.nb.metadata.setdefault("ladder", {})["check_sessions"] = self.session.started
            hung_functions = sorted(hung.hung_functions(self.hung_record))
            if hung_functions:
                self.nb.metadata.setdefault("ladder", {})["hung"] = hung_functions
            with contextlib.suppress(OSError):
                os.unlink(self.hung_record)
            if self.owns_km:  # as nbclient: a kernel manager the caller passed in is theirs to stop
                self._discard_kernel(now=bool(self.crashes))
            self._end_learner_processes()
            if self.ended:
                self.nb.metadata.setdefault("ladder", {})["ended_processes"] = list(self.ended)
        self.set_widgets_metadata()
        return self.nb, self.resources

    def _checks_ahead(self):
        """The notebook's checks, started now beside its kernel in the run's sessions, one a session at a time; None
        where the run has one session and every check waits for its cell."""
        return ChecksAhead.start(self.nb, self._folder(), self.timeout or None, self.session, self._check)

    def _chapter_checks_at_once(self) -> int:
        """How many checks at once the notebook's chapter asks for (grader/chapters/grading.toml). The chapter is
        read from the notebook, which the learner may edit: it sets only how many processes check, never what a
        check decides."""
        return chapters.checks_at_once(chapter_of(self.nb, self._folder() or ""))

    def _check(self, *args, session=None, **kwargs):
        """grader.isolation.isolate.check_sources, in the run's sessions where it has them (`session`: the one a
        check ahead took), as a check of this run: it reads and writes the run's record of hung functions, and
        leaves out what decides no score, as the notebook's kernel does (config.grader_run)."""
        return isolate.check_sources(*args, session=session or self.session, hung_record=self.hung_record,
                                     grader_run=True, **kwargs)

    def preprocess_cell(self, cell, resources, index):
        self._check_assign_resources(resources)
        if is_autograded_test(cell):
            cell = self.run_graded_test_cell(cell, index)
        else:
            cell = self.execute_cell(cell, index, store_history=True)
        return cell, self.resources

    # -- the two hooks a subclass may override ------------------------------------------------

    def run_graded_test_cell(self, cell, index: int):
        """Run one autograded test cell and leave its verdict in `cell.outputs`.

        With `isolated_checks` (the default for grading), the cell's source runs in the grader's verifier, a fresh
        process that never runs learner code, against the learner's cells executed in a fresh worker
        (grader.isolation); the notebook's kernel only receives the values the cell assigns (its
        results, for later plots). Without it, the cell runs in the notebook's kernel like any other.
        The outputs are set as nbgrader reads them (determine_grade: an error output or any stderr
        scores 0, otherwise full points).
        """
        if not self.isolated_checks:
            cell = self.execute_cell(cell, index, store_history=True)
            self._check_for_tampering(cell, index)
            return cell
        gid = _grade_id(cell) or f"cell-{index}"
        cells, source = learner_cells(self.nb, gid), cell.get("source", "")
        waited = time.perf_counter()
        verdict = self.ahead.take(gid, cells, source, self.outcomes) if self.ahead is not None else None
        ahead = verdict is not None
        if verdict is None:
            with self.ahead.alone() if self.ahead is not None else contextlib.nullcontext():
                verdict = self._check(cells, source, gid, timeout_s=self.timeout or None, cwd=self._folder(),
                                      outcomes=self.outcomes)
        self.verdicts[gid] = verdict
        # Where grading time goes (grader.classgrade.timing reads it): the check, and of it the worker's
        # start with the learner's cells; whether its verdict came from ahead of the notebook, and how long
        # the notebook waited for it. nbclient records the other cells' times in metadata.execution.
        self.ended += verdict.ended
        cell.metadata["ladder"] = {"check_seconds": round(verdict.seconds, 3),
                                   "load_seconds": round(verdict.load_seconds, 3),
                                   "cpu_seconds": round(verdict.cpu_seconds, 3),
                                   "ahead": ahead, "wait_seconds": round(time.perf_counter() - waited, 3)}
        if verdict.ended:   # processes the learner's code left running, ended with the check
            cell.metadata["ladder"]["ended_processes"] = list(verdict.ended)
        if ahead:   # how long it waited for a slot of the machine's (grader.isolation.slots)
            cell.metadata["ladder"]["slot_wait_seconds"] = self.ahead.slot_waits.get(gid, 0.0)
        outputs = []
        if verdict.stdout.strip():
            outputs.append(NotebookNode(output_type="stream", name="stdout", text=verdict.stdout))
        if not verdict.passed:
            name = verdict.error_name()
            outputs.append(NotebookNode(output_type="error", ename=name,
                                        evalue=f"{verdict.message}\n[reason: {verdict.reason}]",
                                        traceback=[f"{_RED}{name}{_RESET}: {verdict.message}",
                                                   f"[reason: {verdict.reason}; checked in a separate process]"]))
        self._share_values(verdict, index)
        cell.outputs = outputs
        self.code_cells_executed += 1
        cell.execution_count = self.code_cells_executed
        return cell

    def _folder(self) -> str | None:
        """The folder the notebook runs in, where its checks run too."""
        return (self.resources or {}).get("metadata", {}).get("path") or None

    def _check_for_tampering(self, cell, index: int) -> None:
        """After a graded cell ran in the notebook's kernel: did the learner's code replace part of the
        grader, the clock, torch or Triton? Asked of grader.calls.facts in that kernel."""
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            return  # already failed: the first error is what nbgrader scores
        marker = "__ladder_tampered__"
        outputs = self._run_scratch(
            "import json as _ladder_json, sys as _ladder_sys\n"
            "_ladder_facts = _ladder_sys.modules.get('grader.calls.facts')\n"
            f"print({marker!r}, _ladder_json.dumps(_ladder_facts.tampered() if _ladder_facts else []))\n"
            "del _ladder_json, _ladder_sys, _ladder_facts", index, "ask the kernel what it replaced")
        if outputs is None:  # never a grade by itself
            return
        text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
        import json

        replaced = json.loads(text.split(marker, 1)[1]) if marker in text else []
        if replaced:
            message = str(rules.tampered(replaced))
            _add_error(cell, NotebookNode(output_type="error", ename="CheckFailed",
                                          evalue=f"{message}\n[reason: tampered]",
                                          traceback=[f"{_RED}CheckFailed{_RESET}: {message}", "[reason: tampered]"]))

    def replay_cell(self, cell, index: int) -> None:
        """Run an earlier cell again in a fresh kernel, to rebuild the state later cells need.

        `cell` is a scratch copy: its outputs are thrown away. Every code cell runs again; a graded
        test cell checked in a separate process only hands its values to the kernel again.
        """
        gid = _grade_id(cell)
        if self.isolated_checks and is_autograded_test(cell) and gid in self.verdicts:
            self._share_values(self.verdicts[gid], index)
            return
        self.execute_cell(cell, index, store_history=False)

    def _share_values(self, verdict, index: int) -> None:
        """Define in the notebook's kernel the names the test cell assigned (results, or None)."""
        blob = getattr(verdict, "values", None)
        if not blob:
            return
        self._run_scratch(  # a convenience for plots: never a grade
            "import base64 as _ladder_b64, pickle as _ladder_pickle\n"
            f"globals().update(_ladder_pickle.loads(_ladder_b64.b64decode({blob!r})))\n"
            "del _ladder_b64, _ladder_pickle", index, "hand a test cell's results to the kernel")

    def _run_scratch(self, source: str, index: int, what: str):
        """Run the grader's own `source` in the notebook's kernel, as if at cell `index`, without it
        becoming part of the notebook; its outputs, or None (logged as could not `what`) if it failed.
        A kernel that died or hung meanwhile is the notebook's problem and is raised."""
        scratch = NotebookNode(cell_type="code", source=source, metadata={}, outputs=[], execution_count=None)
        original = self.nb.cells[index]
        try:
            self.execute_cell(scratch, index, store_history=False)
        except (DeadKernelError, CellTimeoutError):
            raise
        except Exception as exc:
            self.log.warning("could not %s: %s", what, exc)
            return None
        finally:
            self.nb.cells[index] = original  # nbclient puts the cell it ran at `index`: put the real one back
        return scratch.outputs

    # -- internals ------------------------------------------------------------------------------

    def _connect(self) -> None:
        """Start a client for the kernel `self.km` runs and wait until it answers."""
        self.start_new_kernel_client()
        assert self.kc is not None
        info = self.wait_for_reply(self.kc.kernel_info())
        if info is None or "language_info" not in info.get("content", {}):
            raise RuntimeError("the notebook's kernel started but did not answer a kernel_info request")
        self.nb.metadata["language_info"] = info["content"]["language_info"]
        # Before any cell: this kernel runs the notebook for the grader, so a learner's tool that is slow and decides
        # nothing, such as profile(), skips its work (config.grader_run). Said to the kernel, never through the
        # environment, which the learner's processes would pass on to whatever they start.
        told = self.wait_for_reply(self.kc.execute("import grader.config as _ladder_config\n"
                                                   "_ladder_config.set_grader_run(True)\ndel _ladder_config",
                                                   silent=True, store_history=False))
        if told is None or told.get("content", {}).get("status") != "ok":
            self.log.warning("could not tell the notebook's kernel that the grader runs it: its profile() cells "
                             "and ungraded timings run in full")

    def _note_kernel(self) -> None:
        pid = self._kernel_pid()
        if pid is not None:
            self._kernels.add(pid)

    def _kernel_pid(self) -> int | None:
        """The kernel process's pid, where its provisioner is jupyter_client's local one."""
        try:
            return int(self.km.provisioner.process.pid)
        except Exception:  # another provisioner, or no kernel: nothing below it is known
            return None

    def _end_learner_processes(self) -> None:
        """End what the learner's code left running: the processes below the kernel (the kernel itself stays,
        where it still runs) and those this process adopted from a kernel, in a session not its own
        (grader.processes), but for the fork server and the kernels, which are the grader's."""
        kernel = self._kernel_pid() if self.km is not None else None
        if kernel is not None:
            self.ended += processes.end_tree(kernel, include_root=False)
        grader_own = self._others | self._kernels | {isolate.server_pid(), warm_kernels.server_pid()}
        self.ended += processes.end_all(processes.adopted(exclude=grader_own))

    def _discard_kernel(self, now: bool = True) -> None:
        """Stop the kernel, dead, hung or alive (at once with `now`, else as configured), and forget
        its manager and client; what the learner's code left running ends with it."""
        if self.km is None:
            return
        self._end_learner_processes()
        mode = self.shutdown_kernel
        if now:
            self.shutdown_kernel = "immediate"
        try:
            self._cleanup_kernel()
        except Exception as exc:  # a kernel that will not go away must not stop the grading
            self.log.warning("could not shut the notebook's kernel down cleanly: %s", exc)
        finally:
            self.shutdown_kernel = mode
            self.km = None
            self.kc = None
        self._end_learner_processes()   # what the kernel's end left to this process

    def _fresh_kernel(self) -> None:
        self._discard_kernel(now=True)
        self.km = self.create_kernel_manager()
        self.owns_km = True
        self.start_new_kernel()
        self._note_kernel()
        self._connect()

    async def _async_handle_timeout(self, timeout: int, cell=None):
        # nbclient interrupts a cell that outlives its timeout; when the interrupt stops it, the cell
        # ends with a KeyboardInterrupt. Noted here, so that the cell says it timed out, as a check
        # that outlives its limit in a worker does.
        self._interrupted = True
        return await super()._async_handle_timeout(timeout, cell)

    def _record_loss(self, exc: Exception, cell, index: int, replay: bool = False) -> Crash:
        if isinstance(exc, DeadKernelError):
            crash = Crash(index, _grade_id(cell), "died", _exit_status(self.km), replay)
        else:
            timeout = self._get_timeout(cell)
            limit = f"the {timeout} s limit" if timeout else "its time limit"
            crash = Crash(index, _grade_id(cell), "timed-out",
                          f"ran past {limit} and did not stop when interrupted", replay)
        self.crashes.append(crash)
        self.log.warning("%s", crash.describe())
        return crash

    def _restarts_left(self) -> bool:
        return len(self.crashes) <= self.max_kernel_restarts

    def _note_outcome(self, cell, index: int, lost: bool = False) -> None:
        """How a learner cell ended in this kernel, for the isolated checks that rebuild its state."""
        if not is_learner_cell(cell):
            return
        name = _grade_id(cell) or f"cell-{index}"
        if lost:
            self.outcomes[name] = KernelOutcome("lost")
            return
        errors = [o for o in self.nb.cells[index].get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            self.outcomes[name] = KernelOutcome("raised", _error_line(errors[0], self.nb.cells[index]))

    def _run_guarded(self, cell, resources, index: int) -> None:
        self._interrupted = False
        try:
            self.preprocess_cell(cell, resources, index)
        except (DeadKernelError, CellTimeoutError) as exc:
            self._note_outcome(cell, index, lost=True)
            crash = self._record_loss(exc, cell, index)
            self.lost.append(index)
            last = not any(_is_code(later) for later in self.nb.cells[index + 1:])
            if not last:   # a fresh kernel only where a cell is left to run in it
                self._recover(index)
            if crash.kind == "died":
                ename = DIED
                evalue = f"the notebook's kernel died while running this cell: {crash.detail}."
            else:
                ename = TIMED_OUT
                evalue = f"this cell {crash.detail}, so its kernel was shut down."
            if last:
                evalue += " It was the notebook's last code cell."
            elif self.stopped is None:
                evalue += (" A fresh kernel ran the cells before this one again and went on with "
                           "the next cell; names this cell would have defined do not exist there.")
            else:
                evalue += f" The cells after this one were not run: {self.stopped}."
            _add_error(self.nb.cells[index], _error_output(ename, evalue))
            return
        if self._interrupted:
            timeout = self._get_timeout(cell)
            _add_error(self.nb.cells[index], _error_output(
                TIMED_OUT, f"this cell ran past {f'the {timeout} s limit' if timeout else 'its time limit'} and was "
                           "interrupted.\n[reason: timed-out]"), first=True)
        self.ran.add(index)
        self._note_outcome(cell, index)
        if self.crashes:
            self._note_earlier_crash(self.nb.cells[index])

    def _count_words(self) -> str:
        n = len(self.crashes)
        kinds = {c.kind for c in self.crashes}
        what = "died" if kinds == {"died"} else ("hung" if kinds == {"timed-out"} else "died or hung")
        return f"{what} {n} time{'s' if n != 1 else ''}"

    def _recover(self, upto: int) -> None:
        """Start a fresh kernel and run the cells before `upto` again; stop the run when the restarts
        are used up or a fresh kernel will not start."""
        while self._restarts_left():
            try:
                self._fresh_kernel()
            except Exception as exc:  # nothing more can run, but what ran is still graded
                first = (str(exc).strip().splitlines() or [""])[0]
                self.stopped = (f"after the kernel was lost, a fresh one would not start "
                                f"({type(exc).__name__}: {first})")
                self.log.error("%s", self.stopped)
                break
            if self._replay(upto) is None:
                return
        else:
            self.stopped = (f"the kernel {self._count_words()}, more than the {self.max_kernel_restarts} "
                            "restarts allowed")
        self._discard_kernel(now=True)

    def _replay(self, upto: int) -> Crash | None:
        """Run cells [0, upto) that completed before, on a scratch copy of the notebook."""
        real_nb, real_map = self.nb, self._display_id_map
        self.nb, self._display_id_map = copy.deepcopy(real_nb), {}
        try:
            for index in range(upto):
                if index not in self.ran or index in self._no_replay:
                    continue
                cell = self.nb.cells[index]
                try:
                    self.replay_cell(cell, index)
                except (DeadKernelError, CellTimeoutError) as exc:
                    # It completed the first time; this time it took the kernel down. Do not run it
                    # again, keep its first outputs, and count the lost kernel.
                    self._no_replay.add(index)
                    return self._record_loss(exc, cell, index, replay=True)
            return None
        finally:
            self.nb, self._display_id_map = real_nb, real_map

    def _note_earlier_crash(self, cell) -> None:
        """A cell that fails on a missing name after a kernel was lost says so: the name may have
        died with that kernel. Other errors are left alone, since the loss does not explain them."""
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if not errors or errors[0].get("ename") not in ("NameError", "UnboundLocalError"):
            return
        lines = "; ".join(c.describe() for c in self.crashes)
        errors[0].setdefault("traceback", []).append(
            f"{_RED}Note{_RESET}: earlier in this notebook {lines}. A fresh kernel was started and "
            "the cells before were run again, but names the lost cell would have defined do not "
            "exist, which may be why this cell failed.")

    def _mark_not_run(self, cell) -> None:
        if not _is_code(cell):
            return
        cell.outputs = []
        cell.execution_count = None
        _add_error(cell, _error_output(NOT_RUN, f"not run: {self.stopped}."))
