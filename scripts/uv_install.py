"""Install requirement specifiers into a virtual environment with uv, from pip's configuration
(scripts/install-venv.sh runs it; ``make dev`` and ``make demo`` run that):

    VENV/bin/python scripts/uv_install.py VENV/bin/python SPEC...

uv does not read pip's configuration, so ``pip config list`` is read and each setting that
decides where packages come from is passed to uv: ``index-url``, ``extra-index-url``,
``find-links``, ``constraint``, ``no-index`` (true: ``--no-index``), ``trusted-host``
(``--allow-insecure-host``) and ``cert`` (uv reads ``SSL_CERT_FILE``). ``pip config list``
prints each value as a Python literal (a multi-line value as ``'\\nA\\nB'``), so a value is
read with ``ast.literal_eval`` and split on whitespace, as pip splits a list setting.

A setting that changes where packages come from and that uv is not given here (``proxy``,
``client-cert``) makes this exit with ``USE_PIP`` after saying why: the caller installs with
pip, which reads its configuration itself. ``index`` is ``pip search``'s, not ``install``'s,
and is left out as pip install leaves it out. Any other exit status is uv's.

uv is told to compile bytecode, as pip does by default. Without it every process this
environment starts compiles what it imports again when ``PYTHONDONTWRITEBYTECODE`` is set (as
on this project's machines): issue 49 measured ``import torch`` at 5.9 s of CPU against 2.9 s,
and the suite at 40 minutes of pytest against 27 before uv.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

USE_PIP = 3
"""The exit status that tells the caller to install with pip (the reason is on stderr)."""

REPEATED = {
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "trusted-host": "--allow-insecure-host",
}
UNMAPPED = frozenset({"proxy", "client-cert"})
"""pip settings that change where or how packages are fetched and that uv is not given."""
TRUE = frozenset({"1", "true", "yes", "on", "y", "t"})


class UsePip(Exception):
    """pip's configuration holds a setting this script does not give uv."""


def settings(listing: str) -> list[tuple[str, list[str]]]:
    """``(option, values)`` of each line of ``pip config list`` (``SECTION.OPTION='VALUE'``),
    in order; a value is a Python literal, split on whitespace."""
    out = []
    for line in listing.splitlines():
        key, sep, raw = line.partition("=")
        if not sep:
            continue
        raw = raw.strip()
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw
        out.append((key.rsplit(".", 1)[-1].strip(), str(value).split()))
    return out


def uv_options(listing: str) -> tuple[list[str], dict[str, str]]:
    """uv's arguments and environment for pip's configuration ``listing``; ``UsePip`` naming
    a setting uv is not given."""
    args: list[str] = []
    env: dict[str, str] = {}
    for option, values in settings(listing):
        if option == "index-url" and values:
            args += ["--index-url", values[0]]
        elif option in REPEATED:
            for value in values:
                args += [REPEATED[option], value]
        elif option == "no-index" and values and values[0].lower() in TRUE:
            args.append("--no-index")
        elif option == "cert" and values:
            env["SSL_CERT_FILE"] = values[0]
        elif option in UNMAPPED:
            raise UsePip(f"pip's configuration sets `{option}`, which is not given to uv")
    return args, env


def main(argv: list[str]) -> int:
    python, specs = argv[0], argv[1:]
    listing = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    try:
        args, env = uv_options(listing)
    except UsePip as exc:
        print(f"install-venv: {exc}; installing with pip", file=sys.stderr)
        return USE_PIP
    command = [python, "-m", "uv", "pip", "install", "--quiet", "--python", python]
    command += ["--compile-bytecode"]  # as pip does: see the module's docstring
    command += ["--index-strategy", "unsafe-best-match", *args, *specs]
    return subprocess.run(command, env={**os.environ, **env}, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
