"""What opening a data-only model in the sandbox adds to a local run (issue 84, item 7;
decision 310): ``pinbench run LOCK --runner local`` (the model in a sandboxed child, LoadGen
beside it there) beside the same run with ``--sandbox none`` (the model in pinbench's own
process, recorded UNSANDBOXED), wall seconds of the whole command.

The digits and digits-CNN catalog parts in a fresh home, its inputs cache filled by one
untimed run of each side first, then for each lockfile, in turn:

* ``logreg SingleStream``: ``vision/digits-logreg`` 1.2.0 on ONNX Runtime, SingleStream, at
  least 100 queries over one second (``bench_runners``' request);
* ``logreg accuracy``, ``cnn-onnx accuracy``, ``cnn-torch accuracy``: the digits logistic
  regression and CNN (ONNX on ONNX Runtime, safetensors on PyTorch) over the 360 test digits.

Each side is a child interpreter calling the CLI's ``main``; which side goes first alternates
from run to run. Reported: medians of each side and of the differences within a run. Beside
them, what giving a worker the evaluator it imports costs: the worker's side copied file by
file (what every worker was given before, and an unsandboxed one still is) against the empty
entries a sandboxed worker's binds go over (``runners.evaluator_copy``), alternating.

Run: ``.venv/bin/python -m bench.bench_local_sandbox --runs 5`` (``--json``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import yaml

from bench._common import (
    Report,
    check_runs,
    command_line,
    log,
    machine,
    parser,
    run_checked,
    run_timed,
    scratch,
)
from bench.bench_runners import REQUEST, published_digits

CHILD = """
import sys
from pinbench.cli import main
raise SystemExit(main(["run", sys.argv[1], "--runner", "local", "--json", *sys.argv[2:]]))
"""
ACCURACY: dict[str, dict[str, Any]] = {
    "logreg accuracy": {"model": "vision/digits-logreg@1.2.0", "framework": "onnxruntime@*"},
    "cnn-onnx accuracy": {"model": "vision/digits-cnn-onnx@1", "framework": "onnxruntime@*"},
    "cnn-torch accuracy": {"model": "vision/digits-cnn-torch@1", "framework": "torch@*"},
}
SIDES = {"sandboxed": [], "in-process (--sandbox none)": ["--sandbox", "none"]}


def _wall(env: dict[str, str], lock: Path, flags: list[str]) -> float:
    return run_timed([sys.executable, "-c", CHILD, str(lock), *flags], env=env)


def _made(root: Path, bound: bool) -> float:
    """Seconds to give one worker the evaluator: a copy of the worker's side
    (``copy_evaluator``, an unsandboxed worker's) or the entries its binds go over
    (``evaluator_copy.side_binds``, a sandboxed worker's); removed after."""
    from pinbench.artifacts.scratch import remove_tree
    from pinbench.evaluator.runners.evaluator_copy import side_binds
    from pinbench.worker.source import copy_evaluator

    where = root / "evaluator"
    began = time.perf_counter()
    if bound:
        where.mkdir()
        side_binds(where)
    else:
        copy_evaluator(where)
    took = time.perf_counter() - began
    remove_tree(where)
    return took


def _locks(env: dict[str, str], root: Path, first: Path) -> dict[str, Path]:
    """Each lockfile of the comparison, by its name in the report."""
    locks = {"logreg SingleStream": first}
    for name, part in ACCURACY.items():
        request = {**part, "dataset": REQUEST["dataset"], "scenario": {"mode": "accuracy"}}
        path = root / f"{name.replace(' ', '-')}.yaml"
        path.write_text(yaml.safe_dump(request))
        lock = path.with_suffix(".lock")
        run_checked([sys.executable, "-m", "pinbench", "lock", str(path), "-o", str(lock)], env=env)
        locks[name] = lock
    return locks


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="a data-only model's local run, sandboxed against in-process: wall seconds",
        command=command_line("bench.bench_local_sandbox", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "local-sandbox", keep=args.keep) as root:
        env, first = published_digits(root, ("digits", "cnn"))
        locks = _locks(env, root, first)
        for lock in locks.values():  # untimed: inputs caches filled, files in the page cache
            for flags in SIDES.values():
                _wall(env, lock, flags)
        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            order = list(SIDES.items())
            if run % 2:
                order.reverse()
            for name, lock in locks.items():
                walls = {side: _wall(env, lock, flags) for side, flags in order}
                for side, wall in walls.items():
                    report.metric(f"{name}: {side}", "s").values.append(wall)
                report.metric(f"{name}: the sandbox adds", "s").values.append(
                    walls["sandboxed"] - walls["in-process (--sandbox none)"]
                )
        for _ in range(runs):
            for name, bound in (("copied", False), ("bound (the entries made)", True)):
                report.metric(f"the evaluator's files {name}", "s").values.append(
                    _made(root, bound)
                )
    report.notes += [
        "wall seconds of a child interpreter running `pinbench run --runner local`, medians of "
        "each side and of the differences within a run; which side goes first alternates",
        "sandboxed: the model opened in a bubblewrap child of the CLI's process, LoadGen beside "
        "it there; in-process: the CLI's own process opens it (recorded UNSANDBOXED)",
    ]
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
