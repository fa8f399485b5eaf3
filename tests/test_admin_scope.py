"""An admin whose token lacks the ``admin`` scope is told the scope is missing, not the right
(issue 38 item 6): ``pinbench token create --user ADMIN`` gives read, publish and run, and
publishing a name without a namespace then needs the ``admin`` scope. Run as an operator runs
it: the CLI on the server's database makes the tokens, the CLI with ``PINBENCH_URL`` publishes
to a real ``pinbench serve``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.apiserver import Server, api_server
from tests.test_api import manifest_doc


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("admin-scope")
    with api_server(root / "home", f"sqlite:///{root}/db") as running:
        yield running


def _pinbench(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PINBENCH_URL", "PINBENCH_TOKEN")}
    return subprocess.run(
        [sys.executable, "-m", "pinbench", *args],
        env=environ | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _token(server: Server, *scopes: str) -> dict[str, Any]:
    """``pinbench token create --user admin [--scope S]...`` on the server's database."""
    local = {"PINBENCH_HOME": str(server.home), "PINBENCH_DATABASE_URL": server.database_url}
    options = [f"--scope={s}" for s in scopes]
    made = _pinbench(local, "token", "create", "--user", "admin", *options, "--json")
    assert made.returncode == 0, made.stderr
    info: dict[str, Any] = json.loads(made.stdout)
    return info


def _publish(
    server: Server, token: str, tmp: Path, version: str
) -> subprocess.CompletedProcess[str]:
    (tmp / "w.bin").write_bytes(b"weights " + version.encode())
    doc = manifest_doc("bare-model", version, {"w.bin": (tmp / "w.bin").read_bytes()})
    (tmp / "m.yaml").write_text(yaml.safe_dump(doc))
    remote = {"PINBENCH_URL": server.url, "PINBENCH_TOKEN": token}
    return _pinbench(remote, "publish", str(tmp / "m.yaml"))


def test_an_admins_token_without_the_admin_scope_names_the_missing_scope(
    server: Server, tmp_path: Path
) -> None:
    plain = _token(server)  # the default scopes: read, publish, run
    assert plain["scopes"] == ["read", "publish", "run"]
    refused = _publish(server, plain["token"], tmp_path, "1.0.0")
    message = " ".join(refused.stderr.split())
    assert refused.returncode == 1, refused.stderr
    assert "Traceback" not in refused.stderr
    # the scope, not the user, is missing; and how to get a token that has it
    assert "only a token with the 'admin' scope may publish names without one" in message
    assert f"token {plain['id']} of admin (an admin) was created without it" in message
    assert "pinbench token create --user admin" in message and "--scope admin" in message
    with server.client("admin") as c:  # nothing was published
        assert c.get("/api/v1/artifacts/model/bare-model@1.0.0").status_code == 404

    # following the message works
    full = _token(server, "read", "publish", "run", "admin")
    published = _publish(server, full["token"], tmp_path, "1.0.0")
    assert published.returncode == 0, published.stderr


def test_a_user_who_is_not_an_admin_is_still_told_only_admins_may() -> None:
    """The message for a non-admin is unchanged: it is the user who lacks the right."""
    from pinbench.accounts import AdminScopeMissing, Forbidden, Principal

    owner = Principal(
        user="owner",
        scopes=frozenset({"read", "publish"}),
        namespaces=frozenset({"vision"}),
        token_id="t1",
    )
    with pytest.raises(Forbidden, match="only admins publish names without one") as caught:
        owner.require_namespace("bare-model", "publish")
    assert not isinstance(caught.value, AdminScopeMissing)
