"""No honest model fails TEST04 (issue 84, item 2): the metric trial's honest set, six speeds
in four scenarios, on a quiet machine and beside two busy loops on both cores.

Each model is a worker process that answers the host's clock (``runners.host_clock``) across
its pipes, spending the same CPU on every sample (a loop of a fixed count, calibrated once
here): nothing it does depends on having seen a sample. As a run is audited, one worker answers
the run's own test and a new worker answers TEST04's unique test; the verdict
(``audits.verdict``) may pass or say it is inconclusive, never fail. Timings are not asserted.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinbench.evaluator.runners import audits
from pinbench.registry.request import Scenario

SPEEDS_S = (10e-6, 100e-6, 500e-6, 1e-3, 2e-3, 4e-3)
"""What each honest model spends on a sample: from a linear model's to a small CNN's."""
SAMPLES = 32
"""The dataset's samples: TEST04's unique test answers each once."""
TIMED = 128
"""The samples the run's own test issues: four times the dataset's (repeats included)."""

WORKER = """
import sys
from pinbench.worker.remote_test import RemoteTest

count, loops, expected, *fds = map(int, sys.argv[1:])
remote = RemoteTest(fds)
sealed = bytes(16)


def issue(queries):
    for query in queries:
        for _ in range(loops):
            pass
        remote.complete([(query.id, sealed)])


remote.run(issue, count, expected)
"""
"""An honest model: the same work for every sample, seen or not."""


def _loops(seconds: float) -> int:
    """How many turns of an empty loop take ``seconds`` of this machine's CPU (measured once,
    quiet, over a tenth of a second)."""
    turns = 2_000_000
    started = time.process_time()
    for _ in range(turns):
        pass
    return max(1, int(turns * seconds / max(time.process_time() - started, 1e-6)))


def _scenario(name: str, speed_s: float) -> Scenario:
    fields: dict[str, Any] = {"name": name, "min_duration_ms": 0, "min_query_count": TIMED}
    if name == "MultiStream":
        fields.update(min_query_count=TIMED // 8, samples_per_query=8)
    if name == "Server":  # half the model's rate, at most what the host's crossing keeps up with
        fields["target_qps"] = min(0.5 / speed_s, 2_000.0)
    return Scenario(**fields)


def _test(scenario: Scenario, loops: int, speed_s: float, unique: bool, logs: Path) -> Any:
    """One worker process answering one host-timed test: its evidence, as the host records."""
    from pinbench.evaluator.runners.clock_link import PipeLink
    from pinbench.evaluator.runners.host_clock import HostClock
    from pinbench.worker.job import Evidence
    from pinbench.worker.stop import Stop

    logs.mkdir()
    clock = HostClock(scenario, 1, SAMPLES, logs, Stop(), PipeLink(), unique)
    fds = clock.worker_fds()
    argv = [str(SAMPLES), str(loops), str(int(speed_s * 1e9)), *map(str, fds)]
    worker = subprocess.Popen([sys.executable, "-c", WORKER, *argv], pass_fds=fds)
    try:
        clock.start(worker.pid)
        assert worker.wait(timeout=120) == 0
    finally:
        worker.kill()
        worker.wait()
        clock.close()
    evidence = Evidence()
    clock.apply(evidence)
    return evidence


@pytest.fixture(scope="module")
def loops() -> dict[float, int]:
    return {speed: _loops(speed) for speed in SPEEDS_S}


@pytest.fixture(params=["quiet", "busy"])
def machine(request: pytest.FixtureRequest) -> Iterator[str]:
    """Quiet, or beside two busy loops (one for each of this machine's cores)."""
    if request.param == "quiet":
        yield "quiet"
        return
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield "busy"
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@pytest.mark.parametrize("name", ["SingleStream", "MultiStream", "Server", "Offline"])
def test_no_honest_model_fails_test04_quiet_or_busy(
    name: str, machine: str, loops: dict[float, int], tmp_path: Path
) -> None:
    verdicts = []
    for speed in SPEEDS_S:
        scenario = _scenario(name, speed)
        timed = _test(scenario, loops[speed], speed, False, tmp_path / f"{speed}-timed")
        fresh = _test(scenario, loops[speed], speed, True, tmp_path / f"{speed}-unique")
        found = audits.verdict(name, 0.9, audits.Test.of(fresh), audits.Test.of(timed), SAMPLES)
        assert found["unique_samples"] == (SAMPLES // 8 * 8 if name == "MultiStream" else SAMPLES)
        verdicts.append((speed, found))
    failed = [(speed, found) for speed, found in verdicts if found["passed"] is False]
    assert failed == [], f"{machine}: an honest model failed TEST04: {failed}"
