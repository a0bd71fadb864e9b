"""tests/suite_times.py: the tables of tests/README.md, from a JUnit report."""

import suite_times

REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.notebooks.test_grading" name="test_one" time="3.0"/>
<testcase classname="tests.notebooks.test_grading" name="test_two[p]" time="1.0"/>
<testcase classname="tests.test_layout" name="test_three" time="4.0"/>
</testsuite></testsuites>"""


def test_each_file_gets_its_share_and_the_slowest_come_first(tmp_path, capsys):
    report = tmp_path / "suite.xml"
    report.write_text(REPORT)
    assert suite_times.main([str(report), "--slowest", "2"]) == 0
    out = capsys.readouterr().out
    assert "| `tests/notebooks/test_grading.py` | 2 | 4 | 50.0% |" in out and "| `tests/test_layout.py` | 1 | 4 | 50.0% |" in out
    assert "| all | 3 | 8 | 100% |" in out
    slowest = out.split("| seconds | test |")[1]
    assert slowest.index("test_three") < slowest.index("test_one") and "test_two" not in slowest


def test_a_missing_or_broken_report_is_named_in_one_line(tmp_path, capsys):
    assert suite_times.main([str(tmp_path / "none.xml")]) == 2
    (tmp_path / "bad.xml").write_text("<testsuites")
    assert suite_times.main([str(tmp_path / "bad.xml")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "none.xml: no such file" in err[0] and "bad.xml: not JUnit XML" in err[1]
