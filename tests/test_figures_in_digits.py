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


PLACES: list[tuple[str, Callable[..., str]]] = [
    ("a report's metric cell", _report_cell),
    ("a report's latency cell (ms)", _report_ms),
    ("runs show's other figures", _runs_show_row),
    ("a task's value metric", _task_metric),
    ("energy", _energy),
    ("a run's per-sample rows", _sample_row),
    ("a transformation's time", _transform),
    ("runs compare in the terminal", _cli_compare),
]


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
    args = (value, capsys) if write is _cli_compare else (value,)
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
