"""Datasets of many files (decision 118): ``pinbench manifest dataset`` lists a large folder's
files in a file index, a file of the dataset pinned by its sha256 in a manifest of a few
hundred bytes; ``publish`` reads the index, checks and stores every file it lists and records
each as a row; lockfiles pin every file and ``verify`` checks each.

A manifest listing 9,000 files was over the 1 MiB YAML limit its own ``publish`` enforces.
A bad index (a path twice, a path out of the artifact, a line whose sha256 is not the file's)
is refused naming the line or the file, and leaves nothing behind.
"""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pinbench import catalog as builtin
from pinbench.errors import UserError
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.dataset_manifest import DatasetManifest
from pinbench.registry.file_index import FileIndexRefused, format_index, parse_index
from pinbench.registry.manifest import load_manifest, manifest_data
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.registry.verify import VerificationFailed, verify_lockfile
from tests.helpers import Cli, Home, digits_logreg, in_process_cli, published_home, sha

MANY = 100_000


def _npy_header(shape: tuple[int, ...], dtype: str) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(shape, dtype=dtype))
    return buffer.getvalue()[: -int(np.prod(shape)) * np.dtype(dtype).itemsize]


def _samples(folder: Path, count: int, *, distinct: int) -> None:
    """``count`` one-sample ``.npy`` files (a uint64 each, ``i % distinct``), a thousand per
    sub-folder, written with one system call each."""
    header = _npy_header((1,), "<u8")
    for i in range(count):
        if i % 1000 == 0:
            sub = folder / f"{i // 1000:03d}"
            sub.mkdir(parents=True)
        fd = os.open(sub / f"{i:06d}.npy", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, header + (i % distinct).to_bytes(8, "little"))
        finally:
            os.close(fd)


@pytest.fixture
def home(tmp_path: Path, catalog_dir: Path) -> Iterator[Home]:
    with published_home(tmp_path, catalog_dir) as home:
        yield home


@pytest.fixture
def run_cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def _request(folder: Path, dataset: str) -> Path:
    path = folder / "request.yaml"
    path.write_text(
        yaml.safe_dump({"model": f"{builtin.MODEL_NAME}@1", "dataset": dataset, "batch_size": 8})
    )
    return path


def test_a_dataset_of_100000_files_is_written_published_locked_and_verified(
    home: Home, run_cli: Cli, tmp_path: Path
) -> None:
    """100,000 sample files through the CLI: the manifest stays small, its index lists every
    file, the registry records and the lockfile pins every file, verify checks every one.
    Contents repeat (100 distinct), so the store holds 100 blobs: file creation on the test's
    disk is what would dominate otherwise (decision 118 gives times for distinct files)."""
    work = tmp_path / "work"
    _samples(work / "many", MANY, distinct=100)
    times = {}
    started = time.perf_counter()

    out = work / "many.yaml"
    written = run_cli("manifest", "dataset", str(work / "many"), "--labels", "none", "-o", str(out))
    assert written.code == 0, written.err
    times["manifest"] = time.perf_counter() - started
    assert out.stat().st_size < 1024
    manifest = load_manifest(out)
    assert isinstance(manifest, DatasetManifest) and manifest.file_index is not None
    assert manifest.samples == MANY and manifest.files == []
    index = work / manifest.file_index.path
    assert (manifest.file_index.sha256, manifest.file_index.size) == (
        sha(index.read_bytes()),
        index.stat().st_size,
    )
    listed = parse_index(index.read_bytes(), index=manifest.file_index.path)
    assert len(listed) == MANY
    first = work / listed[0].path
    assert (listed[0].path, listed[0].sha256) == ("many/000/000000.npy", sha(first.read_bytes()))

    published = run_cli("publish", str(out), "--json")
    assert published.code == 0, published.err
    times["publish"] = time.perf_counter() - started - sum(times.values())
    assert json.loads(published.out)["files"] == MANY + 1  # the samples and the index

    lock = work / "many.lock"
    locked = run_cli("lock", str(_request(work, "many@1")), "-o", str(lock))
    assert locked.code == 0, locked.err
    times["lock"] = time.perf_counter() - started - sum(times.values())
    body = json.loads(lock.read_bytes())
    (pinned,) = [a for a in body["artifacts"] if a["kind"] == "dataset"]
    by_path = {f["path"]: f for f in pinned["files"]}
    assert len(by_path) == MANY + 1
    assert all(by_path[e.path]["sha256"] == e.sha256 for e in listed)
    assert by_path[manifest.file_index.path]["sha256"] == manifest.file_index.sha256

    verified = run_cli("verify", str(lock), "--json")
    assert verified.code == 0, verified.err
    times["verify"] = time.perf_counter() - started - sum(times.values())
    print({step: round(seconds, 2) for step, seconds in times.items()})


def test_every_listed_file_is_verified_before_use(home: Home, tmp_path: Path) -> None:
    """A listed file's blob changed after publishing fails verify, naming that file."""
    ws = home.ws
    manifest = _written(tmp_path, count=30)
    publish(ws, manifest, manifest_dir=tmp_path, publisher="test")
    lock, _ = service.lock(
        ws, parse_request({"model": f"{builtin.MODEL_NAME}@1", "dataset": "small@1"})
    )
    verify_lockfile(ws, lock)
    listed = parse_index((tmp_path / "small.files").read_bytes(), index="small.files")
    blob = ws.store.path(listed[7].digest)
    blob.chmod(0o644)
    blob.write_bytes(blob.read_bytes()[:-1] + b"\xff")
    with pytest.raises(VerificationFailed, match=rf"dataset/small@1\.0\.0:{listed[7].path}"):
        verify_lockfile(ws, lock)


def test_a_run_reads_the_samples_an_index_lists(home: Home, tmp_path: Path) -> None:
    """The digits test split as one .npy per sample listed in an index: an accuracy run of the
    catalog's logistic regression scores every sample; top-1 equals NumPy's own."""
    _, x_test, _, y_test = builtin.digits_split()
    data = tmp_path / "digits"
    data.mkdir()
    for i, image in enumerate(x_test.astype(np.float32)):
        np.save(data / f"{i:04d}.npy", image.reshape(8, 8), allow_pickle=False)
    np.save(tmp_path / "labels.npy", y_test.astype(np.int64), allow_pickle=False)
    from pinbench.authoring.dataset import dataset_manifest

    authored = dataset_manifest(
        data,
        base=tmp_path,
        name="digits-files",
        version="1.0.0",
        labels=str(tmp_path / "labels.npy"),
        names=None,
        index=tmp_path / "digits.files",
    )
    for path, content in authored.beside.items():
        path.write_bytes(content)
    assert [f["path"] for f in authored.data["files"]] == ["labels.npy"]
    publish(home.ws, _parsed(authored.data), manifest_dir=tmp_path, publisher="test")
    request = {
        "model": f"{builtin.MODEL_NAME}@1",
        "dataset": "digits-files@1",
        "scenario": {"mode": "accuracy"},
    }
    lock, _ = service.lock(home.ws, parse_request(request))
    outcome = run_lockfile(home.ws, lock, say=lambda text: None)
    assert outcome.status == "succeeded"
    weights, bias = digits_logreg()
    logits = (x_test.reshape(len(x_test), -1).astype(np.float32) / 16.0) @ weights.T + bias
    assert outcome.metrics["top1"] == float(np.mean(logits.argmax(1) == y_test))
    (run,) = list_runs(home.ws)
    assert run["status"] == "succeeded"


# ---------------------------------------------------------------- a bad index is refused


def _parsed(data: dict[str, Any]) -> DatasetManifest:
    from pinbench.registry.manifest import parse_manifest

    manifest = parse_manifest(data)
    assert isinstance(manifest, DatasetManifest)
    return manifest


def _indexed(file_index: dict[str, Any], name: str = "small") -> dict[str, Any]:
    """A dataset manifest whose samples are the ``.npy`` files under ``data`` that
    ``file_index`` lists."""
    return {
        "kind": "dataset",
        "name": name,
        "version": "1.0.0",
        "data": {"format": "npy-files", "path": "data"},
        "labels": {"format": "class-index-npy"},
        "files": [],
        "file_index": file_index,
    }


def _rows(root: Path, count: int) -> list[tuple[str, str, int]]:
    """``count`` distinct samples under ``root/data``: their index rows (path, sha256, size)."""
    _samples(root / "data", count, distinct=count)
    files = sorted((root / "data").rglob("*.npy"))
    return [(p.relative_to(root).as_posix(), sha(p.read_bytes()), p.stat().st_size) for p in files]


def _with_index(root: Path, index: bytes, name: str = "small") -> DatasetManifest:
    """``index`` written as ``root/small.files`` and the manifest pinning it."""
    (root / "small.files").write_bytes(index)
    pin = {"path": "small.files", "sha256": sha(index), "size": len(index)}
    return _parsed(_indexed(pin, name))


def _written(root: Path, *, count: int, name: str = "small") -> DatasetManifest:
    """``count`` distinct samples under ``root/data`` and a manifest naming their index
    ``root/small.files``."""
    return _with_index(root, format_index(_rows(root, count)), name)


def _lines(root: Path) -> list[bytes]:
    """Three samples under ``root/data``: their index lines."""
    return format_index(_rows(root, 3)).splitlines()


def _swap_sha(lines: list[bytes]) -> bytes:
    other = lines[0].split(b" ", 1)[0]
    return b"\n".join([lines[0], other + b" " + lines[1].split(b" ", 1)[1], lines[2]]) + b"\n"


def _with_path(lines: list[bytes], path: bytes) -> bytes:
    digest, size, _ = lines[2].split(b" ", 2)
    return b"\n".join([*lines[:2], b" ".join([digest, size, path])]) + b"\n"


def _with_size(line: bytes, size: bytes) -> bytes:
    digest, _, path = line.split(b" ", 2)
    return b" ".join([digest, size, path])


# (reason, index bytes from the true lines, what the refusal says)
BAD_INDEXES = [
    (
        "a path listed twice",
        lambda lines: b"\n".join([lines[0], lines[1], lines[1], lines[2]]) + b"\n",
        "'data/000/000001.npy' is listed twice",
    ),
    ("a path climbing out of the artifact", lambda ls: _with_path(ls, b"../x.npy"), "'..'"),
    ("an absolute path", lambda ls: _with_path(ls, b"/etc/passwd"), "relative POSIX path"),
    (
        "a path climbing out through a folder",
        lambda ls: _with_path(ls, b"data/../../x.npy"),
        "normalised",
    ),
    (
        "a sha256 that is not the file's",
        _swap_sha,
        "data/000/000001.npy",
    ),
    (
        "lines out of order",
        lambda lines: b"\n".join([lines[1], lines[0], lines[2]]) + b"\n",
        "sorted order",
    ),
    (
        "a CRLF line end",
        lambda lines: b"\r\n".join(lines) + b"\r\n",
        "holds a CR",
    ),
    (
        "a size with a leading zero",
        lambda lines: b"\n".join([lines[0].replace(b" ", b" 0", 1), *lines[1:]]) + b"\n",
        "line 1",
    ),
    (
        "a path with a control character",
        lambda ls: _with_path(ls, b"data/a\x1bb.npy"),
        "control character",
    ),
    ("no last LF", lambda lines: b"\n".join(lines), "does not end with LF"),
    (
        "a size past any file (as a manifest's files[].size)",
        lambda lines: (
            b"\n".join([_with_size(lines[0], b"99999999999999999999"), *lines[1:]]) + b"\n"
        ),
        "the size must be between 0 and 9007199254740991, got 99999999999999999999",
    ),
    (
        "the index listing itself",
        lambda ls: _with_path(ls, b"small.files"),
        "which the manifest lists too",
    ),
]


@pytest.mark.parametrize(
    ("bad", "words"), [b[1:] for b in BAD_INDEXES], ids=[b[0] for b in BAD_INDEXES]
)
def test_a_bad_index_is_refused_and_leaves_nothing_behind(
    home: Home, tmp_path: Path, bad: Any, words: str
) -> None:
    ws = home.ws
    root = tmp_path / "bad"
    manifest = _with_index(root, bad(_lines(root)))
    blobs_before = set(ws.store.iter_digests())
    with pytest.raises(UserError) as caught:
        publish(ws, manifest, manifest_dir=root, publisher="test")
    assert words in str(caught.value)
    assert set(ws.store.iter_digests()) == blobs_before
    assert [p.name for p in ws.store.tmp.iterdir()] == []
    with ws.transaction() as session:
        from sqlalchemy import select

        from pinbench.db.models import Artifact

        assert session.scalar(select(Artifact).where(Artifact.name == "small")) is None


def test_an_index_whose_bytes_are_not_its_pin_is_refused(home: Home, tmp_path: Path) -> None:
    manifest = _written(tmp_path, count=5)
    (tmp_path / "small.files").write_bytes(b"")  # replaced after the manifest pinned it
    blobs_before = set(home.ws.store.iter_digests())
    with pytest.raises(UserError, match=r"small\.files"):
        publish(home.ws, manifest, manifest_dir=tmp_path, publisher="test")
    assert set(home.ws.store.iter_digests()) == blobs_before


# ---------------------------------------------------------------- the manifest's own checks

# (reason, fields of a manifest with an index, what the refusal says)
BAD_MANIFESTS = [
    (
        "the index inside the data folder (it would be a sample)",
        {"file_index": {"path": "data/list.files", "sha256": "a" * 64}},
        "inside the data folder",
    ),
    (
        "the index in an artifact whose data folder is its root",
        {"data": {"format": "npy-files", "path": "."}, "file_index": {"path": "x.files"}},
        "inside the data folder",
    ),
    (
        "the index also in files",
        {"files": [{"path": "x.files", "sha256": "a" * 64}]},
        "also listed in files",
    ),
    (
        "an index from a URL",
        {"file_index": {"path": "x.files", "source": "https://example.org/x.files"}},
        "local file",
    ),
]


@pytest.mark.parametrize(
    ("fields", "words"), [b[1:] for b in BAD_MANIFESTS], ids=[b[0] for b in BAD_MANIFESTS]
)
def test_a_manifest_naming_an_index_is_checked(fields: dict[str, Any], words: str) -> None:
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.manifest_parts import ManifestError

    data = _indexed({"path": "x.files", "sha256": "a" * 64})
    for key, value in fields.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    with pytest.raises(ManifestError, match=words):
        parse_manifest(data)


def test_a_small_folder_keeps_its_files_in_the_manifest(cli: Cli, tmp_path: Path) -> None:
    """Below 1,001 files and without --file-index, nothing changes: every file in `files`."""
    _samples(tmp_path / "few", 12, distinct=12)
    out = tmp_path / "few.yaml"
    result = cli("manifest", "dataset", str(tmp_path / "few"), "--labels", "none", "-o", str(out))
    assert result.code == 0, result.err
    manifest = load_manifest(out)
    assert isinstance(manifest, DatasetManifest)
    assert manifest.file_index is None and len(manifest.files) == 12
    assert not (tmp_path / "few.files").exists()


def test_an_index_the_author_cannot_place_writes_nothing(cli: Cli, tmp_path: Path) -> None:
    """--file-index inside the data folder: refused, neither the index nor the manifest
    written."""
    _samples(tmp_path / "few", 12, distinct=12)
    out = tmp_path / "few.yaml"
    index = tmp_path / "few" / "list.files"
    result = cli(
        "manifest",
        "dataset",
        str(tmp_path / "few"),
        "--labels",
        "none",
        "--file-index",
        str(index),
        "-o",
        str(out),
    )
    assert result.code == 1
    assert "inside the data folder" in result.err
    assert "Traceback" not in result.err
    assert not out.exists() and not index.exists()


#   case                               -o (under tmp_path)  what the refusal says
REFUSED_WRITES = [
    ("the manifest's place is a folder", "out",             "out: it is a folder"),
    ("the manifest is the index itself", "few.files",       "both the manifest and its file index"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("output", "says"), [r[1:] for r in REFUSED_WRITES], ids=[r[0] for r in REFUSED_WRITES]
)
def test_a_refused_manifest_leaves_the_file_at_the_index_path_as_it_was(
    cli: Cli, tmp_path: Path, output: str, says: str
) -> None:
    """An index written earlier (rerunning after adding samples) is still there, byte for
    byte, when the new manifest cannot be written: it was deleted (and the manifest written
    over the index, when both were one path)."""
    _samples(tmp_path / "few", 12, distinct=12)
    (tmp_path / "out").mkdir()
    index = tmp_path / "few.files"
    index.write_bytes(b"the index an earlier manifest pins\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    result = cli(
        "manifest", "dataset", str(tmp_path / "few"), "--labels", "none",
        "--file-index", str(index), "-o", str(tmp_path / output),
    )  # fmt: skip
    assert result.code == 1, result.out
    assert says in result.err and "Traceback" not in result.err
    assert index.read_bytes() == b"the index an earlier manifest pins\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no temp file left


def test_parse_and_format_are_inverse() -> None:
    rows = [("b/1.npy", "b" * 64, 7), ("a b/é.npy", "a" * 64, 0), ("a/2.npy", "c" * 64, 10**12)]
    data = format_index(rows)
    assert (
        data
        == (  # code-point order of the paths: ' ' before '/'
            f"{'a' * 64} 0 a b/é.npy\n{'c' * 64} 1000000000000 a/2.npy\n{'b' * 64} 7 b/1.npy\n"
        ).encode()
    )
    parsed = parse_index(data, index="x")
    assert sorted((e.path, e.sha256, e.size) for e in parsed) == sorted(rows)
    assert format_index((e.path, e.sha256 or "", e.size or 0) for e in parsed) == data
    with pytest.raises(FileIndexRefused, match="lists no file"):
        parse_index(b"", index="x")


def test_an_indexed_dataset_uploaded_to_a_server_is_refused_changing_nothing(
    tmp_path: Path,
    catalog_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A remote publish uploads the files the manifest lists (the index among them); the
    server checks the rows against the index and refuses, saying to publish beside the files."""
    from pinbench.cli import main
    from tests.apiserver import api_server

    manifest = _written(tmp_path / "work", count=30, name="vision/small")
    path = tmp_path / "work" / "small.yaml"
    path.write_text(yaml.safe_dump(manifest_data(manifest)))
    root = tmp_path / "server"
    with api_server(root / "home", f"sqlite:///{root}/db", catalog_dir=catalog_dir) as server:
        ws = server.workspace()
        before = set(ws.store.iter_digests())
        monkeypatch.setenv("PINBENCH_URL", server.url)
        monkeypatch.setenv("PINBENCH_TOKEN", server.tokens["owner"])
        code = main(["publish", str(path)])
        err = capsys.readouterr().err
        assert code == 1, err
        assert "small.files" in err and "beside its manifest" in err
        assert set(ws.store.iter_digests()) == before
        assert list(ws.store.tmp.glob("*")) == []
        with server.client("owner") as client:
            assert client.get("/api/v1/artifacts/dataset/vision/small@1.0.0").status_code == 404
        ws.close()
