"""Every pattern that checks a name, version or flag is anchored at the very end (``\\Z``):
with ``$``, ``re.match`` also accepts the name followed by a newline, which then reached a
lock file's name, a database row and an HTTP header (an attacker's review of issue 74's studies
found it in the study names). One table holds every such pattern."""

from __future__ import annotations

import re

import pytest

from pinbench.artifacts.hf_folder import ARCHITECTURE
from pinbench.artifacts.hf_shapes import _INDEX
from pinbench.authoring.hf_model import HUB
from pinbench.metric_names import _TIMED
from pinbench.registry.chain_spec import STAGE_NAME
from pinbench.registry.model_requirements import NAME as REQUIREMENT
from pinbench.registry.model_requirements import VERSION as REQUIREMENT_VERSION
from pinbench.registry.request import CPU_FLAG
from pinbench.specs.system_names import NAME as SYSTEM
from pinbench.studies.spec import LABEL, NAME

PATTERNS: list[tuple[str, re.Pattern[str], str]] = [
    ("a study's name", NAME, "seed-quick"),
    ("a scenario, family, agent or source", LABEL, "SingleStream"),
    ("a cluster system's name", SYSTEM, "lab-a"),
    ("a required package's name", REQUIREMENT, "onnxruntime"),
    ("a required package's version", REQUIREMENT_VERSION, "1.17.0"),
    ("a CPU flag", CPU_FLAG, "avx2"),
    ("a chain stage's name", STAGE_NAME, "det"),
    ("a Hugging Face architecture", ARCHITECTURE, "BertModel"),
    ("a shard index", _INDEX, "3"),
    ("a model repository at a revision", HUB, "hf://org/name@main"),
    ("a timed metric's key", _TIMED, "latency_p90_ns"),
]


@pytest.mark.parametrize(("what", "pattern", "good"), PATTERNS, ids=[p[0] for p in PATTERNS])
def test_a_name_followed_by_a_newline_is_refused(
    what: str, pattern: re.Pattern[str], good: str
) -> None:
    assert pattern.match(good), what
    assert pattern.match(good + "\n") is None, what
    assert pattern.match(good + "\n" + good) is None, what


def test_every_anchored_pattern_is_in_the_table() -> None:
    """A new ``re.compile(r"^...$")`` fails here: anchor it with ``\\Z`` and add it above."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "pinbench"
    found = []
    for path in sorted(root.rglob("*.py")):
        for line in path.read_text().splitlines():
            if re.search(r're\.compile\(r"\^[^"]*\$"\)', line):
                found.append(f"{path.relative_to(root)}: {line.strip()}")
    allowed = {  # LoadGen's summary lines, matched one line at a time (splitlines)
        "worker/latency_metrics.py",
    }
    assert [f for f in found if f.split(":")[0] not in allowed] == []
