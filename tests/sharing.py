"""What the workers of one parallel run (pytest-xdist, ``make test``'s ``-n`` one more than
the cores, ``--dist loadgroup``) share, and what keeps a module's fixtures on one worker.

- ``run_folder``: a folder every worker of this run sees, and no other run: the controller's
  base temporary folder (each worker's own is a ``popen-gwN`` inside it). Without xdist, the
  session's base temporary folder.
- ``built_once``: a folder built there by the first worker that asks, under a file lock;
  the others wait for it and read it. For data the tests only read (the built catalogs).
- ``group_module_fixtures``: a test that uses a module- or class-scoped fixture (a server, a
  trained model, runs recorded once) is put in its module's ``xdist_group``, so that the
  fixture is built once, on one worker, as in a serial run, not once per worker that gets
  one of its tests. Tests already in a group keep theirs.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

SHARED = "shared"
"""The folder under ``run_folder`` that holds what is shared."""

GROUPED_SCOPES = frozenset({"module", "class", "package"})


def under_xdist() -> bool:
    """This process is a pytest-xdist worker."""
    return "PYTEST_XDIST_WORKER" in os.environ


def run_folder(factory: pytest.TempPathFactory) -> Path:
    """A folder of this run seen by every one of its workers: ``shared`` in the controller's
    base temporary folder under xdist, in the session's own otherwise."""
    base = factory.getbasetemp()
    root = (base.parent if under_xdist() else base) / SHARED
    root.mkdir(exist_ok=True)
    return root


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """``run_folder/name``, built by ``build(folder)`` once for the whole run: the first worker
    to ask builds it holding ``name.lock``; the others wait on that lock, then read what it
    built. A build that failed leaves no mark, so the next worker to ask builds it again (and
    fails the same way, as it would have on its own)."""
    from filelock import FileLock

    root = run_folder(factory)
    folder, done = root / name, root / f"{name}.done"
    asked = time.monotonic()
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed half-way
            folder.mkdir()
            build(folder)
            done.touch()
            _note(root, f"{name} built in {time.monotonic() - asked:.1f} s")
        elif time.monotonic() - asked >= WAIT_NOTED_S:
            _note(root, f"{name} waited for {time.monotonic() - asked:.1f} s")
    return folder


WAIT_NOTED_S = 1.0
NOTES = "builds.log"


def _note(root: Path, what: str) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with (root / NOTES).open("a") as log:
        log.write(f"{what} ({worker})\n")


def build_notes(factory: pytest.TempPathFactory) -> list[str]:
    """What ``built_once`` built and who waited for it (a worker idle while another builds),
    for the run's summary (issue 49)."""
    path = run_folder(factory) / NOTES
    return path.read_text().splitlines() if path.exists() else []


def module_group(item: pytest.Item) -> str | None:
    """The group a test belongs in: its module's path when it uses a module-, class- or
    package-scoped fixture and is in no ``xdist_group`` yet; else None."""
    if item.get_closest_marker("xdist_group") is not None:
        return None
    if not isinstance(item, pytest.Function):
        return None
    used = item._fixtureinfo.name2fixturedefs.values()
    if not any(defs and defs[-1].scope in GROUPED_SCOPES for defs in used):
        return None
    return item.nodeid.split("::", 1)[0]


def group_module_fixtures(items: list[pytest.Item]) -> None:
    """Put each test that uses a module-scoped fixture in its module's ``xdist_group``."""
    for item in items:
        group = module_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(name=group))
