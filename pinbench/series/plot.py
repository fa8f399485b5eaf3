"""A metric over a series as an inline SVG line chart (no script: the web UI's CSP allows
inline SVG; every text is escaped here). Pure: values in, markup out."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT, PAD = 640, 220, 48
LEFT = 80
"""Room for the axis's numbers (``axis``: ``12,345,678`` fits)."""


def axis(value: float) -> str:
    """A number on the axis: whole (no exponent) from 1,000 up, else 4 significant digits."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def series_svg(
    metric: str,
    values: Sequence[float | None],
    labels: Sequence[str],
    *,
    flagged: Sequence[int] = (),
    bound: float | None = None,
) -> str:
    """``values`` (None: the run did not record it) left to right, one point per run, the
    ``flagged`` points (alerts) in red, and a dashed line at ``bound`` (a threshold's limit)."""
    known = [v for v in values if v is not None]
    if not known:
        return ""
    lo, hi = (
        min([*known, *([bound] if bound is not None else [])]),
        max([*known, *([bound] if bound is not None else [])]),
    )
    least, most = lo, hi  # the axis names what was measured, not the padding around it
    span = (hi - lo) or abs(hi) or 1.0
    lo, hi = lo - 0.05 * span, hi + 0.05 * span
    n = len(values)

    def x(i: int) -> float:
        return LEFT + (WIDTH - LEFT - PAD) * (i / (n - 1) if n > 1 else 0.5)

    def y(v: float) -> float:
        return HEIGHT - PAD + (v - lo) / (hi - lo) * (2 * PAD - HEIGHT)

    points = [(x(i), y(v), i) for i, v in enumerate(values) if v is not None]
    path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in points)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" class="series-plot" '
        f'aria-label="{escape(metric)} over the series">',
        f"<title>{escape(metric)} over the series</title>",
        f'<line x1="{LEFT}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'stroke="#888"/>',
        f'<line x1="{LEFT}" y1="{PAD}" x2="{LEFT}" y2="{HEIGHT - PAD}" stroke="#888"/>',
        f'<text x="{LEFT - 4}" y="{y(most):.1f}" text-anchor="end" font-size="10">'
        f"{axis(most)}</text>",
        f'<text x="{LEFT - 4}" y="{y(least):.1f}" text-anchor="end" font-size="10">'
        f"{axis(least)}</text>",
        f'<polyline points="{path}" fill="none" stroke="#1f6feb" stroke-width="1.5"/>',
    ]
    if bound is not None:
        parts.append(
            f'<line x1="{LEFT}" y1="{y(bound):.1f}" x2="{WIDTH - PAD}" y2="{y(bound):.1f}" '
            'stroke="#d97706" stroke-dasharray="4 3" class="bound"/>'
        )
    for px, py, i in points:
        colour = "#cf222e" if i in flagged else "#1f6feb"
        parts.append(
            f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}">'
            f"<title>{escape(labels[i])}: {values[i]:.6g}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)
