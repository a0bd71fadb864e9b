# Sourced by the GPU scripts (issue13_gpu.sh, issue14_gpu.sh): the Jupyter stack from the wheels in .whl
# (shared/tools/offline-wheels.sh, carried with the device tool's `run`) into /tmp/site, a `python3`
# kernel for nbclient, and the GPU's name in "$out/gpu.txt". Expects `out` to be set.
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
# Dask for `ladder grade --gpus N` (issue15_gpu.sh class with N > 1), when carried: dask, distributed and
# dask-cuda with their pure-Python dependencies, downloaded the same way into .whl-dask
if [ -d .whl-dask ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl-dask/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD:$PWD/tests PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export JUPYTER_PATH=/tmp/site/share/jupyter
python3 -m ipykernel install --user --name python3 >/dev/null || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
