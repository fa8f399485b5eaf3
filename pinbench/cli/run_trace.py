"""``pinbench runs trace RUN... [--chrome FILE]``: a traced run's cold start, phases and
operator table; several runs compared by category. The trace analysis is imported by the
command."""

from __future__ import annotations

from pathlib import Path

import click

from pinbench.cli.common import force_option, listed, registry
from pinbench.console import err as _err
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json


@click.command("trace")
@click.argument(
    "runs",
    type=str,
    nargs=-1,
    required=True,
    callback=listed,
    help="A traced run; several to compare their breakdowns.",
)
@click.option(
    "--top",
    "top",
    type=click.IntRange(min=1, max=None),
    default=15,
    help="Show the slowest N operators.",
)
@click.option(
    "--chrome",
    "chrome",
    type=click.Path(path_type=Path),
    help=("Write the (first) run's Chrome trace JSON here (Perfetto, chrome://tracing)."),
)
@force_option
@json_option
def runs_trace(
    runs: list[str],
    top: int = 15,
    chrome: Path | None = None,
    force: bool = False,
    as_json: bool = False,
) -> None:
    """A traced run's inspection: cold start, phases, and the per-layer/operator table.

    The table gives each layer or operator's count, total, mean and share of model time,
    slowest first. With several runs (e.g. the same model on ONNX Runtime and PyTorch) their
    operator time per prediction is compared by category.
    """
    import json

    from pinbench.sdk.files import destination, write
    from pinbench.tables import print_categories, print_trace
    from pinbench.trace.analysis import TraceView
    from pinbench.trace.analysis import compare as compare_traces

    dest = None if chrome is None else destination(chrome, option="--chrome", force=force)
    with registry() as reg:
        views = [TraceView(run.info, run.trace()) for run in (reg.run(r) for r in runs)]
    if dest is not None:
        write(dest, json.dumps(views[0].trace).encode())
    categories = compare_traces(views) if len(views) > 1 else []
    if as_json:
        _print_json(
            {
                "runs": [v.to_json(top) for v in views],
                "categories": [
                    {
                        "category": c.category,
                        "per_prediction_ns": c.per_prediction_ns,
                        "shares": c.shares,
                    }
                    for c in categories
                ],
            }
        )
        return
    out = _out()
    for view in views:
        print_trace(out, view, top)
    if categories:
        print_categories(out, views, categories)
    if chrome is not None:
        _err().print(f"wrote {chrome} (open it in https://ui.perfetto.dev or chrome://tracing)")
