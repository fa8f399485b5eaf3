"""The energy of a timed region: every readable counter read before and after it.

Counters are machine-wide (RAPL packages, whole GPUs): what they measure is the machine's
energy while the region ran, this process's and anything else's. Where no counter reads,
``stop`` says why and nothing is recorded but that reason (``record``): never a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from pinbench.energy.nvml import gpu_counters
from pinbench.energy.rapl import delta_uj, rapl_zones

SYSFS = Path("/sys")
NO_COUNTER = "no energy counter here"


@dataclass(frozen=True, slots=True)
class Counter:
    """One cumulative counter: its name, how to read it (raw units), joules per raw unit, and
    the raw value past which it wraps to 0 (None: it does not wrap in practice)."""

    name: str
    read: Callable[[], int]
    joules_per_unit: float
    wraps_at: int | None = None

    def joules(self, before: int, after: int) -> float:
        if self.wraps_at is not None:
            return delta_uj(before, after, self.wraps_at) * self.joules_per_unit
        return max(0, after - before) * self.joules_per_unit


@dataclass(frozen=True, slots=True)
class Energy:
    """Joules per counter over the region."""

    joules: dict[str, float]
    skipped: list[str] = field(default_factory=list)
    """Counters found but not read (a zone without its range, a GPU without a counter)."""

    @property
    def total_j(self) -> float:
        return sum(self.joules.values())


@dataclass(frozen=True, slots=True)
class NoEnergy:
    reason: str


class EnergyMeter:
    """Reads its counters at ``start`` and ``stop``; a context manager that closes NVML."""

    def __init__(
        self, counters: list[Counter], notes: list[str], close: Callable[[], None]
    ) -> None:
        self.counters = counters
        self.notes = notes
        """Why counters were not found or not used."""
        self._close = close
        self._before: dict[str, int] = {}

    @classmethod
    def open(cls, sysfs: Path = SYSFS, nvml: Callable[[], Any] | None = None) -> EnergyMeter:
        """Every counter this machine exposes: RAPL packages under ``sysfs``, then each GPU's
        NVML counter (``nvml``: what opens NVML; tests hand a fake)."""
        zones, notes = rapl_zones(sysfs)
        counters = [Counter(z.name, z.read_uj, 1e-6, z.max_range_uj) for z in zones]
        gpus, skipped, close = gpu_counters(nvml)
        counters += [Counter(g.name, g.read_mj, 1e-3) for g in gpus]
        return cls(counters, notes + skipped, close)

    def __enter__(self) -> EnergyMeter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._close()

    def start(self) -> None:
        self._before = {}
        for c in self.counters:
            try:
                self._before[c.name] = c.read()
            except (OSError, ValueError):
                continue  # said by ``stop``

    def stop(self) -> Energy | NoEnergy:
        """Joules per counter since ``start``; a counter that failed either read is left out
        and named; none left: why not."""
        joules, skipped = {}, list(self.notes)
        for c in self.counters:
            try:
                after = c.read()
            except (OSError, ValueError) as exc:
                skipped.append(f"{c.name}: unreadable after the region ({exc})")
                continue
            if c.name not in self._before:
                skipped.append(f"{c.name}: unreadable before the region")
                continue
            joules[c.name] = c.joules(self._before[c.name], after)
        if not joules:
            return NoEnergy(f"{NO_COUNTER} ({'; '.join(skipped) or 'none found'})")
        return Energy(joules, skipped)


def record(
    result: Energy | NoEnergy, samples: int, metrics: dict[str, float], details: dict[str, Any]
) -> None:
    """Put ``result`` in a run's metrics and details: ``energy_j`` and
    ``energy_per_inference_j`` (over ``samples`` answered) with ``details["energy"]`` naming
    the counters and each one's joules; or only ``details["energy"]["reason"]``."""
    if isinstance(result, NoEnergy):
        details["energy"] = {"reason": result.reason}
        return
    details["energy"] = {
        "counters": sorted(result.joules),
        "joules": dict(sorted(result.joules.items())),
        **({"skipped": result.skipped} if result.skipped else {}),
    }
    metrics["energy_j"] = result.total_j
    if samples > 0:
        metrics["energy_per_inference_j"] = result.total_j / samples
