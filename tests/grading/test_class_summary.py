"""What the summary of a class grading tells the instructor about time (grader.classgrade.progress.where_time_went):
each GPU's busy fraction over the run, and the longest students with why."""

from grader.classgrade.job import StudentGrade
from grader.classgrade.progress import where_time_went


def test_the_summary_gives_each_gpu_s_busy_fraction_and_the_longest_students_with_why():
    def graded(student, worker, started, seconds, split):
        return StudentGrade(student, 15.0, 15.0, {}, None, seconds=seconds, worker=worker, started=started, split=split)

    grades = [graded("hanger", "vm GPU 0", 1000.0, 100.0, {"hung": ["add"], "timed_out": ["1a-hidden", "1a-speed"],
                                                           "answered_at_once": ["1a-speed"],
                                                           "longest": [["1a-hidden", 25.04]]}),
              graded("alice", "vm GPU 1", 1000.0, 40.0, {"compiled_kernels": 3, "autotune_results": 2}),
              graded("bob", "vm GPU 1", 1040.0, 40.0, {"slot_wait_seconds": 6.2}),
              StudentGrade("kept", 15.0, 15.0, {}, None, seconds=500.0, worker="vm GPU 0", skipped=True)]
    text = "\n".join(where_time_went(grades))
    assert "3 student(s) graded in 100 s" in text          # the skipped student is not part of this run
    assert "vm GPU 0" in text and "busy 100.0%" in text    # the hanger's GPU worked the whole run
    assert "busy  80.0%" in text                          # the other waited 20 s at the end
    lines = text.splitlines()
    longest = lines[lines.index("  longest students:") + 1:]
    assert longest[0].split()[0] == "hanger" and "hung (add; 1 cell(s) waited out the time limit, 1 more failed at once as timed out)" in longest[0]
    assert "compiled 3 kernel(s)" in text and "autotuned 2 kernel(s)" in text
    assert "waited 6 s for the machine's CPUs" in text


def test_the_summary_says_what_the_run_spent_before_its_first_student_and_after_its_last():
    from grader.classgrade.progress import outside_students

    grades = [StudentGrade("alice", 15.0, 15.0, {}, None, seconds=40.0, worker="vm GPU 0", started=1012.0),
              StudentGrade("bob", 15.0, 15.0, {}, None, seconds=30.0, worker="vm GPU 1", started=1013.0),
              StudentGrade("kept", 15.0, 15.0, {}, None, seconds=500.0, worker="vm GPU 0", skipped=True)]
    [line] = outside_students(grades, 1000.0, 1003.5, 1055.0, 1011.5, {"tcp://a": 6.25, "tcp://b": 7.5})
    assert "the first started 12.0 s after the run began" in line
    assert "the workspace prepared in 3.5 s" in line
    assert "2 Dask worker(s) ready at 11.5 s, each prepared in 6.2-7.5 s" in line
    assert "the records were written 3.0 s after the last ended" in line   # alice ended at 1052
    [alone] = outside_students(grades, 1000.0, 1003.5, 1055.0)   # one GPU: no Dask
    assert "Dask" not in alone and "12.0 s" in alone
    assert outside_students(grades[2:], 1000.0, 1003.5, 1055.0) == []   # nobody graded in this run


def _no_gpu_student(name: str, napkin: float = 1.0) -> StudentGrade:
    """A chapter-1 student graded without a GPU: two napkin cells checked, three 2-point GPU cells not."""
    cells = {"napkin-test": (napkin, 1.0), "diagnosis": (1.0, 1.0), "1a-visible": (0.0, 2.0), "1a-hidden": (0.0, 2.0),
             "1a-speed": (0.0, 2.0)}
    reasons = {gid: ("no-gpu", "no GPU") for gid in ("1a-visible", "1a-hidden", "1a-speed")}
    if napkin < 1.0:
        reasons["napkin-test"] = ("wrong-result", "3 bytes off")
    return StudentGrade(name, napkin + 1.0, 8.0, cells, None, cell_reasons=reasons, seconds=10.0, worker="cpu")


def test_the_summary_counts_points_not_checked_apart_from_points_lost():
    from grader.classgrade.progress import summary

    text = "\n".join(summary([_no_gpu_student("ada"), _no_gpu_student("bo", napkin=0.0),
                              StudentGrade("cy", 0.0, 8.0, {}, None, "not a notebook", reason="not-a-notebook")]))
    assert "ada                  2/8          10 s on cpu  (2/2 checked points; 6 points need a GPU)" in text
    assert "(1/2 checked points; 6 points need a GPU)" in text
    # the pass rate of a GPU cell is over the students it was checked for: none here
    assert "1a-speed                    0/0        –  not checked: 2 no-gpu" in text
    assert "napkin-test                 1/2     50.0%" in text
    assert ("not checked here, not lost: every graded student, 6 of 8 points (6 points need a GPU); points lost in "
            "all: 1") in text


def test_grades_csv_gives_points_lost_and_not_checked_with_why(tmp_path):
    from grader.classgrade.export import points_columns, student_reason

    ada, bo = _no_gpu_student("ada"), _no_gpu_student("bo", napkin=0.0)
    assert student_reason(ada) == ("graded", "2/2 checked points; 6 points need a GPU")
    assert points_columns(ada) == {"lost_points": "0", "not_checked_points": "6", "not_checked_why": "6 points need a GPU"}
    assert points_columns(bo)["lost_points"] == "1"
    full = StudentGrade("cy", 8.0, 8.0, {"napkin-test": (8.0, 8.0)}, None)
    assert student_reason(full) == ("graded", "")
    assert points_columns(full) == {"lost_points": "0", "not_checked_points": "0", "not_checked_why": ""}
    gone = StudentGrade("dee", 0.0, 8.0, {}, None, "not a notebook", reason="not-a-notebook")
    assert points_columns(gone) == {"lost_points": "", "not_checked_points": "", "not_checked_why": ""}
