"""``bench/run_all.py`` runs every benchmark the docs cite, with arguments each one takes (the
benchmarks themselves are run by hand or ``make bench``, never by the suite)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import run_all

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"


def _cited() -> set[str]:
    text = (REPO / "docs" / "benchmarks.md").read_text()
    return set(re.findall(r"bench[/.](bench_[a-z0-9_]+)", text))


def test_every_benchmark_the_docs_cite_is_run_by_run_all() -> None:
    assert _cited() - set(run_all.BENCHMARKS) == set()


def test_run_all_names_only_benchmarks_that_exist() -> None:
    missing = [b for b in run_all.BENCHMARKS if not (BENCH / f"{b}.py").is_file()]
    assert missing == []
    assert set(run_all.OWN_ARGUMENTS) | set(run_all.QUICK) <= set(run_all.BENCHMARKS)


@pytest.mark.parametrize(
    ("quick", "reason"),
    [
        (False, "the full run: every option run_all passes is one the benchmark defines"),
        (True, "--quick: the smaller sizes are options of each benchmark too"),
    ],
)
def test_each_option_run_all_passes_is_one_the_benchmark_takes(quick: bool, reason: str) -> None:
    """Each option (``--x``) run_all puts on a benchmark's command line appears in that
    benchmark's source (its own argparse) or in the common parser (``bench/_common.py``)."""
    common = (BENCH / "_common.py").read_text()
    args = type("Args", (), {"runs": 5, "quick": quick, "tmp": Path("/tmp"), "json": True})()
    unknown = []
    for name in run_all.BENCHMARKS:
        source = (BENCH / f"{name}.py").read_text()
        for option in (a for a in run_all.command(name, args) if a.startswith("--")):
            if f'"{option}"' not in source and f'"{option}"' not in common:
                unknown.append(f"{name} {option}")
    assert unknown == [], reason


def _bench_python(code: str, **env: str) -> str:
    """What ``python -c CODE`` prints from the repository root (``bench`` importable)."""
    import os
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if k != "PINBENCH_BENCH_TMP"} | env
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_the_default_scratch_is_no_one_machines_path() -> None:
    """Issue 72, item 8: the benchmarks' default scratch was ``/work/.bench-tmp``, one
    machine's absolute path; it is under the user's cache folder unless
    ``PINBENCH_BENCH_TMP`` names another."""
    code = "from bench._common import DEFAULT_TMP; print(DEFAULT_TMP)"
    assert _bench_python(code) == str(Path.home() / ".cache" / "pinbench-bench")
    assert _bench_python(code, PINBENCH_BENCH_TMP="/elsewhere") == "/elsewhere"


def test_the_gate_simulations_runs_say_its_trials_are_pooled() -> None:
    """Its ``--runs`` help said the median of repetitions is reported; its sets' trials are
    pooled into each row's counts (issue 72, item 8)."""
    shown = _bench_python(
        "import sys; sys.argv = ['x', '--help']\n"
        "from bench.bench_gate_simulation import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    runs = " ".join(shown.split("--runs RUNS")[-1].split("--json")[0].split())
    assert (
        runs == "trial sets, each of fixed seeds; their trials are pooled into each row's "
        "counts (not medianed)"
    ), runs
