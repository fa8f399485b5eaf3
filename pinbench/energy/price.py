"""A system's declared price in US dollars per hour, and what a run's throughput makes of it.

Declared, not measured: by ``pinbench agent start --price-per-hour`` for a cluster system,
``pinbench serve --price-per-hour`` for a server's own runs, ``PINBENCH_PRICE_PER_HOUR`` for
runs on this machine. A run records it with where it came from (``details["cost"]``); its cost
per 1,000 inferences is derived when shown, from the run's measured throughput.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinbench.errors import UserError

PRICE_ENV = "PINBENCH_PRICE_PER_HOUR"
SOURCE_ENV = "PINBENCH_PRICE_SOURCE"
"""Set beside ``PRICE_ENV`` by ``pinbench serve`` for its worker processes: where it came from."""
MAX_USD_PER_HOUR = 10_000.0
"""Above any machine's hourly price (the largest cloud instances cost ~$100/hour): a larger
value is a typo (cents, or a monthly price)."""


class BadPrice(UserError):
    def __init__(self, *, value: str, source: str, reason: str) -> None:
        super().__init__(
            f"{source} must be a price in US dollars per hour between 0 and "
            f"{MAX_USD_PER_HOUR:,.0f}, got {value!r}: {reason}"
        )
        self.value = value
        self.source = source
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Price:
    usd_per_hour: float
    source: str
    """Who declared it: ``PINBENCH_PRICE_PER_HOUR``, ``serve --price-per-hour``, ``agent start
    --price-per-hour (system NAME)``."""

    def to_json(self) -> dict[str, Any]:
        return {"usd_per_hour": self.usd_per_hour, "source": self.source}


def parse_price(value: str | float, source: str) -> Price:
    """``value`` as a price, refused (``BadPrice``, naming ``source``) unless a finite number
    of dollars per hour in [0, ``MAX_USD_PER_HOUR``]."""
    text = str(value)
    try:
        usd = float(value)
    except ValueError:
        raise BadPrice(value=text, source=source, reason="not a number") from None
    if not math.isfinite(usd):
        raise BadPrice(value=text, source=source, reason="not a finite number")
    if usd < 0:
        raise BadPrice(value=text, source=source, reason="a price is not negative")
    if usd > MAX_USD_PER_HOUR:
        raise BadPrice(value=text, source=source, reason="too large for a machine's hourly price")
    return Price(usd, source)


def price_from_env(environ: Mapping[str, str] | None = None) -> Price | None:
    """The price this process's runs record (``PINBENCH_PRICE_PER_HOUR``), or None."""
    env = os.environ if environ is None else environ
    text = env.get(PRICE_ENV, "").strip()
    if not text:
        return None
    return parse_price(text, env.get(SOURCE_ENV) or PRICE_ENV)


def recorded_price(value: object) -> Price | None:
    """A run's ``details["cost"]`` as a price, or None when absent or not of the shape
    ``Price.to_json`` writes within the bounds (an agent's results are checked, not trusted)."""
    if not isinstance(value, dict) or set(value) != {"usd_per_hour", "source"}:
        return None
    usd, source = value["usd_per_hour"], value["source"]
    if not isinstance(usd, int | float) or isinstance(usd, bool) or not isinstance(source, str):
        return None
    try:
        return parse_price(usd, source[:200])
    except BadPrice:
        return None


def usd_per_1000(price: Price | None, throughput_sps: float | None) -> float | None:
    """Dollars per 1,000 inferences at ``throughput_sps``; None unless both are known."""
    if price is None or throughput_sps is None or not throughput_sps > 0:
        return None
    return price.usd_per_hour / 3600.0 / throughput_sps * 1000.0
