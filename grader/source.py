"""CUDA C source as the learner wrote it: stub detection, and compile errors in their own lines."""

from __future__ import annotations

import linecache
import re

from .errors import KernelCompileError, NotImplementedYet

# nbgrader replaces a solution region with this Python stub, even inside a CUDA C string.
_STUB_LINES = ("raise NotImplementedError", "# YOUR CODE HERE")

_LOG_LINE = re.compile(r"^(?P<file>[^\s(]*)\((?P<line>\d+)\): (?P<kind>error|warning|catastrophic error)[^:]*: (?P<msg>.*)$")


def is_stub(source: str) -> bool:
    return any(line.strip().startswith(_STUB_LINES) for line in source.splitlines())


def require_written(source: str, name: str, where: str | None = None) -> None:
    """Raise NotImplementedYet if the released stub is still in the kernel source."""
    if is_stub(source):
        place = f" in {where}" if where else ""
        raise NotImplementedYet(
            f"the CUDA kernel `{name}` is not written yet: replace the lines\n"
            "    # YOUR CODE HERE\n    raise NotImplementedError()\n"
            f"inside its CUDA source string{place} with the kernel's body, in CUDA C.")


def with_line_directive(source: str, name: str) -> str:
    """Prefix a #line directive so that NVRTC reports lines of the learner's string, under a
    recognisable file name, whatever else we or CuPy add."""
    return f'#line 1 "{name}.cu"\n{source}'


def locate_in_notebook(source: str) -> tuple[str, int] | None:
    """Find the notebook cell (or file) that holds this source text, via linecache, where IPython
    registers every executed cell. Returns (label, line offset of the source's first line)."""
    if not source.strip():
        return None
    for filename in reversed(list(linecache.cache)):
        entry = linecache.cache.get(filename)
        if not entry or len(entry) < 3:
            continue
        text = "".join(entry[2])
        pos = text.rfind(source)
        if pos < 0:
            continue
        offset = text.count("\n", 0, pos)
        label = "your cell" if ("ipykernel" in filename or filename.startswith("<ipython")) else filename
        return label, offset
    return None


def format_compile_log(log: str, source: str, name: str, target: str = "") -> str:
    """Turn an NVRTC log into a message that quotes the learner's lines with their numbers."""
    src_lines = source.splitlines()
    where = locate_in_notebook(source)
    out = [f"the CUDA kernel `{name}` did not compile{f' ({target})' if target else ''}:"]
    seen = 0
    for raw in log.splitlines():
        m = _LOG_LINE.match(raw.strip())
        if not m:
            continue
        seen += 1
        line = int(m["line"])
        if where:
            label, offset = where
            loc = f"line {line + offset} of {label} (kernel line {line})"
        else:
            loc = f"kernel line {line}"
        out.append(f"  {loc}: {m['kind']}: {m['msg']}")
        for n in range(max(1, line - 1), min(len(src_lines), line + 1) + 1):
            marker = ">" if n == line else " "
            out.append(f"    {marker} {n:4d} | {src_lines[n - 1]}")
    if not seen:  # a log we could not parse: show it whole rather than lose it
        out.append(log.strip())
    return "\n".join(out)


def compile_error(log: str, source: str, name: str, target: str = "") -> KernelCompileError:
    return KernelCompileError(format_compile_log(log, source, name, target))


def cuda_sources_in_notebook(path) -> tuple[list[tuple[str, str]], list[int]]:
    """CUDA C sources of a notebook: every string constant assigned to a NAME ending in `_SRC`.

    Returns ([(name, source)], indices of code cells that mention `__global__` outside any such
    constant). The second list lets a test insist that no kernel escapes the compile check.
    """
    import ast
    import json
    from pathlib import Path

    nb = json.loads(Path(path).read_text())
    found, stray = [], []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        # IPython magics are not Python; blank them so ast can parse the rest.
        text = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines())
        try:
            tree = ast.parse(text)
        except SyntaxError:
            if "__global__" in text:
                stray.append(index)
            continue
        covered = 0
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.endswith("_SRC"):
                        found.append((target.id, node.value.value))
                        covered += node.value.value.count("__global__")
        if text.count("__global__") > covered:
            stray.append(index)
    return found, stray
