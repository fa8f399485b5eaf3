"""A performance run records what else the machine did while it was timed, and is flagged
when other work took the machine (issue 64, item 7; decision 278): read from /proc/stat and
the process's own CPU time around LoadGen's test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest

from pinbench.registry.request import Scenario
from pinbench.worker import contention
from pinbench.worker.scenarios import run_scenario

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
    before = contention.read(_stat(tmp_path, "a", 1000, 500, 9000, 7), tmp_path)
    after_proc = _stat(tmp_path, "b", 1000 + busy_ticks, 500, 9000, 7 + steal_ticks)
    after = contention.read(after_proc, tmp_path)
    window = 10.0
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

    def stat(name: str, busy_mine: int, busy_other: int) -> Path:
        proc = tmp_path / name
        proc.mkdir()
        lines = [f"cpu  {busy_mine + busy_other} 0 0 1000 0 0 0 0 0 0"]
        for cpu in range(other + 1):
            busy = busy_mine if cpu == mine else busy_other if cpu == other else 0
            lines.append(f"cpu{cpu} {busy} 0 0 500 0 0 0 0 0 0")
        (proc / "stat").write_text("\n".join(lines) + "\n")
        return proc

    os.sched_setaffinity(0, {mine})
    try:
        before = contention.read(stat("a", 0, 0), tmp_path)
        after = contention.read(stat("b", 5 * HZ, 10 * HZ), tmp_path)
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
    before = contention.read(_stat(tmp_path, "a", 1000, 500, 9000, 70), tmp_path)
    after = contention.read(_stat(tmp_path, "b", 1100, 500, 9000, 80), tmp_path)
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
    assert stepped in contention.details(activity)["undefined"]
