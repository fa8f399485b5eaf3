"""Every screen prints a figure in digits, never as an exponent where the field writes it out:
a comparison showed ``1.175e+04`` samples/s beside ``4,114`` in one row (Python's ``{:,.4g}``
switches to an exponent at ``10**4``). One rule (``metric_names.fmt_sig``: four significant
digits, whole from 10,000 up) for every place that writes a figure with four significant
digits; each place is a row of ``PLACES``, fed the same values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pinbench.metric_names import fmt_sig

BIG = 11_750.3
"""A throughput that ``{:,.4g}`` printed as ``1.175e+04``."""


def _report_cell(value: float) -> str:
    from pinbench.reports.view import fmt

    return fmt(value, "samples/s")[0]


def _report_ms(value: float) -> str:
    from pinbench.reports.view import fmt

    return fmt(value * 1e6, "ns")[0]  # a latency of ``value`` ms, recorded in ns


def _runs_show_row(value: float) -> str:
    from pinbench.run_metrics import metric_rows

    run = {
        "metrics": {"framework_throughput_sps": value},
        "units": {"framework_throughput_sps": "samples/s"},
    }
    ((_, shown),) = metric_rows(run)
    return shown.removesuffix(" samples/s")


def _task_metric(value: float) -> str:
    from pinbench.tasks.base import Metric

    return Metric("loss", "loss", unit="value").show(value)


def _energy(value: float) -> str:
    from pinbench.energy.show import energy_and_cost

    rows = dict(energy_and_cost({"energy_j": value, "details": {"energy": {"counters": ["c"]}}}))
    return rows["energy"].removesuffix(" J (c)")


def _sample_row(value: float) -> str:
    from pinbench.run_samples import sample_rows

    found = sample_rows({"samples": [{"score": value}]})
    assert found is not None
    return found.rows[0][0]


def _transform(value: float) -> str:
    from pinbench.reports.transforms import transform_row

    return transform_row({"comparison": {"valid": True}, "time_s": value}).time_s


def _cli_compare(value: float, capsys: pytest.CaptureFixture[str]) -> str:
    from pinbench.cli.run_view import print_comparison
    from pinbench.run_metrics import COMPARED

    info = {"id": "a" * 36, **dict.fromkeys(COMPARED, "x")}
    print_comparison({"infos": [info], "differs": [], "metrics": {"m": [value]}}, as_json=False)
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("m "))
    return line.split()[-1]


def _study(value: float) -> dict[str, Any]:
    """A study's matrix on two systems whose figures on the second are ``value``: its p90 in
    ms (so ``value`` times the first's 1 ms: the across-systems ratio), its throughput."""
    cells = []
    for system, p90_ms in (("one", 1.0), ("two", value)):
        for scenario in ("SingleStream", "Offline"):
            cells.append(
                {
                    "key": f"m|{system}|{scenario}", "model": "m", "framework": "f@*",
                    "family": "m", "dataset": "d@1", "scenario": scenario,
                    "scenario_name": scenario, "mode": "performance", "system": system,
                    "batch_size": 1, "state": "done", "status": "succeeded",
                    "run": f"{system}-{scenario}", "lockfile": "0" * 64, "reason": None,
                    "framework_resolved": "f@1.0.0", "latency_p50_ns": p90_ms * 1e6,
                    "latency_p90_ns": p90_ms * 1e6, "throughput_sps": value,
                    "loadgen_valid_bool": 1.0,
                }
            )  # fmt: skip
        cells.append(cells[-2] | {"key": f"m|{system}|accuracy", "scenario": "accuracy",
                                  "mode": "accuracy", "accuracy": 0.5, "accuracy_metric": "top1",
                                  "task": "classification"})  # fmt: skip
    systems = [{"name": s, "threads": 1, "cpus": None} for s in ("one", "two")]
    head = {"name": "s", "description": "", "digest": "0" * 64, "source": "s.yaml"}
    return head | {"systems": systems, "cells": cells}


def _study_page(value: float, section: str) -> str:
    from pinbench.studies.report import study_html

    page = study_html(_study(value))
    start = page.index(f'<section id="{section}">')
    return page[start : page.index("</section>", start)]


def _found(pattern: str, text: str) -> str:
    import re

    match = re.search(pattern, text, flags=re.S)
    assert match is not None, text
    return match.group(1)


def _study_show_cell(value: float) -> str:
    from pinbench.cli.study import _figure

    (cell,) = [c for c in _study(value)["cells"] if c["key"] == "m|two|Offline"]
    return _figure(cell, []).removesuffix("/s")


def _study_show_ratio(value: float, capsys: pytest.CaptureFixture[str]) -> str:
    from pinbench.cli.study import print_matrix

    capsys.readouterr()
    print_matrix(_study(value))
    return _found(r"│ base\s+│ (\S+)x ", capsys.readouterr().out)


def _study_report_cell(value: float) -> str:
    row = _found(r"<td>two</td><td>done</td>\s*<td>(p90 [^<]*)</td>", _study_page(value, "cells"))
    p90 = _found(r"p90 (.*) ms, ", row)
    assert _found(r", (.*)/s", row) == p90  # its throughput is ``value`` too
    return p90


def _study_report_pareto(value: float) -> str:
    return _found(r"<td>two</td>.*?top1 0.5000</td><td class=\"num\">([^<]*)</td>",
                  _study_page(value, "pareto"))  # fmt: skip


def _study_report_ratio(value: float) -> str:
    return _found(
        r">base</td><td class=\"num\">([^<]*)x</td>", _study_page(value, "across-systems")
    )


def _study_plot_tooltip(value: float) -> str:
    import json

    spec = _found(
        r'class="chart-spec" data-chart="streams">(.*?)</script>', _study_page(value, "plots")
    )
    rows = json.loads(spec)["data"]["values"]
    ((shown,),) = [[r["shown_throughput"]] for r in rows if r["system"] == "two"]
    return str(shown).removesuffix("/s")


def _distributed_row(value: float) -> str:
    from pinbench.reports.data import RunData
    from pinbench.reports.distributed import distributed_row

    run = RunData({"id": "r", "metrics": {"throughput_sps_per_worker": value}}, None)
    return distributed_row(run, {}).samples_per_s_per_worker


def _operators_roof(value: float) -> str:
    from pinbench.reports.operators import Roof, roof_caption

    roof = Roof("s", value * 1e9, "a", 1e9, "b")
    return _found(r"peak (\S+) GFLOP/s", roof_caption({"s": roof}, [], name_systems=False))


def _operators_median(value: float) -> str:
    from pinbench.reports.operators import latency_text

    return latency_text(value * 1e6).removesuffix(" ms") if value >= 1 else fmt_sig(value)


PLACES: list[tuple[str, Callable[..., str]]] = [
    ("a report's metric cell", _report_cell),
    ("a report's latency cell (ms)", _report_ms),
    ("runs show's other figures", _runs_show_row),
    ("a task's value metric", _task_metric),
    ("energy", _energy),
    ("a run's per-sample rows", _sample_row),
    ("a transformation's time", _transform),
    ("runs compare in the terminal", _cli_compare),
    ("study show's cell", _study_show_cell),
    ("study show's across-systems ratio", _study_show_ratio),
    ("a study report's cell", _study_report_cell),
    ("a study report's Pareto front", _study_report_pareto),
    ("a study report's across-systems ratio", _study_report_ratio),
    ("a study plot's tooltip", _study_plot_tooltip),
    ("a distributed run's samples/s per worker", _distributed_row),
    ("an operator roof's peak", _operators_roof),
    ("an operator's median latency (ms)", _operators_median),
]
WITH_CAPSYS = (_cli_compare, _study_show_ratio)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(BIG, "11,750"), (9_999.6, "10,000"), (0.5571, "0.5571"), (123.456, "123.5")],
)
@pytest.mark.parametrize(("place", "write"), PLACES, ids=[p for p, _ in PLACES])
def test_a_figure_is_written_in_digits_everywhere(
    place: str,
    write: Callable[..., Any],
    value: float,
    shown: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = (value, capsys) if write in WITH_CAPSYS else (value,)
    assert write(*args) == shown == fmt_sig(value), place


def test_fmt_sig_is_four_significant_digits_below_ten_thousand() -> None:
    assert [fmt_sig(v) for v in (0.986666, 1234.56, 10_000.4, 1.2e-05, -45_678.9)] == [
        "0.9867",
        "1,235",
        "10,000",
        "1.2e-05",
        "-45,679",
    ]
    assert fmt_sig(1e300) == "1e+300"  # a value gone wrong stays one short cell
