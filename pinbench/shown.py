"""How a figure is shown to people, in one place for every printout (the tasks' own among
them, which sit below the names of metrics)."""

from __future__ import annotations


def fmt_sig(value: float, digits: int = 4) -> str:
    """A figure for people in ``digits`` significant digits with thousands separators, and
    never as an exponent from ``10**digits`` up: ``fmt_sig(11_750.3)`` is ``11,750`` where
    ``{:,.4g}`` printed ``1.175e+04`` beside a ``4,114`` in the same row of a comparison.
    Below that, ``g``'s own: ``0.557``, ``1.2e-05`` for a tiny value; from ``1e15`` up (no
    measured figure: a value gone wrong) the exponent again, not a cell of hundreds of digits."""
    shown = f"{value:,.{digits}g}"
    return f"{value:,.0f}" if "e+" in shown and abs(value) < 1e15 else shown
