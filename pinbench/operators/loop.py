"""The timed loop's settings (samples, warm-up calls, threads) and their limits; no NumPy,
so a request naming an operator is checked without it."""

from __future__ import annotations

from pinbench.errors import UserError


class BadLoop(UserError):
    def __init__(self, *, field: str, value: int, limit: str) -> None:
        super().__init__(f"{field} = {value} is not allowed: {limit}")
        self.field = field
        self.value = value
        self.limit = limit


MAX_SAMPLES = 1_000_000


def check_loop(samples: int, warmup: int, threads: int | None = None) -> None:
    if threads is not None and not 1 <= threads <= 1024:
        raise BadLoop(field="threads", value=threads, limit="between 1 and 1024, or unset")
    if not 1 <= samples <= MAX_SAMPLES:
        raise BadLoop(field="samples", value=samples, limit=f"between 1 and {MAX_SAMPLES:,}")
    if not 0 <= warmup <= MAX_SAMPLES:
        raise BadLoop(field="warmup", value=warmup, limit=f"between 0 and {MAX_SAMPLES:,}")
