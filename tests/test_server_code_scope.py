"""A server runs only published code (issue 63 item 4). A chain stage's inline ``code`` (or
``join``) is carried by the request and its lockfile, published by nobody: every server entry
point that takes such a request or lockfile (lock, store, queue a run, queue runs on systems:
a rerun is a queued run of a stored lockfile) refuses it with 403, nothing stored or queued,
unless the caller may publish in the namespace of the stage's model, even on a server started
with ``--allow-code``. Code that is a file of the stage's published model runs for any ``run``
token. The server is the app in-process (Litestar's TestClient), on the digits catalog."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import TestClient
from sqlalchemy import func, select

from pinbench import accounts
from pinbench.api.app import create_app
from pinbench.api.deps import ServerSettings
from pinbench.api_tokens import create_token
from pinbench.catalog.digits import DATASET_NAME, DIGITS_STEPS, MODEL_NAME
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.evaluator.records.run_list import list_runs
from pinbench.registry import service
from pinbench.registry.catalog import SqlCandidateSource
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.locking import build_lockfile
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.registry.resolve import resolve
from pinbench.workspace import Workspace
from tests.helpers import copied_workspace, model_manifest, write_files

# Who calls: name -> (admin?, namespaces, scopes).
PEOPLE: dict[str, tuple[bool, list[str], list[str]]] = {
    "admin": (True, [], ["read", "publish", "run", "admin"]),
    "owner": (False, ["vision"], ["read", "publish", "run"]),  # publishes the stage's model
    "other": (False, ["audio"], ["read", "publish", "run"]),  # publishes, in another namespace
    "member": (False, ["vision"], ["read", "run"]),  # a member, but the token cannot publish
    "runner": (False, [], ["read", "run"]),  # the token: read and run, no namespace
}
CODE = "def same(values, files):\n    return values\n"


@dataclass
class World:
    ws: Workspace
    client: TestClient[Any]
    tokens: dict[str, str]

    def call(self, who: str, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return self.client.request(method, path, headers=headers, **kw)


def identity_onnx() -> bytes:
    """``x (N, 1, 8, 8) -> Identity -> y``: the chain's first stage."""
    from onnx import TensorProto, helper

    shape: list[str | int | None] = ["N", 1, 8, 8]
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "front",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def publish_chain_models(ws: Workspace, root: Path, catalog_dir: Path) -> None:
    """``vision/front`` (an identity on the digits' images) and ``vision/back`` (the catalog's
    logistic regression, with ``between.py`` among its files: published code)."""
    front = write_files(root / "front", {"front.onnx": identity_onnx()})
    manifest = model_manifest("vision/front", "1.0.0", front)
    manifest.update(
        inputs=[
            {
                "name": "x",
                "type": "image",
                "element_type": "float32",
                "shape": [1, 8, 8],
                "steps": DIGITS_STEPS,
            }
        ],
        outputs=[{"name": "y"}],
    )
    publish(ws, parse_manifest(manifest), manifest_dir=root / "front", publisher="owner")
    logreg = (catalog_dir / "digits-logreg-1.0.0" / "digits-logreg.onnx").read_bytes()
    back = write_files(root / "back", {"digits-logreg.onnx": logreg, "between.py": CODE.encode()})
    manifest = model_manifest("vision/back", "1.0.0", back)
    manifest.update(
        inputs=[{"name": "x", "element_type": "float32", "shape": [1, 8, 8]}],
        outputs=[{"name": "logits", "type": "classification"}],
    )
    publish(ws, parse_manifest(manifest), manifest_dir=root / "back", publisher="owner")


def chain_request(code: dict[str, str], salt: int) -> dict[str, Any]:
    """The two-stage chain with ``code`` between the stages; ``salt`` makes each case's
    lockfile its own (so "nothing stored" is about this case alone)."""
    return {
        "model": "vision/back@1.0.0",
        "dataset": f"{DATASET_NAME}@^1",
        "framework": "onnxruntime@*",
        "scenario": {"mode": "accuracy", "min_query_count": 100 + salt},
        "chain": {
            "stages": [
                {"name": "front", "model": "vision/front@1.0.0"},
                {
                    "name": "back",
                    "model": "vision/back@1.0.0",
                    "inputs": {"x": "front.y"},
                    "code": code,
                },
            ]
        },
    }


INLINE = {"function": "same", "code": CODE}
PUBLISHED = {"function": "same", "file": "between.py"}


def unstored(ws: Workspace, data: dict[str, Any]) -> Lockfile:
    """The request's lockfile as ``pinbench lock`` builds it, not recorded on the server."""
    request = parse_request(data)
    with ws.reads() as rows:
        resolution = resolve(
            request.specs(), SqlCandidateSource(rows), platform=request.system.key()
        )
        return build_lockfile(rows, request, resolution, 1)


def stored(ws: Workspace, data: dict[str, Any]) -> Lockfile:
    return service.lock(ws, parse_request(data))[0]


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, digits_template: Path, catalog_dir: Path
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("code-scope")
    ws = copied_workspace(digits_template, root)
    assert MODEL_NAME.startswith("vision/")
    tokens = {}
    with ws.writes() as rows:
        for name, (admin, namespaces, scopes) in PEOPLE.items():
            accounts.add_user(rows, name, admin=admin)
            for ns in namespaces:
                accounts.grant(rows, name, ns)
            tokens[name] = create_token(rows, name, name="tests", scopes=scopes)[2]
    publish_chain_models(ws, root / "models", catalog_dir)
    settings = ServerSettings(
        allow_code=True, runners=("docker",), run_queue=64, runs_per_user=64
    )  # the server: `serve --allow-code`, the docker runner
    app = create_app(ws, settings)
    with TestClient(app=app, base_url="http://127.0.0.1") as client:
        yield World(ws, client, tokens)
    ws.close()


def lockfiles(ws: Workspace) -> int:
    with ws.transaction() as session:
        return int(session.scalar(select(func.count()).select_from(LockfileRow)) or 0)


def lock(w: World, who: str, data: dict[str, Any]) -> tuple[httpx.Response, Callable[[], bool]]:
    before = lockfiles(w.ws)
    response = w.call(who, "POST", "/api/v1/lockfiles", json=data)
    return response, lambda: lockfiles(w.ws) == before


def store(w: World, who: str, data: dict[str, Any]) -> tuple[httpx.Response, Callable[[], bool]]:
    lock = unstored(w.ws, data)
    path = f"/api/v1/lockfiles/{lock.digest.hex}"
    response = w.call(who, "PUT", path, content=lock.canonical)
    return response, lambda: w.call("admin", "GET", path).status_code == 404


def run(w: World, who: str, data: dict[str, Any]) -> tuple[httpx.Response, Callable[[], bool]]:
    """POST /runs of a lockfile stored already (by someone who could): also how a rerun is
    asked of a server."""
    digest = stored(w.ws, data).digest.hex
    before = len(list_runs(w.ws))
    response = w.call(who, "POST", "/api/v1/runs", json={"lockfile": digest, "runner": "docker"})
    return response, lambda: len(list_runs(w.ws)) == before


def run_on(w: World, who: str, data: dict[str, Any]) -> tuple[httpx.Response, Callable[[], bool]]:
    digest = stored(w.ws, data).digest.hex
    before = len(list_runs(w.ws))
    body = {"lockfile": digest, "runner": "docker", "on": ["all"]}
    response = w.call(who, "POST", "/api/v1/runs/on", json=body)
    return response, lambda: len(list_runs(w.ws)) == before


ENTRY_POINTS = {"lock": lock, "store": store, "run": run, "run_on": run_on}
ALLOWED = {"lock": 201, "store": 200, "run": 202, "run_on": 400}
"""What each entry point answers when the code is not the refusal (``run_on``: this server
has no cluster, 400 naming ``--cluster``, after the code was let through)."""

#  who       code       refused?  why
CASES = [
    ("runner", INLINE, True, "the issue's token: read and run, no namespace"),
    ("member", INLINE, True, "a member of vision whose token lacks the publish scope"),
    ("other", INLINE, True, "publishes, but in audio, not the stage model's vision"),
    ("owner", INLINE, False, "may publish in vision: could publish the code as a file"),
    ("admin", INLINE, False, "an admin token may publish in any namespace"),
    ("runner", PUBLISHED, False, "a file of the stage's published model: published code"),
    ("member", PUBLISHED, False, "published code runs for any run token"),
]


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(
    ("who", "code", "refused", "why"),
    CASES,
    ids=[f"{c[0]}-{'inline' if 'code' in c[1] else 'file'}" for c in CASES],
)
def test_unpublished_code_is_refused_at_every_entry_point_unless_the_caller_may_publish_it(
    world: World, entry: str, who: str, code: dict[str, str], refused: bool, why: str
) -> None:
    salt = sorted(ENTRY_POINTS).index(entry) * len(CASES) + CASES.index((who, code, refused, why))
    response, nothing_changed = ENTRY_POINTS[entry](world, who, chain_request(code, salt))
    detail = response.json().get("detail", "") if response.status_code >= 400 else ""
    if refused:
        assert response.status_code == 403, (why, response.text)
        assert "inline code in chain stage 'back' was not published" in detail, why
        assert "namespace 'vision'" in detail, why
        assert "publish it as a file of the stage's model" in detail, why
        assert nothing_changed(), f"{why}: something was stored or queued"
    else:
        assert response.status_code == ALLOWED[entry], (why, response.text)
        assert "not published" not in detail, why


def test_a_join_is_code_too(world: World) -> None:
    """A fan-out's ``join`` inline beside a published ``code`` file is unpublished code."""
    data = chain_request(PUBLISHED, 900)
    data["chain"]["stages"][1]["join"] = {"function": "same", "code": CODE}
    response, nothing_changed = lock(world, "runner", data)
    assert response.status_code == 403, response.text
    assert "inline code in chain stage 'back' was not published" in response.json()["detail"]
    assert nothing_changed()
