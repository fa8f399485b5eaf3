"""Every wheel pinbench builds from a pinned source archive (``source_builds``), installed into
this interpreter's environment (``make dev``; ``STUDY=engines make study``): built once, kept,
then installed without dependencies (pinbench's extras pin them).

    python -m pinbench.environments.source_install
"""

from __future__ import annotations

import subprocess
import sys

from pinbench.environments.source_builds import (
    SOURCE_BUILDS,
    Say,
    SourceBuildFailed,
    built_wheel,
)
from pinbench.environments.uv_tools import build_env, uv_binary
from pinbench.environments.venv import build_python
from pinbench.errors import UserError


def install(python: str, say: Say) -> None:
    """Each source-built wheel installed into the environment of ``python``."""
    for name in SOURCE_BUILDS:
        wheel = built_wheel(name, say, build_python(say))
        done = subprocess.run(
            [uv_binary(), "pip", "install", "--quiet", "--no-config", "--no-deps",
             "--python", python, "--reinstall", str(wheel.path)],
            capture_output=True, text=True, env=build_env(), check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise SourceBuildFailed(name=name, reason=done.stderr.strip()[-500:])
        say(f"installed {wheel.path.name} (sha256 {wheel.record['wheel_sha256']})")


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python -m pinbench.environments.source_install", file=sys.stderr)
        return 2
    try:
        install(sys.executable, lambda text: print(text, file=sys.stderr, flush=True))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
