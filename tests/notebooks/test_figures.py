"""Every figure renders wherever a notebook is opened: JupyterLab started at the repository, at
course/ or at a chapter folder, an HTML export written anywhere, Colab (which has only the .ipynb).
Figures are cell attachments (grader/notebooks/figures.py), so each check is that the notebook itself holds
every image it shows, and that nothing points outside the notebook's folder."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

from conftest import ROOT
from grader.notebooks import figures

NOTEBOOKS = sorted((ROOT / "course").glob("*/*.ipynb")) + sorted((ROOT / "solutions").glob("*/*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_every_image_resolves_from_the_notebooks_own_folder(path):
    nb = nbformat.read(str(path), as_version=4)
    refs = figures.image_refs(nb)
    assert refs, f"{path.name} shows no figure"
    assert figures.unresolved(nb, path.parent) == []
    assert all(r.attachment for r in refs), "figures travel as attachments"


def test_attachments_are_the_pngs_in_assets_figures():
    for path in NOTEBOOKS:
        nb = nbformat.read(str(path), as_version=4)
        assert figures.stale(nb, ROOT, str(path)) == [], "run `ladder release`"


def test_embed_turns_a_path_into_an_attachment_and_drops_unused_ones(tmp_path):
    (tmp_path / "assets" / "figures").mkdir(parents=True)
    png = (ROOT / "assets/figures/ch01_grid.png").read_bytes()
    (tmp_path / "assets/figures/ch01_grid.png").write_bytes(png)
    cell = nbformat.v4.new_markdown_cell('Look: ![a grid](../../assets/figures/ch01_grid.png "title")')
    cell.attachments = {"old.png": {"image/png": "AAAA"}}
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert figures.embed(nb, tmp_path)
    assert nb.cells[0].source == 'Look: ![a grid](attachment:ch01_grid.png "title")'
    assert base64.b64decode(nb.cells[0].attachments["ch01_grid.png"]["image/png"]) == png
    assert set(nb.cells[0].attachments) == {"ch01_grid.png"}
    assert not figures.embed(nb, tmp_path), "a second embed changes nothing"
    missing = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("![x](attachment:nope.png)")])
    with pytest.raises(Exception, match="nope.png, which is not in assets/figures"):
        figures.embed(missing, tmp_path, "test notebook")


def test_unresolved_names_each_kind_of_broken_image(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "![a](attachment:gone.png) ![b](../../assets/figures/x.png) ![c](https://example.org/x.png)")])
    problems = figures.unresolved(nb, tmp_path)
    assert len(problems) == 3 and "gone.png is missing" in problems[0]
    assert "does not resolve inside" in problems[1] and "from the network" in problems[2]


def test_html_export_made_elsewhere_embeds_every_figure(tmp_path):
    from nbconvert import HTMLExporter

    path = ROOT / "course/01_vector_add/01_vector_add.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    html, _ = HTMLExporter().from_notebook_node(nb)   # no folder given: written "anywhere"
    shown = [r.attachment for r in figures.image_refs(nb)]
    sources = re.findall(r'<img[^>]*src="([^"]+)"', html)
    embedded = [s for s in sources if s.startswith("data:image/png;base64,")]
    assert len(embedded) == len(shown) and len(sources) == len(shown), sources[:3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=20) as r:
        return r.read()


@pytest.fixture
def jupyterlab(tmp_path):
    """Start `jupyter lab FOLDER` as a learner would (after `ladder start`'s learner mode), yield a
    function that fetches a path from it."""
    servers = []
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"))
    subprocess.run([sys.executable, "-m", "grader.cli", "lab", "--learner", "--level", "user"], env=env, cwd=ROOT,
                   check=True, capture_output=True, timeout=120)

    def start(folder: str):
        port, token = _free_port(), "ladder-test"
        proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", folder, "--no-browser", "--allow-root",
                                 f"--port={port}", f"--ServerApp.token={token}", "--ServerApp.open_browser=False"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        servers.append(proc)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                _get(f"{base}/api/status?token={token}")
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"jupyter lab {folder} exited: {proc.stderr.read()[-2000:]}")
                time.sleep(0.5)
        else:
            raise RuntimeError(f"jupyter lab {folder} did not answer in 90 s")
        return lambda path: _get(f"{base}/{path.lstrip('/')}{'&' if '?' in path else '?'}token={token}")

    yield start
    for proc in servers:
        proc.terminate()
        proc.wait(timeout=30)


def _images_served(fetch, notebook: str) -> int:
    """Fetch a notebook through the server's contents API, as JupyterLab does, and check each image
    it shows: attachments present and PNG; any other URL fetched from the server with a 200."""
    model = json.loads(fetch(f"api/contents/{notebook}?content=1"))
    nb = nbformat.from_dict(model["content"])
    refs = figures.image_refs(nb)
    folder = notebook.rsplit("/", 1)[0] if "/" in notebook else ""
    for ref in refs:
        if ref.attachment:
            data = nb.cells[ref.cell].attachments[ref.attachment]["image/png"]
            assert base64.b64decode(data)[:4] == b"\x89PNG"
        else:
            assert fetch(f"files/{folder}/{ref.url}")[:4] == b"\x89PNG"
    return len(refs)


@pytest.mark.slow
def test_jupyterlab_at_course_a_chapter_or_the_root_shows_every_figure_and_no_instructor_tools(jupyterlab):
    shown = 0
    for root, prefix in (("course", ""), ("course/01_vector_add", None), (".", "course/")):
        fetch = jupyterlab(root)
        page = fetch("lab").decode()
        config = json.loads(re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.S).group(1))
        assert "@jupyter/nbgrader" in config["disabledExtensions"], "learners do not see nbgrader's menu"
        with pytest.raises(urllib.error.HTTPError):
            fetch("formgrader")
        if prefix is None:
            shown += _images_served(fetch, "01_vector_add.ipynb")
        else:
            for nb in sorted((ROOT / "course").glob("*/*.ipynb")):
                shown += _images_served(fetch, f"{prefix}{nb.parent.name}/{nb.name}")
    assert shown >= 17 + 2
