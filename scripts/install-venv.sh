#!/usr/bin/env bash
# Installs the given requirement specifiers (e.g. -e '.[dev]') into the virtual environment
# VENV (default .venv, made by the Makefile) with uv, the installer pinbench already uses
# for its runners' environments: it resolves and installs the same versions as pip (same
# indexes, same constraints) in seconds instead of minutes (issue 49: 15 s against pip's
# 220 s for '.[dev]' on a warm cache; docs/benchmarks.md).
#
# uv does not read pip's configuration, so scripts/uv_install.py passes pip's own settings
# (`pip config list`: index-url, extra-index-url, find-links, constraint, no-index,
# trusted-host, cert) to uv explicitly, with --index-strategy unsafe-best-match so that a wheel
# in a local folder or extra index is found the way pip finds it; a setting it does not map
# (proxy, client-cert) makes it exit 3 saying why. If uv itself cannot be installed or fails,
# or exits 3, pip installs instead (said on stderr): the same set of packages, only slower.
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
status=0
"$venv/bin/python" "$(dirname "$0")/uv_install.py" "$venv/bin/python" "$@" || status=$?
if [ "$status" -ne 0 ]; then
    [ "$status" -eq 3 ] || echo "install-venv: uv failed (above); installing with pip" >&2
    exec "${pip[@]}" install --quiet "$@"
fi
