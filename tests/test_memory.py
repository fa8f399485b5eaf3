"""Every run records the evaluator's peak resident memory over the evaluation (VmHWM reset
when it begins), shown by ``runs show``."""

from __future__ import annotations

import numpy as np
import pytest

from pinbench.evaluator.memory import PeakMemory
from pinbench.workspace import Workspace
from tests.helpers import in_process_cli

MIB = 2**20


def test_the_peak_is_the_regions_own_and_sees_an_allocation() -> None:
    block = np.ones(256 * MIB // 8)  # 256 MiB touched
    del block
    memory = PeakMemory()  # the peak is reset: the freed block no longer counts
    assert memory.source.startswith("VmHWM")
    quiet = memory.peak_bytes()
    memory = PeakMemory()
    block = np.ones(128 * MIB // 8)
    grown = memory.peak_bytes()
    del block
    assert quiet < 200 * MIB + grown - 128 * MIB  # not the 256 MiB block of before the reset
    assert grown >= 128 * MIB  # this region's 128 MiB are in its peak


def test_a_run_records_and_shows_its_peak_memory(
    digits: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pinbench

    cli = in_process_cli(monkeypatch, capsys, digits.settings.home, digits.settings.database_url)
    registry = pinbench.Registry(digits.settings.home, database_url=digits.settings.database_url)
    request = {"model": "vision/digits-logreg@1.0.0", "dataset": "sklearn-digits-test@1"}
    run = registry.lock(request)[0].run(runner="local")
    assert 10 * MIB < run.metrics["peak_rss_bytes"] < 64 * 1024 * MIB
    assert run.view()["details"]["memory"]["peak_rss"].startswith("VmHWM")
    shown = cli("runs", "show", run.id)
    assert "peak RSS" in shown.out and "MiB" in shown.out
    listed = cli("runs", "list")
    assert "peak RSS" in listed.out
    page = registry.report([run.id], ["md"])["md"].decode()
    row = next(line for line in page.splitlines() if line.startswith("| peak\\_rss |"))
    assert "MiB" in row and f"{run.metrics['peak_rss_bytes'] / 2**20:,.1f}" in row
