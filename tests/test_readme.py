"""The walkthrough of docs/authoring.md, run as written: a new user's path from a folder of
JPEGs and a package model to an accuracy and a SingleStream run, through the CLI alone."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import doc_block, run_doc_block

ROOT = Path(__file__).resolve().parent.parent


PAGE = ROOT / "docs" / "authoring.md"


def walkthrough() -> str:
    return doc_block(PAGE, "tests/test_readme.py")


def test_the_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    done = run_doc_block(PAGE, "tests/test_readme.py", tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"photos/sfw/china\.jpg +0 sfw +0 sfw", out), out
    assert re.search(r"top-1 +1\.0000", out) and re.search(r"LoadGen verdict +VALID", out)
    assert out.count("succeeded") >= 4  # two runs, each reported and listed
