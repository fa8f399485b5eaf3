"""Run the benchmarks (those in ``BENCHMARKS``) one after the other; print all figures.

Each runs in its own process (``python -m bench.NAME`` from the repository root) so that one's
memory and page-cache state do not leak into the next; ``--runs`` (default 5) and ``--tmp``
are passed through, progress goes to stderr, reports to stdout. With ``--json`` the output is
one JSON list holding the three reports. Exits non-zero if a benchmark fails to run (a missed
target is a result, not a failure). Targets: see each benchmark's docstring and
``docs/benchmarks.md``.

Run: ``.venv/bin/python bench/run_all.py --runs 5`` (works as a script or ``-m bench.run_all``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = (
    "bench_verify",
    "bench_publish",
    "bench_resolve",
    "bench_overhead",
    "bench_runners",
    "bench_api",
    "bench_trace",
    "bench_cli",
    "bench_verdict",
    "bench_cluster",
    "bench_ops",
    "bench_distributed",
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Run every pinbench benchmark.")
    p.add_argument("--runs", type=int, default=5, help="repetitions per benchmark (median shown)")
    p.add_argument("--json", action="store_true", help="print one JSON list of the reports")
    p.add_argument("--tmp", type=Path, default=None, help="scratch directory, passed through")
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
        cmd = [sys.executable, "-m", f"bench.{name}", "--runs", str(args.runs)]
        if args.tmp is not None:
            cmd += ["--tmp", str(args.tmp)]
        if args.json:
            cmd.append("--json")
        sys.stderr.write(f"== running {' '.join(cmd[1:])}\n")
        sys.stderr.flush()
        proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(f"{name} exited {proc.returncode}\n")
            status = 1
        if args.json:
            if proc.stdout.strip():
                reports.append(json.loads(proc.stdout))
        else:
            sys.stdout.write(proc.stdout + "\n")
            sys.stdout.flush()
    if args.json:
        sys.stdout.write(json.dumps(reports, indent=2) + "\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
