"""Print the isolated verdict, reason and message of exploit-suite entries, as `ladder grade` would
give them (for the record of what a rejection says).

    python assets/results/issue14/show_verdicts.py OUTDIR NAME [NAME ...]   # names in tests/submissions/wrong/
"""
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from grader.isolation import isolate  # noqa: E402
from grader.learner import cells  # noqa: E402
from submissions import build  # noqa: E402

out = Path(sys.argv[1])
for name in sys.argv[2:]:
    sub = importlib.import_module(f"submissions.wrong.{name}")
    out.mkdir(parents=True, exist_ok=True)
    nb = build.build("wrong", sub.CHAPTER_DIR, name, out / f"{name}.ipynb")
    gid = sub.EXPECT["cell"]
    v = isolate.check_sources(cells.learner_cells(nb, gid), cells.test_source(nb, gid), gid)
    print(f"## {name}: {gid} passed={v.passed} reason={v.reason} ({v.seconds:.0f} s)\n```\n{v.message[:3000]}\n```\n",
          flush=True)
