"""A performance run records what else the machine did while it was timed, and is flagged
when other work took the machine (issue 64, item 7; decision 278): read from /proc/stat and
the process's own CPU time around LoadGen's test."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import msgspec
import numpy as np
import pytest

from pinbench.registry.request import Scenario
from pinbench.worker import contention
from pinbench.worker.loadgen_test import metered_test
from pinbench.worker.scenarios import Measurement, run_scenario, settings_for
from pinbench.worker.stop import Stop
from pinbench.worker.undefined import DETAILS_KEY

HZ = os.sysconf("SC_CLK_TCK")


def _stat(tmp: Path, name: str, user: int, system: int, idle: int, steal: int) -> Path:
    """A /proc with a stat file of two CPUs (ticks summed on the first line)."""
    proc = tmp / name
    proc.mkdir()
    first = f"cpu  {user} 0 {system} {idle} 0 0 0 {steal} 0 0"
    half = f"{user // 2} 0 {system // 2} {idle // 2} 0 0 0 {steal // 2} 0 0"
    rest = f"{user - user // 2} 0 {system - system // 2} {idle - idle // 2} 0 0 0"
    rest += f" {steal - steal // 2} 0 0"
    (proc / "stat").write_text(f"{first}\ncpu0 {half}\ncpu1 {rest}\n")
    (proc / "loadavg").write_text("2.50 1.00 0.50 3/90 100\n")
    return proc


@pytest.mark.parametrize(
    ("busy_ticks", "steal_ticks", "flagged", "why"),
    [
        (0, 0, False, "nothing else ran"),
        (int(0.05 * 2 * HZ * 10), 0, False, "others took 5% of two CPUs for 10 s: under 10%"),
        (int(0.5 * 2 * HZ * 10), 0, True, "others took half the machine"),
        (0, int(0.10 * 2 * HZ * 10), True, "a hypervisor stole 10%"),
    ],
)
def test_others_and_steal_are_shares_of_the_machine(
    tmp_path: Path, busy_ticks: int, steal_ticks: int, flagged: bool, why: str
) -> None:
    window = 10.0
    idle = int(2 * HZ * window) - busy_ticks - steal_ticks  # two CPUs' ticks: the rest idle
    before = contention.read(_stat(tmp_path, "a", 1000, 500, 9000, 7), tmp_path)
    after_proc = _stat(tmp_path, "b", 1000 + busy_ticks, 500, 9000 + idle, 7 + steal_ticks)
    after = contention.read(after_proc, tmp_path)
    activity = contention.between(
        before,
        contention.Reading(before.at_s + window, after.jiffies, 2, before.own_cpu_s, 2.5, []),
    )
    rounding = 2 * 2  # two ticks a CPU, two CPUs
    others = max(0, busy_ticks - rounding) / HZ
    assert activity.others_ratio == pytest.approx(others / (2 * window)), why
    assert activity.steal_ratio == pytest.approx(steal_ticks / HZ / (2 * window)), why
    assert activity.contended is flagged, why
    assert contention.figures(activity)["contended_bool"] == float(flagged)


def test_a_machine_without_proc_stat_records_why_not_a_zero(tmp_path: Path) -> None:
    meter = contention.MachineMeter(proc=tmp_path / "absent", sysfs=tmp_path)
    meter.start()
    found = meter.stop()
    assert isinstance(found, str) and "stat" in found
    assert contention.figures(found) == {}  # never a 0
    assert contention.details(found) == {"unread": found}


BURN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def test_a_run_timed_beside_other_work_is_flagged(tmp_path: Path) -> None:
    """The issue's case: the same scenario beside processes that keep every CPU busy is
    flagged, with the others' share read from the machine, and its details keep the
    readings."""
    scenario = msgspec.convert(
        {"name": "SingleStream", "min_duration_ms": 1000, "min_query_count": 64}, Scenario
    )
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)

    def predict(b: np.ndarray) -> dict[str, np.ndarray]:
        return {"y": b @ b.T}

    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(os.cpu_count() or 1)]
    try:
        m = run_scenario(
            predict, x, scenario, batch_size=1, expected_latency_ns=50_000, log_dir=tmp_path
        )
    finally:
        for p in burners:
            p.kill()
            p.wait()
    metrics = m.summary()
    assert metrics["contended_bool"] == 1.0
    assert metrics["machine_others_cpu_ratio"] > contention.OTHERS_BOUND
    machine = m.details()["machine"]
    assert machine["others_cpu_s"] > 0 and machine["window_s"] > 0
    assert machine["cpus"] >= 1 and len(machine["load_1m"]) == 2


def test_an_accuracy_run_records_no_machine_figures(tmp_path: Path) -> None:
    scenario = msgspec.convert({"mode": "accuracy"}, Scenario)
    x = np.ones((4, 3), dtype=np.float32)
    m = run_scenario(
        lambda b: {"y": b}, x, scenario, batch_size=1, expected_latency_ns=1000, log_dir=tmp_path
    )
    assert not any(k.startswith("machine_") or k == "contended_bool" for k in m.summary())
    assert "machine" not in m.details()


def test_only_the_cpus_the_run_may_use_count(tmp_path: Path) -> None:
    """An attacker's review: a run pinned to one CPU of many (a cpuset, ``--cpuset-cpus``) is
    contended by what runs on that CPU, not diluted by every idle one, nor flagged by work on
    CPUs it never touches."""
    mine = min(os.sched_getaffinity(0))
    other = mine + 1
    kept = os.sched_getaffinity(0)

    def stat(name: str, busy_mine: int, busy_other: int, idle: int) -> Path:
        proc = tmp_path / name
        proc.mkdir()
        lines = [f"cpu  {busy_mine + busy_other} 0 0 1000 0 0 0 0 0 0"]
        for cpu in range(other + 1):
            busy = busy_mine if cpu == mine else busy_other if cpu == other else 0
            lines.append(f"cpu{cpu} {busy} 0 0 {idle} 0 0 0 0 0 0")
        (proc / "stat").write_text("\n".join(lines) + "\n")
        return proc

    os.sched_setaffinity(0, {mine})
    try:
        before = contention.read(stat("a", 0, 0, 500), tmp_path)
        after = contention.read(stat("b", 5 * HZ, 10 * HZ, 500 + 5 * HZ), tmp_path)
    finally:
        os.sched_setaffinity(0, kept)
    assert before.cpus == after.cpus == 1
    window = contention.Reading(before.at_s + 10.0, after.jiffies, 1, before.own_cpu_s, None, [])
    activity = contention.between(before, window)
    assert activity.others_ratio == pytest.approx((5 * HZ - 2) / HZ / 10.0)  # its CPU's alone
    assert activity.contended


@pytest.mark.parametrize(
    ("stepped", "absent"),
    [
        ("steal", {"machine_steal_ratio", "contended_bool"}),
        ("user", {"machine_others_cpu_ratio", "contended_bool"}),
    ],
)
def test_a_share_made_of_a_counter_that_stepped_back_is_absent_with_its_reason(
    tmp_path: Path, stepped: str, absent: set[str]
) -> None:
    """Issue 72: the comparison page showed machine_steal_ratio -0.0088. A hypervisor's steal
    counter can step back on one CPU while the others go on: the share is undefined, never a
    clamped 0 or a negative."""
    idle = 2 * HZ * 10 - 100 - 10  # two CPUs' ticks over the 10 s: the rest idle
    before = contention.read(_stat(tmp_path, "a", 1000, 500, 9000, 70), tmp_path)
    after = contention.read(_stat(tmp_path, "b", 1100, 500, 9000 + idle, 80), tmp_path)
    cpu1 = list(after.per_cpu["cpu1"])
    cpu1[contention._FIELDS.index(stepped)] -= 300 if stepped == "user" else 30  # went back
    per_cpu = {**after.per_cpu, "cpu1": tuple(cpu1)}
    activity = contention.between(
        before,
        contention.Reading(before.at_s + 10, after.jiffies, 2, before.own_cpu_s, 2.5, [], per_cpu),
    )
    assert activity.backwards == (stepped,)
    figures = contention.figures(activity)
    assert absent.isdisjoint(figures) and figures  # the other share is still there
    assert all(v >= 0 for v in figures.values())
    reasons = contention.details(activity)["undefined"]
    share = next(name for name in absent if name != "contended_bool")
    assert set(reasons) == absent and stepped in reasons[share]
    assert share in reasons["contended_bool"]  # made of it


def test_the_others_share_is_of_the_ticks_its_cpu_time_is_counted_in(tmp_path: Path) -> None:
    """Issue 83: a run recorded machine_others_cpu_ratio 1.0035 (61.70 s of others' CPU over
    2 CPUs x a 30.74 s wall window): busy ticks over a wall clock read apart from them. Over
    every state's ticks between the same two readings, a part over its whole, the share of a
    machine busy throughout is at most 1, whatever the wall clock said."""
    busy = int(2 * HZ * 30.87)  # both CPUs busy for 30.87 s of ticks
    before = contention.read(_stat(tmp_path, "a", 1000, 500, 9000, 7), tmp_path)
    after = contention.read(_stat(tmp_path, "b", 1000 + busy, 500, 9000, 7), tmp_path)
    late = contention.Reading(before.at_s + 30.74, after.jiffies, 2, before.own_cpu_s, 2.0, [])
    activity = contention.between(before, late)
    figures = contention.figures(activity)
    assert figures["machine_others_cpu_ratio"] == pytest.approx((busy - 2 * 2) / busy)
    assert 0.0 <= figures["machine_others_cpu_ratio"] <= 1.0
    assert figures["contended_bool"] == 1.0
    assert contention.details(activity)["machine_cpu_s"] == pytest.approx(busy / HZ)


def _activity(others_s: float, machine_s: float, own_s: float = 0.0) -> contention.Activity:
    return contention.Activity(
        window_s=machine_s / 2,
        cpus=2,
        own_cpu_s=own_s,
        others_cpu_s=others_s,
        steal_s=0.0,
        load_1m=(None, None),
        freq_mhz=([], []),
        machine_cpu_s=machine_s,
        busy_cpu_s=others_s + own_s,
    )


def _no_tick(tmp: Path) -> contention.Activity:
    before = contention.read(_stat(tmp, "a", 1000, 500, 9000, 7), tmp)
    return contention.between(before, dataclasses.replace(before, at_s=before.at_s + 0.001))


def _own_past_its_cpus(tmp: Path) -> contention.Activity:
    before = contention.read(_stat(tmp, "a", 1000, 500, 9000, 7), tmp)
    after = contention.read(_stat(tmp, "b", 1000 + 2 * HZ, 500, 9000 + 8 * HZ, 7), tmp)
    return contention.between(  # 10 s of two CPUs' ticks, 30 s of the run's own CPU time
        before, dataclasses.replace(after, at_s=before.at_s + 5, own_cpu_s=before.own_cpu_s + 30)
    )


@pytest.mark.parametrize(
    ("made", "reason", "why"),
    [
        (
            lambda tmp: _activity(61.70, 61.48),
            "outside [0, 1]",
            "issue 83's figures, a share above 1: refused, never recorded, never clipped to 1",
        ),
        (
            lambda tmp: _activity(-0.5, 61.48),
            "outside [0, 1]",
            "a negative share: refused, never clipped to 0",
        ),
        (
            _no_tick,
            "no clock tick",
            "a window under one tick of /proc/stat has no share of anything, not a 0",
        ),
        (
            _own_past_its_cpus,
            "exceeds what its 2 CPU(s) had",
            "the run's own CPU time past all its CPUs had: others' time is not what is left",
        ),
    ],
    ids=["above-1", "negative", "no-tick", "own-past-its-cpus"],
)
def test_a_share_its_readings_do_not_define_is_absent_with_its_reason(
    tmp_path: Path,
    made: Callable[[Path], contention.Activity],
    reason: str,
    why: str,
) -> None:
    activity = made(tmp_path)
    figures = contention.figures(activity)
    assert "machine_others_cpu_ratio" not in figures, why
    assert "contended_bool" not in figures, why  # its other share is not past its bound
    gone = contention.details(activity)["undefined"]
    assert reason in gone["machine_others_cpu_ratio"], why
    assert "contended_bool" in gone, why
    assert all(0.0 <= v <= 1.0 for v in figures.values()), why


def test_the_window_is_the_tests_from_its_first_query_not_loadgens_planning(
    tmp_path: Path,
) -> None:
    """Issue 83: a window that included 20 s of LoadGen planning 370,166 queries. LoadGen
    plans its whole schedule (here 2 x 300 ms at 500,000 queries a second) before its first
    query: the window opens at the first query issued and closes as the test returns, so it
    covers the queries and nothing before them."""
    scenario = msgspec.convert(
        {"name": "SingleStream", "min_duration_ms": 300, "min_query_count": 1}, Scenario
    )
    settings = settings_for(scenario, expected_latency_ns=2_000, batch_size=1)
    issued: list[float] = []

    def issue(queries: list[Any]) -> None:
        issued.append(time.monotonic())
        lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in queries])

    began = time.monotonic()
    summary, found = metered_test(issue, 8, settings, tmp_path, Stop())
    returned = time.monotonic()
    assert isinstance(found, contention.Activity), found
    planning = issued[0] - began
    assert planning > 0.02, "LoadGen's planning took no measurable time: nothing is tested"
    assert found.window_s <= returned - issued[0] + 0.01, (found.window_s, planning)
    # every query but those beside the opening reading (a thread's wake-up, on a busy machine)
    assert found.window_s >= issued[-1] - issued[0] - 0.05
    assert summary["result_query_count"] == len(issued)


def test_a_test_that_issued_no_query_says_so() -> None:
    meter = contention.MachineMeter()
    meter.watch()
    found = meter.stop()
    assert found == "no query was issued: the timed window never opened"
    assert contention.figures(found) == {} and contention.undefined(found) == {}


def test_a_runs_details_name_an_undefined_machine_figure_with_its_reason() -> None:
    """The run's ``undefined_metrics`` (what ``runs show`` and reports show as undefined) name
    it, beside the machine's own readings."""
    measured = Measurement(
        latencies_ns=np.zeros(1, dtype=np.int64),
        starts_ns=np.zeros(1, dtype=np.int64),
        samples=1,
        duration_ns=1,
        loadgen={},
        scenario="SingleStream",
        target=0.9,
        machine=_activity(61.70, 61.48),
    )
    details = measured.details()
    assert "outside [0, 1]" in details[DETAILS_KEY]["machine_others_cpu_ratio"]
    assert details[DETAILS_KEY] == details["machine"]["undefined"]
