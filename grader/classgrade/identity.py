"""What a recorded grade depends on, as content hashes: a student's submitted bytes, the assignment's
source folder, and the grader itself (its code, the pass bars in force and the settings that change a
verdict). `ladder grade` run again skips a student only when all three are what they were
(grader.classgrade.journal keeps them beside the grade)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .. import config

GRADER_DIR = Path(__file__).resolve().parents[1]
# Settings that change no verdict: where caches live, the bars (hashed as bytes, whatever their path), and how many
# checks run at once (grader.isolation.ahead): a class graded on more GPUs, or more CPUs, resumes where another run
# stopped.
_NOT_VERDICT = {"LADDER_CACHE_DIR", "LADDER_BARS", "LADDER_CHECKS_AT_ONCE"}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def folder_files(folder: Path, ignore=(".ipynb_checkpoints", "__pycache__")) -> dict[str, bytes]:
    """Every file under `folder` by its relative path, minus Jupyter's checkpoints and caches."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not any(part in ignore for part in path.relative_to(folder).parts):
            out[path.relative_to(folder).as_posix()] = path.read_bytes()
    return out


def files_sha256(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + sha256(files[name]).encode() + b"\0")
    return h.hexdigest()


def bars_bytes() -> bytes | None:
    """The pass-bar override in force (LADDER_BARS), if any: shipped to workers on other machines."""
    override = config.bars_override()
    return override.read_bytes() if override is not None and override.is_file() else None


def grader_sha256(bars: bytes | None) -> str:
    """The grader's code, its default bars, the override `bars`, and every LADDER_ setting that can
    change a verdict (time limits, isolation, the not-gradable policy)."""
    files = {p.relative_to(GRADER_DIR).as_posix(): p.read_bytes()
             for p in sorted(GRADER_DIR.rglob("*")) if p.is_file() and p.suffix in (".py", ".toml")}
    files["<LADDER_BARS>"] = bars or b""
    settings = sorted((k, os.environ.get(k, "")) for k in config.VARIABLES if k not in _NOT_VERDICT)
    files["<settings>"] = repr(settings).encode()
    return files_sha256(files)
