"""A stand-in for ``systemctl`` in the deployment walkthrough's test (the test machine has no
systemd): it reads the unit files from ``/etc/systemd/system`` and runs their commands as
systemd would, as far as the walkthrough's units go, and refuses anything else.

Honoured: ``EnvironmentFile=`` (a clean environment as systemd gives, plus the file),
``Environment=``, ``ExecStart=`` (line continuations, ``%%``; any other specifier is refused),
``ExecStartPost=``, ``Type=exec|simple`` (started in its own session, its output in
``STATE/UNIT.log``) and ``Type=oneshot`` (run to the end, its exit status returned),
``KillSignal=`` and ``TimeoutStopSec=`` on stop. ``User=`` and the sandboxing directives are
read and not applied: everything runs as root (see tests/test_deploy_walkthrough.py). Timers
are recorded as enabled and never fire; the walkthrough starts the service itself.

Usage: ``python -m tests.systemctl_shim daemon-reload | enable [--now] UNIT... | start UNIT...
| stop UNIT... | is-active UNIT``, with ``PB_SYSTEMCTL_STATE`` naming the folder of its state.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

UNITS = Path("/etc/systemd/system")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Refused(Exception):
    pass


def parse(path: Path) -> dict[str, list[str]]:
    """``Section.Key`` -> its values in order (a key may repeat)."""
    entries: dict[str, list[str]] = {}
    section = ""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise Refused(f"{path}: not KEY=VALUE: {line!r}")
        entries.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    return entries


def specifiers(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "%":
            if text[i + 1 : i + 2] != "%":
                raise Refused(f"specifier {text[i : i + 2]!r} is not supported: {text!r}")
            out.append("%")
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def environment(unit: dict[str, list[str]]) -> dict[str, str]:
    env = {"PATH": PATH, "LANG": "C.UTF-8", "HOME": "/root"}
    for name in unit.get("Service.EnvironmentFile", []):
        optional = name.startswith("-")
        path = Path(name.lstrip("-"))
        if not path.is_file():
            if optional:
                continue
            raise Refused(f"EnvironmentFile {path} does not exist")
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                env[key.strip()] = value.strip()
    for line in unit.get("Service.Environment", []):
        for item in shlex.split(line):
            key, _, value = item.partition("=")
            env[key] = value
    return env


def command(line: str) -> tuple[list[str], bool]:
    """An Exec line's argv, and whether its failure is ignored (``-`` prefix)."""
    ignore = line.startswith("-")
    argv = shlex.split(specifiers(line.lstrip("-")))
    if not argv or not argv[0].startswith("/"):
        raise Refused(f"Exec line must start with an absolute path: {line!r}")
    return argv, ignore


def state() -> Path:
    folder = Path(os.environ["PB_SYSTEMCTL_STATE"])
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def unit_file(name: str) -> Path:
    path = UNITS / name
    if not path.is_file():
        raise Refused(f"Unit {name} not found in {UNITS}")
    return path


def pid_of(name: str) -> int | None:
    pidfile = state() / f"{name}.pid"
    if not pidfile.is_file():
        return None
    pid = int(pidfile.read_text())
    return pid if alive(pid) else None


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting for the namespace's first process to reap it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] not in ("Z", "X")


def start(name: str) -> None:
    if name.endswith(".timer"):
        unit_file(name)
        (state() / f"{name}.enabled").touch()
        return
    unit = parse(unit_file(name))
    env = environment(unit)
    kind = unit.get("Service.Type", ["simple"])[-1]
    starts = [command(line) for line in unit.get("Service.ExecStart", [])]
    posts = [command(line) for line in unit.get("Service.ExecStartPost", [])]
    log = (state() / f"{name}.log").open("ab")
    if kind == "oneshot":
        for argv, ignore in [*starts, *posts]:
            done = subprocess.run(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
            if done.returncode != 0 and not ignore:
                sys.stderr.buffer.write((state() / f"{name}.log").read_bytes()[-4000:])
                raise Refused(f"{name}: {argv[0]} exited {done.returncode}")
        return
    if kind not in ("simple", "exec"):
        raise Refused(f"{name}: Type={kind} is not supported")
    if pid_of(name) is not None:
        return
    if len(starts) != 1:
        raise Refused(f"{name}: a {kind} service has one ExecStart")
    proc = subprocess.Popen(
        starts[0][0], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    (state() / f"{name}.pid").write_text(str(proc.pid))
    time.sleep(1)
    if proc.poll() is not None:
        sys.stderr.buffer.write((state() / f"{name}.log").read_bytes()[-4000:])
        raise Refused(f"{name}: exited {proc.returncode} at once")
    for argv, ignore in posts:
        done = subprocess.run(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        if done.returncode != 0 and not ignore:
            raise Refused(f"{name}: {argv[0]} exited {done.returncode}")


def stop(name: str) -> None:
    pid = pid_of(name)
    if pid is None:
        return
    unit = parse(unit_file(name))
    sig = getattr(signal, unit.get("Service.KillSignal", ["SIGTERM"])[-1])
    timeout = float(unit.get("Service.TimeoutStopSec", ["90"])[-1])
    os.killpg(pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):  # started by an earlier call: not this process's child
            break
        time.sleep(0.2)
    else:
        os.killpg(pid, signal.SIGKILL)
    (state() / f"{name}.pid").unlink()


def main(args: list[str]) -> int:
    if not args:
        raise Refused("no command")
    verb, rest = args[0], args[1:]
    if verb == "daemon-reload":
        return 0
    if verb == "enable":
        now = "--now" in rest
        for name in [a for a in rest if a != "--now"]:
            unit_file(name)
            (state() / f"{name}.enabled").touch()
            if now:
                start(name)
        return 0
    if verb in ("start", "stop", "restart"):
        for name in rest:
            if verb in ("stop", "restart"):
                stop(name)
            if verb in ("start", "restart"):
                start(name)
        return 0
    if verb == "is-active":
        return 0 if all(pid_of(n) is not None for n in rest) else 3
    raise Refused(f"systemctl {verb} is not supported by this stand-in")


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Refused as exc:
        print(f"systemctl (test stand-in): {exc}", file=sys.stderr)
        sys.exit(1)
