"""System samples on the trace's clock: this process's CPU use and resident memory, the whole
machine's CPU use, and each GPU's utilisation and memory through NVML when one is present.

A daemon thread samples every ``interval_ms``; it reads ``/proc`` (Linux; elsewhere only the
process CPU time is sampled) and NVML through ``libnvidia-ml`` with ctypes, so no package is
needed in the evaluation environment. What could not be sampled is said in the trace's
metadata, never silently left out.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

INTERVAL_MS = 10


@dataclass
class Samples:
    interval_ms: int
    times_ns: list[int] = field(default_factory=list)
    rows: list[dict[str, float]] = field(default_factory=list)
    """One per sample time: counter name (``cpu.process_percent``, ``memory.rss_mb``,
    ``gpu0.util_percent``) -> value."""
    notes: list[str] = field(default_factory=list)

    def metadata(self) -> dict[str, Any]:
        """What the trace's metadata says of the sampling: interval, count, notes, counters."""
        counters = sorted({k for row in self.rows for k in row})
        return {
            "interval_ms": self.interval_ms,
            "samples": len(self.times_ns),
            "notes": self.notes,
            "counters": counters,
        }


def _system_cpu() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs, from ``/proc/stat``."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Memory(ctypes.Structure):
    _fields_ = [
        ("total", ctypes.c_ulonglong),
        ("free", ctypes.c_ulonglong),
        ("used", ctypes.c_ulonglong),
    ]


class Nvml:
    """The few NVML calls sampling needs (``nvmlInit_v2``, utilisation, memory)."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit_v2 failed")
        count = ctypes.c_uint()
        if self.lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            raise OSError("nvmlDeviceGetCount_v2 failed")
        self.handles = []
        for i in range(count.value):
            handle = ctypes.c_void_p()
            if self.lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) == 0:
                self.handles.append(handle)
        if not self.handles:
            raise OSError("NVML reports no GPU")

    def read(self) -> list[tuple[float, float]]:
        """(utilisation %, memory used MB) per GPU."""
        out = []
        for handle in self.handles:
            util, mem = _Utilization(), _Memory()
            self.lib.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(util))
            self.lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem))
            out.append((float(util.gpu), mem.used / 2**20))
        return out

    def memory_used(self) -> list[int]:
        """Bytes of memory in use on each GPU (every process's: NVML's device view)."""
        out = []
        for handle in self.handles:
            mem = _Memory()
            if self.lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) != 0:
                raise OSError("nvmlDeviceGetMemoryInfo failed")
            out.append(int(mem.used))
        return out

    def close(self) -> None:
        self.lib.nvmlShutdown()


def open_nvml() -> tuple[Nvml | None, str | None]:
    """NVML, or None and why not."""
    try:
        return Nvml(), None
    except OSError as exc:
        return None, f"no GPU counters: NVML is not available here ({exc})"


class Sampler:
    """Samples on a daemon thread between ``start()`` and ``stop()``."""

    def __init__(self, interval_ms: int = INTERVAL_MS) -> None:
        self.samples = Samples(interval_ms)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pinbench-sampler", daemon=True)
        self._nvml: Nvml | None = None

    def start(self) -> None:
        self._nvml, why = open_nvml()
        if why:
            self.samples.notes.append(why)
        if _system_cpu() is None:
            self.samples.notes.append("no /proc here: machine CPU and memory are not sampled")
        self._thread.start()

    def stop(self) -> Samples:
        self._stop.set()
        self._thread.join()
        if self._nvml is not None:
            self._nvml.close()
        return self.samples

    def _loop(self) -> None:
        cores = os.cpu_count() or 1
        last_t, last_cpu, last_sys = time.perf_counter_ns(), time.process_time_ns(), _system_cpu()
        while not self._stop.wait(self.samples.interval_ms / 1000):
            t, cpu, sys_cpu = time.perf_counter_ns(), time.process_time_ns(), _system_cpu()
            row = {"cpu.process_percent": 100.0 * (cpu - last_cpu) / max(1, t - last_t)}
            if sys_cpu is not None and last_sys is not None:
                busy, total = sys_cpu[0] - last_sys[0], sys_cpu[1] - last_sys[1]
                row["cpu.machine_percent"] = 100.0 * cores * busy / total if total else 0.0
            rss = _rss_bytes()
            if rss is not None:
                row["memory.rss_mb"] = rss / 2**20
            if self._nvml is not None:
                for i, (util, used) in enumerate(self._nvml.read()):
                    row[f"gpu{i}.util_percent"] = util
                    row[f"gpu{i}.memory_mb"] = used
            self.samples.times_ns.append(t)
            self.samples.rows.append(row)
            last_t, last_cpu, last_sys = t, cpu, sys_cpu
