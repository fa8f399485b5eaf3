"""Publishing: immutability, yanking, and bad input that leaves no row and no blob behind."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from pinbench.artifacts.store import ChecksumMismatch, SizeMismatch
from pinbench.db.models import Artifact, ArtifactFile
from pinbench.errors import UserError
from pinbench.registry import catalog
from pinbench.registry.catalog import resolve_specs
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.names import ArtifactRef, Spec
from pinbench.registry.publish import VersionConflict, publish
from pinbench.registry.sourcing import FileProblem
from pinbench.workspace import Workspace
from tests.helpers import dataset_manifest, sha, write_files


def _publish(ws: Workspace, root: Path, data: dict[str, Any], **kw: Any) -> Any:
    return publish(ws, parse_manifest(data), manifest_dir=root, publisher="test", **kw)


def _counts(ws: Workspace) -> tuple[int, int, int]:
    with ws.transaction() as s:
        rows = s.scalar(select(func.count()).select_from(Artifact)) or 0
        files = s.scalar(select(func.count()).select_from(ArtifactFile)) or 0
    return rows, files, len(list(ws.store.iter_digests()))


def test_publish_stores_rows_and_blobs(ws_any: Workspace, tmp_path: Path) -> None:
    files = write_files(tmp_path / "a", {"x.npy": b"xx", "y.npy": b"yy"})
    result = _publish(ws_any, tmp_path / "a", dataset_manifest("digits", "1.0.0", files))
    assert result.created and result.files == 2 and result.bytes == 4 and result.new_blobs == 2
    info = catalog.show(ws_any, ArtifactRef.parse("dataset/digits@1.0.0"))
    assert [f["sha256"] for f in info["files"]] == [sha(b"xx"), sha(b"yy")]
    assert info["manifest_digest"] == result.manifest_digest.hex
    assert _counts(ws_any) == (1, 2, 2)


def test_republishing_identical_content_is_a_noop(ws_any: Workspace, tmp_path: Path) -> None:
    files = write_files(tmp_path / "a", {"x.npy": b"xx"})
    data = dataset_manifest("digits", "1.0.0", files)
    _publish(ws_any, tmp_path / "a", data)
    again = _publish(ws_any, tmp_path / "a", data)
    assert not again.created
    assert _counts(ws_any) == (1, 1, 1)


def test_other_content_under_a_published_version_is_refused(
    ws_any: Workspace, tmp_path: Path
) -> None:
    first = _publish(
        ws_any,
        tmp_path / "a",
        dataset_manifest("digits", "1.0.0", write_files(tmp_path / "a", {"x.npy": b"one"})),
    )
    other = dataset_manifest("digits", "1.0.0", write_files(tmp_path / "b", {"x.npy": b"two"}))
    with pytest.raises(VersionConflict) as info:
        _publish(ws_any, tmp_path / "b", other)
    assert info.value.existing_digest == first.manifest_digest.hex
    assert info.value.existing_digest in str(info.value)
    assert info.value.new_digest in str(info.value)
    assert _counts(ws_any) == (1, 1, 1), "the refused bytes are not stored"


def _escaping_symlink(root: Path) -> dict[str, Any]:
    outside = root.parent / "secret"
    outside.write_bytes(b"secret")
    (root / "x.npy").symlink_to(outside)
    return dataset_manifest("digits", "1.0.0", [{"path": "x.npy", "sha256": sha(b"secret")}])


def _wrong_bytes(root: Path) -> dict[str, Any]:
    files = write_files(root, {"x.npy": b"good", "y.npy": b"also good"})
    files[1]["sha256"] = sha(b"something else")
    return dataset_manifest("digits", "1.0.0", files)


def _wrong_size(root: Path) -> dict[str, Any]:
    files = write_files(root, {"x.npy": b"good"})
    files[0]["size"] = 5
    return dataset_manifest("digits", "1.0.0", files)


def _missing(root: Path) -> dict[str, Any]:
    return dataset_manifest("digits", "1.0.0", [{"path": "x.npy", "sha256": sha(b"x")}])


def _remote_source(root: Path) -> dict[str, Any]:
    files = write_files(root, {"x.npy": b"x"})
    files[0]["source"] = "ftp://example.invalid/x.npy"
    return dataset_manifest("digits", "1.0.0", files)


BAD_FILES = [
    # (case, builder, error type, what the message must contain)
    ("bytes differ from the declared sha256", _wrong_bytes, ChecksumMismatch, sha(b"also good")),
    ("size differs from the declared size", _wrong_size, SizeMismatch, "expected 5 bytes, got 4"),
    ("symlink pointing out of the artifact", _escaping_symlink, FileProblem, "outside"),
    ("declared file missing", _missing, FileProblem, "not found"),
    ("a source scheme not understood", _remote_source, FileProblem, "schemes understood"),
]


@pytest.mark.parametrize(
    ("case", "build", "error", "needle"), BAD_FILES, ids=[b[0] for b in BAD_FILES]
)
def test_bad_files_leave_no_row_and_no_blob(
    ws_any: Workspace, tmp_path: Path, case: str, build: Any, error: type, needle: str
) -> None:
    root = tmp_path / "art"
    root.mkdir()
    with pytest.raises(error) as info:
        _publish(ws_any, root, build(root))
    assert needle in str(info.value), case
    assert _counts(ws_any) == (0, 0, 0), case
    assert list(ws_any.store.tmp.iterdir()) == [], "no staged temp file is left"


def test_yank_hides_from_ranges_but_not_from_exact_pins(ws: Workspace, tmp_path: Path) -> None:
    for version, data in [("1.0.0", b"a"), ("1.1.0", b"b")]:
        root = tmp_path / version
        _publish(ws, root, dataset_manifest("digits", version, write_files(root, {"x": data})))
    catalog.yank(ws, ArtifactRef.parse("dataset/digits@1.1.0"), "labels off by one")
    assert [str(r) for r in resolve_specs(ws, [Spec.parse("dataset/digits@^1")]).refs] == [
        "dataset/digits@1.0.0"
    ]
    assert [str(r) for r in resolve_specs(ws, [Spec.parse("dataset/digits@1.1.0")]).refs] == [
        "dataset/digits@1.1.0"
    ]
    shown = catalog.show(ws, ArtifactRef.parse("dataset/digits@1.1.0"))
    assert shown["yanked"] and shown["yank_reason"] == "labels off by one"


def test_yank_needs_a_reason_and_an_existing_version(ws: Workspace) -> None:
    with pytest.raises(UserError, match="reason"):
        catalog.yank(ws, ArtifactRef.parse("dataset/digits@1.0.0"), " ")
    with pytest.raises(catalog.NotFound, match=r"dataset/digits@1\.0\.0 is not published"):
        catalog.yank(ws, ArtifactRef.parse("dataset/digits@1.0.0"), "why")


def test_stored_blobs_are_read_only(ws: Workspace, tmp_path: Path) -> None:
    root = tmp_path / "a"
    _publish(ws, root, dataset_manifest("digits", "1.0.0", write_files(root, {"x": b"x"})))
    blob = ws.store.path(next(ws.store.iter_digests()))
    assert oct(os.stat(blob).st_mode & 0o777) == oct(0o444)


def test_concurrent_publishes_of_one_version_admit_exactly_one(
    ws_any: Workspace, tmp_path: Path
) -> None:
    """Eight writers race to publish digits@1.0.0 with different bytes: one wins, seven get
    VersionConflict, and the store keeps only the winner's blob."""
    manifests = []
    for i in range(8):
        root = tmp_path / f"w{i}"
        manifests.append(
            (root, dataset_manifest("digits", "1.0.0", write_files(root, {"x": b"%d" % i})))
        )
    barrier = threading.Barrier(len(manifests))

    def attempt(item: tuple[Path, dict[str, Any]]) -> str:
        barrier.wait()
        try:
            _publish(ws_any, *item)
        except VersionConflict:
            return "conflict"
        return "published"

    with ThreadPoolExecutor(len(manifests)) as pool:
        outcomes = list(pool.map(attempt, manifests))
    assert sorted(outcomes) == ["conflict"] * 7 + ["published"]
    assert _counts(ws_any) == (1, 1, 1)
