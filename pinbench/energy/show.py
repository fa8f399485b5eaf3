"""A run's energy and cost as rows for people (``pinbench runs show``, reports)."""

from __future__ import annotations

from typing import Any

from pinbench.energy.price import recorded_price, usd_per_1000
from pinbench.metric_names import fmt_sig


def cost_per_1000(info: dict[str, Any]) -> float | None:
    """Dollars per 1,000 inferences of a run (``history.show_run``, metrics flat or nested
    under ``metrics``): its recorded price over its measured throughput; None unless both."""
    nested = info.get("metrics")
    metrics: dict[str, Any] = nested if isinstance(nested, dict) else info
    price = recorded_price((info.get("details") or {}).get("cost"))
    return usd_per_1000(price, metrics.get("throughput_sps"))


def usd(value: float) -> str:
    """Dollars for people: cents and below as decimals, tiny amounts in 3 significant digits."""
    return f"${value:,.6f}" if value >= 0.001 else f"${value:.3g}"


def energy_and_cost(info: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows: energy and J/inference (or why there is none), the declared
    price and $ per 1,000 inferences; none for a run that recorded neither."""
    details = info.get("details") or {}
    rows = []
    energy = details.get("energy") or {}
    if "energy_j" in info:
        counters = ", ".join(str(c) for c in energy.get("counters") or [])
        rows.append(("energy", f"{fmt_sig(info['energy_j'])} J ({counters})"))
    if "energy_per_inference_j" in info:
        rows.append(("energy per inference", f"{fmt_sig(info['energy_per_inference_j'])} J"))
    elif isinstance(energy.get("reason"), str):
        rows.append(("energy", energy["reason"]))
    price = recorded_price(details.get("cost"))
    if price is not None:
        rows.append(("price", f"${fmt_sig(price.usd_per_hour)}/hour ({price.source})"))
        cost = cost_per_1000(info)
        if cost is not None:
            rows.append(("$ per 1,000 inferences", usd(cost)))
    return rows
