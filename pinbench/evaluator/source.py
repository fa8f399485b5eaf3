"""The evaluator's own code, as it is shipped into isolated environments.

The venv runner and the framework images run the same pinbench source as the host: its Python
files are copied (never the host's site-packages), and their digest goes into each run's
provenance, so a run names the exact evaluator code that measured it.
"""

from __future__ import annotations

import hashlib
import shutil
from functools import lru_cache
from pathlib import Path

import pinbench

PACKAGE = Path(pinbench.__file__).resolve().parent


def _files() -> list[Path]:
    return sorted(
        p
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.suffix in {".py", ".typed"} and "__pycache__" not in p.parts
    )


@lru_cache(maxsize=1)
def evaluator_digest() -> str:
    """sha256 over the package's files (relative path and content), hex."""
    h = hashlib.sha256()
    for path in _files():
        rel = path.relative_to(PACKAGE).as_posix()
        h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def stage_evaluator(root: Path) -> Path:
    """Copy the package's files to ``root/<digest>/pinbench`` once; return the folder to put on
    ``PYTHONPATH``."""
    dest = root / evaluator_digest()[:32]
    if (dest / "pinbench" / "__init__.py").exists():
        return dest
    tmp = root / f".{dest.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for path in _files():
        target = tmp / "pinbench" / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    try:
        tmp.rename(dest)
    except OSError:  # another process staged it first
        shutil.rmtree(tmp, ignore_errors=True)
    return dest
