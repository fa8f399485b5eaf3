"""docs/authoring.md's Hugging Face walkthrough, run as written: a folder trained here, its
manifests written from its files, published, generated from (accuracy and SingleStream)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def walkthrough() -> str:
    text = (ROOT / "docs" / "authoring.md").read_text()
    found = re.search(r"<!-- run by tests/test_hf_walkthrough.py -->\n```sh\n(.*?)```", text, re.S)
    assert found, "docs/authoring.md has no Hugging Face walkthrough block"
    return found.group(1)


def test_the_hugging_face_walkthrough_runs_as_written(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PINBENCH_HOME": str(tmp_path / "home"),
    }
    for name in ("PINBENCH_URL", "PINBENCH_DATABASE_URL"):
        env.pop(name, None)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", walkthrough()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "ROUGE-L" in out and "perplexity" in out
    assert re.search(r"TTFT p50 +[0-9.]+ ms", out) and re.search(r"TPOT p50 +[0-9.]+ ms", out)
    assert re.search(r"LoadGen verdict +VALID", out), out[-2000:]
    assert out.count("succeeded") == 2
