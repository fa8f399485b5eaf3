"""uv and pip as pinbench's environment builders start them: uv from pinbench's own Python
environment, pip's index settings passed to uv, and the little of this process's environment
they see (``venv``, ``source_builds``, the converters' environments)."""

from __future__ import annotations

import subprocess
import sys


def uv_binary() -> str:
    """uv as installed in pinbench's own Python environment (``pinbench.programs``): the
    builder of every hash-pinned environment is never one found by PATH."""
    from pinbench.programs import beside_python

    return str(beside_python("uv"))


def pip_index_args() -> list[str]:
    """pip's index settings, as uv options."""
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    args: list[str] = []
    for line in out.splitlines():
        key, _, value = line.partition("=")
        option = key.rsplit(".", 1)[-1]
        values = value.strip().strip("'\"").split()
        if option == "index-url" and values:
            args += ["--index-url", values[0]]
        elif option in ("extra-index-url", "find-links"):
            for v in values:
                args += [f"--{option}", v]
    return args


KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR")
"""What a build's processes see of this process's environment (``build_env``)."""
KEPT_PREFIXES = ("UV_", "PIP_", "XDG_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "REQUESTS_CA")


def build_env() -> dict[str, str]:
    """The environment uv and pip run in: their own settings, paths, proxies and
    certificates, nothing else of this process's (no database URL, key or token)."""
    import os

    return {k: v for k, v in os.environ.items() if k in KEPT or k.upper().startswith(KEPT_PREFIXES)}
