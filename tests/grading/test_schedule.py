"""The order a class's students go to the GPUs (grader.classgrade.schedule): the longest expected first,
from the journal's times of earlier gradings; a student never graded counts as the class's median."""

from grader.classgrade import schedule
from grader.classgrade.job import StudentJob
from grader.classgrade.journal import Entry


def _job(student: str) -> StudentJob:
    return StudentJob("01_vector_add", "01_vector_add.ipynb", student, b"{}", "0" * 64, {}, "1" * 64, None, "2" * 64)


def _entry(student: str, seconds: float) -> Entry:
    return Entry("01_vector_add", student, "9" * 64, "1" * 64, "2" * 64, 15.0, 15.0, seconds, "host GPU 0")


def test_the_longest_expected_students_start_first_and_unknown_ones_count_as_the_median():
    jobs = [_job(s) for s in ("alice", "bob", "carol", "dave", "erin", "hanger")]
    recorded = {"alice": _entry("alice", 14.0), "bob": _entry("bob", 30.0), "hanger": _entry("hanger", 110.0),
                "carol": _entry("carol", 12.0)}   # dave and erin were never graded: the median, 22 s
    order = schedule.longest_first(jobs, recorded)
    assert [job.student for job, _ in order] == ["hanger", "bob", "dave", "erin", "alice", "carol"]
    assert [priority for _, priority in order] == [110, 30, 22, 22, 14, 12]


def test_a_class_never_graded_goes_in_name_order():
    jobs = [_job(s) for s in ("zoe", "adam", "mia")]
    order = schedule.longest_first(jobs, {})
    assert [job.student for job, _ in order] == ["adam", "mia", "zoe"]
    assert {priority for _, priority in order} == {0}


def test_a_student_graded_before_from_other_bytes_keeps_their_time():
    # the journal's row is the last grading, whatever submission it was made from: a resubmission of a
    # student who hung is still expected to be long
    jobs = [_job("resubmitted"), _job("new")]
    expected = schedule.expected_seconds(jobs, {"resubmitted": _entry("resubmitted", 95.0)})
    assert expected == {"resubmitted": 95.0, "new": 95.0}

