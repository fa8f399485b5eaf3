"""The timed loop's settings (samples, warm-up calls, threads) and their limits; no NumPy,
so a request naming an operator is checked without it."""

from __future__ import annotations

from pinbench import bounds as b
from pinbench.errors import UserError


class BadLoop(UserError):
    def __init__(self, *, field: str, value: int, limit: str) -> None:
        super().__init__(f"{field} must be {limit}, got {value}")
        self.field = field
        self.value = value
        self.limit = limit


def check_loop(samples: int, warmup: int, threads: int | None = None) -> None:
    """The loop's numbers within ``pinbench.bounds`` (threads may be unset)."""
    for field, value, bound in (
        ("threads", threads, b.THREADS),
        ("samples", samples, b.OPERATOR_SAMPLES),
        ("warmup", warmup, b.OPERATOR_WARMUP),
    ):
        if value is not None and not bound.holds(value):
            raise BadLoop(field=field, value=value, limit=bound.text())
