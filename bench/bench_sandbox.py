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

    args = parser(__doc__).parse_args()
    runs = check_runs(args)
    results: dict[str, list[float]] = {
        "plain": [],
        "sandboxed": [],
        "python -c pass": [],
        "python -c pass, sandboxed": [],
    }
    with scratch(args.tmp, "sandbox") as root:
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
    }
    walls = report["median_wall_s"]
    report["sandbox_adds_wall_s"] = walls["sandboxed"] - walls["plain"]
    report["ratio_wall"] = walls["sandboxed"] / walls["plain"]
    report["sandbox_adds_to_python_c_pass_s"] = (
        walls["python -c pass, sandboxed"] - walls["python -c pass"]
    )
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
