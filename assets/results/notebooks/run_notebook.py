"""Execute a solution notebook with nbclient, as the GPU scripts record it:

    python3 assets/results/notebooks/run_notebook.py NOTEBOOK OUT_DIR [GRADE_ID ...]

writes OUT_DIR/<name>_executed.ipynb and prints what the named cells printed, then the time it took.
A cell that raises stops the run with nbclient's error (the notebook is then not written).
"""

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

notebook, out_dir, *shown = sys.argv[1:]
path = Path(notebook)
nb = nbformat.read(path, as_version=4)
start = time.time()
NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
nbformat.write(nb, Path(out_dir) / f"{path.stem.split('_')[0]}_executed.ipynb")
for cell in nb.cells:
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    if cell.cell_type == "code" and grade_id in shown:
        for output in cell.outputs:
            if output.get("output_type") == "stream":
                print(f"--- {grade_id}\n{output['text']}")
print(f"notebook executed in {time.time() - start:.0f} s")
