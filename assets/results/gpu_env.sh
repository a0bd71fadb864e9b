# Sourced by the GPU scripts (issue13_gpu.sh, issue14_gpu.sh): the Jupyter stack from the wheels in .whl
# (shared/tools/offline-wheels.sh, carried with the device tool's `run`) into /tmp/site, a `python3`
# kernel for nbclient, and the GPU's name in "$out/gpu.txt". Expects `out` to be set.
mkdir -p "$out"
# Dask for `ladder grade --gpus N` or --scheduler (issue15_gpu.sh class), when carried: dask, distributed and
# dask-cuda with their pure-Python dependencies, downloaded the same way into .whl-dask. One pip call for
# both folders: a second `pip install --target --upgrade` replaces the target's bin/ folder whole, and took
# nbgrader's `alembic` command with it.
extra_wheels=(); [ -d .whl-dask ] && extra_wheels=(.whl-dask/*.whl)
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl "${extra_wheels[@]}" || exit 1
export PYTHONPATH=/tmp/site:$PWD:$PWD/tests PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export JUPYTER_PATH=/tmp/site/share/jupyter
python3 -m ipykernel install --user --name python3 >/dev/null || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
