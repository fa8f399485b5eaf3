"""One finding of ``pinbench doctor`` and where the machine's facts are read from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Status = Literal["ok", "warn", "fail"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail")
"""``fail``: runs cannot be made until it is fixed; ``warn``: they can, but a figure or a
runner is affected; ``ok``: nothing to do."""


@dataclass(frozen=True, slots=True)
class Finding:
    """What one check found: ``check`` (its name), ``status``, ``detail`` (what it saw) and
    ``fix`` (what to do; empty when ``ok``)."""

    check: str
    status: Status
    detail: str
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"check": self.check, "status": self.status, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class Place:
    """Where the checks read the machine: ``proc`` and ``sys`` (``/proc``, ``/sys``), the
    environment, and the folders pinbench writes (its home, the environments' cache, the
    scratch). Tests give a place of their own."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    uid: int = field(default_factory=os.geteuid)

    def read(self, path: Path) -> str | None:
        """``path``'s text, stripped; None where it cannot be read."""
        try:
            return path.read_text().strip()
        except (OSError, UnicodeDecodeError):
            return None

    def home(self) -> Path:
        from pinbench.config import Settings

        return Settings.from_env(dict(self.environ)).home

    def cache(self) -> Path:
        """The runners' environments (``PINBENCH_CACHE``, read as ``runners.venv`` reads it)."""
        from pinbench.config import shared_cache

        return shared_cache(self.environ)

    def scratch(self) -> Path:
        """Where temporary files go (``TMPDIR``, else ``/tmp``)."""
        return Path(self.environ.get("TMPDIR") or "/tmp")
