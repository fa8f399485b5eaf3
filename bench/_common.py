"""What the benchmarks share: arguments, timing, the machine's description, scratch space,
the page cache, and the report (a plain-text table or JSON).

Every benchmark repeats its measurement ``--runs`` times and reports the median of the runs. A
ratio to a baseline is computed within each run (pinbench and the baseline measured side by
side, under the same conditions) and the median of those per-run ratios is reported.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
DEFAULT_TMP = Path(
    os.environ.get("PINBENCH_BENCH_TMP") or Path.home() / ".cache" / "pinbench-bench"
)
"""Disk-backed scratch (``/tmp`` may be memory): ``$PINBENCH_BENCH_TMP``, else under the user's
cache folder."""
GIB = 1024**3
MIB = 1024**2


# ---------------------------------------------------------------- arguments


def parser(
    description: str, *, runs_help: str = "repetitions; the median is reported"
) -> argparse.ArgumentParser:
    """The options every benchmark takes; ``runs_help`` where its ``--runs`` means otherwise."""
    p = argparse.ArgumentParser(
        description=description.strip().splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--runs", type=int, default=5, help=runs_help)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--tmp",
        type=Path,
        default=DEFAULT_TMP,
        help=f"disk-backed scratch directory (default {DEFAULT_TMP}; $PINBENCH_BENCH_TMP)",
    )
    p.add_argument("--keep", action="store_true", help="keep the scratch files")
    return p


def check_runs(args: argparse.Namespace) -> int:
    runs = int(args.runs)
    if runs < 1:
        raise SystemExit("--runs must be at least 1")
    return runs


def log(message: str) -> None:
    """Progress goes to stderr so that stdout holds only the report."""
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------- statistics


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100] of a non-empty sample."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def timed(fn: Callable[[], object]) -> float:
    """Wall-clock seconds of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_timed(
    cmd: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> float:
    """Wall-clock seconds of a subprocess (spawn included); raise with its output if it fails."""
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise _failed(cmd, proc)
    return elapsed


def run_checked(
    cmd: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    """Run a setup command; return its stdout."""
    proc = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise _failed(cmd, proc)
    return proc.stdout


def _failed(cmd: Sequence[str], proc: subprocess.CompletedProcess[str]) -> RuntimeError:
    return RuntimeError(
        f"{' '.join(cmd)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )


# ---------------------------------------------------------------- files and the page cache


@contextmanager
def scratch(root: Path, prefix: str, *, keep: bool = False) -> Iterator[Path]:
    """A fresh directory under ``root``; removed afterwards unless ``keep``."""
    root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=root))
    try:
        yield path
    finally:
        if keep:
            log(f"kept {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)


def write_random_file(path: Path, size: int) -> None:
    """``size`` bytes from ``os.urandom`` (incompressible), written and fsynced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = 16 * MIB
    with path.open("wb", buffering=0) as f:
        left = size
        while left:
            n = min(chunk, left)
            f.write(os.urandom(n))
            left -= n
        os.fsync(f.fileno())


def read_through(path: Path) -> None:
    """Read a file once so that its pages are in the page cache."""
    buf = bytearray(8 * MIB)
    view = memoryview(buf)
    with path.open("rb", buffering=0) as f:
        while f.readinto(view):
            pass


def sync() -> None:
    os.sync()


def drop_caches() -> bool:
    """``sync; echo 3 > /proc/sys/vm/drop_caches``; False where not permitted."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


# ---------------------------------------------------------------- the machine


def _first_line(path: str, key: str) -> str:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _mount_of(path: Path) -> tuple[str, str, str]:
    """(device, mount point, filesystem type) holding ``path``."""
    best = ("unknown", "/", "unknown")
    target = str(path.resolve())
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return best
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        device, mount, fstype = parts[0], parts[1], parts[2]
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best[1]):
            best = (device, mount, fstype)
    return best


def _openssl_version() -> str:
    try:
        return subprocess.run(
            ["openssl", "version"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "not installed"


def machine(scratch_dir: Path) -> dict[str, Any]:
    """What the figures depend on: cores, memory, CPU model, the scratch disk, versions."""
    mem_kib = _first_line("/proc/meminfo", "MemTotal").split()[0]
    device, mount, fstype = _mount_of(scratch_dir)
    usage = shutil.disk_usage(scratch_dir if scratch_dir.exists() else scratch_dir.parent)
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "memory_gib": round(int(mem_kib) / 1024**2, 1) if mem_kib.isdigit() else None,
        "cpu_model": _first_line("/proc/cpuinfo", "model name"),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "openssl": _openssl_version(),
        "scratch": str(scratch_dir),
        "disk": f"{device} mounted on {mount} ({fstype}), {usage.free / GIB:.0f} GiB free",
        "load_at_start": load_average(),
    }


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: other work on the machine skews the figures."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


# ---------------------------------------------------------------- the report


@dataclass
class Metric:
    """One measured quantity, one value per run; ``better`` is 'lower' or 'higher'."""

    name: str
    unit: str
    values: list[float] = field(default_factory=list)
    better: str = "lower"

    @property
    def median(self) -> float:
        return median(self.values)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "median": self.median,
            "min": min(self.values),
            "max": max(self.values),
            "runs": self.values,
            "better": self.better,
        }


@dataclass
class Check:
    """A target: the measured median and whether it meets the target."""

    name: str
    value: float
    unit: str
    target: str
    met: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "target": self.target,
            "met": self.met,
        }


@dataclass
class Report:
    title: str
    command: str
    runs: int
    machine: dict[str, Any]
    metrics: list[Metric] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def metric(self, name: str, unit: str, *, better: str = "lower") -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        m = Metric(name, unit, better=better)
        self.metrics.append(m)
        return m

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "command": self.command,
            "runs": self.runs,
            "machine": self.machine,
            "metrics": [m.to_json() for m in self.metrics if m.values],
            "checks": [c.to_json() for c in self.checks],
            "notes": self.notes,
        }

    def render(self) -> str:
        m = self.machine
        lines = [
            f"== {self.title}",
            f"command: {self.command}",
            f"machine: {m['nproc']} cores, {m['memory_gib']} GiB RAM, {m['cpu_model']}; "
            f"{m['disk']}; Python {m['python']}; {m['openssl']}",
            f"load average (1/5/15 min): {m.get('load_at_start')} at start, "
            f"{m.get('load_at_end', load_average())} at end",
            f"runs: {self.runs} (median reported; min and max for spread)",
            "",
        ]
        rows = [
            [x.name, _fmt(x.median), x.unit, _fmt(min(x.values)), _fmt(max(x.values))]
            for x in self.metrics
            if x.values
        ]
        lines += table(["measure", "median", "unit", "min", "max"], rows)
        if self.checks:
            lines.append("")
            lines += table(
                ["target", "median", "wanted", "result"],
                [
                    [c.name, f"{_fmt(c.value)} {c.unit}".strip(), c.target, _verdict(c.met)]
                    for c in self.checks
                ],
            )
        if self.notes:
            lines.append("")
            lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def emit(self, as_json: bool) -> None:
        self.machine["load_at_end"] = load_average()
        if as_json:
            sys.stdout.write(json.dumps(self.to_json(), indent=2) + "\n")
        else:
            sys.stdout.write(self.render())
        sys.stdout.flush()


def _verdict(met: bool) -> str:
    return "MET" if met else "MISSED"


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.3f}"
    if magnitude >= 0.001:
        return f"{value:.4f}"
    return f"{value:.3g}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        out = [cells[0].ljust(widths[0])]
        out += [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join(out).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def command_line(module: str, argv: Sequence[str] | None) -> str:
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join([".venv/bin/python", "-m", module, *args])
