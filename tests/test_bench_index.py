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
