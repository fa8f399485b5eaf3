#!/usr/bin/env bash
# Debian packages pinbench's set-up and tests need: python3-venv (if Python lacks venv),
# PostgreSQL (the tests start their own server), OpenSSL (benchmark baseline), and for the
# docker runner: Docker Engine (docker.io; the tests start dockerd on their own socket),
# debootstrap (the base image's root filesystem) and docker-registry (push/pull tests); and
# Chromium, the browser the web UI's tests drive through Playwright; util-linux (unshare,
# nsenter) and iproute2 (ip) for the Ray cluster tests' loopback-only network namespace.
# Installs only what is missing; needs root or sudo.
set -euo pipefail
need=()
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need+=(postgresql)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)   # the sandbox every evaluator runs in
command -v runuser >/dev/null 2>&1 || need+=(util-linux)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)   # the Ray cluster's namespace (tests)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v docker-registry >/dev/null 2>&1 || need+=(docker-registry)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
py=$(command -v python3.11 || command -v python3)
"$py" -c "import ensurepip, venv" 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -eq 0 ]; then
  echo "system packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing Debian packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
