"""Run every benchmark that ``docs/benchmarks.md`` cites (``BENCHMARKS``) one after the other;
print all figures.

Each runs in its own process (``python -m bench.NAME`` from the repository root) so that one's
memory and page-cache state do not leak into the next; progress goes to stderr, reports to
stdout. Most take the common options (``bench/_common.py``: ``--runs``, ``--json``, ``--tmp``),
passed through; the others (``OWN_ARGUMENTS``) take their own, and their repetitions follow
``--runs`` where they have one. ``--quick`` runs each at a smaller size (``QUICK``, and at most 2
runs): to check that every benchmark still runs, not to report its figures. With ``--json`` the
output is one JSON list: each common benchmark's report, and for the others
``{"benchmark": NAME, "output": TEXT}``. Exits non-zero if a benchmark fails to run (a missed
target is a result, not a failure). Targets: see each benchmark's docstring and
``docs/benchmarks.md``; ``tests/test_bench_index.py`` holds this list to the docs.

Run: ``.venv/bin/python bench/run_all.py --runs 5`` (works as a script or ``-m bench.run_all``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = (
    "bench_verify",
    "bench_publish",
    "bench_resolve",
    "bench_overhead",
    "bench_runners",
    "bench_run_phases",
    "bench_api",
    "bench_trace",
    "bench_cli",
    "bench_cli_work",
    "bench_verdict",
    "bench_cluster",
    "bench_ops",
    "bench_distributed",
    "bench_generation",
    "bench_runs",
    "bench_gate_simulation",
    "bench_loadgen_thread",
    "bench_setup",
    "bench_rank_start",
    "bench_image_build",
    "bench_tls_context",
    "bench_test_engine",
    "bench_sandbox",
    "bench_audits",
    "bench_local_sandbox",
    "bench_clip_lengths",
    "bench_spread_training",
    "bench_engines",
)

OWN_ARGUMENTS: dict[str, Callable[[int, bool], list[str]]] = {
    "bench_loadgen_thread": lambda runs, quick: ["--seconds", "20" if quick else "300"],
    "bench_setup": lambda runs, quick: [],
    "bench_rank_start": lambda runs, quick: ["--rounds", str(runs)],
    "bench_image_build": lambda runs, quick: ["--rounds", str(runs)],
    "bench_tls_context": lambda runs, quick: ["--rounds", str(runs)],
    "bench_test_engine": lambda runs, quick: [],
}
"""Benchmarks without the common options: their arguments for (runs, quick)."""

QUICK: dict[str, list[str]] = {
    "bench_verify": ["--size-mib", "64"],
    "bench_publish": ["--size-mib", "64"],
    "bench_api": ["--seconds", "3"],
    "bench_trace": ["--duration-ms", "200"],
    "bench_cluster": ["--count", "10", "--dispatch", "4"],
    "bench_ops": ["--samples", "50"],
    "bench_distributed": ["--epochs", "1"],
    "bench_spread_training": ["--epochs", "1"],
    "bench_generation": ["--tokens", "4"],
    "bench_engines": ["--tokens", "4", "--queries", "8"],
    "bench_runs": ["--rows", "20000", "--queries", "20", "--baseline-queries", "2"],
    "bench_gate_simulation": ["--part", "gates"],
}
"""Smaller sizes for ``--quick`` (common benchmarks; the others' own arguments above)."""
QUICK_RUNS = 2


def command(name: str, args: argparse.Namespace) -> list[str]:
    """The command line that runs benchmark ``name``."""
    runs = min(args.runs, QUICK_RUNS) if args.quick else args.runs
    cmd = [sys.executable, "-m", f"bench.{name}"]
    if name in OWN_ARGUMENTS:
        return cmd + OWN_ARGUMENTS[name](runs, args.quick)
    cmd += ["--runs", str(runs), *(QUICK.get(name, []) if args.quick else [])]
    if args.tmp is not None:
        cmd += ["--tmp", str(args.tmp)]
    if args.json:
        cmd.append("--json")
    return cmd


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Run every pinbench benchmark.")
    p.add_argument("--runs", type=int, default=5, help="repetitions per benchmark (median shown)")
    p.add_argument("--json", action="store_true", help="print one JSON list of the reports")
    p.add_argument("--tmp", type=Path, default=None, help="scratch directory, passed through")
    p.add_argument("--quick", action="store_true", help="smaller sizes, at most 2 runs each")
    p.add_argument(
        "--only",
        action="append",
        choices=[b.removeprefix("bench_") for b in BENCHMARKS],
        help="run only this benchmark (repeatable)",
    )
    args = p.parse_args(argv)
    chosen = [b for b in BENCHMARKS if not args.only or b.removeprefix("bench_") in args.only]
    reports: list[object] = []
    status = 0
    for name in chosen:
        cmd = command(name, args)
        sys.stderr.write(f"== running {' '.join(cmd[1:])}\n")
        sys.stderr.flush()
        proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(f"{name} exited {proc.returncode}\n")
            status = 1
        if not args.json:
            sys.stdout.write(proc.stdout + "\n")
            sys.stdout.flush()
        elif name in OWN_ARGUMENTS:
            reports.append({"benchmark": name, "output": proc.stdout})
        elif proc.stdout.strip():
            reports.append(json.loads(proc.stdout))
    if args.json:
        sys.stdout.write(json.dumps(reports, indent=2) + "\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
