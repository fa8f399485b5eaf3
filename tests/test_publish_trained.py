"""A training run's final weights published as a new model version (issue 22 item 3:
``--publish-as model/NAME@VERSION``): the manifest names the run, the registry checks that
claim against the recorded run, and the new version runs like any model. A forged or stale
claim is refused with nothing left behind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import func, select

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.db.models import Artifact, Run
from pinbench.errors import UserError
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.records.trained_model import NotPublishable, publish_trained
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import catalog, service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import load_manifest
from pinbench.registry.names import ArtifactRef
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.registry.trained import TrainedByRefused
from pinbench.workspace import Workspace
from tests.helpers import Cli, Home, in_process_cli, published_home

REQUEST = {
    "model": "vision/digits-cnn-torch@^1",
    "dataset": "sklearn-digits-train@^1",
    "framework": "torch@*",
    "training": {
        "validation": "sklearn-digits-test@^1",
        "learning_rate": 0.01,
        "batch_size": 32,
        "epochs": 5,
        "target_top1": 0.9,
    },
}


def quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Home]:
    root = tmp_path_factory.mktemp("publish-trained")
    with published_home(root, cnn_catalog_dir) as home:
        yield home


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def _lock(ws: Workspace, request: dict[str, Any] = REQUEST) -> Lockfile:
    return service.lock(ws, parse_request(request))[0]


def _write_lock(tmp_path: Path, lock: Lockfile) -> Path:
    path = tmp_path / "train.lock"
    lock.write(path)
    return path


def _counts(ws: Workspace) -> tuple[int, int]:
    """(runs, artifacts) recorded."""
    with ws.transaction() as session:
        runs = session.scalar(select(func.count()).select_from(Run))
        arts = session.scalar(select(func.count()).select_from(Artifact))
    return int(runs or 0), int(arts or 0)


def _manifest(ws: Workspace, ref: str) -> dict[str, Any]:
    with ws.reads() as rows:
        return catalog.published_manifest(rows, ArtifactRef.parse(ref))


@pytest.fixture(scope="module")
def published(home: Home) -> dict[str, Any]:
    """A deterministic PyTorch training run to 0.9, its weights published as
    ``model/vision/digits-cnn-trained@1.0.0``; the run as ``show_run`` gives it."""
    outcome = run_lockfile(home.ws, _lock(home.ws), runner="local", say=quiet)
    publish_trained(home.ws, outcome.id, "model/vision/digits-cnn-trained@1.0.0")
    return show_run(home.ws, outcome.id, nested=True)


# ---------------------------------------------------------------- what is published


def test_publish_as_publishes_the_final_weights_with_a_manifest_naming_the_run(
    home: Home, published: dict[str, Any]
) -> None:
    assert published["status"] == "succeeded"
    new = _manifest(home.ws, "model/vision/digits-cnn-trained@1.0.0")
    old = _manifest(home.ws, "model/vision/digits-cnn-torch@1.0.0")
    weights = published["details"]["training"]["weights_sha256"]
    assert new["trained_by"] == {
        "run": published["id"],
        "lockfile": published["lockfile"],
        "weights": "digits-cnn.safetensors",
    }
    assert [(f["path"], f["sha256"]) for f in new["files"]] == [("digits-cnn.safetensors", weights)]
    assert weights != old["files"][0]["sha256"]  # trained afresh from the seed
    for same in ("format", "architecture", "inputs", "outputs", "framework", "license"):
        assert new[same] == old[same], same
    assert new["attributes"] == {"trained_from": "model/vision/digits-cnn-torch@1.0.0"}
    assert published["id"] in new["description"]


def test_the_published_version_runs_like_any_model(home: Home, published: dict[str, Any]) -> None:
    """Its weights load into the architecture and score what training measured."""
    request = {
        "model": "vision/digits-cnn-trained@1.0.0",
        "dataset": "sklearn-digits-test@^1",
        "framework": "torch@*",
        "scenario": {"mode": "accuracy"},
    }
    outcome = run_lockfile(home.ws, _lock(home.ws, request), runner="local", say=quiet)
    assert outcome.status == "succeeded"
    final = published["details"]["training"]["epochs"][-1]["val_top1"]
    assert outcome.metrics["top1"] == pytest.approx(final, abs=0.01)


def test_publishing_the_same_run_again_is_a_no_op(home: Home, published: dict[str, Any]) -> None:
    again = publish_trained(home.ws, published["id"], "model/vision/digits-cnn-trained@1.0.0")
    assert not again.created


def test_run_publish_as_trains_then_publishes(home: Home, cli: Cli, tmp_path: Path) -> None:
    path = _write_lock(tmp_path, _lock(home.ws))
    target = "model/vision/digits-cnn-trained@2.0.0"
    result = cli("run", str(path), "--runner", "local", "--publish-as", target, "--json")
    assert result.code == 0, result.err
    info = json.loads(result.out)
    assert info["status"] == "succeeded" and info["published"]["ref"] == target
    assert _manifest(home.ws, target)["trained_by"]["run"] == info["id"]


# ---------------------------------------------------------------- refused before a run


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("model/vision/digits-cnn-torch@1.0.0", "already published"),
        ("dataset/vision/digits@1.0.0", "published as a model"),
        ("model/vision/digits@^1", "model/vision/digits@^1"),
    ],
)
def test_publish_as_a_taken_or_wrong_target_is_refused_before_anything_runs(
    home: Home, cli: Cli, tmp_path: Path, target: str, says: str
) -> None:
    path = _write_lock(tmp_path, _lock(home.ws))
    before = _counts(home.ws)
    result = cli("run", str(path), "--runner", "local", "--publish-as", target)
    assert result.code == 1
    assert says in result.err and "Traceback" not in result.err
    assert _counts(home.ws) == before


def test_publish_as_needs_a_training_lockfile(home: Home, cli: Cli, tmp_path: Path) -> None:
    request = {
        "model": "vision/digits-cnn-torch@^1",
        "dataset": "sklearn-digits-test@^1",
        "framework": "torch@*",
    }
    path = _write_lock(tmp_path, _lock(home.ws, request))
    before = _counts(home.ws)
    result = cli("run", str(path), "--publish-as", "model/vision/x@1.0.0")
    assert result.code == 1 and "no training section" in result.err
    assert _counts(home.ws) == before


def test_publish_as_through_a_server_is_refused(
    home: Home, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_lock(tmp_path, _lock(home.ws))
    monkeypatch.setenv("PINBENCH_URL", "http://127.0.0.1:9")
    result = cli("run", str(path), "--publish-as", "model/vision/x@1.0.0")
    assert result.code == 1 and "this machine's registry only" in result.err


def test_runs_publish_refuses_a_run_that_did_not_train(home: Home) -> None:
    request = {
        "model": "vision/digits-cnn-torch@^1",
        "dataset": "sklearn-digits-test@^1",
        "framework": "torch@*",
    }
    outcome = run_lockfile(home.ws, _lock(home.ws, request), runner="local", say=quiet)
    before = _counts(home.ws)
    with pytest.raises(NotPublishable, match="not a training run"):
        publish_trained(home.ws, outcome.id, "model/vision/y@1.0.0")
    assert _counts(home.ws) == before


# ---------------------------------------------------------------- a claim is checked


def _forged(tmp_path: Path, home: Home, published: dict[str, Any], **trained_by: str) -> Path:
    """A manifest ``vision/forged@1.0.0`` claiming ``trained_by`` (the real claim, with
    ``trained_by`` overriding parts) over the catalog's own weights, or ``weights_file``'s
    bytes."""
    old = _manifest(home.ws, "model/vision/digits-cnn-torch@1.0.0")
    claim = {**_manifest(home.ws, "model/vision/digits-cnn-trained@1.0.0")["trained_by"]}
    weights = trained_by.pop("weights_blob", old["files"][0]["sha256"])
    claim.update(trained_by)
    blob = home.ws.store.path(Digest.parse(weights))
    (tmp_path / "digits-cnn.safetensors").write_bytes(blob.read_bytes())
    data = {
        **{k: v for k, v in old.items() if k not in ("files", "attributes")},
        "name": "vision/forged",
        "version": "1.0.0",
        "files": [{"path": "digits-cnn.safetensors", "sha256": weights}],
        "trained_by": claim,
    }
    path = tmp_path / "forged.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _refused(home: Home, manifest: Path, says: str) -> None:
    before = _counts(home.ws)
    blobs = sorted(home.ws.store.iter_digests(), key=str)
    with pytest.raises(TrainedByRefused, match=says):
        publish(home.ws, load_manifest(manifest), manifest_dir=manifest.parent)
    assert _counts(home.ws) == before
    assert sorted(home.ws.store.iter_digests(), key=str) == blobs
    assert not list(home.ws.store.tmp.iterdir())


def test_a_claim_over_weights_the_run_did_not_produce_is_refused(
    home: Home, published: dict[str, Any], tmp_path: Path
) -> None:
    _refused(home, _forged(tmp_path, home, published), "not the run's final weights")


def test_a_claim_naming_no_recorded_run_is_refused(
    home: Home, published: dict[str, Any], tmp_path: Path
) -> None:
    weights = published["details"]["training"]["weights_sha256"]
    manifest = _forged(
        tmp_path, home, published, run="00000000-0000-0000-0000-000000000000", weights_blob=weights
    )
    _refused(home, manifest, "no run with that id is recorded")


def test_a_claim_naming_another_lockfile_is_refused(
    home: Home, published: dict[str, Any], tmp_path: Path
) -> None:
    weights = published["details"]["training"]["weights_sha256"]
    manifest = _forged(tmp_path, home, published, lockfile="0" * 64, weights_blob=weights)
    _refused(home, manifest, "is a run of lockfile")


def test_a_claim_naming_a_run_that_did_not_train_is_refused(
    home: Home, published: dict[str, Any], tmp_path: Path
) -> None:
    with home.ws.transaction() as session:
        other = session.scalars(
            select(Run).where(Run.status == "succeeded", Run.id != published["id"])
        ).first()
        assert other is not None  # the inference runs above
        other_id, other_lock = other.id, other.lockfile_digest
    manifest = _forged(tmp_path, home, published, run=other_id, lockfile=other_lock)
    _refused(home, manifest, "has no training section")


def test_a_claim_naming_a_decoy_beside_the_loaded_weights_is_refused(
    home: Home, published: dict[str, Any], tmp_path: Path
) -> None:
    """The run's real weights as a side file, other weights in the file the model loads."""
    weights = published["details"]["training"]["weights_sha256"]
    path = _forged(tmp_path, home, published, weights_blob=weights)
    data = yaml.safe_load(path.read_text())
    (tmp_path / "copy.bin").write_bytes((tmp_path / "digits-cnn.safetensors").read_bytes())
    old = _manifest(home.ws, "model/vision/digits-cnn-torch@1.0.0")["files"][0]["sha256"]
    (tmp_path / "digits-cnn.safetensors").write_bytes(
        home.ws.store.path(Digest.parse(old)).read_bytes()
    )
    data["files"] = [
        {"path": "digits-cnn.safetensors", "sha256": old},
        {"path": "copy.bin", "sha256": weights},
    ]
    data["trained_by"]["weights"] = "copy.bin"
    path.write_text(yaml.safe_dump(data))
    _refused(home, path, "trained_by.weights must name it")


def test_a_claim_whose_weights_file_is_not_among_the_files_is_refused(
    home: Home, published: dict[str, Any], tmp_path: Path
) -> None:
    path = _forged(tmp_path, home, published, weights="other.safetensors")
    with pytest.raises(UserError, match=r"trained_by\.weights 'other\.safetensors' is not among"):
        load_manifest(path)


def test_a_model_without_trained_by_keeps_its_manifest_digest(home: Home) -> None:
    """The field is left out while unset: published manifests keep their digests."""
    old = _manifest(home.ws, "model/vision/digits-cnn-torch@1.0.0")
    assert "trained_by" not in old
    shown = catalog.show(home.ws, ArtifactRef.parse("model/vision/digits-cnn-torch@1.0.0"))
    assert Digest.of_bytes(canonical_json(shown["manifest"])).hex == shown["manifest_digest"]
