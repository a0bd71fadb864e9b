"""Where the suite's time goes, from pytest's JUnit XML: each test file's share and the slowest tests, as the
Markdown tables of tests/README.md.

    pytest --junitxml=suite.xml
    python tests/suite_times.py suite.xml --slowest 50

A test's time is pytest's own (set-up, call and tear-down; a module or session fixture counts in the first test
that asks for it). With several workers the shares are of the workers' summed time, not of the wall-clock time.
Written here because pytest's `--durations` lists tests but sums neither files nor shares.
"""

from __future__ import annotations

import argparse
import collections
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def test_times(junit_xml: Path) -> dict[str, float]:
    """{node id: seconds} of every test case in the report."""
    times = {}
    for case in ET.parse(junit_xml).iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        times[f"{module}::{case.get('name')}"] = float(case.get("time") or 0.0)
    return times


def file_table(times: dict[str, float]) -> str:
    total = sum(times.values()) or 1.0
    by_file, count = collections.Counter(), collections.Counter()
    for node, seconds in times.items():
        path = node.split("::")[0]
        by_file[path] += seconds
        count[path] += 1
    rows = ["| file | tests | seconds | share |", "|---|---:|---:|---:|"]
    rows += [f"| `{path}` | {count[path]} | {seconds:,.0f} | {100 * seconds / total:.1f}% |"
             for path, seconds in by_file.most_common()]
    rows.append(f"| all | {len(times)} | {total:,.0f} | 100% |")
    return "\n".join(rows)


def slowest_table(times: dict[str, float], n: int) -> str:
    rows = ["| seconds | test |", "|---:|---|"]
    rows += [f"| {seconds:.1f} | `{node}` |" for node, seconds in sorted(times.items(), key=lambda kv: -kv[1])[:n]]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit_xml", type=Path)
    parser.add_argument("--slowest", type=int, default=50)
    args = parser.parse_args(argv)
    if not args.junit_xml.is_file():
        print(f"{args.junit_xml}: no such file (pytest --junitxml={args.junit_xml} writes it)", file=sys.stderr)
        return 2
    try:
        times = test_times(args.junit_xml)
    except ET.ParseError as exc:
        print(f"{args.junit_xml}: not JUnit XML ({exc})", file=sys.stderr)
        return 2
    print(file_table(times))
    print()
    print(slowest_table(times, args.slowest))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
