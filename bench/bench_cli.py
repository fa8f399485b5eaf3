"""CPU seconds of a ``pinbench`` command from start to exit, beside ``python -c pass`` and ``pip
--help`` measured in the same run.

Each command runs as a child process; its cost is the child's user + system CPU time
(``os.wait4``'s resource usage), so the figure does not depend on how busy the other core is.
The commands:

* references: ``python -c pass`` (the interpreter's own start) and ``python -m pip --help``
  (the baseline the issue-36 targets are ratios to);
* ``pinbench --help``, ``--version``, ``range ^1 1.2.3``, ``digest FILE`` (a 1 KiB file);
* ``pinbench list``, ``show`` and ``resolve`` on a registry of 1,000 published versions: ten
  datasets ``bench/set-0`` .. ``bench/set-9`` with a hundred versions each (``M.m.0``, M and m
  in 0..9), published once, in-process, through ``pinbench.registry.publish`` into a SQLite
  home. ``list`` prints all 1,000 rows; ``show`` one version; ``resolve`` one caret range over
  a hundred candidates.

The commands alternate within a run (one of each, then the next run). Reported: the median
over ``--runs`` of each command's CPU seconds and its ratio to ``pip --help``'s median; the
targets (issue 36): ``pinbench --help`` <= 0.5x ``pip --help``, ``list``/``show``/``resolve``
<= 1.0x. ``--version``, ``range`` and ``digest`` are shown with their ratio and no target.

Run: ``.venv/bin/python -m bench.bench_cli --runs 5`` (``--json``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench._common import (
    VENV_BIN,
    Check,
    Report,
    check_runs,
    command_line,
    log,
    machine,
    parser,
    scratch,
)

NAMES = 10
VERSIONS_PER_NAME = 100
HELP_TARGET = 0.5
"""``pinbench --help`` over ``pip --help`` (CPU seconds, medians of the same run)."""
READ_TARGET = 1.0
"""``list``/``show``/``resolve`` over ``pip --help``."""


def cpu_seconds(cmd: Sequence[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of one child process; raise with its output if it fails. The
    output goes to a file, never a pipe (a pipe left unread would block a long listing)."""
    with tempfile.TemporaryFile("w+") as output:
        proc = subprocess.Popen(list(cmd), env=env, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            output.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{output.read()}")
    return usage.ru_utime + usage.ru_stime


def build_registry(root: Path) -> Path:
    """A SQLite home holding ``NAMES`` x ``VERSIONS_PER_NAME`` published dataset versions."""
    from pinbench.config import Settings
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.publish import publish
    from pinbench.workspace import Workspace

    home = root / "home"
    files = root / "files"
    files.mkdir(parents=True)
    entries = []
    for path, data in (("x.npy", b"images"), ("y.npy", b"labels")):
        (files / path).write_bytes(data)
        entries.append({"path": path, "sha256": hashlib.sha256(data).hexdigest()})
    ws = Workspace(Settings(home=home, database_url=f"sqlite:///{home}/pinbench.db"))
    try:
        ws.init()
        for i in range(NAMES):
            for n in range(VERSIONS_PER_NAME):
                manifest = parse_manifest(
                    {
                        "kind": "dataset",
                        "name": f"bench/set-{i}",
                        "version": f"{n // 10}.{n % 10}.0",
                        "files": entries,
                        "labels": {"format": "class-index-npy", "path": "y.npy"},
                    }
                )
                publish(ws, manifest, manifest_dir=files, publisher="bench")
    finally:
        ws.close()
    return home


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="CLI start-up: CPU seconds (user + system) of one command, child process",
        command=command_line("bench.bench_cli", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    python = sys.executable
    pinbench = str(VENV_BIN / "pinbench")
    with scratch(args.tmp, "cli", keep=args.keep) as root:
        log(f"publishing {NAMES * VERSIONS_PER_NAME} versions in-process")
        home = build_registry(root)
        small = root / "small.bin"
        small.write_bytes(os.urandom(1024))
        env = {**os.environ, "PINBENCH_HOME": str(home), "COLUMNS": "200"}
        for name in ("PINBENCH_DATABASE_URL", "PINBENCH_URL", "PINBENCH_TOKEN"):
            env.pop(name, None)
        commands: list[tuple[str, list[str], float | None]] = [
            ("python -c pass", [python, "-c", "pass"], None),
            ("pip --help", [python, "-m", "pip", "--help"], None),
            ("pinbench --help", [pinbench, "--help"], HELP_TARGET),
            ("pinbench --version", [pinbench, "--version"], None),
            ("pinbench range ^1 1.2.3", [pinbench, "range", "^1", "1.2.3"], None),
            ("pinbench digest FILE", [pinbench, "digest", str(small)], None),
            ("pinbench list (1,000 rows)", [pinbench, "list"], READ_TARGET),
            ("pinbench show", [pinbench, "show", "dataset/bench/set-5@4.2.0"], READ_TARGET),
            ("pinbench resolve", [pinbench, "resolve", "dataset/bench/set-5@^4"], READ_TARGET),
        ]
        for _label, cmd, _ in commands:  # once untimed: .pyc files written, pages cached
            cpu_seconds(cmd, env)
        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            for label, cmd, _ in commands:
                report.metric(label, "s CPU").values.append(cpu_seconds(cmd, env))
    pip = report.metric("pip --help", "s CPU").median
    for label, _cmd, target in commands:
        if not label.startswith("pinbench"):
            continue
        ratio = report.metric(label, "s CPU").median / pip
        if target is None:
            report.notes.append(f"{label} ÷ pip --help: {ratio:.2f} x (no target)")
        else:
            report.checks.append(
                Check(f"{label} ÷ pip --help", ratio, "x", f"<= {target}", ratio <= target)
            )
    report.notes.append("ratios are of the medians measured in the same run")
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
