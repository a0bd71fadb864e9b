"""The GPU machines' synthetic classes (assets/results/class-grading/synthetic_class.py): 16 students of each
chapter, every kind the class-grading issue names among them, each a notebook nbgrader can read, and an
expected score for each within the chapter's points."""

import importlib.util
import json
import subprocess
import sys

import nbformat
import pytest

from conftest import ROOT

SCRIPT = ROOT / "assets" / "results" / "class-grading" / "synthetic_class.py"


@pytest.fixture(scope="module")
def synthetic():
    spec = importlib.util.spec_from_file_location("synthetic_class", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _points(chapter: str) -> float:
    nb = json.loads(next((ROOT / "solutions" / chapter).glob("*.ipynb")).read_text())
    return sum(c["metadata"]["nbgrader"].get("points", 0) for c in nb["cells"]
               if c["metadata"].get("nbgrader", {}).get("grade"))


@pytest.mark.parametrize("chapter", ["01_vector_add", "05_triton_matmul"])
def test_each_class_has_sixteen_students_of_every_kind_and_builds(synthetic, chapter, tmp_path):
    rows = synthetic.students(chapter)
    assert len(rows) == 16 and len({r[0] for r in rows}) == 16
    kinds = {r[0].rsplit("-", 1)[0] for r in rows}
    assert {"correct", "wrong", "crasher", "hanger", "cheater", "tampered"} <= kinds
    assert all(0 <= r[3] <= _points(chapter) for r in rows)
    assert max(r[3] for r in rows) == _points(chapter) and min(r[3] for r in rows) == 0
    halves = synthetic.students(chapter, 1) + synthetic.students(chapter, 2)
    assert sorted(halves) == rows
    for student, package, module, _ in rows:
        nb = nbformat.read(synthetic.build(package, chapter, module, tmp_path / f"{student}.ipynb"), as_version=4)
        nbformat.validate(nb)


def _record(folder, wall_s, students):
    folder.mkdir()
    (folder / "record.json").write_text(json.dumps({
        "assignment": "01_vector_add", "wall_s": wall_s,
        "scores_as_expected": all(score is not None for score, _ in students.values()),
        "students": {name: {"expected": 15, "score": score, "seconds": seconds, "split": {"cpu_seconds": 1.0},
                            "speed": [{"cell": "s", "rounds": 5 if seconds and seconds < 45 else 25, "timing_s": 2.0,
                                       "stopped": "spread" if seconds and seconds < 45 else "budget",
                                       "remeasured_from": None if seconds != 50.0 else 0.9}] if score else []}
                     for name, (score, seconds) in students.items()}}))
    return str(folder / "record.json")


def _report(records):
    """scaling.py report on `records`: the finished run, and its table rows by their first cell."""
    script = ROOT / "assets" / "results" / "class-grading" / "scaling.py"
    run = subprocess.run([sys.executable, str(script), "report", *records], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run, {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
                 for line in run.stdout.splitlines() if line.startswith("| ")}


def test_scaling_report_adds_up_the_parts_and_names_every_student_not_graded(tmp_path):
    """scaling.py report: the 1-GPU parts' walls add up to the class's, the speed-up and the growth of the
    students' summed seconds are against that, and a student a cut-short run never graded keeps its row."""
    records = [_record(tmp_path / "c1-gpus1-part1", 100.0, {"a": (15, 40.0), "b": (2, 20.0)}),
               _record(tmp_path / "c1-gpus1-part2", 80.0, {"c": (15, 30.0)}),
               _record(tmp_path / "c1-gpus4", 60.0, {"a": (15, 50.0), "b": (2, 25.0), "c": (None, None)})]
    run, rows = _report(records)
    assert rows["1"][1:6] == ["180.0", "1.00x", "90.0", "1.00x", "3 of 3"]
    # the growth is on the students graded in both runs (a and b): c was never graded on four GPUs
    assert rows["4"][1:6] == ["60.0", "3.00x", "75.0", "1.25x (2 of 3)", "2 of 3"]
    # each student's speed cell timed for 2 s: outside it, 38 s alone and 48 s four at once
    assert rows["a"] == ["15, 40.0 s (1, 0.0); 38.0 s outside timing",
                         "15, 50.0 s (1, 0.0), 1.25x; 48.0 s outside timing, 1.26x"]
    assert rows["c"] == ["15, 30.0 s (1, 0.0); 28.0 s outside timing", "not graded"]
    assert "every score the same in every run" in run.stdout
    assert ("4 GPU(s), speed cells: 2, timed for 4.0 s in all (2.0-2.0 s each), rounds 5-25 (median 25), "
            "1 measured again after a held clock; stopped by budget 1, spread 1") in run.stdout


def test_scaling_report_gives_no_speed_up_against_one_gpu_parts_that_miss_students(tmp_path):
    """One part of three graded on one GPU is not the class on one GPU: no speed-up against it, and the growth of
    a student's seconds only over the students both runs graded."""
    records = [_record(tmp_path / "c5-gpus1-part1", 100.0, {"a": (15, 40.0)}),
               _record(tmp_path / "c5-gpus2", 70.0, {"a": (15, 44.0), "b": (15, 30.0), "c": (2, 20.0)})]
    run, rows = _report(records)
    assert rows["2"][1:6] == ["70.0", "– (1 GPU ran 1 of its 3 students)", "94.0", "1.10x (1 of 3)", "3 of 3"]
    assert rows["a"][1].startswith("15, 44.0 s (1, 0.0), 1.10x")


def test_scaling_record_keeps_what_each_speed_cell_recorded(tmp_path):
    """scaling.py record's reader: each student's speed cells from their autograded notebook, with the fields the
    report counts (rounds, seconds, what ended the rounds, a second measurement)."""
    spec = importlib.util.spec_from_file_location("scaling", ROOT / "assets" / "results" / "class-grading" / "scaling.py")
    scaling = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scaling)
    record = {"key": "1a", "ratio": 0.9, "rounds": 5, "timing_s": 1.5, "stopped": "verdict", "throttled": False,
              "remeasured_from": None, "remeasured_because": None}
    cell = nbformat.v4.new_code_cell("check_speed()", metadata={"nbgrader": {"grade_id": "a-speed"}})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                           text=["✓ 1a speed\n", f"[speed: {json.dumps(record)}]\n"])]
    nb = nbformat.v4.new_notebook(cells=[cell])
    folder = tmp_path / "autograded" / "alice" / "01_vector_add"
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "01_vector_add.ipynb")
    found = scaling._speed_checks(tmp_path, "01_vector_add")
    assert found == {"alice": [{"cell": "a-speed", **record}]}


def test_waits_tells_what_each_kind_of_process_waited_in_per_student(tmp_path):
    """waits.py on samples like run.sh's: a check worker (a spawned child of a verifier, forked from its server)
    told apart from a Dask worker by its parent, seconds per student, py-spy's stacks by the course's frame."""
    import gzip

    spec = importlib.util.spec_from_file_location("waits", ROOT / "assets" / "results" / "class-grading" / "waits.py")
    waits = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(waits)
    spawned = "python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5) --multiprocessing-fork"
    for name, students, in_driver in (("c-gpus1", 1, 2), ("c-gpus4", 4, 12)):
        run = tmp_path / name
        run.mkdir()
        lines = []
        for t in range(20):
            lines += [f"@ {t / 2}", "  7 1 S do_epoll_wait python3 -m distributed.cli.dask_worker",
                      f"  8 7 S futex_wait_queue {spawned}", "  9 1 R - ps -e -o pid=,ppid="]
            for s in range(students):
                lines += [f"  {20 + s} 1 S do_sys_poll python3 -m grader.isolation.server 5",
                          f"  {30 + s} {20 + s} {'D' if t < in_driver else 'S'} nvidia_ioctl {spawned}"]
        with gzip.open(run / "ps.txt.gz", "wt") as f:
            f.write("\n".join(lines) + "\n")
        with gzip.open(run / "pyspy.txt.gz", "wt") as f:
            f.write(f'process 30:"{spawned}";thread (0x1);serve (grader/isolation/worker.py:10);'
                    f"wait (threading.py:300) {20 * students * in_driver}\n")
            # the chain of processes down to the sampled one: the last names the kind
            f.write(f'process 2:"timeout 99 python3 -m grader.cli grade subs";process 31:"{spawned}";thread (0x2);'
                    f"serve (grader/isolation/worker.py:10);_new_shared_cuda (torch/storage.py:1464) {10 * students}\n")
        (run / "record.json").write_text(json.dumps({"students": [[f"s{i}", {}] for i in range(students)]}))
    text = waits.report([tmp_path / "c-gpus1", tmp_path / "c-gpus4"])
    assert "| check worker | disk or driver: nvidia_ioctl | 1.0 | 6.0 |" in text   # 2 and 12 samples of 0.5 s
    assert "| dask worker | asleep: futex_wait_queue | 10.0 | 2.5 |" in text      # one for the run, per student
    assert "| spawned: check worker or Dask worker | `serve (grader/isolation/worker.py:10)` | 2.5 | 12.5 |" in text
    assert ("| spawned: check worker or Dask worker | `_new_shared_cuda (torch/storage.py:1464) < "
            "serve (grader/isolation/worker.py:10)` | 0.5 | 0.5 |") in text
    assert "| ladder grade |" not in text.split("## py-spy")[1]
    assert "ps -e" not in text


def test_the_compile_record_sees_the_nannys_trim_threshold_in_a_compiles_page_faults():
    """compile_malloc_trim.py (assets/results/class-grading/compile-malloc-trim-cpu/), one configuration: the same
    sm_90 compile, through Triton's cross-compiler, faults in more pages with Dask's MALLOC_TRIM_THRESHOLD_."""
    spec = importlib.util.spec_from_file_location(
        "compile_malloc_trim", ROOT / "assets" / "results" / "class-grading" / "compile_malloc_trim.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    unset, trimmed = script.one(None, configs=1), script.one("65536", configs=1)
    assert all(v > 0 for v in unset + trimmed)
    assert trimmed[3] > 1.3 * unset[3], (unset, trimmed)
