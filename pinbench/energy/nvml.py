"""NVML's total energy of each GPU (``nvmlDeviceGetTotalEnergyConsumption``, millijoules since
the driver loaded; Volta and later).

Through ``libnvidia-ml`` with ctypes, as the trace's GPU sampling does
(``pinbench.trace.system``): no package is needed in the evaluation environment (a venv or an
image pinned by a lockfile holds only what the framework needs).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pinbench.errors import Picklable

NOT_SUPPORTED = 3
"""``NVML_ERROR_NOT_SUPPORTED``: a GPU older than Volta has no energy counter."""


class NvmlRefused(Picklable, OSError):
    """An NVML call returned ``status`` (not ``NVML_SUCCESS``)."""

    def __init__(self, call: str, status: int) -> None:
        super().__init__(f"{call} returned NVML status {status}")
        self.call = call
        self.status = status


@dataclass(frozen=True, slots=True)
class GpuCounter:
    """One GPU's energy counter."""

    index: int
    handle: Any
    lib: Any

    @property
    def name(self) -> str:
        return f"nvml:gpu{self.index}"

    def read_mj(self) -> int:
        """Millijoules since the driver loaded (``NvmlRefused`` when NVML refuses)."""
        energy = ctypes.c_ulonglong()
        status = self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(energy))
        if status != 0:
            raise NvmlRefused("nvmlDeviceGetTotalEnergyConsumption", int(status))
        return int(energy.value)


def gpu_counters(
    opener: Callable[[], Any] | None = None,
) -> tuple[list[GpuCounter], list[str], Callable[[], None]]:
    """Each GPU whose energy counter reads, why the others (or NVML itself) do not, and how
    to close NVML. ``opener``: what opens NVML (``trace.system.Nvml``; tests hand a fake)."""
    if opener is None:
        from pinbench.trace.system import Nvml

        opener = Nvml
    try:
        nvml = opener()
    except OSError as exc:
        return [], [f"NVML not available ({exc})"], _nothing
    counters, skipped = [], []
    for index, handle in enumerate(nvml.handles):
        counter = GpuCounter(index, handle, nvml.lib)
        try:
            counter.read_mj()
        except NvmlRefused as exc:
            note = "has no energy counter" if exc.status == NOT_SUPPORTED else str(exc)
            skipped.append(f"gpu{index}: {note}")
            continue
        except AttributeError:  # a driver older than the call
            skipped.append(f"gpu{index}: this NVML has no nvmlDeviceGetTotalEnergyConsumption")
            continue
        counters.append(counter)
    return counters, skipped, nvml.close


def _nothing() -> None:
    pass
