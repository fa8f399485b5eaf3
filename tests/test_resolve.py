"""Resolution cases as data files (tests/data/resolve/*.json), run by one parametrised test."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pinbench.registry.names import Kind, Spec
from pinbench.registry.resolve import (
    Published,
    ResolutionFailed,
    published_from_row,
    resolve,
)

CASES = sorted((Path(__file__).parent / "data" / "resolve").glob("*.json"))


class DictSource:
    """The provider's data as a dict: ``{"kind/name": [{"version", "yanked", "requires"}]}``."""

    def __init__(self, index: dict[str, list[dict[str, Any]]]) -> None:
        self.index = index
        self.calls: list[str] = []

    def versions(self, kind: Kind, name: str) -> Sequence[Published]:
        key = f"{kind.value}/{name}"
        self.calls.append(key)
        return [
            published_from_row(v["version"], v.get("yanked", False), v.get("requires", []))
            for v in self.index.get(key, [])
        ]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_resolution_case(path: Path) -> None:
    case = json.loads(path.read_text())
    specs = [Spec.parse(s) for s in case["request"]]
    source = DictSource(case["index"])
    platform = case.get("platform", "amd64/cpu")
    if "error" in case:
        with pytest.raises(ResolutionFailed) as info:
            resolve(specs, source, platform=platform)
        for needle in case["error"]:
            assert needle in str(info.value), f"{case['reason']}: {info.value}"
    else:
        result = resolve(specs, source, platform=platform)
        got = {f"{r.kind.value}/{r.name}": str(r.version) for r in result.refs}
        assert got == case["expect"], case["reason"]


def test_each_name_is_read_once() -> None:
    """The provider caches: backtracking does not re-query the source."""
    case = json.loads(
        (Path(__file__).parent / "data/resolve/backtrack_model_for_framework.json").read_text()
    )
    source = DictSource(case["index"])
    resolve([Spec.parse(s) for s in case["request"]], source)
    assert sorted(source.calls) == sorted(set(source.calls))
