"""docs/python-api.md's notebook example, executed as written: its Python blocks in order, in
one namespace, with a fresh PINBENCH_HOME-free environment (the example names its own home)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_python_api_page_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (ROOT / "docs" / "python-api.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.M | re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    for name in ("PINBENCH_URL", "PINBENCH_TOKEN", "PINBENCH_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    namespace: dict[str, object] = {"__name__": "notebook"}
    for block in blocks:
        exec(compile(block, "docs/python-api.md", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "['1.0.0', '1.1.0', '1.2.0', '2.0.0-rc.1']"
    status, p50, count, mean = printed[2].split()
    assert status == "succeeded" and int(count) >= 64 and float(mean) > 0
    assert printed[3] == "[]"
    assert printed[4] in ("reproduced", "not reproduced", "inconclusive")
    run = namespace["run"]
    assert float(p50) == run.metrics["latency_p50_ns"]  # type: ignore[attr-defined]
