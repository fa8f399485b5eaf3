"""CPU seconds of the commands people run all day, beside ``pinbench --help``, ``pip --help`` and
``python -c pass`` measured in the same run (issue 67), on a home with history (issue 83).

Each command runs as a child process and its cost is the child's user + system CPU time
(``os.wait4``: the child and the children it waited for, e.g. ``verify``'s hashing child), as in
``bench/bench_cli.py``, so the figure does not depend on how busy the other cores are. The
commands alternate within a run (one of each, then the next run); the median over ``--runs``.

The home (SQLite, built once, in-process: ``tests.run_kinds.history_home``): a framework, a model
(a tiny ONNX graph) and a dataset published and one request locked; four performance runs of it
with their raw latencies and a threshold on their series' ``framework_latency_p50_ns``; then one
run of every kind the demo makes (``record_every_kind``: a performance run, a traced one, an
accuracy run of each task with every metric it declares, a generating run's token latencies, an
operator run, a training run and a distributed one), recorded without evaluation. Then:

* ``verify LOCK``: every pinned file already in the verified-state cache (a cache hit: nothing
  to hash; the lockfile is still re-derived from the registry);
* ``lock REQUEST -o FILE``: the same resolved request again (a new output file each time);
* ``publish MANIFEST``: a dataset of one 4 KiB file, a new version each time;
* ``runs show RUN`` (the traced run), ``runs list`` (every run), ``gate --run RUN`` (the newest
  performance run against the four before it) and ``series show SERIES``.

Target (issue 83, item 7): each of them <= 3x ``pinbench --help`` on this home. pinbench's
modules are compiled first (``compiled``), as an installed pinbench's are.

Run: ``.venv/bin/python -m bench.bench_cli_work --runs 11`` (``--json``).
"""

from __future__ import annotations

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
from tests.run_kinds import SERIES

HELP_TARGET = 3.0
"""Each working command over ``pinbench --help`` (medians of the same run; issue 83, item 7)."""
LABELS_BYTES = 4096


def build(root: Path) -> tuple[dict[str, str], Path, Path, dict[str, str]]:
    """The home; (environment, lockfile, request, run ids by kind)."""
    from tests.run_kinds import history_home

    history = history_home(root)
    env = {**os.environ, "PINBENCH_HOME": str(history.home), "COLUMNS": "200"}
    for name in ("PINBENCH_DATABASE_URL", "PINBENCH_URL", "PINBENCH_TOKEN"):
        env.pop(name, None)
    pinbench = str(VENV_BIN / "pinbench")
    verify = [pinbench, "verify", str(history.lockfile)]
    subprocess.run(verify, env=env, capture_output=True, check=True)
    return env, history.lockfile, history.request, history.runs


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


def compiled() -> None:
    """pinbench's modules compiled, as an installed wheel's are: where ``.pyc`` files are not
    written (``PYTHONDONTWRITEBYTECODE``) a module edited since ``make dev`` compiled it would
    be compiled again by every command measured (a tenth of a second of CPU for a few)."""
    import compileall

    from bench._common import REPO

    compileall.compile_dir(REPO / "pinbench", quiet=1)


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
    compiled()
    with scratch(args.tmp, "cli-work", keep=args.keep) as root:
        log("building the home: three artifacts, a lockfile, a run of every kind")
        env, lock_path, request, run_ids = build(root)
        manifests = [publish_manifest(root, f"1.{i}.0") for i in range(runs + 1)]
        outputs = iter(root / f"out-{i}.lock" for i in range(runs + 1))
        fixed: list[tuple[str, list[str]]] = [
            ("python -c pass", [python, "-c", "pass"]),
            ("pip --help", [python, "-m", "pip", "--help"]),
            ("pinbench --help", [pinbench, "--help"]),
            ("pinbench verify LOCK (cache hit)", [pinbench, "verify", str(lock_path)]),
            ("pinbench runs show RUN (traced)", [pinbench, "runs", "show", run_ids["traced"]]),
            ("pinbench runs list", [pinbench, "runs", "list"]),
            ("pinbench gate --run RUN", [pinbench, "gate", "--run", run_ids["performance"]]),
            ("pinbench series show SERIES", [pinbench, "series", "show", SERIES]),
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
    for label, value in medians.items():
        if label.startswith("pinbench") and label != "pinbench --help":
            ratio = value / helps
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
