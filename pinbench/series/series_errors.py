"""Errors of finding a series and its alerts: each names what is wrong; the CLI and the API
map them to an exit code and an HTTP status (``pinbench.api.problems``)."""

from __future__ import annotations

from collections.abc import Sequence

from pinbench.errors import InvalidValue, UserError


class BadSeriesName(InvalidValue):
    """A series name (or a leading part of one) does not parse."""

    what = "series name"


class SeriesNotFound(UserError):
    def __init__(self, *, name: str) -> None:
        super().__init__(
            f"no series {name!r}: no succeeded, untraced model run measures it "
            "(see `pinbench series list`)"
        )
        self.name = name


class AmbiguousSeries(UserError):
    def __init__(self, *, name: str, matches: Sequence[str]) -> None:
        shown = ", ".join(matches[:10]) + (" ..." if len(matches) > 10 else "")
        super().__init__(
            f"series {name!r} is ambiguous: {len(matches)} series start with it ({shown}); "
            "give more of the name"
        )
        self.name = name
        self.matches = list(matches)


class AlertNotFound(UserError):
    def __init__(self, *, alert_id: int) -> None:
        super().__init__(f"no alert {alert_id}")
        self.alert_id = alert_id
