#!/usr/bin/env bash
# Debian packages pinbench needs, by what needs them (DESIGN.md invariant 19: every command
# installs what it needs, or stops before anything with the one command to run):
#
#   install-system-deps.sh sandbox   what a run needs: bubblewrap (the sandbox every evaluator
#                                    runs in) and python3-venv where Python lacks venv; `make
#                                    demo` and `make study` install this before anything else
#   install-system-deps.sh compiler  and g++, which builds llama-cpp-python from its source
#                                    archive (`STUDY=engines make study`)
#   install-system-deps.sh [all]     and what the tests need (`make test`): PostgreSQL (the tests
#                                    start their own server), OpenSSL (benchmark baseline), for
#                                    the docker runner Docker Engine (docker.io; the tests start
#                                    dockerd on their own socket), debootstrap (the base image's
#                                    root filesystem) and docker-registry (push/pull tests);
#                                    Chromium, the browser the web UI's tests drive through
#                                    Playwright; util-linux (runuser, unshare, nsenter) and
#                                    iproute2 (ip) for the Ray cluster tests' network namespace;
#                                    g++, which builds llama-cpp-python from its source archive
#
# As root it installs only what is missing (apt-get). As any other user it installs nothing:
# where something is missing it prints the one command to run and exits 1, and where the
# kernel refuses the unprivileged user namespaces bubblewrap needs (Ubuntu's AppArmor
# restriction, a Debian kernel's switch) it names the setting. `pinbench doctor` tells the same
# and more once pinbench is installed.
set -euo pipefail
group=${1:-all}
case "$group" in
    sandbox | compiler | all) ;;
    *) echo "install-system-deps: unknown group '$group' (sandbox, compiler or all)" >&2; exit 2 ;;
esac
need=()
have() { local p; p=$(command -v "$1" 2>/dev/null) && [ -f "$p" ] && [ -x "$p" ]; }  # a program
add() { case " ${need[*]-} " in *" $1 "*) ;; *) need+=("$1") ;; esac; }
if [ "$group" = compiler ]; then group=sandbox; have g++ || add g++; fi  # STUDY=engines
have bwrap || add bubblewrap   # the sandbox every evaluator runs in
py=$(command -v python3.11 || command -v python3 || true)
if [ -z "$py" ]; then add python3 && add python3-venv
else "$py" -c "import ensurepip, venv" 2>/dev/null || add python3-venv; fi
if [ "$group" = all ]; then
    ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || add postgresql
    have openssl || add openssl
    have runuser || add util-linux
    have nsenter || add util-linux   # the Ray cluster's namespace (tests)
    have ip || add iproute2
    have dockerd || add docker.io
    have debootstrap || add debootstrap
    have docker-registry || add docker-registry
    have chromium || add chromium
    have g++ || add g++   # llama-cpp-python, built from its source archive (make dev)
fi

# The kernel's settings that keep an unprivileged user from making a user namespace, as
# "name=value to set" where one is in force now (root makes its namespaces regardless).
userns_settings() {
    local f=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
    [ -r "$f" ] && [ "$(cat "$f")" != 0 ] && echo "kernel.apparmor_restrict_unprivileged_userns=0"
    f=/proc/sys/kernel/unprivileged_userns_clone
    [ -r "$f" ] && [ "$(cat "$f")" = 0 ] && echo "kernel.unprivileged_userns_clone=1"
    f=/proc/sys/user/max_user_namespaces
    [ -r "$f" ] && [ "$(cat "$f")" = 0 ] && echo "user.max_user_namespaces=15000"
    return 0
}

if [ "$(id -u)" -ne 0 ]; then
    settings=()
    while IFS= read -r line; do [ -n "$line" ] && settings+=("$line"); done < <(userns_settings)
    if [ ${#need[@]} -eq 0 ] && [ ${#settings[@]} -eq 0 ]; then
        echo "system packages present"
        exit 0
    fi
    {
        echo "pinbench cannot install system packages as $(id -un) (not root); nothing was run."
        [ ${#need[@]} -eq 0 ] || echo "missing Debian packages: ${need[*]}"
        [ ${#settings[@]} -eq 0 ] || echo "the kernel keeps unprivileged users from the" \
            "user namespaces bubblewrap's sandbox needs: ${settings[*]}"
        echo "run, then try again:"
        steps=()
        [ ${#need[@]} -eq 0 ] || steps+=("apt-get update && apt-get install -y ${need[*]}")
        for s in ${settings[@]+"${settings[@]}"}; do
            steps+=("sysctl -w $s && echo $s >> /etc/sysctl.d/60-pinbench-userns.conf")
        done
        joined=$(printf ' && %s' "${steps[@]}")
        echo "  sudo sh -c '${joined:4}'"
    } >&2
    exit 1
fi
if [ ${#need[@]} -eq 0 ]; then
    echo "system packages present"
    exit 0
fi
echo "installing Debian packages: ${need[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
