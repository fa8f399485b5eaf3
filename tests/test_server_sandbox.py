"""A run a server cannot sandbox is refused when it is submitted (issue 83 item 5): 503 naming
what the server's operator does (never ``--sandbox none``, which a server refuses), nothing
queued; a run that needs no sandbox here is queued as before. The server is the app in-process
(Litestar's TestClient) on the digits catalog, the system's program folder the case's
(``tests.system_programs``): bubblewrap missing from it (one on PATH is never taken), or a
``bwrap`` that fails as bubblewrap does where user namespaces are not allowed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from litestar.testing import TestClient

from pinbench import accounts
from pinbench.api.app import create_app
from pinbench.api.deps import ServerSettings
from pinbench.api.sandbox_check import SERVER_FIX, SandboxCheck
from pinbench.api_tokens import create_token
from pinbench.catalog.digits import DATASET_NAME, MODEL_NAME
from pinbench.evaluator.records.run_list import list_runs
from pinbench.registry import service
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace
from tests.helpers import copied_workspace
from tests.system_programs import fake, system_folder

NO_USERNS = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not "
    "allow non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'."
)
"""What bubblewrap says (and exits 1) on a kernel without unprivileged user namespaces."""


@dataclass(frozen=True)
class Case:
    runner: str
    path: str  # the system's folder: "empty" (no bwrap in it) or "no-userns" (a bwrap that fails)
    status: int
    said: str  # in the refusal's detail ("" for an accepted run)
    fix: str  # the operator's fix the detail names
    why: str


CASES = [
    Case(
        "venv",
        "empty",
        503,
        "is not used (pinbench starts only the system's)",
        SERVER_FIX,
        "bubblewrap only on the server's PATH",
    ),
    Case(
        "venv",
        "no-userns",
        503,
        "No permissions to creating new namespace",
        SERVER_FIX,
        "no user namespaces",
    ),
    Case(
        "local",
        "empty",
        503,
        "is not used (pinbench starts only the system's)",
        SERVER_FIX,
        "an ONNX model is opened in the sandbox too (decision 310)",
    ),
]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, digits_template: Path) -> Iterator[Workspace]:
    ws = copied_workspace(digits_template, tmp_path_factory.mktemp("server-sandbox"))
    yield ws
    ws.close()


def bin_folder(root: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system's program folder of the case, and a ``bwrap`` on PATH (never taken)."""
    folder = system_folder(root / kind, monkeypatch)
    if kind == "no-userns":
        fake(folder, "bwrap", f'printf "%s\\n" "{NO_USERNS}" >&2\nexit 1')
    path = root / "path"
    fake(path, "bwrap", 'exec /usr/bin/bwrap "$@"')
    monkeypatch.setenv("PATH", f"{path}:/usr/bin:/bin")
    return folder


@pytest.mark.parametrize("case", CASES, ids=[f"{c.runner}-{c.path}" for c in CASES])
def test_a_run_the_server_cannot_sandbox_is_refused_at_submission(
    case: Case, ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ws.writes() as rows:
        user = f"runner-{case.runner}-{case.path}"
        accounts.add_user(rows, user)
        token = create_token(rows, user, name="tests", scopes=["read", "run"])[2]
    request = {
        "model": f"{MODEL_NAME}@^1",
        "dataset": f"{DATASET_NAME}@^1",
        "framework": "onnxruntime@*",
        "scenario": {"mode": "accuracy"},
    }
    digest = service.lock(ws, parse_request(request))[0].digest.hex
    before = len(list_runs(ws))
    bin_folder(tmp_path, case.path, monkeypatch)
    app = create_app(ws, ServerSettings(runners=("local", "venv")))
    with TestClient(app=app, base_url="http://127.0.0.1") as client:
        answer = client.post(
            "/api/v1/runs",
            json={"lockfile": digest, "runner": case.runner},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == case.status, (case.why, answer.text)
        if case.status == 503:
            detail = answer.json()["detail"]
            assert answer.json()["error"] == "ServerCannotSandbox"
            assert case.said in detail and case.fix in detail, detail
            assert "--sandbox" not in detail, detail
            assert len(list_runs(ws)) == before  # nothing queued
        else:
            assert len(list_runs(ws)) == before + 1


def test_the_probe_starts_a_sandbox_where_bubblewrap_works(ws: Workspace) -> None:
    """On this machine (the suite's own runs are sandboxed) the probe starts one: a server here
    takes the runs that need it."""
    assert SandboxCheck(ws).refusal() is None
