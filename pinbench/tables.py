"""Rich tables shared by the CLI and the demo."""

from __future__ import annotations

from rich.table import Table

from pinbench.evaluator.parity import Parity


def parity_table(rows: list[Parity]) -> Table:
    """The first row is the reference."""
    table = Table(
        "run", "framework", "model", "max abs diff", "max rel diff", "same top-1", box=None
    )
    for i, r in enumerate(rows):
        table.add_row(
            r.run[:8] + (" (ref)" if i == 0 else ""),
            r.framework,
            r.model,
            f"{r.max_abs_diff:.3g}",
            f"{r.max_rel_diff:.3g}",
            f"{r.top1_agree}/{r.samples}",
        )
    return table
