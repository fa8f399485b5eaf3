"""The system's programs as tests arrange them (``pinbench.programs``): a folder only root
may write, standing in for the system's own (``SYSTEM_DIRS``); a program's fake in it or on
PATH; a command run where the system's bubblewrap is hidden (a mount namespace)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.services import unavailable

BWRAP = "/usr/bin/bwrap"


def system_folder(
    folder: Path, monkeypatch: pytest.MonkeyPatch, *, before_the_systems: bool = False
) -> Path:
    """``folder`` made root's (mode 755) and taken as the system's only program folder (or,
    ``before_the_systems``, as the first of the system's folders)."""
    from pinbench import programs

    if os.geteuid() != 0:
        unavailable("a folder only root may write needs root")
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    rest = programs.SYSTEM_DIRS if before_the_systems else ()
    monkeypatch.setattr(programs, "SYSTEM_DIRS", (str(folder), *rest))
    return folder


def fake(folder: Path, name: str, body: str) -> Path:
    """A shell script ``name`` in ``folder`` (mode 755) that runs ``body``."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def without_bwrap(argv: list[str]) -> list[str]:
    """``argv`` run in a mount namespace where the system's ``bwrap`` is ``/dev/null``."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        unavailable("hiding a program needs root and unshare")
    if not Path(BWRAP).exists():
        unavailable(f"bubblewrap is not installed at {BWRAP}")
    hide = f'mount --bind /dev/null {BWRAP} && exec "$@"'
    return ["unshare", "--mount", "sh", "-c", hide, "sh", *argv]
