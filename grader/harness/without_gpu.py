"""What the course does on a machine without a GPU, said once: every chapter's setup cell and `ladder doctor`
print WHAT_STILL_WORKS, and tests/test_without_gpu.py holds the README and each notebook's introduction to
the same facts (which chapters run their Triton kernels in the interpreter).

From `ladder check` of each solution notebook on a CPU: CUDA C needs a GPU to run, so chapters 1-4 and
exercise 7a are graded only in the cells where no kernel runs (napkin math, predictions, what NVRTC checks);
Triton's interpreter runs chapters 5, 6, 9 and 10 and the correctness cells of exercises 7b and 8b.
"""

from __future__ import annotations

# chapter -> the exercises whose Triton kernels run on the CPU in Triton's interpreter, correctness checked
# in full at small sizes (None: every exercise of the chapter). Speed and memory cells need a GPU.
INTERPRETED: dict[int, tuple[str, ...] | None] = {5: None, 6: None, 7: ("7b",), 8: ("8b",), 9: None, 10: None}

# chapter -> the compute capability below which its Triton kernels run in the interpreter, on the CPU, even with a
# GPU: chapter 9's fp8 type (tl.float8e4nv) does not compile below sm_89 ("type fp8e4nv not supported in this
# architecture", Triton 3.6 and 3.9), so there its correctness is checked as without a GPU, and its speed is not
# gradable (grader.harness.feasibility).
INTERPRETED_BELOW: dict[int, tuple[int, int]] = {9: (8, 9)}


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def interpreted_phrase() -> str:
    """"chapters 5 and 6 and exercises 7b and 8b": the words the README and `ladder doctor` both use."""
    whole = [str(ch) for ch, which in INTERPRETED.items() if which is None]
    parts = [e for which in INTERPRETED.values() if which for e in which]
    said = []
    if whole:
        said.append(f"chapter{'s' if len(whole) > 1 else ''} {_joined(whole)}")
    if parts:
        said.append(f"exercise{'s' if len(parts) > 1 else ''} {_joined(parts)}")
    return " and ".join(said)


WHAT_STILL_WORKS = (
    "What still works without a GPU: reading every chapter; the napkin-math, prediction and decision exercises "
    "and chapter 4's tensor-core check (graded); compile checks of your CUDA kernels through NVRTC "
    "(`ladder compile NOTEBOOK`); `ladder doctor`; the grader's own tests (`pytest`); and "
    f"{interpreted_phrase()}, whose Triton kernels run on the CPU through Triton's interpreter at small sizes, "
    "correctness checked in full. CUDA C kernels (chapters 1-4 and exercise 7a) and every speed check need an "
    "NVIDIA GPU.")


def interpreted_here(chapter: int | None, capability: tuple[int, int] | None) -> bool:
    """Whether `chapter`'s Triton kernels run in the interpreter on a GPU of `capability` (None: no GPU)."""
    if capability is None:
        return True
    below = INTERPRETED_BELOW.get(chapter or 0)
    return below is not None and tuple(capability) < below
