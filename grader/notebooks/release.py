"""`ladder release`: regenerate course/ from solutions/ through nbgrader, or check it is current.

course/ is generated, never edited by hand. Release first brings the figures in solutions/ up to
date (grader.notebooks.figures), then has nbgrader release every assignment into a temporary folder,
puts the Colab setup cell (grader.notebooks.colab) first in every released notebook there, and only
then touches course/:

- `--check` compares that fresh release with course/, file by file. Jupyter's checkpoint folders
  and caches (course.IGNORED) are not part of a release and are left out of the comparison.
- A plain release never destroys work. It records what it wrote, a SHA-256 per file, in
  course/.release-manifest.json. A file in course/ that no longer matches that record was changed
  after the release (an answer pasted into a released notebook, JupyterLab's autosave), and the
  release stops and names it. `--force` releases anyway and first copies each such file into
  .ladder-backups/TIME/. Files a release never wrote (notes, checkpoint folders) are left alone.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import colab, figures
from ..errors import LadderError
from ..harness.quiet import captured_stderr
from .course import IGNORED, RELEASE_DIR, SOURCE_DIR, assignments, configure_course, nbgrader_env, repo_root

MANIFEST = ".release-manifest.json"
BACKUPS = ".ladder-backups"


def _api(root: Path, release_dir: Path, db: Path):
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    nbgrader_env()
    c = Config()
    configure_course(c, root=str(root))
    c.CourseDirectory.release_directory = str(release_dir)
    c.CourseDirectory.db_url = f"sqlite:///{db}"
    return NbGraderAPI(config=c)


def generate(root: Path, release_dir: Path, names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, captured_stderr() as err:
        api = _api(root, release_dir, Path(tmp) / "gradebook.db")
        for name in names:
            result = api.generate_assignment(name, force=True, create=True)
            if not result["success"]:
                raise LadderError(f"nbgrader could not release {name}:\n{result.get('error') or result.get('log')}"
                                  f"\n{err.summary()}")
    # Added to the released copy only: solutions/ stays nbgrader's source, and the same template
    # gives the same bytes on every release, so `--check` and the manifest see no change.
    for name in names:
        for notebook in sorted((release_dir / name).glob("*.ipynb")):
            colab.add_setup_cell(notebook)


# ------------------------------------------------------------------------------------- files

def _ignored(rel: Path) -> bool:
    return any(fnmatch.fnmatch(part, pattern) for part in rel.parts for pattern in IGNORED)


def released_files(folder: Path) -> dict[str, Path]:
    """Files under `folder` that a release is about, by path relative to it (checkpoints and caches
    left out)."""
    if not folder.is_dir():
        return {}
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not _ignored(rel) and rel.as_posix() != MANIFEST:
            out[rel.as_posix()] = p
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(course: Path) -> dict[str, str]:
    try:
        return json.loads((course / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _write_manifest(course: Path, files: dict[str, str]) -> None:
    text = json.dumps({"about": "SHA-256 of every file `ladder release` wrote into course/. A file that no "
                                "longer matches was changed after the release, and a release will not "
                                "overwrite it without --force.", "files": dict(sorted(files.items()))},
                      indent=1) + "\n"
    (course / MANIFEST).write_text(text)


# ------------------------------------------------------------------------------------- figures

def _refresh_figures(root: Path, names: list[str], check: bool) -> list[str]:
    """Embed assets/figures into the solutions notebooks (or, with check, list what is stale)."""
    import nbformat

    found = []
    for name in names:
        for path in sorted((root / SOURCE_DIR / name).glob("*.ipynb")):
            nb = nbformat.read(str(path), as_version=4)
            label = f"{SOURCE_DIR}/{name}/{path.name}"
            if check:
                found += figures.stale(nb, root, label)
            elif figures.embed(nb, root, label):
                path.write_text(nbformat.writes(nb) + "\n")
    return found


# ------------------------------------------------------------------------------------- release

@dataclass
class ReleaseReport:
    released: list[str] = field(default_factory=list)    # course/... paths written or removed
    backed_up: list[str] = field(default_factory=list)   # course/... paths copied to the backup folder
    backup_dir: Path | None = None


def differences(root: Path, fresh: Path, names: list[str]) -> list[str]:
    """How course/ differs from the fresh release in `fresh`, one line per file."""
    course = root / RELEASE_DIR
    diffs = []
    manifest = read_manifest(course)
    for name in names:
        new, old = released_files(fresh / name), released_files(course / name)
        for rel in sorted(set(new) - set(old)):
            diffs.append(f"missing from {RELEASE_DIR}/: {RELEASE_DIR}/{name}/{rel}")
        for rel in sorted(set(old) - set(new)):
            diffs.append(f"in {RELEASE_DIR}/ but not produced by a release: {RELEASE_DIR}/{name}/{rel}")
        for rel in sorted(set(new) & set(old)):
            if new[rel].read_bytes() != old[rel].read_bytes():
                diffs.append(f"differs from a fresh release: {RELEASE_DIR}/{name}/{rel}")
            elif manifest.get(f"{name}/{rel}") != sha256(new[rel]):
                diffs.append(f"not recorded in {RELEASE_DIR}/{MANIFEST}: {RELEASE_DIR}/{name}/{rel}")
    return diffs


def changed_since_release(root: Path, names: list[str], fresh: Path) -> list[str]:
    """course/ files a release would overwrite or remove that differ from what the last release wrote."""
    course = root / RELEASE_DIR
    manifest = read_manifest(course)
    changed = []
    for name in names:
        new = released_files(fresh / name)
        for rel, path in released_files(course / name).items():
            key = f"{name}/{rel}"
            if rel in new and new[rel].read_bytes() == path.read_bytes():
                continue  # the release writes exactly this: nothing to lose
            if key in manifest and manifest[key] == sha256(path):
                continue  # as the last release wrote it
            if key not in manifest and rel not in new:
                continue  # never written by a release, and a release will not touch it
            changed.append(f"{RELEASE_DIR}/{key}")
    return changed


def release(root: Path | None = None, names: list[str] | None = None, check: bool = False,
            force: bool = False) -> list[str] | ReleaseReport:
    """Release (or with check=True, compare). With check, returns the differences (empty when
    current); otherwise a ReleaseReport. Raises LadderError rather than overwrite changed files."""
    root = root or repo_root()
    known = assignments(root)
    names = names or known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise LadderError(f"no assignment {', '.join(unknown)} in {SOURCE_DIR}/ (there are: {', '.join(known)})")
    stale_figures = _refresh_figures(root, names, check)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "release"
        generate(root, fresh, names)
        if check:
            return [f"figure out of date (run `ladder release`): {s}" for s in stale_figures] \
                + differences(root, fresh, names)
        return _install(root, fresh, names, force)


def _install(root: Path, fresh: Path, names: list[str], force: bool) -> ReleaseReport:
    course = root / RELEASE_DIR
    report = ReleaseReport()
    changed = changed_since_release(root, names, fresh)
    if changed and not force:
        raise LadderError(
            "these files in course/ were changed after the last release, and releasing would overwrite them:\n"
            + "".join(f"  {c}\n" for c in changed)
            + "Learners work in their own copy (`ladder start` makes one in work/). To release anyway, run "
              "`ladder release --force`: it first copies each of these files into .ladder-backups/.")
    if changed:
        report.backup_dir = root / BACKUPS / time.strftime("%Y%m%d-%H%M%S")
        for c in changed:
            dest = report.backup_dir / c
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / c, dest)
            report.backed_up.append(c)
    manifest = read_manifest(course)
    for name in names:
        new = released_files(fresh / name)
        for rel, path in released_files(course / name).items():
            if rel not in new and f"{name}/{rel}" in manifest:
                path.unlink()  # written by an earlier release, no longer part of it
                report.released.append(f"{RELEASE_DIR}/{name}/{rel} (removed)")
        for key in [k for k in manifest if k.startswith(f"{name}/")]:
            del manifest[key]
        for rel, src in new.items():
            dest = course / name / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if not dest.is_file() or dest.read_bytes() != src.read_bytes():
                shutil.copyfile(src, dest)
                report.released.append(f"{RELEASE_DIR}/{name}/{rel}")
            manifest[f"{name}/{rel}"] = sha256(src)
    _write_manifest(course, manifest)
    return report


