"""docs/authoring.md's Hugging Face walkthrough, run as written: the folder ``make demo``
trained (the run's ``demo_catalog``, the demo's own work folder: issue 49, it trained the
model a second time here), the tiny LLaMA, its manifests written from its files, published,
generated from (accuracy and SingleStream)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import run_doc_block

ROOT = Path(__file__).resolve().parent.parent


PAGE = ROOT / "docs" / "authoring.md"


def test_the_hugging_face_walkthrough_runs_as_written(
    tmp_path: Path, demo_catalog: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO", str(demo_catalog))
    done = run_doc_block(PAGE, "tests/test_hf_walkthrough.py", tmp_path, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "ROUGE-L" in out and "perplexity" in out
    assert re.search(r"TTFT p50 +[0-9.]+ [mµ]s", out), out
    assert re.search(r"TPOT p50 +[0-9.]+ [mµ]s", out), out
    assert re.search(r"LoadGen verdict +VALID", out), out[-2000:]
    assert out.count("succeeded") == 2
