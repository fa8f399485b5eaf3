"""A model's processing code made callable: its verified bytes compiled and executed as a
module of its own (the only place its import-time code runs), the named function taken from
it, and the versions of the libraries it imports read from its source (not from running it).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import platform
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinbench.errors import UserError
from pinbench.processing.local_modules import LocalModuleRefused
from pinbench.registry.processing_code import Code


class CodeFailed(UserError):
    """A model's processing code could not be loaded, or raised: names the code and where."""

    def __init__(self, *, role: str, where: str, reason: str) -> None:
        super().__init__(f"{role} ({where}) {reason}")
        self.role = role
        self.where = where
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Loaded:
    """One role's function, with what a run records of it."""

    role: str
    where: str
    """``proc.py:prepare`` (``<inline>:prepare`` for inline code)."""
    sha256: str
    """The sha256 of the source bytes executed (the file's, or the inline code's UTF-8)."""
    function: Callable[..., Any]
    filename: str
    """The name its frames carry (the file's artifact path, or ``<inline preprocess>``)."""
    libraries: dict[str, str] = field(default_factory=dict)

    def call(self, *args: Any, sample: str | None = None) -> Any:
        """The function's answer; whatever it raises becomes ``CodeFailed`` (``failure``)."""
        try:
            return self.function(*args)
        except LocalModuleRefused:  # a module it imports, refused naming it
            raise
        except Exception as exc:  # the publisher's code: any exception is its failure
            raise self.failure(exc, sample) from None

    def failure(self, exc: Exception, sample: str | None) -> CodeFailed:
        """``exc`` raised by the function, as an error naming the code, the sample (when
        given) and the code's own line."""
        on = f" on sample {sample}" if sample is not None else ""
        line = _line_in(exc, self.filename)
        at = f" ({self.filename} line {line})" if line is not None else ""
        return CodeFailed(
            role=self.role,
            where=self.where,
            reason=f"failed{on}: {type(exc).__name__}: {exc}{at}{missing(exc)}",
        )

    def record(self) -> dict[str, Any]:
        """What the run records of it: where it is, its sha256, the libraries it imports."""
        return {"code": self.where, "sha256": self.sha256, "libraries": self.libraries}


def _line_in(exc: BaseException, filename: str) -> int | None:
    """The line of the last frame in the code itself, where the exception passed."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            found = tb.tb_lineno
        tb = tb.tb_next
    return found


def load(
    roles: Mapping[str, Code],
    files: Mapping[str, Path],
    pinned: Mapping[str, str],
    *,
    local: frozenset[str] = frozenset(),
) -> dict[str, Loaded]:
    """Each role's function, from bytes checked against ``pinned`` (the lockfile's sha256 of
    each model file): a file named by two roles is executed once, as one module. ``local``:
    the top-level names of the code's own modules (``local_modules``), not libraries."""
    modules: dict[tuple[str, str], tuple[types.ModuleType, str, str, dict[str, str]]] = {}
    out = {}
    for role, code in roles.items():
        source, filename = _source(role, code, files, pinned)
        digest = hashlib.sha256(source).hexdigest()
        key = (filename, digest)
        if key not in modules:
            module = _execute(role, code, source, filename, files)
            modules[key] = (module, filename, digest, libraries(source, local))
        module, filename, digest, libs = modules[key]
        function = getattr(module, code.function, None)
        if not callable(function):
            raise CodeFailed(
                role=role,
                where=code.where,
                reason=f"defines no function {code.function!r} at its top level",
            )
        out[role] = Loaded(role, code.where, digest, function, filename, libs)
    return out


def _source(
    role: str, code: Code, files: Mapping[str, Path], pinned: Mapping[str, str]
) -> tuple[bytes, str]:
    if code.code is not None:
        return code.code.encode("utf-8"), f"<inline {role}>"
    assert code.file is not None
    path = files.get(code.file)
    if path is None or code.file not in pinned:
        raise CodeFailed(role=role, where=code.where, reason="is not among the model's files")
    source = path.read_bytes()
    actual = hashlib.sha256(source).hexdigest()
    if actual != pinned[code.file]:  # verified before the run; read again here, and executed
        raise CodeFailed(  # from these very bytes
            role=role,
            where=code.where,
            reason=f"is sha256 {actual[:12]}, the lockfile pins {pinned[code.file][:12]}",
        )
    return source, code.file


def _execute(
    role: str, code: Code, source: bytes, filename: str, files: Mapping[str, Path]
) -> types.ModuleType:
    module = types.ModuleType(f"pinbench_{role}_code")
    module.__file__ = str(files[code.file]) if code.file is not None else filename
    try:
        compiled = compile(source, filename, "exec")
    except (SyntaxError, ValueError) as exc:
        raise CodeFailed(role=role, where=code.where, reason=f"does not compile: {exc}") from None
    try:
        exec(compiled, module.__dict__)  # the publisher's code: the run's consent was checked
    except LocalModuleRefused:  # a module it imports, refused naming it
        raise
    except Exception as exc:
        line = _line_in(exc, filename)
        at = f" ({filename} line {line})" if line is not None else ""
        raise CodeFailed(
            role=role,
            where=code.where,
            reason=f"failed as it was loaded: {type(exc).__name__}: {exc}{at}{missing(exc)}",
        ) from None
    return module


def missing(exc: Exception) -> str:
    """Where to declare the module a ``ModuleNotFoundError`` names (``model_requirements``)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return ""
    from pinbench.registry.model_requirements import WHERE

    return f"; the run's environment lacks {exc.name.split('.')[0]!r}: {WHERE}"


def libraries(source: bytes, local: frozenset[str] = frozenset()) -> dict[str, str]:
    """The distributions the source's imports come from, with their versions, read from its
    import statements (``{"numpy": "2.1.3", "scikit-learn": "1.6.1"}``): Python's own modules
    left out (the run records Python's version), numpy always in (the contract's arrays are
    its), a module no installed distribution provides under its own name as ``"not
    installed"``; the code's own modules (``local``) left out too."""
    from importlib import metadata

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        tree = ast.Module(body=[], type_ignores=[])
    names = {"numpy"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    names -= set(sys.stdlib_module_names) | local
    provided = _distributions() if names - {"numpy"} else {"numpy": ["numpy"]}
    if names - set(provided):  # installed since it was read? (an unknown name is read again)
        _distributions.cache_clear()
        provided = _distributions()
    out = {}
    for name in sorted(names):
        dists = provided.get(name)
        if not dists:
            out[name] = "not installed"
        for dist in dists or ():
            out[dist] = metadata.version(dist)
    return dict(sorted(out.items()))


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """``importlib.metadata.packages_distributions()``, read once per process while every name
    asked for is in it: it reads every installed distribution's metadata (seconds in a large
    environment, each time); a name it lacks makes ``libraries`` read it again (a distribution
    installed since, which the code may import)."""
    from importlib import metadata

    return metadata.packages_distributions()


def python_version() -> str:
    return platform.python_version()
