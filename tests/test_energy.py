"""Energy counters (RAPL through powercap, NVML) read around the timed region, and a system's
declared price: the parser's table tests on a laid-out sysfs, the real files of this machine,
runs of the digits catalog that record energy (or why there is none) and their cost in
``runs show`` and reports."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pinbench import catalog as builtin
from pinbench.energy.meter import NO_COUNTER, Energy, EnergyMeter, NoEnergy
from pinbench.energy.price import (
    MAX_USD_PER_HOUR,
    PRICE_ENV,
    BadPrice,
    Price,
    parse_price,
    price_from_env,
    recorded_price,
    usd_per_1000,
)
from pinbench.energy.rapl import delta_uj, rapl_zones
from pinbench.energy.show import usd
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import _keep_cost, run_lockfile, unit_of
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.reports.data import gather
from pinbench.reports.render import html, markdown
from pinbench.worker import measure as measure_module
from pinbench.workspace import Workspace
from tests.helpers import Cli, in_process_cli, published_workspace

Layout = dict[str, dict[str, str | None]]
"""Zone folder -> file -> text (None: a folder where the file should be, so reading fails)."""


def _sysfs(root: Path, layout: Layout) -> Path:
    base = root / "class" / "powercap"
    base.mkdir(parents=True)
    for zone, files in layout.items():
        (base / zone).mkdir()
        for name, text in files.items():
            if text is None:
                (base / zone / name).mkdir()
            else:
                (base / zone / name).write_text(text + "\n")
    return root


def _package(
    energy: int, max_range: int | None = 1_000_000, name: str = "package-0"
) -> dict[str, str | None]:
    files: dict[str, str | None] = {"name": name, "energy_uj": str(energy)}
    if max_range is not None:
        files["max_energy_range_uj"] = str(max_range)
    return files


def _no_nvml() -> Any:
    raise OSError("libnvidia-ml.so.1: cannot open shared object file")


# layout, energy_uj written between start and stop, joules by counter (or a reason's words)
CASES: list[tuple[str, Layout, dict[str, int], dict[str, float] | str]] = [
    (
        "one package: the difference in microjoules",
        {"intel-rapl:0": _package(100)},
        {"intel-rapl:0": 2_500_100},
        {"rapl:intel-rapl:0:package-0": 2.5},
    ),
    (
        "two packages are both counted, each by its own name",
        {"intel-rapl:0": _package(0), "intel-rapl:1": _package(10, name="package-1")},
        {"intel-rapl:0": 1_000, "intel-rapl:1": 20},
        {"rapl:intel-rapl:0:package-0": 0.001, "rapl:intel-rapl:1:package-1": 0.00001},
    ),
    (
        "a counter that wrapped: after + range - before",
        {"intel-rapl:0": _package(999_000, max_range=1_000_000)},
        {"intel-rapl:0": 500},
        {"rapl:intel-rapl:0:package-0": 0.0015},
    ),
    (
        "subzones (core, dram) and the mmio view are parts of the package: not added",
        {
            "intel-rapl:0": _package(0),
            "intel-rapl:0:0": _package(0, name="core"),
            "intel-rapl:0:1": _package(0, name="dram"),
            "intel-rapl-mmio:0": _package(0),
        },
        {"intel-rapl:0": 3_000_000, "intel-rapl:0:0": 1_000_000, "intel-rapl-mmio:0": 5},
        {"rapl:intel-rapl:0:package-0": 3.0},
    ),
    (
        "AMD's packages under the same driver are read the same way",
        {"amd-rapl:0": _package(5)},
        {"amd-rapl:0": 1_000_005},
        {"rapl:amd-rapl:0:package-0": 1.0},
    ),
    (
        "a zone without max_energy_range_uj is not used (a wrap could not be told)",
        {"intel-rapl:0": _package(0, max_range=None)},
        {},
        "intel-rapl:0: no max_energy_range_uj",
    ),
    (
        "an unreadable energy_uj: that zone is named, none is left",
        {"intel-rapl:0": {"name": "package-0", "energy_uj": None, "max_energy_range_uj": "9"}},
        {},
        "intel-rapl:0: energy_uj unreadable",
    ),
    (
        "energy_uj that is not a number is unreadable too",
        {"intel-rapl:0": {"name": "package-0", "energy_uj": "n/a", "max_energy_range_uj": "9"}},
        {},
        "intel-rapl:0: energy_uj unreadable",
    ),
    (
        "powercap without any RAPL zone",
        {"dtpm": {"name": "dtpm"}},
        {},
        "no RAPL package zone",
    ),
]


@pytest.mark.parametrize(
    ("layout", "after", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rapl_counters_on_a_laid_out_sysfs(
    tmp_path: Path, layout: Layout, after: dict[str, int], expected: dict[str, float] | str
) -> None:
    root = _sysfs(tmp_path / "sys", layout)
    with EnergyMeter.open(root, nvml=_no_nvml) as meter:
        meter.start()
        for zone, value in after.items():
            (root / "class" / "powercap" / zone / "energy_uj").write_text(f"{value}\n")
        result = meter.stop()
    if isinstance(expected, str):
        assert isinstance(result, NoEnergy)
        assert result.reason.startswith(f"{NO_COUNTER} (")
        assert expected in result.reason
        assert "NVML not available" in result.reason
    else:
        assert isinstance(result, Energy)
        assert result.joules.keys() == expected.keys()
        for name, joules in expected.items():
            assert math.isclose(result.joules[name], joules, rel_tol=1e-12)


def test_no_powercap_at_all_says_so(tmp_path: Path) -> None:
    with EnergyMeter.open(tmp_path, nvml=_no_nvml) as meter:
        meter.start()
        result = meter.stop()
    assert isinstance(result, NoEnergy)
    assert f"no {tmp_path}/class/powercap" in result.reason


def test_a_counter_lost_during_the_region_is_named_and_left_out(tmp_path: Path) -> None:
    layout: Layout = {"intel-rapl:0": _package(0), "intel-rapl:1": _package(0, name="package-1")}
    root = _sysfs(tmp_path / "sys", layout)
    with EnergyMeter.open(root, nvml=_no_nvml) as meter:
        meter.start()
        (root / "class/powercap/intel-rapl:0/energy_uj").write_text("2000000\n")
        (root / "class/powercap/intel-rapl:1/energy_uj").unlink()
        result = meter.stop()
    assert isinstance(result, Energy)
    assert result.joules == {"rapl:intel-rapl:0:package-0": 2.0}
    assert any("rapl:intel-rapl:1:package-1: unreadable after" in s for s in result.skipped)


@pytest.mark.parametrize(
    ("before", "after", "max_range", "delta", "why"),
    [
        (10, 30, 100, 20, "no wrap"),
        (90, 5, 100, 15, "wrapped once"),
        (0, 0, 100, 0, "nothing used"),
        (7, 7, 100, 0, "same reading is no energy, not a whole range"),
    ],
)
def test_delta_uj(before: int, after: int, max_range: int, delta: int, why: str) -> None:
    assert delta_uj(before, after, max_range) == delta, why


def test_this_machines_real_counters() -> None:
    """The real /sys and NVML: a non-negative reading where a counter is exposed, else the
    reason, naming what is missing (never skipped)."""
    zones, notes = rapl_zones(Path("/sys"))
    with EnergyMeter.open() as meter:
        meter.start()
        sum(i * i for i in range(100_000))
        result = meter.stop()
    if meter.counters:
        assert isinstance(result, Energy)
        assert all(j >= 0 for j in result.joules.values())
        assert {z.name for z in zones} <= set(result.joules)
    else:
        assert isinstance(result, NoEnergy)
        assert result.reason.startswith(NO_COUNTER)
        if not Path("/sys/class/powercap").exists():
            assert "no /sys/class/powercap" in result.reason
            assert notes == ["no /sys/class/powercap"]


def test_units_of_energy_metrics() -> None:
    assert unit_of("energy_j") == "J"
    assert unit_of("energy_per_inference_j") == "J"
    assert unit_of("time_to_accuracy_s") == "s"  # "_j" shadows nothing
    assert unit_of("throughput_sps") == "samples/s"


def _lock(ws: Workspace) -> Lockfile:
    request = {
        "model": f"{builtin.MODEL_NAME}@1.1.0",
        "dataset": f"{builtin.DATASET_NAME}@1",
        "threads": 1,
        "scenario": {"name": "Offline", "min_duration_ms": 200, "min_query_count": 30},
    }
    lock, _ = service.lock(ws, parse_request(request))
    return lock


def test_a_digits_run_records_energy_or_why_not(digits: Workspace) -> None:
    """This machine as it is: joules from its counters, or the reason and no energy metric."""
    outcome = run_lockfile(digits, _lock(digits), say=lambda _: None)
    info = show_run(digits, outcome.id)
    energy = info["details"]["energy"]
    if "reason" in energy:
        assert energy["reason"].startswith(NO_COUNTER)
        assert "energy_j" not in info and "energy_per_inference_j" not in info
    else:
        assert energy["counters"] and info["energy_j"] >= 0
        assert info["units"]["energy_per_inference_j"] == "J"
        assert math.isclose(
            info["energy_per_inference_j"], info["energy_j"] / info["samples_count"]
        )


@pytest.fixture
def fake_rapl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs read a laid-out sysfs with one package (whose counter stands still) and no NVML."""
    root = _sysfs(tmp_path / "fake-sys", {"intel-rapl:0": _package(5_000)})

    class Meter(EnergyMeter):
        @classmethod
        def open(cls, sysfs: Path = root, nvml: Any = None) -> EnergyMeter:
            return EnergyMeter.open(root, nvml=_no_nvml)

    monkeypatch.setattr(measure_module, "EnergyMeter", Meter)
    return root


def test_energy_and_cost_in_runs_show_and_reports(
    tmp_path: Path,
    catalog_dir: Path,
    fake_rapl: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ws = published_workspace(tmp_path, catalog_dir)
    try:
        monkeypatch.setenv(PRICE_ENV, "3.6")
        # in this process (--sandbox none), where the energy meter is stood in for
        outcome = run_lockfile(ws, _lock(ws), say=lambda _: None, sandbox="none")
        info = show_run(ws, outcome.id)
        report = gather(ws, [outcome.id])
        text, page = markdown(report), html(report)
    finally:
        ws.close()
    assert info["details"]["energy"] == {
        "counters": ["rapl:intel-rapl:0:package-0"],
        "joules": {"rapl:intel-rapl:0:package-0": 0.0},
        "skipped": ["NVML not available (libnvidia-ml.so.1: cannot open shared object file)"],
    }
    assert info["energy_j"] == 0.0 and info["energy_per_inference_j"] == 0.0
    assert info["units"]["energy_j"] == "J"
    assert info["details"]["cost"] == {"usd_per_hour": 3.6, "source": PRICE_ENV}
    cost = 3.6 / 3600 / info["throughput_sps"] * 1000
    assert f"| cost per 1,000 inferences | USD | {usd(cost)[1:]} |" in text
    assert "| energy per inference (energy\\_per\\_inference\\_j) | J | 0 |" in text
    assert "cost per 1,000 inferences" in page and usd(cost)[1:] in page

    cli: Cli = in_process_cli(monkeypatch, capsys, tmp_path / "home", f"sqlite:///{tmp_path}/db")
    shown = cli("runs", "show", outcome.id)
    assert shown.code == 0, shown.err
    lines = [" ".join(line.split()) for line in shown.out.splitlines()]
    assert "energy 0 J (rapl:intel-rapl:0:package-0)" in lines, shown.out
    assert "energy per inference 0 J" in lines
    assert "price $3.6/hour (PINBENCH_PRICE_PER_HOUR)" in lines
    assert f"$ per 1,000 inferences {usd(cost)}" in lines


def test_runs_show_says_why_there_is_no_energy(
    tmp_path: Path,
    catalog_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "no-sys"
    root.mkdir()

    class Meter(EnergyMeter):
        @classmethod
        def open(cls, sysfs: Path = root, nvml: Any = None) -> EnergyMeter:
            return EnergyMeter.open(root, nvml=_no_nvml)

    monkeypatch.setattr(measure_module, "EnergyMeter", Meter)
    monkeypatch.delenv(PRICE_ENV, raising=False)
    ws = published_workspace(tmp_path, catalog_dir)
    try:
        # in this process (--sandbox none), where the energy meter is stood in for
        outcome = run_lockfile(ws, _lock(ws), say=lambda _: None, sandbox="none")
        info = show_run(ws, outcome.id)
    finally:
        ws.close()
    assert "cost" not in info["details"]
    assert "energy_j" not in info["units"]
    cli = in_process_cli(monkeypatch, capsys, tmp_path / "home", f"sqlite:///{tmp_path}/db")
    shown = cli("runs", "show", outcome.id)
    assert shown.code == 0, shown.err
    said = " ".join(shown.out.split())
    assert f"energy {NO_COUNTER} (no {root}/class/powercap; NVML not available" in said
    assert "inferences" not in said


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("-1", "a price is not negative"),
        ("nan", "not a finite number"),
        ("inf", "not a finite number"),
        ("three", "not a number"),
        (str(MAX_USD_PER_HOUR * 2), "too large"),
    ],
)
def test_bad_prices_are_refused(value: str, reason: str) -> None:
    with pytest.raises(BadPrice) as caught:
        parse_price(value, "--price-per-hour")
    assert reason in str(caught.value)
    assert str(caught.value).startswith("--price-per-hour must be a price in US dollars per hour")


@pytest.mark.parametrize("value", ["0", "2.5", str(MAX_USD_PER_HOUR)])
def test_good_prices(value: str) -> None:
    assert parse_price(value, "x") == Price(float(value), "x")


def test_price_from_the_environment() -> None:
    assert price_from_env({}) is None
    assert price_from_env({PRICE_ENV: " "}) is None
    assert price_from_env({PRICE_ENV: "1.5"}) == Price(1.5, PRICE_ENV)
    served = {PRICE_ENV: "2", "PINBENCH_PRICE_SOURCE": "serve --price-per-hour"}
    assert price_from_env(served) == Price(2.0, "serve --price-per-hour")
    with pytest.raises(BadPrice, match=PRICE_ENV):
        price_from_env({PRICE_ENV: "-3"})


def test_a_bad_price_stops_a_run_before_anything_is_recorded(
    digits: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = _lock(digits)
    monkeypatch.setenv(PRICE_ENV, "nan")
    with pytest.raises(BadPrice, match="not a finite number"):
        run_lockfile(digits, lock, say=lambda _: None)
    assert list_runs(digits) == []


@pytest.mark.parametrize(
    ("claimed", "price", "on_agent", "kept", "why"),
    [
        ({"usd_per_hour": 9.0, "source": "evil"}, None, False, None, "an evaluator's claim"),
        (
            {"usd_per_hour": 9.0, "source": "evil"},
            Price(1.0, PRICE_ENV),
            False,
            {"usd_per_hour": 1.0, "source": PRICE_ENV},
            "a run here records this process's price",
        ),
        (
            {"usd_per_hour": 2.0, "source": "agent start --price-per-hour (system a)"},
            Price(1.0, PRICE_ENV),
            True,
            {"usd_per_hour": 2.0, "source": "agent start --price-per-hour (system a)"},
            "a run on an agent records the agent's price, not the server's",
        ),
        ({"usd_per_hour": -2.0, "source": "a"}, None, True, None, "an agent's bad price"),
        ({"usd_per_hour": "2", "source": "a"}, None, True, None, "a price as text"),
        ({"usd_per_hour": 2.0}, None, True, None, "no source"),
        (None, None, True, None, "an agent that declared none"),
    ],
)
def test_which_price_a_run_keeps(
    claimed: Any, price: Price | None, on_agent: bool, kept: Any, why: str
) -> None:
    details: dict[str, Any] = {} if claimed is None else {"cost": claimed}
    _keep_cost(details, price, on_agent)
    assert details.get("cost") == kept, why


def test_cost_per_1000_inferences() -> None:
    assert usd_per_1000(Price(3.6, "x"), 1000.0) == pytest.approx(0.001)
    assert usd_per_1000(None, 1000.0) is None
    assert usd_per_1000(Price(3.6, "x"), None) is None
    assert usd_per_1000(Price(3.6, "x"), 0.0) is None
    assert recorded_price({"usd_per_hour": True, "source": "x"}) is None
    assert usd(0.0123456) == "$0.012346"
    assert usd(0.0000152) == "$1.52e-05"


@pytest.mark.parametrize(
    "args",
    [
        ["agent", "start", "--cluster", "127.0.0.1:1", "--price-per-hour", "-1"],
        ["serve", "--price-per-hour", "nan"],
    ],
)
def test_cli_refuses_a_bad_price_before_starting(cli: Cli, args: list[str]) -> None:
    result = cli(*args)
    assert result.code == 1
    assert "--price-per-hour must be a price in US dollars per hour" in result.err
