"""Versions equal up to build metadata are one version; a corrected framework manifest goes
out as a new artifact version that `installs` the same framework release (decision 80)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import func, select

from pinbench import catalog as builtin
from pinbench.db.models import Artifact
from pinbench.registry.manifest import load_manifest, manifest_data, parse_manifest
from pinbench.registry.publish import SameVersionConflict, publish
from pinbench.registry.supported import InstallsMismatch
from pinbench.workspace import Workspace
from tests.helpers import Cli, dataset_manifest, dump, write_files


def _counts(ws: Workspace) -> tuple[int, int]:
    with ws.transaction() as s:
        rows = s.scalar(select(func.count()).select_from(Artifact)) or 0
    return rows, len(list(ws.store.iter_digests()))


@pytest.mark.parametrize(
    ("first", "second", "refused"),
    [
        ("1.31.0", "1.31.0+venv1", True),  # the case: build metadata is ignored by semver
        ("1.31.0+venv1", "1.31.0", True),  # and the other way round
        ("1.31.0+a", "1.31.0+b", True),  # two builds of one version
        ("1.31.0-rc.1", "1.31.0-rc.1+b", True),  # a prerelease with a build
        ("1.31.0", "1.31.1", False),  # a new version
        ("1.31.0-rc.1", "1.31.0", False),  # a release after its prerelease
        ("1.31.0+a", "1.31.0-rc.1+a", False),  # a prerelease sorts before its release
    ],
)
def test_a_version_equal_up_to_build_metadata_is_refused(
    ws: Workspace, tmp_path: Path, first: str, second: str, refused: bool
) -> None:
    a = write_files(tmp_path / "a", {"x.npy": b"one"})
    publish(ws, parse_manifest(dataset_manifest("digits", first, a)), manifest_dir=tmp_path / "a")
    before = _counts(ws)
    b = write_files(tmp_path / "b", {"x.npy": b"two"})
    manifest = parse_manifest(dataset_manifest("digits", second, b))
    if not refused:
        publish(ws, manifest, manifest_dir=tmp_path / "b")
        assert _counts(ws) == (before[0] + 1, before[1] + 1)
        return
    with pytest.raises(SameVersionConflict) as info:
        publish(ws, manifest, manifest_dir=tmp_path / "b")
    assert info.value.existing_version == first
    assert f"dataset/digits@{first}" in str(info.value)
    assert "publish a new version" in str(info.value)
    assert _counts(ws) == before, "nothing recorded, nothing staged left"


def test_installs_is_left_out_of_the_stored_data_while_unset(catalog_dir: Path) -> None:
    """Framework manifests published before `installs` keep their digests."""
    manifest = load_manifest(catalog_dir / "framework-onnxruntime.yaml")
    assert "installs" not in manifest_data(manifest)
    fixed = parse_manifest({**manifest_data(manifest), "version": "1.31.1", "installs": "1.31.0"})
    assert manifest_data(fixed)["installs"] == "1.31.0"


@pytest.mark.parametrize(
    ("installs", "why"),
    [
        ("1.31.0+cpu", "a local label names a build, not a release"),
        ("", "empty"),
        ("v1.31.0", "a prefix"),
        ("1.31 .0", "whitespace"),
    ],
)
def test_installs_must_be_a_release(catalog_dir: Path, installs: str, why: str) -> None:
    data = manifest_data(load_manifest(catalog_dir / "framework-onnxruntime.yaml"))
    with pytest.raises(Exception, match="installs"):
        parse_manifest({**data, "version": "1.31.1", "installs": installs})


def test_a_new_version_pinning_the_old_release_needs_installs(
    ws: Workspace, catalog_dir: Path
) -> None:
    """Bumping the artifact's version alone would make every run check for 1.31.1."""
    data = manifest_data(load_manifest(catalog_dir / "framework-onnxruntime.yaml"))
    with pytest.raises(InstallsMismatch, match=r"installs: '1\.31\.0'"):
        publish(ws, parse_manifest({**data, "version": "1.31.1"}), manifest_dir=catalog_dir)
    assert _counts(ws) == (0, 0)


def _framework(tmp_path: Path, catalog_dir: Path, name: str, **changes: Any) -> Path:
    data = yaml.safe_load((catalog_dir / "framework-onnxruntime.yaml").read_text())
    return dump(tmp_path / "fw" / name, {**data, **changes})


def test_yank_and_republish_a_framework_as_a_new_version(
    cli: Cli, tmp_path: Path, catalog_dir: Path
) -> None:
    """The issue's path end to end through the CLI: a broken framework manifest published,
    its fix refused under the same version (with or without build metadata), yanked, the fix
    published as 1.31.1 installing onnxruntime 1.31.0; lock resolves the fix and the run
    checks for the release it installs."""
    assert cli("init").code == 0
    for path in sorted(catalog_dir.glob("*.yaml")):
        if path.name != "framework-onnxruntime.yaml":
            assert cli("publish", str(path), "--files", str(catalog_dir)).code == 0
    broken = _framework(tmp_path, catalog_dir, "broken.yaml", description="forgot msgspec")
    assert cli("publish", str(broken)).code == 0

    fixed = {"description": "onnxruntime 1.31.0 with the evaluator's dependencies"}
    same = cli("publish", str(_framework(tmp_path, catalog_dir, "same.yaml", **fixed)))
    assert same.code == 1 and "already published" in same.err
    build = cli(
        "publish",
        str(_framework(tmp_path, catalog_dir, "build.yaml", version="1.31.0+venv1", **fixed)),
    )
    assert build.code == 1
    assert "equals the published framework/onnxruntime@1.31.0" in build.err
    assert "publish a new version" in build.err

    assert cli("yank", "framework/onnxruntime@1.31.0", "--reason", "forgot msgspec").code == 0
    good = _framework(
        tmp_path, catalog_dir, "good.yaml", version="1.31.1", installs="1.31.0", **fixed
    )
    assert cli("publish", str(good)).code == 0, "the fix is a new artifact version"

    request = dump(
        tmp_path / "request.yaml",
        {
            "model": f"{builtin.MODEL_NAME}@1.1.0",
            "framework": "onnxruntime@~1.31.0",
            "dataset": f"{builtin.DATASET_NAME}@1",
            "scenario": {"mode": "accuracy"},
        },
    )
    lock_path = tmp_path / "fixed.lock"
    locked = cli("lock", str(request), "-o", str(lock_path), "--json")
    assert locked.code == 0, locked.err
    body = json.loads(lock_path.read_text())
    framework = [a for a in body["artifacts"] if a["kind"] == "framework"]
    assert [a["version"] for a in framework] == ["1.31.1"], "the yanked version is skipped"
    assert body["environment"]["version"] == "1.31.0", "the release the run checks for"

    ran = cli("run", str(lock_path), "--runner", "local")
    assert ran.code == 0, ran.err
    runs = json.loads(cli("runs", "list", "--json").out)
    assert runs[0]["status"] == "succeeded"
    assert runs[0]["framework"] == "onnxruntime@1.31.0"

    # An exact pin still serves the yanked version (invariant 1), and its lockfile pins 1.31.0.
    pinned = dump(
        tmp_path / "pinned.yaml",
        {**yaml.safe_load(request.read_text()), "framework": "onnxruntime@1.31.0"},
    )
    assert cli("lock", str(pinned), "-o", str(tmp_path / "pinned.lock")).code == 0
    old = json.loads((tmp_path / "pinned.lock").read_text())
    assert [a["version"] for a in old["artifacts"] if a["kind"] == "framework"] == ["1.31.0"]
