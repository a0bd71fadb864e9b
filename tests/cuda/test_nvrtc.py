"""Every CUDA kernel shipped in solutions/ compiles through NVRTC for sm_80 and sm_90, with no GPU."""


import pytest

from conftest import ROOT
from grader.errors import KernelCompileError, NotImplementedYet
from grader.cuda.nvrtc import compile_cuda, compile_for_archs
from grader.cuda.nvrtc import format_compile_log, is_stub
from grader.learner.cells import cuda_sources

SOLUTION_NOTEBOOKS = sorted((ROOT / "solutions").glob("*/*.ipynb"))
KERNELS = [(nb, name, src) for nb in SOLUTION_NOTEBOOKS for name, src in cuda_sources(nb)[0]]


def test_there_are_kernels_to_compile():
    assert SOLUTION_NOTEBOOKS, "no solution notebooks found"
    assert len(KERNELS) >= 5, f"expected the chapter-1 kernels at least, found {[k[1] for k in KERNELS]}"


@pytest.mark.parametrize("notebook", SOLUTION_NOTEBOOKS, ids=lambda p: p.parent.name)
def test_no_kernel_escapes_the_compile_check(notebook):
    _, stray = cuda_sources(notebook)
    assert not stray, f"{notebook.name}: cells {stray} define __global__ kernels outside a NAME_SRC string"


@pytest.mark.parametrize("notebook, name, source", KERNELS, ids=[f"{k[0].parent.name}:{k[1]}" for k in KERNELS])
def test_kernel_compiles_for_sm80_and_sm90(notebook, name, source):
    results = compile_for_archs(source, name, ("sm_80", "sm_90"))
    assert [r.arch for r in results] == ["sm_80", "sm_90"]
    for r in results:
        assert len(r.cubin) > 0 and f".target {r.arch}" in r.ptx
        assert "error" not in r.log.lower()


def test_released_kernels_are_stubs_that_say_where_to_write():
    released = sorted((ROOT / "course").glob("*/*.ipynb"))
    stubs = [(nb, name, src) for nb in released for name, src in cuda_sources(nb)[0] if is_stub(src)]
    assert stubs, "the released notebooks should hold stubbed kernels"
    nb, name, src = stubs[0]
    with pytest.raises(NotImplementedYet, match=f"the CUDA kernel `{name}` is not written yet"):
        compile_cuda(src, name)


def test_compile_error_quotes_the_learners_line():
    src = 'extern "C" __global__ void k(float* out)\n{\n    out[threadIdx.x] = missing;\n}\n'
    with pytest.raises(KernelCompileError) as info:
        compile_cuda(src, "k")
    msg = str(info.value)
    assert 'kernel line 3: error: identifier "missing" is undefined' in msg
    assert ">    3 |     out[threadIdx.x] = missing;" in msg


def test_compile_error_lines_map_to_the_notebook_cell(monkeypatch):
    import linecache
    cell = 'x = 1\nSRC = r"""\nextern "C" __global__ void k(float* o)\n{\n    o[0] = nope;\n}\n"""\n'
    source = cell.split('r"""')[1].split('"""')[0]
    monkeypatch.setitem(linecache.cache, "/tmp/ipykernel_1/123.py", (len(cell), None, cell.splitlines(True), "/tmp/ipykernel_1/123.py"))
    log = 'k.cu(4): error: identifier "nope" is undefined'
    assert "line 5 of your cell (kernel line 4)" in format_compile_log(log, source, "k")


def test_wmma_kernel_finds_mma_headers_and_emits_mma():
    src = ('#include <mma.h>\nusing namespace nvcuda;\n'
           'extern "C" __global__ void w(const half* a, const half* b, float* c) {\n'
           '  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;\n'
           '  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;\n'
           '  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;\n'
           '  wmma::fill_fragment(fc, 0.0f); wmma::load_matrix_sync(fa, a, 16); wmma::load_matrix_sync(fb, b, 16);\n'
           '  wmma::mma_sync(fc, fa, fb, fc); wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);\n}\n')
    for r in compile_for_archs(src, "w"):
        assert "mma.sync" in r.ptx
