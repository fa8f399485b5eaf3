"""``pinbench doctor`` through the Python API: what this machine gives pinbench
(``pinbench.doctor``), for the CLI and the demo."""

from __future__ import annotations

from collections.abc import Sequence

from pinbench.doctor.examine import RunsBlocked, blocking, refuse_blocked
from pinbench.doctor.findings import Finding

__all__ = ["Finding", "RunsBlocked", "blocking", "examine", "refuse_blocked"]


def examine(only: Sequence[str] = ()) -> list[Finding]:
    """This machine's findings, of every group or of ``only``'s (``doctor.examine.checks``)."""
    from pinbench.doctor.examine import examine as found

    return found(only=only)
