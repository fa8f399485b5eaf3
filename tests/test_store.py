"""The blob store and the verified-state cache."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.artifacts import store as store_module
from pinbench.artifacts import verified
from pinbench.artifacts.copy import copy_plain
from pinbench.artifacts.digest import Digest, DigestError, hash_file
from pinbench.artifacts.s3store import S3BlobStore, open_store
from pinbench.artifacts.store import BlobMissing, BlobStore, ChecksumMismatch
from pinbench.registry.lockfile import Lockfile
from pinbench.workspace import Workspace
from tests.helpers import (
    dataset_manifest,
    dump,
    in_process_cli,
    lock_digits,
    sha,
    write_files,
)
from tests.s3server import s3_settings

StoreOn = Callable[[Path], BlobStore]


@pytest.fixture(params=["filesystem", "s3"])
def store_on(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> StoreOn:
    """The store's contract, held by both back ends: the home's folder, and a bucket on a
    real S3 server (SeaweedFS on loopback) with the home's folder as its local cache."""
    if request.param == "filesystem":
        return BlobStore
    conf = s3_settings(request.getfixturevalue("s3"), Path("unused"), monkeypatch)
    assert conf.blobs is not None
    blobs, endpoint = conf.blobs, conf.s3_endpoint
    return lambda root: open_store(root, blobs, endpoint=endpoint)


def overwrite(store: BlobStore, digest: Digest, data: bytes) -> None:
    """Put other bytes under ``digest``'s name: in the folder, or in the bucket (the local
    cached copy evicted, as on a machine that never read it)."""
    if isinstance(store, S3BlobStore):
        other = store.root / "other"
        other.write_bytes(data)
        store.bucket.upload(other, store.relative(digest))
        other.unlink()
        store.path(digest).unlink()
        return
    blob = store.path(digest)
    blob.chmod(0o644)
    blob.write_bytes(data)


def _stored_at(store: BlobStore, digest: Digest) -> float:
    """The time ``gc --blobs`` measures the blob's age from (``Stored.mtime``)."""
    return next(s.mtime for s in store.listing() if s.digest == digest.hex)


def test_writing_a_blob_the_store_has_touches_it(tmp_path: Path, store_on: StoreOn) -> None:
    """Issue 48 item 1, decision 190: a run that writes bytes the store already has (the
    outputs of a deleted run, by their digest) refreshes the time gc's grace period is
    measured from, or ``gc --blobs`` could remove the blob before the run's record names it."""
    store = store_on(tmp_path)
    store.create()
    put = store.put_bytes(b"outputs of a deleted run")
    src = tmp_path / "src.bin"
    src.write_bytes(b"a published file")
    committed = store.stage(src, label="src.bin").digest
    assert store.commit(store.stage(src, label="src.bin")) is True
    before = {d: _stored_at(store, d) for d in (put, committed)}
    time.sleep(1.1)  # an object store's LastModified has whole seconds
    assert store.put_bytes(b"outputs of a deleted run") == put
    assert store.commit(store.stage(src, label="src.bin")) is False  # had it: touched
    after = {d: _stored_at(store, d) for d in (put, committed)}
    assert all(after[d] >= before[d] + 1 for d in before), (before, after)
    assert store.touch(Digest(sha(b"never stored"))) is False
    assert store.path(put).read_bytes() == b"outputs of a deleted run"


def test_stage_and_commit_stores_by_digest(tmp_path: Path, store_on: StoreOn) -> None:
    store = store_on(tmp_path)
    src = tmp_path / "src.bin"
    src.write_bytes(b"hello" * 1000)
    staged = store.stage(src, label="src.bin")
    assert staged.digest.hex == sha(b"hello" * 1000)
    assert not store.has(staged.digest), "staged bytes are not visible before commit"
    assert store.commit(staged) is True
    assert store.path(staged.digest).read_bytes() == b"hello" * 1000
    assert store.commit(store.stage(src, label="src.bin")) is False, "a second copy is dropped"
    assert list(store.tmp.iterdir()) == []


def test_stage_with_wrong_digest_leaves_nothing(tmp_path: Path, store_on: StoreOn) -> None:
    store = store_on(tmp_path)
    src = tmp_path / "src.bin"
    src.write_bytes(b"abc")
    wrong = Digest("0" * 64)
    with pytest.raises(ChecksumMismatch) as info:
        store.stage(src, label="weights.onnx", expected=wrong)
    assert info.value.path == "weights.onnx"
    assert info.value.expected == wrong
    assert info.value.actual.hex == sha(b"abc")
    assert "0" * 64 in str(info.value) and sha(b"abc") in str(info.value)
    assert list(store.tmp.iterdir()) == []
    assert list(store.iter_digests()) == []


def test_verify_detects_a_flipped_byte(tmp_path: Path, store_on: StoreOn) -> None:
    store = store_on(tmp_path)
    digest = store.put_bytes(b"model bytes")
    assert store.verify(digest, label="m") == store.path(digest)
    overwrite(store, digest, b"Model bytes")
    with pytest.raises(ChecksumMismatch) as info:
        store.verify(digest, label="model.onnx")
    assert info.value.actual.hex == sha(b"Model bytes")
    assert list(store.tmp.iterdir()) == [], "nothing half-fetched is left behind"
    if isinstance(store, S3BlobStore):
        assert not store.path(digest).exists(), "wrong bytes never enter the local cache"


def test_verify_of_missing_blob(tmp_path: Path, store_on: StoreOn) -> None:
    with pytest.raises(BlobMissing, match=r"model\.onnx"):
        store_on(tmp_path).verify(Digest("1" * 64), label="model.onnx")


def test_remove_and_listing(tmp_path: Path, store_on: StoreOn) -> None:
    """``has``, ``iter_digests`` and ``remove`` (what ``fsck`` and ``gc --blobs`` use)."""
    store = store_on(tmp_path)
    kept, gone = store.put_bytes(b"kept"), store.put_bytes(b"gone")
    assert store.has(kept) and store.has(gone)
    assert sorted(d.hex for d in store.iter_digests()) == sorted([kept.hex, gone.hex])
    assert [s.where for s in store.listing()] == sorted(
        f"blobs/{d.hex[:2]}/{d.hex}" for d in (kept, gone)
    )
    store.remove(gone)
    store.remove(gone)  # removing what is not there is not an error
    assert not store.has(gone) and store.has(kept)
    assert [d.hex for d in store.iter_digests()] == [kept.hex]


def test_reverify_of_unchanged_file_does_not_rehash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BlobStore(tmp_path)
    src = tmp_path / "f"
    src.write_bytes(b"x" * 10_000)
    d1, _, hashed1 = store.cache.digest(src)
    calls: list[Path] = []
    real = hash_file

    def counting(path: Path, **kw: Any) -> tuple[Digest, int]:
        calls.append(path)
        return real(path, **kw)

    monkeypatch.setattr(verified, "hash_file", counting)
    d2, _, hashed2 = store.cache.digest(src)
    assert (hashed1, hashed2, calls) == (True, False, [])
    assert d1 == d2


def test_rewrite_that_restores_mtime_is_still_rehashed(tmp_path: Path) -> None:
    """ctime is in the key: `touch -d` can restore mtime but never ctime."""
    store = BlobStore(tmp_path)
    src = tmp_path / "f"
    src.write_bytes(b"aaaa")
    st = src.stat()
    store.cache.digest(src)
    src.write_bytes(b"bbbb")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    digest, _, hashed = store.cache.digest(src)
    assert hashed is True
    assert digest.hex == sha(b"bbbb")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("sha256:" + "a" * 64, True),  # prefixed form
        ("b" * 64, True),  # bare hex
        ("A" * 64, False),  # uppercase is not canonical
        ("a" * 63, False),  # too short
        ("md5:" + "a" * 32, False),  # other algorithms are not digests here
    ],
)
def test_digest_parse(text: str, ok: bool) -> None:
    if ok:
        assert Digest.parse(text).hex == text.removeprefix("sha256:")
    else:
        with pytest.raises(DigestError, match="invalid sha256 digest"):
            Digest.parse(text)


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=20_000))
def test_publish_then_fetch_returns_the_same_digest(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        store = BlobStore(Path(d))
        digest = store.put_bytes(data)
        assert digest.hex == sha(data)
        assert store.verify(digest, label="x").read_bytes() == data


# ------------------------------------------------------------------ the cache cannot be forged


def _forge(store: BlobStore, path: Path) -> None:
    """What someone who can write the cache (not its key) does after tampering with a file:
    record the file's new state beside its old digest."""
    state = verified.FileState.of(path.resolve().stat())
    with sqlite3.connect(store.root / "cache" / "verified.sqlite") as db:
        updated = db.execute(
            "UPDATE entries SET size = ?, mtime_ns = ?, ctime_ns = ?, inode = ? WHERE path = ?",
            (state.size, state.mtime_ns, state.ctime_ns, state.inode, str(path.resolve())),
        ).rowcount
    assert updated == 1


def _count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files hashed from now on (the cache's misses)."""
    calls: list[Path] = []
    real = hash_file

    def counting(path: Path, **kw: Any) -> tuple[Digest, int]:
        calls.append(path)
        return real(path, **kw)

    monkeypatch.setattr(verified, "hash_file", counting)
    return calls


def _tamper(store: BlobStore, digest: Digest, data: bytes) -> None:
    blob = store.path(digest)
    blob.chmod(0o644)
    blob.write_bytes(data)


def test_a_cache_entry_edited_to_bless_tampered_bytes_is_not_trusted(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    store.create()
    digest = store.put_bytes(b"model bytes")
    store.verify(digest, label="m")
    _tamper(store, digest, b"evil! bytes")
    _forge(store, store.path(digest))
    with pytest.raises(ChecksumMismatch) as info:
        store.verify(digest, label="model.onnx")
    assert info.value.actual.hex == sha(b"evil! bytes")


def test_an_entry_copied_to_another_path_is_not_trusted(tmp_path: Path) -> None:
    """The MAC covers the path: an entry cannot vouch for another file in the same state."""
    store = BlobStore(tmp_path)
    store.create()
    digest = store.put_bytes(b"good")
    store.verify(digest, label="good")
    other = tmp_path / "other"
    other.write_bytes(b"evil")
    with sqlite3.connect(store.root / "cache" / "verified.sqlite") as db:
        row = db.execute("SELECT * FROM entries WHERE path = ?", (str(store.path(digest)),))
        values = list(row.fetchone())
        state = verified.FileState.of(other.stat())
        values[:5] = [str(other.resolve()), state.size, state.mtime_ns, state.ctime_ns, state.inode]
        db.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)", values)
    found, _, hashed = store.cache.digest(other)
    assert (found.hex, hashed) == (sha(b"evil"), True)


def test_the_cache_key_is_private_and_made_at_init(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    store.create()
    key = tmp_path / "keys" / "verified-cache.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert len(key.read_bytes()) == verified.KEY_BYTES


@pytest.mark.parametrize(
    "loosen",
    [
        pytest.param(lambda key: key.chmod(0o644), id="others may read it"),
        pytest.param(lambda key: key.chmod(0o620), id="the group may write it"),
        pytest.param(lambda key: key.write_bytes(b"short"), id="not a key"),
    ],
)
def test_a_key_others_may_read_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loosen: Callable[[Path], object]
) -> None:
    """With a key that may be known, the cache vouches for nothing: every verify reads."""
    store = BlobStore(tmp_path)
    store.create()
    digest = store.put_bytes(b"bytes")
    loosen(tmp_path / "keys" / "verified-cache.key")
    calls = _count_hashes(monkeypatch)
    store.verify(digest, label="b")
    store.verify(digest, label="b")
    assert len(calls) == 2


def test_a_lost_key_is_made_anew_and_old_entries_are_rehashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BlobStore(tmp_path)
    store.create()
    digest = store.put_bytes(b"bytes")
    key = tmp_path / "keys" / "verified-cache.key"
    old = key.read_bytes()
    key.unlink()
    calls = _count_hashes(monkeypatch)
    store.verify(digest, label="b")
    store.verify(digest, label="b")
    assert len(calls) == 1, "hashed once under the new key, then trusted"
    assert key.read_bytes() != old


def test_verify_rehash_reads_every_byte_whatever_the_cache_says(
    digits: Workspace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Even an entry with a valid MAC (a cache written with the key, e.g. by a bug or by its
    owner) is ignored by ``pinbench verify --rehash``."""
    lock_path = lock_digits(digits, tmp_path / "digits.lock")
    lock = Lockfile.read(lock_path)
    model = next(a for a in lock.body.artifacts if a.kind == "model").files[0]
    blob = digits.store.path(Digest(model.sha256))
    tampered = bytearray(blob.read_bytes())
    tampered[-1] ^= 0xFF  # one byte flipped: the same size
    blob.chmod(0o644)
    blob.write_bytes(tampered)
    digits.store.cache.record(
        blob.resolve(), verified.FileState.of(blob.stat()), Digest(model.sha256)
    )
    cli = in_process_cli(monkeypatch, capsys, digits.settings.home, digits.settings.database_url)
    trusted = cli("verify", str(lock_path))
    assert trusted.code == 0, "the cache vouches for the file, so it is not read"
    rehashed = cli("verify", "--rehash", str(lock_path))
    assert rehashed.code == 1
    assert f"expected sha256 {model.sha256}, got {sha(bytes(tampered))}" in rehashed.err


def _refuse_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> tuple[Digest, int]:
        raise AssertionError("the bytes were hashed again")

    monkeypatch.setattr(store_module, "copy_hashing", refuse)


def _hashed(tmp_path: Path, data: bytes) -> tuple[BlobStore, Path, Digest]:
    """A store, and a file of ``data`` beside it hashed as `pinbench digest` does (the
    verified-state cache now vouches for it)."""
    store = BlobStore(tmp_path / "home")
    store.create()
    src = tmp_path / "weights.bin"
    src.write_bytes(data)
    digest, _, hashed = store.cache.digest(src)
    assert hashed
    return store, src, digest


def test_a_file_the_cache_vouches_for_is_staged_without_hashing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pinbench digest` then `publish`: the second pass over the bytes is a kernel copy."""
    data = os.urandom(5 * 1024 * 1024 + 17)
    store, src, digest = _hashed(tmp_path, data)
    _refuse_hashing(monkeypatch)
    seen: list[int] = []
    staged = store.stage(src, label="weights.bin", expected=digest, progress=seen.append)
    assert (staged.digest, staged.size, sum(seen)) == (digest, len(data), len(data))
    assert staged.temp.read_bytes() == data
    assert store.commit(staged)
    monkeypatch.undo()
    assert store.verify(digest, label="weights.bin", rehash=True) == store.path(digest)


def test_a_file_changed_since_it_was_hashed_is_hashed_again(tmp_path: Path) -> None:
    store, src, digest = _hashed(tmp_path, b"a" * 4096)
    src.write_bytes(b"b" * 4096)  # same size, new bytes
    with pytest.raises(ChecksumMismatch) as info:
        store.stage(src, label="weights.bin", expected=digest)
    assert info.value.actual.hex == sha(b"b" * 4096)
    assert list(store.tmp.iterdir()) == []


def test_a_file_changed_while_it_is_copied_is_copied_again_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, src, _ = _hashed(tmp_path, b"a" * 4096)
    real = copy_plain

    def copy_then_rewrite(src_fd: int, dst_fd: int, **kwargs: Any) -> int:
        copied = real(src_fd, dst_fd, **kwargs)
        src.write_bytes(b"c" * 4096)  # a writer got in between the copy and the check
        return copied

    monkeypatch.setattr(store_module, "copy_plain", copy_then_rewrite)
    staged = store.stage(src, label="weights.bin")
    assert staged.digest.hex == sha(b"c" * 4096)
    assert staged.temp.read_bytes() == b"c" * 4096


def test_digest_then_publish_on_the_cli_reads_the_bytes_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = in_process_cli(monkeypatch, capsys, tmp_path / "home")
    assert cli("init").code == 0
    folder = tmp_path / "data"
    files = write_files(folder, {"x.npy": os.urandom(100_000), "y.npy": os.urandom(1000)})
    manifest = dump(folder / "d.yaml", dataset_manifest("digits", "1.0.0", files))
    digested = cli("digest", str(folder / "x.npy"), str(folder / "y.npy"))
    assert files[0]["sha256"] in digested.out
    _refuse_hashing(monkeypatch)
    published = cli("publish", str(manifest))
    assert published.code == 0, published.err
    home = BlobStore(tmp_path / "home")
    for entry in files:
        blob = home.path(Digest(entry["sha256"]))
        assert blob.read_bytes() == (folder / entry["path"]).read_bytes()
