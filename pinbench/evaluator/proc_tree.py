"""A worker's processes as the host sees them in Linux's ``/proc``: the tree under the process
it started (a sandbox's processes included: the host's ``/proc`` shows them), its CPU time and
its largest resident size, read by the host, never said by the worker (issue 71, item 4)."""

from __future__ import annotations

import os
from pathlib import Path


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants alive now (none where ``/proc`` cannot say)."""
    found, todo, seen = [], [pid], set()
    while todo:
        p = todo.pop()
        if p in seen or p <= 0:
            continue
        seen.add(p)
        try:
            children = [
                int(c)
                for task in Path(f"/proc/{p}/task").iterdir()
                for c in (task / "children").read_text().split()
            ]
        except (OSError, ValueError):
            continue
        found.append(p)
        todo += children
    return found


def cpu_s(pid: int) -> float:
    """User and system seconds of process ``pid`` and its descendants (those ended and waited
    for included); 0 where it cannot be read."""
    hz = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in tree(pid):
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        except (OSError, ValueError):
            continue
    return total / hz


STOPPED_STATES = ("T", "t")
"""``/proc/PID/stat``'s states of a process that does not run until another lets it: stopped by
a signal (SIGSTOP, SIGTSTP), or held by a tracer (ptrace)."""


def stopped(pid: int) -> list[tuple[int, str]]:
    """The processes of ``pid``'s tree that are stopped now, with their state
    (``STOPPED_STATES``)."""
    found = []
    for p in tree(pid):
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
            state = stat[stat.rindex(")") + 2 :].split(maxsplit=1)[0]
        except (OSError, ValueError, IndexError):
            continue
        if state in STOPPED_STATES:
            found.append((p, state))
    return found


def peak_rss_bytes(pid: int) -> int:
    """The largest peak resident size (``VmHWM``) among ``pid`` and its descendants alive now;
    0 where none can be read."""
    peak = 0
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
                    break
        except (OSError, ValueError, IndexError):
            continue
    return peak


class PeakReader:
    """``peak_rss_bytes`` of a process read on a thread of its own every ``every_s`` from
    ``start`` to ``stop``: for a worker the host does not wait for itself (a container's first
    process); ``bytes`` the largest seen (0: none read)."""

    def __init__(self, every_s: float = 0.05) -> None:
        import threading

        self.bytes = 0
        self._every_s = every_s
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, pid: int) -> None:
        import threading

        if pid <= 0:
            return
        self._thread = threading.Thread(target=self._read, args=(pid,), daemon=True)
        self._thread.start()

    def _read(self, pid: int) -> None:
        while True:
            self.bytes = max(self.bytes, peak_rss_bytes(pid))
            if self._done.wait(self._every_s):
                return

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
