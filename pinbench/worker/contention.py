"""What else the machine did while a run was timed, and whether that makes its timings suspect
(issue 64, item 7; decision 278).

The same lockfile recorded p50 525.55 ms beside other work and 90.66 ms alone, both VALID by
LoadGen's rules: LoadGen judges how many queries ran and for how long, not what else ran. So
around the timed region the evaluator reads what Linux keeps of the machine (``/proc/stat``'s
CPU time, in every state, summed over the CPUs the evaluator may run on, its affinity; the
1-minute load; each CPU's frequency where ``cpufreq`` is readable) and its own CPU time
(``getrusage``, every thread of the evaluator process: in a server's in-process ``local``
runner, other runs' threads count as its own).

The timed region (the window) is LoadGen's test as it issues queries: it opens at the first
query LoadGen issues (``MachineMeter.begin``; the reading is taken on a thread of its own,
beside that query, never inside it) and closes when LoadGen's test returns, before its logs
are read. LoadGen's planning of its query schedule, before its first query, is outside it
(issue 83: 20 s of planning 370,166 queries had been counted as the test's).

From the two readings:

- ``machine_others_cpu_ratio``: the CPU time every other process (and the kernel's
  interrupts) took over the window, over the CPU time the machine had in it. Both are
  ``/proc/stat``'s ticks over the same interval: others' are the busy ticks (``user``,
  ``nice``, ``system``, ``irq``, ``softirq``) less the run's own CPU time and less two ticks
  a CPU (each reading may be a tick off); the machine's are every state's ticks (busy, idle,
  ``iowait``, ``steal``). A part over its whole: never above 1, whatever the wall clock did
  between the readings (issue 83 recorded 1.0035: others' ticks over CPUs x a wall window
  taken apart from them). The kernel counts busy ticks by sampling each tick while the run's
  own time is the scheduler's exact count: where the own time covers the busy ticks, the
  others took less than the readings resolve, and the share is 0;
- ``machine_steal_ratio``: the time a hypervisor gave the machine's virtual CPUs to others
  (``steal``), over the same;
- ``contended_bool``: 1 where either is past its bound (``OTHERS_BOUND``, ``STEAL_BOUND``): as
  pyperf's ``check`` flags a benchmark whose numbers are unstable, this flags a run whose
  numbers were taken beside other work. Not a verdict on the numbers, a reason to rerun on a
  quiet machine before reading them.

The readings themselves (seconds, load, frequencies) are in ``details.machine``. A machine
without ``/proc/stat`` records none of it and says why: an unread figure is never a 0. A
figure these readings cannot define (``undefined``: a counter that stepped back, a window
under one tick, the run's own CPU time past what its CPUs had, a share outside [0, 1]) is
not recorded; its reason is kept (``details.machine.undefined``, the run's
``undefined_metrics``). In a container ``/proc/stat`` is the host's, as the contention is.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OTHERS_BOUND = 0.10
"""Other processes' share of the machine's CPU past which a run is flagged contended."""
STEAL_BOUND = 0.05
"""A hypervisor's steal, as a share of the machine's CPU, past which a run is flagged."""

OTHERS = "machine_others_cpu_ratio"
STEAL = "machine_steal_ratio"
CONTENDED = "contended_bool"

_BUSY = ("user", "nice", "system", "irq", "softirq")
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(frozen=True, slots=True)
class Reading:
    at_s: float
    """``time.monotonic()`` as ``/proc/stat`` was read."""
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
    """The wall time between the readings (``details`` only: the shares are of ticks)."""
    cpus: int
    own_cpu_s: float
    others_cpu_s: float
    steal_s: float
    load_1m: tuple[float | None, float | None]
    freq_mhz: tuple[list[float], list[float]]
    backwards: tuple[str, ...] = ()
    """The states whose counter stepped back on some CPU between the readings (a hypervisor's
    ``steal`` can): the figures made of them are undefined (``figures``)."""
    machine_cpu_s: float = 0.0
    """The CPU time the counted CPUs had between the readings: every state's ticks."""
    busy_cpu_s: float = 0.0
    """Of it, the busy states' (``_BUSY``): the run's own and every other's."""

    @property
    def others_ratio(self) -> float | None:
        """Others' CPU over the machine's; None where the window holds no tick."""
        return self.others_cpu_s / self.machine_cpu_s if self.machine_cpu_s > 0 else None

    @property
    def steal_ratio(self) -> float | None:
        return self.steal_s / self.machine_cpu_s if self.machine_cpu_s > 0 else None

    @property
    def contended(self) -> bool:
        others, steal = self.others_ratio, self.steal_ratio
        return (others is not None and others > OTHERS_BOUND) or (
            steal is not None and steal > STEAL_BOUND
        )

    @property
    def rounding_s(self) -> float:
        """Two ticks a CPU: each reading may be a tick off on each CPU."""
        return 2 * self.cpus / os.sysconf("SC_CLK_TCK")


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
    at_s = time.monotonic()  # beside the ticks it dates, before anything else is read
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
        at_s,
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
        others_cpu_s=max(0.0, busy_s - own - rounding),  # 0: less than the ticks resolve
        steal_s=delta.get("steal", 0) / hz,
        load_1m=(before.load_1m, after.load_1m),
        freq_mhz=(before.freq_mhz, after.freq_mhz),
        backwards=tuple(name for name in _FIELDS if name in backwards),
        machine_cpu_s=sum(delta.get(k, 0) for k in _FIELDS) / hz,
        busy_cpu_s=busy_s,
    )


class MachineMeter:
    """Reads the machine at the window's opening (``start``: now; ``watch`` then ``begin``: at
    the first query) and at its close (``end``); ``stop`` says what it did in between.
    ``own``: as ``read``'s (a host-timed test's: the host's and its worker's processes)."""

    def __init__(
        self,
        proc: Path = Path("/proc"),
        sysfs: Path = Path("/sys"),
        own: Callable[[], float] | None = None,
    ) -> None:
        self._proc, self._sysfs, self._own = proc, sysfs, own
        self._before: Reading | None = None
        self._after: Reading | None = None
        self._began = False
        self._wake = threading.Event()
        self._opener: threading.Thread | None = None
        self._ending = threading.Lock()
        self._ended = False
        self.unread = ""

    def start(self) -> None:
        """Open the window now."""
        self._before = self._read()

    def watch(self) -> None:
        """Open the window at ``begin``, on a thread of its own that waits for it: whatever
        calls ``begin`` (LoadGen's first query) waits for no reading."""
        self._opener = threading.Thread(target=self._open, name="pinbench-meter", daemon=True)
        self._opener.start()

    def begin(self) -> None:
        """The timed work has begun (``watch``'s window opens now)."""
        if not self._began:
            self._began = True
            self._wake.set()

    def end(self) -> None:
        """Close the window now (once: a later call changes nothing)."""
        with self._ending:
            if self._ended:
                return
            self._ended = True
            if self._opener is not None:
                self._wake.set()
                self._opener.join()
            if self._before is not None:
                self._after = self._read()

    def stop(self) -> Activity | str:
        """The activity over the window (closed now if ``end`` was not called), or why there
        is none."""
        self.end()
        if self._before is None or self._after is None:
            if self.unread:
                return self.unread
            if self._opener is not None and not self._began:
                return "no query was issued: the timed window never opened"
            return "the meter was not started"
        return between(self._before, self._after)

    def _open(self) -> None:
        self._wake.wait()
        if self._began:
            self._before = self._read()

    def _read(self) -> Reading | None:
        try:
            return read(self._proc, self._sysfs, self._own)
        except Unread as exc:
            self.unread = str(exc)
            return None


def undefined(found: Activity | str) -> dict[str, str]:
    """Each machine figure these readings do not define, with its reason: never a clamped 0, a
    negative or a share above 1 (issues 72 and 83). None where nothing was read (``details``
    says why)."""
    out: dict[str, str] = {}
    if isinstance(found, str):
        return out
    stepped = [name for name in found.backwards if name in _BUSY]
    if stepped:
        out[OTHERS] = _stepped(stepped)
    if "steal" in found.backwards:
        out[STEAL] = _stepped(["steal"])
    if found.machine_cpu_s <= 0:
        short = "the window held no clock tick of /proc/stat: there is no share to take"
        out.setdefault(OTHERS, short)
        out.setdefault(STEAL, short)
    elif found.own_cpu_s > found.machine_cpu_s + found.rounding_s:
        out.setdefault(
            OTHERS,
            f"the run's own CPU time ({found.own_cpu_s:.3f} s) exceeds what its "
            f"{found.cpus} CPU(s) had over the window ({found.machine_cpu_s:.3f} s): some of "
            "its processes ran on CPUs it does not count",
        )
    for name, share in ((OTHERS, found.others_ratio), (STEAL, found.steal_ratio)):
        if name not in out and share is not None and not 0.0 <= share <= 1.0:
            out[name] = f"measured {share:.4f}, outside [0, 1]: the readings contradict each other"
    shares = {OTHERS: found.others_ratio, STEAL: found.steal_ratio}
    past = {OTHERS: OTHERS_BOUND, STEAL: STEAL_BOUND}
    if any(name in out for name in shares) and not any(
        name not in out and (shares[name] or 0.0) > past[name] for name in shares
    ):
        out[CONTENDED] = "made of " + " and ".join(name for name in shares if name in out)
        out[CONTENDED] += ", undefined, and no other share is past its bound"
    return out


def _stepped(names: list[str]) -> str:
    return (
        f"a CPU's {', '.join(names)} counter stepped back between the readings: the "
        "figures made of it are not recorded"
    )


def figures(found: Activity | str) -> dict[str, float]:
    """A performance run's machine metrics (``found``: ``MachineMeter.stop``'s); none where
    nothing was read. A figure ``undefined`` names is absent (never a 0, a negative or a
    share above 1, issues 72 and 83); ``contended_bool`` then stands only where a defined
    share alone is past its bound."""
    if isinstance(found, str):
        return {}
    gone = undefined(found)
    out = {
        name: share
        for name, share in ((OTHERS, found.others_ratio), (STEAL, found.steal_ratio))
        if name not in gone and share is not None
    }
    if CONTENDED not in gone:
        flagged = any(
            out.get(n, 0.0) > b for n, b in ((OTHERS, OTHERS_BOUND), (STEAL, STEAL_BOUND))
        )
        out[CONTENDED] = 1.0 if flagged else 0.0
    return out


def details(found: Activity | str) -> dict[str, Any]:
    """What ``details.machine`` keeps of the readings; where nothing was read, the reason."""
    if isinstance(found, str):
        return {"unread": found}
    before, after = found.freq_mhz
    gone = undefined(found)
    return {
        "window_s": found.window_s,
        "cpus": found.cpus,
        "machine_cpu_s": found.machine_cpu_s,
        "busy_cpu_s": found.busy_cpu_s,
        "own_cpu_s": found.own_cpu_s,
        "others_cpu_s": found.others_cpu_s,
        "steal_s": found.steal_s,
        "load_1m": list(found.load_1m),
        "freq_mhz": {"before": before, "after": after} if before or after else "unreadable",
        "bounds": {"others": OTHERS_BOUND, "steal": STEAL_BOUND},
        **({"undefined": gone} if gone else {}),
    }
