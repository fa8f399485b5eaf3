"""What else the machine did while a run was timed, and whether that makes its timings suspect
(issue 64, item 7; decision 278).

The same lockfile recorded p50 525.55 ms beside other work and 90.66 ms alone, both VALID by
LoadGen's rules: LoadGen judges how many queries ran and for how long, not what else ran. So
around the timed region (LoadGen's test) the evaluator reads what Linux keeps of the machine
(``/proc/stat``'s CPU time, in every state, summed over the CPUs the evaluator may run on,
its affinity; the 1-minute load; each CPU's frequency where ``cpufreq`` is readable) and its
own CPU time (``getrusage``, every thread of the evaluator process: in a server's in-process
``local`` runner, other runs' threads count as its own). From the two readings, less two clock
ticks a CPU (each reading may be a tick off):

- ``machine_others_cpu_ratio``: the CPU time every other process (and the kernel's
  interrupts) took while the region ran, over what the machine had (its CPUs x the region's
  wall time);
- ``machine_steal_ratio``: the time a hypervisor gave the machine's virtual CPUs to others
  (``steal``), over the same;
- ``contended_bool``: 1 where either is past its bound (``OTHERS_BOUND``, ``STEAL_BOUND``): as
  pyperf's ``check`` flags a benchmark whose numbers are unstable, this flags a run whose
  numbers were taken beside other work. Not a verdict on the numbers, a reason to rerun on a
  quiet machine before reading them.

The readings themselves (seconds, load, frequencies) are in ``details.machine``. A machine
without ``/proc/stat`` records none of it and says why: an unread figure is never a 0.
In a container ``/proc/stat`` is the host's, as the contention is.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OTHERS_BOUND = 0.10
"""Other processes' share of the machine's CPU past which a run is flagged contended."""
STEAL_BOUND = 0.05
"""A hypervisor's steal, as a share of the machine's CPU, past which a run is flagged."""

_BUSY = ("user", "nice", "system", "irq", "softirq")
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(frozen=True, slots=True)
class Reading:
    at_s: float
    """``time.monotonic()``."""
    jiffies: dict[str, int]
    """``/proc/stat``'s first line: each state's clock ticks, summed over the CPUs."""
    cpus: int
    own_cpu_s: float
    """This process's user and system time, every thread's."""
    load_1m: float | None
    freq_mhz: list[float]
    per_cpu: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Each CPU's ticks in ``_FIELDS``' order, to tell a counter that stepped back."""


@dataclass(frozen=True, slots=True)
class Activity:
    """The machine over the timed region."""

    window_s: float
    cpus: int
    own_cpu_s: float
    others_cpu_s: float
    steal_s: float
    load_1m: tuple[float | None, float | None]
    freq_mhz: tuple[list[float], list[float]]
    backwards: tuple[str, ...] = ()
    """The states whose counter stepped back on some CPU between the readings (a hypervisor's
    ``steal`` can): the figures made of them are undefined (``figures``)."""

    @property
    def others_ratio(self) -> float:
        return self.others_cpu_s / (self.window_s * self.cpus)

    @property
    def steal_ratio(self) -> float:
        return self.steal_s / (self.window_s * self.cpus)

    @property
    def contended(self) -> bool:
        return self.others_ratio > OTHERS_BOUND or self.steal_ratio > STEAL_BOUND


class Unread(OSError):
    """What Linux keeps of the machine could not be read here; the message says what."""


def read(
    proc: Path = Path("/proc"), sysfs: Path = Path("/sys"), own: Callable[[], float] | None = None
) -> Reading:
    """The machine and this process now (``Unread`` where ``/proc/stat`` is not Linux's);
    ``own``: what counts as the run's own CPU seconds (default: this process's)."""
    try:
        lines = (proc / "stat").read_text().splitlines()
    except OSError as exc:
        raise Unread(f"{proc / 'stat'}: {exc.strerror or exc}") from None
    first = lines[0].split() if lines else []
    if len(first) < 1 + len(_FIELDS) or first[0] != "cpu":
        raise Unread(f"{proc / 'stat'} does not start with Linux's cpu line")
    allowed = _allowed()
    jiffies = dict.fromkeys(_FIELDS, 0)
    per_cpu: dict[str, tuple[int, ...]] = {}
    cpus = 0
    try:
        for line in lines[1:]:
            parts = line.split()
            if not parts or not parts[0].startswith("cpu") or not parts[0][3:].isdigit():
                continue
            if allowed is not None and int(parts[0][3:]) not in allowed:
                continue  # a CPU this process may not run on: its work contends with nobody
            cpus += 1
            ticks = tuple(int(v) for v in parts[1 : 1 + len(_FIELDS)])
            per_cpu[parts[0]] = ticks
            for name, value in zip(_FIELDS, ticks, strict=False):
                jiffies[name] += value
        if not cpus:  # no per-CPU lines: the machine's totals
            jiffies = {name: int(v) for name, v in zip(_FIELDS, first[1:], strict=False)}
            cpus = 1 if allowed is None else len(allowed)
    except ValueError:
        raise Unread(f"{proc / 'stat'}'s cpu lines are not numbers") from None
    if own is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        own_s = usage.ru_utime + usage.ru_stime
    else:
        own_s = own()
    return Reading(
        time.monotonic(),
        jiffies,
        max(cpus, 1),
        own_s,
        _load(proc),
        _freqs(sysfs),
        per_cpu,
    )


def _allowed() -> set[int] | None:
    """The CPUs this process may run on (its affinity: a cpuset, ``taskset``, Docker's
    ``--cpuset-cpus``); None where Linux does not say."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _load(proc: Path) -> float | None:
    try:
        return float((proc / "loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _freqs(sysfs: Path) -> list[float]:
    """Each CPU's current frequency (MHz) where cpufreq says it; empty where it does not."""
    out = []
    for path in sorted((sysfs / "devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            out.append(int(path.read_text().strip()) / 1000.0)
        except (OSError, ValueError):
            continue
    return out


def between(before: Reading, after: Reading) -> Activity:
    """What the machine did from ``before`` to ``after``."""
    hz = os.sysconf("SC_CLK_TCK")
    backwards = {
        name
        for cpu, ticks in after.per_cpu.items()
        for name, was, now in zip(_FIELDS, before.per_cpu.get(cpu, ()), ticks, strict=False)
        if now < was
    }
    backwards |= {k for k in before.jiffies if after.jiffies[k] < before.jiffies[k]}
    delta = {k: max(0, after.jiffies[k] - before.jiffies[k]) for k in before.jiffies}
    busy_s = sum(delta.get(k, 0) for k in _BUSY) / hz
    own = max(0.0, after.own_cpu_s - before.own_cpu_s)
    rounding = 2 * after.cpus / hz  # each CPU's ticks may be one off at either reading
    return Activity(
        window_s=max(after.at_s - before.at_s, 1e-9),
        cpus=after.cpus,
        own_cpu_s=own,
        others_cpu_s=max(0.0, busy_s - own - rounding),
        steal_s=delta.get("steal", 0) / hz,
        load_1m=(before.load_1m, after.load_1m),
        freq_mhz=(before.freq_mhz, after.freq_mhz),
        backwards=tuple(name for name in _FIELDS if name in backwards),
    )


class MachineMeter:
    """Reads the machine at ``start`` and ``stop`` (around LoadGen's test); ``own``: as
    ``read``'s (a host-timed test's: the host's and its worker's processes)."""

    def __init__(
        self,
        proc: Path = Path("/proc"),
        sysfs: Path = Path("/sys"),
        own: Callable[[], float] | None = None,
    ) -> None:
        self._proc, self._sysfs, self._own = proc, sysfs, own
        self._before: Reading | None = None
        self.unread = ""

    def start(self) -> None:
        try:
            self._before = read(self._proc, self._sysfs, self._own)
        except Unread as exc:
            self.unread = str(exc)

    def stop(self) -> Activity | str:
        """The activity over the region, or why there is none."""
        if self._before is None:
            return self.unread or "the meter was not started"
        try:
            return between(self._before, read(self._proc, self._sysfs, self._own))
        except Unread as exc:
            return str(exc)


def figures(found: Activity | str) -> dict[str, float]:
    """A performance run's machine metrics (``found``: ``MachineMeter.stop``'s); none where
    nothing was read. A share made of a counter that stepped back is undefined and absent
    (never a 0 or a negative share, issue 72); ``contended_bool`` then stands only where the
    other share alone is past its bound."""
    if isinstance(found, str):
        return {}
    out = {}
    others = not set(found.backwards) & set(_BUSY)
    steal = "steal" not in found.backwards
    if others:
        out["machine_others_cpu_ratio"] = found.others_ratio
    if steal:
        out["machine_steal_ratio"] = found.steal_ratio
    if (others and steal) or (others and found.others_ratio > OTHERS_BOUND):
        out["contended_bool"] = 1.0 if found.contended else 0.0
    elif steal and found.steal_ratio > STEAL_BOUND:
        out["contended_bool"] = 1.0
    return out


def details(found: Activity | str) -> dict[str, Any]:
    """What ``details.machine`` keeps of the readings; where nothing was read, the reason."""
    if isinstance(found, str):
        return {"unread": found}
    before, after = found.freq_mhz
    return {
        "window_s": found.window_s,
        "cpus": found.cpus,
        "own_cpu_s": found.own_cpu_s,
        "others_cpu_s": found.others_cpu_s,
        "steal_s": found.steal_s,
        "load_1m": list(found.load_1m),
        "freq_mhz": {"before": before, "after": after} if before or after else "unreadable",
        "bounds": {"others": OTHERS_BOUND, "steal": STEAL_BOUND},
        **(
            {
                "undefined": f"a CPU's {', '.join(found.backwards)} counter stepped back between "
                "the readings: the figures made of it are not recorded"
            }
            if found.backwards
            else {}
        ),
    }
