"""What the sandbox adds to each worker's start (issue 71): a worker process started as the
runners start it, in bubblewrap and without, alternating, in the same run.

Each start is ``python -s -m pinbench.worker.main`` with no job (it imports the worker's
modules, NumPy and msgspec among them, prints its usage and exits 2): the part of every run that
the sandbox can change. It runs from the same folder both ways (``process.worker_start``: a
copy of the evaluator, an empty working folder; made before the clock starts), with this
interpreter, once plain and once through ``sandbox.wrap`` (new user, PID, IPC, UTS, network and
cgroup namespaces, the read-only binds, ``/tmp`` a tmpfs). Wall time is the figure: the
namespaces and mounts cost time in the kernel, and the CPU time ``os.wait4`` gives for
bubblewrap leaves out the worker (its PID namespace's first process reaps it, not bubblewrap).
Medians over ``--runs`` starts each, on a quiet machine.

Before the starts, the copy each worker is given (``source.copy_evaluator``: the worker's side,
``pinbench/worker`` and the units it imports, decision 302) is timed against a copy of the
whole package made the same way (what every worker was given before), alternating.

Run: ``.venv/bin/python -m bench.bench_sandbox --runs 21`` (``--json``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from bench._common import check_runs, command_line, log, machine, median, parser, scratch


def _start(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """One start's wall seconds."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    proc.wait()
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 2):  # 2: the worker's usage (it imported and ran)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"the worker did not start as expected ({proc.returncode}): {err}")
    if proc.stderr:
        proc.stderr.close()
    return wall


def main() -> int:
    from pinbench.evaluator.runners.process import WorkerStart, worker_start
    from pinbench.evaluator.runners.sandbox import Confinement
    from pinbench.worker.source import PACKAGE, copy_evaluator, evaluator_files

    args = parser(__doc__).parse_args()
    runs = check_runs(args)
    results: dict[str, list[float]] = {
        "plain": [],
        "sandboxed": [],
        "python -c pass": [],
        "python -c pass, sandboxed": [],
    }
    copies: dict[str, list[float]] = {"worker side": [], "whole package": []}
    with scratch(args.tmp, "sandbox") as root:
        whole = sorted(
            p
            for p in PACKAGE.rglob("*")
            if p.is_file() and p.suffix in {".py", ".typed"} and "__pycache__" not in p.parts
        )
        for i in range(runs):
            for name, files in (("worker side", None), ("whole package", whole)):
                started = time.perf_counter()
                copy_evaluator(root / f"copy-{name.replace(' ', '-')}-{i}", files=files)
                copies[name].append(time.perf_counter() - started)
        counts = {"worker side": len(evaluator_files()), "whole package": len(whole)}
        plain = worker_start(sys.executable, root / "plain", [])
        confine = Confinement(root / "box")
        (root / "box").mkdir()
        confine.prepare()
        boxed = worker_start(sys.executable, root / "box" / "worker", [], confine=confine)
        bare = WorkerStart(argv=[sys.executable, "-s", "-c", "pass"], env=plain.env, cwd=plain.cwd)
        bare_boxed = WorkerStart(
            argv=[*boxed.argv[: boxed.argv.index("--") + 1], sys.executable, "-s", "-c", "pass"],
            env=boxed.env,
            cwd=boxed.cwd,
        )
        starts = {
            "plain": plain,
            "sandboxed": boxed,
            "python -c pass": bare,
            "python -c pass, sandboxed": bare_boxed,
        }
        for start in starts.values():  # warm the page cache
            _start(start.argv, start.env, start.cwd)
        for i in range(runs):
            for name, start in starts.items():
                results[name].append(_start(start.argv, start.env, start.cwd))
            log(f"run {i + 1}/{runs}")
        facts = machine(root)
    report: dict[str, Any] = {
        "title": "a worker's start, in the sandbox and without",
        "command": command_line("bench.bench_sandbox", None),
        "runs": runs,
        "machine": facts,
        "median_wall_s": {k: median(v) for k, v in results.items()},
        "copy_median_s": {k: median(v) for k, v in copies.items()},
        "copy_files": counts,
    }
    walls = report["median_wall_s"]
    report["sandbox_adds_wall_s"] = walls["sandboxed"] - walls["plain"]
    report["ratio_wall"] = walls["sandboxed"] / walls["plain"]
    report["sandbox_adds_to_python_c_pass_s"] = (
        walls["python -c pass, sandboxed"] - walls["python -c pass"]
    )
    copied = report["copy_median_s"]
    report["copy_ratio"] = copied["worker side"] / copied["whole package"]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"worker start, median of {runs}: plain {walls['plain'] * 1e3:.1f} ms, "
            f"sandboxed {walls['sandboxed'] * 1e3:.1f} ms (wall)"
        )
        print(
            f"the sandbox adds {report['sandbox_adds_wall_s'] * 1e3:.1f} ms per worker start "
            f"(x{report['ratio_wall']:.3f}); to `python -c pass` "
            f"({walls['python -c pass'] * 1e3:.1f} ms) it adds "
            f"{report['sandbox_adds_to_python_c_pass_s'] * 1e3:.1f} ms"
        )
        print(
            f"the copy a worker is given, median of {runs}: the worker's side "
            f"({counts['worker side']} files) {copied['worker side'] * 1e3:.1f} ms, the whole "
            f"package ({counts['whole package']} files) {copied['whole package'] * 1e3:.1f} ms "
            f"(x{report['copy_ratio']:.3f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
