#!/usr/bin/env bash
# Debian packages the tests need: PostgreSQL (server started by the tests themselves) and
# OpenSSL (benchmark baseline). Installs only what is missing; needs root or sudo.
set -euo pipefail
need=()
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need+=(postgresql)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v runuser >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -eq 0 ]; then
  echo "system packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing Debian packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
