"""Linux powercap/RAPL: ``/sys/class/powercap/intel-rapl:N/energy_uj``.

Only the top-level zones (``intel-rapl:0``, ``intel-rapl:1``: one per CPU package) are read.
Their subzones (``intel-rapl:0:0``, core, uncore, dram) are parts of the package's energy
(dram aside, whose coverage varies by CPU) and summing them with it would count twice;
``intel-rapl-mmio:N`` is the same package read another way. AMD's Zen CPUs are served by the
same driver and appear under the same names. The counter wraps at ``max_energy_range_uj``; a
zone that does not say its range is not used, since a wrap could not be told from a reset.

Everything is read below ``root`` (the sysfs mount, ``/sys``), so tests lay out a folder like
it. The files are readable by root only on kernels since 5.10 (CVE-2020-8694).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

POWERCAP = Path("class/powercap")
TOP_LEVEL = re.compile(r"(?:intel|amd)-rapl:\d+")
"""A package zone's folder name; subzones (``intel-rapl:0:0``) and ``-mmio`` do not match."""


@dataclass(frozen=True, slots=True)
class RaplZone:
    """One package zone: its folder, its name (``package-0``) and its counter's range."""

    folder: Path
    label: str
    max_range_uj: int

    @property
    def name(self) -> str:
        """The counter's name in a run's record: ``rapl:intel-rapl:0:package-0``."""
        return f"rapl:{self.folder.name}:{self.label}"

    def read_uj(self) -> int:
        """The counter now, in microjoules (``OSError``/``ValueError`` when it cannot be read)."""
        return int((self.folder / "energy_uj").read_text().strip())


def delta_uj(before: int, after: int, max_range_uj: int) -> int:
    """Microjoules between two readings of a counter that wraps to 0 past ``max_range_uj``
    (at most one wrap: a region longer than a whole range, hours at full power, is not told)."""
    if after >= before:
        return after - before
    return after + max_range_uj - before


def rapl_zones(root: Path) -> tuple[list[RaplZone], list[str]]:
    """The readable package zones under ``root`` (the sysfs mount), and why others are not
    used; ([], [why]) when there is no powercap at all."""
    base = root / POWERCAP
    if not base.is_dir():
        return [], [f"no {base}"]
    zones, skipped = [], []
    for folder in sorted(base.iterdir()):
        if not TOP_LEVEL.fullmatch(folder.name):
            continue
        try:
            label = (folder / "name").read_text().strip() or folder.name
        except OSError:
            label = folder.name
        try:
            max_range = int((folder / "max_energy_range_uj").read_text().strip())
        except (OSError, ValueError) as exc:
            skipped.append(f"{folder.name}: no max_energy_range_uj ({_why(exc)})")
            continue
        zone = RaplZone(folder, label, max_range)
        try:
            zone.read_uj()
        except (OSError, ValueError) as exc:
            skipped.append(f"{folder.name}: energy_uj unreadable ({_why(exc)})")
            continue
        if max_range <= 0:
            skipped.append(f"{folder.name}: max_energy_range_uj is {max_range}")
            continue
        zones.append(zone)
    if not zones and not skipped:
        skipped.append(f"no RAPL package zone in {base}")
    return zones, skipped


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)
