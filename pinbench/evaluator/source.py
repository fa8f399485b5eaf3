"""The evaluator's own code, as it is shipped into isolated environments.

The venv runner and the framework images run the same pinbench source as the host: its Python
files are copied (never the host's site-packages), and their digest goes into each run's
provenance, so a run names the exact evaluator code that measured it.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
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
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=root))
    try:  # a folder of its own: two runs staging at once must not write into each other's
        for path in _files():
            target = tmp / "pinbench" / path.relative_to(PACKAGE)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        _compile(tmp / "pinbench", dest / "pinbench")
        tmp.chmod(0o755)
        tmp.rename(dest)
    except OSError:
        if not (dest / "pinbench" / "__init__.py").exists():
            raise
    finally:  # another run staged it first, or this one failed
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _compile(folder: Path, named: Path) -> None:
    """Bytecode beside the staged files, as the framework images have it (``compileall`` in
    ``images.build.INSTALL``), each named by where the folder will be: a worker that may not write
    ``.pyc`` files (``PYTHONDONTWRITEBYTECODE``, a read-only cache) would otherwise compile
    every module it imports at each start (issue 49: 0.2 s of CPU per start, 1.3 s once)."""
    import compileall

    if not compileall.compile_dir(str(folder), ddir=str(named), quiet=1):
        raise OSError(f"compiling the staged evaluator in {folder} failed")
