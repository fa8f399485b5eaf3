"""Every run records the evaluator's peak resident memory over the evaluation (VmHWM reset
when it begins), shown by ``runs show``."""

from __future__ import annotations

import re

import pytest

from pinbench.workspace import Workspace
from tests.helpers import in_process_cli

MIB = 2**20


def measured_alone(code: str) -> None:
    """Run ``code`` (a measurement and its assertions) in a fresh Python process: a peak or a
    resident-memory difference read in pytest's process also counts what its other threads
    (servers, samplers and collectors left by earlier tests) allocate or free meanwhile; at
    e1fe995 one freeing beside the model's 64 MiB made them read as 0 added bytes."""
    import subprocess
    import sys
    import textwrap

    prelude = "import numpy as np\nfrom pinbench.worker.memory import PeakMemory\nMIB = 2**20\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_the_peak_is_the_regions_own_and_sees_an_allocation() -> None:
    measured_alone(
        """
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
        """
    )


def test_a_run_records_and_shows_its_peak_memory(
    digits: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pinbench

    cli = in_process_cli(monkeypatch, capsys, digits.settings.home, digits.settings.database_url)
    registry = pinbench.Registry(digits.settings.home, database_url=digits.settings.database_url)
    request = {"model": "vision/digits-logreg@1.0.0", "dataset": "sklearn-digits-test@1"}
    run = registry.lock(request)[0].run(runner="local", sandbox="none")  # in this process
    assert 10 * MIB < run.metrics["peak_rss_bytes"] < 64 * 1024 * MIB
    assert run.view()["details"]["memory"]["peak_rss"].startswith("VmHWM")
    # in this (pytest's) process the model's own memory is a part of the process's peak (its
    # value beside other threads' frees is not exact: measured_alone's tests check the figure)
    assert 0 <= run.metrics["model_added_rss_bytes"] < run.metrics["peak_rss_bytes"]
    shown = cli("runs", "show", run.id)
    assert "peak RSS" in shown.out and "MiB" in shown.out
    assert "model memory (RSS added)" in shown.out
    listed = cli("runs", "list")
    assert "peak RSS" in listed.out
    page = registry.report([run.id], ["md"])["md"].decode()
    row = next(
        line for line in page.splitlines() if line.startswith("| peak RSS (peak\\_rss\\_bytes) |")
    )
    assert "MiB" in row and f"{run.metrics['peak_rss_bytes'] / 2**20:,.1f}" in row


class _Gpus:
    """Two GPUs as NVML's device view reports them: each read gives the next sample (bytes in
    use per GPU), the last one repeating; the sampler must keep the highest sum it saw."""

    def __init__(self, samples: list[list[int]]) -> None:
        self.handles = [object() for _ in samples[0]]
        self.samples = samples
        self.reads = 0
        self.closed = False

    def memory_used(self) -> list[int]:
        self.reads += 1
        return self.samples[min(self.reads - 1, len(self.samples) - 1)]

    def close(self) -> None:
        self.closed = True


def test_gpu_memory_is_the_highest_sum_nvml_reported_and_nothing_without_nvml() -> None:
    import time

    from pinbench.worker.memory import PeakGpuMemory

    gpus = _Gpus([[1 * MIB, 2 * MIB], [900 * MIB, 100 * MIB], [10 * MIB, 10 * MIB]])
    sampler = PeakGpuMemory(lambda: gpus)
    while gpus.reads < 3:
        time.sleep(0.01)
    assert sampler.finish() == 1000 * MIB and gpus.closed
    assert "2 GPU(s)" in sampler.source

    def no_driver() -> None:
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    none = PeakGpuMemory(no_driver)
    assert none.finish() is None
    assert none.source.startswith("no GPU memory: NVML is not available here (libnvidia-ml")

    class Failing(_Gpus):
        def memory_used(self) -> list[int]:
            if self.reads >= 1:
                raise OSError("nvmlDeviceGetMemoryInfo failed")
            return super().memory_used()

    broken = Failing([[7 * MIB]])
    gapped = PeakGpuMemory(lambda: broken)
    assert gapped.finish() is None and broken.closed  # a peak with a gap is no peak
    assert gapped.source == "no GPU memory: an NVML read failed (nvmlDeviceGetMemoryInfo failed)"


def test_a_run_records_gpu_memory_where_nvml_answers_and_says_why_not_where_it_does_not(
    digits: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """This machine has no GPU: the run records no GPU metric (never a 0), only the reason.
    With NVML answering (its device view stood in for by ``_Gpus``), the peak is a metric."""
    import pinbench
    from pinbench.worker import memory

    registry = pinbench.Registry(digits.settings.home, database_url=digits.settings.database_url)
    request = {"model": "vision/digits-logreg@1.0.0", "dataset": "sklearn-digits-test@1"}
    run = registry.lock(request)[0].run(runner="local")
    assert "peak_gpu_bytes" not in run.metrics
    assert run.view()["details"]["memory"]["gpu"].startswith("no GPU memory: NVML is not")
    monkeypatch.setattr(memory, "open_nvml", lambda: _Gpus([[3 * MIB], [5 * MIB]]))
    run = registry.lock(request)[0].run(runner="local", sandbox="none")  # where NVML is patched
    assert run.metrics["peak_gpu_bytes"] == 5 * MIB
    assert run.units["peak_gpu_bytes"] == "B"
    cli = in_process_cli(monkeypatch, capsys, digits.settings.home, digits.settings.database_url)
    assert re.search(r"peak GPU memory\s+5\.0 MiB", cli("runs", "show", run.id).out)


def test_the_models_memory_is_what_its_loading_and_running_added() -> None:
    """Issue 64, item 8: the process's peak counts what it held before the model (a demo's
    process: 1,483 MiB where a fresh run of the same model shows 108 MiB); the model's own
    memory is the peak from its loading on, less what was resident when it began."""
    measured_alone(
        """
        held = np.ones(192 * MIB // 8)  # the process's, before the model: 192 MiB touched
        memory = PeakMemory()
        assert memory.model_added_bytes() is None  # no model marked: not measured, never a 0
        memory.model_loading()
        model = np.ones(64 * MIB // 8)  # what "loading and running the model" adds
        added, peak = memory.model_added_bytes(), memory.peak_bytes()
        del model, held
        assert added is not None
        assert 64 * MIB <= added < 96 * MIB, added  # its 64 MiB, not the 192 MiB held before it
        assert peak >= (192 + 64) * MIB, peak  # the process's peak holds both
        assert memory.model_source.startswith("VmHWM from the model's loading")
        """
    )
