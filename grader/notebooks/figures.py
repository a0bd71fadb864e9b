"""Chapter figures travel inside the notebooks, as cell attachments.

A markdown cell shows a figure with `![what it shows](attachment:ch01_grid.png)`, and the PNG's bytes
sit in that cell's `attachments`. JupyterLab started anywhere (the repository, course/, work/, a
chapter folder), an HTML export made anywhere, and Colab opening a notebook straight from GitHub
all render it, because nothing is fetched from a path. A relative path (`../../assets/...`) breaks
in each of those places.

The one source of every figure is `assets/figures/NAME.png`, drawn by the script beside it.
`ladder release` copies those bytes into the solutions/ notebooks (`embed`), and nbgrader carries
the attachments into course/; `ladder release --check` fails when an attachment and its PNG differ.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import LadderError

FIGURES = Path("assets") / "figures"

# Markdown images: ![alt](url) and <img src="url">.
_MARKDOWN_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<url>[^)\s]+)(?P<title>\s+\"[^\"]*\")?\)")
_HTML_IMAGE = re.compile(r"<img\s[^>]*src=\"(?P<url>[^\"]+)\"")
# A figure reference this module manages: an attachment, or a path ending in assets/figures/NAME.png.
_FIGURE_PATH = re.compile(r"^(?:attachment:|(?:\.\./)*assets/figures/)(?P<name>[\w.-]+\.png)$")


@dataclass(frozen=True)
class ImageRef:
    cell: int       # index of the markdown cell
    url: str        # as written in the cell

    @property
    def attachment(self) -> str | None:
        return self.url[len("attachment:"):] if self.url.startswith("attachment:") else None


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def image_refs(nb) -> list[ImageRef]:
    """Every image a notebook's markdown cells show, in order."""
    refs = []
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "markdown":
            continue
        text = _source(cell)
        for m in _MARKDOWN_IMAGE.finditer(text):
            refs.append(ImageRef(index, m["url"]))
        for m in _HTML_IMAGE.finditer(text):
            refs.append(ImageRef(index, m["url"]))
    return refs


def _png(root: Path, name: str, where: str) -> str:
    path = root / FIGURES / name
    if not path.is_file():
        raise LadderError(f"{where} shows the figure {name}, which is not in {FIGURES}/: draw it with the "
                          f"make_chNN_figures.py script there, or fix the name")
    return base64.b64encode(path.read_bytes()).decode("ascii")


def embed(nb, root: Path, label: str = "notebook") -> bool:
    """Point every figure of `nb` at an attachment holding the PNG from assets/figures, and drop
    attachments no cell shows any more. Returns True when the notebook changed."""
    changed = False
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "markdown":
            continue
        text = _source(cell)
        wanted: dict[str, str] = {}

        def to_attachment(m: re.Match) -> str:
            figure = _FIGURE_PATH.match(m["url"])
            if figure is None:
                return m.group(0)
            name = figure["name"]
            wanted[name] = _png(root, name, f"{label}, cell {index + 1}")
            return f"![{m['alt']}](attachment:{name}{m['title'] or ''})"

        new_text = _MARKDOWN_IMAGE.sub(to_attachment, text)
        attachments = {name: {"image/png": data} for name, data in wanted.items()}
        if new_text != text:
            cell["source"] = new_text
            changed = True
        if (cell.get("attachments") or {}) != attachments:
            if attachments:
                cell["attachments"] = attachments
            else:
                cell.pop("attachments", None)
            changed = True
    return changed


def stale(nb, root: Path, label: str) -> list[str]:
    """What `embed` would change in `nb`, in words (empty when its figures are current)."""
    import copy

    fresh = copy.deepcopy(nb)
    if not embed(fresh, root, label):
        return []
    out = []
    for index, (old, new) in enumerate(zip(nb["cells"], fresh["cells"])):
        if old != new:
            names = sorted(set(old.get("attachments") or {}) | set(new.get("attachments") or {})) or ["a figure"]
            out.append(f"{label}, cell {index + 1}: {', '.join(names)} differs from {FIGURES}/")
    return out


def unresolved(nb, folder: Path) -> list[str]:
    """Images a notebook in `folder` shows that would not render there: an attachment the cell lacks
    (or that is not a PNG), or a path that does not resolve from the notebook's own folder."""
    problems = []
    for ref in image_refs(nb):
        cell = nb["cells"][ref.cell]
        if ref.attachment is not None:
            data = (cell.get("attachments") or {}).get(ref.attachment, {}).get("image/png")
            if data is None:
                problems.append(f"cell {ref.cell + 1}: attachment {ref.attachment} is missing")
            elif not base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n":
                problems.append(f"cell {ref.cell + 1}: attachment {ref.attachment} is not a PNG")
        elif re.match(r"^[a-z]+://", ref.url):
            problems.append(f"cell {ref.cell + 1}: {ref.url} is fetched from the network")
        elif not (folder / ref.url).resolve().is_relative_to(folder.resolve()) or not (folder / ref.url).is_file():
            problems.append(f"cell {ref.cell + 1}: {ref.url} does not resolve inside the notebook's folder")
    return problems
