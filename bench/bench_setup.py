"""``make test``'s steps before pytest on a fresh clone: the development install with pip
(before issue 49) against ``scripts/install-venv.sh`` (uv, now), and mypy with an empty cache
(a fresh clone before) against mypy reading the cache another clone left (now).

Clones this repository's HEAD twice into a temporary folder, makes a virtual environment in
each, installs ``.[dev]`` into one with pip and into the other with the script, checks that
both hold the same distributions at the same versions, then runs mypy in the second clone
twice: once with a new cache folder, once with a cache folder that a run in the first clone
filled. Prints each figure and the ratios. Takes about ten minutes on a two-core machine;
run with nothing else running for figures to compare.

Run: ``.venv/bin/python -m bench.bench_setup`` from the repository root.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE_PYTHON = shutil.which("python3.11") or sys.executable


def _timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return took


def _clone(into: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(into)], check=True)
    subprocess.run([BASE_PYTHON, "-m", "venv", str(into / ".venv")], check=True)
    return into


def _freeze(clone: Path) -> list[str]:
    out = subprocess.run(
        [str(clone / ".venv/bin/python"), "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return sorted(line.lower() for line in out.splitlines() if line.strip())


def main() -> None:
    import os

    with tempfile.TemporaryDirectory(prefix="bench-setup-") as temp:
        work = Path(temp)
        by_pip, by_uv = _clone(work / "pip"), _clone(work / "uv")
        install = [".venv/bin/python", "-m", "pip", "install", "--quiet", "-e", ".[dev]"]
        pip = _timed(install, by_pip)
        print(f"pip install -e '.[dev]'            {pip:7.1f} s", flush=True)
        uv = _timed(["bash", "scripts/install-venv.sh", "-e", ".[dev]"], by_uv)
        print(f"scripts/install-venv.sh (uv)       {uv:7.1f} s", flush=True)
        same = _freeze(by_pip) == _freeze(by_uv)
        print(f"same distributions and versions: {same}")
        env = dict(os.environ)
        cold = _timed([".venv/bin/mypy", "--cache-dir", str(work / "cold")], by_uv, env)
        print(f"mypy, empty cache                  {cold:7.1f} s", flush=True)
        _timed([".venv/bin/mypy", "--cache-dir", str(work / "kept")], by_pip, env)
        kept = _timed([".venv/bin/mypy", "--cache-dir", str(work / "kept")], by_uv, env)
        print(f"mypy, another clone's cache        {kept:7.1f} s", flush=True)
        print(f"ratios: install pip/uv {pip / uv:.1f}, mypy cold/kept {cold / kept:.1f}")
        if not same:
            sys.exit("the two installs differ: see pip freeze in each")


if __name__ == "__main__":
    main()
