"""The registry decides what runs, not the lockfile (issue 17, item 1).

Each forgery the hostile review reproduced is a case here: a lockfile edited and put back in
canonical form (so its own digest is consistent) and handed to ``verify``/``run`` on the CLI
and to a real ``pinbench serve``. Each is refused naming the field, and nothing is recorded,
fetched, executed or left behind. Pickled models run only when the caller allows it: the CLI
run's ``--allow-pickle``; a server never, unless its operator allows it, and then in its
runner's sandbox. A lockfile from another registry runs only after ``pinbench lockfile import``.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
import yaml
from sqlalchemy import func, select

from pinbench.api import runpool
from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.store import SizeMismatch
from pinbench.catalog import frameworks
from pinbench.cli.lockfile import _token_for
from pinbench.config import Settings
from pinbench.db.models import Artifact, Run
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.errors import UserError
from pinbench.evaluator.records.run_view import show_run
from pinbench.registry import service
from pinbench.registry.adopt import BadSource, adopt
from pinbench.registry.catalog import show
from pinbench.registry.lockfile import Lockfile, LockfileError
from pinbench.registry.manifest import manifest_digest, parse_manifest
from pinbench.registry.names import ArtifactRef
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.registry.trust import LockfileMismatch, NotPublishedHere
from pinbench.registry.verify import verify_lockfile
from pinbench.workspace import Workspace
from tests.apiserver import Server, api_server, wait_for_status
from tests.helpers import Cli, Payload, copied_workspace, in_process_cli, published_workspace
from tests.sourcebuilders import http_site

DIGITS = {"model": "vision/digits-logreg@1.2.0", "dataset": "sklearn-digits-test@1", "threads": 1}
QUICK = {"min_duration_ms": 50, "min_query_count": 20}


@dataclass
class Catalog:
    root: Path
    marker: Path
    """Created by the pickles' payload: it exists only if a pickle was executed."""


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Catalog:
    """The digits catalog, the torch framework and two pickled models whose unpickling
    creates ``marker``: one its manifest says is trusted, one not."""
    root = tmp_path_factory.mktemp("trust")
    cat = root / "catalog"
    shutil.copytree(catalog_dir, cat)
    frameworks.write(cat, "torch")
    marker = root / "pickle-ran"
    logreg = yaml.safe_load((cat / "model-digits-logreg-1.2.0.yaml").read_text())
    for name, trusted in (("pickle-trusted", True), ("pickle-untrusted", False)):
        folder = cat / name
        folder.mkdir()
        torch.save(Payload(f"open({str(marker)!r}, 'w').write('ran')"), folder / "model.pth")
        data = (folder / "model.pth").read_bytes()
        manifest = {
            "kind": "model",
            "name": f"vision/{name}",
            "version": "1.0.0",
            "format": "torch-pickle",
            "trusted": trusted,
            "framework": {"name": "torch", "range": "2.13.0"},
            "files": [
                {
                    "path": "model.pth",
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                    "source": f"file:{name}/model.pth",
                }
            ],
            "inputs": logreg["inputs"],
            "outputs": logreg["outputs"],
        }
        (cat / f"model-{name}.yaml").write_text(yaml.safe_dump(manifest))
    for image, version in IMAGES:
        doc = {
            "kind": "image",
            "name": image,
            "version": version,
            "digest": _image_digest(image, version),
        }
        (cat / f"image-{image.replace('/', '-')}-{version}.yaml").write_text(yaml.safe_dump(doc))
    _evil_export(cat, marker, logreg)
    return Catalog(cat, marker)


ORT_IMAGE = frameworks.image_name("onnxruntime")
IMAGES = [(ORT_IMAGE, "1.0.0"), (ORT_IMAGE, "2.0.0"), ("evil/image", "1.0.0")]
"""The framework's image (its range is ^1.0.0), a version outside it, an image nobody needs."""


def _image_digest(name: str, version: str) -> str:
    return "sha256:" + hashlib.sha256(f"{name}@{version}".encode()).hexdigest()


def _image_entry(name: str, version: str) -> dict[str, Any]:
    doc = {
        "kind": "image",
        "name": name,
        "version": version,
        "digest": _image_digest(name, version),
    }
    return {
        "kind": "image",
        "name": name,
        "version": version,
        "manifest_digest": manifest_digest(parse_manifest(doc)).hex,
        "files": [],
    }


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.reshape(x.shape[0], -1))  # type: ignore[no-any-return]


def _evil_export(cat: Path, marker: Path, logreg: dict[str, Any]) -> None:
    """A ``torch.export`` archive whose weights are a pickle the archive marks
    ``use_pickle`` (torch 2.13 would load them with ``weights_only=False``)."""
    folder = cat / "export-pickle"
    folder.mkdir()
    good = io.BytesIO()
    torch.export.save(torch.export.export(_Linear(), (torch.zeros(1, 1, 8, 8),)), good)
    payload = io.BytesIO()
    torch.save(Payload(f"open({str(marker)!r}, 'w').write('ran')"), payload)
    with zipfile.ZipFile(good) as src:
        members = {info.filename: src.read(info) for info in src.infolist()}
    weights = []
    for name, data in members.items():
        if name.split("/")[-1].startswith("model_weights_config"):
            config = json.loads(data)
            for entry in config["config"].values():
                entry["use_pickle"] = True
                weights.append(entry["path_name"])
            members[name] = json.dumps(config).encode()
    with zipfile.ZipFile(folder / "model.pt2", "w") as out:
        for name, data in members.items():
            hit = any(name.endswith("/" + w) for w in weights)
            out.writestr(name, payload.getvalue() if hit else data)
    data = (folder / "model.pt2").read_bytes()
    entry = {"path": "model.pt2", "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    manifest = {
        "kind": "model",
        "name": "vision/export-pickle",
        "version": "1.0.0",
        "format": "torch-export",
        "framework": {"name": "torch", "range": "2.13.0"},
        "files": [{**entry, "source": "file:export-pickle/model.pt2"}],
        "inputs": logreg["inputs"],
        "outputs": logreg["outputs"],
    }
    (cat / "model-export-pickle.yaml").write_text(yaml.safe_dump(manifest))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("trust-server")
    with api_server(root / "home", f"sqlite:///{root}/db", catalog_dir=catalog.root) as srv:
        yield srv


@dataclass
class Here:
    ws: Workspace
    cli: Cli
    root: Path


@pytest.fixture(scope="module")
def here_template(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> Path:
    """A home with the catalog published, once for the module (each test gets a copy)."""
    root = tmp_path_factory.mktemp("trust-home")
    published_workspace(root, catalog.root).close()
    return root


@pytest.fixture
def here(
    tmp_path: Path,
    here_template: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Here]:
    """A local home with the same catalog published (a copy of ``here_template``: the same
    rows and blobs as publishing it here, issue 49), and the CLI on it."""
    ws = copied_workspace(here_template, tmp_path)
    cli = in_process_cli(monkeypatch, capsys, tmp_path / "home", f"sqlite:///{tmp_path}/db")
    try:
        yield Here(ws, cli, tmp_path)
    finally:
        ws.close()


def _lock(ws: Workspace, **request: Any) -> Lockfile:
    return service.lock(ws, parse_request({**DIGITS, "scenario": QUICK, **request}))[0]


def forge(lock: Lockfile, edit: Callable[[dict[str, Any]], object]) -> Lockfile:
    """``lock`` edited and put back in canonical form: its digest matches its new bytes."""
    data = lock.to_json()
    edit(data)
    return Lockfile.from_bytes(canonical_json(data))


def _model(data: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(a for a in data["artifacts"] if a["kind"] == "model")
    return found


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting a dotted path (``model.trusted``, ``environment.requirements.0.version``)."""

    def edit(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def _other_models_bytes(data: dict[str, Any]) -> None:
    """The model's file entry carries another model's sha256 (forged provenance)."""
    _model(data)["files"][0]["sha256"] = OTHER_SHA256[0]


def _ghost(data: dict[str, Any]) -> None:
    """A model never published here, named consistently everywhere in the lockfile."""
    _model(data).update(name="ghost/never-published", version="9.9.9")
    data["model"].update(name="ghost/never-published", version="9.9.9")
    data["request"]["model"] = "ghost/never-published@9.9.9"


def _outside_the_request(data: dict[str, Any]) -> None:
    data["request"]["model"] = "vision/digits-logreg@^9"


def _pinning_image(name: str, version: str) -> Callable[[dict[str, Any]], None]:
    """Another published image in place of the one the framework's environment resolves."""

    def edit(data: dict[str, Any]) -> None:
        data["artifacts"] = [a for a in data["artifacts"] if a["kind"] != "image"]
        data["artifacts"].append(_image_entry(name, version))
        data["environment"]["image"].update(
            name=name, version=version, digest=_image_digest(name, version)
        )

    return edit


def _twice(data: dict[str, Any]) -> None:
    data["artifacts"].append(dict(data["artifacts"][-1]))


OTHER_SHA256: list[str] = []
"""Filled in by the fixture below: the sha256 of another published model's file."""

FORGERIES: list[tuple[str, Callable[[dict[str, Any]], object], type[UserError], str]] = [
    # (what, edit, error, what the message must name)
    ("trusted flipped on", _set("model.trusted", True), LockfileMismatch, "$.model.trusted"),
    ("another model's bytes", _other_models_bytes, LockfileMismatch, ".files[0].sha256"),
    (
        "a format that loads as code",
        _set("model.format", "torch-pickle"),
        LockfileMismatch,
        "$.model.format",
    ),
    (
        "an input renamed",
        _set("model.inputs.0.name", "no_such_input"),
        LockfileMismatch,
        "$.model.inputs[0].name",
    ),
    (
        "another requirement pinned",
        _set("environment.requirements.0.version", "0.0.1"),
        LockfileMismatch,
        "$.environment.requirements[0].version",
    ),
    (
        "labels read another way",
        _set("dataset.labels.format", "class-index-txt"),
        LockfileMismatch,
        "$.dataset.labels.format",
    ),
    ("a never-published model", _ghost, NotPublishedHere, "is not published here"),
    ("a pin outside its own request", _outside_the_request, UserError, "outside '^9'"),
    (
        "an image outside the framework's range",
        _pinning_image(ORT_IMAGE, "2.0.0"),
        UserError,
        "outside '^1.0.0' required by framework/onnxruntime@1.31.0",
    ),
    (
        "an image nothing asks for",
        _pinning_image("evil/image", "1.0.0"),
        UserError,
        "nothing it resolves asks for image/evil/image@1.0.0",
    ),
    (
        "a batch size its request did not ask for",
        _set("batch_size", 4096),
        UserError,
        "batch_size 4096 is not among its request's [1]",
    ),
    ("an artifact pinned twice", _twice, UserError, "it pins 2 images"),
]


@pytest.fixture(autouse=True)
def _other_sha256(here: Here) -> None:
    if not OTHER_SHA256:
        with here.ws.transaction() as session:
            row = session.scalar(
                select(Artifact).where(
                    Artifact.name == "vision/digits-logreg", Artifact.version == "1.0.0"
                )
            )
            assert row is not None
            OTHER_SHA256.append(row.files[0].sha256)


def _counts(ws: Workspace) -> tuple[int, int]:
    with ws.transaction() as session:
        runs = session.scalar(select(func.count()).select_from(Run)) or 0
        locks = session.scalar(select(func.count()).select_from(LockfileRow)) or 0
    return runs, locks


# ---------------------------------------------------------------- the CLI


def test_a_lockfile_as_the_registry_makes_it_verifies_and_runs(here: Here) -> None:
    """The control: the unforged lockfile passes every check below."""
    lock = _lock(here.ws)
    image = lock.body.environment.image if lock.body.environment else None
    assert image is not None and (image.name, image.version) == (ORT_IMAGE, "1.0.0")
    assert verify_lockfile(here.ws, lock)
    path = here.root / "ok.lock"
    lock.write(path)
    assert here.cli("verify", str(path)).code == 0
    assert here.cli("run", str(path), "--runner", "local").code == 0


@pytest.mark.parametrize(
    ("edit", "error", "needle"), [f[1:] for f in FORGERIES], ids=[f[0] for f in FORGERIES]
)
def test_a_forged_lockfile_is_refused_by_verify_and_run_and_nothing_is_recorded(
    here: Here, edit: Callable[[dict[str, Any]], object], error: type[UserError], needle: str
) -> None:
    forged = forge(_lock(here.ws), edit)
    with pytest.raises(error) as info:
        verify_lockfile(here.ws, forged)
    assert needle in str(info.value)
    path = here.root / "forged.lock"
    forged.write(path)
    before = _counts(here.ws)
    for command in (["verify", str(path)], ["run", str(path), "--runner", "local"]):
        result = here.cli(*command)
        assert result.code == 1, command
        assert needle in " ".join(result.err.split()), command
    assert _counts(here.ws) == before
    with here.ws.transaction() as session:
        assert session.get(LockfileRow, forged.digest.hex) is None


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        ("/etc/hostname", "must be a relative POSIX path"),  # absolute
        ("../../../../tmp/escape", "must not contain '..'"),  # climbs out of the scratch
        ("a/../../b", "must be normalised"),
    ],
)
def test_a_lockfile_file_path_outside_the_artifact_does_not_parse(
    here: Here, path: str, needle: str
) -> None:
    data = _lock(here.ws).to_json()
    _model(data)["files"][0]["path"] = path
    with pytest.raises(LockfileError) as info:
        Lockfile.from_bytes(canonical_json(data))
    assert needle in str(info.value)
    (here.root / "escape.lock").write_bytes(canonical_json(data))
    result = here.cli("run", str(here.root / "escape.lock"), "--runner", "local")
    assert result.code == 1 and needle in " ".join(result.err.split())
    assert not (Path("/tmp") / "escape").exists()


def test_a_source_in_a_lockfile_is_never_fetched(here: Here) -> None:
    """The lockfile's source is compared with the registry's before anything is opened."""
    with http_site() as site:
        site.files["/secret"] = b"internal"
        url = f"{site.url}/secret"
        forged = forge(_lock(here.ws), lambda d: _model(d)["files"][0].update(source=url))
        path = here.root / "ssrf.lock"
        forged.write(path)
        result = here.cli("run", str(path), "--runner", "local")
        assert result.code == 1 and ".files[0].source" in result.err
        assert site.requests == []
        assert hashlib.sha256(b"internal").hexdigest() not in result.err


def test_a_pickle_runs_on_the_cli_only_with_allow_pickle(here: Here, catalog: Catalog) -> None:
    lock = _lock(here.ws, model="vision/pickle-trusted@1", framework="torch@2.13.0")
    path = here.root / "pickle.lock"
    lock.write(path)
    before = _counts(here.ws)
    refused = here.cli("run", str(path), "--runner", "local")
    assert refused.code == 1 and "--allow-pickle" in refused.err
    assert not catalog.marker.exists() and _counts(here.ws) == before

    # the control: allowed, the payload runs (it is no model, so the run fails, recorded): in
    # the sandbox it cannot write its mark (its error says it tried); outside it, it does
    allowed = here.cli("run", str(path), "--runner", "local", "--allow-pickle")
    assert allowed.code == 1 and str(catalog.marker) in allowed.err
    assert not catalog.marker.exists()
    unsandboxed = ("run", str(path), "--runner", "local", "--allow-pickle", "--sandbox", "none")
    assert here.cli(*unsandboxed).code == 1 and catalog.marker.exists()
    catalog.marker.unlink()
    assert _counts(here.ws)[0] == before[0] + 2


def test_a_torch_export_archive_holding_a_pickle_never_unpickles(
    here: Here, catalog: Catalog
) -> None:
    lock = _lock(here.ws, model="vision/export-pickle@1", framework="torch@2.13.0")
    path = here.root / "export.lock"
    lock.write(path)
    result = here.cli("run", str(path), "--runner", "local", "--allow-pickle")
    assert result.code == 1 and "Weights only load failed" in result.err
    assert not catalog.marker.exists()


def test_a_pickle_its_manifest_does_not_trust_never_loads(here: Here, catalog: Catalog) -> None:
    lock = _lock(here.ws, model="vision/pickle-untrusted@1", framework="torch@2.13.0")
    path = here.root / "untrusted.lock"
    lock.write(path)
    result = here.cli("run", str(path), "--runner", "local", "--allow-pickle")
    assert result.code == 1 and "trusted: true" in " ".join(result.err.split())
    assert not catalog.marker.exists()


# ---------------------------------------------------------------- a real server


def _server_lock(server: Server, **request: Any) -> Lockfile:
    with server.client("admin") as c:
        body = {**DIGITS, "scenario": QUICK, **request}
        digest = c.post("/api/v1/lockfiles", json=body).json()["points"][0]["digest"]
        return Lockfile.from_bytes(c.get(f"/api/v1/lockfiles/{digest}").content)


def _runs(server: Server) -> int:
    with httpx.Client(base_url=server.url) as c:
        return len(c.get("/api/v1/runs").json())


@pytest.mark.parametrize(
    ("edit", "error", "needle"), [f[1:] for f in FORGERIES], ids=[f[0] for f in FORGERIES]
)
def test_the_server_stores_no_forged_lockfile(
    server: Server, edit: Callable[[dict[str, Any]], object], error: type[UserError], needle: str
) -> None:
    forged = forge(_server_lock(server), edit)
    with server.client("owner") as c:
        put = c.put(f"/api/v1/lockfiles/{forged.digest.hex}", content=forged.canonical)
        assert put.status_code == 400, put.text
        assert needle in put.json()["detail"]
        assert c.get(f"/api/v1/lockfiles/{forged.digest.hex}").status_code == 404
        queued = c.post("/api/v1/runs", json={"lockfile": forged.digest.hex, "runner": "local"})
        assert queued.status_code == 404


def test_a_run_token_cannot_turn_a_pickle_trusted_on_the_server(
    server: Server, catalog: Catalog
) -> None:
    """The reproduced remote code execution: flip ``model.trusted``, PUT, run."""
    lock = _server_lock(server, model="vision/pickle-untrusted@1", framework="torch@2.13.0")
    forged = forge(lock, _set("model.trusted", True))
    before = _runs(server)
    with server.client("owner") as c:
        put = c.put(f"/api/v1/lockfiles/{forged.digest.hex}", content=forged.canonical)
        assert put.status_code == 400 and "$.model.trusted" in put.json()["detail"]
    assert _runs(server) == before and not catalog.marker.exists()


@pytest.mark.parametrize("runner", ["local", "venv", "docker"])
def test_a_server_never_runs_a_pickle_unless_its_operator_allows_it(
    server: Server, catalog: Catalog, runner: str
) -> None:
    lock = _server_lock(server, model="vision/pickle-trusted@1", framework="torch@2.13.0")
    before = _runs(server)
    with server.client("owner") as c:
        run = c.post("/api/v1/runs", json={"lockfile": lock.digest.hex, "runner": runner})
    assert run.status_code == 403, run.text
    assert "never executes pickles" in run.json()["detail"]
    assert _runs(server) == before and not catalog.marker.exists()


def test_an_operator_allows_pickles_in_the_sandbox_of_the_runs_runner(
    tmp_path: Path, catalog: Catalog
) -> None:
    """Decision 313: ``serve --allow-pickle`` lets a trusted pickle load in any runner, in its
    sandbox: the local runner's worker in bubblewrap, where the payload's write to the host
    fails the run (its error names the file) and leaves nothing."""
    with api_server(
        tmp_path / "home", f"sqlite:///{tmp_path}/db", "--allow-pickle", catalog_dir=catalog.root
    ) as srv:
        lock = _server_lock(srv, model="vision/pickle-trusted@1", framework="torch@2.13.0")
        with srv.client("owner") as c:
            run = c.post("/api/v1/runs", json={"lockfile": lock.digest.hex, "runner": "local"})
            assert run.status_code == 202, run.text
            info = wait_for_status(c, run.json()["id"], ("succeeded", "failed"))
        assert info["status"] == "failed" and str(catalog.marker) in info["error"], info
        assert not catalog.marker.exists()


def test_the_server_never_fetches_a_missing_blob_from_its_source(
    server: Server, catalog: Catalog
) -> None:
    """A model published with an https source (fetched by its publisher); its blob then goes
    missing from the server's store: the run fails, and the source is never asked."""
    doc = yaml.safe_load((catalog.root / "model-digits-logreg-1.2.0.yaml").read_text())
    entry = doc["files"][0]
    data = (catalog.root / entry["source"].removeprefix("file:")).read_bytes()
    ws = server.workspace()
    with http_site() as site:
        site.files["/model.onnx"] = data
        doc["name"], entry["source"] = "vision/digits-remote", f"{site.url}/model.onnx"
        publish(ws, parse_manifest(doc), manifest_dir=catalog.root, publisher="owner")
        fetched = len(site.requests)  # the publisher's (none: the store had the bytes)
        blob = ws.store.path(Digest(entry["sha256"]))
        blob.unlink()
        try:
            lock = _server_lock(server, model="vision/digits-remote@1")
            with server.client("owner") as c:
                queued = c.post(
                    "/api/v1/runs", json={"lockfile": lock.digest.hex, "runner": "local"}
                )
                info = _wait(c, queued.json()["id"])
            assert info["status"] == "failed" and entry["sha256"] in info["error"]
            assert len(site.requests) == fetched  # the server fetched nothing
        finally:
            blob.write_bytes(data)
            ws.close()


def _wait(c: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        info: dict[str, Any] = c.get(f"/api/v1/runs/{run_id}").json()
        if info["status"] not in ("queued", "running"):
            return info
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


# ---------------------------------------------------------------- lockfiles from elsewhere


def test_a_lockfile_from_elsewhere_runs_after_a_deliberate_import(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lock = _server_lock(server)
    path = tmp_path / "theirs.lock"
    lock.write(path)
    cli = in_process_cli(monkeypatch, capsys, tmp_path / "fresh")
    assert cli("init").code == 0
    refused = cli("verify", str(path))
    assert refused.code == 1 and "not published here" in refused.err
    assert "pinbench lockfile import" in " ".join(refused.err.split())

    imported = cli("lockfile", "import", str(path), "--from", server.url, "--json")
    assert imported.code == 0, imported.err
    refs = {a["ref"] for a in yaml.safe_load(imported.out)["artifacts"]}
    assert refs == {a.ref for a in lock.body.artifacts}
    assert cli("verify", str(path)).code == 0
    assert cli("run", str(path), "--runner", "local").code == 0
    again = cli("lockfile", "import", str(path), "--from", server.url, "--json")
    assert not any(a["created"] for a in yaml.safe_load(again.out)["artifacts"])


def test_importing_a_forged_lockfile_adopts_nothing(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    forged = forge(_server_lock(server), _set("model.trusted", True))
    path = tmp_path / "forged.lock"
    forged.write(path)
    home = tmp_path / "fresh"
    cli = in_process_cli(monkeypatch, capsys, home)
    assert cli("init").code == 0
    result = cli("lockfile", "import", str(path), "--from", server.url)
    assert result.code == 1 and "$.model.trusted" in result.err
    assert cli("list", "--json").out.strip() == "[]"
    assert [p for p in (home / "blobs").rglob("*") if p.is_file()] == []
    assert [p for p in (home / "tmp").glob("*") if p.is_file()] == []  # nothing staged left


def test_a_server_runs_only_in_the_runners_its_operator_allows(
    tmp_path: Path, catalog: Catalog
) -> None:
    with api_server(
        tmp_path / "home",
        f"sqlite:///{tmp_path}/db",
        "--runners",
        "docker",
        catalog_dir=catalog.root,
    ) as srv:
        lock = _server_lock(srv)
        with srv.client("owner") as c:
            run = c.post("/api/v1/runs", json={"lockfile": lock.digest.hex, "runner": "local"})
        assert run.status_code == 403
        assert "allows: docker (`pinbench serve --runners`)" in run.json()["detail"]
        assert _runs(srv) == 0


# ---------------------------------------------------------------- a hostile other registry


@dataclass
class Elsewhere:
    """Another registry as plain data (an ``ArtifactSource``): what it shows, what it sends."""

    ws: Workspace
    shown: dict[str, dict[str, Any]]
    extra: bytes = b""
    """Sent after each blob's bytes (a registry that never stops sending)."""
    where: str = "https://elsewhere.example"

    def artifact(self, ref: str) -> Any:
        return self.shown[ref]

    def blob(self, digest: str) -> Iterator[bytes]:
        yield self.ws.store.path(Digest(digest)).read_bytes()
        if self.extra:
            yield self.extra


def _elsewhere(ws: Workspace, lock: Lockfile) -> Elsewhere:
    refs = [ArtifactRef.parse(a.ref) for a in lock.body.artifacts]
    return Elsewhere(ws, {str(r): show(ws, r) for r in refs})


def _nothing_adopted(ws: Workspace) -> None:
    with ws.transaction() as session:
        assert session.scalar(select(func.count()).select_from(Artifact)) == 0
    assert [p for p in ws.store.blobs.rglob("*") if p.is_file()] == []
    assert [p for p in ws.store.tmp.glob("*") if p.is_file()] == []


@pytest.fixture
def empty(tmp_path: Path) -> Iterator[Workspace]:
    ws = Workspace(Settings(home=tmp_path / "empty", database_url=f"sqlite:///{tmp_path}/e.db"))
    ws.init()
    yield ws
    ws.close()


def test_adoption_publishes_what_was_checked_and_keeps_a_yank(here: Here, empty: Workspace) -> None:
    lock = _lock(here.ws)
    source = _elsewhere(here.ws, lock)
    model = next(a.ref for a in lock.body.artifacts if a.kind == "model")
    source.shown[model] = {**source.shown[model], "yanked": True, "yank_reason": "bad weights"}
    adopted = adopt(empty, lock, source, publisher="me")
    assert {a.ref for a in adopted if a.created} == {a.ref for a in lock.body.artifacts}
    assert verify_lockfile(empty, lock)
    shown = show(empty, ArtifactRef.parse(model))
    assert shown["yanked"] and "yanked at https://elsewhere.example: bad weights" in str(
        shown["yank_reason"]
    )


def test_adoption_refuses_a_manifest_of_another_version(here: Here, empty: Workspace) -> None:
    """The served manifest hashes to the pinned digest, but it is not the version the
    lockfile's entry names: publishing it would put another version in this registry."""
    lock = _lock(here.ws)
    source = _elsewhere(here.ws, lock)
    model = next(a for a in lock.body.artifacts if a.kind == "model")
    other = show(here.ws, ArtifactRef.parse("model/vision/digits-logreg@1.0.0"))
    source.shown[model.ref] = other
    forged = forge(lock, lambda d: _model(d).update(manifest_digest=other["manifest_digest"]))
    with pytest.raises(
        BadSource, match=re.escape("the manifest of model/vision/digits-logreg@1.0.0")
    ):
        adopt(empty, forged, source, publisher="me")
    _nothing_adopted(empty)


def test_adoption_stops_a_download_longer_than_the_file(here: Here, empty: Workspace) -> None:
    lock = _lock(here.ws)
    source = _elsewhere(here.ws, lock)
    source.extra = b"x" * 4096
    with pytest.raises(SizeMismatch):
        adopt(empty, lock, source, publisher="me")
    _nothing_adopted(empty)


@pytest.mark.parametrize(
    ("shown", "needle"),
    [
        ([], "no artifact description"),
        ({"manifest": {"kind": ["model"]}, "files": []}, "`kind` must be one of"),
    ],
)
def test_adoption_refuses_answers_no_registry_gives(
    here: Here, empty: Workspace, shown: Any, needle: str
) -> None:
    lock = _lock(here.ws)
    source = _elsewhere(here.ws, lock)
    for ref in source.shown:
        source.shown[ref] = shown
    with pytest.raises(UserError, match=re.escape(needle)):
        adopt(empty, lock, source, publisher="me")
    _nothing_adopted(empty)


@pytest.mark.parametrize(
    ("env", "url", "sent"),
    [
        ({"PINBENCH_URL": "http://mine", "PINBENCH_TOKEN": "t"}, "http://other", None),
        ({"PINBENCH_URL": "http://mine/", "PINBENCH_TOKEN": "t"}, "http://mine", "t"),
        ({"PINBENCH_TOKEN": "t", "PINBENCH_FROM_TOKEN": "f"}, "http://other", "f"),
    ],
)
def test_a_token_is_sent_only_to_the_server_it_was_made_for(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], url: str, sent: str | None
) -> None:
    for name in ("PINBENCH_URL", "PINBENCH_TOKEN", "PINBENCH_FROM_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _token_for(url) == sent


def test_a_queued_run_that_fails_before_recording_itself_is_not_left_running(
    here: Here, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise UserError("the database went away")

    monkeypatch.setattr(runpool, "run_lockfile", broken)
    pool = runpool.RunPool(here.ws, workers=1, queue=1)
    try:
        run_id = pool.submit(_lock(here.ws), "local")
        deadline = time.monotonic() + 30
        while show_run(here.ws, run_id)["status"] in ("queued", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        info = show_run(here.ws, run_id)
        assert info["status"] == "failed" and info["error"] == "the database went away"
    finally:
        pool.close()
