"""A ``torch-state-dict`` builder's local modules, importable while it runs, from its pinned files
only: ``from models import Net`` (a package's own ``models.py``), ``from pkg.models import Net``
(``pkg/__init__.py`` beside it) and relative imports inside such a package, as ``pinbench
manifest model`` lists them (``authoring.builder_modules``).

A module is a ``.py`` file among the model's files under the builder's folder, named by its path
there (``pkg/models.py`` is ``pkg.models``, ``pkg/__init__.py`` the package ``pkg``; every part a
Python name). No folder goes on Python's import path: a finder first in ``sys.meta_path`` gives
each such name the bytes of its file, read and checked against the lockfile's sha256 as they are
executed, and nothing else on disk can answer for it. Refused, naming the module
(``LocalModuleRefused``):

- a module whose top-level name is also Python's own, already imported, or installed in the
  run's environment (``json.py``, ``torch/__init__.py``): which one the builder meant cannot be
  told, and the one Python would take is not the manifest's;
- a module under a local package that is not among the files (``pkg.helpers`` without
  ``pkg/helpers.py``), and a top-level one that is neither among them nor installed;
- a module whose file among them is not Python source (``models.so``, ``models.pyc``): only
  source is executed from a model's files.

An import the builder's code makes at its top level is checked before any of it runs. The
modules exist for the builder's load and call alone: afterwards the finder is gone and every
module it made is taken out of ``sys.modules``, so nothing of one run is imported by the next
(an import inside ``forward`` that reaches a local module is not served after the build).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pinbench.errors import UserError
from pinbench.registry.processing_code import Code

NOT_SOURCE = (*importlib.machinery.EXTENSION_SUFFIXES, *importlib.machinery.BYTECODE_SUFFIXES)
"""What Python would import a module from besides its source: never from a model's files."""


class LocalModuleRefused(UserError, ModuleNotFoundError):
    """A module the builder imports that pinbench will not give it from the model's files.

    A ``ModuleNotFoundError`` (its ``name`` the module's), so that ``from pkg import Name`` of a
    name the package lacks reads as Python's own error and an optional import guarded by
    ``except ImportError`` stays optional."""

    def __init__(self, *, module: str, reason: str) -> None:
        super().__init__(f"the builder's module {module!r} {reason}")
        self.module = module
        self.reason = reason
        self.name = module


@dataclass(frozen=True, slots=True)
class Local:
    """One local module: its name, its file among the model's files, whether it is a package."""

    name: str
    path: str
    package: bool


def local_modules(files: Sequence[str], builder: str) -> tuple[dict[str, Local], dict[str, str]]:
    """The modules ``files`` (artifact paths) give a builder at artifact path ``builder``: the
    ``.py`` files under its folder whose every part is a Python name, by module name; and the
    files there that Python could import but are not source, by the module name they would
    give."""
    folder = PurePosixPath(builder).parent
    sources: dict[str, Local] = {}
    others: dict[str, str] = {}
    for path in sorted(files):
        pure = PurePosixPath(path)
        if folder not in pure.parents:
            continue
        parts = list(pure.relative_to(folder).parts)
        stem, suffix = _split(parts[-1])
        package = stem == "__init__"
        names = parts[:-1] if package else [*parts[:-1], stem]
        if not names or not all(n.isidentifier() for n in names):
            continue
        if suffix == ".py":
            sources[".".join(names)] = Local(".".join(names), path, package)
        elif suffix in NOT_SOURCE:
            others.setdefault(".".join(names), path)
    return sources, others


def _split(name: str) -> tuple[str, str]:
    """``models.cpython-311-x86_64-linux-gnu.so`` as (``models``, its suffix)."""
    for suffix in (".py", *NOT_SOURCE):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix
    return name, ""


def shadowing(name: str) -> str | None:
    """What else answers for top-level module ``name`` in this interpreter, or None: Python's
    own module, one already imported, one an installed finder would give. Asked before the
    builder's finder is in place; nothing is imported."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return f"Python's own module {name}"
    if name in sys.modules:
        return f"the module {name} this run has already imported"
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        try:
            spec = find(name, None) if find is not None else None
        except (ImportError, ValueError):  # a finder that cannot tell: it answers for nothing
            spec = None
        if spec is not None:
            where = f" ({spec.origin})" if spec.origin else ""
            return f"the module {name} installed in the run's environment{where}"
    return None


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Gives the builder's local modules from their pinned bytes, and refuses what it must."""

    def __init__(
        self,
        sources: Mapping[str, Local],
        others: Mapping[str, str],
        files: Mapping[str, Path],
        pinned: Mapping[str, str],
        shadowed: Mapping[str, str],
    ) -> None:
        self.sources = sources
        self.others = others
        self.files = files
        self.pinned = pinned
        self.shadowed = shadowed
        self.tops = {n.partition(".")[0] for n in (*sources, *others)}
        self.made: list[str] = []

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top not in self.tops:
            return None
        if top in self.shadowed:
            # not the model's to give: what its code imports by this name was refused before
            # anything ran; an import a library makes (torch's own lazy ones) gets its own
            return None
        if fullname in self.others and fullname not in self.sources:
            raise LocalModuleRefused(
                module=fullname,
                reason=f"is {self.others[fullname]} among the model's files, which is not "
                "Python source: only .py files are imported from a model's files",
            )
        local = self.sources.get(fullname)
        if local is None and any(n.startswith(fullname + ".") for n in self.sources):
            local = Local(fullname, "", True)  # a folder without __init__.py: a namespace
        if local is None:
            expected = fullname.replace(".", "/")
            raise LocalModuleRefused(
                module=fullname,
                reason=f"is imported, but neither {expected}.py nor {expected}/__init__.py "
                "beside the builder is among the model's files: list it under `files` with "
                "its sha256 (pinbench manifest model lists the modules a builder imports)",
            )
        spec = importlib.util.spec_from_loader(
            fullname, self, origin=local.path, is_package=local.package
        )
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # Python's default module

    def exec_module(self, module: types.ModuleType) -> None:
        local = self.sources.get(module.__name__)
        if local is None:
            return  # a namespace package: nothing of its own to run
        source = verified(local, self.files, self.pinned)
        module.__file__ = str(self.files[local.path])  # where its bytes are, as the builder's
        self.made.append(module.__name__)
        exec(compile(source, local.path, "exec"), module.__dict__)  # consented code, pinned

    def refuse_missing(self, name: str) -> None:
        """Called by ``_Last`` for a top-level ``name`` nothing could find."""
        raise LocalModuleRefused(
            module=name,
            reason=f"is neither among the model's files ({name}.py or {name}/__init__.py "
            "beside the builder, listed under `files` with its sha256: pinbench manifest model "
            "lists the modules a builder imports) nor installed in the run's environment",
        )


class _Last(importlib.abc.MetaPathFinder):
    """Last in ``sys.meta_path``: a top-level module no finder gave is refused naming it."""

    def __init__(self, first: _Finder) -> None:
        self.first = first

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if path is None and "." not in fullname:
            self.first.refuse_missing(fullname)
        return None


def verified(local: Local, files: Mapping[str, Path], pinned: Mapping[str, str]) -> bytes:
    """The bytes of ``local``'s file, refused unless they are the ones the lockfile pins."""
    blob = files.get(local.path)
    if blob is None or local.path not in pinned:
        raise LocalModuleRefused(module=local.name, reason="is not among the model's files")
    source = blob.read_bytes()
    actual = hashlib.sha256(source).hexdigest()
    if actual != pinned[local.path]:
        raise LocalModuleRefused(
            module=local.name,
            reason=f"({local.path}) is sha256 {actual[:12]}, the lockfile pins "
            f"{pinned[local.path][:12]}",
        )
    return source


def top_imports(source: bytes) -> set[str]:
    """The top-level names of the absolute imports in ``source`` (read, not run)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()  # the builder's own compile names it
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


@contextmanager
def builder_modules(
    builder: Code, files: Mapping[str, Path], pinned: Mapping[str, str]
) -> Iterator[frozenset[str]]:
    """While ``builder`` is loaded and called: its local modules importable from their pinned
    bytes only (the names of the top-level ones given, which are not libraries of the
    environment); after, the finders gone and every module they made out of ``sys.modules``. A
    module its code imports by name that another answers for is refused before anything runs."""
    where = builder.file if builder.file is not None else "<inline>"
    sources, others = local_modules([p for p in files if p in pinned], where)
    tops = {n.partition(".")[0] for n in (*sources, *others)}
    shadowed = {n: f"shadows {why}: rename it" for n in tops if (why := shadowing(n))}
    imported = top_imports(_source(builder, files, pinned))
    read: set[str] = set()
    while todo := [m for n, m in sources.items() if n.partition(".")[0] in imported - read]:
        read |= {m.name.partition(".")[0] for m in todo}
        for local in todo:  # the modules its imports reach, read in turn (not those it reads)
            imported |= top_imports(verified(local, files, pinned))
    for name in sorted(imported & set(shadowed)):
        raise LocalModuleRefused(module=name, reason=shadowed[name])
    first = _Finder(sources, others, files, pinned, shadowed)
    last = _Last(first)
    sys.meta_path.insert(0, first)
    sys.meta_path.append(last)
    try:
        yield frozenset(tops)
    finally:
        for finder in (first, last):
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
        for name in list(sys.modules):
            spec = getattr(sys.modules.get(name), "__spec__", None)
            if name in first.made or getattr(spec, "loader", None) is first:
                del sys.modules[name]


def _source(builder: Code, files: Mapping[str, Path], pinned: Mapping[str, str]) -> bytes:
    """The builder's source, read for its imports; empty where its file is not the pinned one
    (``loading.load`` refuses it, naming both digests)."""
    if builder.code is not None:
        return builder.code.encode("utf-8")
    assert builder.file is not None
    try:
        return verified(Local("", builder.file, False), files, pinned)
    except LocalModuleRefused:
        return b""
