"""Which recorded runs a listing asks for: filters on the run's indexed columns and a page
that starts after a run (keyset paging: the page is the runs older than that one, so a page
costs the same at the millionth run as at the first).

Every value is checked where it is parsed (``RunFilter.parse``): a listing's words come from a
command line, a query string or a web form, and an unknown status, an unreadable date or a
name longer than a name can be is refused naming the field, never matched against nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.registry.lockfile import Lockfile

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled", "interrupted")
FIELDS = ("model", "framework", "status", "system", "since", "until")
_NAME_LEN = 200  # artifacts.name is String(200); runs.model / runs.framework the same
_VERSION_LEN = 100
_SYSTEM = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")  # systems.name, String(63)


class BadRunFilter(UserError):
    """A listing's filter that cannot match what it says."""

    def __init__(self, *, field: str, value: str, reason: str) -> None:
        super().__init__(f"runs filter {field}={value[:80]!r}: {reason}")
        self.field = field
        self.value = value[:80]
        self.reason = reason


@dataclass(frozen=True, slots=True)
class NameFilter:
    """``NAME`` (every version) or ``NAME@VERSION`` (that one)."""

    name: str
    version: str | None

    @classmethod
    def parse(cls, field: str, text: str) -> NameFilter:
        name, at, version = text.partition("@")
        if not name or len(name) > _NAME_LEN:
            raise BadRunFilter(
                field=field, value=text, reason=f"a name of 1 to {_NAME_LEN} characters"
            )
        if at and (not version or len(version) > _VERSION_LEN):
            raise BadRunFilter(
                field=field,
                value=text,
                reason=f"NAME@VERSION with a version of 1 to {_VERSION_LEN} characters",
            )
        return cls(name, version or None)

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What a run list keeps; ``None`` keeps every value. ``since`` and ``until`` bound when a
    run started (``since`` included, ``until`` excluded), as timezone-aware datetimes."""

    model: NameFilter | None = None
    framework: NameFilter | None = None
    status: str | None = None
    system: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def parse(cls, words: Mapping[str, str | None]) -> RunFilter:
        """A filter from words as a user gives them (``model=vision/x@1.0.0``, ``status=failed``,
        ``since=2026-11-01``); an unknown key, status or date is refused."""
        unknown = sorted(set(words) - set(FIELDS))
        if unknown:
            raise BadRunFilter(
                field=unknown[0], value="", reason=f"not a filter; the filters: {', '.join(FIELDS)}"
            )
        given = {k: v for k, v in words.items() if v is not None and v != ""}
        status = given.get("status")
        if status is not None and status not in STATUSES:
            raise BadRunFilter(field="status", value=status, reason=f"one of {', '.join(STATUSES)}")
        system = given.get("system")
        if system is not None and not _SYSTEM.fullmatch(system):
            raise BadRunFilter(
                field="system", value=system, reason="a system's name (lowercase DNS label)"
            )
        since = _when("since", given.get("since"))
        until = _when("until", given.get("until"))
        if since is not None and until is not None and until <= since:
            raise BadRunFilter(
                field="until", value=given["until"], reason="must be later than since"
            )
        return cls(
            model=NameFilter.parse("model", given["model"]) if "model" in given else None,
            framework=(
                NameFilter.parse("framework", given["framework"]) if "framework" in given else None
            ),
            status=status,
            system=system,
            since=since,
            until=until,
        )

    def words(self) -> dict[str, str]:
        """The filter as ``parse`` reads it back (a query string's parameters)."""
        out: dict[str, str] = {}
        for key in FIELDS:
            value = getattr(self, key)
            if value is None:
                continue
            out[key] = value.isoformat() if isinstance(value, datetime) else str(value)
        return out


def _when(field: str, text: str | None) -> datetime | None:
    """An ISO 8601 date or date and time, in UTC (the zone the runs' times are kept in); one
    without a zone is UTC."""
    if text is None:
        return None
    if len(text) > 40:
        raise BadRunFilter(field=field, value=text, reason="an ISO 8601 date or date and time")
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise BadRunFilter(
            field=field, value=text, reason="an ISO 8601 date or date and time (2026-11-25)"
        ) from None
    return value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)


def listing_columns(lock: Lockfile) -> dict[str, str | None]:
    """The run row's filter columns, from the lockfile it runs: the model and framework (name
    and version), None where the lockfile has none (an operator run has no model)."""
    body = lock.body
    model, env = body.model, body.environment
    return {
        "model": model.name if model else None,
        "model_version": model.version if model else None,
        "framework": env.framework if env else None,
        "framework_version": env.version if env else None,
    }
