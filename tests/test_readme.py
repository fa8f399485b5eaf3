"""The walkthrough of docs/authoring.md, run as written: a new user's path from a folder of
JPEGs and a package model to an accuracy and a SingleStream run, through the CLI alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def walkthrough() -> str:
    text = (ROOT / "docs" / "authoring.md").read_text()
    found = re.search(r"<!-- run by tests/test_readme.py -->\n```sh\n(.*?)```", text, re.DOTALL)
    assert found, "docs/authoring.md has no walkthrough block"
    return found.group(1)


def test_the_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PINBENCH_HOME": str(tmp_path / "home"),
    }
    env.pop("PINBENCH_URL", None)
    env.pop("PINBENCH_DATABASE_URL", None)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", walkthrough()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"photos/sfw/china\.jpg +0 sfw +0 sfw", out), out
    assert re.search(r"top-1 +1\.0000", out) and "LoadGen verdict  VALID" in out
    assert out.count("succeeded") >= 4  # two runs, each reported and listed
