"""CPU seconds of the commands people run all day, beside ``pinbench --help``, ``pip --help`` and
``python -c pass`` measured in the same run (issue 67).

Each command runs as a child process and its cost is the child's user + system CPU time
(``os.wait4``: the child and the children it waited for, e.g. ``verify``'s hashing child), as in
``bench/bench_cli.py``, so the figure does not depend on how busy the other cores are. The
commands alternate within a run (one of each, then the next run); the median over ``--runs``.

The home (SQLite, built once, in-process): a framework, a model (a tiny ONNX graph) and a
dataset (a 64 KiB data file and a labels file) published and one request locked
(``bench_verify.build_home``); eight runs of that lockfile recorded with their raw latencies
(``tests/series_data.record``: a series of eight, no evaluation) and a threshold on the series'
``framework_latency_p50_ns`` (a t-test over the window). Then:

* ``verify LOCK``: every pinned file already in the verified-state cache (a cache hit: nothing
  to hash; the lockfile is still re-derived from the registry);
* ``lock REQUEST -o FILE``: the same resolved request again (a new output file each time);
* ``publish MANIFEST``: a dataset of one 4 KiB file, a new version each time;
* ``runs show RUN``, ``runs list`` (the eight runs), ``gate --run RUN`` (the newest run against
  the seven before it) and ``series show SERIES``.

Targets (issue 67): ``verify`` (cache hit) <= 3x ``pinbench --help``; the others <= 0.25 s CPU.
Issue 75: ``runs show``, ``lock`` and ``series show`` <= 5x ``pinbench --help``; ``runs list``
held to the same since it reads with plain SQL too.

Run: ``.venv/bin/python -m bench.bench_cli_work --runs 11`` (``--json``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
from bench.bench_cli import cpu_seconds

VERIFY_TARGET = 3.0
"""A cache-hit ``verify`` over ``pinbench --help`` (medians of the same run)."""
WORK_TARGET_S = 0.25
"""CPU seconds of ``lock``, ``publish`` (4 KiB), ``runs show``, ``gate --run``, ``series show``."""
HELP_TARGET = 5.0
"""``runs show``, ``runs list``, ``lock`` and ``series show`` over ``pinbench --help`` (issue 75,
item 3)."""
HELD_TO_HELP = (
    "pinbench runs show RUN",
    "pinbench runs list",
    "pinbench lock REQUEST",
    "pinbench series show SERIES",
)
RUNS_RECORDED = 8
LABELS_BYTES = 4096


def build(root: Path) -> tuple[dict[str, str], Path, Path, str, str]:
    """The home; (environment, lockfile, request, newest run id, series name)."""
    import numpy as np

    from bench.bench_verify import build_home
    from pinbench.config import Settings
    from pinbench.registry.lockfile import Lockfile
    from pinbench.workspace import Workspace
    from tests.series_data import latencies, record

    data = root / "data"
    data.mkdir(parents=True)
    big = data / "data.bin"
    big.write_bytes(os.urandom(64 * 1024))
    from pinbench.artifacts.digest import hash_file

    home, lock_path = build_home(root, big, hash_file(big)[0])
    env = {**os.environ, "PINBENCH_HOME": str(home), "COLUMNS": "200"}
    for name in ("PINBENCH_DATABASE_URL", "PINBENCH_URL", "PINBENCH_TOKEN"):
        env.pop(name, None)
    ws = Workspace(Settings(home=home, database_url=f"sqlite:///{home / 'pinbench.db'}"))
    rng = np.random.default_rng(67)
    try:
        locked = Lockfile.read(lock_path)
        runs = [record(ws, locked, i, latencies(rng, 100_000)) for i in range(RUNS_RECORDED)]
    finally:
        ws.close()
    pinbench = str(VENV_BIN / "pinbench")
    listed = subprocess.run(
        [pinbench, "series", "list", "--json"], env=env, capture_output=True, text=True, check=True
    )
    (series,) = [s["name"] for s in json.loads(listed.stdout)]
    threshold = ["series", "threshold", "set", series, "framework_latency_p50_ns", "--test", "t"]
    subprocess.run([pinbench, *threshold], env=env, capture_output=True, check=True)
    subprocess.run([pinbench, "verify", str(lock_path)], env=env, capture_output=True, check=True)
    return env, lock_path, root / "request.yaml", runs[-1], series


def publish_manifest(root: Path, version: str) -> Path:
    """A dataset ``bench/small`` at ``version``: one 4 KiB labels file (a valid ``.npy``)."""
    import numpy as np

    from tests.helpers import dataset_manifest, dump

    folder = root / f"small-{version}"
    folder.mkdir(parents=True)
    labels = folder / "labels.npy"
    np.save(labels, np.arange((LABELS_BYTES - 128) // 8, dtype=np.int64) + int(version[2:-2]))
    assert labels.stat().st_size == LABELS_BYTES
    from pinbench.artifacts.digest import hash_file

    digest, size = hash_file(labels)
    entry = {"path": labels.name, "sha256": digest.hex, "size": size}
    return dump(folder / "dataset.yaml", dataset_manifest("bench/small", version, [entry]))


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="Working commands' start-up: CPU seconds (user + system) of one command, child "
        "process",
        command=command_line("bench.bench_cli_work", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    python = sys.executable
    pinbench = str(VENV_BIN / "pinbench")
    with scratch(args.tmp, "cli-work", keep=args.keep) as root:
        log("building the home: three artifacts, a lockfile, eight recorded runs")
        env, lock_path, request, run_id, series = build(root)
        manifests = [publish_manifest(root, f"1.{i}.0") for i in range(runs + 1)]
        outputs = iter(root / f"out-{i}.lock" for i in range(runs + 1))
        fixed: list[tuple[str, list[str]]] = [
            ("python -c pass", [python, "-c", "pass"]),
            ("pip --help", [python, "-m", "pip", "--help"]),
            ("pinbench --help", [pinbench, "--help"]),
            ("pinbench verify LOCK (cache hit)", [pinbench, "verify", str(lock_path)]),
            ("pinbench runs show RUN", [pinbench, "runs", "show", run_id]),
            ("pinbench runs list", [pinbench, "runs", "list"]),
            ("pinbench gate --run RUN", [pinbench, "gate", "--run", run_id]),
            ("pinbench series show SERIES", [pinbench, "series", "show", series]),
        ]

        def each(i: int) -> list[tuple[str, list[str]]]:
            lock = [pinbench, "lock", str(request), "-o", str(next(outputs))]
            publish = [pinbench, "publish", str(manifests[i])]
            return [
                *fixed,
                ("pinbench lock REQUEST", lock),
                ("pinbench publish (4 KiB)", publish),
            ]

        for _label, cmd in each(runs):  # once untimed: .pyc files written, pages cached
            cpu_seconds(cmd, env)
        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            for label, cmd in each(run):
                report.metric(label, "s CPU").values.append(cpu_seconds(cmd, env))
    medians = {m.name: m.median for m in report.metrics}
    helps = medians["pinbench --help"]
    verify = medians["pinbench verify LOCK (cache hit)"]
    report.checks.append(
        Check(
            "verify (cache hit) ÷ pinbench --help",
            verify / helps,
            "x",
            f"<= {VERIFY_TARGET}",
            verify / helps <= VERIFY_TARGET,
        )
    )
    for label, value in medians.items():
        if label.startswith("pinbench") and "verify" not in label and "--help" not in label:
            report.checks.append(
                Check(label, value, "s CPU", f"<= {WORK_TARGET_S}", value <= WORK_TARGET_S)
            )
    for label in HELD_TO_HELP:
        ratio = medians[label] / helps
        report.checks.append(
            Check(f"{label} ÷ pinbench --help", ratio, "x", f"<= {HELP_TARGET}",
                  ratio <= HELP_TARGET)
        )  # fmt: skip
    for base in ("python -c pass", "pip --help", "pinbench --help"):
        ratios = ", ".join(
            f"{label.removeprefix('pinbench ')} {value / medians[base]:.2f}x"
            for label, value in medians.items()
            if label.startswith("pinbench") and label != base
        )
        report.notes.append(f"÷ {base}: {ratios}")
    report.notes.append("ratios are of the medians measured in the same run")
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
