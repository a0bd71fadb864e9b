"""Run a learner's cells outside a notebook kernel: definitions only, read the way IPython reads them.

The grader's worker (grader.isolation.worker), the sanitizer's runner and the test suite's synthetic
students all rebuild a learner's work from the notebook's setup cell and solution cells. They use
these rules, and only these:

- A cell is first turned into Python as IPython does (its `TransformerManager`): `%time x = f()`,
  `!nvidia-smi`, `files = !ls`, `%%time` and `f?` are valid in a notebook and a SyntaxError for Python.
- Each top-level statement runs on its own, under the cell's own file name registered in
  `linecache` as IPython registers cells (`@triton.jit` reads a function's source through it).
- Bare calls are left out (`print(...)`, `vector_add(a, b, out)`, `!nvidia-smi`): a call left in a
  solution cell to try a kernel would run here without the rest of the notebook's state. Magics
  that run code in the notebook's namespace run that code: `%time STATEMENT` runs the statement,
  and the bodies of `%%time` and `%%capture` cells run as cells. Other magics do nothing here.
- A statement that raises is reported and the cell goes on, unless the notebook's kernel is known to
  have stopped the cell there (`stop_line`, from the kernel's own error) or lost it (the cell is then
  not run at all): the worker never holds a name the learner's kernel never had.
"""

from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass

# Cell and line magics whose code runs in the notebook's own namespace.
RUNS_ITS_CODE = {"time", "capture"}


@dataclass(frozen=True)
class KernelOutcome:
    """How a cell ended in the notebook's kernel: "ok", "raised" (at `line` of the cell, if known),
    or "lost" (its kernel died or hung while it ran)."""
    status: str = "ok"
    line: int | None = None


def as_python(source: str) -> str:
    """The cell as Python, IPython's magics and shell escapes turned into calls, line numbers kept.

    IPython drops a cell's leading blank lines before it reads the rest (so that a `%%time` below
    them is still the cell's magic); they are put back here, so that every line keeps its number, which
    tracebacks and `@triton.jit` (it reads a function's source by line number) depend on."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # no IPython: blank those lines, which is what leaving them out amounts to
        return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))
    lines = source.splitlines(keepends=True)
    blank = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    return "\n" * blank + TransformerManager().transform_cell("".join(lines[blank:]))


def _magic(node: ast.stmt) -> tuple[str, str, int] | None:
    """For `get_ipython().run_line_magic(name, line)` or `.run_cell_magic(name, line, body)`: (name, the
    code it runs, how many lines that code sits below the statement), else None."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    call = node.value
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("run_line_magic", "run_cell_magic")
            and isinstance(func.value, ast.Call) and getattr(func.value.func, "id", None) == "get_ipython"):
        return None
    args = [a.value if isinstance(a, ast.Constant) else None for a in call.args]
    if not args or not isinstance(args[0], str):
        return None
    if func.attr == "run_line_magic" and len(args) >= 2 and isinstance(args[1], str):
        return args[0], args[1], 0
    if func.attr == "run_cell_magic" and len(args) >= 3 and isinstance(args[2], str):
        return args[0], args[2], 1
    return None


def statements(source: str, filename: str, stop_line: int | None = None, _offset: int = 0):
    """Compiled top-level statements of a cell, definitions only: [(code, first line)].

    `stop_line`: the kernel stopped this cell at that line (of the cell), so the statement holding it
    and everything after are left out. Raises SyntaxError for a cell that is not Python even then."""
    tree = ast.parse(as_python(source), filename)
    ast.increment_lineno(tree, _offset)
    out = []
    for node in tree.body:
        if stop_line is not None and node.end_lineno >= stop_line:
            break
        magic = _magic(node)
        if magic is not None:
            name, code, below = magic
            if name in RUNS_ITS_CODE:
                out += statements(code, filename, stop_line, node.lineno - 1 + below)
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Call, ast.Await)):
            continue
        out.append((compile(ast.Module(body=[node], type_ignores=[]), filename, "exec"), node.lineno))
    return out


class _NoShell:
    """What `get_ipython()` returns outside a kernel: magics and shell commands do nothing, and
    `files = !ls` gives an empty list rather than an error."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: [] if name == "getoutput" else None


NAMESPACE = "ladder_notebook"  # __name__ of the learner's cells (not a module in sys.modules)


def cell_filename(name: str) -> str:
    return f"<cell {name}>"


def run_cell(name: str, source: str, ns: dict, outcome: KernelOutcome = KernelOutcome(),
             filename: str | None = None) -> list[str]:
    """Execute a cell's definitions in `ns`; return the problems met (empty when there were none)."""
    if outcome.status == "lost":
        return [f"cell {name}: not run, because the notebook's kernel was lost while running it"]
    filename = filename or cell_filename(name)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns.setdefault("get_ipython", _NoShell)
    try:
        compiled = statements(source, filename, outcome.line if outcome.status == "raised" else None)
    except SyntaxError as exc:
        return [f"cell {name}: SyntaxError at line {exc.lineno}: {exc.msg}"]
    problems = []
    for code, lineno in compiled:
        try:
            exec(code, ns)
        except BaseException as exc:  # noqa: BLE001 - a learner's cell may raise anything, even SystemExit
            if isinstance(exc, KeyboardInterrupt):
                raise
            problems.append(f"cell {name}, line {lineno}: {type(exc).__name__}: {exc}")
    return problems
