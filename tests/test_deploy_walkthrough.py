"""The deployment walkthrough (docs/deploy.md) runs as written, from an empty machine to a
team server with accounts, metrics, a backup and a restore drill; and deploy/compose.yaml's
pinbench commands are ones the CLI accepts.

The walkthrough's shell blocks run in one bash, as root, in namespaces of their own: a mount
namespace where ``/etc``, ``/opt`` and ``/var`` are overlays of the machine's (what the
walkthrough writes there, users included, goes to the test's folder) and ``/run`` is a fresh
tmpfs, a network namespace holding only loopback (the walkthrough's fixed ports: 5432, 8000,
8333, ...), and a PID namespace that ends every process it started. Two stand-ins: systemd's
``systemctl`` (``tests/systemctl_shim.py`` runs the unit files' commands; no systemd here)
and ``runuser -u pinbench``, which runs the command as root: this machine's Python lives
under ``/root``, which another user cannot read. The install step is replaced by linking
``/opt/pinbench`` to this virtual environment and starting PostgreSQL as Debian's package
does (peer authentication on its socket, passwords over TCP, port 5432).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs/deploy.md"
DEPLOY = ROOT / "deploy"
MARK = "<!-- run by tests/test_deploy_walkthrough.py -->\n```sh\n"


def blocks() -> list[str]:
    """The page's blocks run by this test, in order."""
    text = PAGE.read_text()
    found = re.findall(re.escape(MARK) + r"(.*?)^```$", text, re.S | re.M)
    assert len(found) >= 6, "the walkthrough's blocks are marked for this test"
    return found


def walkthrough() -> str:
    """The page's blocks run by this test, in order, the first (the account, folders and
    secrets) twice: an operator who runs it again, the user already made, is not stopped."""
    first, *rest = blocks()
    return "\n".join([first, first, *rest])


def _needs() -> list[str]:
    missing = [t for t in ("unshare", "openssl", "curl", "psql") if shutil.which(t) is None]
    if not sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        missing.append("PostgreSQL's initdb")
    if os.geteuid() != 0:
        missing.append("root")
    return missing


PRELUDE = r"""
set -euo pipefail
T={tmp}
mount --make-rprivate /
for d in etc opt var; do
    mkdir -p "$T/$d.up" "$T/$d.work"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$T/$d.up,workdir=$T/$d.work" "/$d"
done
mount -t tmpfs tmpfs /run
ip link set lo up
mkdir -p "$T/bin" "$T/home" "$T/systemctl"
cat > "$T/bin/systemctl" <<EOF
#!/bin/sh
PYTHONPATH={root} PB_SYSTEMCTL_STATE=$T/systemctl exec {python} -m tests.systemctl_shim "\$@"
EOF
cat > "$T/bin/runuser" <<'EOF'
#!/bin/sh
if [ "$1" = -u ] && [ "$2" = pinbench ] && [ "$3" = -- ]; then shift 3; exec "$@"; fi
exec /usr/sbin/runuser "$@"
EOF
chmod +x "$T/bin/systemctl" "$T/bin/runuser"
export PATH="$T/bin:$PATH" HOME="$T/home"
ln -s {venv} /opt/pinbench
PG={pgbin}
install -d -o postgres -g postgres /run/postgresql /var/lib/postgresql/walkthrough
runuser -u postgres -- "$PG/initdb" -D /var/lib/postgresql/walkthrough -U postgres \
    --auth-local=peer --auth-host=scram-sha-256 > /dev/null
runuser -u postgres -- "$PG/pg_ctl" -D /var/lib/postgresql/walkthrough -w -s \
    -l /var/lib/postgresql/walkthrough.log \
    -o "-c listen_addresses=127.0.0.1 -p 5432 -k /run/postgresql" start
cd {root}
echo "--- the walkthrough"
"""


EPILOGUE = r"""
echo; echo "--- after the walkthrough"
stat -c 'mode %a %n' /etc/pinbench/env /var/lib/pinbench /etc/prometheus/pinbench-token
test ! -e /var/lib/pinbench/drill && echo "the drill's home is gone"
drill /opt/pinbench/bin/python -c 'import os, boto3
s3 = boto3.resource("s3", endpoint_url=os.environ["PINBENCH_S3_ENDPOINT"])
print("drill objects", len(list(s3.Bucket("pinbench").objects.filter(Prefix="drill/"))))'
ls /var/lib/pinbench/backups
"""


def test_the_walkthrough_takes_an_empty_machine_to_a_team_server(tmp_path: Path) -> None:
    missing = _needs()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the walkthrough needs {', '.join(missing)}")
        pytest.skip(f"needs {', '.join(missing)}")
    pgbin = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))[-1].parent
    script = tmp_path / "walkthrough.sh"
    script.write_text(
        PRELUDE.format(
            tmp=tmp_path,
            root=ROOT,
            python=sys.executable,
            venv=Path(sys.executable).parent.parent,
            pgbin=pgbin,
        )
        + walkthrough()
        + EPILOGUE
    )
    done = subprocess.run(
        ["unshare", "--mount", "--net", "--pid", "--fork", "--mount-proc", "bash", str(script)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    logs = "".join(
        f"\n--- {log.name}\n{log.read_text(errors='replace')[-3000:]}"
        for log in sorted((tmp_path / "systemctl").glob("*.log"))
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:] + logs
    out = done.stdout
    assert out.count('{"status":"ready"') == 2, out  # after the start, and after the upgrade
    assert re.search(r"^dataset +vision/notes +1\.0\.0 ", out, re.M), "alice published it"
    assert re.search(r"^pinbench_database_up 1$", out, re.M), out
    assert re.search(r"^restored the postgresql database and 1 blobs.*: no problems$", out, re.M)
    assert re.search(r"^\d{8}T\d{6}Z$", out.rstrip().split("\n")[-1]), "one dated backup"
    assert "mode 640 /etc/pinbench/env" in out and "mode 750 /var/lib/pinbench\n" in out
    said = done.stderr
    assert re.search(r"^token \w+ for ops \(read, publish, run, admin\)", said, re.M), said
    assert "mode 600 /etc/prometheus/pinbench-token" in out
    assert "the drill's home is gone" in out and "drill objects 0" in out
    assert not Path("/etc/pinbench").exists() and not Path("/opt/pinbench").exists()


# deploy/compose.yaml: every pinbench command parses as the CLI parses it


def _interpolate(text: str) -> str:
    """Compose's ``${VAR:-default}`` and ``${VAR:?message}`` with nothing set: the default."""
    text = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)
    return re.sub(r"\$\{\w+:\?[^}]*\}", "secret", text)


def _compose() -> dict[str, Any]:
    doc = yaml.safe_load(_interpolate((DEPLOY / "compose.yaml").read_text()))
    assert isinstance(doc, dict)
    return doc


def _host_path(service: dict[str, Any], path: str) -> str:
    """A container path the service mounts from deploy/ (``./serve.toml:/etc/...``)."""
    for volume in service.get("volumes", []):
        source, _, rest = volume.partition(":")
        target = rest.split(":")[0]
        if source.startswith("./") and target == path:
            return str(DEPLOY / source)
    return path


def test_compose_runs_pinbench_commands_the_cli_accepts() -> None:
    from pinbench.cli import app

    services = _compose()["services"]
    assert {"postgres", "seaweedfs", "ray-head", "init", "pinbench"} <= set(services)
    checked = 0
    for name, service in services.items():
        argv = [str(a) for a in service.get("command", [])]
        if not argv or argv[0] != "pinbench":
            continue
        args = [_host_path(service, a) if a.startswith("/etc/") else a for a in argv[1:]]
        group: click.Command = app
        while isinstance(group, click.Group):
            ctx = group.make_context("pinbench", list(args), resilient_parsing=True)
            sub = group.get_command(ctx, args[0])
            assert sub is not None, f"{name}: pinbench {args[0]} is not a command"
            group, args = sub, args[1:]
        group.make_context(name, args)  # parses and validates (serve: reads --config's file)
        checked += 1
    assert checked == 2
    serve = services["pinbench"]
    assert "/api/v1/ready" in " ".join(serve["healthcheck"]["test"])
    assert all(p.startswith("127.0.0.1:") for p in serve["ports"]), "behind a proxy"


def test_compose_and_the_units_set_only_settings_pinbench_reads() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "pinbench").rglob("*.py"))
    services = _compose()["services"]
    names = {k for s in services.values() for k in (s.get("environment") or {})}
    names |= {
        line.split("=", 1)[0]
        for line in (DEPLOY / "pinbench.env").read_text().splitlines()
        if line and not line.startswith("#")
    }
    for name in sorted(n for n in names if n.startswith("PINBENCH_")):
        assert f'"{name}"' in source or f"'{name}'" in source, f"{name} is read nowhere"


def test_the_environment_file_says_the_mode_the_walkthrough_gives_it() -> None:
    """deploy/pinbench.env said mode 600 where the walkthrough sets 640 (root:pinbench: the
    service reads it and cannot change it)."""
    text = "\n".join(blocks())
    owner = re.search(r"chown (\w+):(\w+) /etc/pinbench/env", text)
    mode = re.search(r"chmod (\d+) /etc/pinbench/env", text)
    assert owner is not None and mode is not None
    said = (DEPLOY / "pinbench.env").read_text()
    assert f"owner {owner.group(1)}, group {owner.group(2)}, mode {mode.group(1)}" in said


def test_the_walkthrough_makes_its_user_only_where_it_is_missing() -> None:
    """``useradd`` fails for a user that exists: every one the walkthrough runs is guarded, so
    running a block again goes on (the walkthrough test runs the first block twice)."""
    text = "\n".join(blocks()).replace("\\\n", " ")
    adds = [line for line in text.splitlines() if re.search(r"\buseradd\b", line)]
    assert adds
    for line in adds:
        user = line.split()[-1]
        assert re.match(rf"id -u {user} > ?/dev/null 2>&1 +\|\| +useradd ", line.strip()), line


def test_the_units_name_files_the_walkthrough_installs() -> None:
    from tests.systemctl_shim import parse

    text = walkthrough()
    for unit in sorted(DEPLOY.glob("*.service")) + sorted(DEPLOY.glob("*.timer")):
        assert f"deploy/{unit.name}" in text, f"{unit.name} is not installed by the walkthrough"
        entries = parse(unit)
        for env_file in entries.get("Service.EnvironmentFile", []):
            assert env_file == "/etc/pinbench/env"
        for line in entries.get("Service.ExecStart", []):
            assert line.lstrip("-").startswith("/"), line
