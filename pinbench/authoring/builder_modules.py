"""The local modules a ``torch-state-dict`` builder needs beside it, found by reading its source
(``ast``), never by running it: ``pinbench manifest model weights.pt builder.py`` lists each with
its sha256, as every file of the artifact.

A module is local when its file is under the builder's folder:

- one it imports: ``import models``, ``from models import Net``, ``from pkg.models import Net``
  (``pkg/__init__.py`` too, which Python imports first), ``from pkg import models``, and
  relative imports inside a package (``from .layers import Block``); each is ``NAME.py`` or
  ``NAME/__init__.py``;
- one it names by its path, a string ending in ``.py`` (``files["torchcrepe/model.py"]``: a
  builder that executes its module's bytes, as docs/processing.md's does).

The modules found are read the same way in turn. Anything else (``torch``, a package installed
in the run's environment) is not a file of the artifact and is left to the environment.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from pinbench.authoring.errors import NotAModel

MAX_MODULES = 256
"""The most local modules followed from one builder (a package's own files, some dozens)."""
MAX_SOURCE_BYTES = 8 << 20
"""The largest module read (8 MiB: a model's own code is kilobytes); a larger one is refused."""


class TooManyModules(NotAModel):
    """A builder whose local modules are more than ``MAX_MODULES``: refused, never listed in
    part (a run would then refuse the module left out)."""


def local_modules(builder: Path) -> tuple[list[Path], list[Path]]:
    """The local modules ``builder`` needs, transitively, in the order found (the builder
    itself left out), and of them those found by an import statement (not by a path)."""
    builder = _absolute(builder)
    root = builder.parent
    found: dict[Path, bool] = {}
    queue = [builder]
    while queue:
        source = queue.pop(0)
        for path, imported in _needs(source, root):
            if path != builder and path not in found:
                if len(found) == MAX_MODULES:
                    raise TooManyModules(
                        path=str(builder),
                        reason=f"its builder needs more than {MAX_MODULES} local modules",
                    )
                found[path] = imported
                queue.append(path)
            elif imported and path in found:
                found[path] = True
    return list(found), [p for p, imported in found.items() if imported]


def _needs(source: Path, root: Path) -> list[tuple[Path, bool]]:
    """Each local file ``source`` imports (True) or names by its path (False)."""
    try:
        if source.stat().st_size > MAX_SOURCE_BYTES:
            raise NotAModel(path=str(source), reason=f"over {MAX_SOURCE_BYTES >> 20} MiB of source")
        tree = ast.parse(source.read_bytes(), filename=source.name)
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        # the builder's own parse names the error; a module's is the run's (a source nested
        # deeper than the parser goes, "1" + "+1" * 200000, is one of these)
        return []
    out: list[tuple[Path, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out += [(p, True) for p in _module(root, root, alias.name)]
        elif isinstance(node, ast.ImportFrom):
            base = _relative_base(source, root, node.level)
            if base is None:
                continue
            module = node.module or ""
            out += [(p, True) for p in _module(root, base, module)]
            for alias in node.names:  # ``from pkg import models``: a module, or a name
                name = f"{module}.{alias.name}" if module else alias.name
                out += [(p, True) for p in _module(root, base, name, parents=False)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = _named(root, node.value)
            if named is not None:
                out.append((named, False))
    return out


def _relative_base(source: Path, root: Path, level: int) -> Path | None:
    """The folder a ``from`` import is relative to: the builder's folder for an absolute one,
    ``source``'s package (and ``level - 1`` above it) for a relative one; None outside
    ``root``."""
    if level == 0:
        return root
    base = source.parent
    for _ in range(level - 1):
        base = base.parent
    return base if _inside(root, base) else None


def _module(root: Path, base: Path, dotted: str, *, parents: bool = True) -> list[Path]:
    """The files under ``root`` that importing ``dotted`` from ``base`` loads: each package's
    ``__init__.py`` on the way (with ``parents``) and the module's own file."""
    if not dotted:
        init = base / "__init__.py"
        return [init] if init.is_file() else []
    parts = dotted.split(".")
    out = []
    if parents:
        for i in range(1, len(parts)):
            init = base.joinpath(*parts[:i], "__init__.py")
            if init.is_file():
                out.append(init)
    module = base.joinpath(*parts[:-1], parts[-1] + ".py")
    for candidate in (module, base.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            out.append(candidate)
            break
    return [_absolute(p) for p in out if _inside(root, p)]


def _named(root: Path, text: str) -> Path | None:
    """The ``.py`` file under ``root`` a string names by its relative path, if any."""
    if not text.endswith(".py") or "\n" in text or text.startswith("/") or len(text) > 512:
        return None
    path = root / text
    return _absolute(path) if path.is_file() and _inside(root, path) else None


def _absolute(path: Path) -> Path:
    """``path`` absolute and normalised (``..`` folded), its links kept: the manifest lists a
    file by the path it was found at (``listing.Relative`` refuses a link out of the folder)."""
    return Path(os.path.normpath(os.path.abspath(path)))


def _inside(root: Path, path: Path) -> bool:
    """Whether ``path``, its links followed, is under ``root``'s real folder."""
    real, top = path.resolve(), root.resolve()
    return real == top or top in real.parents
