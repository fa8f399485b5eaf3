"""The sandbox every evaluator runs in: bubblewrap's path and version, the kernel's user
namespaces, and a sandbox started as a run's worker is (``runners.sandbox.probe``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pinbench.doctor.findings import Finding, Place
from pinbench.programs import identity

CHECK = "sandbox"
INSTALL = "as root: apt-get install -y bubblewrap (make demo does, as root)"
TRUST = (
    "reinstall it from the system's packages (as root: apt-get install --reinstall -y "
    "bubblewrap): pinbench starts only a bwrap that root owns and only root may write"
)

# (the kernel setting, its file under /proc/sys, the value that refuses unprivileged users, the
# value to set): what keeps a user who is not root from making a user namespace
USERNS = (
    (
        "kernel.apparmor_restrict_unprivileged_userns",
        "kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "0",
    ),  # Ubuntu 23.10 and later: AppArmor's restriction
    ("kernel.unprivileged_userns_clone", "kernel/unprivileged_userns_clone", "0", "1"),  # Debian
    ("user.max_user_namespaces", "user/max_user_namespaces", "0", "15000"),
)


def userns_refusals(place: Place) -> list[str]:
    """The settings in force that refuse a user who is not root its user namespaces, each as
    ``name=value`` to set (root makes its namespaces regardless: none then)."""
    if place.uid == 0:
        return []
    found = []
    for name, file, refusing, allowing in USERNS:
        if place.read(place.proc / "sys" / file) == refusing:
            found.append(f"{name}={allowing}")
    return found


def check(place: Place) -> list[Finding]:
    """One finding: ``fail`` where a run's sandbox cannot start here, with what to do."""
    from pinbench.evaluator.runners import sandbox

    refused = userns_refusals(place)
    settings = f"sysctl -w {' '.join(refused)} (as root)" if refused else ""
    try:
        path = sandbox.bwrap()
    except sandbox.SandboxUnavailable as exc:
        fix = TRUST if "not trusted" in exc.reason else INSTALL
        return [Finding(CHECK, "fail", exc.reason, "; ".join(x for x in (fix, settings) if x))]
    seen = f"{path} ({identity(Path(path)).version})"
    home = place.home()
    with tempfile.TemporaryDirectory(prefix="pinbench-doctor-") as scratch:
        try:
            sandbox.probe(Path(scratch), hidden=[home, Path.home()])
        except sandbox.SandboxUnavailable as exc:
            why = f"{seen} did not start a sandbox: {exc.reason}"
            if refused:
                why += f"; in force: {', '.join(refused)}"
            return [Finding(CHECK, "fail", why, settings or exc.fix)]
    return [Finding(CHECK, "ok", f"{seen} starts a run's sandbox")]
