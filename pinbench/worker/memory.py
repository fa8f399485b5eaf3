"""The evaluator process's peak memory over one evaluation (issue 37: every run records it).

Linux keeps a process's peak resident set size (``VmHWM`` in ``/proc/self/status``) and resets
it when ``5`` is written to ``/proc/self/clear_refs`` (since Linux 4.0): reset when the
evaluation starts, read when it ends, the peak is the evaluation's own (model loading,
preprocessing, warm-up and the scenario), in whichever process runs it (this one for the local
runner, the worker in a venv or a container). Where the reset is not allowed, the peak is
``getrusage``'s ``ru_maxrss``: the whole process's, said so in the record.
"""

from __future__ import annotations

import resource
from pathlib import Path
from typing import Any

PROC = Path("/proc/self")


GPU_INTERVAL_S = 0.02
"""How often the GPUs' memory is read (NVML keeps no peak of its own: a spike shorter than this
can be missed, as in optimum-benchmark's tracker)."""


def open_nvml() -> Any:
    """NVML through ``libnvidia-ml`` (``OSError`` where there is none)."""
    from pinbench.trace.system import Nvml

    return Nvml()


class PeakGpuMemory:
    """The GPUs' memory in use, at its highest over the evaluation: NVML read on a daemon thread
    every ``GPU_INTERVAL_S`` (summed over the machine's GPUs, every process's use: NVML's device
    view, as optimum-benchmark's ``max_global_vram``). Without NVML (no GPU, no driver) nothing is
    recorded but the reason: an undefined metric is never a 0."""

    def __init__(self, opener: Any = None) -> None:
        import threading

        self.peak: int | None = None
        self.source = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed = False
        try:
            self._nvml: Any = (opener or open_nvml)()
        except (OSError, AttributeError) as exc:  # no library, or one without a call we need
            self._nvml = None
            self.source = f"no GPU memory: NVML is not available here ({exc})"
            return
        gpus = len(self._nvml.handles)
        self.source = (
            f"NVML: memory in use on the machine's {gpus} GPU(s), every process's, sampled "
            f"every {GPU_INTERVAL_S * 1000:.0f} ms"
        )
        self._read()
        self._thread = threading.Thread(target=self._loop, name="pinbench-gpu-memory", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            used = sum(self._nvml.memory_used())
        except (OSError, AttributeError) as exc:  # a peak with a gap is no peak: none recorded
            self.source = f"no GPU memory: an NVML read failed ({exc})"
            self._failed = True
            self._stop.set()
            return
        self.peak = used if self.peak is None else max(self.peak, used)

    def _loop(self) -> None:
        while not self._stop.wait(GPU_INTERVAL_S):
            self._read()

    def finish(self) -> int | None:
        """Stop sampling (one last read) and give the peak; None without NVML or after a read
        failed (``source`` says which)."""
        if self._nvml is None:
            return None
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if not self._failed:
            self._read()
        self._nvml.close()
        self._nvml = None
        return None if self._failed else self.peak


class PeakMemory:
    """The evaluator process's peak resident memory over the evaluation (``peak_bytes``) and,
    once an evaluator marks where its model's loading begins (``model_loading``), what loading
    and running the model added (``model_added_bytes``): the peak from that mark on, less the
    resident memory at the mark. The process's peak is what it held, whatever else it held
    (a demo's process, 1,483 MiB); the model's is what the model cost (108 MiB in a fresh
    process for the same model and data)."""

    def __init__(self, proc: Path = PROC) -> None:
        self._proc = proc
        self.source = "VmHWM since the evaluation began (/proc/self/clear_refs)"
        self._before_model: int | None = None
        """The process's peak up to the model's mark (its high-water mark is reset there)."""
        self._at_mark: int | None = None
        """The resident memory at the mark."""
        self.model_source = "no model was loaded"
        if not self._reset():
            self.source = "ru_maxrss: the evaluator process's peak since it started"

    def _reset(self) -> bool:
        try:
            (self._proc / "clear_refs").write_text("5")
        except OSError:
            return False
        return True

    def _status(self, field: str) -> int | None:
        """``/proc/self/status``'s ``field`` (``VmHWM``, ``VmRSS``) in bytes, where it reads."""
        try:
            for line in (self._proc / "status").read_text().splitlines():
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            return None
        return None

    def model_loading(self) -> None:
        """The model's loading begins: keep the peak so far, reset the high-water mark and
        note the resident memory now. Where the mark cannot be reset, the model's own memory
        is not measured (``model_source`` says why) and the process's peak is unchanged."""
        if not self.source.startswith("VmHWM"):
            self.model_source = "not measured: this kernel does not reset the peak (clear_refs)"
            return
        before, now = self._status("VmHWM"), self._status("VmRSS")
        if before is None or now is None or not self._reset():
            self.model_source = "not measured: /proc/self/status or clear_refs did not answer"
            return
        self._before_model, self._at_mark = before, now
        self.model_source = (
            "VmHWM from the model's loading to the end of the run, less VmRSS when it began"
        )

    def model_added_bytes(self) -> int | None:
        """What loading and running the model added (``model_loading``); None unmeasured."""
        if self._at_mark is None:
            return None
        peak = self._status("VmHWM")
        return None if peak is None else max(0, peak - self._at_mark)

    def peak_bytes(self) -> int:
        """The process's peak over the evaluation (across the model's mark)."""
        if self.source.startswith("VmHWM"):
            found = self._status("VmHWM")
            if found is not None:
                return max(found, self._before_model or 0)
            self.source = "ru_maxrss: the evaluator process's peak since it started"
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
