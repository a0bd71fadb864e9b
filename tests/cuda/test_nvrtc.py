"""NVRTC with no GPU: compile errors that quote the learner's lines, the released stubs, the headers
chapter 4 needs. (Every kernel of solutions/ compiled for every architecture: test_cross_arch.py.)"""


import pytest

from conftest import ROOT
from grader.errors import KernelCompileError, NotImplementedYet
from grader.cuda.nvrtc import compile_cuda, compile_for_archs, needs_newer_gpu
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


def test_an_instruction_the_architecture_lacks_is_named_with_the_architecture_it_needs():
    log = ("ptxas application ptx input, line 210; error   : Feature 'cp.async' requires .target sm_80 or higher\n"
           "ptxas application ptx input, line 367; error   : Feature 'cp.async.commit_group' requires .target sm_80 "
           "or higher\nptxas fatal   : Ptx assembly aborted due to errors")
    said = needs_newer_gpu(log, "NVRTC, --gpu-architecture=sm_75 --std=c++17")
    assert said == ("it uses cp.async, which needs compute capability 8.0 or newer (sm_80 and later), so it cannot be "
                    "compiled for sm_75, nor run on a GPU of that architecture.")
    assert needs_newer_gpu("kernel.cu(3): error: identifier \"x\" is undefined") == ""
