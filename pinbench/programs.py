"""The programs pinbench starts to make a trust decision, found where the system keeps them,
never by PATH (decision 308).

bubblewrap is the sandbox every run of code starts in; a ``bwrap`` earlier on PATH that added
a bind of the home was recorded as a sandbox. So each program below is looked for only in the
system's own folders (``SYSTEM_DIRS``, and a program's own system folders such as Debian's
``/usr/lib/postgresql/*/bin``), and taken only where it and every folder above it belong to
root and no one else may write them (``untrusted_because``): a world-writable folder counts
only with its sticky bit, and then only an entry root owns. A program found elsewhere (on PATH)
is named in the refusal, never run. What ships with pinbench's own Python environment (``uv``,
``ray``: beside ``sys.executable``) is as trusted as pinbench's own code and is taken from there.

``identity`` is what a run records of a program it used: its path, sha256 and version.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pinbench.errors import UserError

SYSTEM_DIRS: tuple[str, ...] = ("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin")
"""Where a system's packages put programs (``/usr/local/bin``: its administrator's)."""

PROGRAMS: dict[str, str] = {
    "bwrap": "the sandbox every run of code starts in",
    "debootstrap": "the base image's root filesystem",
    "tar": "the base image's root filesystem, packed",
    "pg_dump": "a PostgreSQL registry's backup",
    "pg_restore": "a PostgreSQL registry's restore",
    "git": "a dvc:// source's commit",
    "nvidia-smi": "the GPUs a run records",
    "docker": "the Docker Engine's version (pinbench doctor)",
    "python3.X": "the interpreter a venv of another Python line is built with",
    "gcc": "the C compiler a source-built wheel is built with (environments.source_builds)",
    "g++": "the C++ compiler a source-built wheel is built with (environments.source_builds)",
}
"""Every program pinbench starts by name, and what it decides with it (``tests/test_programs.py``
holds that none is found by PATH)."""

POSTGRESQL_DIRS = ("/usr/lib/postgresql/*/bin",)
"""Debian's PostgreSQL programs, a folder a major version (``system_program``'s ``own``)."""


class ProgramUnavailable(UserError):
    """A program pinbench needs is not where the system keeps it, or is not trusted there."""

    def __init__(self, *, program: str, reason: str) -> None:
        super().__init__(f"{program}: {reason}")
        self.program = program
        self.reason = reason


def untrusted_because(path: Path) -> str | None:
    """Why ``path`` (a program) may have been put there or changed by someone other than
    root; None when it and every folder above it belong to root and only root may write them
    (a sticky world-writable folder, as ``/tmp``, holding an entry root owns, is root's)."""
    try:
        real = Path(os.path.realpath(path))
        info = os.stat(real)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    # child first: a folder is reached after the entry in it, so an entry of a sticky folder
    # has been found root's before the folder is; a link's own place is checked too
    chain = list(dict.fromkeys([path, *path.parents, real, *real.parents]))
    for item in chain:
        info = os.lstat(item)
        if info.st_uid != 0:
            return f"{item} belongs to uid {info.st_uid}, not root"
        if stat.S_ISLNK(info.st_mode):
            continue  # a link's own mode means nothing; where it points is in the chain
        writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
        if writable and not sticky:
            return f"{item} may be written by others than root (mode {info.st_mode & 0o7777:o})"
    return None


def _candidates(name: str, own: tuple[str, ...]) -> list[Path]:
    import glob

    found: list[Path] = []
    for pattern in own:
        found += sorted((Path(p) for p in glob.glob(pattern)), key=_newest_first)
    return [*(folder / name for folder in found), *(Path(d) / name for d in SYSTEM_DIRS)]


def _newest_first(folder: Path) -> tuple[int, tuple[int, ...]]:
    """Numbered versions first, the highest first (``15`` before ``13``); others after."""
    parts = folder.parts[-2].split(".")
    if not all(p.isdigit() for p in parts):
        return (1, ())
    return (0, tuple(-int(p) for p in parts))


def system_program(name: str, own: tuple[str, ...] = ()) -> Path:
    """``name`` where the system keeps it (``own``: the program's own system folders, glob
    patterns, the newest first; then ``SYSTEM_DIRS``), trusted (``untrusted_because``), as its
    real path (every link resolved, so that what is run is what was checked); else
    ``ProgramUnavailable`` naming what was found and why it is not used."""
    if "/" in name or name in ("", ".", ".."):
        raise ProgramUnavailable(program=repr(name), reason="is not a program's name")
    refused: list[str] = []
    for candidate in _candidates(name, own):
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        why = untrusted_because(candidate)
        if why is None:  # the file itself, links resolved: a link cannot be swapped after
            return Path(os.path.realpath(candidate))
        refused.append(f"{candidate}: {why}")
    places = ", ".join([*own, *SYSTEM_DIRS])
    reason = f"not installed in the system's folders ({places})"
    if refused:
        reason = f"not trusted where it is installed ({'; '.join(refused)})"
    on_path = _on_path(name)
    if on_path is not None and all(str(on_path) not in r for r in refused):
        reason += f"; the one on PATH at {on_path} is not used (pinbench starts only the system's)"
    raise ProgramUnavailable(program=name, reason=reason)


def _on_path(name: str) -> Path | None:
    import shutil

    found = shutil.which(name)
    return Path(found) if found is not None else None


def beside_python(name: str) -> Path:
    """A program installed with pinbench's own Python environment (``uv``, ``ray``): in the
    folder of this interpreter's scripts, as trusted as pinbench's code; never from PATH."""
    import sys
    import sysconfig

    for folder in dict.fromkeys([sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]):
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ProgramUnavailable(
        program=name,
        reason=f"not installed in pinbench's Python environment ({sys.prefix}): "
        f"`{sys.executable} -m pip install {name}`",
    )


@dataclass(frozen=True, slots=True)
class Identity:
    """What a run records of a program it used."""

    path: str
    sha256: str
    version: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "sha256": self.sha256, "version": self.version}


def clean_environment(*keep: str) -> dict[str, str]:
    """The environment a system program is started with: the system's PATH, a neutral locale,
    and only the variables in ``keep`` that are set (``TAR_OPTIONS``, ``LD_PRELOAD``,
    ``GIT_SSH_COMMAND`` or a PATH of the caller's would otherwise choose what it does)."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    env |= {name: os.environ[name] for name in keep if name in os.environ}
    return env


def identity(path: Path) -> Identity:
    """``path``'s sha256 and ``--version`` (its first line), computed once a process for each
    state of the file (its device, inode, size and change time)."""
    info = os.stat(path)
    return _identity(
        str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns
    )


@functools.lru_cache(maxsize=32)
def _identity(
    path: str, device: int, inode: int, size: int, mtime_ns: int, ctime_ns: int
) -> Identity:
    import hashlib
    import subprocess

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=10,
            env=clean_environment(),
        )
        said = (done.stdout or done.stderr).strip().splitlines()
        version = said[0] if said else f"unknown (exit {done.returncode})"
    except (OSError, subprocess.TimeoutExpired) as exc:
        version = f"unknown ({exc})"
    return Identity(path, digest.hexdigest(), version)
