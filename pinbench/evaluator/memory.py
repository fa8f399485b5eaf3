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

PROC = Path("/proc/self")


class PeakMemory:
    def __init__(self, proc: Path = PROC) -> None:
        self._proc = proc
        self.source = "VmHWM since the evaluation began (/proc/self/clear_refs)"
        try:
            (proc / "clear_refs").write_text("5")
        except OSError:
            self.source = "ru_maxrss: the evaluator process's peak since it started"

    def peak_bytes(self) -> int:
        try:
            for line in (self._proc / "status").read_text().splitlines():
                if line.startswith("VmHWM:") and self.source.startswith("VmHWM"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            self.source = "ru_maxrss: the evaluator process's peak since it started"
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
