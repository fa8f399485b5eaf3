#!/usr/bin/env bash
# Installs the given requirement specifiers (e.g. -e '.[dev]') into the virtual environment
# VENV (default .venv, made by the Makefile) with uv, the installer pinbench already uses
# for its runners' environments: it resolves and installs the same versions as pip (same
# indexes, same constraints) in seconds instead of minutes (issue 49: 15 s against pip's
# 220 s for '.[dev]' on a warm cache; docs/benchmarks.md).
#
# uv does not read pip's configuration, so pip's own settings (`pip config list`: index-url,
# extra-index-url, find-links, constraint) are passed to uv explicitly, with
# --index-strategy unsafe-best-match so that a wheel in a local folder or extra index is found
# the way pip finds it. If uv itself cannot be installed or fails, pip installs instead (said
# on stderr): the result is the same set of packages, only slower.
set -euo pipefail
venv=${VENV:-.venv}
pip=("$venv/bin/python" -m pip)
if [ "${PINBENCH_INSTALL_WITH:-uv}" = pip ]; then
    exec "${pip[@]}" install --quiet "$@"
fi
if ! "${pip[@]}" install -qq 'uv>=0.5'; then  # -qq: not pip's notes on indexes without uv
    echo "install-venv: uv could not be installed; installing with pip" >&2
    exec "${pip[@]}" install --quiet "$@"
fi
mapfile -t options < <("$venv/bin/python" - <<'PY'
import subprocess, sys
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                     capture_output=True, text=True, check=False).stdout
for line in out.splitlines():
    key, _, value = line.partition("=")
    option = key.rsplit(".", 1)[-1].strip()
    values = value.strip().strip("'\"").split()
    if option == "index-url" and values:
        print("--index-url"); print(values[0])
    elif option in ("extra-index-url", "find-links", "constraint"):
        for v in values:
            print(f"--{option}"); print(v)
PY
)
if ! "$venv/bin/python" -m uv pip install --quiet --python "$venv/bin/python" \
        --index-strategy unsafe-best-match "${options[@]}" "$@"; then
    echo "install-venv: uv failed (above); installing with pip" >&2
    exec "${pip[@]}" install --quiet "$@"
fi
