"""Every check of ``pinbench doctor``, in the order it prints them, and what blocks runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pinbench.doctor.findings import Finding, Place
from pinbench.errors import UserError

Check = Callable[[Place], list[Finding]]


def checks() -> dict[str, Check]:
    """Each group of checks by its name (``--only``), in the order they print."""
    from pinbench.doctor import engines, sandbox, storage, timing

    return {
        "sandbox": sandbox.check,
        "storage": storage.check,
        "engines": engines.check,
        "timing": timing.check,
    }


def examine(place: Place | None = None, only: Sequence[str] = ()) -> list[Finding]:
    """The findings of every group (or of ``only``'s), in order."""
    place = Place() if place is None else place
    groups = checks()
    return [f for name, run in groups.items() if not only or name in only for f in run(place)]


def blocking(findings: Sequence[Finding]) -> list[Finding]:
    """The findings that keep runs from being made here."""
    return [f for f in findings if f.status == "fail"]


class RunsBlocked(UserError):
    """Runs cannot be made here: ``checks`` names the findings that block them, ``fixes`` what
    to do about each."""

    def __init__(self, *, checks: list[str], fixes: list[str]) -> None:
        said = "; ".join(f"{c}: {f}" for c, f in zip(checks, fixes, strict=True))
        super().__init__(
            f"runs cannot be made here until this is fixed ({said}); `pinbench doctor` tells "
            "everything this machine lacks"
        )
        self.checks = checks
        self.fixes = fixes


def refuse_blocked(findings: Sequence[Finding]) -> None:
    """``RunsBlocked`` naming the blocking findings, if any."""
    blocked = blocking(findings)
    if blocked:
        raise RunsBlocked(checks=[f.check for f in blocked], fixes=[f.fix for f in blocked])
