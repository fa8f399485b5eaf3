"""A backup of a store on object storage reads, hashes and keeps what the bucket holds (issue
66 item 1, decision 284), against a real S3 server (SeaweedFS, the session's ``s3``).

Before, ``backup`` took each blob from this machine's local copy: an object deleted from the
bucket still gave "N linked, 0 copied" and exit 0 while ``fsck`` reported it missing, and a
damaged local copy stopped the backup although the bucket held good bytes. Now the bucket's
bytes are streamed into the backup and hashed on the way; the local copies play no part."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.s3store import S3BlobStore
from tests.helpers import Cli, dataset_manifest, dump, in_process_cli, sha, write_files
from tests.s3server import S3Server, s3_settings

FILES = {"x.npy": b"the bucket's own x bytes", "y.npy": b"the bucket's own y bytes"}
X = sha(FILES["x.npy"])


def _published(
    tmp_path: Path,
    s3: S3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[Cli, S3BlobStore]:
    """A home on a fresh prefix of the bucket with one dataset of two files published: each
    blob is in the bucket and has a warm local copy here."""
    from pinbench.workspace import Workspace

    settings = s3_settings(s3, tmp_path / "home", monkeypatch)
    cli = in_process_cli(monkeypatch, capsys, settings.home)
    assert cli("init").code == 0
    src = tmp_path / "src"
    dump(src / "d.yaml", dataset_manifest("vision/kept", "1.0.0", write_files(src, FILES)))
    published = cli("publish", str(src / "d.yaml"))
    assert published.code == 0, published.err
    store = Workspace(settings).store
    assert isinstance(store, S3BlobStore)
    assert store.path(Digest(X)).read_bytes() == FILES["x.npy"]  # warm here
    return cli, store


def _key(store: S3BlobStore, digest: str) -> str:
    return store.bucket.location.key(store.relative(Digest(digest)))


@pytest.mark.parametrize(
    "options",
    [
        pytest.param((), id="with-blobs"),  # was: "2 linked, 0 copied", exit 0
        pytest.param(("--no-blobs",), id="no-blobs"),  # the bucket's listing lacks it
    ],
)
def test_a_blob_the_bucket_lost_fails_the_backup_naming_it(
    tmp_path: Path,
    s3: S3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    options: tuple[str, ...],
) -> None:
    """The object deleted from the bucket, its local copy intact: the backup fails (exit 1)
    naming the blob's digest and what references it, and leaves no folder behind."""
    cli, store = _published(tmp_path, s3, monkeypatch, capsys)
    s3.client().delete_object(Bucket="pinbench", Key=_key(store, X))
    assert store.path(Digest(X)).is_file()  # the local copy is still here

    target = tmp_path / "backup"
    made = cli("backup", str(target), *options)
    assert made.code == 1, made.out + made.err
    said = "".join(made.err.split())  # the console wraps long lines
    assert f"sha256{X})ismissingfromthestore" in said
    assert "dataset/vision/kept@1.0.0:x.npy" in said
    assert "Traceback" not in made.err
    assert not target.exists(), "a failed backup leaves nothing"


def test_a_damaged_local_copy_changes_nothing_and_restore_gives_back_the_buckets_bytes(
    tmp_path: Path,
    s3: S3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The local copy overwritten with other bytes (the bucket's intact): the backup succeeds
    with the bucket's bytes, reading them all from the bucket; a restore into another prefix
    uploads those bytes, which the restored bucket then holds."""
    cli, store = _published(tmp_path, s3, monkeypatch, capsys)
    local = store.path(Digest(X))
    local.chmod(0o644)
    local.write_bytes(b"damaged here, and only here")
    os.utime(local, (1, 1))

    made = cli("backup", str(tmp_path / "backup"), "--json")
    assert made.code == 0, made.err  # was: checksum mismatch for the local copy, exit 1
    done = json.loads(made.out)
    assert done["blobs_from"] == str(store.bucket.location)
    assert (done["linked"], done["copied"], done["blobs"]) == (0, 2, 2)
    for name, data in FILES.items():
        kept = tmp_path / "backup" / "blobs" / sha(data)[:2] / sha(data)
        assert kept.read_bytes() == data, name
    assert local.read_bytes() == b"damaged here, and only here"  # neither read nor mended

    target = s3_settings(s3, tmp_path / "restored", monkeypatch)
    restore = in_process_cli(monkeypatch, capsys, target.home)
    restored = restore("restore", str(tmp_path / "backup"))
    assert restored.code == 0, restored.out + restored.err
    assert target.blobs is not None
    prefix = target.blobs.removeprefix("s3://pinbench/")
    for data in FILES.values():
        key = f"{prefix}/blobs/{sha(data)[:2]}/{sha(data)}"
        body = s3.client().get_object(Bucket="pinbench", Key=key)["Body"].read()
        assert body == data
