"""What a grader's process imports before it reads a notebook: nbformat without the grammar jsonschema would build
for a format no notebook schema uses (grader/notebooks/__init__.py), and nothing of that in a learner's kernel."""

import subprocess
import sys

from conftest import ROOT


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout


def test_a_grader_process_reads_and_validates_notebooks_without_the_iri_grammar():
    out = _run("import sys, grader.notebooks, nbformat\n"
               "nb = nbformat.read('solutions/01_vector_add/01_vector_add.ipynb', as_version=4)\n"
               "nbformat.validate(nb)\n"
               "broken = nbformat.v4.new_notebook(); broken.cells.append({'cell_type': 'code'})\n"
               "try:\n    nbformat.validate(broken)\nexcept nbformat.ValidationError:\n    print('invalid refused')\n"
               "print(sys.modules.get('rfc3987_syntax'))")
    assert out.split() == ["invalid", "refused", "None"]


def test_a_learners_setup_cell_leaves_jsonschema_as_installed():
    """The setup cell's imports (grader.start, a chapter) never reach grader.notebooks, whose import changes how
    jsonschema loads in that process."""
    out = _run("import sys\nfrom grader import start\nfrom grader.chapters import ch05\nstart(chapter=5)\n"
               "print('grader.notebooks' in sys.modules, 'rfc3987_syntax' in sys.modules)")
    assert out.split()[-2:] == ["False", "False"]
