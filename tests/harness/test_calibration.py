"""`ladder calibrate` without a GPU: the recorded rungs (grader/rungs.toml) against the bars and the
submissions, the proposal rule and the override file on recorded figures, and the command's refusal."""

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.chapters import names as chapter_names
from grader.cuda import archs
from grader.cuda.gpu import has_gpu
from grader.harness import feasibility
from grader.harness.bars import bar_for, load_bars
from grader.harness.calibration import MARGIN, Figures, Rung, override_toml, propose, report, rungs
from grader.notebooks.calibrate import chapters_named, rung_cells, timing_cell

ROOT = Path(__file__).resolve().parents[2]
RECORD_CH01 = ROOT / "assets/results/calibration/ch01-h100/ch01-calibration.json"
RECORD_CH02 = ROOT / "assets/results/calibration/ch02-h200/ch02-calibration.json"


def recorded(path: Path) -> dict[str, tuple[float, ...]]:
    """Each rung's speedups in a calibration record, by its label's leading words."""
    return {r["rung"]: tuple(run["speedup"] for run in r["runs"]) for r in json.loads(path.read_text())["rungs"]}


def rung(bar: str, expect: str, label: str = "") -> Rung:
    return Rung("ch00", label or f"{bar} {expect}", bar, expect, "solution", "", "")


# ---------------------------------------------------------------------------------- the rungs table

def test_every_chapter_has_rungs_and_every_rung_names_a_known_bar():
    table = rungs()
    assert {r.chapter for r in table} == set(chapter_names())
    bars = load_bars(None)
    for r in table:
        assert r.bar in bars, r
        assert r.exercise.startswith(f"{r.chapter}."), r   # the exercise is the chapter's own


def test_every_bar_with_a_rung_below_has_a_rung_that_must_clear_it():
    by_bar: dict[str, set] = {}
    for r in rungs():
        by_bar.setdefault(r.bar, set()).add(r.expect)
    assert all("pass" in expects for expects in by_bar.values()), by_bar


@pytest.mark.parametrize("r", [r for r in rungs() if r.submission != "solution"], ids=lambda r: r.label)
def test_each_submission_rung_replaces_cells_of_its_solution_notebook(r):
    cells = dict(rung_cells(ROOT, r))
    solution = dict(rung_cells(ROOT, Rung(r.chapter, "", r.bar, "pass", "solution", "", "")))
    assert cells.keys() == solution.keys()
    assert cells != solution, f"{r.submission} changes nothing of the solution"


def test_the_timing_cell_measures_each_run_under_its_own_name():
    r = next(r for r in rungs(["ch06"]) if r.bar == "6-causal")
    source = timing_cell(r, 3)
    compile(source, "timing cell", "exec")
    assert source.count("measure_speed(ch06.causal_exercise(attention), ch06.bind(attention, True), '6-causal')") == 3
    assert "calibration_run_2 =" in source and "calibration_run_3" not in source


def test_chapter_numbers_are_read_as_the_command_line_gives_them():
    assert chapters_named("1,5") == ["ch01", "ch05"]
    assert chapters_named(None) == chapter_names()


# ---------------------------------------------------------------------- the proposal, on recorded figures

def test_the_recorded_h100_figures_of_chapter_1_keep_its_bars():
    runs = recorded(RECORD_CH01)
    fused = Figures(rung("1b", "pass", "fused"), runs["1b fused, one kernel (solution)"])
    three = Figures(rung("1b", "fail", "three kernels"), runs["1b three kernels (three_kernels_1b)"])
    p = propose(bar_for("1b", None), [fused, three])
    assert p.separates and p.kept and p.proposed == 1.5   # fused 1.98x passes 10/10, three kernels 0.88x fails 10/10
    assert p.verdict() == ("keeps 1.50x: 32.2% under the solution's slowest run (1.983x), 70.1% above the rung "
                           "below's fastest (0.882x)")
    naive = Figures(rung("1a", "pass", "one element per thread"), runs["1a one element per thread (naive_1a)"])
    alone = propose(bar_for("1a", None), [naive])          # no rung below: the margin under the worst run
    assert alone.separates and alone.kept and alone.proposed == 0.7


H200_FOUR = ROOT / "assets/results/calibration/course-h200x4"


# 1a-stretch's reported bar when the recorded runs were timed; the calibration on an H200 since moved it to 0.87x
# (grader/bars.toml), which the figures of these tests leave in place.
STRETCH_AS_TIMED = 0.95


def bar_when_timed(key: str):
    from dataclasses import replace

    bar = bar_for(key, "sm_90")
    return replace(bar, bar=STRETCH_AS_TIMED) if key == "1a-stretch" else bar


def stretch_as_timed(tmp_path) -> Path:
    """An instructor's override file that puts 1a-stretch back at the bar the recorded runs were judged by."""
    override = tmp_path / "bars-as-timed.toml"
    override.write_text(f'["1a-stretch"]\nbar = {STRETCH_AS_TIMED}\ngraded = false\n')
    return override


def h200_figures() -> dict[str, list[Figures]]:
    """Every rung of bars 4, 5a and 5b (their ten runs, from the override's record) and of chapter 1 (each rung's
    slowest and fastest run, the rule's only inputs, from the printed lines of the run cut before its record),
    timed by `ladder calibrate --gpus 4` on four H200s."""
    import re

    table = {r.label: r for r in rungs()}
    found: dict[str, list[Figures]] = {}
    for bar in json.loads((H200_FOUR / "bars-override-4-5a-5b.json").read_text())["bars"]:
        found[bar["key"]] = [Figures(table[r["label"]], tuple(r["speedups"])) for r in bar["rungs"]]
    line = re.compile(r"(?P<bar>\S+) (?:pass|fail|report) (?P<label>.+?): (?P<low>[\d.]+)-(?P<high>[\d.]+)x \(median")
    for text in (H200_FOUR / "calibrate-the-rest.txt").read_text().splitlines():
        m = line.match(text)
        if m and m["bar"] in ("1a", "1a-stretch", "1b"):
            found.setdefault(m["bar"], []).append(Figures(table[m["label"]], (float(m["low"]), float(m["high"]))))
    return found


def test_on_an_h200_the_course_bars_that_separate_are_kept_and_the_stretch_that_misses_is_moved():
    """The recorded H200 figures: 5a's 0.75x and 1b's 1.50x separate their rungs with room to spare, and are kept
    (the midpoint rule proposed 0.40x and 1.17x from these figures). 5b's 1.30x judged every run as expected
    but leaves 6.5% under the solution (10.3% above the rung below), and no bar leaves 10% on both sides: it is
    kept, its thin margin said. 1a-stretch's reported 0.95x is 1.6% under its solution's slowest run, and moves
    to the nearest bar with 10%."""
    found = h200_figures()
    p = {key: propose(bar_when_timed(key), figures) for key, figures in found.items()}
    assert {key: (q.proposed, q.kept) for key, q in p.items()} == {
        "4": (0.2, True), "5a": (0.75, True), "5b": (1.3, True), "1a": (0.7, True), "1b": (1.5, True),
        "1a-stretch": (0.87, False)}
    midpoints = {key: round((low * high) ** 0.5, 2) for key in ("5a", "1b") for low, high in [p[key].bounds()]}
    assert midpoints == {"5a": 0.40, "1b": 1.17}            # what the midpoint rule proposed (docs/instructors.md)
    assert p["5a"].verdict() == ("keeps 0.75x: 10.5% under the solution's slowest run (0.829x), 286.0% above the rung "
                                 "below's fastest (0.194x)")
    assert not p["5a"].thin() and p["5b"].thin() and p["5b"].separates
    assert "(under 10% on a side, and no bar leaves 10% on both" in p["5b"].verdict()
    assert p["1a-stretch"].verdict() == ("proposes 0.87x, the nearest to 0.95x that leaves 10% each side: 10.9% under "
                                         "the solution's slowest run (0.965x), no rung below it")
    assert p["1a-stretch"].kind == "reported" and p["5a"].kind == "graded"


@pytest.mark.parametrize("current, proposed", [(0.52, 0.55), (0.95, 0.90), (0.7, 0.7)])
def test_a_bar_without_margin_moves_to_the_nearest_value_that_has_it(current, proposed):
    """The rung below at most 0.50x, the solution at least 1.00x: bars from 0.55x to 0.90x leave 10% each side
    (to two decimals, rounded inwards); one outside moves to the nearer end, one inside stays."""
    from dataclasses import replace

    figures = [Figures(rung("1a", "fail"), (0.48, 0.50)), Figures(rung("1a", "pass"), (1.00, 1.02))]
    p = propose(replace(bar_for("1a", None), bar=current), figures)
    assert p.proposed == proposed and p.kept == (current == proposed) and not p.thin()


def test_rungs_closer_than_the_margin_give_no_bar_and_a_bar_between_them_is_called_so():
    runs = recorded(RECORD_CH02)
    # Two recorded transpose rungs 9% apart (1.42x and 1.55x on the H200): no bar leaves 10% each side.
    slower = Figures(rung("2", "fail", "unpadded"), runs["2 32x32 tile, 32x8 threads, no padding (unpadded_tile)"])
    faster = Figures(rung("2", "pass", "one per thread"),
                     runs["2 padded tile, one element per thread (one_per_thread_tile)"])
    p = propose(bar_for("2", None), [faster, slower])
    assert p.proposed is None and "not gradable here" in p.why_none
    assert not p.separates                                 # 2.0x: the rung that must pass misses it
    assert faster.as_expected(2.0) == 0 and slower.as_expected(2.0) == len(slower.values)


# ------------------------------------------------------------------------------------ the override file

def test_the_override_file_sets_this_architectures_bars_and_marks_the_unseparated_not_gradable(tmp_path,
                                                                                              monkeypatch):
    runs = recorded(RECORD_CH01)
    good = propose(bar_for("1b", None), [Figures(rung("1b", "pass", "fused"), runs["1b fused, one kernel (solution)"]),
                                         Figures(rung("1b", "fail", "three"), runs["1b three kernels (three_kernels_1b)"])])
    bad = propose(bar_for("1a", None), [Figures(rung("1a", "pass", "naive"), (0.90, 0.91)),
                                        Figures(rung("1a", "fail", "slower"), (0.88, 0.89))])
    path = tmp_path / "bars-override.toml"
    path.write_text(override_toml([good, bad], "sm_90", "NVIDIA H100 80GB HBM3 (sm_90)", 10))
    monkeypatch.setenv("LADDER_BARS", str(path))
    here, elsewhere = bar_for("1b", "sm_90"), bar_for("1b", "sm_86")
    assert here.bar == good.proposed and here.source == str(path)
    assert "NVIDIA H100 80GB HBM3" in here.calibration and "10 runs" in here.calibration
    assert "1.983-1.986x" in here.calibration and "0.881-0.882x" in here.calibration
    assert elsewhere.bar == pytest.approx(1.5)                # other GPUs keep bars.toml's
    verdict = feasibility.gradability("1a", archs.by_name("sm_90"))
    assert verdict.status == "not gradable" and "no bar that the solution clears" in verdict.reason()
    assert feasibility.gradability("1a", archs.by_name("sm_86")).status == "graded"
    assert feasibility.gradability("1b", archs.by_name("sm_90")).status == "graded"


# -------------------------------------------------------------------------------------------- the command

@pytest.mark.skipif(has_gpu(), reason="a CPU-only expectation: with a GPU the command calibrates")
def test_without_a_gpu_the_command_says_it_needs_one():
    done = subprocess.run([sys.executable, "-m", "grader.cli", "calibrate", "--chapters", "1"], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 2, done
    assert "GPU" in done.stderr and "Traceback" not in done.stderr


def test_the_command_reports_and_writes_chapter_1_from_the_recorded_h100_figures(tmp_path, monkeypatch, capsys,
                                                                                fake_h100):
    """`ladder calibrate --chapters 1` end to end, the timing replaced by the recorded H100 runs, against the bars
    those runs were judged by (1a-stretch at 0.95x)."""
    calibrate = fake_h100
    monkeypatch.setenv("LADDER_BARS", str(stretch_as_timed(tmp_path)))
    by_label = recorded(RECORD_CH01)
    runs_of = {"1a one element per thread (naive_1a)": "1a one element per thread (naive_1a)",
               "1a float4 grid-stride (solution's stretch cell)": "1a float4 grid-stride (solution stretch)",
               "1b fused, one kernel (solution)": "1b fused, one kernel (solution)",
               "1b three kernels (three_kernels_1b)": "1b three kernels (three_kernels_1b)"}
    monkeypatch.setattr(calibrate, "time_rung", lambda root, r, runs: Figures(r, by_label[runs_of[r.label]][:runs]))
    out = tmp_path / "bars-h100.toml"
    assert calibrate.run("1", 10, out) == 1            # 1a-stretch's reported bar moves; the graded ones hold
    printed = capsys.readouterr().out
    assert "1b (graded): bar 1.50x (grader/bars.toml) separates the rungs on this GPU" in printed
    assert "10/10 fail at 1.50x" in printed and "10/10 pass at 1.50x" in printed
    assert ("Graded bars (a speed cell's points): 1a 0.70x kept; 1b 1.50x kept\n"
            "Reported bars (stretch goals: shown to the learner, never graded): 1a-stretch 0.95x -> 0.89x\n") in printed
    monkeypatch.setenv("LADDER_BARS", str(out))
    assert bar_for("1b", "sm_90").bar == pytest.approx(1.5) and bar_for("1a-stretch", "sm_90").bar == 0.89
    record = json.loads(out.with_suffix(".json").read_text())
    assert [b["key"] for b in record["bars"]] == ["1a", "1a-stretch", "1b"] and record["runs"] == 10


class RecordedRun(SimpleNamespace):
    """What time_rung reads of a SpeedResult (grader.harness.results), a speedup bar's."""

    def value_at(self, ms):
        return self.baseline_ms / ms


def test_a_rung_keeps_each_runs_ratio_by_both_clocks_and_its_nearness_to_the_traced_bound(monkeypatch):
    """time_rung reads the verifier's values of the timing cell: the trusted speedup decides, the events' and
    the untraced/traced ratio are kept for the record."""
    import base64
    import pickle

    from grader.notebooks import calibrate

    r = rungs(["ch01"])[0]
    runs = [RecordedRun(value=0.9 + i / 100, baseline_ms=1.0, fraction=None, events_ms=1 / (0.91 + i / 100),
                        comparison=SimpleNamespace(rounds=5 + i, elapsed_s=1.234 + i),
                        integrity={"bound": {"untraced_ms": 0.29 + i / 1000, "busy_ms": 0.30}}) for i in range(3)]
    runs[2].integrity = {}     # a run without the traced figures (no trace on this path): no ratio, no error
    values = base64.b64encode(pickle.dumps({f"calibration_run_{i}": x for i, x in enumerate(runs)}))
    seen = {}

    def check(cells, test, label, **kwargs):
        seen["test"] = test
        return SimpleNamespace(passed=True, values=values, reason="", message="")

    monkeypatch.setattr(calibrate, "check_sources", check)
    found = calibrate.time_rung(ROOT, r, 3)
    assert found.values == (0.9, 0.91, 0.92) and found.unit == "x"
    assert found.event_values == (0.91, 0.92, 0.93)
    assert found.traced_ratios == (pytest.approx(0.29 / 0.30, abs=1e-4), pytest.approx(0.291 / 0.30, abs=1e-4))
    assert found.rounds == (5, 6, 7) and found.timing_s == (1.23, 2.23, 3.23)
    assert seen["test"].count("measure_speed(") == 3


def test_a_report_rung_is_timed_and_printed_but_judged_by_no_bar():
    """8b on an H200: the unfused kernels clear 8b's bar, as the chapter teaches, and do not make it ungradable."""
    record = json.loads((ROOT / "assets/results/calibration/trusted-h200/bar-8b.json").read_text())
    table = {r.label: r for r in rungs(["ch08"])}
    figures = [Figures(table[r["label"]], tuple(r["speedups"])) for r in record["bars"][0]["rungs"]]   # an older record
    assert sorted(f.rung.expect for f in figures) == ["fail", "pass", "report"]
    p = propose(bar_for("8b"), figures)
    assert p.separates and p.proposed is not None   # the solution against chapter 5's naive matmul alone
    assert 0.367 * 1.1 <= p.proposed <= 1.167 / 1.1
    text = report(p)
    assert "report  8b unfused kernels" in text and "10/10 at or above 1.10x (reported; the bar does not judge it)" in text


@pytest.fixture
def fake_h100(monkeypatch):
    """grader.classgrade.calibrate as on an H100 (the timing is each test's own replacement of time_rung)."""
    from types import SimpleNamespace

    from grader.classgrade import calibrate

    monkeypatch.setattr(calibrate, "gpu_info", lambda: SimpleNamespace(name="NVIDIA H100 80GB HBM3"))
    monkeypatch.setattr(calibrate, "arch_here", lambda: archs.by_name("sm_90"))
    monkeypatch.chdir(ROOT)
    return calibrate


@pytest.fixture
def calibrate_on_an_h100(monkeypatch, fake_h100):
    """The same, its --gpus cluster a threaded local one of two workers."""
    from contextlib import contextmanager

    from distributed import Client, LocalCluster

    calibrate = fake_h100

    @contextmanager
    def threaded(where):
        assert where.gpus == 2
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, resources={"GPU": 1},
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            yield client

    monkeypatch.setattr(calibrate, "client_for", threaded)
    return calibrate


def recorded_ch01_figures(r: Rung, runs: int) -> Figures:
    """A chapter-1 rung's figures from the recorded H100 runs, in place of timing it."""
    return Figures(r, recorded(RECORD_CH01)[r.label.replace("solution's stretch cell", "solution stretch")][:runs])


def test_with_several_gpus_each_rung_is_one_task_and_the_figures_are_the_same(tmp_path, monkeypatch, capsys,
                                                                              calibrate_on_an_h100):
    """`ladder calibrate --gpus 2`: each rung is one task of the class-grading cluster, and the report and the
    override file are those of timing them one by one (the timing replaced by the recorded H100 runs of
    chapter 1)."""
    import threading
    import time

    calibrate = calibrate_on_an_h100
    monkeypatch.setenv("LADDER_BARS", str(stretch_as_timed(tmp_path)))
    ran_on: dict[str, str] = {}

    def fake_time_rung(root, r, runs):
        ran_on[r.label] = threading.current_thread().name
        time.sleep(0.2)   # long enough that the second worker takes a rung while the first is busy
        return recorded_ch01_figures(r, runs)

    monkeypatch.setattr(calibrate, "time_rung", fake_time_rung)
    outputs = {}
    for gpus in (1, 2):
        out = tmp_path / f"bars-{gpus}.toml"
        assert calibrate.run("1", 10, out, gpus=gpus) == 1   # 1a-stretch's bar moves (the test above)
        outputs[gpus] = (out.read_text(), json.loads(out.with_suffix(".json").read_text()), capsys.readouterr().out)
    assert outputs[1][0] == outputs[2][0]                       # the same proposals
    assert outputs[1][1]["bars"] == outputs[2][1]["bars"] and outputs[2][1]["gpus"] == 2
    assert "2 GPUs side by side" in outputs[2][2] and "of GPU time" in outputs[2][2]
    assert len(ran_on) == 4 and len(set(ran_on.values())) == 2   # both workers timed rungs


def test_calibrate_refuses_a_number_of_gpus_below_one():
    from grader.classgrade import calibrate
    from grader.errors import LadderError

    with pytest.raises(LadderError, match="--gpus takes a number of GPUs of at least 1"):
        calibrate.run("1", 10, Path("unused.toml"), gpus=0)


def test_an_out_that_cannot_be_written_is_refused_before_any_rung_is_timed(tmp_path, monkeypatch, fake_h100):
    """On a GPU too: the file is written after the timing, an hour later for the whole course."""
    from grader.errors import LadderError

    calibrate = fake_h100
    monkeypatch.setattr(calibrate, "time_rung", lambda *a: pytest.fail("a rung was timed before --out was checked"))
    with pytest.raises(LadderError, match=r"--out .* is a folder: give the path of the bars override file"):
        calibrate.run("1", 10, tmp_path)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.raises(LadderError, match=r"its folder cannot be made"):
        calibrate.run("1", 10, blocked / "bars.toml")
    nested = tmp_path / "new" / "folder" / "bars.toml"
    monkeypatch.setattr(calibrate, "_timed", lambda *a: [])   # past the check: nothing timed, the file written
    calibrate.run("1", 10, nested)
    assert nested.is_file() and nested.with_suffix(".json").is_file()


def test_several_gpus_without_dask_installed_say_what_to_install(tmp_path, monkeypatch, fake_h100):
    from grader.errors import LadderError

    calibrate = fake_h100
    for module in ("dask", "distributed"):
        monkeypatch.setitem(sys.modules, module, None)   # as if not installed: importing it raises ImportError
    with pytest.raises(LadderError, match=r"needs dask: pip install -e '\.\[class\]'"):
        calibrate.run("1", 10, tmp_path / "bars.toml", gpus=2)


def test_a_rung_whose_worker_is_lost_is_untimed_and_the_others_still_report(tmp_path, monkeypatch, capsys,
                                                                           calibrate_on_an_h100):
    calibrate = calibrate_on_an_h100

    def fake_time_rung(root, r, runs):
        if r.bar == "1b":
            raise RuntimeError("the worker died")   # not a LadderError: what a lost worker gives back
        return recorded_ch01_figures(r, runs)

    monkeypatch.setattr(calibrate, "time_rung", fake_time_rung)
    assert calibrate.run("1", 10, tmp_path / "bars.toml", gpus=2) == 1
    printed = capsys.readouterr().out
    assert "1a (graded): bar 0.70x (grader/bars.toml) separates the rungs on this GPU" in printed
    assert "its GPU's worker was lost (RuntimeError: the worker died)" in printed
