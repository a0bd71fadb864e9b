import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# A cell that prints what torch's first `assert_close` in its process imports: nothing, in a process forked from one of
# the grader's servers (grader.isolation.server.import_first_call_imports).
FIRST_COMPARISON = ("import sys, torch\nbefore = set(sys.modules)\ntorch.testing.assert_close(torch.ones(3), torch.ones(3))\n"
                    "print('imported by the first comparison:', sorted(set(sys.modules) - before))\n")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import expected_skips  # noqa: E402  (tests/, put on the path just above)
import parallel  # noqa: E402
import grader.notebooks  # noqa: E402,F401  (before nbformat: grader/notebooks/__init__.py says why)


def _has_gpu() -> bool:
    """As the grader decides (grader.cuda.gpu.gpu_or_reason): LADDER_FORCE_NO_GPU makes a GPU machine
    run the CPU paths, so that one machine can run both halves of the suite."""
    from grader.cuda.gpu import gpu_or_reason

    return gpu_or_reason()[0]


HAS_GPU = _has_gpu()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Without a GPU, one worker process per core and one more (tests/parallel.py says why and how)."""
    parallel.choose_workers(config, HAS_GPU)


@pytest.hookimpl(optionalhook=True)   # an xdist hook: `-p no:xdist` runs the suite in one process
def pytest_xdist_auto_num_workers(config):
    return parallel.auto_workers()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return parallel.make_scheduler(config, log)


# tryfirst: the groups must be marked before xdist's worker reads them from the same hook
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    parallel.group_shared_work(items)
    if HAS_GPU:
        return
    from grader.cuda.gpu import gpu_or_reason

    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {gpu_or_reason()[1]}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


_SKIPPED: dict[str, str] = {}     # this run's skipped tests: node id -> reason
_SKIP_PROBLEMS: list[str] = []


def pytest_runtest_logreport(report):
    # With workers, this process (the controller) is handed every worker's reports here too.
    if report.skipped and not hasattr(report, "wasxfail"):
        _SKIPPED[report.nodeid] = expected_skips.skip_reason(report)


def pytest_sessionfinish(session, exitstatus):
    """Without a GPU, a run of the whole suite skips exactly the GPU-only tests of gpu_only_skips.txt."""
    config = session.config
    if (HAS_GPU or parallel.is_worker(config) or config.option.collectonly or session.shouldfail or session.shouldstop
            or exitstatus == pytest.ExitCode.INTERRUPTED or not expected_skips.whole_suite(config)):
        return
    _SKIP_PROBLEMS[:] = expected_skips.problems(_SKIPPED, expected_skips.expected())
    if _SKIP_PROBLEMS:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if _SKIP_PROBLEMS:
        terminalreporter.section("skips without a GPU", sep="=", red=True, bold=True)
        for line in _SKIP_PROBLEMS:
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"(tests/{expected_skips.LIST.name} lists every test that skips for want of a GPU: "
                                    "a GPU test added or removed changes it; any other skip is a failure)")


def _learner_files() -> dict:
    """Every file under course/ and work/ (a learner's copy), with its bytes' hash."""
    import hashlib

    found = {}
    for folder in ("course", "work"):
        for p in sorted((ROOT / folder).rglob("*")) if (ROOT / folder).is_dir() else []:
            if p.is_file():
                found[str(p.relative_to(ROOT))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return found


@pytest.fixture(scope="session", autouse=True)
def _learner_work_is_never_touched():
    """The test suite may run in a learner's checkout: it must leave course/ and work/ as it found
    them, byte for byte (tests that release or start work on copies in tmp_path)."""
    before = _learner_files()
    yield
    after = _learner_files()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, (f"these files changed while the test suite ran: {changed[:10]} (the suite itself must "
                         "never write there; JupyterLab saving a notebook meanwhile would also show up here)")


@pytest.fixture(autouse=True)
def _fresh_tamper_watch():
    """Each test starts with no reference for what the learner's code may not replace: it is taken at
    the test's first check, after the test's own monkeypatching (which is the test's, not a learner's)."""
    from grader import config
    from grader.calls import facts

    facts._WATCH = None
    config.unpin()   # a session a test started pins the settings; the next test sets its own
    yield


@pytest.fixture(scope="session")
def _ptxas_reports(tmp_path_factory) -> Path:
    """One folder of ptxas's reports for the whole run, its workers included: a report is a function of the PTX,
    the target and the assembler alone (grader.cuda.resources.assemble_report), and assembling a spilling sm_75
    kernel again costs seconds."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if parallel.is_worker_process() else base) / "ptxas-reports"
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch, _ptxas_reports):
    # Ceilings measured by one test must not leak into a learner's cache, nor bars overrides between tests; the
    # ptxas reports kept there are the run's. Beside the test's tmp_path, not in it: tests list their tmp_path.
    cache = tmp_path_factory.mktemp("ladder-cache")
    monkeypatch.setenv("LADDER_CACHE_DIR", str(cache))
    (cache / "ptxas-reports").symlink_to(_ptxas_reports, target_is_directory=True)
    monkeypatch.delenv("LADDER_BARS", raising=False)


@pytest.fixture
def root() -> Path:
    return ROOT


def ladder_check(*notebooks) -> tuple[int, dict]:
    """`ladder check --json` on notebooks: (exit code, the JSON report). The command's own `main` runs in this test
    process, from the repository's root, as the exploit suite runs `ladder check`'s executor: the notebooks' kernels
    come from this process's kernel server. Why not a process of its own: its imports and a kernel server of its own
    cost about 3 s of CPU a call, for nothing the reports depend on. The command as a process, its exit status and
    its streams, is tested where that is the subject (tests/test_cli_bad_input.py, tests/isolation/)."""
    import contextlib
    import io
    import warnings

    from grader import cli

    out = io.StringIO()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), warnings.catch_warnings():
        code = cli.main(["check", "--json", *map(str, notebooks)])
    return code, json.loads(out.getvalue())


def cells_by_id(notebook: dict) -> dict:
    """A notebook report's graded cells, keyed by grade_id."""
    return {c["grade_id"]: c for c in notebook["cells"]}


def ladder_check_one(nb) -> tuple[int, dict, dict]:
    """`ladder check` on one notebook: (exit code, its report, its cells keyed by grade_id)."""
    code, report = ladder_check(nb)
    (notebook,) = report["notebooks"]
    return code, notebook, cells_by_id(notebook)


# The first lines of a run_script script that runs checks: `outcome(check, ...)` is "pass", or the
# LadderError (or NotImplementedError) it raised, as "Name: message".
CHECK_OUTCOME = """
import contextlib, io, json
from grader.errors import LadderError

def outcome(check, *args, **kwargs):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            check(*args, **kwargs)
        return "pass"
    except (LadderError, NotImplementedError) as exc:
        return f"{type(exc).__name__}: {exc}"

"""


def run_script(script: str, interpret: bool = True, timeout: float = 600) -> dict:
    """Run `script` in a fresh Python with no GPU (LADDER_FORCE_NO_GPU), Triton interpreting or not, and
    return the JSON its last line prints. Triton decides between compiling and interpreting when it is
    imported, so each mode needs its own interpreter rather than this test process."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]), "LADDER_FORCE_NO_GPU": "1"}
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


class SteadyBackend:
    """A timing backend whose every batch takes `ms` a call, for tests whose subject is what is done with a
    timing (its unit, its report, its plot), not the timing: the rounds stop at their minimum on a zero spread,
    where a CPU timing loop on a busy 2-core machine runs all 25 rounds of real work (10 to 40 s)."""
    name = "steady"

    def __init__(self, ms: float = 1.0):
        self.ms = ms

    def times_ms(self, fn) -> list[float]:
        return [self.ms]

    def synchronize(self) -> None:
        pass


def torch_kernel(fn):
    """A launcher made of torch operations, standing in for a learner's kernel in tests of the harness
    itself: each call is one launch (of a "kernel" named after `fn`) through grader.cuda.launches, so the
    grader sees a kernel run, can switch it off (the no-op probe) and does not count its torch operations
    as torch computing in the launcher. Tests of those rules use real kernels (test_isolation, the exploit
    suite)."""
    from grader.cuda import launches

    name = getattr(fn, "__name__", "torch_kernel")

    def launcher(*args):
        return launches.dispatch(launches.Launch("triton", name, fn, lambda: fn(*args)))

    launcher.__name__ = name
    return launcher


@pytest.fixture(scope="session")
def graded_solution(request, tmp_path_factory):
    """The chapter's solution notebook graded once per run by `ladder grade` (tests/solution_runs.py); the
    chapter's folder is the parameter: `@pytest.mark.parametrize("graded_solution", [NAME], indirect=True)`.
    The first test to ask for a chapter's grading pays for it, 20 to 60 s on 2 cores: `ladder grade` of one
    notebook, with nbgrader, a kernel and the isolated checks in Triton's interpreter."""
    from solution_runs import grade_solution

    return grade_solution(request.param, tmp_path_factory.mktemp(f"graded-{request.param}"))
