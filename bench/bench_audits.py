"""What the audits cost a run: ``pinbench run --audit`` beside the same run unaudited, and
beside the audited run without TEST04's worker (decision 309), wall seconds of the whole run.

The digits logistic regression (``vision/digits-logreg`` 1.2.0 on ONNX Runtime, SingleStream,
``bench_runners``' request: at least 100 queries over one second, the dataset's 360 samples)
in a fresh home, its inputs cache filled by one untimed run first. Each run, in turn:

* unaudited: ``pinbench run LOCK --runner local`` (LoadGen beside the model);
* audited: ``--audit``: the host keeps the clock, then TEST04's worker answers every sample
  once, then TEST01's worker answers every sample in accuracy mode;
* audited without TEST04: the same with ``runners.audited_run._test04`` replaced by one that
  starts no worker (this script's measure of TEST04's share, not a switch of
  pinbench's).

Each side is a child interpreter calling the CLI's ``main``; the order rotates from run to run.
Reported: medians of each side and of the differences within a run.

Run: ``.venv/bin/python -m bench.bench_audits --runs 5`` (``--json``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from bench._common import (
    Report,
    check_runs,
    command_line,
    log,
    machine,
    parser,
    run_timed,
    scratch,
)
from bench.bench_runners import published_digits

CHILD = """
import sys
from pinbench.cli import main
if sys.argv[1] == "without-test04":
    from pinbench.evaluator.runners import audited_run
    audited_run._test04 = lambda *args, **kwargs: None  # no unique test, no worker for it
flags = [] if sys.argv[1] == "unaudited" else ["--audit"]
raise SystemExit(main(["run", sys.argv[2], "--runner", "local", "--json", *flags]))
"""

SIDES = ("unaudited", "audited", "without-test04")


def _wall(env: dict[str, str], side: str, lock: Path) -> float:
    return run_timed([sys.executable, "-c", CHILD, side, str(lock)], env=env)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="pinbench run --audit (local runner, digits logreg): wall seconds of a run",
        command=command_line("bench.bench_audits", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "audits", keep=args.keep) as root:
        env, lock = published_digits(root)
        _wall(env, "audited", lock)  # untimed: caches filled
        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            order = SIDES[run % 3 :] + SIDES[: run % 3]
            walls = {side: _wall(env, side, lock) for side in order}
            for side in SIDES:
                report.metric(side, "s").values.append(walls[side])
            report.metric("the audits: audited - unaudited", "s").values.append(
                walls["audited"] - walls["unaudited"]
            )
            report.metric("TEST04's worker: audited - without-test04", "s").values.append(
                walls["audited"] - walls["without-test04"]
            )
    report.notes += [
        "wall seconds of a child interpreter running the CLI's main, medians of each side and "
        "of the differences within a run; the order of the sides rotates from run to run",
        "audited runs keep the clock on the host (the model answers from a sandboxed worker)",
    ]
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
