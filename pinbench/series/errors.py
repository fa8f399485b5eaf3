"""The series package's errors: a threshold or a series that cannot be judged."""

from __future__ import annotations

from pinbench.bounds import GATE_CANDIDATES
from pinbench.errors import UserError


class SeriesError(UserError):
    """Base of the series package's errors."""


class InvalidThreshold(SeriesError):
    """A threshold's field is out of bounds or makes no sense with its test: names the
    metric, the field, the value and what it must be."""

    def __init__(self, *, metric: str, field: str, value: str, reason: str) -> None:
        super().__init__(f"threshold for {metric!r}: {field} = {value}: {reason}")
        self.metric = metric
        self.field = field
        self.value = value
        self.reason = reason


class InvalidSeries(SeriesError):
    """A series' values cannot be judged (not finite, a mean of zero to be relative to):
    names the position and the reason."""

    def __init__(self, *, index: int, reason: str) -> None:
        super().__init__(f"series value at position {index}: {reason}")
        self.index = index
        self.reason = reason


class InvalidCandidates(SeriesError):
    """A gate given no candidate run, or more runs of it than ``bounds.GATE_CANDIDATES``
    allows: names the count, the bound and the option that set it."""

    def __init__(self, *, count: int, field: str = "candidate runs") -> None:
        super().__init__(
            f"{GATE_CANDIDATES.refusal(field, count)}: a gate judges at most "
            f"{GATE_CANDIDATES.high} runs of one candidate together"
        )
        self.count = count
        self.field = field
