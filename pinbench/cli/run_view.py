"""How a run record is printed: its metrics by its task's labels, its predictions, and runs
side by side (``run``, ``runs show``, ``runs compare``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

if TYPE_CHECKING:
    from rich.table import Table

    from pinbench.run_figures import LatencyRow


def print_run(info: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from pinbench.run_figures import figures
    from pinbench.run_metrics import distributed_label

    out = _out()
    out.print(Text(f"run {info['id']}  {info['status']}", style="bold"))
    training = (info.get("details") or {}).get("training")
    if info.get("operator"):
        out.print(f"operator {info['operator']} on {info['framework']}")
    elif isinstance(training, dict):
        reached = training.get("reached_epoch")
        scheme = distributed_label(info)
        out.print(
            f"training {info['model']} on {info['framework']}, {info['dataset']}"
            + (f", distributed: {scheme}" if scheme else "")
            + ": "
            + (f"target reached at epoch {reached}" if reached else "target not reached")
        )
    else:
        out.print(
            f"{info['model']} on {info['framework']}, {info['dataset']}, "
            f"{info['scenario']} {info['mode']}, batch {info['batch_size']}"
        )
    shown = figures(info)
    latencies = latency_table(shown.latencies, invalid=bool(shown.invalid))
    if latencies is not None:
        out.print(latencies)
    table = Table("metric", "value", box=None)
    for label, value in shown.rows:
        table.add_row(label, value)
    out.print(table)
    for reason in shown.invalid:
        out.print(Text(f"  INVALID because {reason}", style="yellow"))
    if shown.busy:
        out.print(Text(f"  BUSY: {shown.busy}; rerun on a quiet machine", style="yellow"))
    for said in sandbox_said(info):
        out.print(Text(f"  {said}", style="yellow"))

    predictions = _predictions_table(info.get("details"))
    if predictions is not None:
        out.print(predictions)
    if info.get("trace", "none") != "none":
        out.print(
            f"traced at level {info['trace']}: latencies include the profilers' overhead; "
            f"`pinbench runs trace {info['id'][:8]}` shows the trace"
        )


def latency_table(rows: list[LatencyRow], *, invalid: bool = False) -> Table | None:
    """``figures``' latencies: LoadGen's beside the framework call's, a row per percentile;
    titled INVALID for a run LoadGen called so."""
    from rich.table import Table

    from pinbench.run_figures import INVALID

    if not rows:
        return None
    title = f"{INVALID}: LoadGen's verdict, these figures are not a result" if invalid else None
    table = Table("latency", "LoadGen", "framework call", box=None, title=title)
    for row in rows:
        table.add_row(row.label, row.loadgen, row.framework)
    return table


SHOWN_PREDICTIONS = 10


def _predictions_table(details: dict[str, Any] | None) -> Table | None:
    """The first per-sample rows of an accuracy run, as its task recorded them
    (``run_samples``: e.g. file, true class, top-1, score); a wrong one marked x."""
    from rich.table import Table

    from pinbench.run_samples import sample_rows

    found = sample_rows(details, limit=SHOWN_PREDICTIONS)
    if found is None:
        return None
    recorded = len((details or {}).get("samples") or [])
    marked = any(r is not None for r in found.right)
    table = Table(
        *found.header,
        *([""] if marked else []),
        box=None,
        title=f"first {len(found.rows)} predictions (of {recorded} recorded)",
    )
    for cells, right in zip(found.rows, found.right, strict=True):
        table.add_row(*cells, *(["x" if right is False else ""] if marked else []))
    return table


def print_comparison(data: dict[str, Any], *, as_json: bool) -> None:
    from rich.table import Table

    from pinbench.metric_names import fmt_sig
    from pinbench.run_metrics import COMPARED

    infos, differs = data.pop("infos"), data["differs"]
    if as_json:
        _print_json(data)
        return
    from pinbench.run_figures import marks

    heads = [" ".join([i["id"][:8], *marks(i)]) for i in infos]
    table = Table("", *heads, box=None)
    for k in COMPARED:
        table.add_row(k + (" *" if k in differs else ""), *[str(i[k]) for i in infos])
    for m, values in data["metrics"].items():
        table.add_row(m, *["" if v is None else fmt_sig(v) for v in values])
    out = _out()
    out.print(table)
    if differs:
        out.print(f"* differs between the runs: {', '.join(differs)}")


def sandbox_said(info: dict[str, Any]) -> list[str]:
    """What ``runs show`` says of a run marked ``UNSANDBOXED`` or ``+code``."""
    from pinbench.run_figures import CODE, UNSANDBOXED

    said = []
    if info.get("unsandboxed_bool") == 1.0:
        said.append(
            f"{UNSANDBOXED}: code or the model's own operations ran outside the sandbox "
            "(--sandbox none), with its user's rights: its figures are its own word"
        )
    if info.get("code_bool") == 1.0:
        said.append(f"{CODE}: code its user allowed ran beside the model (details.code_sha256)")
    return said
