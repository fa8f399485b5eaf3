"""Sources beyond local files: https:// (streamed, hashed on the fly, resumed), hf:// (pinned to
a commit, read offline from a hub cache) and dvc:// (pinned to a commit, DVC's md5 kept). Every
source is real and local: an HTTP server on 127.0.0.1, a Hugging Face cache read with
HF_HUB_OFFLINE=1, a git + DVC repository with a local remote. A failed fetch publishes nothing
and leaves no blob."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pinbench import catalog as builtin
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.sources.errors import (
    DownloadInterrupted,
    Md5Mismatch,
    SourceError,
    SourceUnavailable,
)
from pinbench.artifacts.sources.uri import DvcUri, HfUri, HttpsUri, SourceUriError, parse_source
from pinbench.artifacts.store import ChecksumMismatch, SizeMismatch
from pinbench.db.models import Artifact
from pinbench.errors import PinbenchError
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import load_manifest, parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.mlmodelscope import import_text
from pinbench.registry.publish import publish
from pinbench.workspace import Workspace
from tests.helpers import Cli, dataset_manifest, dump, sha
from tests.sourcebuilders import DvcRepo, Site, dvc_repo, hf_commit, http_site

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


# ---------------------------------------------------------------- URIs

COMMIT = "0123456789abcdef0123456789abcdef01234567"

PARSED = [
    ("https://h.example/m.onnx", HttpsUri("https://h.example/m.onnx")),
    ("https://h.example/m.tgz#path=a/b.pb", HttpsUri("https://h.example/m.tgz", "a/b.pb")),
    ("hf://acme/digits@main/m.onnx", HfUri("acme/digits", "main", "m.onnx")),
    (f"hf://acme/digits@{COMMIT}/onnx/m.onnx", HfUri("acme/digits", COMMIT, "onnx/m.onnx")),
    ("hf://datasets/acme/d@v1.0/x.npy", HfUri("acme/d", "v1.0", "x.npy", "dataset")),
    ("hf://acme/d@refs%2Fpr%2F1/x", HfUri("acme/d", "refs/pr/1", "x")),
    ("dvc:///srv/repo@v1/data/x.npy", DvcUri("/srv/repo", "v1", "data/x.npy")),
    ("dvc://github.com/org/repo@main/d.csv", DvcUri("github.com/org/repo", "main", "d.csv")),
]


@pytest.mark.parametrize(("text", "expected"), PARSED)
def test_source_uris_parse_and_print_back(text: str, expected: Any) -> None:
    assert parse_source(text) == expected
    assert str(parse_source(text)) == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ftp://h/x", "expected https://, hf:// or dvc://"),
        ("https:///x", "no host"),
        ("https://h/x.tgz#member=x", "#path=MEMBER"),
        ("hf://acme/digits/m.onnx", "REVISION"),
        ("hf://acme@main/m.onnx", "must be ORG/NAME"),
        ("hf://acme/digits@main", "a revision and a path"),
        ("hf://acme/digits@main/../x", "without '..'"),
        ("dvc:///srv/repo/x.npy", "REVISION"),
    ],
)
def test_bad_source_uris_are_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(SourceUriError, match=None) as caught:
        parse_source(text)
    assert reason in str(caught.value) and text in str(caught.value)


@pytest.mark.parametrize(
    ("uri", "pinned"),
    [("hf://a/b@main/x", False), (f"hf://a/b@{COMMIT}/x", True), (f"dvc:///r@{COMMIT}/x", True)],
)
def test_a_source_is_pinned_only_at_a_full_commit(uri: str, pinned: bool) -> None:
    assert parse_source(uri).pinned is pinned


def test_a_file_without_sha256_needs_a_remote_source() -> None:
    base = dataset_manifest("d", "1.0.0", [{"path": "x.npy", "source": "file:x.npy"}])
    with pytest.raises(ManifestError, match=r"sha256 of 'x.npy' is required"):
        parse_manifest(base)
    base["files"][0]["source"] = "https://127.0.0.1/x.npy"
    assert parse_manifest(base).files_list[0].sha256 is None


# ---------------------------------------------------------------- https


@pytest.fixture
def site() -> Iterator[Site]:
    with http_site() as s:
        yield s


def _https_manifest(root: Path, url: str, **entry: Any) -> Path:
    files = [{"path": "x.npy", "source": url, **entry}]
    return dump(root / "m.yaml", dataset_manifest("web-data", "1.0.0", files))


def _publish(ws: Workspace, manifest: Path) -> Any:
    return publish(ws, load_manifest(manifest), manifest_dir=manifest.parent, publisher="t")


def _nothing_left(
    ws: Workspace, blobs_before: set[Digest], name: str = "web-data", *, partial: bool = False
) -> None:
    """Nothing published, no new blob, nothing left in the store's temp area (but, with
    ``partial``, an interrupted download's bytes)."""
    with ws.transaction() as session:
        assert session.query(Artifact).filter(Artifact.name == name).count() == 0
    assert set(ws.store.iter_digests()) == blobs_before
    left = (
        {p.name.split("-")[0] for p in ws.store.tmp.glob("*")} if ws.store.tmp.is_dir() else set()
    )
    assert left == ({"download"} if partial else set())


def test_https_file_is_fetched_hashed_and_its_sha256_filled_in(
    ws: Workspace, site: Site, tmp_path: Path
) -> None:
    site.files["/x.npy"] = PAYLOAD
    result = _publish(ws, _https_manifest(tmp_path, f"{site.url}/x.npy", md5=md5(PAYLOAD)))
    assert result.created and result.bytes == len(PAYLOAD)
    assert ws.store.path(Digest(sha(PAYLOAD))).read_bytes() == PAYLOAD
    with ws.transaction() as session:
        stored = session.query(Artifact).filter(Artifact.name == "web-data").one().manifest
    assert stored["files"][0] == {
        "path": "x.npy",
        "sha256": sha(PAYLOAD),
        "size": None,
        "source": f"{site.url}/x.npy",
        "md5": md5(PAYLOAD),
    }
    again = _publish(ws, _https_manifest(tmp_path, f"{site.url}/x.npy", md5=md5(PAYLOAD)))
    assert not again.created  # the same completed manifest: a no-op


def test_an_interrupted_download_resumes_with_a_range_request(
    ws: Workspace, site: Site, tmp_path: Path
) -> None:
    site.files["/x.npy"] = PAYLOAD
    site.cuts["/x.npy"] = [300_000, 200_000]
    result = _publish(ws, _https_manifest(tmp_path, f"{site.url}/x.npy", sha256=sha(PAYLOAD)))
    assert result.created
    assert site.requests == [
        ("/x.npy", None),
        ("/x.npy", "bytes=300000-"),
        ("/x.npy", "bytes=500000-"),
    ]
    assert not list(ws.store.tmp.glob("download-*"))


def test_a_server_that_ignores_ranges_gets_a_fresh_download(
    ws: Workspace, site: Site, tmp_path: Path
) -> None:
    site.files["/x.npy"] = PAYLOAD
    site.cuts["/x.npy"] = [300_000]
    site.ranges = False
    assert _publish(ws, _https_manifest(tmp_path, f"{site.url}/x.npy", sha256=sha(PAYLOAD)))
    assert ws.store.has(Digest(sha(PAYLOAD)))


def test_a_download_interrupted_every_time_publishes_nothing_then_resumes_later(
    ws: Workspace, site: Site, tmp_path: Path
) -> None:
    site.files["/x.npy"] = PAYLOAD
    site.cuts["/x.npy"] = [100_000, 0, 0, 0]
    before = set(ws.store.iter_digests())
    manifest = _https_manifest(tmp_path, f"{site.url}/x.npy", sha256=sha(PAYLOAD))
    with pytest.raises(DownloadInterrupted) as caught:
        _publish(ws, manifest)
    assert f"interrupted after 100000 of {len(PAYLOAD)} bytes" in str(caught.value)
    assert caught.value.attempts == 4
    _nothing_left(ws, before, partial=True)
    # the next publish takes up from the 100000 bytes kept aside (not as a blob)
    site.requests.clear()
    assert _publish(ws, manifest).created
    assert site.requests == [("/x.npy", "bytes=100000-")]


def _tgz(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_a_file_inside_an_archive_is_fetched_and_checked_against_its_md5(
    ws: Workspace, site: Site, tmp_path: Path
) -> None:
    graph, weights = b"graph" * 1000, b"weights" * 1000
    site.files["/model.tgz"] = _tgz({"model/graph.pb": graph, "model/weights.bin": weights})
    files = [
        {"path": p, "source": f"{site.url}/model.tgz#path=model/{p}", "md5": md5(data)}
        for p, data in (("graph.pb", graph), ("weights.bin", weights))
    ]
    manifest = dump(tmp_path / "m.yaml", dataset_manifest("web-data", "1.0.0", files))
    assert _publish(ws, manifest).created
    assert ws.store.has(Digest(sha(graph))) and ws.store.has(Digest(sha(weights)))
    assert [r[0] for r in site.requests] == ["/model.tgz"]  # downloaded once for both


BAD_HTTPS = [
    ("declared sha256 differs", {"sha256": "0" * 64}, ChecksumMismatch, "checksum mismatch"),
    ("declared md5 differs", {"md5": "0" * 32}, Md5Mismatch, "the manifest says 0000"),
    ("declared size differs", {"size": 10}, SizeMismatch, "expected 10 bytes"),
]


@pytest.mark.parametrize(("case", "entry", "error", "needle"), BAD_HTTPS)
def test_https_bytes_that_differ_from_the_manifest_publish_nothing(
    ws: Workspace, site: Site, tmp_path: Path, case: str, entry: Any, error: Any, needle: str
) -> None:
    site.files["/x.npy"] = PAYLOAD
    before = set(ws.store.iter_digests())
    with pytest.raises(error, match=needle):
        _publish(ws, _https_manifest(tmp_path, f"{site.url}/x.npy", **entry))
    _nothing_left(ws, before)


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        ("/missing.npy", "HTTP 404"),
        ("/model.tgz#path=nope.pb", "the archive has no file 'nope.pb'"),
    ],
)
def test_https_not_found_publishes_nothing(
    ws: Workspace, site: Site, tmp_path: Path, path: str, needle: str
) -> None:
    site.files["/model.tgz"] = _tgz({"a.pb": b"a"})
    before = set(ws.store.iter_digests())
    with pytest.raises(SourceError, match=needle):
        _publish(ws, _https_manifest(tmp_path, f"{site.url}{path}"))
    _nothing_left(ws, before)


@pytest.mark.parametrize(
    "length",
    ["12abc", "1_000", "0x10", "9" * 5000, "-5"],
    ids=["text", "underscore", "hex", "5000 digits", "negative"],
)
def test_a_content_length_that_is_no_byte_count_publishes_nothing(
    ws: Workspace, site: Site, tmp_path: Path, length: str
) -> None:
    """A source server is not trusted to send a number: what is not ASCII digits (a
    5,000-digit one is past what ``int`` reads) is refused naming it, not a traceback."""
    site.files["/x.npy"] = PAYLOAD
    site.lengths["/x.npy"] = length
    before = set(ws.store.iter_digests())
    with pytest.raises(SourceUnavailable, match="not a byte count"):
        _publish(ws, _https_manifest(tmp_path, f"{site.url}/x.npy", sha256=sha(PAYLOAD)))
    _nothing_left(ws, before)


# ---------------------------------------------------------------- hf:// and dvc:// end to end


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An offline Hugging Face cache (HF_HUB_OFFLINE=1)."""
    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def _changed(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


@pytest.fixture(scope="module")
def digits_repo(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> DvcRepo:
    """The digits test split in a DVC repository: v1 as built, v2 with the labels changed."""
    images = (catalog_dir / "digits-test" / "images.npy").read_bytes()
    labels = (catalog_dir / "digits-test" / "labels.npy").read_bytes()
    return dvc_repo(
        tmp_path_factory.mktemp("dvc"),
        {
            "v1": {"data/images.npy": images, "data/labels.npy": labels},
            "v2": {"data/labels.npy": _changed(labels)},
        },
    )


def _sourced_catalog(
    root: Path, catalog_dir: Path, hub: Path, repo: DvcRepo, *, rev: str = "v1"
) -> tuple[Path, str]:
    """The digits catalog's logreg model on the hub (``main``) and its dataset in DVC
    (``rev``), with manifests naming those sources and no sha256; return the dir and the hub
    commit."""
    model_bytes = (catalog_dir / "digits-logreg-1.0.0" / "digits-logreg.onnx").read_bytes()
    commit = hf_commit(hub, "acme/digits-logreg", {"onnx/model.onnx": model_bytes}, refs=["main"])
    out = root / "sourced"
    out.mkdir()
    shutil.copy(catalog_dir / "framework-onnxruntime.yaml", out)
    model = yaml.safe_load((catalog_dir / "model-digits-logreg-1.0.0.yaml").read_text())
    model["files"] = [
        {"path": "digits-logreg.onnx", "source": "hf://acme/digits-logreg@main/onnx/model.onnx"}
    ]
    dump(out / "model.yaml", model)
    dataset = yaml.safe_load((catalog_dir / "dataset-digits-test.yaml").read_text())
    dataset["files"] = [
        {"path": f"{n}.npy", "source": f"dvc://{repo.path}@{rev}/data/{n}.npy"}
        for n in ("images", "labels")
    ]
    dump(out / "dataset.yaml", dataset)
    return out, commit


def _publish_sourced(cli: Cli, root: Path, catalog_dir: Path, hub: Path, repo: DvcRepo) -> str:
    """Publish the sourced catalog through the CLI; return the hub commit of its model."""
    sourced, commit = _sourced_catalog(root, catalog_dir, hub, repo)
    assert cli("init").code == 0
    for manifest in ("framework-onnxruntime.yaml", "dataset.yaml", "model.yaml"):
        done = cli("publish", str(sourced / manifest))
        assert done.code == 0, done.err
    return commit


def _lock(cli: Cli, root: Path) -> Lockfile:
    request = dump(
        root / "request.yaml",
        {
            "model": f"{builtin.MODEL_NAME}@1",
            "dataset": f"{builtin.DATASET_NAME}@1",
            "scenario": {"mode": "accuracy"},
        },
    )
    locked = cli("lock", str(request), "-o", str(root / "x.lock"))
    assert locked.code == 0, locked.err
    return Lockfile.read(root / "x.lock")


def _drop_blobs(lock: Lockfile, home: Path) -> None:
    for art in lock.body.artifacts:
        if art.kind in ("model", "dataset"):
            for f in art.files:
                (home / "blobs" / f.sha256[:2] / f.sha256).unlink()


def test_a_lockfile_with_an_hf_model_and_a_dvc_dataset_verifies_offline_from_its_commits(
    cli: Cli, tmp_path: Path, catalog_dir: Path, hub: Path, digits_repo: DvcRepo
) -> None:
    commit = _publish_sourced(cli, tmp_path, catalog_dir, hub, digits_repo)
    shown = cli("show", f"model/{builtin.MODEL_NAME}@1.0.0")
    assert f"from hf://acme/digits-logreg@{commit}/onnx/model.onnx" in shown.out
    lock = _lock(cli, tmp_path)
    files = {f.path: f for a in lock.body.artifacts for f in a.files}
    model_bytes = (catalog_dir / "digits-logreg-1.0.0" / "digits-logreg.onnx").read_bytes()
    images = (catalog_dir / "digits-test" / "images.npy").read_bytes()
    assert files["digits-logreg.onnx"].source == f"hf://acme/digits-logreg@{commit}/onnx/model.onnx"
    assert files["digits-logreg.onnx"].sha256 == sha(model_bytes)
    assert files["images.npy"].source == (
        f"dvc://{digits_repo.path}@{digits_repo.commits['v1']}/data/images.npy"
    )
    assert files["images.npy"].sha256 == sha(images)
    assert files["images.npy"].md5 == md5(images)  # DVC's md5, recorded beside the sha256

    # the branch moves on the hub, DVC's v2 exists: the lockfile still names v1's bytes
    hf_commit(hub, "acme/digits-logreg", {"onnx/model.onnx": b"other bytes"}, refs=["main"])
    _drop_blobs(lock, tmp_path / "home")
    verified = cli("verify", str(tmp_path / "x.lock"))
    assert verified.code == 0, verified.err
    assert verified.err.count("fetched ") == 3
    assert "all match" in verified.out
    ran = cli("run", str(tmp_path / "x.lock"), "--json")
    assert ran.code == 0, ran.err
    runs = json.loads(cli("runs", "list", "--json").out)
    assert runs[0]["status"] == "succeeded" and runs[0]["top1"] > 0.9


def test_a_tampered_hub_file_fails_verification_and_is_not_stored(
    cli: Cli, tmp_path: Path, catalog_dir: Path, hub: Path, digits_repo: DvcRepo
) -> None:
    commit = _publish_sourced(cli, tmp_path, catalog_dir, hub, digits_repo)
    lock = _lock(cli, tmp_path)
    _drop_blobs(lock, tmp_path / "home")
    link = hub / "models--acme--digits-logreg" / "snapshots" / commit / "onnx" / "model.onnx"
    link.resolve().write_bytes(b"tampered")
    verified = cli("verify", str(tmp_path / "x.lock"))
    assert verified.code == 1
    assert "model/vision/digits-logreg@1.0.0:digits-logreg.onnx" in verified.err
    assert "checksum mismatch" in verified.err and sha(b"tampered") in verified.err
    pinned = next(a for a in lock.body.artifacts if a.kind == "model").files[0].sha256
    assert not (tmp_path / "home" / "blobs" / pinned[:2] / pinned).exists()


def _bad_hf(manifest: dict[str, Any]) -> None:
    manifest["files"][0]["source"] = "hf://acme/digits-logreg@v9/onnx/model.onnx"


def _bad_hf_path(manifest: dict[str, Any]) -> None:
    manifest["files"][0]["source"] = "hf://acme/digits-logreg@main/onnx/missing.onnx"


def _bad_hf_sha(manifest: dict[str, Any]) -> None:
    manifest["files"][0]["sha256"] = "f" * 64


BAD_MODEL = [
    ("hub revision that does not exist", _bad_hf, SourceError, "revision 'v9' does not exist"),
    ("hub path missing at the revision", _bad_hf_path, SourceError, "onnx/missing.onnx is not in"),
    ("hub bytes differ from the sha256", _bad_hf_sha, ChecksumMismatch, "checksum mismatch"),
]


@pytest.mark.parametrize(("case", "change", "error", "needle"), BAD_MODEL)
def test_bad_hub_sources_publish_nothing(
    ws: Workspace,
    tmp_path: Path,
    catalog_dir: Path,
    hub: Path,
    digits_repo: DvcRepo,
    case: str,
    change: Any,
    error: type[PinbenchError],
    needle: str,
) -> None:
    sourced, _ = _sourced_catalog(tmp_path, catalog_dir, hub, digits_repo)
    manifest = yaml.safe_load((sourced / "model.yaml").read_text())
    change(manifest)
    dump(sourced / "model.yaml", manifest)
    before = set(ws.store.iter_digests())
    with pytest.raises(error, match=needle):
        _publish(ws, sourced / "model.yaml")
    _nothing_left(ws, before, name=builtin.MODEL_NAME)


BAD_DVC = [
    ("DVC path missing at that revision", "v1", "data/extra.npy", "is not in"),
    ("DVC revision that does not exist", "v7", "data/images.npy", "revision 'v7' does not exist"),
]


@pytest.mark.parametrize(("case", "rev", "path", "needle"), BAD_DVC)
def test_bad_dvc_sources_publish_nothing(
    ws: Workspace, tmp_path: Path, digits_repo: DvcRepo, case: str, rev: str, path: str, needle: str
) -> None:
    files = [{"path": "x.npy", "source": f"dvc://{digits_repo.path}@{rev}/{path}"}]
    manifest = dump(tmp_path / "m.yaml", dataset_manifest("web-data", "1.0.0", files))
    before = set(ws.store.iter_digests())
    with pytest.raises(SourceError, match=needle):
        _publish(ws, manifest)
    _nothing_left(ws, before)


def test_dvc_files_at_another_tag_are_other_bytes(
    ws: Workspace, tmp_path: Path, digits_repo: DvcRepo, catalog_dir: Path
) -> None:
    labels = (catalog_dir / "digits-test" / "labels.npy").read_bytes()
    v2 = _changed(labels)
    files = [{"path": "labels.npy", "source": f"dvc://{digits_repo.path}@v2/data/labels.npy"}]
    manifest = dump(tmp_path / "m.yaml", dataset_manifest("web-data", "1.0.0", files))
    assert _publish(ws, manifest).created
    assert ws.store.has(Digest(sha(v2)))


# ---------------------------------------------------------------- MLModelScope, then fetched


def test_an_imported_mlmodelscope_manifest_publishes_with_sha256_computed_at_first_fetch(
    ws: Workspace, site: Site, tmp_path: Path
) -> None:
    """An archive member and a features file named by URL and md5 only: publishing fetches
    them, checks the md5s, fills in the sha256s and keeps the md5s beside them."""
    graph, synset = b"frozen graph bytes" * 500, b"tench\ngoldfish\n"
    site.files["/m.tgz"] = _tgz({"m/frozen.pb": graph})
    site.files["/synset.txt"] = synset
    text = f"""
name: Tiny
framework: {{name: TensorFlow, version: 1.12}}
version: 1.0
inputs:
  - type: image
    parameters: {{dimensions: [3, 8, 8], input_layer: input, mean: [128, 128, 128], scale: 128}}
output:
  type: classification
  parameters:
    probabilities_layer: probs
    features_url: {site.url}/synset.txt
    features_checksum: {md5(synset)}
model:
  base_url: {site.url}/m.tgz
  graph_path: m/frozen.pb
  graph_checksum: {md5(graph)}
  is_archive: true
"""
    imported = import_text(text)
    assert all(f.sha256 is None for f in imported.manifest.files)
    manifest = tmp_path / "tiny.yaml"
    manifest.write_text(imported.yaml("tiny.yml"))
    assert _publish(ws, manifest).created
    with ws.transaction() as session:
        stored = session.query(Artifact).filter(Artifact.name == imported.manifest.name).one()
    files = {f["path"]: f for f in stored.manifest["files"]}
    assert files["frozen.pb"]["sha256"] == sha(graph) and files["frozen.pb"]["md5"] == md5(graph)
    assert files["synset.txt"]["sha256"] == sha(synset)
    assert stored.manifest["outputs"][0]["labels"] == {"path": "synset.txt", "sha256": sha(synset)}
    assert ws.store.has(Digest(sha(graph))) and ws.store.has(Digest(sha(synset)))
